"""A budgeted gate (`--budget`): every check's corners first, then random examples in parts of
BUDGET_PART_EXAMPLES, in rounds, until the budget is spent; the plan is the same on every machine
and each record says what it planned and what ran. Nothing here depends on the machine's speed: a
budget of a millisecond is spent before any random part can start, whatever the machine."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from verify.plan import BUDGET_PART_EXAMPLES, budgeted
from verify.protocol import Job
from verify.results.record import CheckResult, Verdict
from verify.results.slices import merge_slices


def job(i: int, check: str = "reference", examples: int = 35) -> Job:
    return Job(id=i, kernel="merge_state", kernel_ref="verify.kernels.attention.merge_state:MergeState",
               config={"head_dim": 64, "dtype": "f32"}, check=check, examples=examples, seed=0)


def test_the_plan_runs_every_corner_first_then_random_parts_in_rounds():
    plan = budgeted([job(0), job(1, examples=12)])
    assert [j.part for j in plan[:2]] == ["corners", "corners"] and all(j.examples == 0 for j in plan[:2])
    randoms = plan[2:]
    assert all(j.part == "random" for j in randoms)
    rounds = [j.slice[0] for j in randoms]
    assert rounds == sorted(rounds), "a check's second part never comes before every check's first"
    for i, planned in ((0, 35), (1, 12)):
        mine = [j for j in randoms if j.id == i]
        assert sum(j.examples for j in mine) == planned and max(j.examples for j in mine) <= BUDGET_PART_EXAMPLES
        assert len({j.slice_seed for j in mine}) == len(mine), "each part draws from a seed stream of its own"
    assert budgeted([job(0), job(1, examples=12)]) == plan, "the same jobs give the same plan"


def test_a_checks_cap_on_examples_bounds_its_parts():
    plan = budgeted([job(0, check="sanitize", examples=200)])
    assert sum(j.examples for j in plan if j.part == "random") == 6  # the sanitizer's MAX_EXAMPLES


def _record(verdict=Verdict.PASS, examples=10) -> CheckResult:
    return CheckResult(kernel="k", check="reference", config={}, verdict=verdict, examples=examples, runs=examples)


def test_a_record_says_what_was_planned_and_what_ran():
    merged = merge_slices([_record(examples=4), _record()], [(0, 4), (1, 4)], planned={0: 0, 1: 10, 2: 10, 3: 5})
    assert merged.verdict is Verdict.PASS and merged.corners_complete is True
    assert merged.examples == 14 and merged.examples_planned == 4 + 25
    assert any("2 of its 3 random parts were not reached" in note for note in merged.notes)


def test_a_check_whose_corners_did_not_complete_is_never_a_pass():
    merged = merge_slices([_record(), _record()], [(1, 3), (2, 3)], planned={0: 0, 1: 10, 2: 10})
    assert merged.verdict is Verdict.ERROR and merged.corners_complete is False
    errored = merge_slices([_record(Verdict.ERROR, 0), _record()], [(0, 2), (1, 2)], planned={0: 0, 1: 10})
    assert errored.verdict is Verdict.ERROR and errored.corners_complete is False


def test_a_failure_in_any_part_fails_the_check():
    merged = merge_slices([_record(), _record(Verdict.FAIL)], [(0, 3), (2, 3)], planned={0: 0, 1: 10, 2: 10})
    assert merged.verdict is Verdict.FAIL


def test_corners_are_the_kernels_where_a_check_draws_its_cases():
    from verify.checks import get_check
    from verify.checks.context import CheckContext
    from verify.kernels.registry import get_kernel

    kernel = get_kernel("decode.tiled")
    config = kernel.config({})
    ctx = CheckContext(kernel, config, device=None, wgsl="")
    corners = get_check("reference").corners(ctx)
    assert len(corners) == len(kernel.corners(config)) >= 4
    lengths = [c.params["lengths"] for c in corners]
    page = config["page_size"]
    assert [1] in lengths and [page] in lengths and [page + 1] in lengths
    assert [c.params for c in get_check("sanitize").corners(ctx)] == [c.params for c in corners[:2]]


@pytest.mark.webgpu
def test_a_spent_budget_still_runs_every_corner_and_says_what_it_did_not_reach(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "verify", "gate", "--profile", "ci", "--kernels", "merge_state",
                             "--implementation", "wgpu", "--budget", "0.001", "--jobs", "1", "--out", str(out)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr, result.stderr[-3000:]
    records = json.loads((out / "results.json").read_text())["records"]
    ran = [r for r in records if r["check"] in ("reference", "determinism")]
    assert ran and all(r["corners_complete"] and r["verdict"] == "pass" for r in ran), ran
    assert all(r["examples"] < r["examples_planned"] for r in ran)
    assert all(any("were not reached before the budget was spent" in n for n in r["notes"]) for r in ran)


@pytest.mark.webgpu
def test_a_spent_budget_runs_a_first_part_of_a_check_without_corners(tmp_path):
    """rope has no corner cases: under a spent budget each of its checks still draws its first part
    of random examples, where it used to pass having run none."""
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "verify", "gate", "--profile", "quick", "--kernels", "rope",
                             "--implementation", "wgpu", "--budget", "0.001", "--jobs", "2", "--out", str(out)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-3000:]
    records = json.loads((out / "results.json").read_text())["records"]
    assert records and all(r["examples"] > 0 and r["verdict"] == "pass" for r in records), records


@pytest.mark.webgpu
def test_a_kernel_without_corners_completes_its_corners_part_with_nothing_to_run(webgpu_device):
    """A budgeted gate's corners part runs a check's explicit cases alone; a kernel with no corners
    and no finding cases (rope) has none: the part runs nothing and its corners are complete, where
    Hypothesis, asked for a test of no cases, would have made it an internal error."""
    from verify.checks import get_check
    from verify.checks.context import CheckContext
    from verify.checks.runner import RunOptions, run_check
    from verify.kernels.registry import get_kernel
    from verify.profiles import get_profile

    kernel = get_kernel("rope")
    config = kernel.config({})
    ctx = CheckContext(kernel, config, webgpu_device, kernel.wgsl(config), get_profile("ci"))
    assert not kernel.corners(config) and not kernel.finding_examples("reference", config)
    corners_only = RunOptions(0, 0, shrink=False, explicit=True, generate=False)
    result = run_check(get_check("reference"), ctx, corners_only).result
    assert result.verdict is Verdict.PASS and result.examples == 0, result.reason
    merged = merge_slices([result], [(0, 2)], planned={0: 0, 1: 10})
    assert merged.verdict is Verdict.PASS and merged.corners_complete is True


def test_the_gate_takes_the_profiles_budget_and_verify_check_its_examples():
    """ci's gate is budgeted by default (165 s, docs/ci.md §8); `verify check` runs the examples it
    is asked for unless it is given --budget; --budget 0 turns the gate's off."""
    from argparse import Namespace

    from verify.cli import _schedule
    from verify.profiles import get_profile

    ci, quick = get_profile("ci"), get_profile("quick")
    args = Namespace(budget=None, jobs=1, reuse=None, slice_examples=None)
    assert _schedule(args).budget_s(ci) == 165.0 and _schedule(args).budget_s(quick) is None
    assert _schedule(args, profile_budget=False).budget_s(ci) is None
    assert _schedule(Namespace(**{**vars(args), "budget": 0.0})).budget_s(ci) is None
    assert _schedule(Namespace(**{**vars(args), "budget": 30.0}), profile_budget=False).budget_s(ci) == 30.0


@pytest.mark.webgpu
def test_verify_check_under_the_ci_profile_runs_every_example_it_asks_for(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run([sys.executable, "-m", "verify", "check", "merge_state", "--config", "head_dim=64,dtype=f32",
                             "--checks", "reference", "--examples", "15", "--implementation", "wgpu", "--out", str(out)],
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    [record] = json.loads((out / "results.json").read_text())["records"]
    assert record["examples"] >= 15 and not any(n.startswith("budget:") for n in record["notes"])


def test_a_spent_budget_still_starts_the_first_random_part_of_a_check_whose_corners_ran_nothing():
    """No check passes on no example: a kernel without corner cases has nothing in its corners
    part, so that check's first random part runs whatever the budget; a check whose corners ran
    an example (`drawn`) stops with them, and every later part stops."""
    import time

    from verify.session import _past

    plan = budgeted([job(0), job(1, examples=12)])
    spent = time.monotonic() - 1.0
    started = [j for j in plan if not _past(spent, j, drawn={0})]
    assert {(j.id, j.part, j.slice[0]) for j in started} == {(0, "corners", 0), (1, "corners", 0), (1, "random", 1)}
    assert not any(_past(None, j) for j in plan), "without a budget every part runs"


def test_without_history_the_largest_programs_corners_start_first():
    """With no earlier run to time them, corners parts are ordered by their check's cost per
    example times their program's size (verify.plan.program_weight): on 16 workers the plan's
    kernel order had started TVM's sanitized prefill corners (4-7 s each) last, leaving a tail."""
    from dataclasses import replace

    from verify.kernels.registry import get_kernel
    from verify.plan import longest_first, program_weight
    from verify.profiles import get_profile

    small, large = get_kernel("merge_state"), get_kernel("tvm.prefill_ragged")
    light = program_weight(small, small.config({"head_dim": 64, "dtype": "f32"}))
    heavy = program_weight(large, large.gate_configs(get_profile("ci"))[0])
    assert 0 < light < 1 < heavy
    plain, sanitized = job(0), job(1, check="sanitize")
    corners = [j for j in budgeted([plain, sanitized, replace(job(2, check="sanitize"), weight=heavy)])
               if j.part == "corners"]
    assert [j.id for j in longest_first(corners)] == [2, 1, 0]
