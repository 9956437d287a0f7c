"""Planning that finds slow work makes the rest of the kernels' WGSL in parallel first.

A plan needs the WGSL of every (kernel, config) it runs: its identity hashes the text, and a
kernel's gate configs may be checked against it. Most kernels make their WGSL in microseconds,
but some run someone else's compiler to get it: ONNX Runtime's programs are captured by running
its session (a few seconds each, minutes for a flash-attention program that LLVM compiles slowly
on a CPU driver whose shader cache is cold), TVM's are built by apache-tvm. Both keep what they
made on disk (verify.sources.ort.programs, verify.sources.tvm.build), so this cost is paid once per
machine, but on a fresh machine the gate paid it one kernel after another in its planning process,
every other core idle, for over nine minutes on two cores.

`planned_in_order` hands a planner the kernel names one by one and times what the planner does
with each. Once one kernel took longer than `SLOW_S` (far above a kernel whose WGSL is kept:
milliseconds, a second for the first ORT kernel, which starts ORT's Node process), the kernels
not yet planned are first planned in `workers` processes at once, each planning one kernel
alone with the same arguments, which makes that kernel's WGSL and keeps it on disk; the planner
then finds every one ready. What the pool planned is never used, and nothing it fails at is
reported by it: the planner does the same work afterwards and reports what fails, exactly as
without a pool, so the plan (and every verdict) is the same whether a pool ran or not.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from typing import Callable

#: Seconds one kernel's planning may take before the kernels left are planned in parallel.
SLOW_S = 5.0


def planned_in_order(names: list[str], plan_alone: Callable[[list[str]], object], workers: int, *,
                     slow_s: float | None = None, report: Callable[[str], None] | None = None):
    """Yield `names` in order. After the caller spent more than `slow_s` (default SLOW_S) on
    one, run `plan_alone([name])` for each name left in `workers` processes before yielding the
    next (once); `plan_alone` must pickle (a module-level function, or a partial of one).
    `report(line)` hears what happens (default: a line on stderr)."""
    report = report or _to_stderr
    slow_s = SLOW_S if slow_s is None else slow_s
    names = list(names)
    for index, name in enumerate(names):
        started = time.monotonic()
        yield name
        took = time.monotonic() - started
        left = names[index + 1:]
        if took > slow_s and workers > 1 and len(left) > 1:
            report(f"verify: planning {name} took {took:.0f} s (its WGSL was not kept on this machine yet); "
                   f"making the WGSL of the {len(left)} kernels left in {min(workers, len(left))} processes at once")
            _make_in_parallel(left, plan_alone, min(workers, len(left)), report)
            slow_s = float("inf")


def _make_in_parallel(names: list[str], plan_alone, workers: int, report) -> None:
    """Each kernel planned alone in a pool of spawned processes; every failure is left to the
    planner, which meets it again and reports it (a crashed pool process too)."""
    started = time.monotonic()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                               initializer=_use_path, initargs=(list(sys.path),))
    try:
        futures = {pool.submit(_plan_one, plan_alone, name): name for name in names}
        for done, future in enumerate(as_completed(futures), 1):
            try:
                seconds = future.result()
                report(f"verify:   [{done}/{len(names)}] {futures[future]}: {seconds:.1f} s")
            except Exception as exc:  # noqa: BLE001 (the planner meets it again and says what it is)
                report(f"verify:   [{done}/{len(names)}] {futures[future]}: left to the planner "
                       f"({type(exc).__name__})")
    except BaseException:
        _stop(pool)  # an interrupt must not wait for a capture that takes minutes
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    report(f"verify: made in {time.monotonic() - started:.0f} s; planning goes on")


def _use_path(path: list[str]) -> None:
    """Runs first in each pool process: the planning process's import path (a kernel's package
    may have been found through a path added while the gate started)."""
    sys.path[:] = path


def _plan_one(plan_alone, name: str) -> float:
    """Runs in a pool process: the kernel planned alone, which keeps its WGSL on disk."""
    started = time.monotonic()
    plan_alone([name])
    return time.monotonic() - started


def _stop(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's processes (their Node processes die with them: verify.gpu.dawn.process)."""
    terminate = getattr(pool, "terminate_workers", None)  # Python 3.14
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        process.kill()


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
