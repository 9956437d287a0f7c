"""The kernel's own memory accesses, logged and analysed: races, out-of-bounds accesses and reads
of uninitialised workgroup memory, whatever the adapter's schedule (docs/instrumentation.md).

The output-based checks see a race only where the adapter happens to interleave the racing
invocations, and an out-of-bounds write only where it lands in the guard bytes; this check sees
every access of the dispatch. A sanitized case costs hundreds of times a plain one (every access
is logged), so it draws the smallest cases of the kernel's strategy (the quick profile's sizes)
and at most MAX_EXAMPLES of them: a race or a stray index shows on small cases as on big ones.
"""

from __future__ import annotations

from verify.checks.base import Check
from verify.checks.outcome import Outcome
from verify.errors import FailureKind
from verify.profiles import get_profile
from verify.results.thoroughness import Thoroughness

#: Examples of a sanitize check per config, whatever the run asks for.
MAX_EXAMPLES = 6
#: The largest access log asked of the device, in bytes (granted up to the adapter's own limit):
#: 1 GiB holds about 44 million accesses.
LOG_BINDING_BYTES = 1 << 30


class SanitizeCheck(Check):
    name = "sanitize"
    #: the access log of the module: no output is judged (verify.results.thoroughness).
    thoroughness = Thoroughness.STRUCTURAL
    doc = ("every workgroup and storage access logged by the kernel itself: no data race, no out-of-bounds "
           "access (even one the driver drops), no read of unwritten workgroup memory")
    max_examples = MAX_EXAMPLES
    #: A sanitized example costs 13-169 times a plain one on lavapipe and 100-160 times on an
    #: NVIDIA H200 (benchmarks/bench_instrument.py), and the first also compiles the instrumented
    #: program (11 s for TVM's prefill on the H200): such a job goes before the plain checks.
    example_cost = 50.0
    own_module = True

    def device_limits(self, kernel, config):
        """The kernel's limits with one more storage buffer per shader stage: the sanitizer binds its
        access log as one (verify.instrument.devices). A kernel that already uses the ten TVM's web
        runtime asks for (webgpu.ts L121; TVM's prefill kernels) still runs sanitized on an adapter
        that has eleven; where it has not, the sanitizing device says so (a SetupError)."""
        from verify.instrument.devices import with_one_more_storage_binding

        return with_one_more_storage_binding(kernel.limits)

    def instrument_limits(self, kernel, config):
        """Room for the access log: its size is bounded by the largest storage binding the device
        allows (WebGPU's default, 128 MiB, holds about 5.6 million accesses), and a dispatch of many
        heads logs more than that even on the smallest cases (TVM's prefill at 32 query heads: 7.2
        million), which is then run again in passes of whole workgroups, a dispatch each
        (verify.instrument.passes). So the log asks for bindings up to LOG_BINDING_BYTES, granted
        where the adapter has them (a discrete GPU: 2 GiB and more; lavapipe: 128 MiB, as before)."""
        return {name: max(kernel.limits.get(name, 0), LOG_BINDING_BYTES)
                for name in ("max-storage-buffer-binding-size", "max-buffer-size")}

    def strategy(self, ctx):
        return ctx.kernel.cases(ctx.config, get_profile("quick"))

    def corners(self, ctx):
        """The kernel's first two corners (its smallest: a race or a stray index shows on small
        cases as on big ones, and each sanitized case costs tens of plain ones)."""
        return list(ctx.kernel.corners(ctx.config))[:2]

    def run_example(self, ctx, case):
        """One case sanitized. A dispatch whose log does not fit the device's largest binding is run
        in passes (verify.instrument.passes); where even that cannot analyse it (one workgroup alone
        logs more), that is verify's limit: the example raises SanitizerLogLimit, which the runner
        records as an ERROR naming it, never a FAIL of the kernel. It is raised afresh here, so its
        traceback holds none of the kernel's frames (the kernel's launch is not to blame), and once
        raised, every later example of the check raises it at once, as an infrastructure error ends
        a check's examples: Hypothesis then shrinks without running a dispatch."""
        from verify.instrument import SanitizingDevice
        from verify.instrument.passes import SanitizerLogLimit

        device = ctx.cached("sanitizing device", lambda: SanitizingDevice(ctx.device))
        limit = ctx.cached("sanitizer's limit", list)
        if not limit:
            try:
                ctx.launch(case, device=device)
            except SanitizerLogLimit as exc:
                device.take_report()  # the case's earlier dispatches, if any: no verdict on them either
                limit.append(str(exc))
        if limit:
            raise SanitizerLogLimit(limit[0]) from None
        report = device.take_report()
        reasons = report.messages()
        features = dict(ctx.kernel.features(case), accesses=report.accesses)
        return Outcome(report.clean, 0.0 if report.clean else float("inf"), [], reasons, features, case,
                       FailureKind.SANITIZER)
