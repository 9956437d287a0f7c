"""How much of the mutant suite a budgeted gate's first part catches: each mutant of
tests/fixtures/mutants run by the check that must catch it, first with its corners alone (the
kernel's corners and findings' cases, what `verify gate --budget` always runs), then with random
examples in parts of 10 (as a budget spends them) until it fails, up to the spec's examples.

    python benchmarks/corner_detection.py [--kernels decode.tiled,merge_state] [--out FILE]

Prints, per mutant, whether its corners caught it and otherwise how many random parts it took
(the examples a budget must reach for it), and the totals: the kill rate of the corners alone, and
of corners plus N parts, for N = 1, 2, 5, 10. Runs in this process on the default implementation
(no worker), so a mutant that hangs the device hangs the script: the suite has none.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PART = 10


def run(kernel_name: str, spec: dict, device, *, explicit: bool, examples: int, seed: int):
    from tests.fixtures.mutants.regenerate import fixture_path
    from verify.checks import get_check
    from verify.checks.context import CheckContext
    from verify.checks.runner import RunOptions, run_check
    from verify.kernels.registry import get_kernel
    from verify.profiles import get_profile
    from verify.results.record import Verdict

    kernel = get_kernel(kernel_name)
    config = kernel.config(spec.get("config", {}))
    check = get_check(spec["caught_by"])
    wgsl = fixture_path(kernel_name, spec).read_text()
    ctx = CheckContext(kernel, config, device, wgsl, get_profile("ci"), user_wgsl=True)
    result = run_check(check, ctx, RunOptions(max(1, examples), seed, shrink=False, explicit=explicit,
                                              generate=not explicit)).result
    return result.verdict is Verdict.FAIL


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", help="comma-separated kernels (default: every mutant's)")
    parser.add_argument("--out", help="write the per-mutant table as JSON here")
    args = parser.parse_args(argv)

    from tests.fixtures.mutants.regenerate import specs
    from verify.gpu import open_device

    wanted = set(args.kernels.split(",")) if args.kernels else None
    device = open_device()
    rows = []
    for kernel_name, entries in specs().items():
        if wanted and kernel_name not in wanted:
            continue
        for spec in entries:
            started = time.perf_counter()
            corners = run(kernel_name, spec, device, explicit=True, examples=1, seed=0)
            parts = None
            if not corners:
                budget = spec.get("examples", 100)
                for k in range(1, -(-budget // PART) + 1):
                    if run(kernel_name, spec, device, explicit=False, examples=PART, seed=k):
                        parts = k
                        break
            rows.append({"kernel": kernel_name, "mutant": spec["name"], "check": spec["caught_by"],
                         "corners": corners, "parts": parts, "seconds": round(time.perf_counter() - started, 2)})
            how = "corners" if corners else (f"{parts} part(s) of {PART}" if parts else "NOT CAUGHT")
            print(f"{kernel_name}/{spec['name']} ({spec['caught_by']}): {how}", flush=True)
    total = len(rows)
    print(f"\n{total} mutants: corners alone catch {sum(r['corners'] for r in rows)}")
    for n in (1, 2, 5, 10):
        caught = sum(r["corners"] or (r["parts"] is not None and r["parts"] <= n) for r in rows)
        print(f"  corners + {n} part(s) of {PART}: {caught}")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
