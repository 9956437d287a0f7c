"""Run one check of one kernel config under Hypothesis and summarise it as a result record.

Hypothesis draws cases, climbs toward the worst err/budget with `target`, and on a failure
shrinks to a minimal case. The record keeps both: the *shrunk* case (easy to read) and the
*worst* case seen (the biggest violation), each saved as a replayable case file.
"""

from __future__ import annotations

import time
import traceback
from collections import Counter
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings, target
from hypothesis.errors import Flaky

from verify.checks.context import CheckContext
from verify.checks.outcome import Outcome
from verify.errors import KernelError
from verify.results.detail import error_detail
from verify.results.record import CheckResult, ExampleSummary, StageTiming, Verdict

#: Per-example points kept for plots (err/budget against a case feature).
MAX_SAMPLES = 4000


class _Violation(Exception):
    def __init__(self, outcome: Outcome):
        super().__init__(outcome.message())
        self.outcome = outcome


@dataclass
class RunOptions:
    examples: int
    seed: int
    shrink: bool = True


def _summarise(outcome: Outcome | None, axes: dict | None = None) -> ExampleSummary | None:
    if outcome is None:
        return None
    return ExampleSummary(
        score=_score(outcome.score),
        passed=outcome.passed,
        message=outcome.message(),
        features=outcome.features,
        case=outcome.case.summary() if outcome.case is not None else "",
        outputs=list(outcome.outputs),
        detail=error_detail(outcome.outputs, axes, with_heatmap=not outcome.passed),
    )


def _score(x: float) -> float:
    """Hypothesis scores are floats; NaN (no comparison possible) ranks as the worst."""
    return float("inf") if x != x else float(x)


@dataclass
class CheckRun:
    """A check's result, and the shrunk and worst cases themselves (for verify/results to save)."""

    result: CheckResult
    shrunk: Outcome | None = None
    worst: Outcome | None = None


def run_check(check, ctx: CheckContext, options: RunOptions, progress=None) -> CheckRun:
    """Run `check` over `options.examples` drawn cases: its result, with the cases to keep."""
    started = time.perf_counter()
    state = {"generated": 0, "calls": 0, "worst": None, "first_failure": None, "samples": [], "in_body": 0.0,
             "paths": Counter()}

    def body(case):
        entered = time.perf_counter()
        try:
            _body(case)
        finally:
            state["in_body"] += time.perf_counter() - entered

    def _body(case):
        state["calls"] += 1
        shrinking = state["first_failure"] is not None
        try:
            outcome = check.run_example(ctx, case)
        except KernelError as exc:
            outcome = Outcome(False, float("inf"), [], [str(exc)], ctx.kernel.features(case), case)
        ctx.timer.cases += 1
        if not shrinking:
            state["generated"] += 1
            state["paths"].update(ctx.kernel.launch_paths(ctx.config, case))
            if len(state["samples"]) < MAX_SAMPLES:
                state["samples"].append({**outcome.features, "score": _score(outcome.score), "passed": outcome.passed})
            if progress:
                progress(state["generated"], examples)
        worst = state["worst"]
        if worst is None or _rank(outcome) > _rank(worst):
            state["worst"] = outcome
        target(min(outcome.score, 1e300) if outcome.score == outcome.score else 1e300, label="err/budget")
        if not outcome.passed:
            state["first_failure"] = state["first_failure"] or outcome
            raise _Violation(outcome)

    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target] + ([Phase.shrink] if options.shrink else [])
    examples = min(options.examples, check.max_examples or options.examples)
    runner = settings(
        max_examples=examples,
        database=None,
        deadline=None,
        derandomize=False,
        phases=phases,
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )(seed(options.seed)(given(check.strategy(ctx))(body)))

    verdict, reason, shrunk, trace = Verdict.PASS, "", None, None
    try:
        runner()
    except _Violation as failure:
        verdict, shrunk = Verdict.FAIL, failure.outcome
        reason = shrunk.message()
    except Flaky:
        verdict = Verdict.FAIL
        shrunk = state["first_failure"]
        reason = ("nondeterministic: a case failed, then passed when replayed (a race or "
                  "uninitialised memory?); first failure: " + (shrunk.message() if shrunk else "?"))
    except KernelError as exc:
        verdict, reason = Verdict.FAIL, str(exc)
    except Exception as exc:  # a defect in verify itself, reported rather than hidden
        verdict = Verdict.ERROR
        reason = f"internal error in verify: {type(exc).__name__}: {exc}"
        trace = traceback.format_exc()

    axes = ctx.kernel.output_axes
    # Everything outside the examples themselves: Hypothesis drawing (and building) cases,
    # targeting and shrinking.
    ctx.timer.seconds["generation"] = max(0.0, time.perf_counter() - started - state["in_body"])
    timing = ctx.timer.as_record()
    result = CheckResult(
        kernel=ctx.kernel.name, check=check.name, config=dict(ctx.config), verdict=verdict, reason=reason,
        examples=state["generated"], runs=state["calls"], seed=options.seed,
        duration_s=round(time.perf_counter() - started, 3),
        worst=_summarise(state["worst"], axes), shrunk=_summarise(shrunk, axes), samples=state["samples"],
        timing=StageTiming(**timing), traceback=trace, launch_paths=dict(sorted(state["paths"].items())))
    return CheckRun(result, shrunk if verdict is Verdict.FAIL else None,
                    state["worst"] if verdict is Verdict.FAIL else None)


def _rank(outcome: Outcome) -> tuple:
    """Failures outrank passes; then the larger err/budget."""
    score = outcome.score if outcome.score == outcome.score else float("inf")
    return (not outcome.passed, score)
