"""verify extended from outside, through entry points only: a kernel family, a check with a
preflight and its own device limits, and a third WebGPU implementation (tests/fixtures/plugin).
Nothing in verify names them; these tests prove that adding them touched no generic module."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "plugin"


def verify(*args, cwd=None, timeout=600):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGIN), *sys.path]))
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=timeout)


def records(out: Path) -> list[dict]:
    return json.loads((out / "results.json").read_text())["records"]


def test_the_package_registers_a_kernel_a_check_and_an_implementation():
    listed = verify("list")
    assert listed.returncode == 0, listed.stderr
    assert "toy.double  [package]" in listed.stdout and "verify-toy 0.1 (entry point" in listed.stdout
    assert "small_workgroup" in listed.stdout
    adapters = verify("adapters")
    assert adapters.returncode == 0, adapters.stderr
    assert "[toy]" in adapters.stdout


@pytest.mark.webgpu
def test_a_third_implementation_runs_checks_and_is_compared_with_its_partner(tmp_path):
    result = verify("check", "toy.double", "--implementation", "toy", "--checks", "reference,implementations",
                    "--examples", "5", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    found = {r["check"]: r for r in records(tmp_path)}
    assert {r["verdict"] for r in found.values()} == {"pass"}
    assert {r["adapter"]["implementation"] for r in found.values()} == {"toy"}
    assert found["implementations"]["examples"] == 5


def test_the_gate_runs_on_every_registered_implementation():
    plan = subprocess.run([sys.executable, "-c", (
        "from verify.plan import gate_implementations, gate_jobs; from verify.profiles import get_profile;"
        "chosen = gate_implementations(None, None);"
        "jobs, _ = gate_jobs(['toy.double'], profile=get_profile('quick'), seed=0, out_dir=None, time_limit=None,"
        " implementations=list(chosen.run_on) + list(chosen.unavailable));"
        "print(sorted({(j.implementation, j.check) for j in jobs}))")],
        capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGIN), *sys.path])))
    assert plan.returncode == 0, plan.stderr
    planned = eval(plan.stdout)
    assert ("toy", "reference") in planned and ("wgpu", "implementations") in planned
    assert ("wgpu", "small_workgroup") in planned and ("toy", "small_workgroup") not in planned


@pytest.mark.webgpu
def test_a_checks_preflight_gives_its_verdict_before_any_case(tmp_path):
    result = verify("check", "toy.double", "--config", "workgroup=128", "--checks", "small_workgroup",
                    "--out", str(tmp_path))
    assert result.returncode == 1, result.stderr
    [record] = records(tmp_path)
    assert record["verdict"] == "fail" and record["examples"] == 0
    assert record["failure_kind"] == "over a device limit" and "128 invocations per workgroup" in record["reason"]
    passed = verify("check", "toy.double", "--config", "workgroup=64", "--checks", "small_workgroup",
                    "--examples", "4", "--out", str(tmp_path / "ok"))
    assert passed.returncode == 0, passed.stderr


@pytest.mark.webgpu
def test_a_failing_one_dimensional_output_still_gets_its_report(tmp_path):
    """A 1-D output declared with one axis name, failing on many elements: the report is written
    (by the run and by `verify report`) and names the axis."""
    result = verify("check", "toy.double", "--config", "bug=1", "--checks", "reference", "--examples", "10",
                    "--out", str(tmp_path))
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    [record] = records(tmp_path)
    heatmap = record["worst"]["detail"]["y"]["heatmap"]
    assert heatmap["axes"] == ["", "element"] and record["failure_kind"] == "over budget"
    assert (tmp_path / "report.html").stat().st_size > 0
    again = verify("report", str(tmp_path / "results.json"), "-o", str(tmp_path / "again.html"))
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr
    assert "element" in (tmp_path / "again.html").read_text()


@pytest.mark.webgpu
def test_an_exception_in_the_kernels_own_code_is_reported_as_the_kernels(tmp_path):
    result = verify("check", "toy.raising", "--examples", "3", "--out", str(tmp_path))
    assert result.returncode == 1, result.stderr
    [record] = records(tmp_path)
    assert record["verdict"] == "error" and record["failure_kind"] == "error in the kernel's code"
    assert "the kernel's own code raised ValueError: the toy kernel's cases are broken on purpose" in record["reason"]
    assert "verify_toy/kernels.py" in record["reason"] and "in cases" in record["reason"]
    assert "internal error in verify" not in result.stderr
    # The author's traceback is on the terminal, where they look first.
    assert 'verify_toy/kernels.py", line' in result.stderr and "raise ValueError" in result.stderr


@pytest.mark.webgpu
def test_a_profile_of_ones_own_reaches_the_worker_with_its_family_sizes(tmp_path):
    """A Profile built by the caller, with sizes for its own family, is the one the isolated worker
    draws cases with (not only its name)."""
    script = (
        "import dataclasses, verify\n"
        "tiny = dataclasses.replace(verify.get_profile('quick'), name='tiny', sizes={'toy': 3})\n"
        "results = verify.check('verify_toy.kernels:Double', checks='reference', examples=20, profile=tiny)\n"
        "sizes = {s['n'] for s in results['reference'].samples}\n"
        "print(results.verdict.value, max(sizes), results['reference'].profile)\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=600,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGIN), *sys.path])))
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["pass", "3", "tiny"]
