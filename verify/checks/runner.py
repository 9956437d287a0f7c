"""Run one check of one kernel config under Hypothesis and summarise it as a result record.

Hypothesis draws cases, climbs toward the worst err/budget with `target`, and on a failure
shrinks to a minimal case. The record keeps both: the *shrunk* case (easy to read) and the
*worst* case seen (the biggest violation), each saved as a replayable case file.

A failure that has the signature of one of the kernel's documented findings does not end the
check: the examples left still run, so a new bug in a config with a known one is still found
(a FAIL), and the check is KNOWN only where every failing example is the finding's.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, example, given, seed, settings, target
from hypothesis.errors import Flaky

from verify.checks.context import CheckContext
from verify.checks.loop_cap import LoopCap
from verify.checks.loop_cap import finding as loop_cap_finding
from verify.checks.loop_cap import note as loop_cap_note
from verify.checks.outcome import Outcome
from verify.errors import ContractError, FailureKind, InfrastructureError, KernelError, SetupError, VerifyLimit
from verify.results.detail import error_detail
from verify.results.record import CheckResult, ExampleSummary, KnownFinding, StageTiming, Verdict
from verify.results.slices import finding_note

#: Per-example points kept for plots (err/budget against a case feature).
MAX_SAMPLES = 4000


class _Violation(Exception):
    def __init__(self, outcome: Outcome):
        super().__init__(outcome.message())
        self.outcome = outcome


@dataclass
class RunOptions:
    """How one check runs: `examples` drawn at random from `seed`, after the explicit cases (the
    kernel's documented findings' cases and its corners) where `explicit`; `generate` False runs
    the explicit cases alone (a budgeted gate's first part, verify.plan.budgeted)."""

    examples: int
    seed: int
    shrink: bool = True
    explicit: bool = True
    generate: bool = True


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
        reasons=list(outcome.reasons),
    )


def _score(x: float) -> float:
    """Hypothesis scores are floats; NaN (no comparison possible) ranks as the worst."""
    return float("inf") if x != x else float(x)


@dataclass
class _State:
    """What one run_check's examples have seen so far (the Hypothesis test body writes it)."""

    generated: int = 0
    calls: int = 0
    worst: Outcome | None = None
    first_failure: Outcome | None = None
    samples: list[dict] = field(default_factory=list)
    in_body: float = 0.0
    paths: Counter[str] = field(default_factory=Counter)
    infrastructure: InfrastructureError | None = None
    setup: SetupError | None = None
    limit: VerifyLimit | None = None
    #: The first failing example a documented finding accounts for, and how many there were.
    known: Outcome | None = None
    known_count: int = 0
    #: The first failing example past the driver's loop cap (verify.checks.loop_cap), its trips,
    #: and how many there were.
    capped: Outcome | None = None
    capped_trips: int = 0
    capped_count: int = 0


@dataclass
class CheckRun:
    """A check's result, and the shrunk and worst cases themselves (for verify/results to save)."""

    result: CheckResult
    shrunk: Outcome | None = None
    worst: Outcome | None = None
    #: The driver's finding where the run's failures all ran past its loop cap (verify.checks.loop_cap).
    driver_finding: KnownFinding | None = None

    def findings(self, finding) -> list[KnownFinding]:
        """What to judge the result against: the driver's finding first, then the kernel's (`finding`)."""
        return ([self.driver_finding] if self.driver_finding is not None else []) + KnownFinding.all_of(finding)


def run_check(check, ctx: CheckContext, options: RunOptions, base: CheckResult | None = None,
              progress=None, finding=None, loop_cap: LoopCap | None = None) -> CheckRun:
    """Run `check` over `options.examples` drawn cases: `base` (the job's record; by default one
    naming just the kernel, check and config) with the outcome filled in, and the cases to keep.

    `finding` is what the kernel documents for this check (Kernel.known_finding): a failing
    example it accounts for (CheckResult.with_known_finding, judged on `base`'s adapter and width)
    is kept and the check goes on; the first failure it does not account for ends the check as
    usual. A run whose failures were all the finding's ends as a FAIL with the first of them as
    its case, which the caller's with_known_finding then records as KNOWN.

    `loop_cap` (where the adapter's driver ends long loops, verify.checks.loop_cap): a failing
    example whose loops reached the cap is kept aside in the same way, and a run whose failures
    all did ends as a FAIL whose `driver_finding` the caller records as KNOWN."""
    if base is None:
        base = CheckResult(kernel=ctx.kernel.name, check=check.name, config=dict(ctx.config), verdict=Verdict.PASS)
    started = time.perf_counter()
    state = _State()
    axes = ctx.kernel.output_axes

    def documented(outcome: Outcome) -> bool:
        if not finding:
            return False
        alone = replace(base, verdict=Verdict.FAIL, reason=outcome.message(), failure_kind=outcome.failure_kind,
                        shrunk=_summarise(outcome, axes), worst=None)
        return alone.with_known_finding(finding).verdict is Verdict.KNOWN

    def body(case):
        entered = time.perf_counter()
        try:
            _body(case)
        finally:
            state.in_body += time.perf_counter() - entered
            ctx.timer.entering("drawing cases")

    def _body(case):
        if state.infrastructure is not None:  # what runs the kernel is gone: no further example means anything
            raise state.infrastructure
        if state.setup is not None:  # the machine lacks what the kernel needs: nothing more can run
            raise state.setup
        if state.limit is not None:  # verify cannot carry the check out here: no example means anything
            raise state.limit
        state.calls += 1
        shrinking = state.first_failure is not None
        try:
            outcome = check.run_example(ctx, case)
        except InfrastructureError as exc:
            state.infrastructure = exc
            raise
        except SetupError as exc:
            state.setup = exc
            raise
        except VerifyLimit as exc:
            state.limit = exc
            raise
        except KernelError as exc:
            outcome = Outcome(False, float("inf"), [], [str(exc)], ctx.kernel.features(case), case, exc.kind)
        ctx.timer.cases += 1
        if not shrinking:
            state.generated += 1
            state.paths.update(ctx.kernel.launch_paths(ctx.config, case))
            if len(state.samples) < MAX_SAMPLES:
                state.samples.append({**outcome.features, "score": _score(outcome.score), "passed": outcome.passed})
            if progress:
                progress(state.generated, examples)
        if not outcome.passed and documented(outcome):
            # The documented finding again: kept, and the check goes on looking for a failure that
            # is not it (the search is not steered toward it: its score is not a target). While
            # shrinking a failure that is not it, the finding's cases are not that failure either.
            if not shrinking:
                state.known = state.known or outcome
                state.known_count += 1
            return
        if not outcome.passed and loop_cap is not None and outcome.case is not None:
            # While shrinking too: Hypothesis's simplest is not the fewest trips (a strategy's first
            # branch may be its longest), and a case past the cap is not the failure being shrunk.
            try:
                trips = loop_cap.reached(outcome.case, check)
            except InfrastructureError as exc:
                state.infrastructure = exc
                raise
            if trips is not None:
                # Past the driver's loop cap: the result says nothing of the kernel (kept aside,
                # as a documented finding's case is; the check goes on with the rest).
                if not shrinking:
                    if state.capped is None:
                        state.capped, state.capped_trips = outcome, trips
                    state.capped_count += 1
                return
            if loop_cap.not_counted:
                ctx.note(f"a failing example's loop trips could not be counted ({loop_cap.not_counted}), so "
                         "whether it ran past lavapipe's loop cap is not known")
        worst = state.worst
        if worst is None or _rank(outcome) > _rank(worst):
            state.worst = outcome
        target(min(outcome.score, 1e300) if outcome.score == outcome.score else 1e300, label="err/budget")
        if not outcome.passed:
            state.first_failure = state.first_failure or outcome
            raise _Violation(outcome)

    phases = ([Phase.explicit] if options.explicit else []) + \
        ([Phase.reuse, Phase.generate, Phase.target] if options.generate else []) + \
        ([Phase.shrink] if options.shrink else [])
    examples = min(options.examples, check.max_examples or options.examples)
    verdict, reason, shrunk, trace, kind = Verdict.PASS, "", None, None, None
    try:
        test = given(check.strategy(ctx))(body)
        # A documented finding's own cases run first, then the kernel's corners, whatever the seed draws
        # (built only where they run: a budgeted gate's random parts leave them to its first part).
        explicit = (list(ctx.kernel.finding_examples(check.name, ctx.config)) + list(check.corners(ctx))
                    if options.explicit else [])
        for case in reversed(explicit):
            test = example(case)(test)
        runner = settings(
            max_examples=max(1, examples),
            database=None,
            deadline=None,
            derandomize=False,
            phases=phases,
            verbosity=Verbosity.quiet,
            report_multiple_bugs=False,
            suppress_health_check=list(HealthCheck),
        )(seed(options.seed)(test))
        # The explicit cases alone (a budgeted gate's corners part) of a kernel that has none: nothing
        # to run, and its corners are complete (Hypothesis would refuse a test of no cases).
        if explicit or options.generate:
            runner()
    except _Violation as failure:
        verdict, shrunk = Verdict.FAIL, failure.outcome
        reason, kind = shrunk.message(), shrunk.failure_kind
    except Flaky:
        verdict, kind = Verdict.FAIL, FailureKind.NONDETERMINISTIC
        shrunk = state.first_failure
        reason = ("nondeterministic: a case failed, then passed when replayed (a race or "
                  "uninitialised memory?); first failure: " + (shrunk.message() if shrunk else "?"))
    except KernelError as exc:
        verdict, reason, kind = Verdict.FAIL, str(exc), exc.kind
    except InfrastructureError as exc:
        verdict, reason, kind = Verdict.ERROR, infrastructure_reason(exc), exc.kind
    except ContractError as exc:
        verdict, reason, kind = Verdict.ERROR, f"the kernel breaks its contract: {exc}", exc.kind
    except Exception as exc:  # the kernel's own code, or a defect in verify itself: reported, not hidden
        verdict, trace = Verdict.ERROR, traceback.format_exc()
        reason, kind = raised_by(exc, ctx.kernel)

    notes = []
    if state.known is not None:
        notes.append(finding_note(state.known_count, state.generated))
        if verdict is Verdict.PASS:  # every failure was the finding's: the caller records it as KNOWN
            verdict, shrunk = Verdict.FAIL, state.known
            reason, kind = shrunk.message(), shrunk.failure_kind
            state.worst = _worse(state.worst, state.known)
    driver_finding = None
    if state.capped is not None:
        if verdict is Verdict.PASS:  # every failure ran past the driver's cap: the caller records it as KNOWN
            verdict, shrunk = Verdict.FAIL, state.capped
            reason, kind = shrunk.message(), shrunk.failure_kind
            state.worst = _worse(state.worst, state.capped)
            driver_finding = loop_cap_finding(state.capped_trips, state.capped_count)
        else:
            notes.append(loop_cap_note(state.capped_count, state.capped_trips))
    if state.setup is not None:  # the machine, not the kernel nor verify: not verified here, saying why
        verdict, reason, kind = Verdict.SKIP, str(state.setup), None
        shrunk, trace = None, None
    if state.limit is not None:  # verify's own limit: no verdict on the kernel, and no defect of verify's
        verdict, reason, kind = Verdict.ERROR, limit_reason(state.limit), FailureKind.VERIFY_LIMIT
        shrunk, trace = None, None
    if state.infrastructure is not None:  # whatever Hypothesis made of it (a flaky failure, a shrink)
        verdict, reason, kind = Verdict.ERROR, infrastructure_reason(state.infrastructure), FailureKind.CRASH
        shrunk, trace = None, None
    # Everything outside the examples themselves: Hypothesis drawing (and building) cases,
    # targeting and shrinking.
    ctx.timer.seconds["generation"] = max(0.0, time.perf_counter() - started - state.in_body)
    timing = ctx.timer.as_record()
    result = replace(
        base, verdict=verdict, reason=reason, failure_kind=kind,
        examples=state.generated, runs=state.calls, seed=options.seed,
        duration_s=round(time.perf_counter() - started, 3),
        worst=_summarise(state.worst, axes), shrunk=_summarise(shrunk, axes), samples=state.samples,
        timing=StageTiming(**timing), traceback=trace, launch_paths=dict(sorted(state.paths.items())),
        notes=list(base.notes) + [n for n in ctx.notes + notes if n not in base.notes])
    return CheckRun(result, shrunk if verdict is Verdict.FAIL else None,
                    state.worst if verdict is Verdict.FAIL else None,
                    driver_finding if verdict is Verdict.FAIL else None)


def _worse(worst: Outcome | None, outcome: Outcome) -> Outcome:
    return outcome if worst is None or _rank(outcome) > _rank(worst) else worst


def _rank(outcome: Outcome) -> tuple:
    """Failures outrank passes; then the larger err/budget."""
    score = outcome.score if outcome.score == outcome.score else float("inf")
    return (not outcome.passed, score)


def limit_reason(exc: VerifyLimit) -> str:
    return f"{exc}\n(verify's own limit, not the kernel's: no verdict on it)"


def infrastructure_reason(exc: InfrastructureError) -> str:
    return (f"{exc}\n(what runs the kernel broke, not the kernel: no verdict on it; the next check starts "
            "that process again)")


def raised_by(exc: BaseException, kernel) -> tuple[str, FailureKind]:
    """(reason, kind) of an exception a check did not expect: the kernel's own Python code (its
    cases, reference, launch) when the innermost frame of the kernel's package is on the
    traceback and the kernel is not verify's own, else verify's."""
    frame = kernel_frame(exc, kernel) if kernel is not None else None
    what = f"{type(exc).__name__}: {exc}"
    if frame is None:
        return f"internal error in verify: {what}", FailureKind.INTERNAL
    return (f"the kernel's own code raised {what} (at {frame.filename}:{frame.lineno}, in {frame.name}; "
            f"{kernel.name} is {type(kernel).__module__}.{type(kernel).__qualname__})"), FailureKind.KERNEL_CODE


def kernel_frame(exc: BaseException, kernel):
    """The innermost traceback frame in the kernel's own package, or None (verify's own kernels,
    whose code is verify's, have none)."""
    package = type(kernel).__module__.split(".")[0]
    if package == "verify":
        return None
    module = sys.modules.get(package)
    root = Path(getattr(module, "__file__", "") or "").parent if module is not None else None
    if root is None or not str(root) or root == Path("."):
        return None
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if _within(f.filename, root)]
    return frames[-1] if frames else None


def _within(filename: str, root: Path) -> bool:
    try:
        return Path(filename).resolve().is_relative_to(root.resolve())
    except (OSError, ValueError):
        return False
