"""Compare two gate runs' results.json: verdicts, worst err/budget and examples per check.

For a change that must not move the gate (e.g. a faster reference with the same numbers): run
`verify gate` with the same --seed and --profile before and after, then

    python benchmarks/compare_gate_results.py BEFORE/results.json AFTER/results.json

Prints every check whose verdict or example count differs and the largest relative differences of
the worst scores; exits 1 if any verdict differs.
"""

from __future__ import annotations

import json
import sys


def key(record: dict) -> tuple:
    """What identifies a check across runs: kernel, check, config, emulated subgroup width and the
    WebGPU implementation it ran on (the same check runs on several)."""
    implementation = (record.get("adapter") or {}).get("implementation") or "-"
    width = record.get("subgroup_width") or "-"
    return (record["kernel"], record["check"], json.dumps(record["config"], sort_keys=True) + f" w={width} {implementation}")


def load(path: str) -> dict:
    records = json.load(open(path))["records"]
    loaded = {}
    for r in records:
        if key(r) in loaded:
            sys.exit(f"{path}: two records of {key(r)}; cannot compare")
        loaded[key(r)] = (r["verdict"], (r.get("worst") or {}).get("score"), r.get("examples"))
    return loaded


def relative(a, b) -> float:
    try:
        a, b = float(a), float(b)
    except (TypeError, ValueError):
        return 0.0 if a == b else float("inf")
    return 0.0 if a == b else abs(a - b) / max(abs(a), abs(b))


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    before, after = load(sys.argv[1]), load(sys.argv[2])
    common = sorted(before.keys() & after.keys())
    print(f"checks: {len(before)} before, {len(after)} after, {len(common)} in both")
    for name, only in (("only before", before.keys() - after.keys()), ("only after", after.keys() - before.keys())):
        for k in sorted(only):
            print(f"  {name}: {k[0]} {k[1]} {k[2]}")
    verdicts = [k for k in common if before[k][0] != after[k][0]]
    examples = [k for k in common if before[k][2] != after[k][2]]
    scores = sorted(((relative(before[k][1], after[k][1]), k) for k in common), reverse=True)
    print(f"verdicts differing: {len(verdicts)}; example counts differing: {len(examples)}; "
          f"worst scores differing: {sum(r > 0 for r, _ in scores)}")
    for k in verdicts + examples:
        print(f"  {k[0]} {k[1]} {k[2]}: {before[k]} -> {after[k]}")
    for r, k in scores[:10]:
        if r > 0:
            print(f"  {r:.2e}  {k[0]} {k[1]} {k[2]}: {before[k][1]} -> {after[k][1]}")
    sys.exit(1 if verdicts or before.keys() != after.keys() else 0)


if __name__ == "__main__":
    main()
