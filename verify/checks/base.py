"""A check: a property of a kernel, tested over the cases its strategy draws.

A check says what it needs of the runtime through attributes and hooks, so the runtime (plan,
worker) never names a check:

- `device_limits(kernel, config)`: the limits the device is opened with (default: the kernel's);
- `instrument_limits(kernel, config)`: more limits the check's own instrumentation asks for,
  granted up to the adapter's own and never part of a reproduction (default: none);
- `preflight(ctx)`: a verdict before any case is drawn (a SKIP when what the check needs is
  missing here, a DIVERGENCE when a second compiler refuses the WGSL), or None to run;
- `needs_other_implementation`: the check compares two WebGPU implementations; the gate plans it
  only where it runs on several, and the worker gives its context the second one;
- `on_every_implementation` / `at_every_subgroup_width`: the gate runs it again on each further
  implementation and at each emulated subgroup width of the profile.
- `gate_scales`: the profiles whose gate plans it at all (the `toggles` check leaves out `quick`).
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.checks.context import CheckContext
from verify.checks.outcome import Outcome
from verify.results.record import FailureKind, Verdict
from verify.results.thoroughness import Thoroughness


@dataclass(frozen=True)
class Preflight:
    """A check's verdict before any case: why it cannot run here (SKIP), or a failure it finds
    without running (DIVERGENCE, FAIL), with the kind of failure."""

    verdict: Verdict
    reason: str
    kind: FailureKind | None = None


class Check:
    """A property of a kernel, tested over drawn cases: subclass it, give it a `name` and a one-line
    `doc`, implement `run_example(ctx, case) -> Outcome` (and `strategy(ctx)` to draw other cases
    than the kernel's own), and set the hooks above that apply. Register it under the entry-point
    group `verify.checks` and list its name in a kernel's `checks`."""

    name: str = ""
    #: One line for `verify list` and the report.
    doc: str = ""
    #: At most this many examples per config, whatever the run asks for (None: no cap), for a
    #: check whose examples are costly and small cases suffice.
    max_examples: int | None = None
    #: What one example costs against one plain launch and reference of the same case: the plan
    #: starts costly jobs first where no earlier run gives their durations (verify.plan.longest_first).
    example_cost: float = 1.0
    #: The check compares the kernel on two WebGPU implementations (CheckContext.other_implementation).
    needs_other_implementation: bool = False
    #: The gate also runs this check on each further implementation (the first runs every check).
    on_every_implementation: bool = False
    #: The gate also runs this check at each subgroup width of the profile, emulated.
    at_every_subgroup_width: bool = False
    #: The check launches a module of its own making instead of the kernel's (the sanitizer's
    #: instrumented program), so its first example compiles pipelines no other check of the
    #: config shares (verify.plan.compile_group).
    own_module: bool = False
    #: Something a worker process opens for this check that costs seconds and then stays open for
    #: the worker's next check of the kind (the toggles check's three Dawn devices, each a Node
    #: process), named; None: nothing such. The gate hands these checks to a few workers, not to
    #: every one (verify.session._JobPicker).
    worker_state: str | None = None
    #: The profile scales (verify.profiles.SCALES) whose gate plans this check; None: every one. A
    #: check that compiles the kernel again on devices of its own leaves the `quick` smoke test out;
    #: `verify check --checks NAME` runs it under any profile.
    gate_scales: tuple[str, ...] | None = None
    #: What a PASS of this check rests on (verify.results.thoroughness): NUMERIC where its examples
    #: are judged against the float64 reference under a budget, the default, as `ctx.judge` does;
    #: a check comparing two runs says RELATION, one reading the module alone STRUCTURAL. A record
    #: that drew no case, was skipped or errored says less (thoroughness.judged).
    thoroughness: Thoroughness = Thoroughness.NUMERIC

    def applies(self, kernel) -> bool:
        return self.name in kernel.checks

    def code_modules(self) -> tuple[str, ...]:
        """The modules whose code decides this check's verdict, besides the kernel's (for reusing
        a passing record whose code is unchanged: verify.results.reuse)."""
        return (type(self).__module__,)

    def other_wgsl(self, kernel, config: dict) -> tuple[str, ...]:
        """The WGSL of other kernels this check launches beside the kernel's own (a differential
        partner, split_merge's merge): their text decides the verdict as the kernel's own does, so
        a passing record is reused only while it is unchanged too (verify.results.reuse).
        Default: none."""
        return ()

    def device_limits(self, kernel, config: dict) -> dict:
        """The device limits to hold the kernel to while this check runs (default: the kernel's)."""
        return dict(kernel.limits)

    def instrument_limits(self, kernel, config: dict) -> dict:
        """Limits the check's own instrumentation needs beyond the kernel's (e.g. the sanitizer's log
        binding), asked of the device while the check runs but not written into a reproduction,
        which runs the kernel alone (default: none)."""
        return {}

    def opened_limits(self, kernel, config: dict) -> dict:
        """The limits a worker opens this check's device with: device_limits and, over them,
        instrument_limits (verify.worker's device cache is keyed by them; the gate's job picker
        prefers a worker that has such a device open)."""
        return dict(self.device_limits(kernel, config), **self.instrument_limits(kernel, config))

    def preflight(self, ctx: CheckContext) -> Preflight | None:
        """A verdict before any case is drawn, or None to run the check (default). Called after the
        kernel's WGSL compiled on the check's device."""
        return None

    def strategy(self, ctx: CheckContext):
        return ctx.kernel.cases(ctx.config, ctx.profile)

    def corners(self, ctx: CheckContext) -> list:
        """The cases this check runs first on every seed, before any drawn at random: the
        kernel's corners (Kernel.corners) where the check draws the kernel's own cases; none where
        it draws cases of its own (a different strategy, whose cases may differ in kind)."""
        if type(self).strategy is not Check.strategy:
            return []
        return list(ctx.kernel.corners(ctx.config))

    def run_example(self, ctx: CheckContext, case) -> Outcome:
        raise NotImplementedError


def bitwise_differences(a: dict, b: dict) -> list[str]:
    """Names and counts of outputs that differ bit for bit between two launches."""
    import numpy as np

    reasons = []
    for name in a:
        x, y = np.ascontiguousarray(a[name]), np.ascontiguousarray(b[name])
        if x.shape != y.shape:
            reasons.append(f"{name}: shape {x.shape} vs {y.shape}")
            continue
        raw_x = x.view(np.uint8).reshape(x.size, -1) if x.size else x
        raw_y = y.view(np.uint8).reshape(y.size, -1) if y.size else y
        differ = int(np.any(raw_x != raw_y, axis=-1).sum()) if x.size else 0
        if differ:
            reasons.append(f"{name}: {differ}/{x.size} elements differ bit for bit")
    return reasons
