"""Every documented upstream finding (docs/findings.md) as a reproduction folder, regenerated from
the finding's own case: `verify findings export [-o reports/findings]`.

`FINDINGS` is the registry: for each finding, its folder name, its section of docs/findings.md,
the kernel, check and config it shows under, how to make its case (the kernel's own
`finding_examples` where it has them, else the case the documented reproduction uses), and what
a maintainer reads: the headline, the explanation, and where it does not show and why. Each case
is also run once here, on the kernel's own WebGPU implementation (and through the sanitizer for
the findings it names lines for): what came back goes to OBSERVED.md beside the reproduction, not
into its files, which are the same bytes wherever and whenever they are exported (the committed
reports/findings/ is a fresh export, byte for byte); the sanitizer's lines go into ISSUE.md and
the page in a form that does not depend on the run (stable_message).

Findings of a WebGPU implementation rather than of a kernel (lavapipe's workgroup memory, §8;
its loop cap, §9; Naga and Tint disagreeing, §12) ship no folder of their own: §8 and §12 show
through the kernels that meet them (ort-small-m-zero-init, ort-tile-naga-refuses), and §9 needs a
kernel of 65536 loop iterations per invocation, which no kernel here has. TVM's llama3 rope scaling
(§15) is a refusal of `tvm.build`, not a result of a kernel: there is no WGSL for a folder to run.
Of ONNX Runtime Web's attention (§18) only what shows in a program verify launches itself ships a
folder: §18.1 (`ort.attention.decode_qkv` with a softcap), §18.2 (`ort.attention.flash`), §18.3
(the same program with §18.2's accumulators zeroed, a folder `transform`), §18.4
(`ort.attention.paged_prefill`), §18.5 (`ort.attention.copy_kv_cache`), §18.6
(`ort.attention.decode_qkv`) and §18.7 (`ort.attention.flash` under `sanitize`, with §18.2 and §18.3
fixed by its `transform`); `ort.gqa` and `ort.paged_attention` run an ORT session in Node, whose
WebGPU calls the recording device never sees (docs/findings.md "Reproductions").
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from verify._files import write_atomic
from verify.cases import Case
from verify.errors import SetupError, UsageError
from verify.export.capture import capture
from verify.export.write import Story, render, write_folder
from verify.kernels.contract import Upstream

#: The file beside the folders that lists them, which `verify report` reads to link known findings.
INDEX = "index.json"
INDEX_SCHEMA = "verify.findings/1"


@dataclass(frozen=True)
class Finding:
    """One documented upstream finding and its case.

    `make_case(kernel, config)` builds the case (None: the kernel's first `finding_examples`).
    `shows` says, per place a reproduction runs ("chromium": this machine's headless Chromium,
    SwiftShader; "wgpu": wgpu-native on Mesa 22.3 lavapipe; "dawn": Dawn in Node on Mesa 25
    lavapipe), the verdict it gives there and, where that is not FAIL, why: the tests hold each
    reproduction to it. `sanitize`: the case is also run through the sanitizer, whose messages
    name the offending lines. `implementation`: where the case is run for ISSUE.md (default: the
    kernel's own). `transform(wgsl)`: the WGSL the folder runs, where it is not the kernel's own.
    `fixed_shows`: where `fixed/` does not PASS, the verdict it gives there and why (as `shows`,
    per place; elsewhere it passes).

    `name` is the finding's id (verify.findings): its title, section of docs/findings.md, the
    layer to blame and where to report it come from that one declaration.
    """

    name: str
    kernel: str
    check: str
    config: dict
    detail: tuple
    shows: dict
    make_case: Callable | None = None
    notes: tuple = ()
    sanitize: bool = False
    implementation: str | None = None
    upstream: Upstream | None = None
    links: tuple = ()
    fix: Callable | None = None
    fix_text: str = ""
    fixed_shows: dict | None = None
    transform: Callable | None = None

    @property
    def declared(self):
        """The finding as verify.findings declares it."""
        from verify.findings import get_finding

        return get_finding(self.name)

    @property
    def title(self) -> str:
        return self.declared.title

    @property
    def section(self) -> str:
        return self.declared.section


# -- the findings' cases ---------------------------------------------------------------------------------
def merge_case(tokens: int, heads: int, head_dim: int, seed: int = 0) -> Case:
    """Two states per (token, head) with comparable LSEs (`close`): N(0, 1) values, f32."""
    from verify.kernels.attention.cases import _lse_pair
    from verify.sources.tvm.attention.decode import tvm_empty_states

    rng = np.random.default_rng(seed)
    s, s_other = _lse_pair(rng, "close", (tokens, heads))
    v, v_other = (rng.standard_normal((tokens, heads, head_dim)).astype(np.float32) for _ in range(2))
    return tvm_empty_states(Case({"v": v, "s": s, "v_other": v_other, "s_other": s_other},
                                 {"tokens": tokens, "heads": heads, "lse_kind": "close", "values": "normal",
                                  "seed": seed}))


def two_empty_states(kernel, config) -> Case:
    """Token 0: both states empty (lse -inf, v 0); token 1: only this side empty; token 2: only the other."""
    s = np.array([[-np.inf], [-np.inf], [1.0]], np.float32)
    s_other = np.array([[-np.inf], [2.0], [-np.inf]], np.float32)
    v = np.where(np.isinf(s)[..., None], 0.0, np.ones((3, 1, config["head_dim"]))).astype(np.float32)
    v_other = np.where(np.isinf(s_other)[..., None], 0.0, np.full((3, 1, config["head_dim"]), 2.0)).astype(np.float32)
    return Case({"v": v, "s": s, "v_other": v_other, "s_other": s_other}, {"tokens": 3, "lse_kind": "empty", "seed": 0})


def decode_case(lengths, *, below_floor_by: float | None = None):
    def make(kernel, config) -> Case:
        from verify.kernels.attention.cases import explicit_decode_case
        from verify.sources.tvm.attention.decode import below_floor

        case = explicit_decode_case(config, lengths)
        return below_floor(config, case, below_floor_by) if below_floor_by else case
    return make


def same_sign_case(kernel, config) -> Case:
    """Every 4-bit weight -8 (code 0), A = +1 over the first half of K and -(1 - 2^-11) over the
    second: each 32-value chunk adds about -3000 to the running sums, which reach -96000 (past
    f16's 65504) before they fall back; the DP4A-exact Y is 0, the unquantized Y -46.875."""
    from verify.references.dp4a_quant import pack_codes, quantize_blocks
    from verify.references.nbits import pack_weights

    dtype, m, k, n = config["dtype"], 4, 2048, 16
    t = np.float16 if dtype == "f16" else np.float32
    a = np.full((1, m, k), 1.0, t)
    a[..., k // 2:] = t(-(1 - 2.0**-11))
    quantized = quantize_blocks(a, dtype)
    return Case({"a": a, "a_codes": pack_codes(quantized.codes), "a_scales": quantized.scales.astype(t),
                 "b": pack_weights(np.zeros((n, k), np.uint8), 4, 32),
                 "b_scales": np.full((n, k // 32), 3000 / 256, t)},
                {"batch": 1, "m": m, "n": n, "k": k, "seed": 0, "peak_partial_sum": 96000.0})


def zero_block_case(kernel, config) -> Case:
    """Two rows of 256 values: the first 128 of each all zero, the rest a ramp."""
    a = np.zeros((2, 256), np.float32)
    a[:, 128:] = np.linspace(-1, 1, 128, dtype=np.float32)
    return Case({"a": a}, {"seed": 0, "zero_blocks": 2})


def matmul_case(m: int, k: int = 256, n: int = 16, seed: int = 3):
    def make(kernel, config) -> Case:
        from verify.references.dp4a_quant import pack_codes, quantize_blocks
        from verify.references.nbits import pack_weights

        rng = np.random.default_rng(seed)
        a = rng.uniform(-1, 1, (1, m, k)).astype(np.float32)
        quantized = quantize_blocks(a, "f32")
        codes = rng.integers(0, 16, (n, k)).astype(np.uint8)
        return Case({"a": a, "a_codes": pack_codes(quantized.codes), "a_scales": quantized.scales.astype(np.float32),
                     "b": pack_weights(codes, 4, 32), "b_scales": np.full((n, k // 32), 2.0**-6, np.float32)},
                    {"batch": 1, "m": m, "n": n, "k": k, "seed": seed})
    return make


def with_storage_barrier(wgsl: str) -> str:
    """TVM's merge with one `storageBarrier()` before its write of S: every lane of a row reads S
    before any writes it (the fix of the race)."""
    lines = wgsl.splitlines(keepends=True)
    writes = [i for i, line in enumerate(lines) if line.lstrip().startswith("S_ptr[") and "= (log2(" in line]
    if len(writes) != 1:
        raise UsageError("TVM's merge WGSL has no single write of S_ptr to put a barrier before")
    indent = lines[writes[0]][:len(lines[writes[0]]) - len(lines[writes[0]].lstrip())]
    return "".join(lines[:writes[0]] + [f"{indent}storageBarrier();\n"] + lines[writes[0]:])


def tree_case(trees):
    def make(kernel, config) -> Case:
        from verify.kernels.attention.prefill_cases import explicit_tree_case

        return explicit_tree_case(config, trees)
    return make


def future_case(kernel, config) -> Case:
    """One causal chunk of 20 tokens on its own 20 rows of context, every logit at least 600 below
    -5e4: each row's future columns weigh 1 where they must weigh 0 (docs/findings.md §16)."""
    from verify.kernels.attention.prefill_cases import explicit_paged_case

    return kernel.below_floor(config, explicit_paged_case(config, [20], [20], causal=True), 600.0)


#: A load store of TVM's tree kernels: `Q_smem`, `K_smem` or `V_smem` at an index of the loads' fused loop.
_TREE_LOAD_STORE = re.compile(r"^(\s*)((Q_smem|K_smem|V_smem)\[\(\(\(\((li_lj|lz_ly)_fused_0(_1)? \* 256i\).*)$")
#: The warps TVM's tree kernels split their Q/K/V loads over (`apply_to_qkv_load`, num_warps = 4).
TREE_LOAD_WARPS = 4


def with_extra_warp_guarded(wgsl: str) -> str:
    """TVM's tree kernel with each Q/K/V load store wrapped in `if (threadIdx.y < 4)`: only the warps
    the loads were split for store, so a workgroup padded to a fifth warp no longer writes past the tiles."""
    guard = f"if (i32(threadIdx.y) < {TREE_LOAD_WARPS}i) {{ "
    lines = [_TREE_LOAD_STORE.sub(rf"\1{guard}\2 }}", line) for line in wgsl.splitlines()]
    if sum(line.lstrip().startswith(guard) for line in lines) < 5:
        raise UsageError("TVM's tree WGSL has not the Q/K/V load stores to guard")
    return "\n".join(lines) + "\n"


#: The line of ORT's small-M program after which its workgroup's sums are cleared.
_SMALL_M_ANCHOR = ("  let global_idx = workgroup_idx * (workgroup_size_x * workgroup_size_y * workgroup_size_z) "
                   "+ local_idx;\n")


def with_cleared_sums(wgsl: str) -> str:
    """ORT's small-M program with `inter_results` set to 0 by its own lanes (and a barrier) before
    any lane adds to it: the sums no longer rest on zero-initialised workgroup memory."""
    if wgsl.count(_SMALL_M_ANCHOR) != 1:
        raise UsageError("ORT's small-M WGSL has no single line computing global_idx to clear the sums after")
    return wgsl.replace(_SMALL_M_ANCHOR, _SMALL_M_ANCHOR + "  inter_results[local_idx / 32][local_idx % 32] = 0;\n"
                        "  workgroupBarrier();\n")


def decode_qkv_case(past: list[int], seed: int = 4):
    """One new token for each sequence of `past` cached tokens (a static cache as long as the
    longest total, the rows past a shorter sequence's total NaN), N(0, 1) values: the case
    ort.attention.decode_qkv draws (verify.sources.ort.attention.cases.gqa_cases), fixed."""
    def make(kernel, config) -> Case:
        from verify.budgets.roundoff import numpy_dtype

        t = numpy_dtype(config["dtype"])
        rng = np.random.default_rng(seed)
        n, nkv, h = config["num_heads"], config["kv_num_heads"], config["head_size"]
        batch, capacity = len(past), max(past) + 1
        past_key, past_value = (rng.standard_normal((batch, nkv, capacity, h)).astype(t) for _ in range(2))
        for b, length in enumerate(past):
            past_key[b, :, length:], past_value[b, :, length:] = np.nan, np.nan
        arrays = {"query": rng.standard_normal((batch, 1, n * h)).astype(t),
                  "key": rng.standard_normal((batch, 1, nkv * h)).astype(t),
                  "value": rng.standard_normal((batch, 1, nkv * h)).astype(t),
                  "past_key": past_key, "past_value": past_value, "seqlens_k": np.asarray(past, np.int32),
                  "total_sequence_length": np.asarray(capacity, np.int32)}
        return Case(arrays, {"batch": batch, "new": 1, "past": list(past), "capacity": capacity, "q_spread": 1.0,
                             "seed": seed, "path": "split"})
    return make


def flash_case(new: int, past: int = 0, seed: int = 5, spread: float = 1.0):
    """One sequence of `new` new tokens after `past` cached ones in a cache as long as the total
    (verify.sources.ort.attention.programs.flash_prefill_case: values rounded to multiples of 1/4,
    so the folder's files compress)."""
    def make(kernel, config) -> Case:
        from verify.sources.ort.attention.programs import flash_prefill_case

        return flash_prefill_case(config, new, past=past, seed=seed, spread=spread)
    return make


#: ORT's FlashAttention program's loop-body score accumulators, declared without initializer.
_FLASH_SCORES = re.compile(r"var (qk_[1-4]) : (vec4<qk_precision>);")


def with_zeroed_scores(wgsl: str) -> str:
    """ORT's FlashAttention with `= vec4<qk_precision>(0)` on its four loop-body score
    accumulators qk_1..qk_4: each key step's scores start from 0 whether or not the compiler
    re-zeroes a loop body's `var` each iteration."""
    if sorted(_FLASH_SCORES.findall(wgsl)) != [(f"qk_{n}", "vec4<qk_precision>") for n in range(1, 5)]:
        raise UsageError("ORT's FlashAttention WGSL declares not qk_1..qk_4 once each without initializer")
    return _FLASH_SCORES.sub(r"var \1 = \2(0);", wgsl)


def with_four_keys_a_step_on_4_lanes(wgsl: str) -> str:
    """ORT's FlashAttention (its accumulators zeroed, with_zeroed_scores) with keys 4..7 of each
    step masked where the subgroup has 4 lanes: the `sg_size <= 8` branch then scores only the 4
    keys the loop loaded and advanced by, as it does right at 8 lanes."""
    for j in range(4, 8):
        visible = f"is_key_visible(k_start + {j}, local_window_start, seq_causal_length)"
        if visible not in wgsl:
            raise UsageError(f"ORT's FlashAttention WGSL does not test key k_start + {j} with is_key_visible")
        wgsl = wgsl.replace(visible, f"{visible} && sg_size > 4u")
    return wgsl


#: ORT's paged prefill program's score: declared in the model's type, summed over the head's vec4 dots.
_PREFILL_SCORE = ("      var score = q_element_t(0);\n"
                  "      for (var i = 0u; i < head_size_vec; i++) {\n"
                  "        score += dot(q_tile[i], k_tile[k][i]);\n"
                  "      }\n"
                  "      qk_scores[k] = select(min_value, score, ")


def with_f32_scores(wgsl: str) -> str:
    """ORT's FlashAttentionPagedPrefill with its q.k sum kept in f32 (each vec4 dot taken in f32)
    and rounded to the model's type once, when stored: a partial sum past 65504 stays finite."""
    if wgsl.count(_PREFILL_SCORE) != 1:
        raise UsageError("ORT's FlashAttentionPagedPrefill WGSL has no single q.k sum in q_element_t to widen")
    return wgsl.replace(_PREFILL_SCORE, _PREFILL_SCORE.replace("var score = q_element_t(0);", "var score = f32(0);")
                        .replace("dot(q_tile[i], k_tile[k][i])", "dot(vec4<f32>(q_tile[i]), vec4<f32>(k_tile[k][i]))")
                        .replace("select(min_value, score, ", "select(min_value, q_element_t(score), "))


#: ORT's decode QKV program's workgroup arrays it adds onto without writing first.
_DECODE_SUMS = re.compile(r"var<workgroup> (inner_qk_values|tile_output): (array<.*>);")


def with_cleared_partials(wgsl: str) -> str:
    """ORT's FlashAttentionDecodeQKV with `inner_qk_values` and `tile_output` set to 0 by the
    workgroup's own lanes (and a barrier) before any lane adds to them: the tile's scores and
    output no longer rest on zero-initialised workgroup memory. The arrays are flattened by
    their declared sizes, so the clearing follows whatever m_tile and head size ORT generated."""
    if wgsl.count(_SMALL_M_ANCHOR) != 1:
        raise UsageError("ORT's decode QKV WGSL has no single line computing global_idx to clear the sums after")
    declared = dict(_DECODE_SUMS.findall(wgsl))
    if set(declared) != {"inner_qk_values", "tile_output"}:
        raise UsageError("ORT's decode QKV WGSL declares not both inner_qk_values and tile_output")
    clearing = ""
    for name, kind in declared.items():
        sizes = [int(size) for size in re.findall(r", (\d+)>", kind)][::-1]  # outermost first
        total = int(np.prod(sizes))
        index = "".join(f"[(z / {int(np.prod(sizes[i + 1:]))}u) % {size}u]" for i, size in enumerate(sizes))
        element = "f32(0)" if name == "inner_qk_values" else "q_value_t(0)"
        clearing += (f"  for (var z = local_idx; z < {total}u; z += workgroup_size_x) "
                     f"{{ {name}{index} = {element}; }}\n")
    return wgsl.replace(_SMALL_M_ANCHOR, _SMALL_M_ANCHOR + clearing + "  workgroupBarrier();\n")


#: The line of ORT's decode QKV program that adds the attention bias to a key's score, after the
#: head's q.k is summed: the place GroupQueryAttention's softcap belongs (the bias comes after the
#: cap in ORT's other providers; these sessions have none).
_DECODE_SCORE_BIAS = "      sum += f32(loadAttentionBias("


def with_softcap(softcap: float):
    """ORT's FlashAttentionDecodeQKV with each score capped, `sum = t * tanh(sum / t)`, before
    the bias and the causal mask: what GroupQueryAttention's `softcap` t asks and no line of the
    generated program does (it has no softcap uniform, so t is written in)."""
    def fix(wgsl: str) -> str:
        if wgsl.count(_DECODE_SCORE_BIAS) != 1:
            raise UsageError("ORT's decode QKV WGSL has no single line adding the attention bias to a score")
        cap = f"{float(softcap)!r}"
        return wgsl.replace(_DECODE_SCORE_BIAS, f"      sum = {cap} * tanh(sum / {cap});\n{_DECODE_SCORE_BIAS}")
    return fix


#: CopyKVCache's branch that copies a new token (row - past_b of key/value) into present.
_COPY_NEW_TOKEN = "} else {\n  let offset = i2o_key("


def with_copy_below_total(wgsl: str) -> str:
    """ORT's CopyKVCache with the copy of a new token guarded to rows below the sequence's own
    total (`sequence_id < total_seq_length`), and zeros written to the rows past it (which the
    program still writes, as every row below the batch's largest total): no read of key or value
    past the new tokens a sequence has."""
    if wgsl.count(_COPY_NEW_TOKEN) != 1 or "let total_seq_length = " not in wgsl:
        raise UsageError("ORT's CopyKVCache WGSL has no single branch copying a new token after its total")
    head, tail = wgsl.split(_COPY_NEW_TOKEN)
    body, rest = tail.split("\n}", 1)
    zeros = ("} else {\n  present_key[present_offset] = key_value_t();\n"
             "  present_value[present_offset] = key_value_t();\n}")
    return f"{head}}} else if (sequence_id < total_seq_length) {{\n  let offset = i2o_key({body}\n{zeros}{rest}"


#: ORT's FlashAttention loads of a key step's K and V rows: both operands of the select are evaluated.
_FLASH_STEP_LOAD = re.compile(r"let val = select\(q_value_t\(0\), (present_key|present_value)\[offset \+ idx\], "
                              r"([kv]_start) \+ slot < total_seq\);")


def with_right_outputs(wgsl: str) -> str:
    """ORT's FlashAttention with §18.2's accumulators zeroed and §18.3's keys 4..7 masked at 4 lanes
    (with_zeroed_scores, with_four_keys_a_step_on_4_lanes), line for line: its outputs are right on
    every subgroup width, so a folder of a finding no output shows has no other finding on top."""
    return with_four_keys_a_step_on_4_lanes(with_zeroed_scores(wgsl))


def with_loads_under_an_if(wgsl: str) -> str:
    """ORT's FlashAttention with each K and V row of a key step loaded only where the row is below
    the sequence's total (`if (k_start + slot < total_seq)`, zero otherwise, as the select gives):
    no read past the cache buffer. One line each, so the program's other lines keep their numbers."""
    if sorted(name for name, _ in _FLASH_STEP_LOAD.findall(wgsl)) != ["present_key", "present_value"]:
        raise UsageError("ORT's FlashAttention WGSL does not load present_key and present_value once each through "
                         "a select")
    return _FLASH_STEP_LOAD.sub(r"var val = q_value_t(0); if (\2 + slot < total_seq) { val = \1[offset + idx]; }",
                                wgsl)


def llamacpp_case(name: str):
    """A case of llama.cpp's quant family by its function's name (verify.sources.llamacpp.quant.cases)."""
    def make(kernel, config) -> Case:
        from verify.sources.llamacpp.quant import cases

        return getattr(cases, name)()
    return make


def vec_attention_case(batch: int, rows: int, keys: int, mask_kind: str, seed: int):
    """A split-KV decode case of `keys` keys (verify.sources.llamacpp.attention.cases.make_case:
    N(0, 1) queries, verify's normal values for K and V, llama.cpp's mask of `mask_kind`)."""
    def make(kernel, config) -> Case:
        from verify.sources.llamacpp.attention.cases import make_case

        return make_case(config, batch, rows, keys, keys, "normal", mask_kind, 1.0, seed, kernel.kv_tile(config))
    return make


def reduce_case(batch: int, rows: int, heads: int, seed: int):
    """Split states for flash_attn_vec_reduce (its own make_case: some splits empty)."""
    def make(kernel, config) -> Case:
        return kernel.make_case(config, batch, rows, heads, 4.0, 0.3, seed)
    return make


#: load_u32_at_src0's load of the word after the one an offset falls in (common_decls.tmpl).
_NEXT_WORD = "    let hi = src0[word_idx + 1u];\n"


def with_next_word_when_needed(wgsl: str) -> str:
    """ggml-webgpu's mat-vec with load_u32_at_src0 loading the next word only where the offset is
    not word-aligned (`shift != 0u`), the only case whose result uses it: one line, so the
    program's other lines keep their numbers."""
    if wgsl.count(_NEXT_WORD) != 1:
        raise UsageError("ggml-webgpu's mul_mat_vec WGSL has no single load of src0[word_idx + 1u]")
    return wgsl.replace(_NEXT_WORD, "    var hi = 0u; if (shift != 0u) { hi = src0[word_idx + 1u]; }\n")


#: calc_softmax_term's reads of the tile arrays through select (flash_attn_vec_split.wgsl).
_TILE_READ = re.compile(r"(inter_shmem|mask_shmem)\[kv_idx\](?=(?:[^;]*?)kv_idx < (\d+)\))", re.S)


def with_tile_index_clamped(wgsl: str) -> str:
    """ggml-webgpu's flash_attn_vec_split with calc_softmax_term's reads of inter_shmem and
    mask_shmem at `min(kv_idx, KV_TILE - 1)`: the select still discards them past the tile, but
    no lane reads past the arrays. Each read keeps its line."""
    found = _TILE_READ.findall(wgsl)
    if not found or not {"inter_shmem"} <= {name for name, _ in found}:
        raise UsageError("ggml-webgpu's flash_attn_vec_split WGSL has no select reading inter_shmem[kv_idx] "
                         "below a KV_TILE bound")
    return _TILE_READ.sub(lambda m: f"{m[1]}[min(kv_idx, {int(m[2]) - 1}u)]", wgsl)


#: flash_attn_vec_reduce's reads of each lane's split statistics (through select on active_thread).
_STATS_READ = "tmp[stats_base + 2u * thread + "


def with_stats_index_clamped(wgsl: str) -> str:
    """ggml-webgpu's flash_attn_vec_reduce with each lane's statistics read at split
    `min(thread, nwg - 1)`: the select still discards them for lanes past nwg, but none reads past
    its row or the scratch buffer. Each read keeps its line."""
    if wgsl.count(_STATS_READ) != 2:
        raise UsageError("ggml-webgpu's flash_attn_vec_reduce WGSL does not read tmp[stats_base + 2u * thread + ...] "
                         "twice")
    return wgsl.replace(_STATS_READ, "tmp[stats_base + 2u * min(thread, params.nwg - 1u) + ")


#: load_u32_at_src's load of the word after the one an offset falls in (common_decls.tmpl), get_rows' twin
#: of load_u32_at_src0.
_NEXT_SRC_WORD = "    let hi = src[word_idx + 1u];\n"


def with_next_src_word_when_needed(wgsl: str) -> str:
    """ggml-webgpu's get_rows with load_u32_at_src loading the next word only where the offset is
    not word-aligned (`shift != 0u`), the only case whose result uses it: one line, so the
    program's other lines keep their numbers."""
    if wgsl.count(_NEXT_SRC_WORD) != 1:
        raise UsageError("ggml-webgpu's get_rows WGSL has no single load of src[word_idx + 1u]")
    return wgsl.replace(_NEXT_SRC_WORD, "    var hi = 0u; if (shift != 0u) { hi = src[word_idx + 1u]; }\n")


#: soft_max.wgsl's initial max without a sink (lower_max_bound).
_SOFT_MAX_FLOOR = "    return -1e30;\n"


def with_lowest_finite_floor(wgsl: str) -> str:
    """ggml-webgpu's soft_max with lower_max_bound's -1e30 replaced by f32's lowest finite value
    (-0x1.fffffep+127f): no finite logit is below it, so the row's max is the row's own, as ggml's
    CPU code (which starts at -INFINITY) has it for every row with a finite logit. (-inf itself is
    no WGSL constant: a const-expression that evaluates to an infinity is a shader-creation error.)
    One line, so the program's other lines keep their numbers."""
    if wgsl.count(_SOFT_MAX_FLOOR) != 1:
        raise UsageError("ggml-webgpu's soft_max WGSL does not return -1e30 once (lower_max_bound without sinks)")
    return wgsl.replace(_SOFT_MAX_FLOOR, "    return -0x1.fffffep+127f;\n")


#: mul_mat_vec_acc.tmpl's inner_dot for f16 activations (SRC1_TYPE vec4<f16>): the dot taken in f16.
_F16_DOT = "    return f32(dot(vec4<f16>(src0_val), src1_val));\n"


def with_f32_dot(wgsl: str) -> str:
    """ggml-webgpu's f16 x f16 mat-vec (VEC) with inner_dot taking its dot product in f32
    (`dot(vec4<f32>(src0_val), vec4<f32>(src1_val))`): a product of two f16 values is exact in
    f32, as in the SCALAR program, and no vec4 of them overflows. One line, so the program's other
    lines keep their numbers."""
    if wgsl.count(_F16_DOT) != 1:
        raise UsageError("ggml-webgpu's mul_mat_vec WGSL has no single f16 inner_dot "
                         "(f32(dot(vec4<f16>(src0_val), src1_val)))")
    return wgsl.replace(_F16_DOT, "    return dot(vec4<f32>(src0_val), vec4<f32>(src1_val));\n")


def soft_max_floor_case(kernel, config) -> Case:
    """llamacpp.ops.soft_max's own case of §19.7: its corner `below_floor` (logits all below -1e30),
    which the op without mask or sinks takes last."""
    found = [case for case in kernel.corners(config) if case.params["logits"] == "below_floor"]
    if not found:
        raise UsageError(f"{kernel.name} has no below_floor corner for {config}: §19.7 needs the op without sinks")
    return found[0]



#: flash_attn_vec_split's load of the mask tile (the select's operand, read for every column).
_MASK_LOAD = "f32(mask[mask_idx])"


def with_mask_column_clamped(wgsl: str) -> str:
    """ggml-webgpu's flash_attn_vec_split with the mask tile loaded at column
    `min(global_k_col, seq_len_kv - 1)` of its row: the select still discards the columns past
    seq_len_kv, but none reads past the row or the binding. One line, which keeps its number."""
    if wgsl.count(_MASK_LOAD) != 1:
        raise UsageError("ggml-webgpu's flash_attn_vec_split WGSL has no single load of f32(mask[mask_idx])")
    return wgsl.replace(_MASK_LOAD, "f32(mask[mask_global_offset + min(global_k_col, params.seq_len_kv - 1u)])")


#: flash_attn_tile's offset of a staged Q row (`head_q_row` may be past seq_len_q in the last tile).
_Q_ROW = "head_q_row * params.stride_q1;"


def with_q_row_clamped(wgsl: str) -> str:
    """ggml-webgpu's flash_attn_tile with each Q row staged from row `min(head_q_row, seq_len_q -
    1)`: the select still zeroes the rows past seq_len_q, but none reads past the head or the
    binding. One line, which keeps its number."""
    if wgsl.count(_Q_ROW) != 1:
        raise UsageError("ggml-webgpu's flash_attn_tile WGSL has no single Q row offset head_q_row * stride_q1")
    return wgsl.replace(_Q_ROW, "min(head_q_row, params.seq_len_q - 1u) * params.stride_q1;")



def tile_attention_case(batch: int, rows: int, keys: int, mask_kind: str, seed: int):
    """A prefill case for flash_attn_tile (verify.sources.llamacpp.attention.tile_cases.make_tile_case)."""
    def make(kernel, config) -> Case:
        from verify.sources.llamacpp.attention.tile_cases import make_tile_case

        return make_tile_case(config, batch, rows, keys, keys, "normal", mask_kind, 1.0, seed, kernel.kv_tile(config))
    return make


# -- the registry ------------------------------------------------------------------------------------------
SWIFTSHADER_NO_F16 = ("SKIP in Chromium here: its adapter (SwiftShader) has no shader-f16, which the f16 "
                      "kernel needs; a browser on a GPU with shader-f16 runs it")
MERGE_RACE_DETAIL = (
    "Each of the head_dim / 4 lanes of a (token, head) row reads `S[n, h]`, merges its four dims of V with it and "
    "writes the merged `S[n, h]`, and nothing orders one lane's write after the other lanes' reads: "
    "`_merge_state_inplace` (`_decode_kernels.py` L455-526) loads `S[bx, ty + by * bdy]` at L497 and stores it at "
    "L521 with no `T.tvm_storage_sync` between. A lane that reads S after another lane's write merges its dims of V "
    "against an already merged LSE, with the wrong weights, and writes S merged once more.",
    "It shows wherever a row's lanes span subgroups that do not run in lockstep. On Mesa's lavapipe (subgroups of 8, "
    "run one after another) every config fails: at head_dim 128, dims 0-31 of each row (the first subgroup's 8 "
    "lanes x 4 dims) are right, dims 32-127 wrong, and S is merged 4 times.",
    "One `storageBarrier()` before the write of S (every lane reads S before any lane writes it) makes every output "
    "match the reference.",
)

FINDINGS: tuple[Finding, ...] = (
    Finding(
        "tvm-merge-race", "tvm.merge_state", "reference", dict(heads=8, head_dim=128, dtype="f32"),
        MERGE_RACE_DETAIL,
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=lambda kernel, config: merge_case(1, config["heads"], config["head_dim"]),
        notes=("A GPU whose subgroups hold a whole row (32 lanes for head_dim 128) and run it in lockstep hides the "
               "race: an NVIDIA H200 (subgroups of 32) passed 2000 cases in each of three configs.",),
        sanitize=True, fix=with_storage_barrier, fix_text="one `storageBarrier()` before the write of S"),
    Finding(
        "tvm-merge-infinite-empty", "tvm.merge_state", "infinite_empty", dict(heads=1, head_dim=64, dtype="f32"),
        ("The merge computes `M = max(s, s')` and weighs each side `exp2(s - M)` (`_decode_kernels.py` L499-501). For "
         "two empty states written as -inf, as FlashAttention-style kernels write an empty state, `M = -inf` and "
         "`-inf - (-inf)` is NaN: v and s come back NaN where the merge of two empty states is the empty state "
         "(v = 0, s = -inf). One -inf side alone is fine (its weight is 0).",
         "TVM's own kernels write an empty state as about -5e4, never -inf, so TVM alone does not reach this; a "
         "runtime that mixes this merge with kernels that use -inf does. Token 0 of the case is two empty states; "
         "tokens 1 and 2 have one empty side each and are right."),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=two_empty_states),
    Finding(
        "tvm-decode-below-floor", "tvm.decode", "below_floor",
        dict(head_dim=128, qo_heads=8, kv_heads=2, dtype="f32"),
        ("The online softmax's running max starts at -5e4 (`st_m[0] = -5e4`, `_decode_kernels.py` L292) and tile "
         "padding gets the logit -5e4 (L350; L381 in the slice merge). A context whose every base-2 logit lies below "
         "-5e4 therefore keeps the max at -5e4, every weight `2^(s - m)` underflows to 0, and the kernel stores "
         "output 0 and `lse = -5e4 + log2 k` (k stand-in states), where the exact result is a weighted mean of V: "
         "softmax is shift-invariant, so the attention is defined.",
         "Such logits (below about -34657 in natural units, -5e4 ln 2) need very large `|q . k| * sm_scale`; "
         "ordinary models do not produce them, but nothing in the kernel's contract excludes them. The case: one "
         "sequence of 7 tokens, rotary off, q all A and every key -A(1 + e), e in [0, 1/2), so that every logit "
         "lies at least 600 below -5e4."),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=decode_case([7], below_floor_by=600.0)),
    Finding(
        "tvm-decode-dropped-heads", "tvm.decode", "reference",
        dict(head_dim=128, qo_heads=36, kv_heads=4, dtype="f32"),
        ("The decode schedule halves bdy (query heads per workgroup) until `bdx * bdy <= 256`, then covers the group "
         "with `gdz = GROUP_SIZE // bdy` head slices (`_decode_kernels.py` L203). When bdy does not divide the group "
         "the remainder is never computed: with head_dim 128 and a group of 9 (36 query heads over 4 KV heads) "
         "`bdy = 4`, `gdz = 2`, and heads 8, 17, 26 and 35 are never written: their output and lse keep what the "
         "buffers held (NaN here).",),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=decode_case([4])),
    Finding(
        "tvm-merge-dropped-heads", "tvm.merge_state", "reference", dict(heads=9, head_dim=128, dtype="f32"),
        ("The merge covers the heads with `gdy = num_heads // bdy` groups of bdy heads (`_decode_kernels.py` L463): "
         "with 9 heads of 128 dims bdy halves to 4 and `gdy = 2` groups cover 8 heads, so head 8 keeps its first "
         "state (s and v come back unchanged). The same floor leaves heads 12-13 of 14 unmerged at head_dim 256.",
         "merge_state_inplace's race on S (its lanes read and overwrite S with no barrier between) shows in the other "
         "heads too wherever subgroups do not run a row in lockstep."),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=lambda kernel, config: merge_case(2, config["heads"], config["head_dim"])),
    Finding(
        "tvm-packed-grid", "tvm.decode", "packed_grid", dict(head_dim=64, qo_heads=8, kv_heads=2, dtype="f32"),
        ("WebGPU caps a grid dimension at 65535 workgroups, so TVM's web runtime halves an x of 65536 or more "
         "(rounding up) while doubling z, and passes the original x as packGridDimX (`web/src/webgpu.ts` L771-789). "
         "Every kernel TVM generates for WebGPU returns early where `blockIdx.z * gridDim.x + blockIdx.x > "
         "packGridDimX` (`src/target/source/codegen_webgpu.cc`, L330-332 of "
         "`src/backend/webgpu/codegen/codegen_webgpu.cc` at apache/tvm 5d4dc87); it must be `>=`. When an odd x is "
         "halved (65537 -> 32769 x 2) the workgroup whose index is exactly x runs and processes row x, one past the "
         "end: for the decode kernel it reads `page_indptr[B + 1]` and writes sequence B's output and lse past the "
         "end of both buffers.",
         "To keep the case small the runtime's packing threshold is lowered from 65536 to 3 for this launch: a batch "
         "of 3 then takes the packed path exactly as 65537 sequences do at the real threshold (x = 3 halves to 2 "
         "with z = 2, and workgroup index 3 = packGridDimX runs). The bytes past the end of output and lse change."),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)}),
    Finding(
        "tvm-tree-extra-warp", "tvm.tree_attention", "reference",
        dict(head_dim=96, qo_heads=4, kv_heads=1, dtype="f32"),
        ("`tree_attn.py`'s own `get_tile_size` (L514-522, L1147-1155) does not require the O tile to divide the row "
         "tile, unlike `_get_prefill_tile_size` (`_kernel_common.py` L469-481). For a row tile of 16 and D = 96 in "
         "f32 it returns (3, 4): the O gemm pads 16 rows to 18 and needs `ceil(16/3) * 96/4 = 144` threads, 5 warps, "
         "so the WGSL declares `@workgroup_size(32, 5, 1)`. The Q/K/V loads are split for `num_warps = 4` "
         "(`apply_to_qkv_load`, L524-532) with no `threadIdx.y < 4` guard, so the fifth warp stores `Q_smem`, "
         "`K_smem` and `V_smem` at flat index >= 16 * 96 = 1536, past the arrays.",
         "WGSL leaves such a store implementation-defined; the implementations here land it on the arrays' last "
         "element (tile row 15, dim 95), which every row that reads that column then sees. The case: one chain "
         "[-1, 0, 1, 2], 4 query heads on 1 KV head, N(0, 1) values: query row 3, head 3 (tile row 15) is wrong, "
         "91 of its 96 dims and its lse over budget (err/budget up to about 21 here; other draws of the same shape "
         "reach 1e3), and every other row is right. With one query head the row does not exist and the "
         "result is right.",
         "Affected head dims (the workgroup's warps against the loads'): f32 D = 96, 160 and 192 among those "
         "TVM offers, and f32 144-240 and f16 48 and 144 in general; D = 64, 128 and 256 are right in both dtypes. "
         "The paged, ragged and sequence prefill kernels use the checked helper and are right at these head dims. "
         "`tree_attn_with_paged_kv_cache` has the same schedule and the same stores. Phi-3/3.5 have D = 96 and "
         "WebLLM ships q4f32 builds of them."),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=tree_case([[-1, 0, 1, 2]]),
        sanitize=True, fix=with_extra_warp_guarded,
        fix_text=f"each Q/K/V load store wrapped in `if (i32(threadIdx.y) < {TREE_LOAD_WARPS}i)`"),
    Finding(
        "tvm-tree-mask-past-tree", "tvm.tree_attention", "sanitize",
        dict(head_dim=64, qo_heads=8, kv_heads=2, dtype="f32"),
        ("The tree mask (`_check_tree_order`, `tree_attn.py` L47-64) reads "
         "`tree_order[indptr[b] + row + tree_len - qo_len]` for every row of a tile, and the kernels evaluate it "
         "before the row's own `row < qo_len`. The padding rows of a sequence's last tile therefore read the next "
         "sequence's pairs, and those of the batch's last sequence read past the end of `mask` (`tree_order` in "
         "`tree_attn_with_paged_kv_cache`, which reads it the same way). The case: one tree of one node, whose mask "
         "has 2 elements; the tile's padding rows read index 2 and on.",
         "WebGPU's robust buffer access returns some value of the buffer (or 0) and those rows are never stored, so "
         "the outputs are right; the reads are out of bounds all the same, and a runtime without robust access "
         "(native Vulkan, Metal or CUDA builds of the same TIR, or Dawn with robustness disabled) reads past the "
         "allocation. Testing `row < qo_len` before the mask (or clamping the index) removes the reads."),
        shows={"chromium": ("PASS", "PASS everywhere: the rows that read past the mask are never stored, and robust "
                            "buffer access keeps the read inside the buffer; the offending line is what shows it"),
               "wgpu": ("PASS", "PASS: the rows that read past the mask are never stored"),
               "dawn": ("PASS", "PASS: the rows that read past the mask are never stored")},
        make_case=tree_case([[-1]]),
        notes=("No output shows this read: the rows that make it are never stored, and robust buffer access keeps "
               "the index inside the buffer. The reproduction passes everywhere; the offending line below is the "
               "finding.",),
        sanitize=True),
    Finding(
        "tvm-prefill-below-floor", "tvm.prefill", "below_floor",
        dict(head_dim=64, qo_heads=2, kv_heads=2, dtype="f32", causal=1),
        ("The online softmax's running max starts at -5e4 (`init_states`, `_kernel_common.py` L229-234) and every "
         "hidden column, a causal row's future tokens and the tile padding, gets the logit -5e4 "
         "(`softmax_update_causal`, L256-296: masked columns contribute `exp2(-5e4 - m_new)`). When every visible "
         "base-2 logit of a row lies below -5e4 the max stays there, each visible weight `2^(s - m)` underflows to "
         "0 and each hidden one is `2^0 = 1`: the row stores `lse = -5e4 + log2(1 + n)` and the mean of the hidden "
         "rows' V, so a causal row returns the average of its future tokens' values. The exact result is a weighted "
         "mean of the visible rows' V: softmax is shift-invariant, so the attention is defined.",
         "The case: one causal chunk of 20 tokens on its own 20 rows of context (f32, D = 64, 16-column KV tiles, "
         "2 heads), rotary off, q all A and every key -A(1 + e), e in [0, 1/2), so that every logit lies at least "
         "600 below -5e4. Row 3 sees rows 0-3 and returns `sum(V[4..19]) / 29` (the 16 future rows, 12 padding "
         "columns and the initial state each weigh 1) with lse `-5e4 + log2 29`. Such logits (below about -34657 "
         "in natural units) need very large `|q . k| * sm_scale`; ordinary models do not produce them, but nothing "
         "in the kernel's contract excludes them. `batch_prefill_ragged_kv` does the same."),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=future_case),
    Finding(
        "dp4a-f16-accumulation", "dp4a.matmul", "accumulator_range", dict(dtype="f16", acc="f16"),
        ("ONNX Runtime's DP4A kernels keep their running sums in the output type, f16 for f16 models "
         "(`dp4a_matmul.wgsl.template`: `lane_output`; `dp4a_matmul_small_m.wgsl.template`: `inter_results`). With "
         "large same-sign chunk products a running sum passes 65504 and becomes Inf although the exact result is "
         "finite and small. This kernel keeps its sums in f16 as those templates do; the case's running sums reach "
         "-96000 while every exact output is 0.",
         "Reported on Intel Iris Xe at K = 3072 and fixed behind the `acc_f32` option "
         "(enableMatmulFp32Accumulation); f16 accumulation is still the default."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=same_sign_case,
        upstream=Upstream("ONNX Runtime Web (microsoft/onnxruntime), WebGPU execution provider",
                          "before the acc_f32 option (its default still)",
                          "the f16 accumulation of `dp4a_matmul.wgsl.template` and `dp4a_matmul_small_m.wgsl.template` "
                          "in `onnxruntime/contrib_ops/webgpu/quantization`, in a kernel that accumulates as they do",
                          ("onnxruntime/contrib_ops/webgpu/quantization/dp4a_matmul.wgsl.template",
                           "onnxruntime/contrib_ops/webgpu/quantization/dp4a_matmul_small_m.wgsl.template")),
        links=("microsoft/onnxruntime#29599", "microsoft/onnxruntime#29611")),
    Finding(
        "ort-f16-accumulation", "ort.dp4a.matmul", "accumulator_range", dict(dtype="f16", bits=4, block_size=32),
        ("DP4AMatMulNBits keeps `lane_output1..4: vec4<output_element_t>`, f16 for f16 models, and adds every chunk "
         "product to them; onnxruntime-web 1.30 has no f32-accumulation option. With large same-sign chunk products "
         "a running sum passes 65504 and becomes -Inf although the exact result is finite and small.",
         "The case: M = 4, N = 16, K = 2048, every 4-bit weight -8 with scale 11.72, A = +1 over the first half of K "
         "and -(1 - 2^-11) over the second. Each 32-value chunk adds about -3000, the running sums reach -96000, and "
         "all 64 outputs are -Inf where the DP4A-exact Y is 0 (the unquantized Y is -46.875). The same data in f32 "
         "is within budget; a session of this MatMulNBits model returns the same -Inf."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16),
               "wgpu": ("ERROR", "ERROR under wgpu: Naga refuses the program (see ort-tile-naga-refuses)"),
               "dawn": ("FAIL", None)},
        make_case=same_sign_case,
        links=("microsoft/onnxruntime#29599", "microsoft/onnxruntime#29611")),
    Finding(
        "ort-quantize-zero-block", "ort.dp4a.quantize", "zero_blocks", dict(dtype="f32"),
        ("DP4AMatMulQuantize computes `norm_a = local_a / scale` with scale the block's max |a| and stores "
         "`pack4x8snorm(norm_a)`, with no guard for scale = 0 (`dp4a_quantize.wgsl.template`). For a block of 128 "
         "zeros that is `pack4x8snorm(NaN)`, which WGSL leaves to the implementation; lavapipe gives -127 for every "
         "code. The stored scale is 0, so ORT's own matmul multiplies those codes by 0 and Y is unaffected, but a "
         "consumer that reads the codes, or a weight scale that is Inf or NaN, sees them. The codes of zeros are 0 "
         "whatever the scale; dividing by 1 where the max is 0 gives them.",),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=zero_block_case,
        notes=("An implementation whose pack4x8snorm maps NaN to 0 stores the expected codes and passes.",)),
    Finding(
        "ort-small-m-scales-past-row", "ort.dp4a.matmul_small_m", "sanitize", dict(dtype="f32"),
        ("loadSHMA loads 8 A scales per 1024 values of K (`if (col < 8)`), guarded only by the vec4 index "
         "`kidx_v + col < K16`. When a row has fewer than 8 scales left (K/128 not a multiple of 8) it reads the next "
         "rows' scales, and for the last row it reads past the end of `scales_a`: with M = 1 and K = 256, indices 2 "
         "to 7 of a 2-element buffer, by lanes 2 to 7.",
         "The values read are never used, so Y is right; but ORT enables Dawn's `disable_robustness` toggle "
         "natively, where the read is unchecked."),
        shows={"chromium": ("PASS", "PASS everywhere: the read values are never used, and robustness clamps the read "
                            "in a browser; the offending line is what shows it"),
               "wgpu": ("FAIL", "FAIL with wgpu on Mesa 22.3's lavapipe, but by another finding: the program's sums "
                        "rest on zero-initialised workgroup memory, which that driver does not zero "
                        "(ort-small-m-zero-init)"),
               "dawn": ("PASS", "PASS: the read values are never used")},
        make_case=matmul_case(1),
        notes=("No output shows this read: the values are never used, and a browser's robustness clamps the index. "
               "The reproduction passes everywhere; the offending line below is the finding.",),
        sanitize=True),
    Finding(
        "ort-small-m-zero-init", "ort.dp4a.matmul_small_m", "sanitize", dict(dtype="f32"),
        ("The small-M program only ever adds to `inter_results` (`+=`), so its sums start from WGSL's "
         "zero-initialisation of workgroup memory. That is valid WGSL, but wrong wherever workgroup memory is not "
         "zeroed: Mesa 22.3's lavapipe under wgpu (every output wrong, err/budget about 1e7), or Dawn's "
         "`disable_workgroup_init` toggle, which some ORT versions have enabled natively. Zeroing `inter_results` "
         "first (two lines) makes it right there.",
         "The tile program (DP4AMatMulNBits) also reads rows of its workgroup tiles it skipped loading in a partial "
         "64 x 64 tile, but their products go only to outputs that are never stored."),
        shows={"chromium": ("PASS", "PASS in browsers: Dawn zero-initialises workgroup memory (unless its "
                            "disable_workgroup_init toggle is on), so the sums start at 0 as the program assumes"),
               "wgpu": ("FAIL", None),
               "dawn": ("PASS", "PASS on Dawn: it zero-initialises workgroup memory")},
        make_case=matmul_case(1, k=1024, n=64),
        notes=("Dawn (browsers, npm webgpu) zero-initialises workgroup memory, so the reproduction passes there; it "
               "fails with wgpu on Mesa 22.3's lavapipe, whose workgroup memory keeps earlier workgroups' values "
               "(the offending lines below read it).",),
        sanitize=True, implementation="wgpu", fix=with_cleared_sums,
        fix_text="`inter_results` set to 0 by the workgroup's own lanes, then a `workgroupBarrier()`, before the sums"),
    Finding(
        "ort-tile-naga-refuses", "ort.dp4a.matmul", "implementations", dict(dtype="f32"),
        ("DP4AMatMulNBits broadcasts B over 16-lane subgroups with `subgroupShuffle(own_b0, 0)`. The lane is an "
         "abstract-int literal, which WGSL converts to the u32 the built-in takes: valid WGSL that Tint (Dawn, "
         "Chrome) compiles and Naga (wgpu, Firefox) refuses (\"Subgroup operation is invalid\"). So the program does "
         "not run in Firefox's implementation, whatever the adapter; ORT's other DP4A programs compile under both.",),
        shows={"chromium": ("PASS", "PASS in Chromium: Tint compiles the program, and the case is within budget"),
               "wgpu": ("ERROR", None),
               "dawn": ("PASS", "PASS on Dawn: Tint compiles the program")},
        make_case=matmul_case(4),
        notes=("Tint (Chrome, Dawn) compiles the program, and the case is within budget there: only Naga (wgpu, "
               "Firefox) refuses it. Naga reports the literal lane as a signed int (\"Subgroup gather index type "
               "Sint, expected unsigned int\").",),
        implementation="wgpu"),
    Finding(
        "ort-decode-partials-zero-init", "ort.attention.decode_qkv", "sanitize",
        dict(dtype="f32", head_size=64, num_heads=16, kv_num_heads=1),
        ("GroupQueryAttention's split decode program (`FlashAttentionDecodeQKV`, flash_attention.cc, fewer than 32 "
         "new tokens) only ever adds to `inner_qk_values` (`+=` per key row and vec4 of the head) and to "
         "`tile_output` (`+=` of the value partials), and sums all 32 columns of `inner_qk_values` although a head of "
         "64 channels (16 vec4) writes only 16 of them. Nothing clears either array, so the tile's scores and "
         "partial output start from WGSL's zero-initialisation of workgroup memory. That is valid WGSL, but wrong "
         "wherever workgroup memory is not zeroed: Mesa 22.3's lavapipe under wgpu (a workgroup finds the sums of "
         "the one that ran before it on the same thread), or Dawn's `disable_workgroup_init` toggle. Clearing both "
         "arrays first (a loop each and a barrier) makes it right there.",
         "The case: one new token on a single sequence of 65 cached tokens (2 key tiles, 32 workgroups), 16 query "
         "heads on 1 KV head, f32, N(0, 1) values; the outputs are the program's own, each tile's normalised "
         "partial output (`out_split_vx`) and softmax state (`metadata`), which `FlashAttentionDecodeVxReduce` "
         "merges into the attention."),
        shows={"chromium": ("PASS", "PASS in browsers: Dawn zero-initialises workgroup memory (unless its "
                            "disable_workgroup_init toggle is on), so the sums start at 0 as the program assumes"),
               "wgpu": ("FAIL", None),
               "dawn": ("PASS", "PASS on Dawn: it zero-initialises workgroup memory")},
        make_case=decode_qkv_case([65]),
        notes=("Dawn (browsers, npm webgpu) zero-initialises workgroup memory, so the reproduction passes there, as "
               "onnxruntime-web's own sessions do; it fails with wgpu on Mesa 22.3's lavapipe, whose workgroup memory "
               "keeps earlier workgroups' values (the offending lines below read it).",),
        sanitize=True, implementation="wgpu", fix=with_cleared_partials,
        fix_text="`inner_qk_values` and `tile_output` set to 0 by the workgroup's own lanes, then a "
                 "`workgroupBarrier()`, before the sums"),
    Finding(
        "ort-flash-carried-scores", "ort.attention.flash", "reference",
        dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2),
        ("GroupQueryAttention's prefill program (`FlashAttention`, flash_attention.cc, 32 new tokens or more) "
         "declares its score accumulators `var qk_1 : vec4<qk_precision>;` .. `qk_4` inside the loop over key "
         "steps and only ever adds to them, relying on the body's `var` starting from its zero value on every "
         "iteration. Tint (Dawn, browsers) and Naga (wgpu) zero them once, before the loop, so every key step after "
         "the first adds its scores onto the previous step's: each query past the first step weighs its keys by "
         "wrong probabilities. Declaring them `= vec4<qk_precision>(0)` makes it right.",
         "The case: one sequence of 32 new tokens, no past (2 key steps of 16 where subgroups have 16 lanes or "
         "more), 4 query heads on 2 KV heads, head size 64, f32, N(0, 1) values rounded to multiples of 1/4; "
         "the output is the attention of each new token over the keys up to its own."),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=flash_case(32),
        fix=with_zeroed_scores,
        fix_text="`= vec4<qk_precision>(0)` on the declarations of qk_1..qk_4",
        fixed_shows={"chromium": ("FAIL", "FAIL in browsers on 4-lane subgroups (SwiftShader): §18.3, the "
                                  "`sg_size <= 8` branch scores keys 4..7 of each step through lanes a 4-lane "
                                  "subgroup does not have, comes on top and the zeroed accumulators do not fix it")}),
    Finding(
        "ort-flash-subgroups-of-4", "ort.attention.flash", "reference",
        dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2),
        ("GroupQueryAttention's prefill program (`FlashAttention`, flash_attention.cc, 32 new tokens or more) walks "
         "the keys in steps of min(subgroup size, 16), each lane loading one key's K and V row and the step's scores "
         "gathered by subgroupShuffle. Its branch for `sg_size <= 8` scores 8 keys a step (k_start + 0..7) from "
         "lanes 0..7. On an adapter whose subgroups have 4 lanes (SwiftShader, the software adapter of Chromium "
         "without a GPU) the loop advances by 4 keys and only 4 rows are loaded, but keys k_start + 4..7 are still "
         "scored, from lanes a 4-lane subgroup does not have, and weight V rows nobody loaded: every query past key 3 "
         "attends wrong keys. Masking keys 4..7 where `sg_size` is 4 makes it right.",
         "The case: one sequence of 32 new tokens, no past, 4 query heads on 2 KV heads, head size 64, f32, N(0, 1) "
         "values rounded to multiples of 1/4; the program is ORT's with its score accumulators zeroed "
         "(`= vec4<qk_precision>(0)` on qk_1..qk_4), so that ort-flash-carried-scores (§18.2) does not show on top: "
         "what fails is the 4-lane branch alone."),
        shows={"chromium": ("FAIL", None),
               "wgpu": ("PASS", "PASS with wgpu on Mesa 22.3's lavapipe: its subgroups have 8 lanes, where the branch "
                        "scores the 8 keys it loaded"),
               "dawn": ("PASS", "PASS with Dawn on Mesa 25's lavapipe: its subgroups have 8 lanes, where the branch "
                        "scores the 8 keys it loaded")},
        make_case=flash_case(32),
        notes=("It shows only where subgroups have 4 lanes (Chromium's SwiftShader, the software adapter of a "
               "browser without a GPU); on 8 lanes or more the page passes.",),
        transform=with_zeroed_scores,
        fix=with_four_keys_a_step_on_4_lanes,
        fix_text="keys k_start + 4..7 of each step masked where `sg_size` is 4 (`&& sg_size > 4u` on their "
                 "is_key_visible tests)"),
    Finding(
        "ort-gqa-softcap-ignored", "ort.attention.decode_qkv", "reference",
        dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2, softcap=2.0),
        ("GroupQueryAttention's `softcap` attribute t asks for every score s = scale q.k to be replaced by "
         "t tanh(s / t) before the softmax. onnxruntime-web 1.30 accepts the attribute, but the programs it "
         "dispatches for the op take no softcap: the split decode program (`FlashAttentionDecodeQKV`, "
         "flash_attention.cc, fewer than 32 new tokens) it generates for a session with softcap = 2 is the one it "
         "generates without, line for line, and has no uniform or line that caps a score. Each 64-key tile's "
         "softmax state (max, exp-sum) and normalised partial output are those of the uncapped scores, and so is "
         "the attention `FlashAttentionDecodeVxReduce` merges from them (a session's decode output differs from "
         "the softcapped one by about 1.8 and equals the uncapped one to 1e-6). Capping the score where the "
         "program sums it (`sum = t * tanh(sum / t)`) makes it right.",
         "The case: one new token on a single sequence of 40 cached tokens (one key tile), 4 query heads on 2 KV "
         "heads, head size 64, f32, N(0, 1) values, softcap 2; the outputs are the program's own, the tile's "
         "normalised partial output (`out_split_vx`) and softmax state (`metadata`), against those of the "
         "capped scores."),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=decode_qkv_case([40]),
        notes=("With wgpu on Mesa 22.3's lavapipe the program also meets ort-decode-partials-zero-init (§18.6: its "
               "sums rest on zero-initialised workgroup memory, which that driver does not zero), on top of this "
               "finding.",),
        fix=with_softcap(2.0),
        fix_text="`sum = 2.0 * tanh(sum / 2.0);` on each score before the bias and the causal mask",
        fixed_shows={"wgpu": ("FAIL", "FAIL with wgpu on Mesa 22.3's lavapipe, by another finding: the program's "
                              "sums rest on zero-initialised workgroup memory, which that driver does not zero "
                              "(ort-decode-partials-zero-init, §18.6)")}),
    Finding(
        "ort-copy-kv-cache-reads-past-end", "ort.attention.copy_kv_cache", "sanitize",
        dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2),
        ("When an application does not bind GroupQueryAttention's past_key/past_value to present_key/present_value, "
         "ORT copies the whole cache first (`CopyKVCache`, flash_attention.cc): one lane per present row below the "
         "batch's largest total T, per sequence, KV head and vec4 of the head, copying past row r for r < past_b "
         "and new token r - past_b of `key`/`value` otherwise, past_b = seqlens_k[b] + 1 - S. Nothing bounds the "
         "second branch by the sequence's own total: for a sequence of total_b < T the rows total_b..T-1 read new "
         "tokens it does not have, the next sequence's, and for the last sequence past the end of `key` and "
         "`value`. Guarding the copy to rows below the sequence's total removes the reads.",
         "The case: two sequences of 7 and 2 cached tokens and one new token each (totals 8 and 3), 2 KV heads of "
         "64 channels, f32, N(0, 1) values: rows 3..7 of sequence 1 copy its new "
         "tokens 1..5, past the end of key and value (one new token for each of two sequences): 160 "
         "out-of-bounds reads of each. The rows are never attended (the attention reads each "
         "sequence's keys below its own total), and WebGPU's robust buffer access keeps the reads inside the "
         "buffer, so the copied rows are right; but ORT enables Dawn's `disable_robustness` toggle natively, "
         "where the reads are unchecked."),
        shows={"chromium": ("PASS", "PASS everywhere: the rows that read past key and value are never attended, and "
                            "robust buffer access keeps the reads inside the buffers; the offending lines are what "
                            "show it"),
               "wgpu": ("PASS", "PASS: the rows that read past key and value are never attended"),
               "dawn": ("PASS", "PASS: the rows that read past key and value are never attended")},
        notes=("No output shows these reads: the rows that make them are never attended, and robust buffer access "
               "keeps the index inside the buffer. The reproduction passes everywhere; the offending lines below are "
               "the finding.",),
        sanitize=True, fix=with_copy_below_total,
        fix_text="the copy of a new token guarded to rows below the sequence's own total "
                 "(`sequence_id < total_seq_length`), zeros written past it"),
    Finding(
        "ort-flash-reads-past-cache", "ort.attention.flash", "sanitize",
        dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2),
        ("GroupQueryAttention's prefill program (`FlashAttention`, flash_attention.cc, 32 new tokens or more) walks "
         "the keys in steps of min(subgroup size, 16) and loads each step's K and V rows with "
         "`let val = select(q_value_t(0), present_key[offset + idx], k_start + slot < total_seq);` (and the same "
         "of present_value). WGSL evaluates both operands of `select`, so the last step loads every row up to the "
         "step's end whatever the total: for the last sequence's last KV head the rows past the total lie past the "
         "end of present_key and present_value wherever the buffer ends within that step. ORT allocates present "
         "[B, Nkv, max(past, total), H] when an application does not bind past and present to one buffer, so any "
         "total that is not a multiple of the step reads past the end; so does a static cache whose capacity is "
         "not one. Loading the row only where it is below the total (`if`, not `select`) removes the reads.",
         "The case: one sequence of 32 new tokens after 1 cached token (a total of 33, one past a multiple of 16, "
         "so the last step runs past the buffer at 4, 8 and 16 lanes) in a cache of exactly 33 rows, 4 query heads "
         "on 2 KV heads, head size 64, f32, N(0, 1) values rounded to multiples of 1/4. At 8 lanes the last step "
         "loads rows 32..39 and rows 33..39 of KV head 1 are past the end: 224 out-of-bounds reads of each buffer "
         "(7 rows of 16 vec4s for each of its 2 query heads). The select discards them, and WebGPU's robust buffer "
         "access keeps the reads inside the buffer, so the outputs are right; but ORT enables Dawn's "
         "`disable_robustness` toggle natively, where the reads are unchecked. The program is ORT's with the score "
         "accumulators zeroed (ort-flash-carried-scores, §18.2) and keys 4..7 of a step masked at 4 lanes "
         "(ort-flash-subgroups-of-4, §18.3), line for line, so that no other finding shows on top."),
        shows={"chromium": ("PASS", "PASS everywhere: the select discards the rows read past present_key and "
                            "present_value, and robust buffer access keeps the reads inside the buffers; the "
                            "offending lines are what show it"),
               "wgpu": ("PASS", "PASS: the select discards the rows read past the cache"),
               "dawn": ("PASS", "PASS: the select discards the rows read past the cache")},
        notes=("No output shows these reads: the select discards what they load, and robust buffer access keeps "
               "the index inside the buffer. The reproduction passes everywhere; the offending lines below are the "
               "finding.",),
        sanitize=True, implementation="wgpu", transform=with_right_outputs, fix=with_loads_under_an_if,
        fix_text="each K and V row of a key step loaded only below the sequence's total "
                 "(`if (k_start + slot < total_seq)`, zero otherwise)"),
    Finding(
        "ort-paged-prefill-f16-scores", "ort.attention.paged_prefill", "large_scores",
        dict(head_size=64, num_heads=4, kv_num_heads=1, block_size=32),
        ("PagedAttention's prefill program (`FlashAttentionPagedPrefill`, flash_attention.cc; 32 new tokens or more "
         "in blocks larger than 16, no head sink, no local window) keeps each score in the model's type: "
         "`var score = q_element_t(0);` and `score += dot(q_tile[i], k_tile[k][i]);` over the head's vec4s, f16 for "
         "an f16 model (PagedAttention takes f16 only). When the partial sums of q.k pass 65504 the score is Inf "
         "(or Inf - Inf = NaN) although q.k itself is small, and the online softmax turns it into NaN for every "
         "output of the sequence. Summing in f32 and rounding the score to f16 once makes it right.",
         "The case: one sequence of 32 new tokens, no past, in one 32-token block (a second, spare block poisoned "
         "with NaN), 4 query heads on 1 KV head, head size 64, f16; every query 135 and the first new key +135 on "
         "its first 32 channels and -135 on the last 32, so q.k_0 = 0 exactly while its first half sums to "
         "32 · 135 · (135/8) = 72900, past f16's 65504; the other keys and values N(0, 1). The cache holds the "
         "new keys and values, as ScatterKVToPagedCache leaves it before this program runs. The budget is that of "
         "the program's own f16 arithmetic, wide here (key 0's score is a sum of terms of ±2278 in f16, which may "
         "err by thousands even where it does not overflow): what fails is the NaN, which no budget admits. With "
         "the sum in f32 every output is finite and within 1.7e-3 of the reference (max |output| 2.9)."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        fix=with_f32_scores,
        fix_text="the q.k sum kept in f32 (`var score = f32(0)`, each vec4 dot taken in f32) and rounded to f16 once "
                 "when stored",
        fixed_shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16)}),
    # llama.cpp's ggml-webgpu (docs/findings.md §19): programs verify instantiates and launches as
    # ggml-webgpu does (verify.sources.llamacpp). Every one says `enable f16;`, so Chromium's SwiftShader
    # (no shader-f16) runs none of them here.
    Finding(
        "llamacpp-q8-1-sum-overflow", "llamacpp.quant.mul_mat_vec_q", "native_width", dict(weight="q4_0"),
        ("On the MMVQ path (a mat-vec of at most 4 columns with Q4_0/Q4_1/Q8_0/Q2_K/Q4_K weights, "
         "ggml-webgpu-shader-lib.hpp L1172-1198) ggml-webgpu quantizes the f32 activations to q8_1 blocks, whose "
         "f16 field s holds d Σq (quantize_q8.wgsl L131, as ggml's CPU `quantize_row_q8_1_ref` does), and the "
         "mat-vec reads s for the offset term of Q4_0 (`- 8 da s / 4`), Q4_1 (`+ m s / 4`) and Q4_K "
         "(`- dmin m s / 2`, mul_mat_vec_q_acc.tmpl). Once a block's d Σq passes 65504, s is inf and y is -inf or "
         "NaN where the product is finite. ggml's CPU takes q8_0 activations (no s) for Q4_0 and computes the same "
         "product finitely.",
         "The case: one Q4_0 weight row (a ramp over [-1, 1], 32 values) against 32 activations of 3000: "
         "d = 23.6, every code 127, d Σq = 96000. The q8_1 block is the one ggml's CPU quantizer writes (s = inf); "
         "the exact product of the dequantized blocks is finite."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=llamacpp_case("overflowing_sum_case")),
    Finding(
        "llamacpp-mmvq-reads-past-weights", "llamacpp.quant.mul_mat_vec_q", "sanitize", dict(weight="q4_0"),
        ("`load_u32_at_src0` (common_decls.tmpl) loads `src0[word_idx + 1u]` for every load and discards it with "
         "`select()` where the offset is word-aligned. For the legacy formats (blocks of 18, 20 and 34 bytes) the "
         "last block's last load then reads the word past the binding, which ggml-webgpu sizes to the tensor's "
         "bytes rounded up to 4 (ggml-webgpu.cpp L403-406). The value is never used, so y is right; robust buffer "
         "access keeps the read inside the buffer, a runtime without it reads past the allocation.",
         "The case: 4 Q4_0 weight rows of 2 blocks (144 bytes, 36 words: the binding ends at the last block's last "
         "word) against one q8_1 activation row of N(0, 1) values."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16),
               "wgpu": ("PASS", "PASS: the word read past the weights is discarded"),
               "dawn": ("PASS", "PASS: the word read past the weights is discarded")},
        make_case=llamacpp_case("past_the_weights_case"),
        notes=("No output shows this read: select() discards the word, and robust buffer access keeps the index "
               "inside the buffer. The reproduction passes everywhere; the offending line below is the finding.",),
        sanitize=True, fix=with_next_word_when_needed,
        fix_text="the next word loaded only where the offset is not word-aligned (`if (shift != 0u)`)",
        fixed_shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16)}),
    Finding(
        "llamacpp-vec-split-reads-past-tile", "llamacpp.attention.flash_attn_vec_split", "sanitize", {},
        ("For fewer than 20 query rows on an adapter with subgroups FLASH_ATTN_EXT takes the vec path "
         "(ggml-webgpu.cpp L2089-2272), whose `flash_attn_vec_split` walks a KV tile in steps of the subgroup "
         "size (`kv_idx = kv_offset + sg_inv_id`); `calc_softmax_term` reads "
         "`select(FLOAT_MIN, inter_shmem[kv_idx] * params.scale, kv_idx < KV_TILE)` and "
         "`select(0.0, mask_shmem[kv_idx], kv_idx < KV_TILE)`. WGSL evaluates both operands of select, so every "
         "lane past the tile's end reads both workgroup arrays past their length, wherever the subgroup size does "
         "not divide KV_TILE: the 29-row tile of head dim 128 with a mask in 16 KiB of workgroup storage and the "
         "13-row tile of head dim 256 at any width, and 32-row tiles on 64- and 128-lane subgroups. The values are "
         "discarded, so the output is right (WGSL bounds a workgroup array's out-of-bounds read to a value of the "
         "array, or zero).",
         "The case: one batch of 2 query rows over 20 keys (one split, within the 29-row tile), head dim 128, "
         "8 query heads on 2 KV heads, f16 K and V, a causal mask; at 8 lanes the tile's last step reads rows "
         "29-31 of both arrays. The output is the attention the split writes (one split normalises its own)."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16),
               "wgpu": ("PASS", "PASS: select() discards the values read past the tile"),
               "dawn": ("PASS", "PASS: select() discards the values read past the tile")},
        make_case=vec_attention_case(1, 2, 20, "causal", 11),
        notes=("No output shows these reads: select() discards them, and WGSL bounds a workgroup array's read to "
               "the array. The reproduction passes everywhere; the offending lines below are the finding.",),
        sanitize=True, fix=with_tile_index_clamped,
        fix_text="calc_softmax_term's reads at `min(kv_idx, KV_TILE - 1)`",
        fixed_shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16)}),
    Finding(
        "llamacpp-vec-reduce-reads-past-stats", "llamacpp.attention.flash_attn_vec_reduce", "sanitize",
        dict(head_dim=128, nwg=4),
        ("The vec path's `flash_attn_vec_reduce` merges nwg split states per row, one split a lane: lane t of each "
         "subgroup reads `select(0.0, tmp[stats_base + 2u * thread + 0u], active_thread)` and the max likewise, "
         "with `active_thread = t < nwg`. select evaluates both operands, so the lanes from nwg to the subgroup "
         "size read the next rows' statistics and, for the last row, up to 2 (subgroup size - nwg) floats past the "
         "scratch buffer ggml-webgpu binds (rows · nwg · (D + 2) floats, rounded to 4 bytes: ggml-webgpu.cpp "
         "L2120-2130). The values are discarded, so the output is right; robust buffer access keeps the read "
         "inside the buffer, a runtime without it reads past the binding.",
         "The case: 2 batches of 3 rows and 4 heads, head dim 128, 4 splits a row (some empty), the states drawn "
         "as the split writes them; at 8 lanes lanes 4-7 read past each row's statistics."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16),
               "wgpu": ("PASS", "PASS: select() discards the statistics read past the row"),
               "dawn": ("PASS", "PASS: select() discards the statistics read past the row")},
        make_case=reduce_case(2, 3, 4, 5),
        notes=("No output shows these reads: select() discards them, and robust buffer access keeps the index "
               "inside the buffer. The reproduction passes everywhere; the offending lines below are the finding. "
               "Where nwg equals the subgroup size no lane is inactive and nothing is read past.",),
        sanitize=True, fix=with_stats_index_clamped,
        fix_text="each lane's statistics read at split `min(thread, nwg - 1)`",
        fixed_shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16)}),
    Finding(
        "llamacpp-vec-split-reads-past-mask", "llamacpp.attention.flash_attn_vec_split", "sanitize",
        dict(head_dim=64),
        ("`flash_attn_vec_split` loads each KV tile's mask into workgroup memory as "
         "`mask_shmem[elem_idx] = select(0.0f, f32(mask[mask_idx]), mask_in_bounds)` with "
         "`mask_idx = mask_global_offset + global_k_col` and `mask_in_bounds = q_row_start < seq_len_q && "
         "global_k_col < seq_len_kv` (flash_attn_vec_split.wgsl L259-265). WGSL evaluates both operands of select, "
         "so where seq_len_kv is not a multiple of KV_TILE the last tile's columns past it read the next row's mask "
         "and, for the last row of the last batch, past the mask binding, which ggml-webgpu sizes to the tensor. "
         "The value is discarded, so the output is right; robust buffer access keeps the read inside the buffer, a "
         "runtime without it reads past the allocation. A mask whose key dimension is padded past the last tile "
         "(llama.cpp pads its KV cache to 256 rows) is never read past its end. The tile is loaded only where it "
         "is not all zero (flash_attn_vec_blk's state 2 skips it), so the last row must see a mask value there.",
         "The case: one batch of 2 query rows over 59 keys (one split, two tiles of 32), head dim 64, 8 query "
         "heads on 2 KV heads, f16 K and V, llama.cpp's ALiBi distance mask (-|i - j|, not all zero in any tile), "
         "unpadded: the second tile's columns 59-63 of the last row read the 5 halves past the mask's 118. At head "
         "dim 64 KV_TILE is 32, which 8 lanes divide, so §19.4's reads past the tile do not occur here."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16),
               "wgpu": ("PASS", "PASS: select() discards the mask values read past the row"),
               "dawn": ("PASS", "PASS: select() discards the mask values read past the row")},
        make_case=vec_attention_case(1, 2, 59, "distance", 11),
        notes=("No output shows this read: select() discards it, and robust buffer access keeps the index "
               "inside the buffer. The reproduction passes everywhere; the offending line below is the finding.",),
        sanitize=True, fix=with_mask_column_clamped,
        fix_text="the mask tile loaded at column `min(global_k_col, seq_len_kv - 1)` of its row",
        fixed_shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16)}),
    Finding(
        "llamacpp-tile-reads-past-q", "llamacpp.attention.flash_attn_tile", "sanitize", {},
        ("FLASH_ATTN_EXT's tile path (20 query rows or more on an adapter with subgroups and no subgroup "
         "matrices) runs one workgroup per 4 query rows of a head (Q_TILE) and stages them as "
         "`q_shmem[elem_idx] = select(0.0, Q_TYPE(Q[global_q_row_offset + q_col]) * params.scale, "
         "head_q_row < params.seq_len_q)` (flash_attn_tile.wgsl L80-89). WGSL evaluates both operands of select, "
         "so where seq_len_q is not a multiple of 4 the last tile's rows past it are read anyway: the next head's "
         "rows (in bounds) and, for the last head of the last batch, up to 3 rows past the Q binding, which "
         "ggml-webgpu sizes to the tensor. The values are discarded (those rows' subgroups write nothing), so the "
         "output is right; robust buffer access keeps the read inside the buffer, a runtime without it reads past "
         "the allocation.",
         "The case: the kernel's first corner: one batch of 21 query rows over 21 keys, head dim 128, 8 query "
         "heads on 2 KV heads, f16 K and V, a causal mask. ggml-webgpu lays Q out head by head (a head's 21 rows, "
         "then the next head's), so the sixth tile's rows 21-23 are the next head's first rows for heads 0-6 and, "
         "for head 7, the 384 floats past the binding's 21504."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16),
               "wgpu": ("PASS", "PASS: select() discards the Q rows read past seq_len_q"),
               "dawn": ("PASS", "PASS: select() discards the Q rows read past seq_len_q")},
        make_case=tile_attention_case(1, 21, 21, "causal", 11),
        notes=("No output shows this read: select() discards it, and robust buffer access keeps the index "
               "inside the buffer. The reproduction passes everywhere; the offending line below is the finding. "
               "Where seq_len_q is a multiple of 4 no row is read past.",),
        sanitize=True, fix=with_q_row_clamped,
        fix_text="each Q row staged from row `min(head_q_row, seq_len_q - 1)`",
        fixed_shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16)}),
    Finding(
        "llamacpp-get-rows-reads-past-table", "llamacpp.ops.get_rows", "sanitize", dict(src_type="q8_0"),
        ("get_rows.wgsl decodes q4_0, q8_0 and the other block types the shader library reads as u32 words "
         "(`SRC_TYPE=u32`, ggml-webgpu-shader-lib.hpp L1616-1634) through `load_u32_at_src` (common_decls.tmpl "
         "L29-36), the `src` twin of MMVQ's `load_u32_at_src0`: it loads `src[word_idx + 1u]` for every load and "
         "discards it with `select()` where the offset is word-aligned. When the last row gathered ends the table, "
         "the last block's last load reads the word past the binding, which ggml-webgpu sizes to the tensor's bytes "
         "rounded up to 4 (ggml-webgpu.cpp L403-406): q8_0's 34-byte blocks, and q4_0's 18-byte ones, with an even "
         "number of blocks. The value is never used, so the rows are right; robust buffer access keeps the read "
         "inside the buffer, a runtime without it reads past the allocation.",
         "The case: a q8_0 table of 2 rows of 2 blocks (64 values a row, 136 bytes, 34 words: the binding ends at "
         "the last block's last word), nothing past it in its buffer, and one index, 1: the table's last row "
         "gathered. Its blocks are random codes with random f16 scales."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16),
               "wgpu": ("PASS", "PASS: the word read past the table is discarded"),
               "dawn": ("PASS", "PASS: the word read past the table is discarded")},
        notes=("No output shows this read: select() discards the word, and robust buffer access keeps the index "
               "inside the buffer. The reproduction passes everywhere; the offending line below is the finding.",),
        sanitize=True, fix=with_next_src_word_when_needed,
        fix_text="the next word loaded only where the offset is not word-aligned (`if (shift != 0u)`)",
        fixed_shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16)}),
    Finding(
        "llamacpp-soft-max-floor", "llamacpp.ops.soft_max", "reference", dict(mask="none", sinks=False),
        ("soft_max.wgsl starts each row's max at `lower_max_bound(i2)`: the head's sink with HAS_SINK, else the "
         "constant -1e30 (L114-116, L144). For a row of finite logits all below -1e30 the max stays -1e30, every "
         "`exp(s - max)` underflows to 0, the sum is 0, and each output is `0 * (1.0 / 0.0)`, NaN. ggml's op (its "
         "CPU code starts the max at -INFINITY) gives the row's softmax: [0.5, 0, 0, 0.5] for "
         "[-2e30, -2.5e30, -3e30, -2e30]. With a sink the max starts at the sink and the row is right. Such logits "
         "are legal f32 inputs of `ggml_soft_max_ext`, though far below anything a model's attention scores reach.",
         "The case: the op without mask or sinks (scale 1), 2 heads of one row of 131 logits (one workgroup of "
         "256 lanes a row), each -(1 + U(0, 1)) 2^101, about -2.5e30 to -5.1e30: every logit below the program's "
         "-1e30 floor. The reference is the row's softmax in float64; the program writes NaN for every output."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        make_case=soft_max_floor_case,
        fix=with_lowest_finite_floor,
        fix_text="lower_max_bound without sinks returning f32's lowest finite value (`-0x1.fffffep+127f`) "
                 "for -1e30",
        fixed_shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16)}),
    Finding(
        "llamacpp-mul-mat-vec-f16-dot", "llamacpp.quant.mul_mat_vec", "native_width",
        dict(weight="f16", activation="f16", vec4=True),
        ("MUL_MAT takes f16 activations with f16 weights (ggml-webgpu.cpp L4443-4446). With rows a multiple of 4 "
         "long, get_mul_mat_vec_pipeline takes `VEC` (ggml-webgpu-shader-lib.hpp L1972-1975), and "
         "mul_mat_vec_acc.tmpl's `inner_dot` returns `f32(dot(SRC1_TYPE(src0_val), src1_val))` (L26-28) with "
         "`SRC1_TYPE` = `vec4<f16>`: WGSL computes that dot in f16. Four products of 256 x 256 (65536 each, one "
         "past f16's 65504) overflow to inf, and y with them, where ggml's op writes 4 x 65536 = 262144 into its "
         "f32 dst. The SCALAR program (rows not a multiple of 4) converts each value to f32 first, where a product "
         "of two f16 values is exact, and is right on the same values; f32 activations are unaffected.",
         "The case: one row of 8 f16 weights of 256 against one column of 8 f16 activations of 256 (K = 8, two "
         "vec4s): y = 8 x 65536 = 524288 exactly, an ordinary f32; the program writes inf."),
        shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        fix=with_f32_dot,
        fix_text="inner_dot's dot product taken in f32 (`dot(vec4<f32>(src0_val), vec4<f32>(src1_val))`)",
        fixed_shows={"chromium": ("SKIP", SWIFTSHADER_NO_F16)}),
    # The implementations' own findings, each through a conformance kernel: the smallest program that
    # shows the deviation, judged against what WGSL requires (verify.kernels.conformance).
    Finding(
        "wgpu-native-workgroup-zero-init", "conformance.workgroup_zero_init", "reference", dict(words=4096),
        ("WGSL zero-initialises every workgroup variable at the start of each workgroup (var declarations, the "
         "workgroup address space). wgpu-native creates every compute pipeline with "
         "`zero_initialize_workgroup_memory: false` (src/lib.rs, at each pipeline creation, marked TODO(wgpu.h)), so "
         "wgpu-core never adds Naga's zeroing and a workgroup reads what the driver left there: the previous "
         "dispatch's markers on Mesa's lavapipe (22.3 and 25) and on NVIDIA's Vulkan driver once another kernel used "
         "the memory. Dawn, and wgpu-core as Firefox and Deno create pipelines, zero it.",
         "The kernel runs twice on 256 workgroups of 64 lanes: the first dispatch fills its 16 KiB array with "
         "markers, the second counts, per lane, the words it reads before writing any. Every count must be 0."),
        shows={"chromium": ("PASS", "Chromium's Dawn zeroes workgroup memory"), "wgpu": ("FAIL", None),
               "dawn": ("PASS", "Dawn zeroes workgroup memory")},
        upstream=Upstream("wgpu-native (gfx-rs/wgpu-native), through wgpu-py", "29.0.1.1 (wgpu-py 0.32.0)",
                          "every compute pipeline created with zero_initialize_workgroup_memory: false",
                          ("src/lib.rs",))),
    Finding(
        "loop-var-not-rezeroed", "conformance.loop_var_zero_init", "reference", {},
        ("WGSL gives a function-scope variable without an initializer the zero value each time its declaration "
         "executes; in a loop body that is every iteration. Tint (Dawn, Chrome) and Naga before wgpu v30 "
         "(wgpu-native 29, which wgpu-py 0.32 ships; fixed by gfx-rs/wgpu#9592) declare the variable once for the "
         "whole loop, so its value carries from one iteration to the next.",
         "The kernel's loop body declares `var scalar: u32;` and `var vector: vec4<f32>;`, adds 1 to each and "
         "stores them, for 4 iterations. Every stored value must be 1; the implementations store 1, 2, 3, 4."),
        shows={"chromium": ("FAIL", None), "wgpu": ("FAIL", None), "dawn": ("FAIL", None)},
        upstream=Upstream("Dawn (Tint) and wgpu-native (Naga)", "Dawn v20261009 (npm webgpu 0.6.2); wgpu-native 29",
                          "function-scope `var` without initializer inside a loop body",
                          ("src/tint (var lowering)", "naga/src/back/spv (gfx-rs/wgpu#9489, #9592)"))),
)


def finding_names() -> list[str]:
    return [f.name for f in FINDINGS]


# -- running a finding here, for ISSUE.md -------------------------------------------------------------------
def _worst(outputs: dict, expected: list, count: int = 5) -> list[dict]:
    from verify.budgets.metrics import compare

    rows = []
    for item in expected:
        metrics = compare(outputs[item.name], item)
        assert metrics.ratio is not None  # compare() sets it (only metrics read back from a record lack it)
        ratio = metrics.ratio.ravel()
        got = np.asarray(outputs[item.name], np.float64).ravel()
        lo, hi = (np.broadcast_to(item.lo, metrics.ratio.shape).ravel(),
                  np.broadcast_to(item.hi, metrics.ratio.shape).ravel())
        budget = np.broadcast_to(item.budget, metrics.ratio.shape).ravel()
        for flat in np.argsort(-ratio, kind="stable")[:count]:
            if ratio[flat] <= 1:
                break
            index = [int(i) for i in np.unravel_index(flat, metrics.ratio.shape)]
            shown = f"{lo[flat]:.6g}" if lo[flat] == hi[flat] else f"[{lo[flat]:.6g}, {hi[flat]:.6g}]"
            rows.append({"output": item.name, "index": index, "got": got[flat], "expected": shown,
                         "budget": budget[flat], "ratio": ratio[flat]})
    return rows


class Devices:
    """The devices one finding runs on: opened as its runs ask, at most one at a time, all closed
    when the finding is done.

    Dawn lives in a Node process per device (verify.gpu.dawn's worker.mjs). A device opened per
    run and never closed (the process's stderr thread keeps it referenced, so it is never
    collected) piled up 11-13 idle Dawn workers, about 2 GB, over one `verify findings export`. So
    opening a device closes the one before (the sanitizer's limits differ from the check's), and
    `close` ends it: a finding done leaves no Dawn worker behind, and there is never more than one.
    ONNX Runtime's Node process (verify.sources.ort.runtime) is another matter: one per process by
    design, started where a kernel's WGSL comes from ORT, kept for the next ORT finding (starting it
    costs a second or two of loading ORT's wasm) and ended when the export is (close_ort_runtimes).
    """

    def __init__(self):
        self._key = None
        self._device = None

    def get(self, implementation: str | None, limits: dict):
        """A device of `implementation` held to `limits` (SetupError where none opens here)."""
        from verify.gpu.implementations import open_device

        key = (implementation, json.dumps(limits, sort_keys=True))
        if self._device is not None and self._key == key and getattr(self._device, "alive", True):
            return self._device
        self.close()
        self._device = open_device(implementation, None, limits)
        self._key = key
        return self._device

    def close(self) -> None:
        device, self._device, self._key = self._device, None, None
        if device is not None and hasattr(device, "close"):
            device.close()

    def __enter__(self) -> Devices:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def close_ort_runtimes() -> None:
    """End ONNX Runtime's Node processes (started where a kernel's WGSL is captured from an ORT
    session, or its cache looked up), if this process started any."""
    runtime = sys.modules.get("verify.sources.ort.runtime")
    if runtime is not None:
        runtime.close_shared()


@dataclass
class Observed:
    """A finding's case run once here: what came back ({on, verdict, reason, worst, compiler}),
    and the sanitizer's findings where the finding names lines (verify.instrument.findings)."""

    result: dict | None = None
    sanitizer: list = field(default_factory=list)
    #: Why nothing was run (no device of the implementation opens here), or "".
    missing: str = ""


def observe(finding: Finding, kernel, config: dict, wgsl: str, case, devices: Devices) -> Observed:
    """Run the case once here, on `devices`: what came back, and the sanitizer's findings where the
    finding names lines. Nothing (and why) where no device of the implementation opens."""
    from verify.checks import get_check
    from verify.checks.context import CheckContext
    from verify.gpu.device import ShaderCompileError

    check = get_check(finding.check)
    implementation = finding.implementation or (kernel.implementations or (None,))[0]
    try:
        device = devices.get(implementation, check.device_limits(kernel, config))
    except SetupError as exc:
        return Observed(missing=str(exc).splitlines()[0])
    on = device.info.label
    missing = device.missing(kernel.requirements(config))
    if missing:
        return Observed({"on": on, "verdict": "SKIP", "reason": f"the adapter lacks {', '.join(missing)}", "worst": []})
    try:
        launched = kernel.launch(device, wgsl, config, case)
    except ShaderCompileError as exc:
        message = "\n".join(str(exc).strip().splitlines()[:40])
        return Observed({"on": on, "verdict": "ERROR", "compiler": message, "worst": [],
                         "reason": f"the WGSL does not compile ({exc.compiler or 'compiler'}):"})
    outcome = CheckContext(kernel, config, device, wgsl).judge(case, launched)
    observed = Observed({"on": on, "verdict": "PASS" if outcome.passed else "FAIL",
                         "reason": outcome.message() if not outcome.passed else "every output within its budget",
                         "worst": _worst(launched.outputs, kernel.expected(config, case))})
    if finding.sanitize:
        from verify.instrument import SanitizingDevice

        if finding.check != "sanitize":  # the sanitizer binds its log as one more storage buffer
            device = devices.get(implementation, get_check("sanitize").device_limits(kernel, config))
        sanitizing = SanitizingDevice(device)
        kernel.launch(sanitizing, wgsl, config, case)
        observed.sanitizer = list(sanitizing.take_report().findings)
    return observed


def stable_message(found) -> str:
    """A sanitizer finding as the folder states it: what is accessed wrongly, how, and at which lines,
    without what the run it came from happened to see first (the invocation, the element, the index
    of the first access logged; the count, which follows the adapter's subgroup width). The messages
    with those are in OBSERVED.md (observed_text): a folder's files are the same on every machine."""
    from verify.instrument.findings import OutOfBounds, Race, UninitializedRead

    def memory(space: str, variable: str) -> str:
        return f"{'workgroup array' if space == 'workgroup' else 'storage buffer'} {variable}"

    def at(site) -> str:
        return f'at {site.where} "{site.source_line.strip()}"'

    if isinstance(found, OutOfBounds):
        site = found.access.site
        where = site.expression.strip()
        if where.count("[") > 1:
            where = f"index {found.dimension} of {where}"
        return (f"out-of-bounds {site.kind.verb} of {memory(site.space, site.variable)}: an index not below the "
                f"length {found.length} ({where}); {site.kind.verb} {at(site)}")
    if isinstance(found, UninitializedRead):
        site = found.access.site
        return (f"uninitialised read of {memory(site.space, site.variable)}: read {at(site)} before any invocation "
                "of the workgroup wrote it (the kernel relies on zero-initialisation)")
    if isinstance(found, Race):  # the two accesses by line: which one the log holds first is the run's
        first, second = sorted((found.first.site, found.second.site), key=lambda site: (site.where, site.kind.verb))
        how = {"epoch": "with no barrier between them", "workgroups": "in different workgroups, which nothing orders",
               "memory": f"with no {'storageBarrier' if found.space == 'storage' else 'workgroupBarrier'} between them"}
        return (f"race on {memory(found.space, found.variable)}: {first.kind.verb} {at(first)} and "
                f"{second.kind.verb} {at(second)}, {how.get(found.ordering, 'unordered')}")
    return found.message()


# -- writing ------------------------------------------------------------------------------------------------
#: Where the tests run each reproduction (Finding.shows), as a folder's ISSUE.md names them.
PLACES = {"chromium": "a browser: Chromium on SwiftShader (subgroups of 4, no shader-f16)",
          "wgpu": "wgpu (Naga) on Mesa 22.3 lavapipe (subgroups of 8, workgroup memory not zeroed)",
          "dawn": "Dawn (Tint) in Node on Mesa 25 lavapipe (subgroups of 8)"}
#: The file of a folder that says what came back on the machine that exported it: a run's result
#: (the adapter, the worst elements, the sanitizer's first witnesses) differs by machine and by run,
#: so it lies beside the reproduction and is not committed (reports/findings/.gitignore): the
#: folder's other files are the same wherever and whenever it is exported.
OBSERVED = "OBSERVED.md"


def story(finding: Finding, kernel, config: dict, wgsl: str, case, sanitizer: list[str]) -> Story:
    """What the folder's files say: the registry's text, the route table, the sanitizer's lines;
    nothing measured on this machine (OBSERVED)."""
    verdict, why = finding.shows.get("chromium", ("FAIL", None))
    fail = f"The finding reproduces on this adapter: {finding.title}."
    expect = {
        "verdict": verdict,
        "text": f"{verdict} in a browser with WebGPU" + (f" ({why})" if why and verdict != "FAIL" else "") + ".",
        "fail": fail,
        "pass": ("The finding did not show on this adapter: "
                 + (finding.notes[0] if finding.notes else "its schedule, subgroup width or arithmetic hides it.")),
        "error": ("The WGSL does not compile or the dispatch is refused on this implementation."
                  + (" That is the finding." if any(v == "ERROR" for v, _ in finding.shows.values()) else "")),
        "skip": "This adapter cannot run the kernel" + (f": {why}" if verdict == "SKIP" and why else "."),
    }
    notes = list(finding.notes) + [why for _, why in finding.shows.values() if why and why not in finding.notes]
    return Story(title=finding.title, detail=list(finding.detail), kernel=kernel.name, config=config,
                 case=case.summary(), budget=_plain_budget(kernel.budget_doc()), expect=expect,
                 upstream=finding.upstream or kernel.upstream(config, wgsl), notes=_unique(notes),
                 sanitizer=sanitizer, links=list(finding.links), routes=_routes(finding.shows),
                 blame=finding.declared)


def _routes(shows: dict) -> list[dict]:
    return [{"place": PLACES[where], "verdict": verdict, "why": why or ""} for where, (verdict, why) in shows.items()]


def observed_text(title: str, observed: Observed) -> str:
    """OBSERVED.md: what came back when the case ran here (verdict, worst elements, the compiler's
    messages, the sanitizer's messages with their witnesses), to paste under an issue."""
    from verify.export.write import _environment

    messages = [f.message() for f in observed.sanitizer]
    missing = "no device of the kernel's WebGPU implementation opens here" if observed.missing else ""
    text = _environment().get_template("OBSERVED.md.j2").render(title=title, observed=observed.result,
                                                                missing=missing, sanitizer=messages)
    return text.rstrip() + "\n"


def reproduction_limits(finding: Finding, kernel, config: dict) -> dict:
    """The device limits a folder asks for: its check's, except the sanitizer's extra storage buffer
    (its access log), which a reproduction never binds; asking for it would refuse the page on an
    adapter with exactly the kernel's ten (TVM's web runtime asks for ten, webgpu.ts L121)."""
    from verify.checks import get_check

    if finding.check == "sanitize":
        return dict(kernel.limits)
    return get_check(finding.check).device_limits(kernel, config)


def fixed(finding: Finding, kernel, config: dict, wgsl: str, case, devices: Devices | None) -> dict:
    """The files of `fixed/`: the finding's case on the kernel with its fix, which passes (and, run
    on `devices`, what came back)."""
    assert finding.fix is not None  # build makes fixed/ only for a finding with a fix
    repaired = finding.fix(wgsl)
    captured = capture(kernel, config, repaired, case, limits=reproduction_limits(finding, kernel, config))
    told = story(finding, kernel, config, repaired, case, [])
    told.title = f"{finding.title}: with {finding.fix_text}, the outputs match the reference"
    told.detail = [f"The same case as the folder above, on the kernel with {finding.fix_text}. "
                   "Every output is within its budget of the reference, where the kernel as shipped fails."]
    verdict, why = (finding.fixed_shows or {}).get("chromium", ("PASS", None))
    told.notes = [why for _, why in (finding.fixed_shows or {}).values() if why]
    told.routes = _routes({where: (finding.fixed_shows or {}).get(where, ("PASS", None)) for where in finding.shows})
    places = {"chromium": "in a browser with WebGPU", "wgpu": "with wgpu", "dawn": "with Dawn"}
    told.expect = {"verdict": verdict,
                   "text": "PASS everywhere." if not finding.fixed_shows else
                           "; ".join(f"{shown} {places[where]}" + (f" ({reason})" if reason else "")
                                     for where, (shown, reason) in finding.fixed_shows.items()) + "; PASS elsewhere.",
                   "pass": "The fix holds on this adapter.",
                   "fail": "The fixed kernel fails here: the fix does not cover this adapter.",
                   "error": "The WGSL does not compile or the dispatch is refused here.",
                   "skip": "This adapter cannot run the kernel."}
    files = render(captured, told)
    if devices is not None:
        files[OBSERVED] = observed_text(told.title, observe(replace(finding, sanitize=False), kernel, config,
                                                            repaired, case, devices))
    return files


def _unique(items: list) -> list:
    return list(dict.fromkeys(items))


def _plain_budget(text: str) -> str:
    from verify.export.export import plain

    return plain(text)


def build(finding: Finding, *, run: bool = True, devices: Devices | None = None):
    """(files of the finding's folder, its index entry, what came back here: an Observed, None where
    not `run`). The case runs on `devices` (its own, closed before it returns, where none is given)."""
    from verify.kernels.registry import get_kernel
    from verify.results.record import KnownFinding

    if run and devices is None:
        with Devices() as own:
            return build(finding, run=run, devices=own)
    kernel = get_kernel(finding.kernel)
    config = kernel.config(finding.config)
    wgsl = kernel.wgsl(config)
    if finding.transform is not None:
        wgsl = finding.transform(wgsl)
    if finding.make_case is not None:
        case = finding.make_case(kernel, config)
    else:
        examples = kernel.finding_examples(finding.check, config)
        if not examples:
            raise UsageError(f"finding {finding.name}: {kernel.name} gives no example case under {finding.check}")
        case = examples[0]
    captured = capture(kernel, config, wgsl, case, limits=reproduction_limits(finding, kernel, config))
    observed = None
    if run:
        assert devices is not None  # opened above where the caller gave none
        observed = observe(finding, kernel, config, wgsl, case, devices)
    sanitizer = sorted(set(stable_message(f) for f in observed.sanitizer), key=_by_line) if observed else []
    told = story(finding, kernel, config, wgsl, case, sanitizer)
    if finding.fix is not None:
        told.detail.append(f"The folder `fixed/` holds the same reproduction with {finding.fix_text}; it passes.")
    files = render(captured, told)
    if observed is not None:
        files[OBSERVED] = observed_text(finding.title, observed)
    if finding.fix is not None:
        files.update({f"fixed/{name}": text for name, text in
                      fixed(finding, kernel, config, wgsl, case, devices if run else None).items()})
    headlines = [f.headline for f in KnownFinding.all_of(kernel.known_finding(finding.check, config))
                 if f.finding_id == finding.name]
    declared = finding.declared
    entry = {"name": finding.name, "section": finding.section, "title": finding.title, "kernel": kernel.name,
             "layer": declared.layer.value, "project": declared.project,
             "check": finding.check, "config": config, "headlines": headlines, "shows": finding.shows,
             **({"fixed_shows": finding.fixed_shows} if finding.fixed_shows else {})}
    return files, entry, observed


def _by_line(message: str) -> tuple:
    """A sanitizer line's sort key: its first cited line, then its text (the sanitizer lists its
    findings in the order of its log, which is the run's)."""
    lines = [int(n) for n in re.findall(r"\bat line (\d+)\b", message)]
    return (min(lines) if lines else 0, message)


class _Heartbeat:
    """A line every `every` seconds while a finding runs, so a long one (a first capture of ORT's
    programs, a cold shader cache) is seen working rather than hung."""

    def __init__(self, say, name: str, start: float, every: float):
        self._say, self._name, self._start, self._every = say, name, start, every
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat {name}", daemon=True)

    def _beat(self) -> None:
        while not self._stop.wait(self._every):
            self._say(f"      {self._name}: still running, {time.monotonic() - self._start:.0f} s")

    def __enter__(self) -> _Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


#: Seconds between two heartbeat lines of a finding still running.
HEARTBEAT_S = 30.0


def export_findings(out: Path, *, only: str | None = None, run: bool = True, say=lambda line: None,
                    heartbeat_s: float = HEARTBEAT_S) -> list[Path]:
    """Regenerate every finding's folder under `out` (each written all at once, replacing the old
    one) and the index beside them; `only`: comma-separated names.

    `say` gets a line as each finding starts (`...   name (§) (i/n)`), one every `heartbeat_s`
    seconds while it runs, and one when it is done with its time and what came back here. Each
    finding runs on its own Devices, closed when it is done (no Dawn worker outlives a finding),
    and ONNX Runtime's Node process, where one was started, is ended with the export."""
    from verify.export.write import check_destination

    wanted = FINDINGS
    if only:
        names = [n.strip() for n in only.split(",") if n.strip()]
        unknown = sorted(set(names) - set(finding_names()))
        if unknown:
            raise UsageError(f"--only: no finding named {', '.join(unknown)}; the findings: "
                             f"{', '.join(finding_names())}")
        wanted = tuple(f for f in FINDINGS if f.name in names)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: is a file, not a folder")
    for finding in wanted:
        check_destination(out / finding.name, replace=True)
    written, entries = [], _read_index(out)
    try:
        for number, finding in enumerate(wanted, 1):
            say(f"...   {finding.name} ({finding.section}) ({number}/{len(wanted)})")
            start = time.monotonic()
            with Devices() as devices, _Heartbeat(say, finding.name, start, heartbeat_s):
                files, entry, observed = build(finding, run=run, devices=devices)
            written.append(write_folder(out / finding.name, files, replace=True))
            entries[finding.name] = entry
            shown = ""
            if observed is not None and observed.result:
                shown = f"  [{observed.result['verdict']} on {observed.result['on']}]"
            elif observed is not None:
                shown = f"  [not run here: {observed.missing}]"
            took = time.monotonic() - start
            say(f"done  {finding.name} ({finding.section}) {took:.1f} s: {out / finding.name}{shown}")
    finally:
        close_ort_runtimes()
    order = {name: i for i, name in enumerate(finding_names())}
    index = {"schema": INDEX_SCHEMA, "findings": sorted(entries.values(), key=lambda e: order.get(e["name"], 1 << 20))}
    write_atomic(out / INDEX, (json.dumps(index, indent=1, default=_plain, sort_keys=True) + "\n").encode())
    return written


def _read_index(out: Path) -> dict:
    try:
        data = json.loads((out / INDEX).read_text())
        # "observed" (what came back where an older export ran) is no longer part of an entry: OBSERVED
        return {e["name"]: {k: v for k, v in e.items() if k != "observed"}
                for e in data.get("findings", []) if isinstance(e, dict) and "name" in e}
    except (OSError, ValueError, AttributeError):
        return {}


def _plain(value):
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")
