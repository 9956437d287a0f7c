"""Checks of the DP4A matmul beyond the reference: exact integer arithmetic, the accumulator's
range, and (informational) what quantizing A costs against the unquantized product."""

from __future__ import annotations

import numpy as np

from verify.budgets.dp4a import quantization_bound
from verify.budgets.expected import Expected
from verify.budgets.metrics import compare
from verify.checks.base import Check
from verify.checks.outcome import Outcome
from verify.kernels.dp4a.matmul_cases import accumulator_range_cases, integer_sum_cases
from verify.references.nbits import dequantize_weights, matmul_nbits
from verify.results.thoroughness import Thoroughness

#: Largest finite f16.
F16_MAX = 65504.0


class IntegerSumsCheck(Check):
    name = "integer_sums"
    doc = ("unit scales, small integer codes: every product and partial sum is an exact integer, "
           "so Y = sum_c I_c + bias bit for bit (nibble order, sign extension, zero points, indexing)")

    def strategy(self, ctx):
        return integer_sum_cases(ctx.config, ctx.profile)

    def run_example(self, ctx, case):
        return ctx.judge(case, ctx.launch(case))


class AccumulatorRangeCheck(Check):
    name = "accumulator_range"
    doc = ("large same-sign chunk products: running sums pass 65504 while Y stays finite; an f16 "
           "accumulator overflows to Inf (docs/findings.md §7)")

    def strategy(self, ctx):
        return accumulator_range_cases(ctx.config, ctx.profile)

    def run_example(self, ctx, case):
        """Judged like `reference`; any Inf/NaN fails as the finding, whatever the budget says.

        The exact Y of these cases is finite by construction, but an f16 accumulator's a-priori
        budget (gamma_{C-1}(2u_f16) times sums past 65504) may itself be infinite, and an
        infinite budget must not excuse an infinite output: the check judges those itself, so it
        tells `judge` that an everywhere-infinite budget is expected here.
        """
        launched = ctx.launch(case)
        outcome = ctx.judge(case, launched, unbounded=True)
        overflowed = int((~np.isfinite(launched.outputs["y"])).sum())
        if overflowed:
            exact = np.abs(ctx.kernel.expected(ctx.config, case)[0].reference).max()
            cause = ("acc=f16 keeps them in f16, as ORT ships it for f16 models; the fix is f32 accumulation "
                     "(acc=f32, ORT's enableMatmulFp32Accumulation)" if ctx.config["acc"] == "f16" else
                     "this config promises acc=f32, yet the kernel overflows as an f16 accumulator would")
            outcome.reasons.insert(0, (
                f"f16 accumulation overflow: {overflowed}/{launched.outputs['y'].size} outputs are Inf/NaN where "
                f"the exact result is finite (|Y| <= {exact:.6g}); the running sums reach about "
                f"{case.params['peak_partial_sum']:.6g} > {F16_MAX:g}: {cause}"))
            outcome.passed, outcome.score = False, float("inf")
        return outcome


class QuantizationErrorCheck(Check):
    """Quantization error, reported apart from kernel error and never gating.

    A check of its own rather than an extra output of `reference`: it needs the unquantized A
    (cases carry it), its worst case is the one with the most quantization error (Hypothesis
    climbs its score), not the one with the most kernel error, and its record sits beside the
    gating checks in every report without touching their verdicts. Two outputs: `y`, the kernel
    against matmul_nbits(A) (budget: quantization_bound + the kernel's budget), and `dp4a_exact`,
    the DP4A-exact product against it (quantization_bound alone), so kernel and quantization
    error read side by side. err/budget is the share of the worst case the quantization used;
    a value near 1 is expected where ties or equal-magnitude blocks put every code half a step off.
    """

    name = "quantization_error"
    #: informational: it never fails, so its PASS says only that the kernel ran (verify.results.thoroughness).
    thoroughness = Thoroughness.STRUCTURAL
    doc = ("informational, never fails: Y and the DP4A-exact product against the unquantized float64 "
           "MatMulNBits, err/budget in units of the a-priori quantization bound")

    def run_example(self, ctx, case):
        config = ctx.config
        launched = ctx.launch(case)
        with ctx.timer.stage("reference"):
            kernel_expected = ctx.kernel.expected(config, case)[0]
            zero_points = case["zero_points"] if config["has_zero_points"] else None
            bias = case["bias"].astype(np.float64) if config["has_bias"] else None
            b_scales = case["b_scales"].astype(np.float64)
            ideal = matmul_nbits(case["a"].astype(np.float64), case["b"], b_scales, zero_points, bias,
                                 bits=config["bits"], block_size=config["block_size"])
            weights = dequantize_weights(case["b"], b_scales, zero_points, bits=config["bits"],
                                         block_size=config["block_size"], K=case["a"].shape[-1])
            bound = quantization_bound(case["a"], weights, config["dtype"])
        with ctx.timer.stage("compare"):
            metrics = [
                compare(launched.outputs["y"],
                        Expected.around("y", ideal, bound + kernel_expected.budget, config["dtype"])),
                compare(kernel_expected.reference, Expected.around("dp4a_exact", ideal, bound, config["dtype"])),
            ]
        return Outcome(True, metrics[0].max_err_over_budget, metrics, [], ctx.kernel.features(case), case)
