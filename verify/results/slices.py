"""One record from the slices of a check.

A check's examples may be split into slices that run on several workers at once
(verify.plan.sliced): each slice draws its share of the examples from a seed stream of its own,
and is a complete Hypothesis run (targeting and shrinking included). Their records merge into the
check's one record: the worst verdict, the examples and kernel runs added up, the worst case of
all slices, the shrunk case of the first slice that failed (in slice order, so the merge does not
depend on which worker finished first), the plot samples and stage timings together.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from verify.results.record import CheckResult, StageTiming, Verdict

#: Plot samples kept in a merged record (as one check's run keeps, verify.checks.runner.MAX_SAMPLES).
MAX_SAMPLES = 4000


def merge_slices(records: list[CheckResult], slices: list[tuple]) -> CheckResult:
    """The one record of a check whose slices gave `records` (`slices`: each record's (k, n))."""
    ordered = [record for _, record in sorted(zip(slices, records), key=lambda pair: pair[0][0])]
    first = ordered[0]
    verdict = Verdict.worst(r.verdict for r in ordered)
    deciding = next(r for r in ordered if r.verdict is verdict)
    scored = [r for r in ordered if r.worst is not None]
    worst = max(scored, key=lambda r: (not r.worst.passed, r.worst.score)).worst if scored else None
    failed = [r for r in ordered if r.shrunk is not None and not r.shrunk.passed]
    paths = Counter()
    for record in ordered:
        paths.update(record.launch_paths)
    return replace(
        first, verdict=verdict, reason=deciding.reason, failure_kind=deciding.failure_kind,
        traceback=deciding.traceback, finding=deciding.finding, finding_reproduced=deciding.finding_reproduced,
        examples=sum(r.examples for r in ordered), runs=sum(r.runs for r in ordered),
        duration_s=round(sum(r.duration_s for r in ordered), 3), worst=worst,
        shrunk=failed[0].shrunk if failed else None,
        samples=[s for r in ordered for s in r.samples][:MAX_SAMPLES],
        timing=_timing([r.timing for r in ordered if r.timing is not None]),
        launch_paths=dict(sorted(paths.items())),
        notes=list(dict.fromkeys(note for r in ordered for note in r.notes)),
    )


def _timing(timings: list[StageTiming]) -> StageTiming | None:
    if not timings:
        return None
    cases = sum(t.cases for t in timings)
    total = Counter()
    for t in timings:
        total.update(t.total_s)
    gpu = sorted(t.gpu_ms_median for t in timings if t.gpu_ms_median is not None)
    return StageTiming(cases=cases, total_s={k: round(v, 4) for k, v in total.items()},
                       per_case_ms={k: round(v / cases * 1e3, 3) if cases else 0.0 for k, v in total.items()},
                       gpu_ms_median=gpu[len(gpu) // 2] if gpu else None)
