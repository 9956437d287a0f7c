"""CheckResult and the results file: typed values that survive JSON, and malformed files rejected in one line."""

from __future__ import annotations

import json

import pytest

from verify import UsageError
from verify.budgets.metrics import OutputMetrics
from verify.results.record import AdapterRecord, CheckResult, ExampleSummary, Source, StageTiming, Verdict
from verify.results.store import ResultsWriter, load_results


def metrics(**changes) -> OutputMetrics:
    values = dict(name="o", elements=4, failing=1, nan_count=0, exact_mismatches=0, max_abs=0.5, max_ulp=3.0,
                  rel_l2=1e-3, max_err_over_budget=float("inf"), max_err_over_floor=None, worst_index=[0, 1],
                  worst_value=1.5, worst_expected=1.0, worst_budget=0.1)
    return OutputMetrics(**{**values, **changes})


def full_result() -> CheckResult:
    worst = ExampleSummary(score=float("inf"), passed=False, message="o: 1/4 over budget", features={"context": 5},
                           case="tokens=1", outputs=[metrics()], detail={"o": {"histogram": {"counts": [1]}}},
                           case_file="cases/x-worst.npz")
    return CheckResult(kernel="decode.tiled", check="reference", config={"head_dim": 64}, verdict=Verdict.FAIL,
                       reason="o: 1/4 over budget", kernel_ref="verify.kernels.attention.decode_tiled:DecodeTiled",
                       family="attention", source=Source("own", "own", "ab" * 32), profile="ci", seed=3, examples=7,
                       runs=12, duration_s=1.25, adapter=AdapterRecord("llvmpipe", "llvmpipe", "Vulkan", "CPU", "Mesa", 8,
                                                                       False),
                       worst=worst, shrunk=worst, samples=[{"context": 5, "score": float("inf"), "passed": False}],
                       timing=StageTiming(7, {"reference": 0.1}, {"reference": 14.0}, None), budget="derivation",
                       finding=None, finding_reproduced=None, traceback=None, verify_version="0.2.0")


def test_a_result_survives_its_json_unchanged():
    result = full_result()
    again = CheckResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result
    assert again.worst.outputs[0].max_err_over_budget == float("inf") and again.verdict is Verdict.FAIL


def test_verdicts_rank_worst_first_and_only_fail_divergence_and_error_fail_a_run():
    assert Verdict.worst([Verdict.PASS, Verdict.KNOWN, Verdict.SKIP]) is Verdict.SKIP
    assert Verdict.worst([Verdict.PASS, Verdict.ERROR, Verdict.FAIL]) is Verdict.FAIL
    assert Verdict.worst([Verdict.PASS, Verdict.ERROR, Verdict.DIVERGENCE]) is Verdict.DIVERGENCE
    assert [v for v in Verdict if v.fails_run] == [Verdict.FAIL, Verdict.DIVERGENCE, Verdict.ERROR]


@pytest.mark.parametrize("field,value,fragment", [
    ("verdict", "maybe", "unknown verdict 'maybe'"),
    ("examples", "seven", "record 0.examples: expected int, got str"),
    ("config", [1, 2], "record 0.config: expected dict, got list"),
    ("worst", 5, "record 0.worst: expected an object, got int"),
    ("duration_s", "slow", "record 0.duration_s: expected a number"),
    ("finding_reproduced", "yes", "record 0.finding_reproduced: expected bool or NoneType"),
])
def test_a_results_file_with_a_wrong_field_type_is_one_usage_error(tmp_path, field, value, fragment):
    writer = ResultsWriter(tmp_path / "results.json", command="check", argv=[], profile="ci")
    writer.add(full_result())
    data = json.loads((tmp_path / "results.json").read_text())
    data["records"][0][field] = value
    (tmp_path / "results.json").write_text(json.dumps(data))
    with pytest.raises(UsageError, match=fragment.replace(".", r"\.")):
        load_results(tmp_path / "results.json")


def test_a_record_lacking_its_identity_is_rejected(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": "verify.results/2", "records": [{"kernel": "k", "check": "c"}]}))
    with pytest.raises(UsageError, match="lacks config, verdict"):
        load_results(path)


def test_a_newer_schema_says_so(tmp_path):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"schema": "verify.results/9", "records": []}))
    with pytest.raises(UsageError, match="written by a newer verify"):
        load_results(path)


def test_the_writer_serialises_each_record_once_and_writes_what_json_dumps_would(tmp_path, monkeypatch):
    """results.json is rewritten after every record (a kill loses nothing printed); each record is
    serialised once, and the file is byte for byte json.dumps(document.to_dict(), indent=1)."""
    from dataclasses import replace

    writer = ResultsWriter(tmp_path / "results.json", command="verify gate", argv=["gate"], profile="ci")
    records = [replace(full_result(), job_id=k, check=f"check{k}") for k in (2, 0, 1)]
    serialised = []
    original = CheckResult.to_dict
    monkeypatch.setattr(CheckResult, "to_dict", lambda self: serialised.append(self.check) or original(self))
    for record in records:
        writer.add(record)
        assert serialised == [record.check]  # the new record alone
        assert (tmp_path / "results.json").read_text() == json.dumps(writer.document.to_dict(), indent=1)
        serialised.clear()
    assert writer.finish(order=lambda r: r.job_id)
    assert serialised == []  # reordered, not serialised again
    text = (tmp_path / "results.json").read_text()
    assert text == json.dumps(writer.document.to_dict(), indent=1)
    assert [r.job_id for r in load_results(tmp_path / "results.json").records] == [0, 1, 2]
