"""Milliseconds per case of the float64 reference + error budget, plain path and fast path side by side.

Draws cases as the gate does (each kernel's strategy, its gate configs, the chosen profile) and
times, per case and interleaved, the plain pair the fast path must equal and verify.fastpath:

- decode (decode.tiled, decode.sharded, decode and TVM's decode share the contract):
  references.decode.decode_attention + verify.budgets.attention.decode_budget, against
  verify.kernels.attention.fastpath.evaluate;
- dp4a.matmul: references.nbits.dp4a_product + verify.budgets.dp4a.matmul_budget, against
  verify.kernels.dp4a.fastpath.evaluate.

Each timing is the best of --repeats runs (load on a shared machine only ever adds time), wall
clock and process CPU time. The machine's load averages are recorded before and after. Writes JSON.
By default the benchmark runs in the environment the gate's workers get (verify.session's worker
tuning: one OpenBLAS thread, glibc malloc keeping freed arrays); --environment inherit runs in
this shell's environment instead, to see what that tuning is worth.

    python benchmarks/bench_reference.py --out benchmarks/results/reference_ci.json
    python benchmarks/bench_reference.py --profile nightly --kernels decode.tiled --examples 10
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

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings

from verify.kernels.attention import fastpath as fast_decode
from verify.kernels.dp4a import fastpath as fast_dp4a
from verify.kernels.registry import get_kernel
from verify.profiles import get_profile
from verify.session import _WORKER_TUNING

#: Kernels whose gate configs are timed; TVM's decode shapes are read without building TVM.
KERNELS = ("decode.tiled", "tvm.decode", "tvm.decode_sliding_window", "dp4a.matmul")


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def gate_configs(name: str, profile) -> list[dict]:
    kernel = get_kernel(name)
    shapes = getattr(kernel, "gate_shapes", None)  # TVM decode's shapes, read without building TVM
    if shapes and all(isinstance(shape, dict) for shape in shapes):
        return [kernel.config(shape) for shape in shapes]
    return kernel.gate_configs(profile)


def draw(kernel, config, profile, examples: int, draw_seed: int) -> list:
    """`examples` cases from the kernel's strategy, as the gate's generate phase draws them."""
    cases = []
    strategy = kernel.cases(config, profile) if not kernel.name.startswith("tvm.") else \
        super(type(kernel), kernel).cases(config, profile)  # TVM's own filter computes the reference

    @settings(max_examples=examples, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seed(draw_seed)
    @given(strategy)
    def collect(case):
        cases.append(case)

    collect()
    return cases


def timed(work, repeats: int) -> tuple[float, float]:
    """(best wall ms, best CPU ms) of `repeats` runs."""
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        work()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls) * 1e3, min(cpus) * 1e3


def plain_and_fast(kernel, config, case):
    """(plain work, fast work, whether the fast path took the case) for one case."""
    if kernel.family == "dp4a":
        inputs = kernel.matmul_inputs(config, case)
        return (lambda: fast_dp4a.evaluate_plain(inputs)), (lambda: fast_dp4a.evaluate(inputs)), \
            fast_dp4a._takes(inputs)
    inputs = kernel.decode_inputs(config, case)
    took = fast_decode._takes(inputs) and fast_decode._evaluate_fast(inputs) is not None
    return (lambda: fast_decode.evaluate_plain(inputs)), (lambda: fast_decode.evaluate(inputs)), took


def size_of(kernel, config, case) -> dict:
    if kernel.family == "dp4a":
        batch, m, k4 = case["a_codes"].shape
        return {"macs": int(batch * m * case["b"].shape[0] * k4 * 4)}
    lengths = case.params["lengths"]
    return {"rows": int(sum(lengths)), "longest": int(max(lengths, default=0)), "batch": len(lengths),
            "rotary": int(case.params["rotary_mode"])}


def bench_config(kernel, config, profile, examples: int, repeats: int, draw_seed: int, plain_too: bool) -> dict:
    rows = []
    for case in draw(kernel, config, profile, examples, draw_seed):
        plain, fast, took = plain_and_fast(kernel, config, case)
        plain_ms, plain_cpu = timed(plain, repeats) if plain_too else (float("nan"), float("nan"))
        fast_ms, fast_cpu = timed(fast, repeats)
        rows.append({"plain_ms": plain_ms, "fast_ms": fast_ms, "plain_cpu_ms": plain_cpu, "fast_cpu_ms": fast_cpu,
                     "fast_path": took, **size_of(kernel, config, case)})
    mean = lambda key: round(statistics.fmean(r[key] for r in rows), 3) if plain_too or "plain" not in key else None
    return {"config": config, "cases": len(rows), "plain_ms": mean("plain_ms"), "fast_ms": mean("fast_ms"),
            "plain_cpu_ms": mean("plain_cpu_ms"), "fast_cpu_ms": mean("fast_cpu_ms"),
            "speed_up": round(mean("plain_ms") / max(mean("fast_ms"), 1e-9), 2) if plain_too else None,
            "fell_back": sum(not r["fast_path"] for r in rows),
            "worst_fast_ms": round(max(r["fast_ms"] for r in rows), 3), "per_case": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--examples", type=int, help="cases per config (default: the gate's share of the "
                                                     "profile's examples among the kernel's configs)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-case", action="store_true", help="keep every case's timings in the JSON")
    parser.add_argument("--fast-only", action="store_true",
                        help="time the fast path only (the plain pair needs GBs and seconds per case at nightly sizes)")
    parser.add_argument("--environment", choices=("worker", "inherit"), default="worker",
                        help="worker: the gate workers' process settings (default); inherit: this shell's")
    parser.add_argument("--out", help="write the JSON here (default: print it)")
    args = parser.parse_args()
    if args.environment == "worker" and any(name not in os.environ for name in _WORKER_TUNING):
        # OpenBLAS and glibc read these when the process starts: run again with them set.
        os.execve(sys.executable, [sys.executable, *sys.argv], {**_WORKER_TUNING, **os.environ})
    profile = get_profile(args.profile)
    report = {"command": " ".join(sys.argv), "host": platform.node(), "cpus": os.cpu_count(),
              "python": platform.python_version(), "numpy": np.__version__,
              "environment": {name: os.environ.get(name, "unset") for name in _WORKER_TUNING},
              "profile": profile.name, "repeats": args.repeats, "load_before": load(), "kernels": {}}
    for name in args.kernels.split(","):
        kernel = get_kernel(name)
        configs = gate_configs(name, profile)
        examples = args.examples or max(1, profile.examples // len(configs))
        entries = []
        for config in configs:
            print(f"bench_reference: {name} {config}", file=sys.stderr, flush=True)
            entry = bench_config(kernel, config, profile, examples, args.repeats, args.seed, not args.fast_only)
            if not args.per_case:
                entry.pop("per_case")
            entries.append(entry)
        weights = [e["cases"] for e in entries]
        average = lambda key: None if entries[0][key] is None else \
            round(sum(e[key] * w for e, w in zip(entries, weights)) / sum(weights), 3)
        plain_ms, fast_ms = average("plain_ms"), average("fast_ms")
        report["kernels"][name] = {"plain_ms_per_case": plain_ms, "fast_ms_per_case": fast_ms,
                                   "plain_cpu_ms_per_case": average("plain_cpu_ms"),
                                   "fast_cpu_ms_per_case": average("fast_cpu_ms"),
                                   "speed_up": None if plain_ms is None else round(plain_ms / max(fast_ms, 1e-9), 2),
                                   "configs": entries}
    report["load_after"] = load()
    text = json.dumps(report, indent=1, default=str)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    summary = {name: {k: v for k, v in entry.items() if k != "configs"} for name, entry in report["kernels"].items()}
    print(json.dumps({"load_before": report["load_before"], "load_after": report["load_after"],
                      "environment": report["environment"], "kernels": summary}, indent=1))


if __name__ == "__main__":
    main()
