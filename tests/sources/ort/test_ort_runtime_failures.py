"""When ONNX Runtime's side breaks, the record says so, and nothing of it outlives the break.

- Another onnxruntime-web than the pinned one is a setup problem: one line naming both versions
  and the command that installs the pinned one; `verify check` refuses (exit 2) and the gate
  skips the kernel while planning, even with the capture cached; met while a check runs, the
  check is a SKIP naming it, never "internal error in verify" and never a FAIL.
- ORT's Node process dying (killed, crashed) is an ERROR naming it, for a session run and for a
  program capture alike, and the next check starts a fresh process.

The first tests fake the Node packages or the runtime; those marked `webgpu` kill ORT's real
Node process (what scripts/setup.sh installs; they skip, saying why, without it).
"""

from __future__ import annotations

import json
import os
import signal
from types import SimpleNamespace

import pytest

from verify.checks import get_check
from verify.checks.context import CheckContext
from verify.checks.runner import RunOptions, run_check
from verify.cli import main as verify_main
from verify.errors import FailureKind, InfrastructureError, SetupError
from verify.kernels.registry import get_kernel
from verify.plan import check_jobs, gate_jobs
from verify.profiles import get_profile
from verify.results.record import Verdict
from verify.sources import shipped
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.capture import QUANTIZE, TILE, Dispatch, OrtRun, Program
from verify.sources.ort.dp4a import captures as programs
from verify.sources.ort.runtime import OrtProcessDied

PINNED = ort_runtime.pinned_version()
OTHER = "1.29.0"
MATMUL = dict(dtype="f32", bits=4, block_size=32)


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """An empty ORT WGSL cache, and no shipped captures: what is wanted is captured."""
    monkeypatch.setenv(programs.CACHE_ENV, str(tmp_path / "ort-cache"))
    with shipped.ignored():
        yield tmp_path / "ort-cache"


def install_other_version(monkeypatch, tmp_path, version: str = OTHER):
    """onnxruntime-web `version` as the only one npm installed (no ORT process running yet)."""
    package = tmp_path / "node_modules" / "onnxruntime-web"
    package.mkdir(parents=True)
    (package / "package.json").write_text(json.dumps({"name": "onnxruntime-web", "version": version}))
    monkeypatch.setattr(ort_runtime.environment, "node_modules_candidates", lambda: [tmp_path / "node_modules"])
    monkeypatch.setattr(ort_runtime, "_SHARED", {})


class FakeRuntime:
    """ORT's runtime without Node: captures dispatch the DP4A programs; `dies` makes every run
    end as a run whose Node process was killed."""

    version = PINNED
    adapter = {"vendor": "mesa", "description": "a fake llvmpipe", "features": ["subgroups", "shader-f16"]}
    alive = True

    def __init__(self, dies: bool = False):
        self.dies = dies

    def run(self, model, feeds, **options) -> OrtRun:
        if self.dies:
            raise OrtProcessDied("ONNX Runtime's Node process (pid 4242, runner.mjs) died (killed by SIGKILL), found "
                                 "at its 'run' request; its last lines on stderr:\n(nothing on stderr)")
        return OrtRun({}, tuple(Dispatch(Program(label, "main", f"// {label} for {model.describe()}\n"), (1, 1, 1), ())
                                for label in (QUANTIZE, TILE)))


def fill_cache(kernel, config) -> None:
    """The kernel's captures for `config` in the cache, made by a fake runtime."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ort_runtime, "shared_runtime", lambda *args, **kwargs: FakeRuntime())
        get_kernel(kernel).wgsl(get_kernel(kernel).config(config))


# -- another onnxruntime-web ---------------------------------------------------------------------------------------
def test_another_onnxruntime_web_is_one_line_naming_both_versions_and_the_fix(monkeypatch, tmp_path):
    install_other_version(monkeypatch, tmp_path)
    with pytest.raises(SetupError) as refused:
        ort_runtime.shared_runtime()
    message = str(refused.value)
    assert len(message.splitlines()) == 1
    assert f"onnxruntime-web {OTHER}" in message and f"pins {PINNED}" in message
    assert "verify setup --dawn" in message and "scripts/setup_dawn.sh" in message


def test_with_another_onnxruntime_web_and_the_capture_cached_verify_check_refuses_in_one_line(
        monkeypatch, tmp_path, cache, capsys):
    fill_cache("ort.matmul_nbits", MATMUL)
    install_other_version(monkeypatch, tmp_path)
    ran = []
    monkeypatch.setattr("verify.cli._execute", lambda plan, *args, **kwargs: ran.append(plan.jobs) or 0)
    # Dawn's adapters are not what this is about (listing them starts Dawn's own Node process).
    monkeypatch.setattr("verify.run.require_adapter", lambda *args: None)
    monkeypatch.setattr("verify.plan.adapter_identity", lambda name, *args: {"implementation": name})
    config = ",".join(f"{k}={v}" for k, v in MATMUL.items())
    assert verify_main(["check", "ort.matmul_nbits", "--config", config, "--out", str(tmp_path / "out")]) == 2
    assert not ran  # refused before any job runs
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and OTHER in err and PINNED in err and "verify setup --dawn" in err


def test_with_another_onnxruntime_web_the_gate_skips_the_session_kernels_naming_both_versions(
        monkeypatch, tmp_path, cache):
    for config in get_kernel("ort.matmul_nbits").gate_configs("ci"):
        fill_cache("ort.matmul_nbits", config)
    install_other_version(monkeypatch, tmp_path)
    jobs, skipped = gate_jobs(["ort.matmul_nbits", "ort.gqa"], profile=get_profile("ci"), seed=0, out_dir=None,
                              time_limit=None)
    assert not jobs and [r.verdict for r in skipped] == [Verdict.SKIP, Verdict.SKIP]
    assert all(OTHER in r.reason and PINNED in r.reason and "verify setup --dawn" in r.reason for r in skipped)


def session_check(kernel_name: str, config: dict, examples: int = 2):
    """One `reference` check of an ORT session kernel in this process, on a stand-in device
    (a session runs in ORT's own process: the check's device only names the Vulkan driver)."""
    kernel = get_kernel(kernel_name)
    config = kernel.config(config)
    ctx = CheckContext(kernel, config, SimpleNamespace(driver=None), "", get_profile("quick"))
    return run_check(get_check("reference"), ctx, RunOptions(examples, seed=0, shrink=False)).result


def test_a_setup_error_met_while_a_check_runs_is_a_skip_naming_it_not_an_internal_error(monkeypatch, tmp_path):
    install_other_version(monkeypatch, tmp_path)
    record = session_check("ort.matmul_nbits", MATMUL)
    assert record.verdict is Verdict.SKIP, record.reason
    assert "internal error" not in record.reason and OTHER in record.reason and PINNED in record.reason


# -- ORT's Node process dies -------------------------------------------------------------------------------------
def test_a_session_whose_node_process_dies_is_an_error_naming_it(monkeypatch):
    monkeypatch.setattr(ort_runtime, "shared_runtime", lambda *args, **kwargs: FakeRuntime(dies=True))
    record = session_check("ort.matmul_nbits", MATMUL)
    assert record.verdict is Verdict.ERROR and record.failure_kind is FailureKind.CRASH
    assert "ONNX Runtime's Node process" in record.reason and "no verdict on it" in record.reason


def test_a_capture_whose_node_process_dies_is_an_error_naming_it(monkeypatch, cache):
    from verify.protocol import Finished
    from verify.worker import DeviceCache, _check_job

    monkeypatch.setattr(ort_runtime, "shared_runtime", lambda *args, **kwargs: FakeRuntime(dies=True))
    [job] = check_jobs("ort.dp4a.quantize", {"dtype": "f32"}, profile=get_profile("quick"), examples=1, seed=0,
                       out_dir=None, time_limit=None, checks=["reference"])
    events = []
    _check_job(job, DeviceCache(), events.append)
    [record] = [event.record for event in events if isinstance(event, Finished)]
    assert record.verdict is Verdict.ERROR and record.failure_kind is FailureKind.CRASH
    assert "ONNX Runtime's Node process" in record.reason
    assert not list(cache.glob("*/*/*.json"))  # nothing half-captured is kept


def test_a_dead_shared_runtime_is_replaced_by_a_fresh_one(monkeypatch):
    closed = []

    class Stub:
        driver = SimpleNamespace(name="lavapipe")
        version = ort_runtime.selected_version()

        def __init__(self, alive=True):
            self.alive = alive

        def close(self):
            closed.append(self)

    dead = Stub(alive=False)
    monkeypatch.setattr(ort_runtime, "_SHARED", {(None, None): dead})
    monkeypatch.setattr(ort_runtime, "OrtRuntime", lambda driver, adapter, version: Stub())
    fresh = ort_runtime.shared_runtime()
    assert fresh is not dead and fresh.alive and closed == [dead]
    assert ort_runtime.shared_runtime() is fresh


# -- the same with ORT's real Node process ---------------------------------------------------------------------------
@pytest.fixture
def ort(monkeypatch):
    """ORT's runtime on Dawn in a Node process of this test's own, standing as the shared one (the
    shared runtime other tests hold is left alone), and every one started in its place closed
    after; skipped, with the reason, where scripts/setup.sh has not run."""
    shared: dict = {}
    monkeypatch.setattr(ort_runtime, "_SHARED", shared)
    try:
        yield ort_runtime.shared_runtime()
    except SetupError as exc:
        pytest.skip(str(exc))
    finally:
        for runtime in list(shared.values()):
            runtime.close()


def kill_before_the_next_run(monkeypatch, runtime) -> None:
    """The test hook: ORT's Node process is killed (SIGKILL) just before the next run's request, once."""
    original, killed = type(runtime).run, []

    def run(self, *args, **kwargs):
        if not killed:
            killed.append(self.pid)
            os.kill(self.pid, signal.SIGKILL)
            self._process.proc.wait()
        return original(self, *args, **kwargs)

    monkeypatch.setattr(type(runtime), "run", run)


@pytest.mark.webgpu
def test_a_killed_ort_process_is_an_error_and_the_next_check_starts_a_fresh_one(ort, monkeypatch):
    killed = ort.pid
    kill_before_the_next_run(monkeypatch, ort)
    record = session_check("ort.matmul_nbits", MATMUL)
    assert record.verdict is Verdict.ERROR and record.failure_kind is FailureKind.CRASH, record.reason
    assert f"ONNX Runtime's Node process (pid {killed}" in record.reason and "killed by SIGKILL" in record.reason
    record = session_check("ort.matmul_nbits", MATMUL)
    assert record.verdict is Verdict.PASS, record.reason
    assert ort_runtime.shared_runtime().pid != killed


@pytest.mark.webgpu
def test_a_capture_whose_ort_process_is_killed_is_an_error_and_the_next_capture_succeeds(ort, monkeypatch, tmp_path):
    killed = ort.pid
    kill_before_the_next_run(monkeypatch, ort)
    config = programs.CaptureConfig("f32", bits=8, block_size=64)
    with pytest.raises(InfrastructureError, match=r"ONNX Runtime's Node process .*killed by SIGKILL"):
        programs.captured_programs(config, tmp_path)
    assert not list(tmp_path.glob("*/*/*.json"))
    captured = programs.captured_programs(config, tmp_path)
    assert QUANTIZE in captured.programs and ort_runtime.shared_runtime().pid != killed


def test_an_f16_capture_on_an_adapter_without_shader_f16_is_a_missing_feature_not_a_kernel_error():
    """ORT refuses to generate an f16 program where the adapter lacks shader-f16 (Dawn's Vulkan
    backend offers none on NVIDIA): the config cannot run there, which is no fault of the kernel."""
    from types import SimpleNamespace

    from verify.errors import FeatureMissing
    from verify.sources.ort.runtime import require_features

    nvidia = SimpleNamespace(adapter={"description": "NVIDIA H200", "features": ["subgroups", "timestamp-query"]})
    with pytest.raises(FeatureMissing, match="needs shader-f16.*NVIDIA H200"):
        require_features(nvidia, "f16", "MatMulNBits(dtype=f16)")
    require_features(nvidia, "f32", "MatMulNBits(dtype=f32)")  # nothing needed
    require_features(SimpleNamespace(adapter={"features": ["shader-f16"]}), "f16", "MatMulNBits(dtype=f16)")
