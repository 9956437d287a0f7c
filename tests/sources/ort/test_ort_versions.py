"""onnxruntime-web versions side by side: every version package.json pins is installed in its own
folder, one is selected per run (--ort-version, $VERIFY_ORT_VERSION, else the default), and each
version's captures live in its own folder of the WGSL cache, never read as another's.

The first tests read package.json and fake ORT's runtime; those at the end start each version's
real runtime (what scripts/setup.sh installs; they skip, saying why, without it).
"""

from __future__ import annotations

import json
import os

import pytest

from verify.cli import main as verify_main
from verify.errors import SetupError, UsageError
from verify.gpu.dawn import install
from verify.sources import shipped
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.capture import QUANTIZE, TILE, Dispatch, OrtRun, Program
from verify.sources.ort.dp4a import captures
from verify.sources.ort.dp4a.captures import CaptureConfig, captured_programs

VERSIONS = list(ort_runtime.pinned_versions())


@pytest.fixture(autouse=True)
def no_selection(monkeypatch):
    """No version selected, and whatever a test selects (verify's main sets the variable itself)
    undone after it."""
    monkeypatch.setenv(ort_runtime.VERSION_ENV, "recorded, so that it is restored")
    monkeypatch.delenv(ort_runtime.VERSION_ENV)


def test_each_pinned_version_has_its_own_folder_and_the_lock_installs_it_there():
    lock = json.loads(install.PACKAGE_LOCK.read_text())["packages"]
    assert len(VERSIONS) >= 2 and ort_runtime.DEFAULT_VERSION in VERSIONS
    folders = ort_runtime.pinned_versions()
    assert len(set(folders.values())) == len(folders)  # no two versions in one folder
    for version, folder in folders.items():
        locked = lock[f"node_modules/{folder}"]
        assert locked["version"] == version and locked.get("name", folder) == ort_runtime.PACKAGE
        # its own onnxruntime-common, where it is not the top-level one
        common = lock.get(f"node_modules/{folder}/node_modules/onnxruntime-common",
                          lock["node_modules/onnxruntime-common"])
        assert common["version"] == version


def test_a_version_is_named_exactly_or_by_its_release_line():
    for version in VERSIONS:
        assert ort_runtime.resolve_version(version) == version
        line = version.rpartition(".")[0]
        if sum(v.startswith(line + ".") for v in VERSIONS) == 1:
            assert ort_runtime.resolve_version(line) == version


@pytest.mark.parametrize("given", ["1.29.0", "1", "", "latest", "1.3"])
def test_a_version_verify_does_not_install_is_one_line_naming_those_it_does(given):
    with pytest.raises(UsageError) as refused:
        ort_runtime.resolve_version(given)
    message = str(refused.value)
    assert len(message.splitlines()) == 1 and all(version in message for version in VERSIONS)


def test_the_variable_selects_the_version_and_the_default_is_the_declared_one(monkeypatch):
    assert ort_runtime.selected_version() == ort_runtime.DEFAULT_VERSION
    for version in VERSIONS:
        monkeypatch.setenv(ort_runtime.VERSION_ENV, version)
        assert ort_runtime.selected_version() == version == ort_runtime.pinned_version()
    with ort_runtime.using_version(VERSIONS[0]):
        assert ort_runtime.selected_version() == VERSIONS[0]
    assert ort_runtime.selected_version() == VERSIONS[-1]  # restored


@pytest.mark.parametrize("how", ["option", "variable"])
def test_verify_refuses_an_unknown_version_in_one_line_with_exit_2(how, monkeypatch, capsys):
    argv = ["show", "ort.dp4a.quantize"]
    if how == "option":
        argv += ["--ort-version", "1.29.0"]
    else:
        monkeypatch.setenv(ort_runtime.VERSION_ENV, "1.29.0")
    assert verify_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "1.29.0" in err and all(version in err for version in VERSIONS)


def test_the_option_selects_the_version_for_the_run_and_its_workers(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr("verify.cli.cmd_show", lambda args: seen.append(ort_runtime.selected_version()) or 0)
    line = VERSIONS[-1].rpartition(".")[0]
    assert verify_main(["show", "ort.dp4a.quantize", "--ort-version", line]) == 0
    assert seen == [VERSIONS[-1]]
    assert os.environ[ort_runtime.VERSION_ENV] == VERSIONS[-1]  # what worker processes inherit


class FakeRuntime:
    """ORT's runtime without Node, of the version selected when it starts: its captures dispatch
    the DP4A programs, each saying which version made it."""

    adapter = {"vendor": "mesa", "description": "a fake llvmpipe", "features": ["subgroups", "shader-f16"]}
    alive = True

    def __init__(self):
        self.version = ort_runtime.selected_version()

    def run(self, model, feeds, **options) -> OrtRun:
        return OrtRun({}, tuple(Dispatch(Program(label, "main", f"// {label} by {self.version}\n"), (1, 1, 1), ())
                                for label in (QUANTIZE, TILE)))


def test_each_versions_captures_are_kept_in_its_own_folder_and_never_read_as_anothers(monkeypatch, tmp_path):
    monkeypatch.setenv(captures.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(ort_runtime, "shared_runtime", lambda *args, **kwargs: FakeRuntime())
    config = CaptureConfig("f32")
    with shipped.ignored():
        for version in VERSIONS:
            with ort_runtime.using_version(version):
                made = captured_programs(config)
            assert made.provenance.ort_version == version and made.programs[TILE] == f"// {TILE} by {version}\n"
            assert (tmp_path / version / "mesa" / config.filename).is_file()
        # without a runtime, each version reads its own capture, and a version with none is refused
        monkeypatch.setattr(ort_runtime, "shared_runtime", _no_runtime)
        for version in VERSIONS:
            with ort_runtime.using_version(version):
                assert captured_programs(config).programs[TILE] == f"// {TILE} by {version}\n"
        (tmp_path / VERSIONS[-1] / "mesa" / config.filename).unlink()
        with ort_runtime.using_version(VERSIONS[-1]), pytest.raises(SetupError, match="not in the ORT WGSL cache"):
            captured_programs(config)


def _no_runtime(*args, **kwargs):
    raise SetupError("Node.js is not installed")


# -- the real runtimes ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", VERSIONS)
def test_each_version_runs_its_own_package_and_its_captures_name_it(version, monkeypatch, tmp_path):
    monkeypatch.setenv(captures.CACHE_ENV, str(tmp_path))
    with ort_runtime.using_version(version), shipped.ignored():
        try:
            runtime = ort_runtime.shared_runtime()
        except SetupError as exc:
            pytest.skip(str(exc))
        assert runtime.version == version and f"{ort_runtime.pinned_versions()[version]}/" in str(
            ort_runtime.find_ort_dist())
        made = captured_programs(CaptureConfig("f32"))
    assert made.provenance.ort_version == version
    assert made.wgsl(QUANTIZE).startswith(f"// onnxruntime-web {version} on ")
    assert [folder.name for folder in tmp_path.iterdir()] == [version]


# -- the f32-accumulation option (1.31.1) -----------------------------------------------------------------------
def test_the_fp32_accumulation_option_is_refused_in_one_line_where_the_version_lacks_it(monkeypatch):
    from verify.kernels.registry import get_kernel

    without = [v for v in VERSIONS if not ort_runtime.has_fp32_accumulation_option(v)]
    with_it = [v for v in VERSIONS if ort_runtime.has_fp32_accumulation_option(v)]
    assert without and with_it  # the pins span the option's introduction
    for name in ("ort.matmul_nbits", "ort.dp4a.matmul"):
        kernel = get_kernel(name)
        with ort_runtime.using_version(without[0]), pytest.raises(UsageError) as refused:
            kernel.config(dict(dtype="f16", fp32_accumulation=1))
        assert len(str(refused.value).splitlines()) == 1 and ort_runtime.FP32_ACCUMULATION_SINCE in str(refused.value)
        with ort_runtime.using_version(with_it[0]):
            config = kernel.config(dict(dtype="f16", fp32_accumulation=1))
            assert config["acc"] == "f32"
            # §13.1 is the f16 accumulator's: with the option it is no known finding, a failure is news
            assert "ort-f16-accumulation" not in finding_ids(kernel.known_finding("accumulator_range", config))
            assert "ort-f16-accumulation" in finding_ids(
                kernel.known_finding("accumulator_range", kernel.config(dict(dtype="f16"))))


def finding_ids(known) -> set[str]:
    from verify.results.record import KnownFinding

    return {f.finding_id for f in KnownFinding.all_of(known)}


def test_the_option_names_its_session_and_capture_and_only_then(monkeypatch):
    plain, option = CaptureConfig("f16"), CaptureConfig("f16", fp32_accumulation=True)
    assert plain.model.ep_options == {} and option.model.ep_options == {"enableMatmulFp32Accumulation": True}
    assert "fp32_accumulation" not in plain.describe() and "fp32_accumulation=1" in option.describe()
    assert plain.filename != option.filename


def test_the_gate_draws_the_option_only_on_a_version_that_has_it():
    from verify.kernels.registry import get_kernel

    kernel = get_kernel("ort.matmul_nbits")
    for version in VERSIONS:
        with ort_runtime.using_version(version):
            drawn = any(c["fp32_accumulation"] for c in kernel.gate_configs("ci"))
        assert drawn == ort_runtime.has_fp32_accumulation_option(version)


def test_with_the_option_orts_tile_program_accumulates_in_f32(monkeypatch, tmp_path):
    """ORT's own program, captured with and without the session option: the accumulator's alias
    is what the option says (the program is otherwise ORT's, and verify judges it by `acc`)."""
    version = next(v for v in VERSIONS if ort_runtime.has_fp32_accumulation_option(v))
    monkeypatch.setenv(captures.CACHE_ENV, str(tmp_path))
    with ort_runtime.using_version(version), shipped.ignored():
        try:
            ort_runtime.shared_runtime()
        except SetupError as exc:
            pytest.skip(str(exc))
        plain = captured_programs(CaptureConfig("f16")).program(TILE)
        option = captured_programs(CaptureConfig("f16", fp32_accumulation=True)).program(TILE)
    assert "alias acc_element_t = f32;" in option and "alias acc_element_t = f32;" not in plain


def test_a_local_window_leaves_the_fused_programs_on_1_30_only(monkeypatch):
    """onnxruntime-web 1.30.0 sends a GroupQueryAttention window shorter than the total to the
    unfused programs; 1.31.1 masks it in FlashAttention and the split decode (observed: its sessions
    dispatch CopyKVCache, FlashAttentionDecodeQKV, FlashAttentionDecodeVxReduce for one new token
    past a 32-key window). smooth_softmax still takes the unfused programs on both."""
    from verify.kernels.registry import get_kernel
    from verify.sources.ort.attention.cases import gqa_path

    assert gqa_path(32, 1, 40, fused_window=False) == "probs"
    assert gqa_path(32, 1, 40, fused_window=True) == "split"
    assert gqa_path(32, 40, 80, fused_window=True) == "flash"
    assert gqa_path(32, 1, 40, smooth_softmax=True, fused_window=True) == "probs"
    from verify.sources.ort.attention.cases import PAGED_PROGRAMS, paged_path  # PagedAttention: gathered, then split

    assert paged_path(32, 1, 16, fused_window=False) == "flash"
    assert paged_path(32, 1, 16, fused_window=True) == "gathered_split"
    assert PAGED_PROGRAMS["gathered_split"] == ("FlashAttentionDecodeQKV", "FlashAttentionDecodeVxReduce")
    assert paged_path(32, 48, 16, fused_window=True) == "flash"
    gqa = get_kernel("ort.gqa")
    windowed_flash = gqa.config({"dtype": "f32", "head_size": 64, "num_heads": 4, "kv_num_heads": 4,
                                 "phase": "flash", "local_window_size": 32})
    for version, fused in (("1.30.0", False), ("1.31.1", True)):
        monkeypatch.setenv(ort_runtime.VERSION_ENV, version)
        assert ort_runtime.fuses_local_window() is fused
        assert gqa.takes_flash(windowed_flash) is fused  # and so §18.2 is its finding there
