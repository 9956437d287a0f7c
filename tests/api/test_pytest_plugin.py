"""The pytest plugin: markers, fixtures and options for a suite, and the gate as pytest items."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

pytest_plugins = ["pytester"]

SUITE = '''
import pytest

@pytest.mark.webgpu
def test_merge_holds(verify_check):
    results = verify_check("merge_state", {"head_dim": 64, "dtype": "f32"}, examples=5)
    assert results.verdict.value == "pass"

@pytest.mark.webgpu
def test_broken_merge_fails(verify_check):
    wgsl = """WGSL"""
    verify_check("merge_state", wgsl=wgsl, checks="reference", examples=20)

@pytest.mark.webgpu(requires={"no-such-feature"})
def test_needs_a_feature_nobody_has():
    raise AssertionError("must be skipped")

def test_device_fixture(webgpu_device):
    assert webgpu_device.info.name
'''


@pytest.mark.webgpu
def test_a_suite_gets_the_marker_the_fixtures_and_a_failure_with_the_replay_command(pytester, tmp_path):
    from tests.api.test_check_api import MUTANTS

    wgsl = (MUTANTS / "merge_state" / "natural_log.wgsl").read_text()
    pytester.makepyfile(test_suite=SUITE.replace("WGSL", wgsl))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--verify-seed", "1",
                                           "--verify-out", str(tmp_path / "cases"), "-rs")
    result.assert_outcomes(passed=2, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["*FAIL merge_state reference*", "*replay: verify replay*shrunk.npz*",
                                 "*the WebGPU adapter lacks no-such-feature*"])
    assert "Traceback" not in result.stdout.str().split("short test summary")[0].split("test_broken_merge_fails")[-1]


def gate_verdicts_by_cli(tmp_path, kernels: str) -> dict:
    out = tmp_path / "cli"
    subprocess.run([sys.executable, "-m", "verify", "gate", "--profile", "quick", "--kernels", kernels, "--out", str(out)],
                   capture_output=True, text=True, timeout=900)
    records = json.loads((out / "results.json").read_text())["records"]
    def config(record):
        text = ",".join(f"{k}={v}" for k, v in sorted(record["config"].items()))
        implementation = (record.get("adapter") or {}).get("implementation", "wgpu")
        return text + (f",implementation={implementation}" if implementation != "wgpu" else "")

    return {(r["kernel"], r["check"], config(r)): r["verdict"] for r in records}


@pytest.mark.webgpu
def test_the_gate_under_pytest_xdist_reaches_the_verdicts_of_verify_gate(tmp_path):
    pytest.importorskip("xdist")
    kernels = "merge_state,tvm.merge_state"
    expected = gate_verdicts_by_cli(tmp_path, kernels)
    junit = tmp_path / "junit.xml"
    run = subprocess.run([sys.executable, "-m", "pytest", "--verify-gate", "--verify-profile", "quick", "--verify-kernels",
                          kernels, "-n", "2", "-p", "no:cacheprovider", "--junitxml", str(junit), "-q"],
                         capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    seen = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        kernel = case.get("classname").removeprefix("verify-gate.")
        check, config = case.get("name").rstrip("]").split("[")
        properties = {p.get("name"): p.get("value") for p in case.iter("property")}
        seen[(kernel, check, config)] = properties[f"verify[{check}] verdict"]
        skipped = case.find("skipped")
        assert (skipped is not None) == (seen[(kernel, check, config)] == "known")
    assert seen == expected and set(expected.values()) == {"pass", "known"}


@pytest.mark.webgpu
def test_a_known_finding_in_the_gate_is_an_xfail(pytester):
    pytester.makeconftest("")
    result = pytester.runpytest_subprocess("--verify-gate", "--verify-profile", "quick", "--verify-kernels",
                                           "tvm.merge_state", "-k", "reference and f32", "-p", "no:cacheprovider")
    # tvm.merge_state's race is a documented finding: an xfail, never a pass or an error; the
    # quick profile has two f32 configs (8 heads; 7 heads, where heads are also dropped) and the
    # gate runs the reference check on both WebGPU implementations: it races on all four.
    result.assert_outcomes(xfailed=4)


def test_pytest_options_that_cannot_be_honoured_are_one_usage_error(pytester):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    for args, fragment in ((("--verify-out", "/proc/verify-out"), "--verify-out /proc/verify-out"),
                           (("--verify-gate", "--verify-kernels", ""), "--verify-kernels")):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + result.stderr.str()
        assert fragment in result.stderr.str() and "Traceback" not in result.stderr.str()


def test_the_renamed_backend_option_of_pytest_still_works(pytester):
    pytester.makepyfile(test_option="def test_option(pytestconfig):\n"
                        "    assert pytestconfig.getoption('verify_implementation') == 'wgpu'\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--verify-backend", "wgpu")
    result.assert_outcomes(passed=1)
    assert "--verify-backend is deprecated" in result.stderr.str()
