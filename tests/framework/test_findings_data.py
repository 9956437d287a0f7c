"""Documented findings are data (verify.findings): declared once, named by id everywhere, held to
docs/findings.md, attributed to the right layer, and never covering more than their signature."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import verify
from verify.findings import Finding, Layer, all_findings
from verify.gpu.semantics import PROBE_IDS
from verify.results.record import AdapterRecord, CheckResult, ExampleSummary, KnownFinding, Verdict
from verify.errors import FailureKind
from verify.sources.tvm.attention.decode import TvmMergeState, s_lines

DOCS = Path(__file__).resolve().parents[2] / "docs" / "findings.md"
FINDINGS = all_findings()


def _section_text(section: str) -> str:
    text = DOCS.read_text()
    number = section[1:]
    heading = re.search(rf"^#+ {re.escape(number)}[. ].*$", text, re.M)
    assert heading, f"docs/findings.md has no section {section}"
    rest = text[heading.end():]
    following = re.search(r"^#+ ", rest, re.M)
    return rest[:following.start()] if following else rest


@pytest.mark.parametrize("finding_id", sorted(FINDINGS))
def test_each_finding_is_told_in_its_section_with_its_id_and_layer(finding_id):
    finding = FINDINGS[finding_id]
    told = _section_text(finding.section)
    line = next((l for l in told.split("\n\n") if l.startswith("**Finding.**") and f"`{finding_id}`" in l), None)
    assert line is not None, f"{finding.section} has no **Finding.** paragraph naming `{finding_id}`"
    assert f"the {finding.layer.value}" in line, f"{finding.section} does not say {finding_id}'s layer"


def test_every_finding_id_the_docs_name_is_declared():
    named = set(re.findall(r"\*\*Finding\.\*\*[^\n]*(?:\n[^\n]+)*", DOCS.read_text()))
    ids = {i for paragraph in named for i in re.findall(r"`([a-z0-9]+(?:-[a-z0-9]+)+)`", paragraph)}
    assert ids - set(FINDINGS) - set(PROBE_IDS) == set(), "docs/findings.md names findings nobody declares"


def test_implementation_and_driver_findings_rest_on_probes_that_exist():
    for finding in FINDINGS.values():
        assert set(finding.deviation) <= set(PROBE_IDS), finding.id
        if finding.layer is Layer.DRIVER:
            assert finding.deviation, finding.id


def test_every_reproduction_folder_is_a_declared_finding():
    from verify.export.findings import FINDINGS as FOLDERS

    assert {f.name for f in FOLDERS} <= set(FINDINGS)
    for folder in FOLDERS:
        assert folder.title == FINDINGS[folder.name].title and folder.section == FINDINGS[folder.name].section


def test_verifys_own_kernels_name_every_known_finding_by_a_declared_id():
    """No finding of verify's kernels is text alone: each has an id, so records, the report, the
    reproductions and this page name the same thing (a text-only finding also has no signature)."""
    from verify.kernels.registry import get_kernel, kernel_names
    from verify.profiles import get_profile

    untagged = []
    for name in kernel_names():
        kernel = get_kernel(name)
        if not type(kernel).__module__.startswith("verify."):
            continue
        try:
            configs = kernel.gate_configs(get_profile("ci"))
        except Exception:  # noqa: BLE001 - a kernel whose configs need a missing tool: nothing to read
            continue
        for config in configs:
            for check in kernel.checks:
                for known in KnownFinding.all_of(kernel.known_finding(check, config)):
                    if known.finding_id not in FINDINGS:
                        untagged.append(f"{name} {check}: {known.headline[:60]}")
    assert not untagged, untagged


def test_a_finding_id_must_name_a_folder_and_a_section():
    with pytest.raises(verify.UsageError, match="lowercase words"):
        Finding("Not An Id", "t", "§1", Layer.KERNEL, "p")
    with pytest.raises(verify.UsageError, match="section"):
        Finding("an-id", "t", "13.4", Layer.KERNEL, "p")


# -- conditions: an implementation's finding only where its probe deviates ----------------------------
def _failed(outputs=("y",), deviations: str | None = "workgroup-zero-init", messages=(), kind=None) -> CheckResult:
    from verify.budgets.metrics import OutputMetrics

    metrics = [OutputMetrics(name=o, elements=4, failing=4, nan_count=0, exact_mismatches=0, max_abs=1.0, max_ulp=1.0,
                             rel_l2=1.0, max_err_over_budget=9.0, max_err_over_floor=9.0, worst_index=[0],
                             worst_value=1.0, worst_expected=0.0, worst_budget=0.1) for o in outputs]
    summary = ExampleSummary(score=9.0, passed=False, outputs=metrics, reasons=list(messages))
    return CheckResult(kernel="k", check="reference", config={}, verdict=Verdict.FAIL, reason="; ".join(messages),
                       failure_kind=kind or FailureKind.OVER_BUDGET, shrunk=summary,
                       adapter=AdapterRecord("gpu", implementation="wgpu", deviations=deviations))


def test_an_implementations_finding_is_known_where_its_probe_deviates_and_news_where_it_conforms():
    finding = KnownFinding(outputs=("y",), finding_id="ort-small-m-zero-init")
    where_deviating = _failed().with_known_finding(finding)
    assert where_deviating.verdict is Verdict.KNOWN and where_deviating.finding_id == "ort-small-m-zero-init"
    where_conforming = _failed(deviations="").with_known_finding(finding)
    assert where_conforming.verdict is Verdict.FAIL
    assert any("shows only where workgroup-zero-init deviates" in n for n in where_conforming.notes)
    unmeasured = _failed(deviations=None).with_known_finding(finding)  # a record written before the probes
    assert unmeasured.verdict is Verdict.KNOWN


def test_a_sanitizer_message_the_finding_does_not_account_for_keeps_the_failure():
    known = KnownFinding(kinds=(FailureKind.SANITIZER,), reasons=("race on storage buffer S_ptr", "at line 37",
                                                                  "at line 61"), finding_id="tvm-merge-race")
    race = "race on storage buffer S_ptr[0] between workgroups: read ... at line 37 ... and write ... at line 61 ..."
    alone = _failed(outputs=(), messages=[race], kind=FailureKind.SANITIZER).with_known_finding(known)
    assert alone.verdict is Verdict.KNOWN
    news = "race on storage buffer V_ptr[0] between workgroups: write ... at line 61 ... and write ... at line 61"
    both = _failed(outputs=(), messages=[race, news], kind=FailureKind.SANITIZER).with_known_finding(known)
    assert both.verdict is Verdict.FAIL and any("V_ptr" in n for n in both.notes)


def test_several_findings_together_may_account_for_a_report():
    a = KnownFinding(kinds=(FailureKind.SANITIZER,), reasons=("mask_ptr",), finding_id="tvm-tree-mask-past-tree")
    b = KnownFinding(kinds=(FailureKind.SANITIZER,), reasons=("workgroup array",), finding_id="tvm-tree-extra-warp")
    record = _failed(outputs=(), messages=["read of storage buffer mask_ptr", "write of workgroup array Q_smem"],
                     kind=FailureKind.SANITIZER).with_known_finding([a, b])
    assert record.verdict is Verdict.KNOWN and record.finding_id == "tvm-tree-mask-past-tree,tvm-tree-extra-warp"


# -- a new race in a kernel whose sanitize is KNOWN ------------------------------------------------------
class MergeWithANewRace(TvmMergeState):
    """TVM's merge with one more line: every invocation stores V_ptr[0] just before the S write,
    a race between workgroups on V_ptr that TVM's documented race on S is not."""

    name = "tvm.merge_state_with_a_new_race"

    def wgsl(self, config):
        text = super().wgsl(config)
        _, write = s_lines(text)
        lines = text.splitlines()
        lines.insert(write - 1, "  V_ptr[0] = S_ptr[0];")
        return "\n".join(lines) + "\n"


@pytest.mark.webgpu
def test_a_new_race_in_a_kernel_whose_sanitize_is_known_fails():
    pytest.importorskip("tvm")
    config = {"heads": 8, "head_dim": 128, "dtype": "f32"}
    plain = verify.check("tvm.merge_state", config, checks="sanitize", examples=2, implementation="wgpu")
    assert plain["sanitize"].verdict is Verdict.KNOWN and plain["sanitize"].finding_id == "tvm-merge-race"
    mutated = verify.check(MergeWithANewRace, config, checks="sanitize", examples=2, implementation="wgpu")
    record = mutated["sanitize"]
    assert record.verdict is Verdict.FAIL, record.reason
    assert "V_ptr" in record.reason and any("not the documented finding" in n for n in record.notes)
