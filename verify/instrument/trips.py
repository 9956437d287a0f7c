"""Loop trips, counted by the kernel itself: how many times each loop's body ran in one execution
of the loop, and how many loop trips one invocation made in all.

Why the total: lavapipe (Mesa's llvmpipe) ends every loop of an invocation once the invocation's
loops together have made 65535 trips (docs/findings.md §9). A kernel that needs more computes a
wrong result there without being wrong; where the adapter's `loop-trip-count` probe deviates, a
failing case is run once more with its loops counted, and a case whose invocations reach the cap
is the driver's limit, not the kernel's bug (verify.checks.loop_cap). The same counts measure how
close the gate's cases come to the cap and to the sanitizer's loop bound (benchmarks/loop_trips.py).

`count_trips(wgsl)` rewrites every `loop`, `for` and `while` to count: a counter set to zero
where the loop starts and one more at the top of each trip, kept per loop as the largest any
invocation reached (atomicMax into an added storage buffer), and a private counter of every
trip of the invocation, kept the same way in the buffer's last word. `TripCountingDevice(device)`
runs every kernel so and keeps the counts of its last run and the largest so far.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verify.gpu.buffers import InOut
from verify.instrument.devices import InstrumentedPipeline, require_one_more_storage_binding
from verify.instrument.rewrite import Rewriter
from verify.instrument.walk import LOOPS, functions, loop_body_start
from verify.wgsl import blank_comments, parse, read_interface
from verify.wgsl.declarations import Declarations
from verify.wgsl.interface import interface_of

_PREFIX = "_trips_"
_BUFFER = "_trips_max"


@dataclass(frozen=True)
class CountedLoop:
    """One loop of a module: its number (its word in the counts), line and source text."""

    number: int
    line: int
    text: str


@dataclass(frozen=True)
class Counted:
    """A module rewritten to count its loops' trips (`wgsl`), and the loops it counts."""

    wgsl: str
    loops: tuple[CountedLoop, ...]


@dataclass(frozen=True)
class TripCounts:
    """What one run counted: the most trips one execution of each loop made (`per_loop`, in the
    module's loop order) and the most trips of all loops one invocation made (`invocation`)."""

    per_loop: tuple[int, ...]
    invocation: int

    @property
    def largest_loop(self) -> int:
        return max(self.per_loop, default=0)


def count_trips(wgsl: str) -> Counted:
    """`wgsl` with every loop counting its trips into an added storage buffer `_trips_max` (the
    binding after the module's last of group 0): word k is the most trips one execution of loop k
    made in any invocation, the last word the most trips of all loops of one invocation together."""
    module = parse(wgsl)
    code = blank_comments(module.source)
    nodes = [node for function in functions(module) for node in function.iter_subtrees_topdown()
             if node.data in LOOPS]
    total = len(nodes)
    rewriter = Rewriter(module)
    loops = []
    for k, node in enumerate(nodes):
        loops.append(CountedLoop(k, node.meta.line, module.line(node.meta.line).strip()))
        rewriter.insert(node.meta.start_pos, f"var {_PREFIX}{k}: u32 = 0u; ")
        rewriter.insert(loop_body_start(node, code),
                        f" {_PREFIX}{k} += 1u; atomicMax(&{_BUFFER}[{k}], {_PREFIX}{k});"
                        f" {_PREFIX}all += 1u; atomicMax(&{_BUFFER}[{total}], {_PREFIX}all);")
    bindings = [b.binding for b in interface_of(module, Declarations(module)).bindings if b.group == 0]
    binding = 1 + max(bindings, default=-1)
    text = rewriter.text()
    text += (f"\n@group(0) @binding({binding}) var<storage, read_write> {_BUFFER}: array<atomic<u32>, "
             f"{total + 1}>;\nvar<private> {_PREFIX}all: u32;\n")
    return Counted(text, tuple(loops))


class TripCountingDevice:
    """A device on which every kernel runs with its loops counted (count_trips).

    Use it in place of a Device, through the kernel's own launch; after a run, `last` holds that
    run's counts (per module run, the largest invocation of the launch's every dispatch in
    `launch_invocation`, which `reset()` sets back to 0), and `largest` / `largest_invocation`
    the most any run reached, per (module sha256, loop number) and per module. The kernel's
    outputs are its own: the counters write only the added buffer."""

    def __init__(self, device):
        self._device = device
        self._counted: dict[tuple, tuple[InstrumentedPipeline, Counted]] = {}
        self.loops: dict[str, tuple[CountedLoop, ...]] = {}
        self.largest: dict[tuple[str, int], int] = {}
        self.largest_invocation: dict[str, int] = {}
        self.last: TripCounts | None = None
        self.launch_invocation = 0

    def __getattr__(self, name):
        return getattr(self._device, name)

    def reset(self) -> None:
        """Start a new launch's `launch_invocation` (the runs of one case)."""
        self.last, self.launch_invocation = None, 0

    def pipeline(self, wgsl: str, entry_point: str | None = None):
        key = (wgsl, entry_point)
        if key not in self._counted:
            interface = read_interface(wgsl)
            require_one_more_storage_binding(self._device, interface, "counting loop trips")
            counted = count_trips(wgsl)
            pipeline = InstrumentedPipeline(wgsl, interface, self._device.pipeline(counted.wgsl, entry_point))
            self._counted[key] = (pipeline, counted)
            self.loops[pipeline.sha256] = counted.loops
        return self._counted[key][0]

    def run(self, pipeline, resources: dict, workgroups, *, timestamps: bool = False):
        if not isinstance(pipeline, InstrumentedPipeline):
            return self._device.run(pipeline, resources, workgroups, timestamps=timestamps)
        loops = self.loops[pipeline.sha256]
        added = {_BUFFER: InOut(np.zeros(len(loops) + 1, dtype=np.uint32))}
        run = self._device.run(pipeline.instrumented, {**resources, **added}, workgroups, timestamps=timestamps)
        words = run.outputs.pop(_BUFFER)
        run.guard_intact.pop(_BUFFER, None)
        counts = TripCounts(tuple(int(w) for w in words[:-1]), int(words[-1]))
        for loop in loops:
            key = (pipeline.sha256, loop.number)
            self.largest[key] = max(self.largest.get(key, 0), counts.per_loop[loop.number])
        self.largest_invocation[pipeline.sha256] = max(self.largest_invocation.get(pipeline.sha256, 0),
                                                       counts.invocation)
        self.last = counts
        self.launch_invocation = max(self.launch_invocation, counts.invocation)
        return run
