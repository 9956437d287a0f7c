"""What a set of results files, merged, says about the run as a whole: the problems that must
fail a CI gate's merge step even when every record that is there passed.

A gate split N ways (`verify gate --shard K/N`) is only as good as its shards: a shard that never
reported, one that stopped half way, or one of another plan (another gate, seed, profile, verify
version or WGSL) looks like a smaller, greener gate. So the merge checks that every shard 1..N of
each split is present and finished, that all of them record the same plan (its fingerprint,
verify.plan.plan_identity), and that together they ran every job of that plan exactly once.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from verify.results.record import Verdict
from verify.results.store import ResultsDocument, shard_of


def shard_problems(documents: list[ResultsDocument]) -> list[str]:
    """Missing or duplicated shards, and splits whose shards hold fewer checks than planned."""
    splits: dict[int, dict[int, list[ResultsDocument]]] = defaultdict(lambda: defaultdict(list))
    for document in documents:
        if document.shard:
            index, count = shard_of(document.shard, document.path or "results")
            splits[count][index].append(document)
    problems = []
    for count, shards in sorted(splits.items()):
        missing = [f"{k}/{count}" for k in range(1, count + 1) if k not in shards]
        if missing:
            problems.append(f"shard{'s' if len(missing) > 1 else ''} {', '.join(missing)} of the gate split "
                            f"{count} ways {'are' if len(missing) > 1 else 'is'} missing: its checks did not run")
        doubled = [f"{k}/{count}" for k, docs in sorted(shards.items()) if len(docs) > 1]
        if doubled:
            problems.append(f"shard {', '.join(doubled)} appears more than once")
        present = [d for docs in shards.values() for d in docs]
        plans = {d.plan for d in present}
        if None in plans and len(plans) > 1:
            problems.append(f"some shards of the gate split {count} ways record no plan: they cannot be proved "
                            "to be one gate's")
        plans.discard(None)
        if len(plans) > 1:
            problems.append(f"the shards of the gate split {count} ways come from {len(plans)} different plans "
                            "(another gate, seed, profile, verify version or WGSL): they are not one gate")
        elif plans and not missing:
            problems += _coverage(plans.pop(), present, count)
        elif not plans and not missing:
            planned = {d.planned for d in present if d.planned}
            held = sum(len(docs[0].records) for docs in shards.values())
            if len(planned) == 1 and held < planned.pop():
                problems.append(f"the {count} shards hold {held} checks, fewer than the gate planned")
    return problems


def _coverage(plan, documents: list[ResultsDocument], count: int) -> list[str]:
    """Every job of `plan` ran in exactly one of the shards, and the plan's skip records are there."""
    seen = Counter(r.job_id for d in documents for r in d.records if r.job_id is not None)
    missing = sorted(set(range(plan.jobs)) - set(seen))
    twice = sorted(i for i, n in seen.items() if n > 1)
    foreign = sorted(i for i in seen if not 0 <= i < plan.jobs)
    skips = sum(1 for d in documents for r in d.records if r.job_id is None)
    problems = []
    if missing:
        problems.append(f"{len(missing)} of the {plan.jobs} jobs of the gate split {count} ways have no record "
                        f"(job ids {_ids(missing)}): they did not run")
    if twice:
        problems.append(f"jobs {_ids(twice)} of the gate split {count} ways ran in more than one shard")
    if foreign:
        problems.append(f"records of jobs {_ids(foreign)} are not in the plan of the gate split {count} ways")
    if skips != plan.skipped:
        problems.append(f"the gate split {count} ways planned {plan.skipped} skip records of kernels it could "
                        f"not plan; the shards hold {skips}")
    return problems


def _ids(ids: list[int]) -> str:
    return ", ".join(map(str, ids[:8])) + (" ..." if len(ids) > 8 else "")


def run_problems(documents: list[ResultsDocument], *, allow_skip: bool = False) -> list[str]:
    """Everything that makes the merged run not a pass, one line each."""
    problems = shard_problems(documents)
    for document in documents:
        if not document.complete:
            where = f"{document.path or 'a run'}{f' (shard {document.shard})' if document.shard else ''}"
            why = ("was interrupted" if document.interrupted else f"stopped: {document.aborted}" if document.aborted
                   else "did not finish")
            problems.append(f"{where} {why}")
    records = [r for d in documents for r in d.records]
    failed = [r for r in records if r.verdict.fails_run]
    if failed:
        problems.append(f"{len(failed)} of {len(records)} checks failed or errored: "
                        + "; ".join(r.title for r in failed[:5]) + (" ..." if len(failed) > 5 else ""))
    skipped = [r for r in records if r.verdict is Verdict.SKIP]
    if skipped and not allow_skip:
        problems.append(f"{len(skipped)} checks were skipped (not verified): "
                        + "; ".join(sorted({r.reason for r in skipped})))
    return problems
