"""Planning that meets slow WGSL makes the rest of the configs' WGSL in parallel first.

A plan needs the WGSL of every (kernel, config) it runs: its identity hashes the text, and a
config whose WGSL cannot be made is the kernel's SKIP or ERROR record (verify.plan). Most kernels
make their WGSL in microseconds, but some run someone else's compiler to get it: ONNX Runtime's
programs are captured by running its session (a few seconds each, minutes for a flash-attention
program that LLVM compiles slowly on a CPU driver whose shader cache is cold), TVM's are built by
apache-tvm. Both keep what they made on disk (verify.sources.ort.dp4a.captures,
verify.sources.tvm.build), so this cost is paid once per machine, but on a fresh machine the gate
paid it one config after another in its planning process, every other core idle, for over nine
minutes on two cores.

`made_in_order` hands the planner the (kernel, config) items one by one and times what the
planner does with each. Once one took longer than `SLOW_S` (far above a config whose WGSL is
kept: a millisecond, a second for the first ORT config, which starts ORT's Node process), the
WGSL of the items not yet handed out is first made in `workers` processes at once (each call
`kernel.wgsl(config)`, which keeps it on disk); the planner then finds every one ready. What the
pool made is never used, and nothing it fails at is reported by it: the planner makes the same
calls afterwards and reports what fails, exactly as without a pool, so the plan (and every
verdict) is the same whether a pool ran or not.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from multiprocessing import get_context
from typing import TypeVar

from verify.kernels.registry import get_kernel

#: Seconds making one config's WGSL may take before the WGSL of the configs left is made in parallel.
SLOW_S = 5.0

_Item = TypeVar("_Item")


@dataclass(frozen=True)
class KernelConfig:
    """Whose WGSL an item is: the kernel's import path (for the pool), its name (for the lines
    planning prints) and the config."""

    kernel_ref: str
    name: str
    config: dict

    def __str__(self) -> str:
        return f"{self.name} [{' '.join(f'{key}={value}' for key, value in self.config.items())}]"


def made_in_order(items: list[_Item], kernel_config: Callable[[_Item], KernelConfig], workers: int, *,
                  slow_s: float | None = None, report: Callable[[str], None] | None = None) -> Iterator[_Item]:
    """Yield `items` in order. After the caller spent more than `slow_s` (default SLOW_S) on one,
    make the WGSL of the items left (`kernel_config(item)` says whose) in `workers` processes
    before yielding the next (once). `report(line)` hears what happens (default: a line on
    stderr)."""
    report = report or _to_stderr
    slow_s = SLOW_S if slow_s is None else slow_s
    items = list(items)
    for index, item in enumerate(items):
        started = time.monotonic()
        yield item
        took = time.monotonic() - started
        if took > slow_s and workers > 1 and len(items) - index > 2:
            left = [kernel_config(later) for later in items[index + 1:]]
            report(f"verify: the WGSL of {kernel_config(item)} took {took:.0f} s to make (not kept on this machine "
                   f"yet?); making the {len(left)} configs left in {min(workers, len(left))} processes at once")
            _make_in_parallel(left, min(workers, len(left)), report)
            slow_s = float("inf")


def _make_in_parallel(left: list[KernelConfig], workers: int, report) -> None:
    """Each (kernel, config)'s WGSL made in a pool of spawned processes; every failure is left to
    the planner, which meets it again and reports it (a crashed pool process too)."""
    started = time.monotonic()
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                               initializer=_use_path, initargs=(list(sys.path),))
    try:
        futures = {pool.submit(_make, item.kernel_ref, item.config): item for item in left}
        for done, future in enumerate(as_completed(futures), 1):
            try:
                said = f"{future.result():.1f} s"
            except Exception as exc:  # noqa: BLE001 (the planner meets it again and says what it is)
                said = f"left to the planner ({type(exc).__name__})"
            report(f"verify:   [{done}/{len(left)}] {futures[future]}: {said}")
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


def _make(kernel: str, config: dict) -> float:
    """Runs in a pool process: the config's WGSL, which the kernel keeps on disk."""
    started = time.monotonic()
    get_kernel(kernel).wgsl(config)
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
