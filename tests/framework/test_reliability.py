"""A CI gate is trusted only if it cannot be fooled into green and never eats its own results:
one regression test per way a hostile user found to do either."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HANG = FIXTURES / "wgsl" / "merge_state_never_finishes.wgsl"


def verify(*args, timeout=600, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=cwd)


def start(*args, cwd=None):
    return subprocess.Popen([sys.executable, "-m", "verify", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=cwd)


def one_line_usage_error(result, *fragments):
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("verify: error:"), result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def records(out: Path) -> list[dict]:
    return json.loads((out / "results.json").read_text())["records"]


def shown(tmp_path, kernel="merge_state", config="head_dim=64,dtype=f32") -> str:
    return verify("show", kernel, "--config", config).stdout


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid`, read from each of its threads' `children` list.
    A thread (or the process) may end between listing and reading: it then has no children."""
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            text = (task / "children").read_text().split()
        except OSError:
            continue
        found += [int(c) for c in text]
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def wait_for(predicate, timeout: float = 60.0, step: float = 0.05) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return False


# -- 1. silent passes -----------------------------------------------------------------------------
@pytest.mark.webgpu
def test_a_kernel_declaring_more_workgroup_memory_than_the_device_grants_fails_naming_the_limit(tmp_path):
    text = shown(tmp_path).replace("const LANES: u32 = HEAD_DIM / 4u;",
                                   "const LANES: u32 = HEAD_DIM / 4u;\nvar<workgroup> hoard: array<vec4<f32>, 4096>;")
    text = text.replace("  let in_range = row < params.rows;", "  let in_range = row < params.rows;\n  hoard[lane.x] = vec4<f32>(0.0);")
    (tmp_path / "k.wgsl").write_text(text)
    result = verify("check", "merge_state", "--wgsl", str(tmp_path / "k.wgsl"), "--examples", "5", "--out", str(tmp_path / "o"))
    assert result.returncode == 1
    for record in records(tmp_path / "o"):
        assert record["verdict"] == "fail"
        assert "max-compute-workgroup-storage-size" in record["reason"] and "hoard 65536 B" in record["reason"]


def test_a_kernel_over_a_webgpu_default_limit_carries_a_note_not_a_failure():
    from verify.gpu.device import WANTED_LIMITS
    from verify.gpu.limits import check_limits
    from verify.kernels.registry import get_kernel

    kernel = get_kernel("decode.tiled")
    config = kernel.config({"head_dim": 64, "qo_heads": 8, "kv_heads": 1, "dtype": "f32"})
    report = check_limits(kernel.modules(kernel.wgsl(config)), dict(WANTED_LIMITS, **kernel.limits))
    assert report.over_limits == ()
    assert any("max-compute-workgroup-storage-size (21120 > 16384)" in n for n in report.over_defaults)
    assert any("max-storage-buffers-per-shader-stage (9 > 8)" in n for n in report.over_defaults)


@pytest.mark.webgpu
def test_a_write_far_past_the_end_that_the_driver_drops_still_fails(tmp_path):
    """The guard bytes after a buffer catch a write just past its end; one a million elements past
    it is dropped by the driver and changes no output. The sanitize check reads the kernel's own
    access log, and on a user's file the reference check runs the sanitizer's bounds pass too, so
    `--checks reference` alone cannot be fooled by it."""
    text = shown(tmp_path).replace("    s[row] = m + log2(d);", "    s[row] = m + log2(d);\n    s[row + 1000000u] = 0.0;")
    assert "1000000u" in text
    (tmp_path / "k.wgsl").write_text(text)
    result = verify("check", "merge_state", "--wgsl", str(tmp_path / "k.wgsl"), "--examples", "10", "--out", str(tmp_path / "o"))
    assert result.returncode == 1
    verdicts = {r["check"]: r for r in records(tmp_path / "o")}
    for check, kind in (("reference", "write out of bounds"), ("sanitize", "sanitizer finding")):
        assert verdicts[check]["verdict"] == "fail" and verdicts[check]["failure_kind"] == kind, verdicts[check]
        # The row written is the failing case's (corner cases run first): a million past it either way.
        found = re.search(r"out-of-bounds write of storage buffer s: index (\d+) is not below the length (\d+) "
                          r"\(s\[row \+ 1000000u\]\)", verdicts[check]["reason"])
        assert found and int(found[1]) - 1000000 < int(found[2]), verdicts[check]["reason"]
    assert verdicts["determinism"]["verdict"] == "pass"  # the outputs are right: the write went nowhere


MUTANTS = FIXTURES / "mutants" / "merge_state"


@pytest.mark.webgpu
@pytest.mark.parametrize("mutant,kind,fragments", [
    ("far_write", "write out of bounds",
     ("out-of-bounds write of storage buffer v: index ", "(v[arrayLength(&v) + 1048576u]); write by (wg 0, lane 1) at "
      'line 64 (verify/kernels/attention/merge_state.wgsl:56) "v[arrayLength(&v) + 1048576u] = v[index];"')),
    ("never_ends", "never terminates",
     ('unbounded loop: the loop at line 63 (verify/kernels/attention/merge_state.wgsl:55) "loop {}" ran past 16384 trips',
      "the kernel does not terminate")),
    ("never_ends_continue", "never terminates", ('unbounded loop: the loop at line 63', "ran past 16384 trips")),
])
def test_reference_alone_fails_a_far_write_or_a_loop_that_never_ends(tmp_path, mutant, kind, fragments):
    """`verify check --wgsl FILE --checks reference`: a write 2^20 elements past v, which the driver
    drops, and a loop that never ends, which the compiler may remove or lavapipe ends, leave every
    output right; the reference check's bounds pass on a user's file fails them, and the saved case
    fails again on replay."""
    result = verify("check", "merge_state", "--wgsl", str(MUTANTS / f"{mutant}.wgsl"), "--checks", "reference",
                    "--examples", "10", "--out", str(tmp_path / "o"))
    assert result.returncode == 1, result.stderr
    [record] = records(tmp_path / "o")
    assert record["verdict"] == "fail" and record["failure_kind"] == kind, record
    replay = verify("replay", record["shrunk"]["case_file"])
    assert replay.returncode == 1, replay.stdout + replay.stderr
    for fragment in fragments:
        assert fragment in record["reason"] and fragment in result.stdout + result.stderr, record["reason"]
        assert fragment in replay.stdout, replay.stdout


@pytest.mark.webgpu
def test_the_kernel_those_are_planted_in_passes_reference_from_a_file(tmp_path):
    (tmp_path / "k.wgsl").write_text(shown(tmp_path))
    result = verify("check", "merge_state", "--wgsl", str(tmp_path / "k.wgsl"), "--checks", "reference",
                    "--examples", "10", "--out", str(tmp_path / "o"))
    assert result.returncode == 0, result.stderr
    [record] = records(tmp_path / "o")
    assert record["verdict"] == "pass" and record["notes"] == []


@pytest.mark.webgpu
@pytest.mark.parametrize("command", [["check", "merge_state", "--examples", "3"],
                                     ["gate", "--profile", "quick", "--kernels", "merge_state,rope"]])
def test_a_run_with_skipped_checks_fails_unless_skips_are_allowed(tmp_path, command):
    result = verify(*command, "--adapter", "OpenGL", "--out", str(tmp_path / "o"))
    assert result.returncode == 1, result.stderr
    assert "SKIPPED (not verified)" in result.stderr and "adapter lacks shader-f16" in result.stderr
    assert {r["verdict"] for r in records(tmp_path / "o")} >= {"skip"}
    allowed = verify(*command, "--adapter", "OpenGL", "--out", str(tmp_path / "o2"), "--allow-skip")
    assert allowed.returncode == 0, allowed.stderr


# -- 2. lost results ------------------------------------------------------------------------------
@pytest.mark.webgpu
@pytest.mark.parametrize("bad", [["--adapter", "no-such-adapter"], ["--time-limit", "nan"], ["--examples", "0"]])
def test_a_run_that_fails_to_start_leaves_the_earlier_results_alone(tmp_path, bad):
    out = tmp_path / "o"
    assert verify("check", "merge_state", "--examples", "3", "--out", str(out)).returncode == 0
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    result = verify("check", "merge_state", "--examples", "3", "--out", str(out), *bad)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before


@pytest.mark.webgpu
def test_a_second_run_into_the_same_folder_stops_before_writing(tmp_path):
    out = tmp_path / "o"
    first = start("check", "merge_state", "--examples", "400", "--out", str(out))
    try:
        assert wait_for(lambda: (out / ".verify.lock").exists() and (out / "results.json").exists())
        second = verify("check", "rope", "--examples", "3", "--out", str(out))
        one_line_usage_error(second, "another verify run", f"pid {first.pid}")
    finally:
        assert first.wait(timeout=600) == 0
    assert {r["kernel"] for r in records(out)} == {"merge_state"}


@pytest.mark.webgpu
@pytest.mark.parametrize("target", ["folder", "under a file"])
def test_an_unusable_junit_path_is_refused_before_the_run(tmp_path, target):
    path = tmp_path / "j"
    if target == "folder":
        path.mkdir()
    else:
        path.write_text("")
        path = path / "junit.xml"
    result = verify("check", "merge_state", "--examples", "3", "--out", str(tmp_path / "o"), "--junit", str(path))
    one_line_usage_error(result, "--junit")
    assert not (tmp_path / "o" / "results.json").exists()


@pytest.mark.webgpu
def test_a_second_interrupt_while_results_are_finished_loses_nothing(tmp_path):
    out = tmp_path / "o"
    # Two checks of a kernel that never terminates: `reference` fails it within seconds (its bounds
    # pass sees the runaway loop: a record, so results.json exists) while `determinism` spins until
    # its time limit, minutes away; the first SIGINT stops the run, the next two land while it
    # writes what it has.
    run = start("check", "merge_state", "--wgsl", str(HANG), "--checks", "determinism,reference", "--examples", "50",
                "--time-limit", "240", "--jobs", "2", "--out", str(out))
    assert wait_for(lambda: (out / "results.json").exists(), 300)
    time.sleep(1.0)
    for _ in range(3):
        run.send_signal(signal.SIGINT)
        time.sleep(0.02)
    _, err = run.communicate(timeout=120)
    assert run.returncode == 130 and "Traceback" not in err, err
    document = json.loads((out / "results.json").read_text())
    assert document["interrupted"] is True and (out / "report.html").exists()


# -- 3. stray processes ---------------------------------------------------------------------------
@pytest.mark.webgpu
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP])
def test_the_worker_dies_with_its_parent(tmp_path, sig):
    run = start("check", "merge_state", "--wgsl", str(HANG), "--checks", "determinism", "--examples", "50",
                "--time-limit", "300", "--out", str(tmp_path / "o"))
    assert wait_for(lambda: children(run.pid), 30)
    workers = children(run.pid)
    time.sleep(1.0)  # the worker is now spinning on the hung kernel
    run.send_signal(sig)
    run.communicate(timeout=60)
    assert wait_for(lambda: not any(alive(w) for w in workers), 15), f"worker(s) {workers} outlived verify"


# -- 4. one line and exit 2, never a traceback ---------------------------------------------------------
def test_binary_garbage_as_wgsl_is_a_usage_error(tmp_path):
    path = tmp_path / "garbage.wgsl"
    path.write_bytes(bytes(range(256)) * 4)
    one_line_usage_error(verify("check", "merge_state", "--wgsl", str(path)), "not a WGSL text file")


def _saved_case(tmp_path) -> Path:
    """A failing case file of merge_state (the natural-log mutant), saved by a real run."""
    mutant = FIXTURES / "mutants" / "merge_state" / "natural_log.wgsl"
    verify("check", "merge_state", "--wgsl", str(mutant), "--checks", "reference", "--examples", "20",
           "--out", str(tmp_path / "o"))
    [shrunk] = sorted((tmp_path / "o" / "cases").glob("*-shrunk.npz"))
    return shrunk


@pytest.mark.webgpu
def test_replaying_a_damaged_or_edited_case_file_is_a_usage_error(tmp_path):
    case = _saved_case(tmp_path)
    sidecar = case.with_suffix(".json")
    meta = json.loads(sidecar.read_text())

    case.write_bytes(case.read_bytes()[:40])
    one_line_usage_error(verify("replay", str(case)), "not a readable case file")
    case = _saved_case(tmp_path / "again")
    sidecar = case.with_suffix(".json")

    edited = dict(meta, kernel="rope", kernel_ref="verify.kernels.attention.rope:Rope", config={})
    sidecar.write_text(json.dumps(edited))
    one_line_usage_error(verify("replay", str(case)), "does not fit rope")

    sidecar.write_text(json.dumps(dict(meta, schema="verify.case/9")))
    one_line_usage_error(verify("replay", str(case)), "newer than this verify understands")

    sidecar.write_text(json.dumps(dict(meta, wgsl=meta["wgsl"] + "\n// edited\n")))
    one_line_usage_error(verify("replay", str(case)), "sha256 does not match")

    sidecar.write_text(json.dumps(dict(meta, config=dict(meta["config"], head_dim=64))))
    one_line_usage_error(verify("replay", str(case)), "was specialised for another config")


def test_a_results_file_with_wrong_field_types_is_a_usage_error(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": "verify.results/2", "records": [
        {"kernel": "k", "check": "reference", "config": {}, "verdict": "pass", "examples": "many"}]}))
    one_line_usage_error(verify("report", str(path), "-o", str(tmp_path / "r.html")), "examples: expected int")


@pytest.mark.parametrize("target", ["/proc/verify-report.html", "folder"])
def test_a_report_that_cannot_be_written_is_a_usage_error(tmp_path, target):
    from tests.report.synthetic import PASSING

    output = tmp_path if target == "folder" else target
    one_line_usage_error(verify("report", str(PASSING), "-o", str(output)), "-o")


def test_gate_out_naming_a_file_is_a_usage_error(tmp_path):
    (tmp_path / "file").write_text("")
    one_line_usage_error(verify("gate", "--profile", "quick", "--kernels", "merge_state", "--out", str(tmp_path / "file")),
                         "is a file, not a folder")


@pytest.mark.parametrize("args,fragment", [
    (["check", "merge_state", "--time-limit", "nan"], "expected a positive number of seconds"),
    (["check", "merge_state", "--time-limit", "-3"], "expected a positive number of seconds"),
    (["check", "merge_state", "--examples", "0"], "expected at least 1"),
    (["check", "merge_state", "--examples", "-5"], "expected at least 1"),
    (["show", "decode.tiled", "--config", "qo_heads=1000000000"], "expected 1 to 256"),
    (["show", "dp4a.matmul", "--config", "m=60000,n=16,k=60032"], "pin smaller shapes"),
])
def test_bad_numbers_are_usage_errors(args, fragment):
    one_line_usage_error(verify(*args), fragment)


def test_a_terminal_that_cannot_show_every_character_still_gets_the_list():
    result = verify("list", env=dict(os.environ, PYTHONIOENCODING="ascii"))
    assert result.returncode == 0 and "Traceback" not in result.stderr and "decode.tiled" in result.stdout


# -- 5. exit codes ---------------------------------------------------------------------------------
@pytest.mark.webgpu
def test_a_failing_replay_piped_into_head_still_exits_1(tmp_path):
    case = _saved_case(tmp_path)
    result = subprocess.run(f"{sys.executable} -m verify replay {case} | head -1; exit ${{PIPESTATUS[0]}}",
                            shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr


def test_help_documents_the_interrupt_exit_code():
    assert "130 interrupted" in verify("--help").stdout


# -- 6. correct kernels are not hangs ----------------------------------------------------------------
@pytest.mark.webgpu
def test_the_time_limit_does_not_count_start_up(tmp_path):
    """A kernel whose WGSL takes 8 s to make passes a 4 s time limit: start-up is not counted (the
    check itself takes milliseconds, far from the limit on any machine)."""
    plugin = Path(__file__).resolve().parents[1] / "fixtures" / "plugin"
    result = subprocess.run([sys.executable, "-m", "verify", "check", "toy.slow_start", "--examples", "1",
                             "--time-limit", "4", "--out", str(tmp_path / "o")], capture_output=True, text=True,
                            timeout=600, env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugin), *sys.path])))
    assert result.returncode == 0, result.stderr


@pytest.mark.webgpu
def test_a_check_that_runs_out_of_time_says_how_many_examples_passed(tmp_path):
    result = verify("check", "merge_state", "--checks", "reference", "--examples", "100000", "--time-limit", "20",
                    "--out", str(tmp_path / "o"))
    assert result.returncode == 1
    [record] = records(tmp_path / "o")
    assert record["verdict"] == "error" and "of 100000 examples passed" in record["reason"]
    assert record["examples"] > 0 and "too slow for this machine, not hung" in record["reason"]


# -- 7. case files and the working directory ------------------------------------------------------------
@pytest.mark.webgpu
def test_case_files_carry_a_schema_and_the_source_of_the_wgsl(tmp_path):
    meta = json.loads(_saved_case(tmp_path).with_suffix(".json").read_text())
    assert meta["schema"] == "verify.case/2" and meta["source"]["kind"] == "file"
    assert meta["arrays"]["v"]["dtype"] == "float16" and meta["kernel_ref"].endswith(":MergeState")


@pytest.mark.webgpu
def test_a_run_leaves_no_hypothesis_folder_in_the_working_directory(tmp_path):
    assert verify("check", "merge_state", "--examples", "3", "--out", "o", cwd=tmp_path).returncode == 0
    assert not (tmp_path / ".hypothesis").exists()


def test_case_arrays_round_trip_with_their_shapes(tmp_path):
    from verify.cases import Case
    from verify.results.casefile import load_case, save_case

    case = Case({"x": np.arange(6, dtype=np.float16).reshape(2, 3)}, {"n": 2})
    path = save_case(tmp_path, "c", case, {"kernel": "k", "config": {}, "check": "reference"}, "// wgsl\n")
    loaded, meta = load_case(path)
    assert loaded["x"].dtype == np.float16 and loaded["x"].shape == (2, 3) and meta.sidecar["arrays"]["x"]["shape"] == [2, 3]
