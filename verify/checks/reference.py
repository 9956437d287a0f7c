"""The kernel against its float64 reference, within the derived budget.

On a user's WGSL file (CheckContext.user_wgsl) the check also runs the sanitizer's bounds pass
(verify.instrument, `bounds_only`) on its first example: the outputs and the guard bytes after
each buffer cannot show a write that lands far past a buffer (the driver drops it, or it corrupts
memory no one reads) or a loop that never ends (the compiler may remove it where it has no side
effect, and a driver may end it), and either passes a plain run. The kernel's own WGSL is
sanitized in full by the `sanitize` check; a user's file may run with `--checks reference` alone,
on any implementation, so this check does not leave those defects to another.
"""

from __future__ import annotations

from verify.checks.base import Check
from verify.checks.outcome import Outcome
from verify.errors import FailureKind, SetupError, VerifyLimit
from verify.gpu.device import ShaderCompileError
from verify.wgsl import WgslSyntaxError
from verify.wgsl.types import UnsupportedWgsl


class ReferenceCheck(Check):
    name = "reference"
    doc = ("outputs within the derived error budget of the float64 reference; no NaN, no write past the end "
           "(on a user's WGSL, not even far past it), no loop that never ends")
    on_every_implementation = True
    at_every_subgroup_width = True

    def run_example(self, ctx, case):
        if ctx.user_wgsl:
            failed = ctx.cached("bounds pass", lambda: BoundsPass(ctx)).run(ctx, case)
            if failed is not None:
                return failed
        return ctx.judge(case, ctx.launch(case))


class BoundsPass:
    """The sanitizer's bounds pass over a user's WGSL: out-of-bounds writes and loops past the
    sanitizer's bound fail the example; out-of-bounds reads (WebGPU keeps them inside the buffer
    or reads zero, so the outputs show what they did) and a truncated log are notes.

    It runs on the first example. Once it fails, it runs on every later example too: Hypothesis
    shrinks the failure and replays the case it settles on, and a case that failed must fail
    again when replayed, or the run would read as nondeterministic. Where the sanitizer cannot
    instrument the WGSL, or the device cannot run the instrumented module, the pass is skipped
    with a note: a correct kernel is never failed for the instrumentation's limits.
    """

    def __init__(self, ctx):
        from verify.instrument import SanitizingDevice

        self.device = SanitizingDevice(ctx.device, bounds_only=True)
        self.state = "first"  # "first" | "clean" (found nothing on the first example) | "failing"

    def run(self, ctx, case) -> Outcome | None:
        """The failing outcome of `case`, or None (the pass found nothing, or does not run)."""
        if self.state == "clean":
            return None
        first = self.state == "first"  # notes come from the first example only, not from each shrink step
        from verify.instrument import OutOfBounds, UnboundedLoop
        from verify.instrument.findings import LogTruncated

        try:
            ctx.launch(case, device=self.device)
        except (UnsupportedWgsl, WgslSyntaxError, SetupError, VerifyLimit, ShaderCompileError) as exc:
            self.device.take_report()
            if first:
                self.state = "clean"
                ctx.note(f"the sanitizer's bounds pass did not run on this WGSL, so writes far past a buffer and "
                         f"loops that never end went unchecked: {type(exc).__name__}: {exc}")
            return None
        report = self.device.take_report()
        loops = report.of_type(UnboundedLoop)
        writes = [f for f in report.of_type(OutOfBounds) if f.access.site.kind.writes]
        reads = [f for f in report.of_type(OutOfBounds) if not f.access.site.kind.writes]
        if first:
            for finding in reads + report.of_type(LogTruncated):
                ctx.note(f"bounds pass: {finding.message()}")
        if not loops and not writes:
            if first:
                self.state = "clean"
            return None
        self.state = "failing"
        kind = FailureKind.UNBOUNDED_LOOP if loops else FailureKind.WRITE_OUT_OF_BOUNDS
        return Outcome(False, float("inf"), [], [f.message() for f in loops + writes], ctx.kernel.features(case),
                       case, kind)
