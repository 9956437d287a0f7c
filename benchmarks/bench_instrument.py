"""What instrumentation costs: parse, sanitize and subgroup emulation against the plain kernel.

For each kernel (its first ci gate config, or --config overrides), draws --cases cases (seed 0;
--profile quick draws the cases the `sanitize` check runs) and times, per case, the plain launch,
the sanitized launch (SanitizingDevice: the rewritten kernel, its log's upload and readback and
the numpy analysis) and, for kernels with subgroups, the launch with subgroups emulated at each
--widths. The sanitized launch is also split into its stages: the log's upload, the dispatches
(with the runs again of a dispatch whose log overflowed), the readback, and the analysis alone.
One-time costs are reported apart: parsing and rewriting the WGSL (Python), and the first launch
on a fresh device (pipeline creation, the driver's compile, which lavapipe does at the first
dispatch, and the run) of the original and of the rewrite. Each per-case figure is the median
over the cases, after that first launch.

--baseline DIR measures another checkout's `verify` (DIR holds its package) side by side with
this one: for each kernel the two run in turn, each in a process of its own, and the records
carry both and their ratios (what a change to the sanitizer saved, measured in the same minutes).

    python -m benchmarks.bench_instrument --out benchmarks/results/instrument_lavapipe.json
    python -m benchmarks.bench_instrument --kernels tvm.merge_state --cases 5
    python -m benchmarks.bench_instrument --kernels tvm.prefill --profile quick --cases 4 --baseline ../main
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed

KERNELS = ("merge_state", "rope", "decode.tiled", "decode.sharded", "dp4a.quantize", "dp4a.matmul",
           "tvm.decode", "tvm.merge_state")
WIDTHS = "8,32,128"


#: Per-case stages of a sanitized launch, from the wrapped device's own timing of each run.
STAGES = ("upload", "dispatch", "readback")


def draw_cases(kernel, config, count: int, profile: str = "ci") -> list:
    cases = []

    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @hseed(0)
    @given(kernel.cases(config, profile))
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


def bench_kernel(device, name: str, overrides: dict, count: int, widths: list[int], profile: str = "ci",
                 limits: dict | None = None) -> dict:
    import verify.instrument.devices as devices
    from verify.gpu import open_device
    from verify.instrument import EmulatingDevice, SanitizingDevice, emulate_subgroups, sanitize
    from verify.kernels.registry import get_kernel

    kernel = get_kernel(name)
    config = kernel.config(overrides) if overrides else kernel.gate_configs("ci")[0]
    wgsl = kernel.wgsl(config)
    module = kernel.modules(wgsl)[0]
    cases = draw_cases(kernel, config, count, profile)
    sanitized, instrument_ms = timed(lambda: sanitize(module))
    first, plain = per_case_ms(lambda c: kernel.launch(device, wgsl, config, c), cases)
    record = {
        "kernel": name, "config": config, "cases": len(cases), "wgsl_lines": module.count("\n") + 1,
        "parse_ms": parse_ms(module), "sanitize_rewrite_ms": instrument_ms, "access_sites": len(sanitized.sites),
        "first_launch_ms": first, "plain_ms": plain,
    }
    inner = open_device(limits=limits)  # a fresh device: its first launch compiles
    runs: list = []
    run = inner.run

    def timed_run(*args, **kwargs):
        launched = run(*args, **kwargs)
        runs.append(launched.timing)
        return launched

    inner.run = timed_run
    sanitizing = SanitizingDevice(inner)
    analysis, stages = [], []
    analyze = devices.analyze

    def timed_analyze(*args):
        result, ms = timed(lambda: analyze(*args))
        analysis.append(ms)
        return result

    def launch(case):
        runs.clear()
        analysis.clear()
        kernel.launch(sanitizing, wgsl, config, case)
        stages.append({"runs": len(runs), "analysis": sum(analysis),
                       **{stage: 1e3 * sum(getattr(t, stage) for t in runs) for stage in STAGES}})

    devices.analyze = timed_analyze
    try:
        record["first_launch_sanitized_ms"], record["sanitized_ms"] = per_case_ms(launch, cases)
    finally:
        devices.analyze = analyze
    report = sanitizing.take_report()
    later = stages[1:] or stages
    record["analysis_ms"] = statistics.median(s["analysis"] for s in later)
    record["stages_ms"] = {stage: statistics.median(s[stage] for s in later) for stage in STAGES}
    record["runs_per_case"] = [s["runs"] for s in stages]
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
    parser.add_argument("--profile", default="ci", help="profile of the cases (quick: the sanitize check's)")
    parser.add_argument("--widths", default=WIDTHS, help="emulated subgroup widths for kernels with subgroups")
    parser.add_argument("--baseline", type=Path, metavar="DIR",
                        help="also measure the verify package of this checkout, in turn with this one")
    parser.add_argument("--rounds", type=int, default=1, help="with --baseline: turns of each kernel on each side")
    parser.add_argument("--out", type=Path, help="write the records as JSON")
    parser.add_argument("--records", action="store_true", help=argparse.SUPPRESS)  # one side of --baseline
    args = parser.parse_args()
    if args.baseline is not None:
        return side_by_side(args)
    from verify.checks.sanitize import SanitizeCheck
    from verify.errors import SetupError
    from verify.gpu import open_device
    from verify.kernels.registry import get_kernel

    overrides: dict = {}
    for item in args.config:
        name, _, pair = item.partition(":")
        key, _, value = pair.partition("=")
        overrides.setdefault(name, {})[key] = value
    device = open_device()
    widths = [int(w) for w in args.widths.split(",") if w]
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    if not args.records:
        print(f"adapter: {device.info.name} ({device.info.backend}); load average {load}")
        print(f"{'kernel':16} {'plain':>8} {'sanitized':>10} {'ratio':>6} {'analysis':>9} {'upload':>7} "
              f"{'dispatch':>9} {'readback':>9} {'accesses':>9} {'1st plain':>9} {'1st sanitized':>13} {'parse':>6} "
              f"{'rewrite':>8}  emulated (ms, ratio)")
    records = []
    for name in args.kernels.split(","):
        try:
            kernel = get_kernel(name)
            config = kernel.config(overrides[name]) if name in overrides else kernel.gate_configs("ci")[0]
            check = SanitizeCheck()  # the check's own device limits: room for the log, one more binding
            limits = dict(check.device_limits(kernel, config), **check.instrument_limits(kernel, config))
            record = bench_kernel(device, name, overrides.get(name, {}), args.cases, widths, args.profile, limits)
        except SetupError as exc:
            print(f"{name:16} skipped: {exc}", file=sys.stderr if args.records else sys.stdout)
            continue
        record["load_average"] = os.getloadavg() if hasattr(os, "getloadavg") else None
        records.append(record)
        if args.records:
            continue
        emulated = "  ".join(f"W={w}: {e['per_case_ms']:.1f} ({e['ratio']:.1f}x)"
                             for w, e in record.get("emulated", {}).items())
        stages = record["stages_ms"]
        print(f"{name:16} {record['plain_ms']:8.2f} {record['sanitized_ms']:10.2f} {record['sanitized_ratio']:6.1f} "
              f"{record['analysis_ms']:9.2f} {stages['upload']:7.1f} {stages['dispatch']:9.1f} "
              f"{stages['readback']:9.1f} {record['accesses_per_case']:9d} {record['first_launch_ms']:9.0f} "
              f"{record['first_launch_sanitized_ms']:13.0f} {record['parse_ms']:6.1f} "
              f"{record['sanitize_rewrite_ms']:8.0f}  {emulated}")
    if args.records:
        print(json.dumps(records, default=str))
        return 0
    meta = {"adapter": device.info.name, "backend": device.info.backend, "host": platform.node(),
            "cpus": os.cpu_count(), "load_average": load, "python": sys.version.split()[0],
            "cases": args.cases, "profile": args.profile, "command": " ".join(sys.argv),
            "unit": "milliseconds (per case: median over the cases)"}
    write(args.out, {"meta": meta, "records": records})
    return 0


#: Per-case figures compared side by side (before / after).
COMPARED = ("sanitized_ms", "analysis_ms", "sanitize_rewrite_ms", "first_launch_sanitized_ms")


def side_by_side(args) -> int:
    """Each kernel measured with the baseline's verify and with this one's, in turn, each in a
    process of its own, --rounds times; the ratios are before / after of the medians."""
    here = Path(__file__).resolve().parents[1]
    sides = {"before": args.baseline.resolve(), "after": here}
    passed = [f"--cases={args.cases}", f"--profile={args.profile}", f"--widths={args.widths}"]
    passed += [f"--config={item}" for item in args.config]
    records = []
    print(f"{'kernel':16} {'side':6} {'sanitized':>10} {'analysis':>9} {'upload':>7} {'dispatch':>9} {'readback':>9} "
          f"{'rewrite':>8} {'1st sanitized':>13}  load")
    for name in args.kernels.split(","):
        measured: dict = {side: [] for side in sides}
        for _ in range(args.rounds):
            for side, root in sides.items():
                env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                    [str(root), str(root / "examples" / "rmsnorm"), os.environ.get("PYTHONPATH", "")]))
                done = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--records", "--kernels", name,
                                       *passed], env=env, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    sys.stderr.write(done.stderr)
                    return done.returncode
                for record in json.loads(done.stdout.strip().splitlines()[-1]):
                    measured[side].append(record)
                    stages = record["stages_ms"]
                    print(f"{name:16} {side:6} {record['sanitized_ms']:10.1f} {record['analysis_ms']:9.1f} "
                          f"{stages['upload']:7.1f} {stages['dispatch']:9.1f} {stages['readback']:9.1f} "
                          f"{record['sanitize_rewrite_ms']:8.0f} {record['first_launch_sanitized_ms']:13.0f}  "
                          f"{tuple(round(x, 2) for x in record['load_average'] or ())}", flush=True)
        if not measured["before"] or not measured["after"]:
            continue
        ratios = {key: statistics.median(r[key] for r in measured["before"])
                  / statistics.median(r[key] for r in measured["after"]) for key in COMPARED}
        for stage in STAGES:
            before = statistics.median(r["stages_ms"][stage] for r in measured["before"])
            after = statistics.median(r["stages_ms"][stage] for r in measured["after"])
            ratios[stage] = before / after if after else None
        records.append({"kernel": name, "config": measured["after"][0]["config"], "before": measured["before"],
                        "after": measured["after"], "ratio_before_over_after": ratios})
        print(f"{name:16} before/after: " + ", ".join(f"{k} {v:.2f}" for k, v in ratios.items() if v is not None))
    meta = {"host": platform.node(), "cpus": os.cpu_count(), "python": sys.version.split()[0],
            "load_average_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
            "cases": args.cases, "profile": args.profile, "rounds": args.rounds, "baseline": str(args.baseline),
            "command": " ".join(["python -m benchmarks.bench_instrument", *sys.argv[1:]]),
            "unit": "milliseconds (per case: median over the cases after the first)"}
    write(args.out, {"meta": meta, "records": records})
    return 0


def write(path: Path | None, content: dict) -> None:
    if path:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(content, indent=1, default=str) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
