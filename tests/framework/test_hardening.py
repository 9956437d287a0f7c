"""A gate that cannot be fooled, take 2: shards of different plans, lost results, output paths that
destroy results, broken packages, contracts that verify nothing, hangs of another process, case
and results files checked whole, signals from the first moment."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PLUGIN, BROKEN = FIXTURES / "plugin", FIXTURES / "broken_plugin"


def verify(*args, extra_path=(), timeout=900, **kwargs):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*map(str, extra_path), *sys.path]))
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, env=env,
                          timeout=timeout, **kwargs)


def one_line(result, code: int, fragment: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == code, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    assert any(fragment in line for line in lines), result.stderr[-3000:]


def records(out: Path) -> list[dict]:
    return json.loads((out / "results.json").read_text())["records"]


# -- shards must be one plan, run once ----------------------------------------------------------------
@pytest.fixture(scope="module")
def shards(tmp_path_factory):
    """Shards of two merge_state gates (seeds 0 and 1) and of a rope gate, split two ways."""
    root = tmp_path_factory.mktemp("shards")
    made = {}
    for name, kernels, seed in (("merge", "merge_state", 0), ("merge_seed1", "merge_state", 1), ("rope", "rope", 0)):
        for k in (1, 2):
            out = root / f"{name}-{k}"
            result = verify("gate", "--profile", "quick", "--kernels", kernels, "--implementation", "wgpu",
                            "--seed", str(seed), "--shard", f"{k}/2", "--out", str(out))
            assert result.returncode == 0, result.stderr[-3000:]
            made[name, k] = out / "results.json"
    return made


@pytest.mark.webgpu
def test_the_shards_of_one_gate_merge_strictly(shards, tmp_path):
    merged = verify("report", str(shards["merge", 1]), str(shards["merge", 2]), "-o", str(tmp_path / "r.html"),
                    "--strict")
    assert merged.returncode == 0, merged.stderr


@pytest.mark.webgpu
@pytest.mark.parametrize("other", ["rope", "merge_seed1"])
def test_shards_of_different_plans_do_not_merge(shards, other, tmp_path):
    merged = verify("report", str(shards["merge", 1]), str(shards[other, 2]), "-o", str(tmp_path / "r.html"),
                    "--strict")
    assert merged.returncode == 1 and "different plans" in merged.stderr, merged.stderr


@pytest.mark.webgpu
def test_a_shard_missing_a_job_does_not_merge(shards, tmp_path):
    document = json.loads(shards["merge", 2].read_text())
    document["records"] = document["records"][1:]
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    merged = verify("report", str(shards["merge", 1]), str(edited), "-o", str(tmp_path / "r.html"), "--strict")
    assert merged.returncode == 1 and "have no record" in merged.stderr, merged.stderr


# -- results are never lost, never complete when aborted ---------------------------------------------------
@pytest.mark.webgpu
def test_a_run_that_fails_to_start_leaves_earlier_results_as_they_were(tmp_path):
    out = tmp_path / "out"
    first = verify("check", "merge_state", "--checks", "reference", "--examples", "2", "--out", str(out))
    assert first.returncode == 0, first.stderr
    before = (out / "results.json").read_text()
    two = subprocess.run([sys.executable, "-m", "verify", "show", "merge_state"], capture_output=True, text=True).stdout
    wgsl = tmp_path / "two.wgsl"
    wgsl.write_text(two + "\n@compute @workgroup_size(1) fn second() {}\n")
    result = verify("check", "merge_state", "--wgsl", str(wgsl), "--out", str(out))
    one_line(result, 2, "exactly one @compute entry point")
    assert (out / "results.json").read_text() == before


def test_an_aborted_run_is_written_as_aborted_and_never_complete(tmp_path):
    from verify.protocol import Job
    from verify.results.record import Verdict
    from verify.results.store import ResultsWriter, load_results

    path = tmp_path / "results.json"
    writer = ResultsWriter(path, command="gate", argv=[], profile="ci")
    assert not writer.finish(aborted="no adapter") and not path.exists()  # nothing to keep: nothing written
    writer = ResultsWriter(path, command="gate", argv=[], profile="ci")
    writer.add(Job(0, "k", "m:K", {}, "reference", 1, 0).result(Verdict.PASS))
    writer.finish(aborted="the worker refused a job")
    document = load_results(path)
    assert not document.complete and document.aborted == "the worker refused a job" and len(document.records) == 1


def test_a_report_that_cannot_be_drawn_does_not_end_the_run(tmp_path, monkeypatch, capsys):
    import verify.report
    from verify import run
    from verify.results.store import ResultsDocument

    def broken(documents, path, **options):
        raise IndexError("a plot that cannot be drawn")

    monkeypatch.setattr(verify.report, "render_report", broken)
    run.write_report(ResultsDocument(), tmp_path)
    assert "report.html was not written (IndexError" in capsys.readouterr().err


@pytest.mark.webgpu
def test_a_full_disk_is_one_line_and_keeps_the_last_complete_results(tmp_path):
    """RLIMIT_FSIZE makes writes past a size fail as a full disk does (EFBIG, SIGXFSZ ignored)."""
    out = tmp_path / "out"
    first = verify("check", "merge_state", "--checks", "reference", "--examples", "2", "--out", str(out))
    assert first.returncode == 0
    before = (out / "results.json").read_text()

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (2048, 2048))

    result = verify("check", "merge_state", "--checks", "reference,determinism", "--examples", "3", "--out", str(out),
                    preexec_fn=small_files)
    one_line(result, 2, "cannot write the results")
    errors = [line for line in result.stderr.splitlines() if line.startswith("verify: error:")]
    assert len(errors) == 1, result.stderr  # said once, not once per place that met it
    assert (out / "results.json").read_text() == before


@pytest.mark.parametrize("name", ["results.json", "report.html", ".verify.lock"])
def test_a_folder_where_a_run_writes_a_file_is_refused(tmp_path, name):
    (tmp_path / name).mkdir()
    one_line(verify("check", "merge_state", "--out", str(tmp_path)), 2, f"{name} is a folder")


# -- output paths that would destroy results -----------------------------------------------------------------
@pytest.mark.webgpu
def test_outputs_never_overwrite_results(tmp_path):
    out = tmp_path / "out"
    assert verify("check", "merge_state", "--checks", "reference", "--examples", "2", "--out", str(out)).returncode == 0
    results = out / "results.json"
    before = results.read_text()
    one_line(verify("report", str(results), "-o", str(results)), 2, "is one of the results files")
    copy = tmp_path / "copy.json"
    copy.write_text(before)
    one_line(verify("report", str(results), "-o", str(copy)), 2, "holds verify results")
    for target in (results, out / "report.html"):
        result = verify("check", "merge_state", "--checks", "reference", "--examples", "2", "--out", str(out),
                        "--junit", str(target))
        one_line(result, 2, "is one of the run's own files")
    assert results.read_text() == before


# -- broken packages, contracts that verify nothing -------------------------------------------------------------
def test_a_package_whose_module_raises_is_named_and_the_others_are_listed():
    result = verify("list", extra_path=[BROKEN])
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "verify-broken" in result.stderr and "broken on purpose" in result.stderr
    assert "merge_state  [own]" in result.stdout
    check = verify("check", "broken.kernel", extra_path=[BROKEN])
    one_line(check, 2, "cannot be loaded")


@pytest.mark.webgpu
def test_the_gate_reports_a_broken_package_as_an_error_and_runs_the_rest(tmp_path):
    result = verify("gate", "--profile", "quick", "--kernels", "broken.kernel,merge_state", "--implementation", "wgpu",
                    "--out", str(tmp_path), extra_path=[BROKEN])
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-3000:]
    found = records(tmp_path)
    broken = [r for r in found if r["kernel"] == "broken.kernel"]
    assert [r["verdict"] for r in broken] == ["error"] and "broken on purpose" in broken[0]["reason"]
    assert {r["verdict"] for r in found if r["kernel"] == "merge_state"} == {"pass"}


@pytest.mark.webgpu
@pytest.mark.parametrize("kernel,fragment", [
    ("toy.no_outputs", "expected() returned no outputs"),
    ("toy.unknown_output", "expected() names output 'z', which launch() did not return"),
    ("toy.wrong_shape", "expected() gives output 'y' the shape"),
    ("toy.unbounded", "infinite (or NaN) on every element"),
    ("toy.wrong_binding", "the kernel's own code raised UsageError"),
])
def test_a_kernel_that_breaks_its_contract_is_named_never_passed(kernel, fragment, tmp_path):
    result = verify("check", kernel, "--examples", "3", "--out", str(tmp_path), extra_path=[PLUGIN])
    assert result.returncode == 1, result.stderr[-3000:]
    [record] = records(tmp_path)
    assert record["verdict"] == "error" and record["failure_kind"] == "error in the kernel's code", record
    assert fragment in record["reason"] and "internal error in verify" not in record["reason"]


@pytest.mark.webgpu
def test_a_slow_python_reference_is_not_called_a_hung_kernel(tmp_path):
    result = verify("check", "toy.slow_reference", "--examples", "2", "--time-limit", "20", "--out", str(tmp_path),
                    extra_path=[PLUGIN])
    assert result.returncode == 1
    [record] = records(tmp_path)
    assert record["failure_kind"] == "time limit" and "a slow reference, not a hung kernel" in record["reason"]
    assert record["verdict"] == "error" and "never terminates" not in record["reason"]


def test_a_kernel_with_no_checks_is_refused(tmp_path):
    module = tmp_path / "checkless.py"
    module.write_text("from verify_toy.kernels import Double\n\nclass Checkless(Double):\n    name = 'checkless'\n"
                      "    checks = ()\n")
    result = verify("check", "checkless:Checkless", "--out", str(tmp_path / "out"), extra_path=[PLUGIN, tmp_path])
    one_line(result, 2, "declares no checks")


# -- other processes: a Node that never answers ---------------------------------------------------------------
def test_a_node_process_that_never_answers_is_killed_at_its_limit(tmp_path):
    import shutil

    from verify.gpu.dawn.process import NodeNotAnswering, NodeProcess

    node = shutil.which("node")
    if node is None:
        pytest.skip("Node.js is not installed")
    script = tmp_path / "silent.mjs"
    script.write_text("process.stdin.resume(); setInterval(() => {}, 1000);\n")
    process = NodeProcess(node, str(script), {})
    started = time.monotonic()
    with pytest.raises(NodeNotAnswering, match="did not answer 'adapters' within 1 s"):
        process.request({"op": "adapters"}, timeout=1.0)
    assert time.monotonic() - started < 60 and not process.alive


# -- files checked whole ----------------------------------------------------------------------------------
@pytest.mark.parametrize("field,value,fragment", [
    ("shard", "a/b", "is not K/N"),
    ("shard", "1/99999999999999999999", "is not K/N"),
    ("planned", -5, "no fewer than 0"),
    ("planned", True, "should be a int"),
    ("plan", {"fingerprint": "x", "jobs": 1}, "not a sha256"),
])
def test_malformed_results_fields_are_one_line(tmp_path, field, value, fragment):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": "verify.results/2", "records": [], field: value}))
    one_line(verify("report", str(path), "-o", str(tmp_path / "r.html")), 2, fragment)


def test_deeply_nested_json_is_one_line(tmp_path):
    path = tmp_path / "results.json"
    path.write_text('{"schema": "verify.results/2", "records": [], "argv": ' + "[" * 100000 + "]" * 100000 + "}")
    one_line(verify("report", str(path), "-o", str(tmp_path / "r.html")), 2, "nested too deeply")


def test_a_shard_count_beyond_the_plan_is_one_line(tmp_path):
    one_line(verify("gate", "--shard", "1/99999999999999999999", "--out", str(tmp_path)), 2, "K/N")
    one_line(verify("gate", "--kernels", "merge_state", "--implementation", "wgpu", "--shard", "1/5000",
                    "--out", str(tmp_path)), 2, "leaves shards with nothing to run")


@pytest.fixture
def saved_case(tmp_path):
    """A failing case of merge_state, saved by verify."""
    mutant = FIXTURES / "mutants" / "merge_state" / "natural_log.wgsl"
    out = tmp_path / "run"
    verify("check", "merge_state", "--wgsl", str(mutant), "--checks", "reference", "--examples", "3", "--out", str(out))
    return Path(records(out)[0]["shrunk"]["case_file"])


@pytest.mark.webgpu
def test_a_case_edited_in_any_part_is_refused(saved_case):
    sidecar = saved_case.with_suffix(".json")
    meta = json.loads(sidecar.read_text())
    meta["params"]["tokens"] = 99
    sidecar.write_text(json.dumps(meta))
    one_line(verify("replay", str(saved_case)), 2, "do not match the recorded case_sha256")
    for key in ("case_sha256", "wgsl_sha256"):
        edited = dict(meta)
        del edited[key]
        sidecar.write_text(json.dumps(edited))
        one_line(verify("replay", str(saved_case)), 2, f"has no {key}")


@pytest.mark.webgpu
def test_an_array_header_declaring_more_than_its_data_is_refused(saved_case, tmp_path):
    import zipfile

    doctored = tmp_path / "doctored.npz"
    with zipfile.ZipFile(saved_case) as source, zipfile.ZipFile(doctored, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "v.npy":
                header = data[:data.index(b"\n") + 1].decode("latin1")
                shape = header[header.index("'shape': (") + 10:header.index(")", header.index("'shape': ("))]
                data = header.replace(shape, "100000, 100000, 100000").encode("latin1") + data[len(header):]
            target.writestr(info.filename, data)
    saved_case.with_suffix(".json").replace(doctored.with_suffix(".json"))
    result = verify("replay", str(doctored))
    one_line(result, 2, "declares")
    assert "allow_pickle" not in result.stderr


@pytest.mark.webgpu
def test_a_nondeterministic_case_replays_ten_times_by_default(saved_case):
    """A race shows in some runs only: one passing replay would say nothing."""
    sidecar = saved_case.with_suffix(".json")
    meta = json.loads(sidecar.read_text())
    meta["failure_kind"] = "nondeterministic"
    sidecar.write_text(json.dumps(meta))
    result = verify("replay", str(saved_case))
    assert result.returncode == 1 and "failed in 10 of 10 replays" in result.stdout, result.stdout + result.stderr
    once = verify("replay", str(saved_case), "--repeat", "1")
    assert once.returncode == 1 and "replays" not in once.stdout


@pytest.mark.webgpu
def test_a_race_that_does_not_show_again_is_not_a_pass(saved_case):
    """A case saved by a nondeterministic failure, whose replays all hold (here: its WGSL is the
    kernel's correct one), says what was seen then and now, and exits 1: a race shows in some
    schedules only, so replays that hold clear nothing."""
    from verify.wgsl import sha256

    sidecar = saved_case.with_suffix(".json")
    meta = json.loads(sidecar.read_text())
    config = [f"{k}={v}" for k, v in sorted(meta["config"].items())]
    meta["wgsl"] = verify("show", "merge_state", *(a for c in config for a in ("--config", c))).stdout
    meta["wgsl_sha256"] = sha256(meta["wgsl"])
    meta["failure_kind"] = "nondeterministic"
    sidecar.write_text(json.dumps(meta))
    result = verify("replay", str(saved_case))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "saved  FAIL (nondeterministic)" in result.stdout
    assert "NOT REPRODUCED  failed in 0 of 10 replays" in result.stdout and "PASS" not in result.stdout


# -- signals from the first moment, pytest usage errors ----------------------------------------------------------
def _caught(pid: int, signum: int) -> bool:
    """Whether process `pid` has installed a handler for `signum` (Linux: SigCgt in /proc)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


def _started_as_from_a_terminal(command: list[str]) -> subprocess.Popen:
    """Start `command` with SIGINT's default disposition. A shell starts a background job with SIGINT
    ignored, the ignore survives exec, and Python then installs no Ctrl-C handler: under `make test &`
    this test met a process that no SIGINT reaches (it finished, exit 0, and the test skipped)."""
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc to know the handlers are in place")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_during_start_up_is_one_line_and_exit_130(signum):
    """Sent while verify is still importing its modules: once the interpreter runs verify's first
    lines (its handlers are in place), a signal is one line and exit 130, never a traceback."""
    process = _started_as_from_a_terminal([sys.executable, "-m", "verify", "list"])
    deadline = time.monotonic() + 60
    while not _caught(process.pid, signal.SIGTERM) and time.monotonic() < deadline:
        time.sleep(0.001)
    process.send_signal(signum)
    _, stderr = process.communicate(timeout=120)
    if process.returncode == 0:
        pytest.skip("verify list finished before the signal arrived")
    assert process.returncode == 130 and "Traceback" not in stderr, stderr
    assert stderr.strip().splitlines()[-1] == "verify: interrupted"


@pytest.mark.parametrize("option", [["--verify-profile", "bogus"], ["--verify-gate", "--verify-kernels", "nope"],
                                    ["--verify-implementation", "metal"]])
def test_bad_plugin_options_are_pytest_usage_errors(option, tmp_path):
    result = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *option, str(tmp_path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 4 and "INTERNALERROR" not in result.stdout + result.stderr, result.stdout[-2000:]
    assert "verify:" in result.stderr


def test_an_empty_output_array_keeps_its_case(tmp_path):
    """Shapes with zero elements still round-trip (no division by a zero size in the header check)."""
    from verify.cases import Case
    from verify.results.casefile import load_case, save_case

    path = save_case(tmp_path, "empty", Case({"pages": np.zeros((0, 2), np.float16)}, {"n": 0}),
                     {"kernel": "k", "config": {}, "check": "reference"}, "fn main() {}")
    case, _ = load_case(path)
    assert case["pages"].shape == (0, 2)
