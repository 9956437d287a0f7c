"""The HTML report: what it shows, in which order, and that it stays one small offline file.

Inputs are real results files (tests/fixtures/results, made by regenerate.py there) and
documents built from them (synthetic.py); no kernel runs here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from tests.report.dom import parse
from tests.report.synthetic import (
    FAILING,
    GPU,
    PASSING,
    errored,
    known,
    load_fixture,
    on_adapter,
    record,
    skipped,
    synthetic_document,
)
from verify.report import render_report
from verify.report.model import build_report as _build_report
from verify.report.model import scatter_feature
from verify.results.store import parse_results


def build_report(documents):
    return _build_report([parse_results(d) for d in documents])
from verify.results.detail import heatmap


def render(tmp_path, *documents, name="report.html"):
    path = tmp_path / name
    render_report([parse_results(d) for d in documents], path)
    html = path.read_text()
    return html, parse(html)


def main_sections(dom):
    main = next(dom.iter("main"))
    return [child.attrs.get("id") for child in main.children if child.tag == "section"]


def rows(table):
    return [[cell.all_text().strip() for cell in tr.children if cell.tag in ("th", "td")] for tr in table.iter("tr")]


def test_merged_documents_get_one_column_per_adapter(tmp_path):
    lavapipe = load_fixture(PASSING)
    gpu = on_adapter(lavapipe, GPU, host="gpu-box")
    _, dom = render(tmp_path, lavapipe, gpu)
    header, *body = rows(dom.by_class("matrix")[0])
    assert len(header) == 3
    assert "llvmpipe" in header[1] and "NVIDIA H200" in header[2]
    assert [row[0] for row in body] == ["merge_state"]
    assert all(cell.startswith("pass") for cell in body[0][1:])
    report = build_report([lavapipe, gpu])
    assert [a.name for a in report.adapters] == [lavapipe["records"][0]["adapter"]["name"], "NVIDIA H200"]
    for view in report.records:
        assert view.adapter.name == view.record.adapter.name
        assert view.adapter.hosts == [("gpu-box" if view.run == 2 else lavapipe["host"])]


def test_failures_come_first(tmp_path):
    """A failing run merged after a passing one still opens the page, right after the summary."""
    _, dom = render(tmp_path, load_fixture(PASSING), load_fixture(FAILING))
    assert main_sections(dom) == ["failures", "passed"]
    failures = dom.find_id("failures")
    first = next(failures.iter("article"))
    assert "fail" in first.attrs["class"].split()
    assert "NaN" in first.all_text()
    matrix_links = [a.attrs["href"] for a in dom.by_class("matrix")[0].iter("a")]
    assert matrix_links == [f"#{first.attrs['id']}"]
    assert "1 of 4 checks did not hold" in dom.by_class("headline")[0].all_text()


def test_passing_only_report_has_no_failure_section(tmp_path):
    html, dom = render(tmp_path, load_fixture(PASSING))
    assert dom.find_id("failures") is None
    assert main_sections(dom) == ["passed"]
    assert "all 2 checks that ran held" in dom.by_class("headline")[0].all_text()
    assert "<article" not in html


def test_failing_record_shows_cases_metrics_provenance_and_plots(tmp_path):
    document = load_fixture(FAILING)
    failing = record(document, "reference", "fail")
    _, dom = render(tmp_path, document)
    article = next(dom.find_id("failures").iter("article"))
    text = article.all_text()
    for role in ("shrunk", "worst"):
        assert f"verify replay {failing[role]['case_file']}" in text
        assert failing[role]["case"] in text
    metrics = [rows(t) for t in article.by_class("metrics")]
    assert [[row[0] for row in table[1:]] for table in metrics] == [["v", "s"], ["v", "s"]]
    assert [row[0] for row in metrics[0]][0] == "output" and "max err/floor" in metrics[0][0]
    for fact in (failing["source"]["sha256"], failing["source"]["origin"], failing["adapter"]["driver"], "--seed 0"):
        assert fact in text
    derivation = [d for d in article.iter("details") if "tolerance derivation" in d.all_text()]
    assert len(derivation) == 1 and failing["budget"].splitlines()[0] in derivation[0].all_text()
    assert "readback" in rows(article.by_class("timing")[0])[0]
    svgs = list(article.iter("svg"))
    assert len(svgs) == 5  # scatter; histogram and heatmap of each of v and s
    assert all(any(True for _ in svg.iter("path")) for svg in svgs)


def test_skipped_records_show_their_reason_and_are_never_passes(tmp_path):
    document = load_fixture(PASSING)
    f16_only = skipped(document["records"][0], reason="adapter lacks shader-f16")
    f16_only["kernel"] = "rope"
    document["records"].append(f16_only)
    _, dom = render(tmp_path, document)
    assert main_sections(dom) == ["skipped", "passed"]
    assert "adapter lacks shader-f16" in dom.find_id("skipped").all_text()
    assert "rope" not in dom.find_id("passed").all_text()
    matrix = {row[0]: row[1] for row in rows(dom.by_class("matrix")[0])[1:]}
    assert matrix["rope"].startswith("skip") and matrix["merge_state"].startswith("pass")
    assert build_report([document]).counts == {"pass": 2, "skip": 1}


FINDING = "TVM's merge races: lanes read S and write it with no barrier.\nEvidence: tests/sources/tvm/test_tvm.py."


def with_known_finding(document: dict) -> dict:
    """`document` plus the failing fixture's reference record as a known finding of tvm.merge_state."""
    found = known(record(load_fixture(FAILING), "reference", "fail"), FINDING)
    found["kernel"] = "tvm.merge_state"
    document["records"].append(found)
    return document


def test_known_findings_follow_failures_in_full_with_their_own_index(tmp_path):
    document = with_known_finding(load_fixture(FAILING))
    document["records"].append(skipped(document["records"][0]))
    found = document["records"][-2]
    _, dom = render(tmp_path, document)
    assert main_sections(dom) == ["failures", "known", "skipped", "passed"]
    section = dom.find_id("known")
    header, *index = rows(section.by_class("index")[0])
    assert header[-1] == "finding" and len(index) == 1
    assert index[0][:4] == ["known", "NaN", "tvm.merge_state", "reference"]
    assert index[0][-1] == FINDING.splitlines()[0]
    [article] = section.iter("article")
    assert "known" in article.attrs["class"].split()
    [finding] = article.by_class("finding")
    assert next(finding.iter("pre")).all_text().strip() == FINDING and not finding.hidden_by_details
    for role in ("shrunk", "worst"):
        assert f"verify replay {found[role]['case_file']}" in article.all_text()
    assert len(list(article.iter("svg"))) == 5 and found["source"]["sha256"] in article.all_text()
    assert [row[0] for row in rows(dom.find_id("failures").by_class("index")[0])[1:]] == ["fail"]
    headline = dom.by_class("headline")[0]
    assert "bad" in headline.attrs["class"].split()
    assert headline.all_text() == "1 of 4 checks did not hold; 1 known finding reproduced, 1 skipped"
    adapter_header = rows(dom.by_class("by-adapter")[0])[0]
    assert adapter_header == ["adapter", "driver", "implementation", "WGSL semantics", "fail", "divergence", "error",
                              "known", "skip", "pass"]
    assert [c.all_text() for c in dom.by_class("counts")[0].by_class("count")] == [
        "1fail", "0divergence", "0error", "1known", "1skip", "1pass"]


def test_a_run_whose_only_failures_are_known_findings_is_not_red(tmp_path):
    _, dom = render(tmp_path, with_known_finding(load_fixture(PASSING)))
    assert main_sections(dom) == ["known", "passed"]
    headline = dom.by_class("headline")[0]
    assert headline.attrs["class"].split() == ["headline", "known"]
    assert headline.all_text() == "all 2 other checks that ran held; 1 known finding reproduced"
    matrix = {row[0]: row[1] for row in rows(dom.by_class("matrix")[0])[1:]}
    assert matrix["tvm.merge_state"].startswith("known") and matrix["merge_state"].startswith("pass")
    link = [a.attrs["href"] for a in dom.by_class("matrix")[0].iter("a")]
    assert link == [f"#{next(dom.find_id('known').iter('article')).attrs['id']}"]


def test_a_matrix_cell_shows_its_worst_verdict():
    """fail > error > known > skip > pass: a cell is as bad as its worst record."""
    document = load_fixture(FAILING)
    template = record(document, "determinism", "pass")
    mixes = {"a": ("fail", "error", "known", "skip", "pass"), "b": ("error", "known", "skip", "pass"),
             "c": ("known", "skip", "pass"), "d": ("skip", "pass"), "e": ("pass",)}
    document["records"] = [dict(template, kernel=kernel, verdict=verdict) for kernel, verdicts in mixes.items()
                           for verdict in verdicts]
    report = build_report([document])
    assert [(kernel, cells[0].verdict) for kernel, cells in report.matrix] == [
        (kernel, verdicts[0]) for kernel, verdicts in mixes.items()]
    links = {kernel: cells[0].link for kernel, cells in report.matrix}
    assert links["c"] == next(v.anchor for v in report.records if v.record.kernel == "c" and v.verdict == "known")
    assert links["d"] is None and links["e"] is None


def test_a_pass_of_a_check_with_a_known_finding_says_it_did_not_reproduce(tmp_path):
    """An upstream fix, or an adapter where the bug does not show, must not pass unnoticed."""
    document = load_fixture(PASSING)
    document["records"][0].update(finding=FINDING, finding_reproduced=False)
    _, dom = render(tmp_path, document)
    anchor = next(v.anchor for v in build_report([document]).records if v.record.finding)
    notes = dom.find_id(anchor).by_class("note")
    assert len(notes) == 1 and notes[0].all_text().strip() == "known finding did not reproduce here"
    assert notes[0].attrs["title"] == FINDING.splitlines()[0]
    assert len(dom.find_id("passed").by_class("note")) == 1
    assert dom.by_class("headline")[0].all_text() == "all 2 checks that ran held; 1 known finding did not reproduce"


def test_error_records_show_their_traceback_in_collapsed_details(tmp_path):
    document = load_fixture(PASSING)
    document["records"].append(errored(document["records"][0]))
    _, dom = render(tmp_path, document)
    article = next(dom.find_id("failures").iter("article"))
    assert "error" in article.attrs["class"].split()
    reason = article.by_class("reason")[0]
    assert "ZeroDivisionError" in reason.all_text() and not reason.hidden_by_details
    traceback = [d for d in article.iter("details") if "Traceback (most recent call last)" in d.all_text()]
    assert len(traceback) == 1 and "open" not in traceback[0].attrs


def test_records_without_an_adapter_take_their_documents_adapter(tmp_path):
    """A check killed at its time limit is recorded from the job alone, without an adapter."""
    document = load_fixture(PASSING)
    document["records"].append({"kernel": "merge_state", "config": {"head_dim": 64, "dtype": "f32"},
                                "check": "reference", "seed": 0, "profile": "ci", "verdict": "fail", "examples": 0,
                                "reason": "did not finish within the 900 s time limit (a kernel that never terminates?)",
                                "failure_kind": "time limit"})
    report = build_report([document])
    assert len(report.adapters) == 1
    assert report.records[0].kind == "time limit"
    _, dom = render(tmp_path, document)
    assert "time limit" in dom.find_id("failures").all_text()


def test_the_failure_kind_is_the_records_field_never_its_wording():
    """A reason is prose for a reader; the kind is a field set where the failure was found, so a
    reworded message never moves a record to another class of the report."""
    document = load_fixture(PASSING)
    document["records"].append(dict(skipped(document["records"][0]), verdict="fail", failure_kind="compile error",
                                    reason="did not finish within the 900 s time limit"))
    assert build_report([document]).records[0].kind == "compile error"


def test_scatter_uses_the_first_numeric_case_feature():
    samples = [{"label": "a", "lse_gap": "nan", "context": 17, "score": 0.5, "passed": True},
               {"label": "b", "lse_gap": "nan", "context": 300, "score": "inf", "passed": False}]
    assert scatter_feature(samples) == "context"
    assert scatter_feature([{"score": 0.1, "passed": True}]) is None


def test_report_is_self_contained_with_unique_svg_ids(tmp_path):
    """Nothing is fetched (no script, no stylesheet link, every reference is in-page or data:),
    and the ids of many inline SVGs never collide (a clash would draw one plot's clip path in another)."""
    _, dom = render(tmp_path, synthetic_document(60), on_adapter(load_fixture(FAILING), GPU, host="gpu-box"))
    assert not list(dom.iter("script")) and not list(dom.iter("link"))
    for element in dom.iter():
        for name in ("src", "href", "xlink:href"):
            if name in element.attrs:
                assert element.attrs[name].startswith(("#", "data:")), (element.tag, element.attrs[name][:80])
    ids = [e.attrs["id"] for e in dom.iter() if "id" in e.attrs]
    assert len(ids) == len(set(ids))


def test_big_report_stays_small(tmp_path):
    """A nightly-sized run (200 records, 10 failing) renders to a few MB; size and time are printed."""
    document = synthetic_document(200)
    started = time.perf_counter()
    html, dom = render(tmp_path, document)
    seconds = time.perf_counter() - started
    size = len(html.encode())
    print(f"\n200-record report: {size / 1e6:.2f} MB, rendered in {seconds:.1f} s")
    assert len(list(dom.find_id("failures").iter("article"))) == 11
    assert size < 4e6


def run_report(*arguments):
    return subprocess.run([sys.executable, "-m", "verify", "report", *map(str, arguments)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("content,problem", [
    (None, "no such results file"),
    ('{"schema": "verify.results/1", "records": [', "not valid JSON"),
    ('{"schema": "junit", "records": []}', "not a verify results file"),
], ids=["missing", "invalid-json", "wrong-schema"])
def test_report_command_rejects_a_bad_results_file_in_one_line(tmp_path, content, problem):
    results = tmp_path / "results.json"
    if content is not None:
        results.write_text(content)
    result = run_report(PASSING, results, "-o", tmp_path / "report.html")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert problem in result.stderr and str(results) in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "report.html").exists()


def test_report_command_merges_results_files(tmp_path):
    gpu = tmp_path / "gpu.json"
    gpu.write_text(json.dumps(on_adapter(load_fixture(FAILING), GPU, host="gpu-box")))
    result = run_report(PASSING, gpu, "-o", tmp_path / "both.html")
    assert result.returncode == 0, result.stderr
    header = rows(parse((tmp_path / "both.html").read_text()).by_class("matrix")[0])[0]
    assert len(header) == 3


def test_heatmap_blocks_cover_the_output_without_padding_columns():
    """96 dims over at most 64 columns: 48 blocks of 2, not 64 blocks of which 16 are padding
    (an empty right edge would read as a correct region of the output)."""
    ratio = np.ones((10, 30, 96))
    grid = np.asarray(heatmap(ratio, ("head", "dim"))["values"])
    assert grid.shape == (30, 48) and (grid == 1).all()


def test_an_unfinished_run_is_flagged(tmp_path):
    """A run killed half-way leaves a valid partial results file; the report says it is partial."""
    document = load_fixture(PASSING)
    document.update(complete=False, interrupted=True)
    _, dom = render(tmp_path, document)
    warnings = dom.by_class("warning")
    assert len(warnings) == 1 and "was interrupted" in warnings[0].all_text()


def test_record_text_is_escaped(tmp_path):
    """Compiler messages quote WGSL (`vec4<f32>`); they must show as text, never become markup."""
    document = load_fixture(PASSING)
    document["records"].append(dict(skipped(document["records"][0]), verdict="fail", failure_kind="compile error",
                                    reason="WGSL does not compile:\nerror: <script>alert(1)</script> vec4<f32>"))
    html, dom = render(tmp_path, document)
    assert not list(dom.iter("script"))
    assert "&lt;script&gt;" in html and "vec4&lt;f32&gt;" in html
    assert build_report([document]).records[0].kind == "compile error"


def test_matplotlib_is_imported_only_to_draw(tmp_path):
    """A report whose plots were all kept by an earlier render is rendered without importing
    matplotlib (0.8 s of CPU in every command); the first render, which draws them, imports it."""
    code = ("import sys; from pathlib import Path; from verify.report import render_report; "
            "from verify.results.store import load_results; "
            "render_report([load_results(sys.argv[1])], Path(sys.argv[2])); "
            "print('matplotlib' in sys.modules)")
    env = dict(os.environ, VERIFY_CACHE=str(tmp_path / "cache"))  # no plot kept from another run
    pages = []
    for fixture in (PASSING, FAILING):
        for imported in ("True", "False"):  # drawn, then read back
            out = tmp_path / f"{len(pages)}.html"
            done = subprocess.run([sys.executable, "-c", code, str(fixture), str(out)], capture_output=True,
                                  text=True, timeout=300, env=env)
            assert done.returncode == 0 and done.stdout.strip() == imported, (fixture, done.stderr)
            pages.append(out.read_text())
    assert "<svg" in pages[0] and pages[0] == pages[1] and pages[2] == pages[3]
