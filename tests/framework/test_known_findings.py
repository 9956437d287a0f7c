"""Known findings (Kernel.known_finding): a documented failure of a kernel is run by the gate and
reported in full, as verdict "known", without failing the run; a pass of such a check says the
finding did not reproduce; anything else keeps its verdict."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from tests.report.dom import parse
from verify.display import record_line, summary
from verify.results.junit import write_junit
from verify.results.record import CheckResult, ExampleSummary, Verdict

FINDING = "TVM's merge returns NaN for two empty states.\nexp2(-inf - max(-inf, -inf)) = exp2(NaN)."


def verify(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=timeout)


def ran(verdict: str, **extra) -> CheckResult:
    return CheckResult(kernel="tvm.merge_state", check="infinite_empty", config={"heads": 8}, seed=0, examples=3,
                       verdict=Verdict(verdict), reason="" if verdict == "pass" else "s: 1 NaN", **extra)


def case(path: str, score: float = float("inf")) -> ExampleSummary:
    return ExampleSummary(score=score, passed=False, case="tokens=1", case_file=path)


# -- the verdict mapping (CheckResult.with_known_finding) ------------------------------------------------------
def test_a_failure_with_a_known_finding_becomes_known_and_carries_it():
    record = ran("fail").with_known_finding(FINDING)
    assert record.verdict is Verdict.KNOWN and record.finding == FINDING and record.finding_reproduced is True
    assert record.reason == "s: 1 NaN"


def test_a_pass_with_a_known_finding_stays_a_pass_and_says_it_did_not_reproduce():
    record = ran("pass").with_known_finding(FINDING)
    assert record.verdict is Verdict.PASS and record.finding == FINDING and record.finding_reproduced is False


@pytest.mark.parametrize("verdict", ["error", "skip"])
def test_errors_and_skips_say_nothing_about_a_finding(verdict):
    record = ran(verdict)
    assert record.with_known_finding(FINDING) == record


@pytest.mark.parametrize("verdict", ["pass", "fail"])
def test_without_a_finding_the_verdict_is_the_checks(verdict):
    record = ran(verdict)
    assert record.with_known_finding(None) == record


# -- what the console and JUnit show -------------------------------------------------------------------------
def test_console_shows_the_findings_headline_and_replay_commands():
    record = ran("fail", shrunk=case("cases/a-shrunk.npz"), worst=case("cases/a-worst.npz")).with_known_finding(FINDING)
    line = record_line(record)
    assert line.startswith("KNOWN tvm.merge_state infinite_empty [heads=8] 3 examples")
    assert f"known finding: {FINDING.splitlines()[0]}" in line and FINDING.splitlines()[1] not in line
    assert "verify replay cases/a-shrunk.npz" in line and "verify replay cases/a-worst.npz" in line
    unreproduced = record_line(ran("pass").with_known_finding(FINDING))
    assert unreproduced.startswith("PASS") and "known finding did not reproduce: TVM's merge" in unreproduced
    assert summary([record, ran("pass"), ran("fail")]) == "3 checks: 1 fail, 1 known, 1 pass"


def test_junit_reports_a_known_finding_as_skipped_with_its_evidence(tmp_path):
    records = [ran("fail", shrunk=case("cases/a-shrunk.npz")).with_known_finding(FINDING),
               ran("pass").with_known_finding(FINDING)]
    write_junit(records, tmp_path / "junit.xml")
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert (suite.get("skipped"), suite.get("failures"), suite.get("errors")) == ("1", "0", "0")
    known, unreproduced = suite.findall("testcase")
    assert known.find("skipped").get("message") == f"known finding: {FINDING.splitlines()[0]}"
    out = known.find("system-out").text
    assert "known finding (reproduced):\n" + FINDING in out and "observed:\ns: 1 NaN" in out
    assert "replay: verify replay cases/a-shrunk.npz" in out
    assert unreproduced.find("skipped") is None and "known finding (did not reproduce)" in \
        unreproduced.find("system-out").text


# -- the real path: TVM's merge under infinite_empty --------------------------------------------------------
@pytest.mark.webgpu
def test_tvm_merge_of_two_infinite_empty_states_is_a_known_finding_that_passes_the_run(tmp_path):
    pytest.importorskip("tvm", reason="apache-tvm is not installed (import tvm failed)")
    out = tmp_path / "out"
    result = verify("check", "tvm.merge_state", "--checks", "infinite_empty", "--examples", "20",
                    "--out", str(out), "--junit", str(out / "junit.xml"))
    assert result.returncode == 0, result.stderr
    assert "KNOWN tvm.merge_state infinite_empty" in result.stderr and "1 checks: 1 known" in result.stderr
    [record] = json.loads((out / "results.json").read_text())["records"]
    assert record["verdict"] == "known" and record["finding_reproduced"] is True
    assert "NaN" in record["finding"] and "NaN" in record["reason"]
    [testcase] = ET.parse(out / "junit.xml").getroot().iter("testcase")
    assert testcase.find("skipped").get("message").startswith("known finding: TVM's merge returns NaN")
    section = parse((out / "report.html").read_text()).find_id("known")
    assert section is not None and "Known findings (1)" in section.all_text()
    assert f"verify replay {record['shrunk']['case_file']}" in section.all_text()


@pytest.mark.webgpu
def test_the_same_wgsl_as_a_users_file_is_judged_plainly(tmp_path):
    """A finding documents the kernel's own WGSL: an edited copy checked under its contract fails as news."""
    pytest.importorskip("tvm", reason="apache-tvm is not installed (import tvm failed)")
    path = tmp_path / "merge.wgsl"
    path.write_text(verify("show", "tvm.merge_state", "--config", "heads=8,head_dim=64,dtype=f32").stdout)
    result = verify("check", "tvm.merge_state", "--wgsl", str(path), "--checks", "infinite_empty", "--examples", "20",
                    "--out", str(tmp_path / "out"))
    assert result.returncode == 1, result.stderr
    [record] = json.loads((tmp_path / "out" / "results.json").read_text())["records"]
    assert record["verdict"] == "fail" and record["finding"] is None


# -- a finding's signature --------------------------------------------------------------------------
def _failed(outputs, kind, reason="x"):
    from verify.budgets.metrics import OutputMetrics
    from verify.results.record import CheckResult, ExampleSummary, Verdict

    metrics = [OutputMetrics(name, 4, 1, 0, 0, 1.0, 1.0, 0.1, 2.0, None, [0], 1.0, 0.0, 0.5) for name in outputs]
    return CheckResult(kernel="k", check="reference", config={}, verdict=Verdict.FAIL, reason=reason,
                       failure_kind=kind, shrunk=ExampleSummary(score=2.0, passed=False, outputs=metrics))


def test_a_failure_with_the_findings_signature_is_known():
    from verify.errors import FailureKind
    from verify.results.record import KnownFinding, Verdict

    finding = KnownFinding("the race\nevidence", outputs=("s", "v"), kinds=(FailureKind.OVER_BUDGET,))
    judged = _failed(["v"], FailureKind.OVER_BUDGET).with_known_finding(finding)
    assert judged.verdict is Verdict.KNOWN and judged.finding_headline == "the race"


@pytest.mark.parametrize("outputs,kind,reason,why", [
    (["lse"], "OVER_BUDGET", "x", "outputs lse fail"),
    (["v"], "WRITE_OUT_OF_BOUNDS", "x", "failed as write out of bounds"),
    (["v"], "OVER_BUDGET", "race at line 7", "reason lacks 'at line 63'"),
])
def test_a_failure_of_another_signature_stays_a_failure(outputs, kind, reason, why):
    """A known bug must not mask a new one under the same check."""
    from verify.errors import FailureKind
    from verify.results.record import KnownFinding, Verdict

    finding = KnownFinding("the race", outputs=("s", "v"), kinds=(FailureKind.OVER_BUDGET,), reasons=("at line 63",))
    judged = _failed(outputs, FailureKind[kind], reason).with_known_finding(finding)
    assert judged.verdict is Verdict.FAIL and judged.finding is None
    assert any("not the documented finding" in note and why in note for note in judged.notes), judged.notes


def test_a_finding_that_shows_on_one_implementation_is_not_missed_on_another():
    from verify.results.record import AdapterRecord, CheckResult, KnownFinding, Verdict

    finding = KnownFinding("Naga refuses it", implementations=("wgpu",))
    passed = CheckResult(kernel="k", check="reference", config={}, verdict=Verdict.PASS,
                         adapter=AdapterRecord("gpu", implementation="dawn"))
    assert passed.with_known_finding(finding).finding is None  # nothing to reproduce on dawn
    on_wgpu = CheckResult(kernel="k", check="reference", config={}, verdict=Verdict.PASS,
                          adapter=AdapterRecord("gpu", implementation="wgpu"))
    assert on_wgpu.with_known_finding(finding).finding_not_reproduced


@pytest.mark.webgpu
@pytest.mark.parametrize("seed", [1, 7])
def test_the_packed_grid_finding_reproduces_on_every_seed(seed, tmp_path):
    """Its explicit example (a batch of 3, threshold 3) runs first, whatever the seed draws."""
    pytest.importorskip("tvm", reason="apache-tvm is installed by scripts/setup.sh")
    import verify

    results = verify.check("tvm.decode", {"head_dim": 64, "qo_heads": 8, "kv_heads": 8, "dtype": "f32"},
                           checks="packed_grid", examples=1, seed=seed, out_dir=tmp_path)
    assert results["packed_grid"].verdict.value == "known", results["packed_grid"].reason


@pytest.mark.webgpu
def test_tvms_merge_with_heads_it_does_not_cover_is_known_as_dropped_heads(tmp_path):
    pytest.importorskip("tvm", reason="apache-tvm is installed by scripts/setup.sh")
    import verify

    results = verify.check("tvm.merge_state", {"heads": 14, "head_dim": 256, "dtype": "f16"}, checks="reference",
                           examples=2, out_dir=tmp_path)
    assert results["reference"].verdict.value == "known"
    assert results["reference"].finding_headline.startswith("TVM's merge leaves heads 12-13 of 14 unmerged")


# -- a known finding does not end the check (verify.checks.runner) -----------------------------------------------
def _documented(tmp_path, new_bug: int):
    import os
    from pathlib import Path

    plugin = Path(__file__).resolve().parents[1] / "fixtures" / "plugin"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(plugin), *sys.path]))
    out = tmp_path / f"new{new_bug}"
    result = subprocess.run([sys.executable, "-m", "verify", "check", "verify_toy.documented:Documented",
                             "--config", f"new_bug={new_bug}", "--profile", "quick", "--examples", "60",
                             "--out", str(out)], capture_output=True, text=True, env=env, timeout=600)
    [record] = json.loads((out / "results.json").read_text())["records"]
    return result, record


@pytest.mark.webgpu
def test_a_known_finding_is_known_only_once_every_example_ran_and_failed_as_it(tmp_path):
    result, record = _documented(tmp_path, new_bug=0)
    assert result.returncode == 0, result.stderr[-2000:]
    assert record["verdict"] == "known" and record["finding_reproduced"] is True
    assert record["examples"] == 60  # the check went on past the finding's first example
    [note] = [n for n in record["notes"] if "failed as the documented finding" in n]
    assert int(note.split()[0]) >= 1


@pytest.mark.webgpu
def test_a_new_bug_beside_a_known_finding_fails_the_check(tmp_path):
    result, record = _documented(tmp_path, new_bug=1)
    assert result.returncode == 1, result.stderr[-2000:]
    assert record["verdict"] == "fail" and record["failure_kind"] == "over budget"
    assert any("failed as the documented finding" in n for n in record["notes"])
    assert any(n.startswith("not the documented finding") for n in record["notes"])
