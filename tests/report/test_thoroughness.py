"""The report says what each pass rests on (verify.results.thoroughness): per matrix cell, in the
summary's legend and per passing row, so a green cell of relation or structural checks never reads
as a numeric proof."""

from __future__ import annotations

import copy
import re

from tests.report.dom import parse
from tests.report.synthetic import FAILING, load_fixture, record
from verify.report import render_report
from verify.report.model import build_report
from verify.results.record import Verdict
from verify.results.store import parse_results
from verify.results.thoroughness import Thoroughness, judged, of


def document_of(marks: list[tuple[str, str, str | None]]) -> dict:
    """A /2 document of merge_state records: (check, verdict, thoroughness) each."""
    document = load_fixture(FAILING)
    template = record(document, "determinism", "pass")
    document["schema"] = "verify.results/2"
    document["records"] = [dict(copy.deepcopy(template), check=check, verdict=verdict, thoroughness=level)
                           for check, verdict, level in marks]
    return document


MARKS = [("reference", "pass", "numeric"), ("case_family", "pass", "numeric"), ("determinism", "pass", "relation"),
         ("sanitize", "pass", "structural"), ("implementations", "skip", "not run"), ("older", "pass", None)]


def test_a_cell_counts_its_records_by_thoroughness():
    report = build_report([parse_results(document_of(MARKS))])
    (kernel, (cell,)), = report.matrix
    assert dict(cell.judged) == {"numeric": 2, "relation": 1, "structural": 1, "not run": 1}
    assert dict(report.judged) == {"numeric": 2, "relation": 1, "structural": 1}  # passes only


def test_the_report_shows_the_legend_the_cell_and_each_passing_rows_thoroughness(tmp_path):
    path = tmp_path / "report.html"
    render_report([parse_results(document_of(MARKS))], path)
    html = path.read_text()
    dom = parse(html)
    legend, = re.findall(r'<p class="judged">(.*?)</p>', html, re.S)
    text = " ".join(re.sub(r"<[^>]+>", "", legend).split())
    assert "2 numeric (compared with the float64 reference" in text
    assert "1 relation" in text and "1 structural" in text
    assert "1 from files that do not say" in text  # the record written without the field claims nothing
    cell_line, = [e for e in dom.by_class("judged") if e.tag == "div"]
    assert cell_line.all_text().strip() == "2 numeric · 1 relation · 1 structural · 1 not run"
    rows = {tr.children[0].all_text().strip().split()[0]: [td.all_text().strip() for td in tr.children]
            for tr in next(t for t in dom.iter("table") if "records" in t.attrs.get("class", "")).iter("tr")
            if tr.children[0].tag == "td"}
    assert rows["sanitize"][1] == "structural" and rows["sanitize"][4] == "–"  # not "bit-exact": nothing compared
    assert rows["determinism"][1] == "relation" and rows["determinism"][4] == "bit-exact"
    assert rows["older"][1] == "–"


def test_a_record_says_less_than_its_check_where_it_did_less():
    """A check's level is the record's only where cases were drawn; a record that drew none
    (compile error, limits, preflight) judged the module's structure, a skip or an error nothing."""
    assert of("pass", 10, Thoroughness.NUMERIC) is Thoroughness.NUMERIC
    assert of("fail", 0, Thoroughness.NUMERIC) is Thoroughness.STRUCTURAL
    assert of("divergence", 0, Thoroughness.RELATION) is Thoroughness.STRUCTURAL
    assert of("skip", 0, Thoroughness.NUMERIC) is Thoroughness.NOT_RUN
    assert of("error", 40, Thoroughness.NUMERIC) is Thoroughness.NOT_RUN
    assert of("pass", 10, None) is None  # a check that cannot be loaded claims nothing
    template = parse_results(document_of([("reference", "pass", None)])).records[0]
    assert judged(template, Thoroughness.RELATION).thoroughness is Thoroughness.RELATION
    kept = judged(template, Thoroughness.RELATION)
    assert judged(kept, Thoroughness.NUMERIC).thoroughness is Thoroughness.RELATION  # a reused record keeps its own


def test_verifys_own_checks_declare_what_they_rest_on():
    from verify.checks import all_checks

    levels = {name: check.thoroughness for name, check in all_checks().items()}
    assert levels["reference"] is Thoroughness.NUMERIC
    assert levels["sanitize"] is Thoroughness.STRUCTURAL
    assert {levels[n] for n in ("determinism", "differential", "implementations", "page_permutation",
                                "split_merge", "causal_split", "prefill_vs_decode")} == {Thoroughness.RELATION}
    assert levels["quantization_error"] is Thoroughness.STRUCTURAL  # informational: it never fails


def test_an_unknown_level_from_a_newer_writer_is_not_claimed():
    document = document_of([("reference", "pass", "formal")])
    parsed = parse_results(document).records[0]
    assert parsed.thoroughness is None and parsed.verdict is Verdict.PASS
