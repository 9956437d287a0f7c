"""What instrumentation costs: parse, sanitize and subgroup emulation against the plain kernel.

For each kernel (its first ci gate config, or --config overrides), draws --cases cases (seed 0)
and times, per case, the plain launch, the sanitized launch (SanitizingDevice: the rewritten
kernel, its log's upload and readback and the numpy analysis, of which the analysis is also
reported alone) and, for kernels with subgroups, the launch with subgroups emulated at each
--widths. One-time costs are reported apart: parsing and rewriting the WGSL (Python), and the first
launch on a fresh device (pipeline creation, the driver's compile, which lavapipe does at the
first dispatch, and the run) of the original and of the rewrite. Each per-case figure is the
median over the cases, after that first launch.

    python -m benchmarks.bench_instrument --out benchmarks/results/instrument_lavapipe.json
    python -m benchmarks.bench_instrument --kernels tvm.merge_state --cases 5
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed

KERNELS = ("merge_state", "rope", "decode.tiled", "decode.sharded", "dp4a.quantize", "dp4a.matmul",
           "tvm.decode", "tvm.merge_state")
WIDTHS = "8,32,128"


def draw_cases(kernel, config, count: int) -> list:
    cases = []

    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @hseed(0)
    @given(kernel.cases(config, "ci"))
    def collect(case):
        cases.append(case)

    collect()
    return cases[:count]


def timed(function) -> tuple[object, float]:
    start = time.perf_counter()
    result = function()
    return result, (time.perf_counter() - start) * 1e3


def per_case_ms(launch, cases) -> tuple[float, float]:
    """(first launch, median of the launches after it) in milliseconds."""
    _, first = timed(lambda: launch(cases[0]))
    return first, statistics.median(timed(lambda c=case: launch(c))[1] for case in cases)


def parse_ms(wgsl: str, repeats: int = 5) -> float:
    from verify.instrument import parse

    return statistics.median(timed(lambda: parse(wgsl))[1] for _ in range(repeats))


def bench_kernel(device, name: str, overrides: dict, count: int, widths: list[int]) -> dict:
    import verify.instrument.devices as devices
    from verify.gpu import open_device
    from verify.instrument import EmulatingDevice, SanitizingDevice, emulate_subgroups, sanitize
    from verify.kernels.registry import get_kernel

    kernel = get_kernel(name)
    config = kernel.config(overrides) if overrides else kernel.gate_configs("ci")[0]
    wgsl = kernel.wgsl(config)
    module = kernel.modules(wgsl)[0]
    cases = draw_cases(kernel, config, count)
    sanitized, instrument_ms = timed(lambda: sanitize(module))
    first, plain = per_case_ms(lambda c: kernel.launch(device, wgsl, config, c), cases)
    record = {
        "kernel": name, "config": config, "cases": len(cases), "wgsl_lines": module.count("\n") + 1,
        "parse_ms": parse_ms(module), "sanitize_rewrite_ms": instrument_ms, "access_sites": len(sanitized.sites),
        "first_launch_ms": first, "plain_ms": plain,
    }
    sanitizing = SanitizingDevice(open_device())  # a fresh device: its first launch compiles
    analysis = []
    analyze = devices.analyze

    def timed_analyze(*args):
        result, ms = timed(lambda: analyze(*args))
        analysis.append(ms)
        return result

    devices.analyze = timed_analyze
    try:
        record["first_launch_sanitized_ms"], record["sanitized_ms"] = per_case_ms(
            lambda c: kernel.launch(sanitizing, wgsl, config, c), cases)
    finally:
        devices.analyze = analyze
    report = sanitizing.take_report()
    record["analysis_ms"] = statistics.median(analysis[1:] or analysis)
    record["accesses_per_case"] = report.accesses // max(1, report.dispatches)
    record["findings"] = sorted({type(f).__name__ for f in report.findings})
    record["sanitized_ratio"] = record["sanitized_ms"] / record["plain_ms"]
    if "subgroup" in kernel.requirements(config):
        record["emulated"] = {}
        for width in widths:
            emulating = EmulatingDevice(open_device(), width)
            _, rewrite_ms = timed(lambda w=width: emulate_subgroups(module, w))
            first, ms = per_case_ms(lambda c, e=emulating: kernel.launch(e, wgsl, config, c), cases)
            record["emulated"][str(width)] = {"rewrite_ms": rewrite_ms, "first_launch_ms": first, "per_case_ms": ms,
                                              "ratio": ms / record["plain_ms"]}
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--config", action="append", default=[], metavar="KERNEL:K=V",
                        help="config override for one kernel, e.g. dp4a.quantize:reduce=subgroup")
    parser.add_argument("--cases", type=int, default=8)
    parser.add_argument("--widths", default=WIDTHS, help="emulated subgroup widths for kernels with subgroups")
    parser.add_argument("--out", type=Path, help="write the records as JSON")
    args = parser.parse_args()
    from verify.errors import SetupError
    from verify.gpu import open_device

    overrides: dict = {}
    for item in args.config:
        name, _, pair = item.partition(":")
        key, _, value = pair.partition("=")
        overrides.setdefault(name, {})[key] = value
    device = open_device()
    widths = [int(w) for w in args.widths.split(",") if w]
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"adapter: {device.info.name} ({device.info.backend}); load average {load}")
    print(f"{'kernel':16} {'plain':>8} {'sanitized':>10} {'ratio':>6} {'analysis':>9} {'accesses':>9} "
          f"{'1st plain':>9} {'1st sanitized':>13} {'parse':>6}  emulated (ms, ratio)")
    records = []
    for name in args.kernels.split(","):
        try:
            record = bench_kernel(device, name, overrides.get(name, {}), args.cases, widths)
        except SetupError as exc:
            print(f"{name:16} skipped: {exc}")
            continue
        records.append(record)
        emulated = "  ".join(f"W={w}: {e['per_case_ms']:.1f} ({e['ratio']:.1f}x)"
                             for w, e in record.get("emulated", {}).items())
        print(f"{name:16} {record['plain_ms']:8.2f} {record['sanitized_ms']:10.2f} {record['sanitized_ratio']:6.1f} "
              f"{record['analysis_ms']:9.2f} {record['accesses_per_case']:9d} {record['first_launch_ms']:9.0f} "
              f"{record['first_launch_sanitized_ms']:13.0f} {record['parse_ms']:6.1f}  {emulated}")
    if args.out:
        meta = {"adapter": device.info.name, "backend": device.info.backend, "host": platform.node(),
                "cpus": os.cpu_count(), "load_average": load, "python": sys.version.split()[0],
                "cases": args.cases, "unit": "milliseconds (per case: median over the cases)"}
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"meta": meta, "records": records}, indent=1, default=str) + "\n")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
