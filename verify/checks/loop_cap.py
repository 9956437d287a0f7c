"""A failing case past the driver's loop limit is the driver's, shown by the case's own loop trips.

lavapipe (Mesa's llvmpipe) ends the loops of an invocation once they have made 65535 trips
together (docs/findings.md §9, finding `lavapipe-loop-cap`, probe `loop-trip-count`): a kernel
whose loops need more computes a wrong result there without being wrong (TVM's prefill over a few
thousand context rows does). Before, such a case failed the check and blamed the kernel.

Where the adapter's `loop-trip-count` probe deviates, every failing example is run once more
with its loops counted by the kernel itself (verify.instrument.trips), on a device of the same
adapter with one more storage binding for the counts: not one a kernel's documented finding
accounts for (it stays that finding's, and a known finding's many failing examples cost no count).
Shrinking's failing candidates are counted too: Hypothesis's simplest case is not the one of fewest
trips (a strategy's first branch may be its longest), and one past the cap is not the failure
being shrunk. An example whose invocations reach the cap is not
evidence about the kernel: the check keeps it aside, as it keeps a documented finding's cases, and
goes on judging the rest, so a failure under the cap still fails the kernel. A check whose every
failure reached the cap is KNOWN, the driver's finding, with the trips counted as its evidence.

Counting is one more run of a case that already failed, and only on adapters where the probe
deviates; on a GPU nothing changes. The counted module is capped by the same driver, so its count
stops near the cap: what matters is only whether it reaches it. Unrolled loops are counted here but
not by the driver, so a count at the cap says the case may have been cut, and one under it that it
was not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from verify.checks.context import CheckContext
from verify.checks.outcome import StageTimer
from verify.errors import KernelError, SetupError
from verify.gpu.device import ShaderCompileError
from verify.results.record import KnownFinding
from verify.wgsl.parser import WgslSyntaxError
from verify.wgsl.types import UnsupportedWgsl

if TYPE_CHECKING:
    from verify.gpu.device import Device

#: The semantics probe that shows the cap (verify.gpu.semantics) and the finding it rests on.
PROBE = "loop-trip-count"
FINDING = "lavapipe-loop-cap"
#: Trips an invocation's loops make together before llvmpipe ends them: Mesa's
#: LP_MAX_TGSI_LOOP_ITERATIONS (src/gallium/auxiliary/gallivm/lp_bld_limits.h), what the probe's
#: loop of 70000 trips runs there.
CAP = 65535


def counting_limits(limits: dict) -> dict:
    """`limits` with room for the counts' storage binding, as the sanitizer's log asks."""
    from verify.instrument.devices import with_one_more_storage_binding

    return with_one_more_storage_binding(limits)


@dataclass
class LoopCap:
    """Whether a failing example of one check ran past the driver's loop cap.

    `ctx` is the check's context; `open_counting` gives a device of the same adapter and
    implementation, with `counting_limits`, that counts loop trips (already at the check's
    subgroup width); it is opened at the first count. `trips(case)` runs the case's example
    once more so and says the most trips one invocation made in all (None where they could not
    be counted: the reason is left in `not_counted`)."""

    ctx: CheckContext
    open_counting: Callable[[], Device]
    not_counted: str = ""
    _device: Device | None = None

    def trips(self, case, check) -> int | None:
        self.not_counted = ""
        try:
            if self._device is None:
                self._device = self.open_counting()
            device = self._device
            counter = _counter(device)
            counter.reset()
            counted = replace(self.ctx, device=device, timer=StageTimer(), notes=[], _cache={})
            check.run_example(counted, case)
        except (SetupError, KernelError, ShaderCompileError, UnsupportedWgsl, WgslSyntaxError) as exc:
            self.not_counted = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            return None
        return counter.launch_invocation

    def reached(self, case, check) -> int | None:
        """The trips counted where they reach the cap, else None (under it, or not counted)."""
        trips = self.trips(case, check)
        return trips if trips is not None and trips >= CAP else None


def _counter(device):
    """The TripCountingDevice under `device` (an emulated width wraps it)."""
    from verify.instrument.trips import TripCountingDevice

    while not isinstance(device, TripCountingDevice):
        device = device.wrapped
    return device


def finding(trips: int, count: int) -> KnownFinding:
    """The driver's finding for a check whose failures all reached the cap, with the evidence."""
    return KnownFinding(
        text=(f"lavapipe ends every loop of an invocation after {CAP} iterations in all (docs/findings.md §9; "
              f"the driver (Mesa (llvmpipe))'s): {count} failing example(s) ran past it, the first with up to "
              f"{trips} loop trips in one invocation (counted by the kernel itself), so their results say "
              "nothing of the kernel; run such cases on a GPU"),
        finding_id=FINDING)


def note(count: int, trips: int) -> str:
    """The record's note for failing examples kept aside as past the cap."""
    return (f"{count} failing example(s) reached lavapipe's loop cap ({CAP} trips an invocation, the first "
            f"counted {trips}) and were not judged: the driver's limit (docs/findings.md §9)")
