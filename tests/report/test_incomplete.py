"""A report of a run that did not run its whole plan says so.

A run stopped half way (Ctrl-C, a CI timeout) or a split gate missing a shard holds fewer records
than it planned, and all of those may pass: the report must not read as a pass. The headline says
INCOMPLETE and how much of the plan ran, and the kernel x adapter matrix counts each kernel's checks
that did not run (from the plan's layout in results.json, PlanIdentity.layout), so a kernel whose
only finished check passed is no green cell. Documents written before the layout was recorded
still load and render, saying what they can.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest

from tests.report.dom import parse
from tests.report.synthetic import PASSING, load_fixture, on_adapter, record
from verify.errors import UsageError
from verify.report import render_report
from verify.report.model import build_report as _build_report
from verify.results.store import PlanIdentity, ResultsWriter, load_results, parse_results

LAVAPIPE = dict(load_fixture(PASSING)["records"][0]["adapter"], implementation="wgpu")
FINGERPRINT = "ab" * 32
#: A gate's plan of 8 jobs: merge_state's four checks on wgpu, then rope's four.
LAYOUT = [["merge_state", "wgpu", 4], ["rope", "wgpu", 4]]
CHECKS = ("reference", "determinism", "sanitize", "implementations")


def plan(jobs: int = 8, layout=LAYOUT, skipped: int = 0) -> dict:
    return {"fingerprint": FINGERPRINT, "jobs": jobs, "skipped": skipped, "layout": layout}


def run_of(job_ids, **fields) -> dict:
    """A results document holding the records of the jobs `job_ids` of the plan (job id ->
    kernel and check by LAYOUT), each a pass on lavapipe under wgpu."""
    document = on_adapter(load_fixture(PASSING), LAVAPIPE, host="vm")
    template = record(document, "reference", "pass")
    kernels = [kernel for kernel, _, count in LAYOUT for _ in range(count)]
    document["records"] = [dict(copy.deepcopy(template), kernel=kernels[i], check=CHECKS[i % 4], job_id=i)
                           for i in job_ids]
    document.update(schema="verify.results/2", plan=plan(), planned=8, **fields)
    return document


def build_report(*documents):
    return _build_report([parse_results(d) for d in documents])


def render(tmp_path, *documents):
    path = tmp_path / "report.html"
    render_report([parse_results(d) for d in documents], path)
    return parse(path.read_text())


def headline(dom):
    [element] = dom.by_class("headline")
    return element.attrs["class"].split()[1], element.all_text()


def words(element) -> str:
    """An element's text, its elements' texts apart and whitespace collapsed (dom.py keeps an
    element's own text before its children's, which is their order in the matrix's cells)."""
    return " ".join(" ".join([element.text, *map(words, element.children)]).split())


def matrix(dom) -> dict:
    """kernel -> [(cell class, cell text)] per adapter column, and the header under key None."""
    table = dom.by_class("matrix")[0]
    found = {}
    for tr in table.iter("tr"):
        cells = [c for c in tr.children if c.tag in ("th", "td")]
        key = None if all(c.tag == "th" for c in cells) else cells[0].all_text().strip()
        found[key] = [(c.attrs.get("class", ""), words(c)) for c in cells[1:]]
    return found


def test_an_interrupted_run_says_how_much_of_its_plan_ran_and_which_kernels_did_not_finish(tmp_path):
    """Three of eight checks ran, all passing, rope's only one its sanitize: INCOMPLETE, not green."""
    document = run_of([0, 1, 6], complete=False, interrupted=True)
    dom = render(tmp_path, document)
    assert headline(dom) == ("incomplete", "INCOMPLETE: 3 of 8 planned checks ran; the run was interrupted. "
                                           "All 3 checks that ran held")
    cells = matrix(dom)
    assert cells["merge_state"] == [("incomplete", "incomplete 2 pass · 2 not run 80 examples · worst err/budget 0.499")]
    assert cells["rope"] == [("incomplete", "incomplete 1 pass · 3 not run 40 examples · worst err/budget 0.499")]
    chips = [words(c) for c in dom.by_class("counts")[0].by_class("count")]
    assert chips[-1] == "5 not run"
    adapters = [[c.all_text().strip() for c in tr.children if c.tag in ("th", "td")]
                for tr in dom.by_class("by-adapter")[0].iter("tr")]
    assert adapters[0][-1] == "not run" and adapters[1][-2:] == ["3", "5"]
    warning = " ".join(dom.by_class("warning")[0].all_text().split())
    assert "was interrupted" in warning and "the 3 records it wrote, of 8 planned" in warning


def test_a_failure_stays_red_where_checks_did_not_run_and_a_passing_cell_is_never_green():
    document = run_of([0, 4, 5, 6, 7], complete=False, interrupted=True)
    document["records"][0].update(verdict="fail", failure_kind="NaN", reason="v: NaN")
    report = build_report(document)
    cells = {kernel: row[0] for kernel, row in report.matrix}
    assert (cells["merge_state"].verdict, cells["merge_state"].unrun) == ("fail", 3)
    assert (cells["rope"].verdict, cells["rope"].unrun) == ("pass", 0)
    assert report.tone == "bad"
    assert report.headline == ("INCOMPLETE: 5 of 8 planned checks ran; the run was interrupted. "
                               "1 of 5 checks did not hold")


def test_checks_on_an_implementation_no_record_reached_get_a_column_of_their_own(tmp_path):
    """An interrupted run that never reached Dawn: its decode checks are counted, under Dawn."""
    document = run_of(range(8), complete=False, interrupted=True)
    document["plan"] = plan(jobs=10, layout=[*LAYOUT, ["decode", "dawn", 2]])
    cells = matrix(render(tmp_path, document))
    assert cells[None][-1][1] == "adapter not reached (dawn)"
    assert cells["decode"] == [("muted", "not planned"), ("incomplete", "incomplete 2 not run")]
    assert cells["rope"][0][0] == "pass"


def test_a_run_that_stopped_on_an_error_or_is_still_running_says_so():
    stopped = run_of([0, 1], complete=False, aborted="results.json: cannot write the results (No space left on device)")
    assert build_report(stopped).headline.startswith(
        "INCOMPLETE: 2 of 8 planned checks ran; the run stopped: results.json: cannot write the results (No space left")
    running = run_of([0, 1], complete=False)  # report.html refreshed during the run
    assert build_report(running).headline.startswith(
        "INCOMPLETE: 2 of 8 planned checks ran; the run has not finished (it is still running, or was stopped")


def test_a_run_of_its_whole_plan_reads_as_before(tmp_path):
    dom = render(tmp_path, run_of(range(8), complete=True))
    assert headline(dom) == ("good", "all 8 checks that ran held")
    assert "not run" not in dom.by_class("counts")[0].all_text()
    assert all(cls == "pass" for row in matrix(dom).values() for cls, _ in row if cls != "")


def test_merged_shards_count_their_gates_plan_once():
    """Shards 1/2 and 2/2 hold jobs 0, 2, 4, 6 and 1, 3, 5, 7 of one plan of 8."""
    first = run_of([0, 2, 4, 6], complete=True, shard="1/2")
    second = run_of([1, 3, 5, 7], complete=True, shard="2/2")
    assert build_report(first, second).headline == "all 8 checks that ran held"
    cut = run_of([1, 5], complete=False, interrupted=True, shard="2/2")
    report = build_report(first, cut)
    assert report.headline == ("INCOMPLETE: 6 of 8 planned checks ran; run 2 (shard 2/2) was interrupted. "
                               "All 6 checks that ran held")
    assert {kernel: cells[0].unrun for kernel, cells in report.matrix} == {"merge_state": 1, "rope": 1}
    alone = build_report(first)
    assert alone.headline == ("INCOMPLETE: 4 of 8 planned checks ran; shard 2/2 of the gate split 2 ways is not in "
                              "this report. All 4 checks that ran held")
    assert [run["planned"] for run in alone.runs] == [4]


def test_separate_runs_merged_sum_their_plans():
    """Two machines' complete runs of the same gate: 16 planned, 16 ran; one of them interrupted:
    its unrun checks are counted too."""
    gpu = on_adapter(run_of(range(8), complete=True), dict(LAVAPIPE, name="NVIDIA H200"), host="gpu")
    assert build_report(run_of(range(8), complete=True), gpu).headline == "all 16 checks that ran held"
    report = build_report(run_of([0, 1], complete=False, interrupted=True), gpu)
    assert report.headline.startswith("INCOMPLETE: 10 of 16 planned checks ran; run 1 was interrupted. ")
    assert report.progress.missing == 6 and report.unrun == 6


def test_files_written_before_the_plans_layout_still_say_what_they_can(tmp_path):
    """A /1 file (no plan at all), a gate file with only its plan's size, and a /2 file whose plan
    has no layout: the headline still says the run is incomplete; the matrix shows what ran."""
    old = dict(load_fixture(PASSING), complete=False, interrupted=True)
    assert build_report(old).headline == ("INCOMPLETE: the run was interrupted; 2 checks ran (how many were planned "
                                          "was not recorded). All 2 checks that ran held")
    assert build_report(load_fixture(PASSING)).headline == "all 2 checks that ran held"
    sized = run_of([0, 1], complete=False, interrupted=True)
    del sized["plan"]
    assert build_report(sized).headline.startswith("INCOMPLETE: 2 of 8 planned checks ran; the run was interrupted.")
    unlaid = run_of([0, 1, 6], complete=False, interrupted=True)
    del unlaid["plan"]["layout"]
    dom = render(tmp_path, unlaid)
    assert headline(dom)[1].startswith("INCOMPLETE: 3 of 8 planned checks ran; the run was interrupted.")
    assert [cls for row in matrix(dom).values() for cls, _ in row if cls] == ["pass", "pass"]
    assert any("5 checks that did not run are not in the kernel × adapter matrix" in " ".join(w.all_text().split())
               for w in dom.by_class("warning"))


def test_the_plans_layout_is_written_read_back_and_checked(tmp_path):
    jobs = [SimpleNamespace(id=i, kernel=kernel, implementation=implementation)
            for i, (kernel, implementation) in enumerate([("rope", "wgpu"), ("rope", "wgpu"), ("rope", None),
                                                           ("decode", "dawn")])]
    laid = PlanIdentity(FINGERPRINT, 4).laid_out(list(reversed(jobs)))
    assert laid.layout == (("rope", "wgpu", 2), ("rope", "", 1), ("decode", "dawn", 1))
    assert laid.job_owners() == [("rope", "wgpu"), ("rope", "wgpu"), ("rope", ""), ("decode", "dawn")]
    writer = ResultsWriter(tmp_path / "results.json", command="gate", argv=[], profile="ci", planned=4, plan=laid)
    writer.add(parse_results(run_of([0])).records[0])
    assert load_results(tmp_path / "results.json").plan == laid
    data = json.loads((tmp_path / "results.json").read_text())
    del data["plan"]["layout"]
    assert parse_results(data).plan == PlanIdentity(FINGERPRINT, 4)
    for layout, problem in (([["rope", "wgpu", 3]], "covers 3 jobs; the plan has 4"),
                            ([["rope", "wgpu", "4"]], r"not \[kernel, implementation, count\]"),
                            ({"rope": 4}, "should be a list")):
        data["plan"]["layout"] = layout
        with pytest.raises(UsageError, match=problem):
            parse_results(data)


@pytest.mark.webgpu
def test_a_shard_of_a_gate_records_its_plans_kernels_and_its_report_says_what_did_not_run(tmp_path):
    """`verify gate --shard 1/N` with N the plan's size runs one job: results.json records the
    whole plan's layout (cli.cmd_gate), and the shard's report is incomplete by the other N - 1."""
    gate = [sys.executable, "-m", "verify", "gate", "--kernels", "merge_state", "--profile", "quick",
            "--implementation", "wgpu"]
    listed = subprocess.run([*gate, "--shard", "1/100000", "--out", str(tmp_path / "none")], capture_output=True,
                            text=True, timeout=600)
    assert "the plan has " in listed.stderr, listed.stderr  # a split into more shards than jobs says how many
    jobs = int(listed.stderr.split("the plan has ")[1].split()[0])
    out = tmp_path / "out"
    done = subprocess.run([*gate, "--shard", f"1/{jobs}", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    document = load_results(out / "results.json")
    assert sum(count for _, _, count in document.plan.layout) == document.plan.jobs == jobs
    assert {kernel for kernel, _, _ in document.plan.layout} == {"merge_state"}
    assert [r.job_id for r in document.records] == [0]
    dom = parse((out / "report.html").read_text())
    assert headline(dom)[1].startswith(f"INCOMPLETE: 1 of {jobs} planned checks ran; {jobs - 1} of the {jobs} shards "
                                       f"of the gate split {jobs} ways are not in this report.")
    unrun = [int(text.split(" not run")[0].split()[-1]) for _, text in matrix(dom)["merge_state"] if "not run" in text]
    assert sum(unrun) == jobs - 1
