"""Differential check: two implementations of one contract on identical cases.

Each is within its own budget of the same exact value, so they may differ by at most the sum
of the two budgets; elements that must be bit-exact (empty contexts) must match bit for bit,
and elements under a kernel's own convention (Expected.convention) are held to its contract.
"""

from __future__ import annotations

from verify.budgets.expected import Expected
from verify.budgets.metrics import compare
from verify.checks.base import Check
from verify.checks.outcome import Outcome
from verify.results.thoroughness import Thoroughness


class DifferentialCheck(Check):
    name = "differential"
    #: compared with a second implementation of the contract, not with the reference (verify.results.thoroughness).
    thoroughness = Thoroughness.RELATION
    doc = "agrees with a second implementation of the same contract within their joint budget"

    def device_limits(self, kernel, config):
        """The kernel's limits and its partner's (per key, the larger): both run on one device, and
        WebGPU refuses a pipeline beyond the device's limits (Dawn enforces it; wgpu 0.32 does not
        check workgroup storage)."""
        from verify.kernels.registry import get_kernel

        if not kernel.differential_partner:
            return dict(kernel.limits)
        partner = get_kernel(kernel.differential_partner).limits
        mine = kernel.limits
        return {key: max(v for v in (mine.get(key), partner.get(key)) if v is not None)
                for key in set(mine) | set(partner)}

    def other_wgsl(self, kernel, config):
        from verify.kernels.registry import get_kernel

        if not kernel.differential_partner:
            return ()
        partner = get_kernel(kernel.differential_partner)
        return (partner.wgsl(partner.config(config)),)

    def run_example(self, ctx, case):
        from verify.kernels.registry import get_kernel

        partner = get_kernel(ctx.kernel.differential_partner)
        mine = ctx.launch(case).outputs
        theirs = ctx.launch(case, kernel=partner, wgsl=partner.wgsl(partner.config(ctx.config))).outputs
        with ctx.timer.stage("reference"):
            budgets_mine = {e.name: e for e in ctx.kernel.expected(ctx.config, case)}
            budgets_theirs = {e.name: e for e in partner.expected(ctx.config, case)}
        metrics = []
        with ctx.timer.stage("compare"):
            for name, own in budgets_mine.items():
                joint = own.keeping_conventions(Expected.around(
                    name, theirs[name], own.budget + budgets_theirs[name].budget, own.dtype, exact=own.exact))
                metrics.append(compare(mine[name], joint))
        score = max(m.max_err_over_budget for m in metrics)
        features = dict(ctx.kernel.features(case), partner=partner.name)
        return Outcome(all(m.passed for m in metrics), score, metrics, [], features, case)
