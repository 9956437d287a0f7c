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
from verify.results.thoroughness import Thoroughness


class PagePermutationCheck(Check):
    name = "page_permutation"
    #: bitwise against the same case with its pages moved (verify.results.thoroughness).
    thoroughness = Thoroughness.RELATION
    doc = "moving KV pages to other physical slots (page table renamed alike) gives bitwise-identical output"

    def run_example(self, ctx, case):
        original = ctx.launch(case).outputs
        moved = ctx.launch(permute_pages(case)).outputs
        reasons = [f"page placement changed the result: {r}" for r in bitwise_differences(original, moved)]
        return Outcome(not reasons, float(len(reasons)), [], reasons, ctx.kernel.features(case), case,
                       FailureKind.RELATION_BROKEN)


class SplitMergeCheck(Check):
    name = "split_merge"
    #: split and merged against the whole context, each within its budget, not the reference
    #: (verify.results.thoroughness).
    thoroughness = Thoroughness.RELATION
    doc = ("decode over a split context, merged by merge_state, equals decode over the whole context "
           "(within both budgets)")

    @staticmethod
    def _merge(config):
        """verify's merge_state kernel, and its config, for a decode config's head dim and type."""
        from verify.kernels.attention.merge_state import MergeState

        merge = MergeState()
        return merge, merge.config({"head_dim": config["head_dim"], "dtype": config["dtype"]})

    def other_wgsl(self, kernel, config):
        merge, merge_config = self._merge(config)
        return (merge.wgsl(merge_config),)

    def run_example(self, ctx, case):
        kernel, config = ctx.kernel, ctx.config
        first, second, cut = split_context(case, config)
        full = ctx.launch(case)
        part_a, part_b = ctx.launch(first).outputs, ctx.launch(second).outputs
        merge, merge_config = self._merge(config)
        pair = Case({"v": part_a["output"], "s": part_a["lse"], "v_other": part_b["output"], "s_other": part_b["lse"]})
        merged = merge.launch(ctx.device, merge.wgsl(merge_config), merge_config, pair).outputs

        with ctx.timer.stage("reference"):
            prepare = getattr(kernel, "prepare_split", None)  # the parts share the whole's per-row work
            if prepare is not None:
                prepare(config, case, ((first, np.zeros_like(cut)), (second, cut)))
            expected_full = {e.name: e for e in kernel.expected(config, case)}
            exp_a = {e.name: e for e in kernel.expected(config, first)}
            exp_b = {e.name: e for e in kernel.expected(config, second)}
            o_parts, lse_parts = merged_parts_budget(
                exp_a["output"].lo, exp_a["lse"].lo, exp_a["output"].budget, exp_a["lse"].budget,
                exp_b["output"].lo, exp_b["lse"].lo, exp_b["output"].budget, exp_b["lse"].budget)
            def as64(x):
                return np.asarray(x, np.float64)
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


# -- prefill ---------------------------------------------------------------------------------------------
def _rows_of(expected: Expected, rows: np.ndarray) -> Expected:
    """`expected` restricted to the leading-axis rows `rows`."""
    def pick(x):
        return None if x is None else np.asarray(x)[rows]
    return Expected(expected.name, expected.lo[rows], expected.hi[rows], np.asarray(expected.budget)[rows],
                    expected.dtype, pick(expected.exact), pick(expected.convention))


class CausalSplitCheck(Check):
    """Chunked prefill: the runtime runs a long prompt as several prefills, each chunk's rows on the
    context as it stands then. Each row of either chunk sees exactly the columns, values and
    positions it sees in one prefill of the whole prompt (verify.kernels.attention.prefill_cases.
    split_chunk), so the two runs are each within their budget of the same exact values: they may
    differ by the sum of both budgets, outputs and LSEs alike. A kernel whose causal offset, tile
    walk or q_indptr handling depends on where the chunk starts breaks it."""

    name = "causal_split"
    #: a chunk against its two halves (verify.results.thoroughness).
    thoroughness = Thoroughness.RELATION
    doc = ("prefill of a chunk equals prefill of its first rows followed by prefill of the rest on the extended "
           "context (outputs and LSE within both budgets)")

    def strategy(self, ctx):
        from verify.kernels.attention.prefill_cases import total_rows

        return ctx.kernel.cases(ctx.config, ctx.profile).filter(lambda case: total_rows(case) >= 2)

    def run_example(self, ctx, case):
        kernel, config = ctx.kernel, ctx.config
        split = kernel.split_chunk(config, case)
        whole = ctx.launch(case).outputs
        first, second = ctx.launch(split.first).outputs, ctx.launch(split.second).outputs
        with ctx.timer.stage("reference"):
            expected = {e.name: e for e in kernel.expected(config, case)}
            # A chunk on the whole context (the second; the first too without the causal mask)
            # walks and sees what the whole prefill's same rows do: its budgets are theirs.
            parts = [{name: split.rows_of(np.broadcast_to(own.budget, own.lo.shape), index)
                      for name, own in expected.items()} if split.on_whole_context(index) else
                     {e.name: e.budget for e in kernel.expected(config, part)}
                     for index, part in enumerate((split.first, split.second))]
        metrics = []
        with ctx.timer.stage("compare"):
            for name, own in expected.items():
                budget = own.budget + split.assemble(parts[0][name], parts[1][name])
                joint = own.keeping_conventions(Expected.around(name, whole[name], budget, own.dtype, exact=own.exact))
                metrics.append(compare(split.assemble(first[name], second[name]), joint))
        score = max(m.max_err_over_budget for m in metrics)
        return Outcome(all(m.passed for m in metrics), score, metrics, [], kernel.features(case), case,
                       None if all(m.passed for m in metrics) else FailureKind.RELATION_BROKEN)


#: The decode kernel prefill_vs_decode compares with: verify's own host-switched paged decode.
DECODE_PARTNER = "decode"


class PrefillVsDecodeCheck(Check):
    """The last query row of every sequence of a prefill against a decode of that token on the same
    context (verify.kernels.attention.prefill_cases.last_rows_as_decode): the causal mask lets a
    chunk's last row see c < kv_len, all of the context, as decode does, and without the mask every
    row does. The two runs are within their budgets of the same exact value, so they may differ by
    the sum of the prefill row's budget and the decode's.

    The decode side is verify's own `decode` kernel (the host switch between decode.tiled and
    decode.sharded), not TVM's decode and not the float64 reference alone: it is a second WebGPU
    implementation of the same attention, written apart from TVM's prefill (another schedule, another
    softmax walk) and verified by its own gate against references/decode.py, so an agreement is not a
    bug they share; its float64 decode reference is not references/prefill.py, so the check also ties
    the two references together; and unlike TVM's decode it writes every head of any GQA group
    (docs/findings.md §5) and has no known finding of its own. A config the decode kernel does not
    offer (a head dim outside 64/96/128/256, d_v != d_qk) is a SKIP saying so."""

    name = "prefill_vs_decode"
    #: prefill against decode on the same context (verify.results.thoroughness).
    thoroughness = Thoroughness.RELATION
    doc = ("the last query row of each prefill sequence equals decode of that token on the same context "
           "(verify's decode kernel; within both budgets)")

    @staticmethod
    def _partner(config):
        """The decode kernel, its config for a prefill config, and its WGSL."""
        from verify.kernels.registry import get_kernel

        decode = get_kernel(DECODE_PARTNER)
        keys = {key.name for key in decode.config_keys}
        overrides = {k: v for k, v in config.items() if k in keys}
        overrides["sliding_window"] = 0
        decode_config = decode.config(overrides)
        return decode, decode_config, decode.wgsl(decode_config)

    def _decode(self, ctx):
        return ctx.cached("decode partner", lambda: self._partner(ctx.config))

    def other_wgsl(self, kernel, config):
        from verify.errors import UsageError

        try:
            return (self._partner(config)[2],)
        except UsageError:  # a config the decode kernel does not offer: the check is a SKIP
            return ()

    def preflight(self, ctx):
        from verify.checks.base import Preflight
        from verify.errors import UsageError
        from verify.results.record import Verdict

        if ctx.config.get("v_head_dim") not in (None, 0, ctx.config["head_dim"]):
            return Preflight(Verdict.SKIP, f"decode has one head dim for q, k and v; this config has "
                                           f"v_head_dim={ctx.config['v_head_dim']} "
                                           f"!= head_dim={ctx.config['head_dim']}")
        try:
            decode, config, wgsl = self._decode(ctx)
            for module in decode.modules(wgsl):
                ctx.device.pipeline(module)
        except UsageError as exc:
            return Preflight(Verdict.SKIP, f"verify's {DECODE_PARTNER} kernel cannot take this config: {exc}")
        return None

    def run_example(self, ctx, case):
        kernel, config = ctx.kernel, ctx.config
        decode, decode_config, decode_wgsl = self._decode(ctx)
        decode_case, rows = kernel.decode_view(config, case)
        prefill = ctx.launch(case).outputs
        decoded = decode.launch(ctx.device, decode_wgsl, decode_config, decode_case)
        ctx.timer.add_launch(decoded.timing)
        has = rows >= 0
        with ctx.timer.stage("reference"):
            # The compared rows alone where the kernel can evaluate them so (the same numbers).
            last_rows = getattr(kernel, "last_rows_expected", None)
            own = {e.name: e for e in (last_rows(config, case) if last_rows is not None else
                                       (_rows_of(e, rows[has]) for e in kernel.expected(config, case)))}
            theirs = {e.name: e for e in decode.expected(decode_config, decode_case)}
        metrics = []
        with ctx.timer.stage("compare"):
            for name in ("output", "lse"):
                mine = own[name]
                other = np.asarray(decoded.outputs[name])[has]
                budget = mine.budget + np.asarray(theirs[name].budget)[has]
                joint = mine.keeping_conventions(Expected.around(name, other, budget, mine.dtype))
                metrics.append(compare(np.asarray(prefill[name])[rows[has]], joint))
        reasons = [f"{name}: the decode wrote past the end of the buffer"
                   for name, intact in decoded.guard_intact.items() if not intact]
        passed = not reasons and all(m.passed for m in metrics)
        score = max(m.max_err_over_budget for m in metrics)
        return Outcome(passed, score, metrics, reasons, kernel.features(case), case,
                       None if passed else FailureKind.RELATION_BROKEN)
