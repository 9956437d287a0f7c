"""What drawing a case costs, per kernel family, at a profile's sizes: Hypothesis drawing the
structure plus numpy building the arrays, with no kernel run and no reference.

For each kernel's first gate config, N cases are drawn the way a check draws them (`@given` with
the profile's settings, targeting off, no shrinking) and the wall time per case is reported, with
the mean array bytes of a case (what the GPU upload then moves). One case of each kernel is drawn
untimed first: what a process does once (value tables, imports) is no case's cost.

    python benchmarks/bench_cases.py --profile nightly --cases 40 [--kernels decode.tiled,dp4a.matmul] [--out FILE]

Timings on a shared machine move with its load: compare two versions by alternating their runs
(PYTHONPATH picks the version) in the same minutes.
"""

from __future__ import annotations

import argparse
import json
import statistics
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
    parser.add_argument("--out")
    args = parser.parse_args()

    from verify.kernels.registry import get_kernel
    from verify.profiles import get_profile

    profile = get_profile(args.profile)
    rows = []
    for name in args.kernels.split(","):
        kernel = get_kernel(name)
        config = kernel.gate_configs(profile)[0]
        draw_times(kernel.cases(config, profile), 1)
        local_constants()
        cpu = []
        times, sizes = draw_times(kernel.cases(config, profile), args.cases, cpu)
        row = {"kernel": name, "config": config, "cases": len(times),
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
            json.dump({"profile": args.profile, "rows": rows}, out, indent=1)


if __name__ == "__main__":
    main()
