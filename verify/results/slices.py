"""One record from the slices of a check.

A check's examples may be split into slices that run on several workers at once
(verify.plan.sliced): each slice draws its share of the examples from a seed stream of its own,
and is a complete Hypothesis run (targeting and shrinking included). Their records merge into the
check's one record: the worst verdict, the examples and kernel runs added up, the worst case of
all slices, the shrunk case of the first slice that failed (in slice order, so the merge does not
depend on which worker finished first), the plot samples and stage timings together.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import replace

from verify.results.record import CheckResult, StageTiming, Verdict

#: Plot samples kept in a merged record (as one check's run keeps, verify.checks.runner.MAX_SAMPLES).
MAX_SAMPLES = 4000

_FINDING_NOTE = re.compile(r"(\d+) of (\d+) examples failed as the documented finding; ")


def finding_note(failed: int, ran: int) -> str:
    """The note of a check whose `failed` of `ran` examples failed as its documented finding."""
    return (f"{failed} of {ran} examples failed as the documented finding; the check ran the rest, "
            "looking for a failure that is not it")


def _merged_notes(ordered: list[CheckResult]) -> list[str]:
    """Every part's notes once, in order; the parts' finding notes as one, where the first was, of
    all the check's examples (a budgeted check of 20 parts would otherwise say it 20 times)."""
    notes: list[str] = []
    first, failed = None, 0
    for note in (note for r in ordered for note in r.notes):
        counted = _FINDING_NOTE.match(note)
        if counted is None:
            notes.append(note)
            continue
        if first is None:
            first = len(notes)
            notes.append(note)
        failed += int(counted[1])
    if first is not None:
        notes[first] = finding_note(failed, sum(r.examples for r in ordered))
    return list(dict.fromkeys(notes))


def merge_slices(records: list[CheckResult], slices: list[tuple], planned: dict | None = None) -> CheckResult:
    """The one record of a check whose slices gave `records` (`slices`: each record's (k, n)).

    `planned` ({k: examples}) is every part a budgeted gate planned for the check, run or not
    (verify.plan.budgeted; slice 0 its corners): the record then says how many examples were
    planned and whether the corners completed, and a check whose corners did not complete is
    never a PASS."""
    ordered = [record for _, record in sorted(zip(slices, records), key=lambda pair: pair[0][0])]
    first = ordered[0]
    verdict = Verdict.worst(r.verdict for r in ordered)
    deciding = next(r for r in ordered if r.verdict is verdict)
    scored = [r.worst for r in ordered if r.worst is not None]
    worst = max(scored, key=lambda w: (not w.passed, w.score)) if scored else None
    failed = [r for r in ordered if r.shrunk is not None and not r.shrunk.passed]
    paths: Counter[str] = Counter()
    for record in ordered:
        paths.update(record.launch_paths)
    merged = replace(
        first, verdict=verdict, reason=deciding.reason, failure_kind=deciding.failure_kind,
        traceback=deciding.traceback, finding=deciding.finding, finding_reproduced=deciding.finding_reproduced,
        finding_id=deciding.finding_id,
        examples=sum(r.examples for r in ordered), runs=sum(r.runs for r in ordered),
        duration_s=round(sum(r.duration_s for r in ordered), 3), worst=worst,
        pipelines_compiled=_sum_known(r.pipelines_compiled for r in ordered),
        shrunk=failed[0].shrunk if failed else None,
        samples=[s for r in ordered for s in r.samples][:MAX_SAMPLES],
        timing=_timing([r.timing for r in ordered if r.timing is not None]),
        launch_paths=dict(sorted(paths.items())),
        notes=_merged_notes(ordered),
    )
    if planned is None:
        return merged
    corners = next((record for (k, _), record in zip(slices, records) if k == 0), None)
    return _budgeted(merged, {k for k, _ in slices}, planned, corners)


def _budgeted(merged: CheckResult, ran: set, planned: dict, corners: CheckResult | None) -> CheckResult:
    """A budgeted check's record: what was planned, what ran, and whether its corners completed."""
    complete = corners is not None and corners.verdict not in (Verdict.ERROR, Verdict.SKIP)
    # The random examples planned, and the corners as many as there were (known once they ran).
    total = sum(n for k, n in planned.items() if k) + (corners.examples if corners is not None else 0)
    notes = list(merged.notes)
    unrun = sorted(set(planned) - ran)
    if unrun:
        notes.append(f"budget: {merged.examples} of the {total} examples planned ran ({len(unrun)} of its "
                     f"{len(planned) - 1} random parts were not reached before the budget was spent); its corners "
                     + ("all ran" if complete else "did not complete"))
    verdict, reason = merged.verdict, merged.reason
    if not complete and verdict is Verdict.PASS:
        verdict, reason = Verdict.ERROR, "its corner cases did not complete, so the check is not a pass"
    return replace(merged, verdict=verdict, reason=reason, examples_planned=total, corners_complete=complete,
                   notes=notes)


def _sum_known(counts) -> int | None:
    """The sum of the counts some parts reported (None where none did)."""
    known = [c for c in counts if c is not None]
    return sum(known) if known else None


def _timing(timings: list[StageTiming]) -> StageTiming | None:
    if not timings:
        return None
    cases = sum(t.cases for t in timings)
    total: Counter[str] = Counter()
    for t in timings:
        total.update(t.total_s)
    gpu = sorted(t.gpu_ms_median for t in timings if t.gpu_ms_median is not None)
    return StageTiming(cases=cases, total_s={k: round(v, 4) for k, v in total.items()},
                       per_case_ms={k: round(v / cases * 1e3, 3) if cases else 0.0 for k, v in total.items()},
                       gpu_ms_median=gpu[len(gpu) // 2] if gpu else None)
