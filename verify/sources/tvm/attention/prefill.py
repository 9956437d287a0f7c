"""Contracts of the prefill kernels Apache TVM 0.27 generates for WebGPU: paged prefill (plain and
sliding window), ragged prefill, token-tree attention (ragged and paged) and the dense sequence
prefill, each launched as TVM's web runtime launches it and judged against references/prefill.py.

Paths are relative to `tvm/relax/frontend/nn/llm/` in the apache-tvm 0.27 wheel; runtime paths to
apache/tvm at 5d4dc87. `TIRPagedKVCache` builds the four KV-cache kernels for a GPU target from
these factories (kv_cache.py L695-727), and verify.sources.tvm.build builds them the same way:

| kernel | factory | WGSL entry | runtime call |
|---|---|---|---|
| tvm.prefill | `_attention_prefill(sliding_window=False)` | batch_prefill_paged_kv_kernel | attn_backend.h L234-243 |
| tvm.prefill_sliding_window | `_attention_prefill(sliding_window=True)` | …_sliding_window_kernel | same |
| tvm.prefill_ragged | `_attention_prefill_ragged` | batch_prefill_ragged_kv_kernel | attn_backend.h L388-397 |
| tvm.tree_attention | `tree_attn` | batch_tree_attn_kernel | attn_backend.h L665-674 |
| tvm.tree_attention_paged | `tree_attn_with_paged_kv_cache` | tree_attn_paged_kv_kernel | attn_backend.h L618-627 |
| tvm.sequence_prefill | `_attention_sequence_prefill` | batch_sequence_prefill_kv_kernel | none (re-exported only) |

The launch follows decode's (verify.sources.tvm.attention.decode): buffers bound by TVM's parameter names
(`P_ptr`, in the order the WGSL declares), scalars in the uniform PODArgs, the small int32 arrays as
views of one buffer at drawn offsets (verify.sources.tvm.layout; their `*_elem_offset` fields), the
grid through the web runtime's packing. The four KV-cache kernels launch a fixed grid of
(16, H_kv) workgroups (`_get_prefill_kernel_config`'s NUM_BLKS, _kernel_common.py L625-692; the
host's `call_ffi_kernel`), each walking tiles bx, bx + 16, ... over all sequences
(`advance_tile_batch`, L337-355): never packed. The sequence kernel's grid is (B x ceil(qo_len G /
tile_x), H_kv), which the runtime packs past 65535 like decode's.

Conventions (docs/tvm.md §11): TVM's -inf is -5e4. A row that sees nothing (a sliding window's
rows past W - 1; a sequence with no context and no mask) stores lse = -5e4 + log2(1 + n) for the n
columns it walked, within decode's EMPTY_LSE_BAND, and an output that is a convex combination of
the hidden V rows, not 0; the contracts state that instead of our o = 0, lse = -inf. Like decode's,
the regular cases stay inside TVM's domain (every row that sees anything has a base-2 logit above
-5e4 + 150; `within_floor`) and `below_floor` draws the rest.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import strategies as st

from verify.budgets.expected import Expected
from verify.budgets.prefill import prefill_budget
from verify.budgets.roundoff import faithful_rounding_bound, gamma
from verify.budgets.wgsl_accuracy import rounding_rel
from verify.checks.finding_cases import first_drawn
from verify.errors import FailureKind, UsageError
from verify.gpu import Output
from verify.kernels.attention.common import DTYPE, KV_HEADS, PAGE_SIZE, QO_HEADS, STORAGE, dtype_features
from verify.kernels.attention.prefill_cases import (
    dense_prefill_cases,
    last_rows,
    last_rows_as_decode,
    paged_prefill_cases,
    ragged_prefill_cases,
    split_chunk,
    total_rows,
    tree_cases,
)
from verify.kernels.attention.prefill_eval import PrefillProblem, remembered
from verify.kernels.attention.rope_variant import LLAMA_3_1, SCALING_KEYS, RopeVariant, trim_config, validate_variant
from verify.kernels.attention.sizes import SIZES
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.profiles import get_profile
from verify.references.decode import LOG2E
from verify.results.record import KnownFinding
from verify.sources.tvm.attention.decode import (
    EMPTY_LSE_BAND,
    EMPTY_MAX,
    FLOOR_MARGIN,
    PACK_LIMIT,
    PACKED_GRID,
    _by_param,
    _header,
    bind,
    tvm_upstream,
    web_runtime_grid,
)
from verify.sources.tvm.build import (
    load,
    prefill_build,
    ragged_prefill_build,
    sequence_prefill_build,
    tree_build,
)
from verify.sources.tvm.layout import ArgumentLayout, layouts

#: Workgroups along x of the KV-cache prefill kernels: `_get_prefill_kernel_config`'s NUM_BLKS = 16
#: (_kernel_common.py L625-692), independent of the batch.
NUM_BLKS = 16

HEAD_DIM = ConfigKey("head_dim", 128, (64, 80, 96, 128, 160, 192, 256),
                     "size of one attention head (f16 152..248 does not fit TVM's 32 KiB of workgroup memory)")
CAUSAL = ConfigKey("causal", 1, (0, 1), "the kernel's causal argument: 1 masks the chunk's future (the last qo_len "
                   "context rows are the chunk), 0 attends the whole context (the runtime's paged call)")
WINDOW = ConfigKey("window", 1024, (), "sliding_window_size compiled into the cross mask (kv_cache.py L589: 1024)",
                   bounds=(1, 1 << 20))
V_HEAD_DIM = ConfigKey("v_head_dim", 0, (0, 64, 128, 256), "head dim of v and the output (0: head_dim); "
                       "TVM's ragged kernel allows d_v != d_qk (MLA-style)")


# -- findings ---------------------------------------------------------------------------------------------
#: (dtype, head_dim) of the tree kernels whose O-gemm tile needs more warps than the Q/K/V loads
#: were split for (tree_attn.py `get_tile_size`, L514-522 and L1147-1155, and `apply_to_qkv_load`,
#: L524-532), among the head dims the contracts offer: the extra warp writes past Q_smem/K_smem/V_smem.
TREE_EXTRA_WARP = {("f32", 96), ("f32", 160), ("f32", 192)}
#: Tokens of one tree from which the extra warp's stores show as wrong outputs (TvmTreeAttention.finding_examples;
#: measured on lavapipe at D = 96: trees of 1-3 tokens pass, every simplest case with a tree of 4 or more fails).
TREE_WRONG_TOKENS = 4

TREE_OUT_OF_BOUNDS = (
    "TVM's tree kernels run an extra warp that writes past its workgroup arrays: wrong outputs at this head dim.\n"
    "tree_attn.py's own get_tile_size (L514-522, L1147-1155) does not require the O tile to divide the row tile, "
    "so for f32 D = 96 it pads 16 rows to 18 and needs 5 warps (@workgroup_size(32, 5, 1); 3 warps for f32 D = "
    "144-240), while the Q/K/V loads are split for 4 warps with no threadIdx.y guard (apply_to_qkv_load, L524-532): "
    "the extra warp stores Q_smem, K_smem and V_smem at flat index >= tile_x * D. WGSL leaves that store "
    "implementation-defined; lavapipe lands it on the arrays' last element (tile row 15, dim D - 1). Shrunk case "
    "(the gate's, and the test's): tree_attn(h_kv=1, h_q=4, d=96, float32), one chain [-1, 0, 1, 2]: query row 3, "
    "head 3 wrong in all 96 dims (|dO| up to 0.159, err/budget 1.04e3; its lse err/budget 1.66e3); drawn cases at "
    "32/8 heads reach err/budget 6e4. Guarding the stores with threadIdx.y < 4 "
    "fixes both tree kernels. Evidence: tests/sources/tvm/test_tvm_prefill.py::"
    "test_tvm_tree_attention_is_right_at_head_dim_96_f32 (strict xfail) and "
    "::test_guarding_the_extra_warp_fixes_tvms_tree_kernels; docs/findings.md §14.")

TREE_EXTRA_WARP_RACE = (
    "TVM's tree kernels' extra warp races with the loads it overwrites: results differ run to run at this head dim.\n"
    "The fifth warp's Q_smem/K_smem/V_smem stores past the tile (docs/findings.md §14.1) land where the adapter puts "
    "them; on NVIDIA's Vulkan driver (H200, wgpu) they race with the other warps' reads, so the same case gives "
    "different outputs: the ci gate's tvm.tree_attention determinism at f32 D = 96 (4 query heads, 1 KV head) had "
    "1/28 lse and 96/2688 output elements differ bit for bit between two runs, tvm.tree_attention_paged "
    "determinism 7/56 lse and 676/5376 outputs, and its page_permutation 4/1536 outputs. lavapipe runs the warps "
    "of a workgroup in one order, so there both checks pass and record the finding as not reproduced. Guarding "
    "the stores with threadIdx.y < 4 removes the race with the wrong outputs. Evidence: the H200 ci gate's records "
    "(benchmarks/results/h200_gate_ci.json) and tests/sources/tvm/test_tvm_prefill.py::"
    "test_guarding_the_extra_warp_fixes_tvms_tree_kernels; docs/findings.md §14.1.")

TREE_MASK_READ = (
    "TVM's tree kernels read the tree's mask past its last node for the tile rows past a sequence's queries.\n"
    "The tree mask (_check_tree_order, tree_attn.py L47-64) reads tree_order[indptr[b] + row + tree_len - qo_len] "
    "for every row of a tile, and the kernels test it before (not after) the row's own `row < qo_len`: the padding "
    "rows of a sequence's last tile read the next sequence's pairs, and those of the batch's last sequence read past "
    "the end of mask / tree_order (shrunk case: one tree of one node, f16 D = 64: index 2 of a 2-element mask). "
    "WebGPU's robust buffer access makes the read return some value of the buffer or 0, and those rows are never "
    "stored, so the outputs are right; a runtime without robust access would read out of bounds. Evidence: "
    "tests/sources/tvm/test_tvm_prefill.py::test_tvm_tree_attention_reads_only_its_trees_mask (strict xfail); "
    "docs/findings.md §14.")

#: What the sanitizer's message of each tree finding names (KnownFinding.reasons): the mask read
#: past the tree, and the extra warp's stores past the workgroup arrays.
TREE_MASK_READ_SITES = (("out-of-bounds read of storage buffer mask_ptr",),
                        ("out-of-bounds read of storage buffer tree_order_ptr",))
TREE_EXTRA_WARP_SITE = ("out-of-bounds ", " of workgroup array ")

BELOW_FLOOR_PREFILL = (
    "TVM's -inf is -5e4: a row whose every visible base-2 logit lies below it comes back as a mean of hidden rows.\n"
    "The running max starts at -5e4 and every hidden column (a causal row's future, tile padding) gets that logit "
    "(_kernel_common.py L229-234, L256-296), so with every visible logit below -5e4 the max stays there, each visible "
    "weight 2^(s - m) underflows to 0 and each hidden one is 2^0 = 1: the kernel stores lse = -5e4 + log2(1 + n) and "
    "the mean of the hidden V rows, so a causal row returns the average of its future tokens' values. Observed on TVM "
    "0.27 (f32 D = 64, a causal chunk of 20 tokens on its 20 rows): row 3 equals sum(V[4..19]) / 29 and its lse "
    "-5e4 + log2(29); one row on one row of context: lse -49996 where the reference is -62054.6 +- 0.507 (err/budget "
    "2.4e4). Evidence: tests/sources/tvm/test_tvm_prefill.py::test_tvm_prefill_attends_logits_below_its_floor (strict "
    "xfail) and ::test_below_its_floor_a_causal_row_returns_the_mean_of_its_future; docs/findings.md §16.")

LLAMA3_CSE = ("apache-tvm 0.27 cannot build {build} for webgpu: its TIR common-subexpression elimination hoists an "
              "expression of Llama 3's frequency out of its Let scope ('{message}'; docs/findings.md §15); with "
              "rope_scaling=llama3 this kernel builds only for some head groups and dtypes (docs/tvm.md §11.5)")


# -- the shared contract ------------------------------------------------------------------------------------
def _empty_output_budget(low, high, walked, dtype: str):
    """Budget of a row that sees nothing: TVM stores sum_{hidden c} V_c / (1 + n), a combination of
    V rows with weights summing to at most 1, summed in f32 over the walked columns and stored."""
    extent = np.maximum(np.abs(low), np.abs(high))  # [rows, Dv] of walked [rows]
    return gamma(np.asarray(walked, np.float64) + 2, rounding_rel("f32"))[:, None] * extent + \
        faithful_rounding_bound(extent, dtype)


class TvmPrefillKernel(Kernel):
    """What TVM's prefill kernels share: config validation, the build and its cache, the case
    layout (small arrays as views of one buffer), the reference and budget (verify.kernels.
    attention.prefill_eval), TVM's conventions, and the launch."""

    family = "attention"
    source = "tvm"
    budget_function = staticmethod(prefill_budget)
    output_axes = {"output": ("head", "dim"), "lse": ("token", "head")}
    #: TVM parameters bound as views of the shared int32 buffer, and the pages' drawn offsets.
    small_arrays: tuple = ()
    pages_offsets: tuple = (0, 1, 7)
    #: The reference's layout: "paged", "ragged", "tree" or "paged_tree".
    layout_kind: str = ""
    gate_shapes: tuple = ()

    def config(self, overrides=None):
        return trim_config(super().config(overrides), overrides)

    def validate(self, config):
        if config["qo_heads"] % config["kv_heads"]:
            raise UsageError(f"qo_heads={config['qo_heads']} must be a positive multiple of "
                             f"kv_heads={config['kv_heads']}")
        validate_variant(config)

    def requirements(self, config):
        return dtype_features(config)

    #: What the quick and ci profiles run: the gate shapes' head dims, dtypes, GQA groups and scalings
    #: on one or two kv heads. The kv head is the grid's y (every kv head runs the same workgroups
    #: on its own slice), so more kv heads repeat the same schedule, while the sanitizer's log and
    #: lavapipe's time grow with them (a 32/8 head config takes minutes per sanitized case on two
    #: cores); configs with two kv heads keep the kv-head strides covered.
    ci_shapes: tuple = ()

    def gate_configs(self, profile):
        """The gate's configs: all of gate_shapes at the nightly scale, ci_shapes below it. The
        gate builds them while it plans, so a machine without apache-tvm or its cached WGSL skips
        the kernel (SetupError)."""
        shapes = self.gate_shapes if get_profile(profile).scale == "nightly" else self.ci_shapes
        return [self.config(shape) for shape in shapes]

    def gate_examples(self, profile):
        """The attention sizes' prefill_examples at the profile's scale, else the profile's: a
        nightly prefill case holds up to 2^22 query-row x head x context-row cells, about a second
        of float64 reference and budget (verify.kernels.attention.sizes)."""
        return SIZES(profile).prefill_examples or super().gate_examples(profile)

    def build(self, config):
        raise NotImplementedError

    def wgsl(self, config):
        build = self.build(config)
        try:
            return _header(self.name, config) + load(build)
        except UsageError as exc:
            message = str(exc)
            if "used before definition" in message and config.get("rope_scaling") == "llama3":
                raise UsageError(LLAMA3_CSE.format(build=build.describe(), message=message.rsplit(": ", 1)[-1])) \
                    from None
            raise

    def llama3(self, config):
        return RopeVariant.from_config(config).llama3

    # -- cases ----------------------------------------------------------------------------------------------
    def raw_cases(self, config, profile):
        raise NotImplementedError

    def cases(self, config, profile):
        """The kernel's cases inside TVM's domain (`within_floor`), each bound as TVM's runtime binds
        it: the small arrays as views at drawn offsets of one buffer (verify.sources.tvm.layout)."""
        inside = self.raw_cases(config, profile).filter(lambda case: self.within_floor(config, case))
        return st.tuples(inside, layouts(self.small_arrays, self.pages_offsets)).map(
            lambda pair: pair[0].replace(**pair[1]))

    def within_floor(self, config, case) -> bool:
        """Every row that sees anything has a base-2 logit above EMPTY_MAX + FLOOR_MARGIN (decode's
        domain, verify.sources.tvm.attention.decode). The cases filter on this as they are drawn, so it is
        first asked of a bound on every logit (clear_of_floor), which settles nearly every case
        without the reference; only a case it leaves open costs the whole reference here
        (remembered: the check reads it again)."""
        problem = self.problem(config, case)
        if clear_of_floor(problem):
            return True
        top = remembered(problem).top_logit2
        return bool(np.all(np.isneginf(top) | (top > EMPTY_MAX + FLOOR_MARGIN)))

    # -- reference and budget --------------------------------------------------------------------------------
    def problem(self, config, case) -> PrefillProblem:
        raise NotImplementedError

    def evaluation(self, config, case):
        return remembered(self.problem(config, case))

    def expected(self, config, case):
        """The reference within the budget; a row that sees nothing is held to TVM's convention:
        lse in EMPTY_LSE_BAND and an output within [min(0, min V), max(0, max V)] of its sequence's
        context (plus f32 summation and the store), marked `convention`."""
        ev = self.evaluation(config, case)
        nothing = ev.sees_nothing
        dtype = config["dtype"]
        o_lo = o_hi = ev.o
        o_budget = ev.o_budget
        if nothing.any():  # those rows alone: their sequence's V range, its budget
            row, head = np.nonzero(nothing)
            low, high = ev.sequence_v_low[ev.sequence[row], head], ev.sequence_v_high[ev.sequence[row], head]
            o_lo, o_hi, o_budget = ev.o.copy(), ev.o.copy(), ev.o_budget.copy()
            o_lo[row, head], o_hi[row, head] = low, high
            o_budget[row, head] = _empty_output_budget(low, high, ev.walked[row], dtype)
        rows = nothing[..., None]
        lo, hi = EMPTY_LSE_BAND
        output = Expected("output", o_lo, o_hi, o_budget, dtype, convention=np.broadcast_to(rows, o_lo.shape))
        lse = Expected("lse", np.where(nothing, lo, ev.lse2), np.where(nothing, hi, ev.lse2),
                       np.where(nothing, 0.0, ev.lse_budget), self.lse_dtype(config), convention=nothing)
        return [output, lse]

    def lse_dtype(self, config) -> str:
        return "f32"

    # -- launch -----------------------------------------------------------------------------------------------
    def inputs(self, config, case) -> tuple[dict, dict, np.ndarray | None]:
        """(small arrays, other arrays, pages or None) by TVM parameter name."""
        small = {name: case[name] for name in self.small_arrays}
        others = {name: case[name] for name in ("q", "k", "v") if name in case.arrays}
        return small, others, case.arrays.get("pages")

    def pod(self, config, case, interface) -> dict:
        """PODArgs' scalar fields other than the element offsets and packGridDimX."""
        raise NotImplementedError

    def grid(self, config, case) -> tuple[int, int]:
        return NUM_BLKS, config["kv_heads"]

    def output_shapes(self, config, case) -> dict:
        rows, heads = case["q"].shape[0], config["qo_heads"]
        v_dim = self.v_dim(config)
        return {"output": Output(STORAGE[config["dtype"]], (rows, heads, v_dim)),
                "lse": Output(np.float32, (rows, heads))}

    def v_dim(self, config) -> int:
        return config["head_dim"]

    def launch(self, device, wgsl, config, case):
        pipeline = device.pipeline(wgsl)
        small, others, pages = self.inputs(config, case)
        layout = ArgumentLayout.of(case.params)
        inputs, offsets = layout.bind(dict(small, **others), pages)
        grid, pack_x = web_runtime_grid(*self.grid(config, case), case.params.get("grid_limit") or PACK_LIMIT)
        pod = dict(self.pod(config, case, pipeline.interface), packGridDimX=pack_x)
        resources = bind(pipeline.interface, inputs, self.output_shapes(config, case), pod, offsets)
        run = device.run(pipeline, resources, grid)
        names = {"output": "output", "lse": "lse"}
        return Launched(_by_param(run.outputs, names), _by_param(run.guard_intact, names), run.timing)

    def launch_paths(self, config, case):
        x, y = self.grid(config, case)
        packed = x >= (case.params.get("grid_limit") or PACK_LIMIT)
        return ("grid packed into z" if packed else "grid direct", ArgumentLayout.of(case.params).launch_path)

    def features(self, case):
        qo, kv = case.params.get("qo_lens", [case.params.get("qo_len", 0)]), \
            case.params.get("kv_lens", [case.params.get("kv_len", 0)])
        return {"tokens": total_rows(case), "context": int(max(kv, default=0)), "batch": len(kv),
                "cells": int(sum(a * b for a, b in zip(qo, kv)))}

    def upstream(self, config, wgsl):
        """The factory call that made the WGSL, for a reproduction's issue text (as decode's)."""
        return tvm_upstream(wgsl)

    def known_finding(self, check, config):
        return None

    def finding_examples(self, check, config):
        """below_floor's first case where the kernel documents the floor: every case below it fails
        as the finding (the lse comes back TVM's -5e4), so its simplest does on every seed."""
        if check == "below_floor" and self.known_finding(check, config) is not None:
            return [first_drawn(self, check, config)]
        return []

    # -- hooks of the prefill checks (verify.kernels.attention.checks) ------------------------------------------
    def split_chunk(self, config, case):
        return split_chunk(case, self.layout_kind, config.get("page_size", 16))

    def decode_view(self, config, case):
        return last_rows_as_decode(case, self.layout_kind, config.get("page_size", 16))

    def last_rows_expected(self, config, case):
        """expected() of decode_view's prefill rows alone, in its order (prefill_cases.last_rows)."""
        return self.expected(config, last_rows(case))

    def below_floor_cases(self, config, profile):
        """The kernel's cases moved wholly below TVM's floor (`below_floor`): q all A, every stored
        key -A(1 + e), e in [0, 1/2), so each logit is at most -A^2 D sm_scale log2(e) <= -5e4 -
        depth; rotary off. Values, masks and layout are kept."""
        return st.tuples(self.raw_cases(config, profile).filter(lambda c: max(c.params.get("kv_lens", [0])) > 0),
                         st.floats(FLOOR_MARGIN, -EMPTY_MAX)).map(lambda pair: self.below_floor(config, *pair))

    def below_floor(self, config, case, depth: float):
        dtype = case["q"].dtype
        scale = config["head_dim"] * case.params["sm_scale"] * np.log2(np.e)
        exact = np.sqrt((depth - EMPTY_MAX) / scale)
        amplitude = np.asarray(exact, dtype=dtype)
        if amplitude < exact:
            amplitude = np.nextafter(amplitude, np.asarray(np.inf, dtype=dtype))
        rng = np.random.default_rng([int(case.params["seed"]), 3])
        arrays = {"q": np.full(case["q"].shape, amplitude, dtype=dtype)}
        if "pages" in case.arrays:
            pages = case["pages"].copy()
            keys = pages[:, 0]
            pages[:, 0] = np.where(np.isnan(keys), np.nan, -amplitude * (1.0 + rng.uniform(0.0, 0.5, keys.shape)))
            arrays["pages"] = pages.astype(dtype)
        else:
            arrays["k"] = (-amplitude * (1.0 + rng.uniform(0.0, 0.5, case["k"].shape))).astype(dtype)
        return case.replace(arrays, rotary_mode=0, values="below_floor", floor_depth=float(depth))


def _rope_options(config, case) -> dict:
    p = case.params
    return {"rotary_mode": int(p.get("rotary_mode", 0)), "rope_theta": float(p.get("rope_theta", 1e4)),
            "rope_scale": float(p.get("rope_scale", 1.0)), "llama3": RopeVariant.from_config(config).llama3}


# -- paged prefill ------------------------------------------------------------------------------------------
class TvmPrefill(TvmPrefillKernel):
    """`batch_prefill_paged_kv`: q_indptr-delimited chunks attending a paged context."""

    name = "tvm.prefill"
    summary = "Apache TVM 0.27's generated paged prefill (_attention_prefill, tvm.build for webgpu)"
    reference = "verify.references.prefill.paged_prefill_attention"
    config_keys: tuple[ConfigKey, ...] = (HEAD_DIM, QO_HEADS, KV_HEADS, DTYPE, PAGE_SIZE, CAUSAL, *SCALING_KEYS)
    checks: tuple[str, ...] = ("reference", "page_permutation", "causal_split", "prefill_vs_decode", "below_floor",
                               "implementations")
    small_arrays = ("q_indptr", "page_indptr", "page_values", "length_info", "k_rope_pos_offset", "q_rope_position")
    layout_kind = "paged"
    #: Llama-3.1-8B with its rope scaling over the runtime's unmasked paged context; MHA in f32; D = 256 (Gemma-like);
    #: G = 32 (one kv head); a group of 7 that divides no row tile; Phi-3-like D = 96 in f32.
    gate_shapes: tuple[dict, ...] = (dict(head_dim=128, qo_heads=32, kv_heads=8, dtype="f16", causal=0, **LLAMA_3_1),
                                     dict(head_dim=64, qo_heads=8, kv_heads=8, dtype="f32", causal=1),
                                     dict(head_dim=256, qo_heads=16, kv_heads=8, dtype="f16", causal=1),
                                     dict(head_dim=128, qo_heads=32, kv_heads=1, dtype="f16", causal=1),
                                     dict(head_dim=64, qo_heads=14, kv_heads=2, dtype="f16", causal=1),
                                     dict(head_dim=96, qo_heads=32, kv_heads=32, dtype="f32", causal=0))
    ci_shapes: tuple[dict, ...] = (dict(head_dim=128, qo_heads=4, kv_heads=1, dtype="f16", causal=0, **LLAMA_3_1),
                                   dict(head_dim=64, qo_heads=4, kv_heads=4, dtype="f32", causal=1),
                                   dict(head_dim=64, qo_heads=14, kv_heads=2, dtype="f16", causal=1))
    sliding = False

    def build(self, config):
        return prefill_build(kv_heads=config["kv_heads"], qo_heads=config["qo_heads"], head_dim=config["head_dim"],
                             dtype=config["dtype"], sliding_window=self.sliding, page_size=config["page_size"],
                             rope_scaling=RopeVariant.from_config(config).tvm_rope_scaling(),
                             **({"sliding_window_size": config["window"]} if self.sliding else {}))

    def raw_cases(self, config, profile):
        return paged_prefill_cases(config, profile, causal=bool(config["causal"]), sliding=self.sliding,
                                   llama3=self.llama3(config))

    def problem(self, config, case):
        arrays = {name: case[name] for name in ("q", "q_indptr", "pages", "page_indptr", "page_values", "length_info",
                                                "k_rope_pos_offset", "q_rope_position")}
        options = dict(_rope_options(config, case), sm_scale=float(case.params["sm_scale"]),
                       causal=bool(config["causal"]), sliding_window=self.sliding,
                       sliding_window_size=config["window"] if self.sliding else 0, page_size=config["page_size"])
        return PrefillProblem("paged", arrays, options, config["dtype"])

    def pod(self, config, case, interface):
        p = case.params
        return {"batch_size": len(case["q_indptr"]) - 1, "causal": int(config["causal"]),
                "rotary_mode": int(p["rotary_mode"]), "rope_scale": p["rope_scale"], "rope_theta": p["rope_theta"],
                "sm_scale": p["sm_scale"]}

    def known_finding(self, check, config):
        return _below_floor(check)


class TvmPrefillSlidingWindow(TvmPrefill):
    """`batch_prefill_paged_kv_sliding_window`: the paged prefill with attention sinks (length_info
    [3, B]) and, with causal 1, the cross-window mask of a compile-time window W."""

    name = "tvm.prefill_sliding_window"
    summary = ("Apache TVM 0.27's generated paged prefill with sinks and a sliding window "
               "(_attention_prefill(sliding_window=True))")
    config_keys = (HEAD_DIM, QO_HEADS, KV_HEADS, DTYPE, PAGE_SIZE, CAUSAL, WINDOW, *SCALING_KEYS)
    checks = ("reference", "page_permutation", "implementations")
    sliding = True
    #: The runtime's use for sinks (causal 0, whole window) in f16; the cross mask at the runtime's W = 1024
    #: and at W = 16, whose rows past 15 see nothing (TVM's convention), in f32 with a group of 3.
    gate_shapes = (dict(head_dim=128, qo_heads=32, kv_heads=8, dtype="f16", causal=0, window=1024),
                   dict(head_dim=64, qo_heads=8, kv_heads=8, dtype="f16", causal=1, window=1024),
                   dict(head_dim=64, qo_heads=6, kv_heads=2, dtype="f32", causal=1, window=16))
    ci_shapes = (dict(head_dim=128, qo_heads=4, kv_heads=1, dtype="f16", causal=0, window=1024),
                 dict(head_dim=64, qo_heads=6, kv_heads=2, dtype="f32", causal=1, window=16))

    def known_finding(self, check, config):
        return None


# -- ragged prefill ---------------------------------------------------------------------------------------
class TvmPrefillRagged(TvmPrefillKernel):
    """`batch_prefill_ragged_kv`: chunks attending ragged K/V rows (the runtime's self-attention of a
    chunk, causal, kv_indptr == q_indptr; paged_kv_cache.cc L2182-2191)."""

    name = "tvm.prefill_ragged"
    summary = "Apache TVM 0.27's generated ragged prefill (_attention_prefill_ragged, tvm.build for webgpu)"
    reference = "verify.references.prefill.ragged_prefill_attention"
    config_keys = (HEAD_DIM, V_HEAD_DIM, QO_HEADS, KV_HEADS, DTYPE, CAUSAL, *SCALING_KEYS)
    checks = ("reference", "causal_split", "prefill_vs_decode", "below_floor", "implementations")
    small_arrays = ("q_indptr", "kv_indptr", "k_rope_pos_offset", "q_rope_position")
    layout_kind = "ragged"
    #: Llama-3.1-8B with its scaling (the runtime's causal self-attention), a group of 5 unmasked, and
    #: f32 with a group of 4. (An MLA-like d_v != d_qk config is checked by `verify check` and the tests:
    #: prefill_vs_decode has no decode to compare it with, and a skip would fail the gate.)
    gate_shapes = (dict(head_dim=128, qo_heads=32, kv_heads=8, dtype="f16", causal=1, **LLAMA_3_1),
                   dict(head_dim=128, qo_heads=10, kv_heads=2, dtype="f16", causal=0),
                   dict(head_dim=64, qo_heads=8, kv_heads=2, dtype="f32", causal=1))
    ci_shapes = (dict(head_dim=128, qo_heads=4, kv_heads=1, dtype="f16", causal=1, **LLAMA_3_1),
                 dict(head_dim=128, qo_heads=10, kv_heads=2, dtype="f16", causal=0))

    def v_dim(self, config):
        return config["v_head_dim"] or config["head_dim"]

    def build(self, config):
        return ragged_prefill_build(kv_heads=config["kv_heads"], qo_heads=config["qo_heads"],
                                    head_dim=config["head_dim"], dtype=config["dtype"], v_head_dim=self.v_dim(config),
                                    rope_scaling=RopeVariant.from_config(config).tvm_rope_scaling())

    def raw_cases(self, config, profile):
        return ragged_prefill_cases(config, profile, causal=bool(config["causal"]), v_head_dim=self.v_dim(config),
                                    llama3=self.llama3(config))

    def problem(self, config, case):
        arrays = {name: case[name] for name in ("q", "q_indptr", "k", "v", "kv_indptr", "k_rope_pos_offset",
                                                "q_rope_position")}
        options = dict(_rope_options(config, case), sm_scale=float(case.params["sm_scale"]),
                       causal=bool(config["causal"]))
        return PrefillProblem("ragged", arrays, options, config["dtype"])

    def pod(self, config, case, interface):
        p = case.params
        return {"batch_size": len(case["q_indptr"]) - 1, "causal": int(config["causal"]),
                "rotary_mode": int(p["rotary_mode"]), "rope_scale": p["rope_scale"], "rope_theta": p["rope_theta"],
                "sm_scale": p["sm_scale"]}

    def known_finding(self, check, config):
        return _below_floor(check)


def _below_floor(check: str):
    """TVM's floor under `below_floor`: rows whose visible logits all lie below it come back wrong."""
    if check == "below_floor":
        return KnownFinding(BELOW_FLOOR_PREFILL, outputs=("output", "lse"), finding_id="tvm-prefill-below-floor")
    return None


def clear_of_floor(problem: PrefillProblem) -> bool:
    """True when no logit of the case can come within FLOOR_MARGIN of TVM's floor, so every row that
    sees anything is inside TVM's domain; False decides nothing.

    A base-2 logit is c q.k with c = sm_scale log2(e), and |q.k| <= |q| |k| (Cauchy-Schwarz), so
    every logit lies within c max|q| max|k| of 0, the maxima over the case's query rows and heads
    and over the key rows it holds. The reference multiplies the rotated keys and queries rounded
    to the storage type: a rotation keeps the norm (its float64 error is far below what follows),
    and the rounding moves each component by at most 2^-11 of itself (f16; f32 less) or half a
    subnormal step, so each norm grows by at most a factor 1 + 2^-10 plus sqrt(D) 2^-24. Its float64
    sum of D products errs by at most gamma_D |q| |k|, covered with the final scaling by the factor
    1 + 1e-12, and 1 more covers this bound's own float64 rounding. Key rows come from the pages the
    page table names (paged kinds; the NaN in their unused slots is no row's key: the strategies
    poison only slots nobody attends) or from k (ragged kinds).

    The squared norms are summed in float32 where the values are f16 (`_squared_norms`): half the
    memory traffic of float64 on a long prompt's tens of millions of values, and each square exact."""
    arrays = problem.arrays
    q = np.asarray(arrays["q"])
    if "pages" in arrays:
        pages = np.asarray(arrays["pages"])
        used = np.unique(np.asarray(arrays["page_values"], np.int64))
        # The keys of every page (a spare page is NaN, as unused slots are), then the used pages'
        keys_norms = _squared_norms(pages[:, 0])[used] if used.size else None
    else:
        keys = np.asarray(arrays["k"])
        keys_norms = _squared_norms(keys) if keys.size else None
    if q.size == 0 or keys_norms is None or keys_norms.size == 0:  # no logit at all: every row sees nothing
        return True
    dim = q.shape[-1]
    with np.errstate(invalid="ignore"):
        q_norm = np.sqrt(np.max(_squared_norms(q)))
        k_norm = np.sqrt(np.nanmax(keys_norms))
    if not (np.isfinite(q_norm) and np.isfinite(k_norm)):
        return False
    grow = 1.0 + 2.0**-10
    extra = math.sqrt(dim) * 2.0**-24
    c = abs(float(problem.options["sm_scale"])) * LOG2E
    bound = c * (q_norm * grow + extra) * (k_norm * grow + extra) * (1.0 + 1e-12) + 1.0
    return bool(bound < -(EMPTY_MAX + FLOOR_MARGIN))


def _squared_norms(x: np.ndarray) -> np.ndarray:
    """An upper bound on sum_d x_d^2 of every row (last axis) of x, float64, NaN where a row holds one.

    f16 values: each square is exact in float32 (an 11-bit significand squared fits float32's 24
    bits, and f16's range squared, 2^-48 to 2^32, lies inside float32's normal range); summed in
    float32 in any order, the n-1 additions err by at most gamma_{n-1} = (n-1)u/(1-(n-1)u) of the
    sum of these non-negative terms (u = 2^-24), so the computed sum times 1/(1 - gamma_{n-1}) (taken
    as 1 + 2 gamma, rounded up by the float64 product's own 1e-12 in clear_of_floor's bound) is at
    least the exact sum. Other types in float64, as the reference reads them."""
    if x.dtype == np.float16:
        n = x.shape[-1]
        gamma_ = max(n - 1, 0) * 2.0**-24 / (1.0 - max(n - 1, 0) * 2.0**-24)
        wide = x.astype(np.float32)
        return np.einsum("...d,...d->...", wide, wide).astype(np.float64) * (1.0 + 2.0 * gamma_)
    wide64 = np.asarray(x, np.float64)
    return np.sum(wide64 * wide64, axis=-1)


# -- token trees --------------------------------------------------------------------------------------------
class TvmTreeAttention(TvmPrefillKernel):
    """`batch_tree_attn`: speculative-decoding token trees over ragged K/V (tree_attn.py L291-326)."""

    name = "tvm.tree_attention"
    summary = "Apache TVM 0.27's generated ragged token-tree attention (tree_attn, tvm.build for webgpu)"
    reference = "verify.references.prefill.tree_attention"
    config_keys: tuple[ConfigKey, ...] = (HEAD_DIM, QO_HEADS, KV_HEADS, DTYPE, *SCALING_KEYS)
    checks: tuple[str, ...] = ("reference", "implementations")
    small_arrays: tuple[str, ...] = ("q_indptr", "kv_indptr", "q_rope_position", "mn_indptr", "mask")
    layout_kind = "tree"
    paged = False
    #: Llama-3-like heads without scaling (tree_attn with llama3 does not build at G = 4: §15), f32 with a group
    #: of 4, and Phi-3-like D = 96 in f32 (the extra-warp finding, KNOWN).
    gate_shapes = (dict(head_dim=128, qo_heads=32, kv_heads=8, dtype="f16"),
                   dict(head_dim=96, qo_heads=32, kv_heads=8, dtype="f32"),
                   dict(head_dim=64, qo_heads=8, kv_heads=2, dtype="f32"))
    ci_shapes = (dict(head_dim=128, qo_heads=8, kv_heads=2, dtype="f16"),
                 dict(head_dim=96, qo_heads=4, kv_heads=1, dtype="f32"))

    def build(self, config):
        return tree_build(kv_heads=config["kv_heads"], qo_heads=config["qo_heads"], head_dim=config["head_dim"],
                          dtype=config["dtype"], paged=self.paged,
                          rope_scaling=RopeVariant.from_config(config).tvm_rope_scaling())

    def raw_cases(self, config, profile):
        return tree_cases(config, profile, paged=self.paged, llama3=self.llama3(config))

    def problem(self, config, case):
        arrays = {name: case[name] for name in ("q", "q_indptr", "k", "v", "kv_indptr", "token_tree_parent_ptr",
                                                "q_rope_position")}
        arrays["tree_order_indptr"] = case["mn_indptr"]
        options = dict(_rope_options(config, case), sm_scale=float(case.params["sm_scale"]))
        return PrefillProblem("tree", arrays, options, config["dtype"])

    def pod(self, config, case, interface):
        p = case.params
        return {"batch_size_plus_1": len(case["q_indptr"]), "rotary_mode": int(p["rotary_mode"]),
                "rope_scale": p["rope_scale"], "rope_theta": p["rope_theta"], "sm_scale": p["sm_scale"]}

    def known_finding(self, check, config):
        """The mask read past the tree wherever `sanitize` logs the accesses (every config); the
        extra warp's stores where the head dim has one (TREE_EXTRA_WARP): its wrong outputs under
        `reference` and `implementations`, its stores past the arrays under `sanitize` too, and,
        where the adapter lets the stray stores race with the loads (NVIDIA's Vulkan driver;
        lavapipe runs the warps in one order), run-to-run differences under `determinism` and
        `page_permutation`."""
        extra_warp = (config["dtype"], config["head_dim"]) in TREE_EXTRA_WARP
        if check == "sanitize":
            # The mask is `mask` in the ragged tree kernel and `tree_order` in the paged one.
            mask = [KnownFinding(TREE_MASK_READ, kinds=(FailureKind.SANITIZER,), reasons=site,
                                 finding_id="tvm-tree-mask-past-tree") for site in TREE_MASK_READ_SITES]
            if extra_warp:
                return [*mask, KnownFinding(TREE_OUT_OF_BOUNDS, kinds=(FailureKind.SANITIZER,),
                                            reasons=TREE_EXTRA_WARP_SITE, finding_id="tvm-tree-extra-warp")]
            return mask
        if extra_warp and check in ("reference", "implementations"):
            return KnownFinding(TREE_OUT_OF_BOUNDS, outputs=("output", "lse"), finding_id="tvm-tree-extra-warp")
        if extra_warp and check in ("determinism", "page_permutation"):
            return KnownFinding(TREE_EXTRA_WARP_RACE, outputs=("output", "lse"), finding_id="tvm-tree-extra-warp")
        return None

    def finding_examples(self, check, config):
        """`sanitize`'s first case (one tree of one token), whose accesses show the mask read past
        the tree on every config and the extra warp's stores where the head dim has one; under
        `reference`, where the extra warp's stores show as wrong outputs, the simplest case with a
        tree of TREE_WRONG_TOKENS tokens (the simplest case, one token, passes: the wrong outputs
        show from a tree's fourth row on)."""
        if check == "sanitize":
            return [first_drawn(self, check, config)]
        if check == "reference" and (config["dtype"], config["head_dim"]) in TREE_EXTRA_WARP:
            return [first_drawn(self, check, config, lambda case: max(case.params["qo_lens"]) >= TREE_WRONG_TOKENS)]
        return []


class TvmTreeAttentionPaged(TvmTreeAttention):
    """`tree_attn_paged_kv`: token trees as the last rows of a paged context (tree_attn.py L808-889);
    rotary is asserted off (L887-889) and the page size is 16 (L845)."""

    name = "tvm.tree_attention_paged"
    summary = ("Apache TVM 0.27's generated token-tree attention over the paged KV cache "
               "(tree_attn_with_paged_kv_cache, tvm.build for webgpu)")
    reference = "verify.references.prefill.paged_tree_attention"
    config_keys = (HEAD_DIM, QO_HEADS, KV_HEADS, DTYPE, PAGE_SIZE)
    checks = ("reference", "page_permutation", "implementations")
    small_arrays = ("q_indptr", "page_indptr", "page_values", "length_info", "tree_order_indptr", "tree_order")
    pages_offsets = (0,)  # the rotary branch is dead, and with it the pages' element offset (docs/tvm.md §11.1)
    layout_kind = "paged_tree"
    paged = True

    def build(self, config):
        return tree_build(kv_heads=config["kv_heads"], qo_heads=config["qo_heads"], head_dim=config["head_dim"],
                          dtype=config["dtype"], paged=True)

    def problem(self, config, case):
        arrays = {name: case[name] for name in ("q", "q_indptr", "pages", "page_indptr", "page_values", "length_info",
                                                "token_tree_parent_ptr", "tree_order_indptr")}
        return PrefillProblem("paged_tree", arrays, {"sm_scale": float(case.params["sm_scale"]),
                                                     "page_size": config["page_size"]}, config["dtype"])

    def pod(self, config, case, interface):
        return {"batch_size": len(case["q_indptr"]) - 1, "sm_scale": case.params["sm_scale"]}


# -- dense sequence prefill ---------------------------------------------------------------------------------
def sequence_tile_x(head_dim: int, dtype: str) -> int:
    """Rows of (token, head-in-group) one workgroup of `batch_sequence_prefill_kv` covers: 64 bytes'
    worth of elements, divided by ceil(D / 128) ... as `_get_prefill_kernel_config` (_kernel_common.py
    L625-692): 32 (f16) or 16 (f32), over max(D // 128, 1)."""
    return (32 if dtype == "f16" else 16) // max(head_dim // 128, 1)


class TvmSequencePrefill(TvmPrefillKernel):
    """`batch_sequence_prefill_kv`: a dense batch [B, L, H, D], causal and sm_scale fixed at build
    time (_prefill_kernels.py L395-507), lse stored in the qkv dtype (L414). The paged KV cache does
    not use it (kv_cache.py only re-exports it). Its grid is data dependent and packs like decode's."""

    name = "tvm.sequence_prefill"
    summary = ("Apache TVM 0.27's generated dense-batch prefill (_attention_sequence_prefill; not used by the "
               "KV cache)")
    reference = "verify.references.prefill.ragged_prefill_attention"
    config_keys = (HEAD_DIM, QO_HEADS, KV_HEADS, DTYPE, CAUSAL)
    checks = ("reference", "causal_split", "packed_grid", "implementations")
    layout_kind = "dense"
    output_axes = {"output": ("head", "dim"), "lse": ("token", "head")}
    gate_shapes = (dict(head_dim=128, qo_heads=32, kv_heads=8, dtype="f16", causal=1),
                   dict(head_dim=64, qo_heads=6, kv_heads=2, dtype="f32", causal=0))
    ci_shapes = (dict(head_dim=128, qo_heads=4, kv_heads=1, dtype="f16", causal=1), gate_shapes[1])

    def build(self, config):
        return sequence_prefill_build(kv_heads=config["kv_heads"], qo_heads=config["qo_heads"],
                                      head_dim=config["head_dim"], dtype=config["dtype"], causal=bool(config["causal"]),
                                      sm_scale=float(config["head_dim"] ** -0.5))

    def raw_cases(self, config, profile):
        return dense_prefill_cases(config, profile, causal=bool(config["causal"]))

    def cases(self, config, profile):
        return self.raw_cases(config, profile).filter(lambda case: self.within_floor(config, case))

    def packed_grid_cases(self, config, profile):
        """The cases with the web runtime's packing threshold lowered to 2 or 3 workgroups, so every
        grid takes the packed path (x halved, rounding up, z doubled)."""
        return st.tuples(self.cases(config, profile), st.sampled_from([2, 3])).map(
            lambda pair: pair[0].replace(grid_limit=pair[1]))

    def finding_examples(self, check, config):
        """packed_grid's simplest case of a batch of 3 over a threshold of 2: the grid packs 3
        workgroups into x = 2, z doubled, and the workgroup past the batch writes past output and
        lse on every seed (a batch the packing divides evenly shows nothing)."""
        if check != "packed_grid":
            return []
        return [first_drawn(self, check, config,
                            lambda case: case["q"].shape[0] == 3 and case.params["grid_limit"] == 2)]

    def lse_dtype(self, config):
        return config["dtype"]

    def problem(self, config, case):
        q, k, v = case["q"], case["k"], case["v"]
        batch, qo_len, kv_len = q.shape[0], q.shape[1], k.shape[1]
        arrays = {"q": q.reshape(batch * qo_len, *q.shape[2:]), "q_indptr": np.arange(batch + 1) * qo_len,
                  "k": k.reshape(batch * kv_len, *k.shape[2:]), "v": v.reshape(batch * kv_len, *v.shape[2:]),
                  "kv_indptr": np.arange(batch + 1) * kv_len}
        options = {"sm_scale": float(config["head_dim"] ** -0.5), "causal": bool(config["causal"])}
        return PrefillProblem("ragged", arrays, options, config["dtype"], lse_dtype=config["dtype"])

    def expected(self, config, case):
        batch, qo_len = case["q"].shape[:2]
        expected = []
        for e in super().expected(config, case):
            shape = (batch, qo_len) + e.lo.shape[1:]
            expected.append(Expected(e.name, e.lo.reshape(shape), e.hi.reshape(shape), e.budget.reshape(shape),
                                     e.dtype, convention=None if e.convention is None else e.convention.reshape(shape)))
        return expected

    def tiles(self, config, case) -> int:
        group = config["qo_heads"] // config["kv_heads"]
        return -(-case["q"].shape[1] * group // sequence_tile_x(config["head_dim"], config["dtype"]))

    def grid(self, config, case):
        return case["q"].shape[0] * self.tiles(config, case), config["kv_heads"]

    def inputs(self, config, case):
        return {}, {name: case[name] for name in ("q", "k", "v")}, None

    def output_shapes(self, config, case):
        batch, qo_len, heads, dim = case["q"].shape
        dtype = STORAGE[config["dtype"]]
        return {"output": Output(dtype, (batch, qo_len, heads, dim)), "lse": Output(dtype, (batch, qo_len, heads))}

    def pod(self, config, case, interface):
        """batch_size, qo_len, kv_len, and the host's common subexpression batch_tiles = ceil(qo_len G /
        tile_x), which TVM passes under a build-dependent name `cse_vN` (read from the PODArgs struct)."""
        tiles = self.tiles(config, case)
        struct = next(b for b in interface.bindings if b.address_space == "uniform")
        common = [name for name, _ in interface.struct_of(struct).members if name.startswith("cse_v")]
        return dict({"batch_size": case["q"].shape[0], "qo_len": case["q"].shape[1], "kv_len": case["k"].shape[1]},
                    **{name: tiles for name in common})

    def split_chunk(self, config, case):
        return split_chunk(case, "dense")

    def known_finding(self, check, config):
        if check == "packed_grid":
            return KnownFinding(PACKED_GRID, kinds=(FailureKind.WRITE_OUT_OF_BOUNDS,), finding_id="tvm-packed-grid")
        return None
