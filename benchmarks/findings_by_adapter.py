"""Every documented finding by WebGPU implementation and adapter, from gate results.

Reads results.json files of gates run on different machines (each given as LABEL=PATH, the label
naming the adapter, e.g. "NVIDIA H100=out/results.json") and prints, per finding, what each
(implementation, adapter) showed:

- `reproduces`: a record of its kernel was KNOWN with the finding reproduced;
- `not shown`: its kernel ran there but no example failed as it (with how many of its records
  there were SKIPs, e.g. its f16 configs where the adapter lacks shader-f16);
- `skipped`: every record of its kernel there was a SKIP (the reason, shortened, follows);
- `-`: no record of its kernel there (not in that gate, or not for that implementation).

    python benchmarks/findings_by_adapter.py "lavapipe=/tmp/lvp/results.json" \
        "NVIDIA H100=/tmp/gpu/results.json" --json benchmarks/results/findings_by_adapter.json

A gate's findings' cases run first whatever its budget (docs/ci.md), so a ci gate is enough to say
whether a finding shows on an adapter.
"""

from __future__ import annotations

import argparse
import json
import lzma
from collections import defaultdict
from pathlib import Path


def _records(path: Path) -> list[dict]:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt") as handle:
        return json.load(handle)["records"]


def _column(label: str, record: dict) -> str | None:
    adapter = record.get("adapter") or {}
    implementation = adapter.get("implementation")
    return f"{implementation} on {label}" if implementation else None


def _why(record: dict) -> str:
    """A SKIP's reason in a few words for a table cell."""
    reason = record.get("reason") or ""
    return "no shader-f16" if "shader-f16" in reason else reason[:50]


def table(sources: list[tuple[str, Path]]) -> dict:
    """{"columns": [...], "rows": {finding id: {column: cell}}} over every documented finding."""
    from verify.findings import all_findings

    kernels_of: dict[str, set[str]] = defaultdict(set)
    shown: dict[tuple[str, str], bool] = {}
    by_kernel: dict[tuple[str, str], list[dict]] = defaultdict(list)
    columns: list[str] = []
    for label, path in sources:
        records = _records(path)
        for record in records:
            for finding in filter(None, (record.get("finding_id") or "").split(",")):
                kernels_of[finding].add(record["kernel"])
        unplaced = []  # a plan's SKIPs name no adapter (an ORT config its runtime's adapter cannot run)
        for record in records:
            column = _column(label, record)
            if column is None:
                unplaced.append(record)
                continue
            if column not in columns:
                columns.append(column)
            by_kernel[(record["kernel"], column)].append(record)
            for finding in filter(None, (record.get("finding_id") or "").split(",")):
                shown[(finding, column)] = shown.get((finding, column), False) or bool(record.get("finding_reproduced"))
        for record in unplaced:
            for column in [c for c in columns if c.endswith(f" on {label}")]:
                by_kernel[(record["kernel"], column)].append(record)
    rows: dict[str, dict[str, str]] = {}
    for finding in all_findings():
        row = {}
        for column in columns:
            records = [r for k in sorted(kernels_of.get(finding, ())) for r in by_kernel.get((k, column), [])]
            skips = [r for r in records if r["verdict"] == "skip"]
            if shown.get((finding, column)):
                row[column] = "reproduces"
            elif records and len(skips) == len(records):
                row[column] = f"skipped: {_why(skips[0])}"
            elif records:
                row[column] = "not shown" + (f" ({len(skips)} of {len(records)} skipped: {_why(skips[0])})"
                                             if skips else "")
            else:
                row[column] = "-"
        rows[finding] = row
    return {"columns": columns, "rows": rows}


def markdown(result: dict) -> str:
    from verify.findings import all_findings

    findings = all_findings()
    columns = result["columns"]
    lines = ["| finding | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for finding, row in result["rows"].items():
        lines.append(f"| {findings[finding].section} `{finding}` | " + " | ".join(row[c] for c in columns) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="+", help="LABEL=PATH of a results.json (or .json.xz)")
    parser.add_argument("--json", help="also write the table as JSON here")
    args = parser.parse_args()
    sources = []
    for given in args.sources:
        label, _, path = given.partition("=")
        if not path:
            parser.error(f"{given!r}: give LABEL=PATH")
        sources.append((label, Path(path)))
    result = table(sources)
    print(markdown(result))
    if args.json:
        Path(args.json).write_text(json.dumps({"sources": {label: str(path) for label, path in sources}, **result},
                                              indent=1) + "\n")


if __name__ == "__main__":
    main()
