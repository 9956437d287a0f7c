"""The `verify` command's contract: exit codes, one-line errors, hangs that do not hang the run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def verify(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=timeout)


def assert_one_line_usage_error(result, *fragments):
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("verify: error:"), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_help_teaches_the_commands_and_exit_codes():
    result = verify("--help")
    assert result.returncode == 0
    for word in ("check", "gate", "replay", "report", "show", "exit codes"):
        assert word in result.stdout


def test_unknown_kernel_lists_the_valid_ones():
    assert_one_line_usage_error(verify("show", "decode.nope"), "unknown kernel", "merge_state")


def test_unknown_config_key_lists_the_valid_ones():
    assert_one_line_usage_error(verify("show", "merge_state", "--config", "heads=3"), "no config key", "head_dim")


def test_config_the_kernel_cannot_take_says_why():
    assert_one_line_usage_error(verify("show", "merge_state", "--config", "head_dim=80"), "head_dim=80", "64, 96, 128, 256")


def test_unknown_profile_lists_the_profiles():
    assert_one_line_usage_error(verify("gate", "--profile", "weekly"), "quick, ci, nightly")


def test_unreadable_wgsl_file_is_a_usage_error(tmp_path):
    assert_one_line_usage_error(verify("check", "merge_state", "--wgsl", str(tmp_path / "none.wgsl")), "cannot read")


def test_missing_case_file_is_a_usage_error(tmp_path):
    assert_one_line_usage_error(verify("replay", str(tmp_path / "case.npz")), "no such case file")


def test_wgsl_made_for_another_config_is_refused(tmp_path):
    shown = verify("show", "merge_state", "--config", "head_dim=64")
    path = tmp_path / "k.wgsl"
    path.write_text(shown.stdout)
    assert_one_line_usage_error(verify("check", "merge_state", "--wgsl", str(path), "--config", "head_dim=128"),
                                "head_dim=64 (file) vs 128")


def test_show_prints_the_config_it_was_made_for():
    shown = verify("show", "merge_state", "--config", "head_dim=96,dtype=f32").stdout
    assert "// config: dtype=f32 head_dim=96" in shown and "const HEAD_DIM: u32 = 96u;" in shown


@pytest.mark.webgpu
def test_shown_kernel_checked_back_passes_and_writes_results(tmp_path):
    path = tmp_path / "k.wgsl"
    path.write_text(verify("show", "merge_state", "--config", "head_dim=64,dtype=f32").stdout)
    result = verify("check", "merge_state", "--wgsl", str(path), "--examples", "20", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    document = json.loads((tmp_path / "out" / "results.json").read_text())
    assert document["complete"] and {r["verdict"] for r in document["records"]} == {"pass"}
    assert all(r["source"]["kind"] == "file" and r["config"]["head_dim"] == 64 for r in document["records"])


@pytest.mark.webgpu
def test_wgsl_that_does_not_compile_fails_with_the_compiler_message(tmp_path):
    source = verify("show", "merge_state").stdout.replace("let d = w_self + w_peer;", "let d = 1u + w_self;")
    path = tmp_path / "broken.wgsl"
    path.write_text(source)
    result = verify("check", "merge_state", "--wgsl", str(path), "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    assert "does not compile" in result.stderr and "wgsl:" in result.stderr


@pytest.mark.webgpu
def test_a_kernel_that_never_finishes_runs_out_of_time_and_later_checks_still_run(tmp_path):
    # 30 s: determinism needs far longer (50 examples of two launches, each seconds long: 100 s or
    # more), reference fails on its first example after two launches (the bounds pass on a user's
    # file, then the plain run: 9 s at a load average of 11 on 2 cores), with room for a loaded machine. The time limit is verify's: an ERROR saying the
    # dispatch did not return, never a FAIL without proof (the reference check's bounds pass and
    # lavapipe's loop cap give the kernel's own verdict).
    result = verify("check", "merge_state", "--wgsl", str(FIXTURES / "wgsl" / "merge_state_never_finishes.wgsl"),
                    "--checks", "determinism,reference", "--examples", "50", "--time-limit", "30",
                    "--out", str(tmp_path / "out"))
    assert result.returncode == 1
    records = json.loads((tmp_path / "out" / "results.json").read_text())["records"]
    assert [r["check"] for r in records] == ["determinism", "reference"]
    assert records[0]["verdict"] == "error" and records[0]["failure_kind"] == "time limit", records[0]
    # Which of the two explanations depends on the machine's speed (lavapipe ends the loop after
    # its trip cap: on a quiet machine no dispatch may return in time, on a loaded one examples
    # pass and the last just before the limit); either way the limit is verify's, never a FAIL.
    reason = records[0]["reason"]
    assert reason.startswith("did not finish within the 30 s time limit") and "no verdict on the kernel" in reason
    assert "dispatch had not returned" in reason or "too slow for this machine, not hung" in reason, reason
    assert records[1]["verdict"] == "fail" and "over budget" in records[1]["reason"]


@pytest.mark.webgpu
def test_failing_case_replays_from_its_file(tmp_path):
    mutant = FIXTURES / "mutants" / "merge_state" / "natural_log.wgsl"
    result = verify("check", "merge_state", "--wgsl", str(mutant), "--checks", "reference", "--out", str(tmp_path))
    assert result.returncode == 1
    record = json.loads((tmp_path / "results.json").read_text())["records"][0]
    replay = verify("replay", record["shrunk"]["case_file"])
    assert replay.returncode == 1 and "FAIL" in replay.stdout and "max err/budget" in replay.stdout


def test_no_adapter_says_how_to_get_one(monkeypatch, capsys):
    """With no WebGPU adapter at all, the device cannot open: exit 2 naming the driver to install."""
    from verify import cli
    from verify.errors import SetupError
    from verify.gpu import open_device, wgpu_adapters

    monkeypatch.setattr(wgpu_adapters, "enumerate_adapters", lambda: [])
    assert cli.main(["adapters", "--implementation", "wgpu"]) == 2
    assert "mesa-vulkan-drivers" in capsys.readouterr().err
    with pytest.raises(SetupError, match="mesa-vulkan-drivers"):
        open_device("wgpu")


@pytest.mark.webgpu
@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_a_stopped_run_leaves_valid_partial_results_and_a_report(tmp_path, signum):
    """Ctrl-C (or a CI timeout's SIGTERM) mid-gate: results.json parses, says it was interrupted,
    keeps every finished record, and report.html is written."""
    import signal
    import time

    out = tmp_path / "out"
    proc = subprocess.Popen([sys.executable, "-m", "verify", "gate", "--profile", "quick", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        results = out / "results.json"
        if results.exists() and len(json.loads(results.read_text())["records"]) >= 3:
            break
        time.sleep(0.2)
    proc.send_signal(getattr(signal, signum))
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    document = json.loads((out / "results.json").read_text())
    assert document["interrupted"] and not document["complete"] and len(document["records"]) >= 3
    assert (out / "report.html").read_text().count("interrupted") >= 1


@pytest.mark.webgpu
def test_a_kernel_of_two_modules_checks_its_own_shown_text(tmp_path):
    """`decode` holds two modules in one text: the printed file checks under its contract."""
    shown = tmp_path / "decode.wgsl"
    shown.write_text(verify("show", "decode").stdout)
    result = verify("check", "decode", "--wgsl", str(shown), "--checks", "reference", "--examples", "2",
                    "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr


# -- interfaces: renames keep their old names, empty selections select nothing ---------------------------
def test_the_renamed_backend_option_still_works_with_a_warning(tmp_path):
    result = verify("adapters", "--backend", "wgpu")
    assert result.returncode == 0, result.stderr
    assert "--backend is deprecated" in result.stderr and "--implementation" in result.stderr
    assert "wgpu" in result.stdout


def test_the_renamed_backend_option_must_agree_with_the_new_one():
    assert_one_line_usage_error(verify("adapters", "--backend", "wgpu", "--implementation", "dawn"), "disagree")


def test_the_renamed_backend_environment_variable_still_works_with_a_warning():
    import os

    result = subprocess.run([sys.executable, "-m", "verify", "adapters"], capture_output=True, text=True, timeout=600,
                            env={k: v for k, v in dict(os.environ, VERIFY_BACKEND="wgpu").items()
                                 if k != "VERIFY_IMPLEMENTATION"})
    assert result.returncode == 0, result.stderr
    assert "VERIFY_BACKEND is deprecated" in result.stderr and "VERIFY_IMPLEMENTATION" in result.stderr
    bad = subprocess.run([sys.executable, "-m", "verify", "adapters"], capture_output=True, text=True, timeout=600,
                         env={k: v for k, v in dict(os.environ, VERIFY_BACKEND="nosuch").items()
                              if k != "VERIFY_IMPLEMENTATION"})
    assert bad.returncode == 2 and "nosuch" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.parametrize("args,option", [
    (("gate", "--kernels", ""), "--kernels"),
    (("gate", "--kernels", " , "), "--kernels"),
    (("check", "merge_state", "--checks", ""), "--checks"),
    (("findings", "export", "--only", ""), "--only"),
])
def test_an_empty_selection_is_a_usage_error_not_everything(args, option, tmp_path):
    extra = ("-o", str(tmp_path / "f")) if args[0] == "findings" else ("--out", str(tmp_path / "o"))
    assert_one_line_usage_error(verify(*args, *extra), option, "names no")


# -- where a run writes, checked before it runs ------------------------------------------------------------
def test_an_empty_output_folder_is_refused_not_the_current_folder(tmp_path):
    assert_one_line_usage_error(verify("check", "merge_state", "--out", ""), "--out is empty")


def test_a_junit_file_that_cannot_be_written_is_refused_before_the_run(tmp_path):
    result = verify("check", "merge_state", "--out", str(tmp_path / "o"), "--junit", "/proc/verify-junit.xml")
    assert_one_line_usage_error(result, "--junit /proc/verify-junit.xml")
    assert not (tmp_path / "o" / "results.json").exists()


def test_a_cache_variable_naming_a_file_is_one_line(tmp_path):
    import os

    file = tmp_path / "cache"
    file.write_text("")
    for name in ("VERIFY_CACHE", "VERIFY_TVM_CACHE", "VERIFY_ORT_CACHE"):
        result = subprocess.run([sys.executable, "-m", "verify", "list"], capture_output=True, text=True, timeout=600,
                                env=dict(os.environ, **{name: str(file)}))
        assert_one_line_usage_error(result, f"{name}={file}", "is a file")


def test_a_cache_folder_that_cannot_hold_a_build_is_a_setup_error(tmp_path):
    """A TVM build kept under a path whose folder cannot be made: one line, exit 2 (not a traceback)."""
    from verify._files import made_once
    from verify.errors import SetupError

    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SetupError, match="cannot keep kernel.wgsl in the cache folder"):
        made_once(blocker / "0.27" / "kernel.wgsl", lambda: "text")
