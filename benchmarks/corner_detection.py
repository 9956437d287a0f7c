"""How much of the mutant suite a budgeted gate's first part catches: each mutant of
tests/fixtures/mutants run by the check that must catch it, first with its corners alone (the
kernel's corners and findings' cases, what `verify gate --budget` always runs), then with random
examples in parts of 10 (as a budget spends them) until it fails, up to the spec's examples.

    python benchmarks/corner_detection.py [--kernels decode.tiled,merge_state] [--out FILE]

Prints, per mutant, whether its corners caught it and otherwise how many random parts it took
(the examples a budget must reach for it), and the totals: the kill rate of the corners alone, and
of corners plus N parts, for N = 1, 2, 5, 10. Runs in this process (no worker), so a mutant that
hangs the device hangs the script: the suite has none. Each mutant runs on the implementation its
spec names, else its kernel's own (Dawn for ORT's programs), else the default, at the emulated
subgroup width its spec names; a vendor program's mutant (ORT's) has the program it was made from
(the vendor's WGSL, or its `control`) run by the same check too, corners and every part, which
must pass (`unmutated`).
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


def run(kernel_name: str, spec: dict, device, *, explicit: bool, examples: int, seed: int, wgsl: str | None = None):
    """Whether the spec's check fails the mutant (or `wgsl`, the kernel's own where it is "")."""
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
    user = wgsl != ""
    if wgsl is None:
        wgsl = fixture_path(kernel_name, spec).read_text()
    elif wgsl == "":
        wgsl = kernel.wgsl(config)
    ctx = CheckContext(kernel, config, device, wgsl, get_profile("ci"), user_wgsl=user)
    result = run_check(check, ctx, RunOptions(max(1, examples), seed, shrink=False, explicit=explicit,
                                              generate=not explicit)).result
    if not user:  # the kernel's own WGSL: its documented findings are not failures of it
        result = result.with_known_finding(kernel.known_finding(check.name, config))
    return result.verdict is Verdict.FAIL


def device_for(kernel_name: str, spec: dict, opened: dict):
    """The device the spec's mutant runs on: its implementation (else its kernel's own, else the
    default), emulating its subgroup width."""
    from verify.gpu import open_device
    from verify.instrument import EmulatingDevice
    from verify.kernels.registry import get_kernel

    name = spec.get("implementation") or (get_kernel(kernel_name).implementations or (None,))[0]
    if name not in opened:
        opened[name] = open_device(name)
    width = spec.get("subgroup_width")
    return EmulatingDevice(opened[name], width) if width else opened[name]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", help="comma-separated kernels (default: every mutant's)")
    parser.add_argument("--out", help="write the per-mutant table as JSON here")
    args = parser.parse_args(argv)

    from tests.fixtures.mutants.regenerate import specs, unmutated

    wanted = set(args.kernels.split(",")) if args.kernels else None
    opened: dict = {}
    rows = []
    for kernel_name, entries in specs().items():
        if wanted and kernel_name not in wanted:
            continue
        for spec in entries:
            started = time.perf_counter()
            device = device_for(kernel_name, spec, opened)
            budget = spec.get("examples", 100)
            corners = run(kernel_name, spec, device, explicit=True, examples=1, seed=0)
            parts = None
            if not corners:
                for k in range(1, -(-budget // PART) + 1):
                    if run(kernel_name, spec, device, explicit=False, examples=PART, seed=k):
                        parts = k
                        break
            row = {"kernel": kernel_name, "mutant": spec["name"], "check": spec["caught_by"],
                   "implementation": device.info.implementation, "subgroup_width": spec.get("subgroup_width"),
                   "corners": corners, "parts": parts, "seconds": round(time.perf_counter() - started, 2)}
            how = "corners" if corners else (f"{parts} part(s) of {PART}" if parts else "NOT CAUGHT")
            if kernel_name.startswith("ort."):
                base = unmutated(kernel_name, spec) if spec.get("control") else ""
                row["unmutated_fails"] = any(
                    run(kernel_name, spec, device, explicit=k == 0, examples=PART, seed=k, wgsl=base)
                    for k in range(-(-budget // PART) + 1))
                how += "; the program it was made from " + ("FAILS" if row["unmutated_fails"] else "passes")
            rows.append(row)
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
