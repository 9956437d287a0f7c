"""What a set of results files, merged, says about the run as a whole: the problems that must
fail a CI gate's merge step even when every record that is there passed.

A gate split N ways (`verify gate --shard K/N`) is only as good as its shards: a shard that never
reported, or one that stopped half way, looks like a smaller, greener gate. So the merge checks
that every shard 1..N of each split is present, finished, and that together they hold as many
checks as the plan had.
"""

from __future__ import annotations

from collections import defaultdict

from verify.results.record import Verdict
from verify.results.store import ResultsDocument


def shard_problems(documents: list[ResultsDocument]) -> list[str]:
    """Missing or duplicated shards, and splits whose shards hold fewer checks than planned."""
    splits: dict[int, dict[int, list[ResultsDocument]]] = defaultdict(lambda: defaultdict(list))
    for document in documents:
        if document.shard:
            index, count = (int(x) for x in document.shard.split("/"))
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
        planned = {d.planned for docs in shards.values() for d in docs if d.planned}
        held = sum(len(docs[0].records) for docs in shards.values())
        if not missing and len(planned) == 1 and held < planned.pop():
            problems.append(f"the {count} shards hold {held} checks, fewer than the gate planned")
    return problems


def run_problems(documents: list[ResultsDocument], *, allow_skip: bool = False) -> list[str]:
    """Everything that makes the merged run not a pass, one line each."""
    problems = shard_problems(documents)
    for document in documents:
        if not document.complete:
            where = f"{document.path or 'a run'}{f' (shard {document.shard})' if document.shard else ''}"
            problems.append(f"{where} {'was interrupted' if document.interrupted else 'did not finish'}")
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
