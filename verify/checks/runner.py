"""Run one check of one kernel config under Hypothesis and summarise it as a result record.

Hypothesis draws cases, climbs toward the worst err/budget with `target`, and on a failure
shrinks to a minimal case. The record keeps both: the *shrunk* case (easy to read) and the
*worst* case seen (the biggest violation), each saved as a replayable case file.
"""

from __future__ import annotations

import hashlib
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings, target
from hypothesis.errors import Flaky

from verify.checks.context import CheckContext
from verify.checks.outcome import Outcome
from verify.errors import KernelError
from verify.results.casefile import save_case
from verify.results.detail import error_detail

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
    out_dir: Path | None = None
    shrink: bool = True


def _summarise(outcome: Outcome | None, axes: dict | None = None) -> dict | None:
    if outcome is None:
        return None
    return {
        "score": _finite(outcome.score),
        "passed": outcome.passed,
        "message": outcome.message(),
        "features": outcome.features,
        "case": outcome.case.summary() if outcome.case is not None else "",
        "outputs": [m.as_record() for m in outcome.outputs],
        "detail": error_detail(outcome.outputs, axes, with_heatmap=not outcome.passed),
    }


def _finite(x: float):
    return x if x == x and abs(x) != float("inf") else str(x)


def run_check(check, ctx: CheckContext, options: RunOptions, progress=None) -> dict:
    """Run `check` over `options.examples` drawn cases; returns the check's result record."""
    started = time.perf_counter()
    state = {"generated": 0, "calls": 0, "worst": None, "first_failure": None, "samples": []}

    def body(case):
        state["calls"] += 1
        shrinking = state["first_failure"] is not None
        try:
            outcome = check.run_example(ctx, case)
        except KernelError as exc:
            outcome = Outcome(False, float("inf"), [], [str(exc)], ctx.kernel.features(case), case)
        ctx.timer.cases += 1
        if not shrinking:
            state["generated"] += 1
            if len(state["samples"]) < MAX_SAMPLES:
                state["samples"].append({**outcome.features, "score": _finite(outcome.score), "passed": outcome.passed})
            if progress:
                progress(state["generated"], options.examples)
        worst = state["worst"]
        if worst is None or _rank(outcome) > _rank(worst):
            state["worst"] = outcome
        target(min(outcome.score, 1e300) if outcome.score == outcome.score else 1e300, label="err/budget")
        if not outcome.passed:
            state["first_failure"] = state["first_failure"] or outcome
            raise _Violation(outcome)

    phases = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target] + ([Phase.shrink] if options.shrink else [])
    runner = settings(
        max_examples=options.examples,
        database=None,
        deadline=None,
        derandomize=False,
        phases=phases,
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        suppress_health_check=list(HealthCheck),
    )(seed(options.seed)(given(check.strategy(ctx))(body)))

    verdict, reason, shrunk = "pass", "", None
    try:
        runner()
    except _Violation as failure:
        verdict, shrunk = "fail", failure.outcome
        reason = shrunk.message()
    except Flaky:
        verdict = "fail"
        shrunk = state["first_failure"]
        reason = ("nondeterministic: a case failed, then passed when replayed (a race or "
                  "uninitialised memory?); first failure: " + (shrunk.message() if shrunk else "?"))
    except KernelError as exc:
        verdict, reason = "fail", str(exc)
    except Exception as exc:  # a defect in verify itself, reported rather than hidden
        verdict = "error"
        reason = f"internal error in verify: {type(exc).__name__}: {exc}"
        state["traceback"] = traceback.format_exc()

    record = {
        "check": check.name,
        "verdict": verdict,
        "reason": reason,
        "examples": state["generated"],
        "runs": state["calls"],
        "seed": options.seed,
        "duration_s": round(time.perf_counter() - started, 3),
        "worst": _summarise(state["worst"], ctx.kernel.output_axes),
        "shrunk": _summarise(shrunk, ctx.kernel.output_axes),
        "samples": state["samples"],
        "timing": ctx.timer.as_record(),
    }
    if "traceback" in state:
        record["traceback"] = state["traceback"]
    if verdict == "fail" and options.out_dir is not None:
        _save_cases(record, ctx, options, shrunk, state["worst"])
    return record


def _rank(outcome: Outcome) -> tuple:
    """Failures outrank passes; then the larger err/budget."""
    score = outcome.score if outcome.score == outcome.score else float("inf")
    return (not outcome.passed, score)


def _save_cases(record: dict, ctx: CheckContext, options: RunOptions, shrunk, worst) -> None:
    meta = {
        "kernel": ctx.kernel.name,
        "config": ctx.config,
        "check": record["check"],
        "seed": options.seed,
        "adapter": ctx.device.info.as_record(),
        "source": ctx.kernel.source,
    }
    stem = f"{ctx.kernel.name}-{record['check']}-{_config_tag(ctx.config)}"
    for label, outcome in (("shrunk", shrunk), ("worst", worst)):
        if outcome is not None and outcome.case is not None and record[label] is not None:
            path = save_case(options.out_dir / "cases", f"{stem}-{label}", outcome.case,
                             dict(meta, role=label, message=outcome.message()), ctx.wgsl)
            record[label]["case_file"] = str(path)


def _config_tag(config: dict) -> str:
    """The config in a file name; a long one is cut and ends in a digest of the whole, so two
    configs that differ only past the cut (e.g. in rope_factor) keep apart."""
    tag = "_".join(f"{k}{v}" for k, v in sorted(config.items())).replace(".", "p")
    return tag if len(tag) <= 80 else f"{tag[:63]}-{hashlib.sha256(tag.encode()).hexdigest()[:16]}"
