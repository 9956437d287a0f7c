"""Metamorphic checks of paged decode kernels: relations between runs that must hold whatever
the reference says (docs/how-kernels-are-judged.md §2.3, §2.4)."""

from __future__ import annotations

import numpy as np

from verify.budgets.attention import merge_budget, merged_parts_budget
from verify.budgets.expected import Expected
from verify.budgets.metrics import compare
from verify.cases import Case
from verify.checks.base import Check, bitwise_differences
from verify.checks.outcome import Outcome
from verify.errors import FailureKind
from verify.kernels.attention.cases import permute_pages, split_context


class PagePermutationCheck(Check):
    name = "page_permutation"
    doc = "moving KV pages to other physical slots (page table renamed alike) gives bitwise-identical output"

    def run_example(self, ctx, case):
        original = ctx.launch(case).outputs
        moved = ctx.launch(permute_pages(case)).outputs
        reasons = [f"page placement changed the result: {r}" for r in bitwise_differences(original, moved)]
        return Outcome(not reasons, float(len(reasons)), [], reasons, ctx.kernel.features(case), case,
                       FailureKind.RELATION_BROKEN)


class SplitMergeCheck(Check):
    name = "split_merge"
    doc = "decode over a split context, merged by merge_state, equals decode over the whole context (within both budgets)"

    def run_example(self, ctx, case):
        from verify.kernels.attention.merge_state import MergeState

        kernel, config = ctx.kernel, ctx.config
        first, second, cut = split_context(case, config)
        full = ctx.launch(case)
        part_a, part_b = ctx.launch(first).outputs, ctx.launch(second).outputs
        merge = MergeState()
        merge_config = merge.config({"head_dim": config["head_dim"], "dtype": config["dtype"]})
        pair = Case({"v": part_a["output"], "s": part_a["lse"], "v_other": part_b["output"], "s_other": part_b["lse"]})
        merged = merge.launch(ctx.device, merge.wgsl(merge_config), merge_config, pair).outputs

        with ctx.timer.stage("reference"):
            expected_full = {e.name: e for e in kernel.expected(config, case)}
            exp_a = {e.name: e for e in kernel.expected(config, first)}
            exp_b = {e.name: e for e in kernel.expected(config, second)}
            o_parts, lse_parts = merged_parts_budget(
                exp_a["output"].lo, exp_a["lse"].lo, exp_a["output"].budget, exp_a["lse"].budget,
                exp_b["output"].lo, exp_b["lse"].lo, exp_b["output"].budget, exp_b["lse"].budget)
            as64 = lambda x: np.asarray(x, np.float64)
            o_merge, lse_merge = merge_budget(as64(part_a["output"]), as64(part_a["lse"]), as64(part_b["output"]),
                                              as64(part_b["lse"]), expected_full["output"].lo,
                                              expected_full["lse"].lo, config["dtype"])
        outputs = {"output": merged["v"], "lse": merged["s"]}
        metrics = []
        with ctx.timer.stage("compare"):
            for name, parts, merging in (("output", o_parts, o_merge), ("lse", lse_parts, lse_merge)):
                whole = expected_full[name]
                budget = whole.budget + parts + merging
                # The merged result and the whole-context run are each within their budget of the
                # same exact value, so they may differ by the sum of both budgets.
                joint = whole.keeping_conventions(
                    Expected.around(name, full.outputs[name], budget, whole.dtype, exact=whole.exact))
                metrics.append(compare(outputs[name], joint))
        score = max(m.max_err_over_budget for m in metrics)
        features = dict(kernel.features(case), cut=int(cut.max(initial=0)))
        return Outcome(all(m.passed for m in metrics), score, metrics, [], features, case)
