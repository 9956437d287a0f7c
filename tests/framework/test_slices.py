"""Slices of a check: its examples split over workers, each slice its own seed stream, merged into
the check's one record; without slicing the plan is what it was."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from verify.plan import check_jobs, sliced
from verify.profiles import get_profile
from verify.protocol import Job
from verify.results.record import CheckResult, ExampleSummary, Verdict
from verify.results.slices import merge_slices

MUTANTS = Path(__file__).resolve().parents[1] / "fixtures" / "mutants"


def test_slicing_splits_the_examples_and_keeps_the_job():
    [job] = check_jobs("merge_state", {}, profile=get_profile("ci"), examples=100, seed=5, out_dir=None,
                       time_limit=None, checks=["reference"])
    parts = sliced([job], 30)
    assert [p.examples for p in parts] == [25, 25, 25, 25] and {p.id for p in parts} == {job.id}
    assert [p.slice for p in parts] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert len({p.slice_seed for p in parts}) == 4 and job.slice_seed == 5
    assert sliced([job], None) == [job] and sliced([job], 100) == [job]


def test_a_check_with_capped_examples_is_never_split():
    [job] = check_jobs("merge_state", {}, profile=get_profile("ci"), examples=100, seed=0, out_dir=None,
                       time_limit=None, checks=["sanitize"])
    assert sliced([job], 10) == [job]


def test_a_kernel_taking_fewer_examples_runs_its_slices_first():
    """Without an earlier run's durations the plan orders jobs by examples times Job.weight: a
    nightly prefill check (200 examples where the profile has 1000, each five times the work)
    goes before a decode check's slices of as many examples."""
    from verify.plan import longest_first

    nightly = get_profile("nightly")
    [decode] = check_jobs("merge_state", {}, profile=nightly, examples=50, seed=0, out_dir=None, time_limit=None,
                          checks=["reference"])
    [prefill] = check_jobs("tvm.prefill_ragged", {}, profile=nightly, examples=50, seed=0, out_dir=None,
                           time_limit=None, checks=["determinism"])
    assert decode.weight == 1.0 and prefill.weight == 5.0
    decode, prefill = decode.__class__(**{**decode.__dict__, "id": 0}), prefill.__class__(**{**prefill.__dict__, "id": 1})
    assert [j.kernel for j in longest_first([decode, prefill])] == ["tvm.prefill_ragged", "merge_state"]
    assert [j.kernel for j in longest_first([decode, prefill], {})] == ["tvm.prefill_ragged", "merge_state"]


def test_sanitized_jobs_start_before_plain_ones_without_history():
    """A sanitize job runs a handful of examples, each tens of plain ones (Check.example_cost)."""
    from verify.plan import longest_first

    jobs = check_jobs("merge_state", {}, profile=get_profile("ci"), examples=200, seed=0, out_dir=None,
                      time_limit=None, checks=["reference", "determinism", "sanitize"])
    assert [j.check for j in longest_first(jobs)] == ["sanitize", "reference", "determinism"]


def test_the_ci_profile_does_not_slice():
    assert get_profile("ci").slice_examples is None and get_profile("quick").slice_examples is None


def test_slices_merge_into_the_worst_verdict_with_every_example_counted():
    job = Job(3, "k", "m:K", {}, "reference", 30, 0)
    summary = lambda score, passed: ExampleSummary(score=score, passed=passed)  # noqa: E731
    records = [job.result(Verdict.PASS, examples=10, runs=10, worst=summary(0.4, True), duration_s=1.0),
               job.result(Verdict.FAIL, "y over budget", examples=4, runs=9, worst=summary(7.0, False),
                          shrunk=summary(2.0, False), duration_s=2.0),
               job.result(Verdict.PASS, examples=10, runs=10, worst=summary(0.9, True), duration_s=1.0)]
    merged = merge_slices(records[::-1], [(3, 3), (2, 3), (1, 3)])
    assert isinstance(merged, CheckResult) and merged.job_id == 3
    assert merged.verdict is Verdict.FAIL and merged.reason == "y over budget"
    assert (merged.examples, merged.runs, merged.duration_s) == (24, 29, 4.0)
    assert merged.worst.score == 7.0 and merged.shrunk.score == 2.0


def test_the_parts_finding_notes_merge_into_one_with_their_counts_added():
    """A budgeted check of many parts, each of which met its documented finding, says so once, of
    all the check's examples."""
    from verify.results.slices import finding_note

    job = Job(3, "k", "m:K", {}, "reference", 30, 0)
    records = [job.result(Verdict.FAIL, examples=10, notes=["over a default limit", finding_note(3, 10)]),
               job.result(Verdict.FAIL, examples=10, notes=[finding_note(1, 10), "over a default limit"]),
               job.result(Verdict.PASS, examples=10, notes=["over a default limit"])]
    merged = merge_slices(records, [(1, 3), (2, 3), (3, 3)])
    assert merged.notes == ["over a default limit", finding_note(4, 30)]


@pytest.mark.webgpu
def test_a_sliced_check_finds_what_the_whole_one_finds(tmp_path):
    wgsl = MUTANTS / "merge_state" / "natural_log.wgsl"
    result = subprocess.run([sys.executable, "-m", "verify", "check", "merge_state", "--wgsl", str(wgsl), "--checks",
                             "reference", "--examples", "40", "--slice-examples", "10", "--jobs", "2",
                             "--out", str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert result.returncode == 1, result.stderr
    [record] = json.loads((tmp_path / "results.json").read_text())["records"]
    assert record["verdict"] == "fail" and record["shrunk"]["case_file"].endswith("-s1-shrunk.npz")


def test_a_regate_into_a_new_folder_orders_its_checks_by_the_reused_runs_durations(tmp_path):
    """--reuse files are a history too: a re-gate into a new output folder runs its longest checks
    first by what they took in the run it reuses; the output folder's own earlier run wins."""
    from verify.run import Schedule
    from verify.gpu.implementations import default_implementation
    from verify.results.record import AdapterRecord
    from verify.results.store import ResultsWriter

    jobs = check_jobs("merge_state", {}, profile=get_profile("ci"), examples=200, seed=0, out_dir=None,
                      time_limit=None, checks=["reference", "determinism", "sanitize"])
    adapter = AdapterRecord("a", implementation=default_implementation())

    def results(path, seconds):
        writer = ResultsWriter(path, command="gate", argv=[], profile="ci")
        for job in jobs:
            writer.add(job.result(Verdict.PASS, duration_s=seconds[job.check], adapter=adapter), write=False)
        writer.finish()
        return path

    earlier = results(tmp_path / "earlier.json", {"reference": 2.0, "determinism": 9.0, "sanitize": 1.0})
    out = tmp_path / "new"
    schedule = Schedule(reuse=[earlier], budget=0)  # unbudgeted: ci's default budget orders by parts
    assert [j.check for j in schedule.ordered(jobs, get_profile("ci"), out)] == ["determinism", "reference", "sanitize"]
    (tmp_path / "new").mkdir()
    results(tmp_path / "new" / "results.json", {"reference": 9.0, "determinism": 1.0, "sanitize": 2.0})
    assert [j.check for j in schedule.ordered(jobs, get_profile("ci"), out)] == ["reference", "sanitize", "determinism"]
    (tmp_path / "new" / "results.json").unlink()
    # without --reuse and without an earlier run in the folder: examples x cost
    assert [j.check for j in Schedule(budget=0).ordered(jobs, get_profile("ci"), out)] == ["sanitize", "reference", "determinism"]
