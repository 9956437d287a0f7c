"""What drawing a case costs, per kernel family, at a profile's sizes: Hypothesis drawing the
structure plus numpy building the arrays, with no kernel run and no reference.

For each kernel's first gate config, N cases are drawn the way a check draws them (`@given` with
the profile's settings, targeting off, no shrinking) and the wall time per case is reported, with
the mean array bytes of a case (what the GPU upload then moves). One case of each kernel is drawn
untimed first: what a process does once (value tables, imports) is no case's cost.

    python benchmarks/bench_cases.py --profile nightly --cases 40 [--kernels decode.tiled,dp4a.matmul] [--out FILE]
    python benchmarks/bench_cases.py --profile ci --cases 45 --per-check 15   # as gate checks draw

    python benchmarks/bench_cases.py --profile ci --runner reference,determinism   # the gate's generation stage

With --runner CHECKS each gate config's checks (of those, the ones the kernel has) run through
verify.checks.runner.run_check, as a gate worker runs them, with the profile's examples shared
among the configs, and an example that runs nothing (scored at random for Hypothesis's
targeting): the ms per case is the generation stage the gate records (drawing, the strategy's
filters, targeting, Hypothesis's own work), with no kernel and no reference.

With --per-check N the cases are drawn in runs of N, each from a strategy built afresh, as each
check of a gate builds its own: what a check pays once (building the strategy, Hypothesis
validating it and setting up its run, all timed with the run's first case) is then spread over
N cases, as in the gate, where a ci check draws a few tens.

By default it runs in the environment the gate's workers get (verify.session's worker tuning:
one OpenBLAS thread, glibc malloc keeping freed arrays of up to 32 MiB), as bench_reference.py
does; --environment inherit runs in this shell's. Timings on a shared machine move with its
load (recorded before and after): compare two versions by alternating their runs (PYTHONPATH
picks the version) in the same minutes, and read the CPU column where the machine is loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

from hypothesis import HealthCheck, Phase, given, seed, settings


def draw_times(strategy, cases: int, cpu: list | None = None) -> tuple[list[float], list[int]]:
    """Wall seconds per drawn case and the case's array bytes (and, into `cpu`, this process's
    CPU seconds per case: on a shared machine, the part of the wall time that is not waiting)."""
    times, sizes = [], []
    last = [time.perf_counter(), time.process_time()]

    @settings(max_examples=cases, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seed(0)
    @given(strategy)
    def body(case):
        now, used = time.perf_counter(), time.process_time()
        times.append(now - last[0])
        if cpu is not None:
            cpu.append(used - last[1])
        sizes.append(sum(a.nbytes for a in case.arrays.values()))
        last[:] = time.perf_counter(), time.process_time()

    body()
    return times, sizes


def runner_row(name: str, kernel, profile, checks: list) -> dict:
    """The generation stage of the kernel's gate checks `checks`, run by run_check with an example
    that runs nothing: seconds over examples, as bench_gate.py reads a gate's records."""
    import math
    import random

    from verify.checks import get_check
    from verify.checks.context import CheckContext
    from verify.checks.outcome import Outcome
    from verify.checks.runner import RunOptions, run_check

    class Stub:
        """The check's strategy and limits; an example scored at random and nothing run."""

        def __init__(self, check):
            self.check, self.name, self.max_examples = check, check.name, check.max_examples

        def strategy(self, ctx):
            return self.check.strategy(ctx)

        def run_example(self, ctx, case):
            return Outcome(True, random.random(), [], [], {}, case)

    random.seed(0)
    configs = kernel.gate_configs(profile)
    examples = max(1, math.ceil(profile.examples / len(configs)))
    seconds, cases, cpu_started = 0.0, 0, time.process_time()
    for config in configs:
        for check in checks:
            ctx = CheckContext(kernel, config, None, "", profile)
            run = run_check(Stub(get_check(check)), ctx, RunOptions(examples=examples, seed=0, shrink=False))
            seconds += run.result.timing.total_s.get("generation", 0.0)
            cases += run.result.examples
    row = {"kernel": name, "checks": checks, "configs": len(configs), "cases": cases,
           "generation_ms_per_case": round(seconds / max(cases, 1) * 1e3, 2),
           "cpu_ms_per_case": round((time.process_time() - cpu_started) / max(cases, 1) * 1e3, 2)}
    print(f"{name:26} {cases:5} cases  generation {row['generation_ms_per_case']:8.2f} ms/case  "
          f"cpu {row['cpu_ms_per_case']:8.2f} ms/case")
    return row


def local_constants() -> None:
    """Have Hypothesis read the constants of the project's modules now: it does so once a process
    (and for modules imported later), the first time a draw asks for one (about 1 in 20 integer
    draws), so without this one timed case of a short run carries a few hundred milliseconds that
    no other case does."""
    try:
        from hypothesis.internal.conjecture.providers import _get_local_constants
    except ImportError:  # another Hypothesis: the cost stays where it falls
        return
    _get_local_constants()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="nightly")
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--kernels", default="decode.tiled,merge_state,rope,dp4a.quantize,dp4a.matmul")
    parser.add_argument("--runner", metavar="CHECKS",
                        help="comma-separated checks run through run_check with a stub example (the gate's generation)")
    parser.add_argument("--per-check", type=int, metavar="N",
                        help="draw in runs of N cases, each from a fresh strategy (as gate checks do)")
    parser.add_argument("--environment", choices=("worker", "inherit"), default="worker",
                        help="worker: the gate workers' process settings (default); inherit: this shell's")
    parser.add_argument("--out")
    args = parser.parse_args()

    from verify.session import _WORKER_TUNING

    if args.environment == "worker" and any(name not in os.environ for name in _WORKER_TUNING):
        # OpenBLAS and glibc read these when the process starts: run again with them set.
        os.execve(sys.executable, [sys.executable, *sys.argv], {**_WORKER_TUNING, **os.environ})
    from verify.kernels.registry import get_kernel
    from verify.profiles import get_profile

    profile = get_profile(args.profile)
    load_before = os.getloadavg()
    rows = []
    for name in args.kernels.split(","):
        kernel = get_kernel(name)
        config = kernel.gate_configs(profile)[0]
        draw_times(kernel.cases(config, profile), 1)
        local_constants()
        if args.runner:
            rows.append(runner_row(name, kernel, profile, args.runner.split(",")))
            continue
        cpu, times, sizes, left = [], [], [], args.cases
        while left > 0:  # one run, or runs of --per-check cases from fresh strategies
            run = min(left, args.per_check or left)
            run_times, run_sizes = draw_times(kernel.cases(config, profile), run, cpu)
            times, sizes, left = times + run_times, sizes + run_sizes, left - run
        row = {"kernel": name, "config": config, "cases": len(times), "per_check": args.per_check,
               "ms_per_case_median": round(statistics.median(times) * 1e3, 2),
               "ms_per_case_mean": round(statistics.mean(times) * 1e3, 2),
               "ms_per_case_max": round(max(times) * 1e3, 2),
               "cpu_ms_per_case_mean": round(statistics.mean(cpu) * 1e3, 2),
               "mean_case_mb": round(statistics.mean(sizes) / 2**20, 3)}
        rows.append(row)
        print(f"{name:18} median {row['ms_per_case_median']:8.2f} ms  mean {row['ms_per_case_mean']:8.2f} ms  "
              f"max {row['ms_per_case_max']:8.2f} ms  cpu mean {row['cpu_ms_per_case_mean']:8.2f} ms  "
              f"{row['mean_case_mb']:8.3f} MB/case")
    if args.out:
        with open(args.out, "w") as out:
            json.dump({"command": " ".join(sys.argv), "profile": args.profile,
                       "environment": {name: os.environ.get(name, "unset") for name in _WORKER_TUNING},
                       "load_before": [round(x, 2) for x in load_before],
                       "load_after": [round(x, 2) for x in os.getloadavg()], "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main()
