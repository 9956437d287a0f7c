"""The same WGSL under the two WebGPU implementations browsers use: Naga (wgpu, Firefox) and Tint
(Dawn, Chrome and Edge), on the same case.

Each run is within its budget of the float64 reference, so the two outputs may differ by at
most twice the budget, plus the width of an output's legal interval where it has one (a
quantized code may legally round either way, and the two compilers may pick different legal
values); elements that must be bit-exact must match bit for bit. A kernel that compiles under
one implementation but not the other is a compile divergence (Verdict.DIVERGENCE), reported
with both compilers' messages by the worker before any case is drawn.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.metrics import compare
from verify.checks import register
from verify.checks.base import Check
from verify.checks.outcome import Outcome


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
    doc = ("the same WGSL compiled by Naga (wgpu) and Tint (Dawn) gives, on the same case, outputs within "
           "their joint budget (bit-exact where the contract demands it)")

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


register(ImplementationsCheck())
