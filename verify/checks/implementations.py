"""The same WGSL under two WebGPU implementations, as browsers ship them: Naga (wgpu, Firefox) and
Tint (Dawn, Chrome and Edge), on the same case.

Each run is within its budget of the float64 reference, so the two outputs may differ by at
most twice the budget, plus the width of an output's legal interval where it has one (a
quantized code may legally round either way, and the two compilers may pick different legal
values); elements that must be bit-exact must match bit for bit. A kernel that compiles under
one implementation but not the other is a compile divergence (Verdict.DIVERGENCE), reported
with both compilers' messages by the check's preflight, before any case is drawn.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.metrics import compare
from verify.checks.base import Check, Preflight
from verify.checks.outcome import Outcome
from verify.errors import FailureKind, SetupError
from verify.gpu.device import ShaderCompileError
from verify.results.record import Verdict
from verify.results.thoroughness import Thoroughness


def joint_expected(own: Expected, other_output) -> Expected:
    """What `own`'s output may be given the other implementation's output of the same case."""
    with np.errstate(invalid="ignore"):
        width = np.where(own.hi == own.lo, 0.0, np.abs(own.hi - own.lo))  # -inf == -inf: a point
    other = np.asarray(other_output, np.float64)
    joint = Expected(own.name, other - width, other + width, np.asarray(own.budget, np.float64) * 2.0, own.dtype,
                     own.exact)
    return own.keeping_conventions(joint)


class ImplementationsCheck(Check):
    name = "implementations"
    #: the same WGSL on two WebGPU implementations compared with each other (verify.results.thoroughness).
    thoroughness = Thoroughness.RELATION
    doc = ("the same WGSL compiled by two WebGPU implementations (Naga in wgpu, Tint in Dawn) gives, on the same "
           "case, outputs within their joint budget (bit-exact where the contract demands it)")
    needs_other_implementation = True

    def preflight(self, ctx):
        """SKIP where the second implementation is missing here or lacks a feature the config
        needs; DIVERGENCE where its compiler refuses the WGSL the first one compiled."""
        try:
            other = ctx.cached("other implementation", ctx.other_implementation)
        except SetupError as exc:
            return Preflight(Verdict.SKIP, f"no second WebGPU implementation here ({exc})")
        missing = other.missing(ctx.kernel.requirements(ctx.config))
        if missing:
            return Preflight(Verdict.SKIP, f"the second WebGPU implementation ({other.info.implementation}) lacks "
                             f"{', '.join(missing)}")
        try:
            for module in ctx.kernel.modules(ctx.wgsl):
                other.pipeline(module)
        except ShaderCompileError as exc:
            return Preflight(Verdict.DIVERGENCE,
                             divergence(refused_by=other.info, refusal=exc, compiled_by=ctx.device.info),
                             FailureKind.COMPILE_DIVERGENCE)
        return None

    def run_example(self, ctx, case):
        other = ctx.cached("other implementation", ctx.other_implementation)
        mine = ctx.launch(case).outputs
        theirs = ctx.launch(case, device=other).outputs
        with ctx.timer.stage("reference"):
            expected = ctx.kernel.expected(ctx.config, case)
        with ctx.timer.stage("compare"):
            metrics = [compare(mine[e.name], joint_expected(e, theirs[e.name])) for e in expected]
        score = max((m.max_err_over_budget for m in metrics), default=0.0)
        features = dict(ctx.kernel.features(case))
        return Outcome(all(m.passed for m in metrics), score, metrics, [], features, case)


def divergence(*, refused_by, refusal: ShaderCompileError, compiled_by) -> str:
    """The reason of a compile divergence: one implementation's compiler refuses what the other's
    compiles (AdapterInfo of each side); browsers ship both, so the kernel fails on one of them."""
    from verify.gpu.implementations import implementation

    refuser, compiler = implementation(refused_by.implementation), implementation(compiled_by.implementation)
    return (f"compile divergence: the WGSL compiles under {compiler.compiler} ({compiler.name}) but not under "
            f"{refuser.compiler} ({refuser.name}); browsers ship both, so the kernel does not run on one of them.\n"
            f"{refuser.compiler}: {refusal}\n{compiler.compiler}: compiles ({compiled_by.label})")
