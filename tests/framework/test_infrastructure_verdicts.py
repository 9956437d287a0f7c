"""A verdict must be true both ways: verify's own limits (a compile's time, a worker killed from
outside) are never a FAIL of the kernel, and a crash the kernel causes at the same point every time
is. Each kernel here is right; only what runs it misbehaves (tests/fixtures/plugin/verify_toy/
infrastructure.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verify.protocol import Job
from verify.results.record import Verdict
from verify.session import _death_record, _Death

PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "plugin"


def check(kernel: str, tmp_path: Path, *args: str, **env: str) -> tuple[subprocess.CompletedProcess, list[dict]]:
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGIN), *sys.path]),
                       VERIFY_TOY_MARKERS=str(tmp_path), **env)
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "verify", "check", f"verify_toy.infrastructure:{kernel}",
                             "--implementation", "wgpu", "--out", str(out), *args],
                            capture_output=True, text=True, env=environment, timeout=900)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return result, json.loads((out / "results.json").read_text())["records"]


pytestmark = pytest.mark.webgpu


def test_a_worker_killed_once_runs_its_check_again_and_the_verdict_stands(tmp_path):
    result, [record] = check("DiesOnce", tmp_path, "--examples", "5")
    assert result.returncode == 0, result.stderr[-3000:]
    assert record["verdict"] == "pass" and record["examples"] == 5
    assert any("killed by SIGKILL" in note and "ran again" in note for note in record["notes"]), record["notes"]


def test_a_worker_killed_from_outside_every_time_is_an_error_never_a_fail(tmp_path):
    result, [record] = check("AlwaysKilled", tmp_path, "--examples", "3")
    assert result.returncode == 1
    assert record["verdict"] == "error" and record["failure_kind"] == "crash or device lost", record
    assert "killed by SIGKILL" in record["reason"] and "no verdict on it" in record["reason"]


def test_a_crash_at_the_same_point_every_time_is_the_kernels_failure(tmp_path):
    result, [record] = check("Crashes", tmp_path, "--examples", "3")
    assert result.returncode == 1
    assert record["verdict"] == "fail" and record["failure_kind"] == "crash or device lost", record
    assert "SIGSEGV" in record["reason"] and "twice at the same point" in record["reason"]


def test_a_compile_does_not_count_against_the_time_limit(tmp_path):
    # A compile of 12 s against a 6 s limit for checking 3 cases of milliseconds each.
    result, [record] = check("SlowCompile", tmp_path, "--examples", "3", "--time-limit", "6",
                             VERIFY_TOY_COMPILE_S="12")
    assert result.returncode == 0, result.stderr[-3000:]
    assert record["verdict"] == "pass" and record["examples"] == 3


def test_a_compile_past_its_own_allowance_is_an_error_naming_the_compile(tmp_path):
    result, [record] = check("SlowCompile", tmp_path, "--examples", "3", VERIFY_TOY_COMPILE_S="600",
                             VERIFY_COMPILE_TIME_LIMIT="4")
    assert result.returncode == 1
    assert record["verdict"] == "error" and record["failure_kind"] == "time limit", record
    assert "one compile" in record["reason"] and "no verdict on the kernel" in record["reason"]


def _job() -> Job:
    return Job(id=0, kernel="k", kernel_ref="m:K", config={}, check="reference", examples=10, seed=0)


@pytest.mark.parametrize("first,second,verdict", [
    (_Death(-11, "GPU", 3, True), _Death(-11, "GPU", 3, True), Verdict.FAIL),  # the same crash, same point
    (_Death(-11, "GPU", 3, True), _Death(-11, "GPU", 5, True), Verdict.ERROR),  # another point: not reproducible
    (_Death(-11, "reference", 3, True), _Death(-11, "reference", 3, True), Verdict.ERROR),  # Python, not the GPU
    (_Death(-9, "GPU", 3, True), _Death(-9, "GPU", 3, True), Verdict.ERROR),  # SIGKILL: sent from outside
    (_Death(1, None, 0, False), _Death(1, None, 0, False), Verdict.ERROR),  # before the check started
])
def test_two_deaths_are_the_kernels_failure_only_as_evidence(first, second, verdict):
    record = _death_record(_job(), first, second, "")
    assert record.verdict is verdict, record.reason


def test_a_runtime_dying_while_the_plan_makes_wgsl_is_an_error_naming_it_never_the_kernels_code(monkeypatch):
    from verify.errors import FailureKind
    from verify.plan import gate_jobs
    from verify.profiles import get_profile

    monkeypatch.syspath_prepend(str(PLUGIN))
    jobs, planned_out = gate_jobs(["verify_toy.infrastructure:DiesWhileMakingWgsl"], profile=get_profile("quick"),
                                  seed=0, out_dir=None, time_limit=None, implementations=["wgpu"])
    [record] = planned_out
    assert not jobs and record.verdict is Verdict.ERROR and record.failure_kind is FailureKind.CRASH
    assert "process died" in record.reason and "not the kernel" in record.reason


def test_a_config_whose_runtime_lacks_a_feature_is_one_skip_and_the_others_still_run(monkeypatch):
    """ORT refusing an f16 program on an adapter without shader-f16 is the adapter's limit: that
    config is a SKIP saying so (never an ERROR of the kernel's code), and the kernel's other configs
    are planned as before."""
    from verify.plan import gate_jobs
    from verify.profiles import get_profile

    monkeypatch.syspath_prepend(str(PLUGIN))
    jobs, planned_out = gate_jobs(["verify_toy.infrastructure:RuntimeLacksAFeature"], profile=get_profile("quick"),
                                  seed=0, out_dir=None, time_limit=None, implementations=["wgpu"])
    [record] = planned_out
    assert record.verdict is Verdict.SKIP and record.config["workgroup"] == 128
    assert "lacks shader-f16" in record.reason
    assert sorted({job.config["workgroup"] for job in jobs}) == [32, 64]


def test_check_says_a_runtime_death_while_planning_in_one_line(tmp_path):
    result, records = None, None
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGIN), *sys.path]))
    result = subprocess.run([sys.executable, "-m", "verify", "check", "verify_toy.infrastructure:DiesWhileMakingWgsl",
                             "--implementation", "wgpu", "--out", str(tmp_path / "o")],
                            capture_output=True, text=True, env=environment, timeout=600)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    assert "process died" in result.stderr and "not the kernel" in result.stderr
