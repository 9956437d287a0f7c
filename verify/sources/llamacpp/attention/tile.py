"""ggml-webgpu's tiled prefill attention (FLASH_ATTN_EXT's tile path): `llamacpp.attention.flash_attn_tile`.

For 20 query rows or more on an adapter with subgroups but without subgroup matrices (lavapipe,
every browser today), ggml-webgpu runs flash_attn_tile.wgsl (ggml_webgpu_flash_attn_direct, C
L2080-2086; the program by get_flash_attn_pipeline, S L2831-2907): one workgroup per 4 query
rows of a head (Q_TILE), subgroup i taking row i; per KV tile of KV_TILE rows the workgroup
stages K in workgroup memory as f16, each lane scores its keys (q·scale·k, the softcap's tanh,
slope·mask), subgroupMax gives the tile's max, the running sum and output are rescaled, each
weight exp(s - max) is stored as f16, V is staged over K, and each lane accumulates its vec4
chunks of the output; a sink is folded in after the last tile, then o / Σ. verify instantiates
the program as the shader library does for the config's adapter
(verify.sources.llamacpp.selection.tile_attention_plan), binds and fills `params` as the host
does (C L1973-2064) and judges the output against references.ggml_attention.flash_attn_ext
within verify.budgets.llamacpp_attention_tile.tile_output_budget.

The program's subgroupMax and subgroupAdd sit in the KV-tile loop, outside every branch on the
lane or the subgroup (the rows a subgroup does not own contribute FLOAT_MIN and 0), so the whole
workgroup reaches them together and verify's emulation runs the program at other widths: the
kernel's check is `reference`, at the adapter's width and at each emulated width the adapter's
range allows (the tile path needs maxComputeInvocationsPerWorkgroup >= 4 x the max subgroup
size, so at verify's 256 invocations the widest subgroups it takes are 64 lanes).
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.llamacpp_attention_tile import tile_output_budget, tile_score_errors
from verify.cases import Case
from verify.errors import FailureKind, UsageError
from verify.gpu import Output
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.profiles import get_profile
from verify.references.ggml_attention import alibi_slopes, flash_attn_ext
from verify.results.record import KnownFinding
from verify.sources.llamacpp import programs, selection
from verify.sources.llamacpp.attention.kernels import (
    HEADS,
    KV_HEADS,
    KV_TYPE,
    MASK,
    MAX_BIAS,
    SINKS,
    SOFTCAP,
    STORAGE,
    alibi_of,
    op_scale,
    q_buffer,
    validate_attention,
)
from verify.sources.llamacpp.attention.tile_cases import make_tile_case, tile_cases
from verify.sources.llamacpp.findings import TILE_READS_PAST_Q
from verify.sources.llamacpp.launch import (
    SUBGROUP_MAX,
    SUBGROUP_MIN,
    Program,
    bind,
    check_width,
    header,
    upstream,
)

HEAD_DIM = ConfigKey("head_dim", 128, (32, 40, 64, 80, 96, 112, 128, 192, 256),
                     "head dim of Q, K and V (HEAD_DIM_QK = HEAD_DIM_V; the tile path needs a multiple of 4)")
TILE_SUBGROUP_MAX = ConfigKey("subgroup_max", 64, SUBGROUP_MAX.choices,
                              "the adapter's subgroupMaxSize ggml-webgpu reads (the tile path needs 4x it within "
                              "the 256 invocations: at most 64)")
TILE_FILES = ("wgsl-shaders/flash_attn_tile.wgsl", "wgsl-shaders/flash_attn_decls.tmpl",
              "wgsl-shaders/flash_attn_staging.tmpl", "wgsl-shaders/common_decls.tmpl")
MAX_INVOCATIONS = 256


def adapter_of(config: dict) -> selection.Adapter:
    """An adapter with subgroups and no subgroup matrices, the config's subgroup range and workgroup
    storage, 256 invocations."""
    try:
        return selection.Adapter(min_subgroup=config["subgroup_min"], max_subgroup=config["subgroup_max"],
                                 max_workgroup_storage=config["workgroup_storage"], max_invocations=MAX_INVOCATIONS)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def shape_of(config: dict, rows: int = selection.FLASH_ATTN_VEC_MAX_SEQ_LEN, kv_len: int = 300,
             batch: int = 1) -> selection.AttentionShape:
    return selection.AttentionShape(config["head_dim"], config["head_dim"], rows, config["heads"], config["kv_heads"],
                                    kv_len, config["kv_type"], config["kv_type"], config["mask"], config["sinks"],
                                    config["softcap"], batch=batch, mask_batched=True)


def plan_of(config: dict, rows: int = selection.FLASH_ATTN_VEC_MAX_SEQ_LEN, kv_len: int = 300,
            batch: int = 1) -> selection.TileAttentionPlan:
    """The tile path's plan; the program depends on no shape but the config's (the KV length and
    query rows only size the grid)."""
    try:
        return selection.tile_attention_plan(adapter_of(config), shape_of(config, rows, kv_len, batch))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def tile_params(config: dict, case: Case) -> dict:
    """`params` in the host's order (C L2021-2048): every tensor at offset 0, ggml's strides in
    elements (Q [D, rows, heads, batch], K and V [D, L, kv_heads, batch], the mask [L, rows, 1,
    batch]), the scale divided by the softcap where there is one, ALiBi's f32 constants."""
    batch, rows, length = case.params["batch"], case.params["rows"], case.params["kv_len"]
    d, heads, kv_heads = config["head_dim"], config["heads"], config["kv_heads"]
    scale = np.float32(op_scale(config))
    if config["softcap"]:
        scale = np.float32(scale / np.float32(config["softcap"]))
    m0, m1, n_head_log2 = alibi_of(config)
    del batch
    return {"offset_q": 0, "offset_k": 0, "offset_v": 0, "offset_mask": 0, "offset_sinks": 0, "offset_dst": 0,
            "n_heads": heads, "seq_len_q": rows, "seq_len_kv": length, "stride_q1": d, "stride_q2": rows * d,
            "stride_q3": heads * rows * d, "stride_k1": d, "stride_k2": length * d, "stride_k3": kv_heads * length * d,
            "stride_v1": d, "stride_v2": length * d, "stride_v3": kv_heads * length * d,
            "stride_mask3": rows * length if config["mask"] else 0, "q_per_kv": heads // kv_heads,
            "scale": float(scale), "max_bias": float(config["max_bias"]), "logit_softcap": float(config["softcap"]),
            "n_head_log2": n_head_log2, "m0": m0, "m1": m1}


def tile_reference(config: dict, case: Case):
    """(o [B, S, N, Dv], budget [B, S, N, Dv]): ggml's op and flash_attn_tile's budget."""
    q, k, v = case["q"], case["k"], case["v"]
    mask, sinks = case.arrays.get("mask"), case.arrays.get("sinks")
    alibi = alibi_of(config) if config["max_bias"] else None
    slopes = alibi_slopes(config["heads"], *alibi) if alibi else None
    o, logits2 = flash_attn_ext(q, k, v, mask, scale=op_scale(config), softcap=config["softcap"], slopes=slopes,
                                sinks=sinks)
    delta = tile_score_errors(q, k, mask, scale=op_scale(config), softcap=config["softcap"], slopes=slopes,
                              alibi=alibi, kv_type=config["kv_type"])
    # Per KV head: its query heads' logits [B, S, Nkv, G, L] against its values [B, 1, Nkv, 1, L, Dv],
    # so the budget's sums over values are one product per KV head (as the reference's are).
    batch, rows, heads = logits2.shape[:3]
    kv_heads = config["kv_heads"]
    values = np.asarray(v, np.float64)[:, None, :, None]
    if sinks is not None:
        values = np.concatenate([values, np.zeros(values.shape[:4] + (1, values.shape[-1]))], axis=4)
        delta = np.concatenate([delta, np.zeros(delta.shape[:-1] + (1,))], axis=-1)
    by_kv_head = (batch, rows, kv_heads, heads // kv_heads, logits2.shape[-1])
    budget = tile_output_budget(values, logits2.reshape(by_kv_head), delta.reshape(by_kv_head),
                                v_type=config["kv_type"])
    return o, budget.reshape(batch, rows, heads, -1)


def run_tile(device, wgsl: str, config: dict, case: Case, grid: tuple[int, int]):
    """flash_attn_tile as C L2080-2086 binds and dispatches it."""
    batch, rows = case.params["batch"], case.params["rows"]
    heads, d = config["heads"], config["head_dim"]
    arrays = {"Q": q_buffer(case), "K": case["k"], "V": case["v"], "dst": Output(np.float32, (batch, rows, heads, d))}
    if config["mask"]:
        arrays["mask"] = case["mask"]
    if config["sinks"]:
        arrays["sinks"] = case["sinks"]
    pipeline = device.pipeline(wgsl)
    return device.run(pipeline, bind(pipeline, arrays, tile_params(config, case)), grid + (1,))


class FlashAttnTile(Kernel):
    """FLASH_ATTN_EXT on the tile path: flash_attn_tile.wgsl as ggml-webgpu instantiates and dispatches it."""

    name = "llamacpp.attention.flash_attn_tile"
    family = "llamacpp.attention"
    source = "llamacpp"
    summary = ("llama.cpp ggml-webgpu's tiled prefill attention (flash_attn_tile, FLASH_ATTN_EXT for 20 query rows "
               "or more without subgroup matrices): GQA, f16/f32 K and V staged as f16, mask, ALiBi, softcap, sinks")
    reference = "verify.references.ggml_attention.flash_attn_ext"
    #: reference (at every emulated width): the subgroup built-ins are reached by the whole workgroup.
    checks = ("reference",)
    config_keys = (HEAD_DIM, HEADS, KV_HEADS, KV_TYPE, MASK, SINKS, SOFTCAP, MAX_BIAS, STORAGE, SUBGROUP_MIN,
                   TILE_SUBGROUP_MAX)
    output_axes = {"out": ("batch", "row", "head", "channel")}
    budget_function = staticmethod(tile_output_budget)
    #: Gate configs: (head dim, heads, KV heads, KV type, mask, sinks, softcap, max_bias, storage),
    #: every one for subgroups of 4 to 64 lanes (WG_SIZE 256), the widest range the tile path takes at
    #: 256 invocations, so the program must be right at lavapipe's 8 and every emulated width:
    #: head dim 128, 4/2 heads, with a mask in 16 KiB (KV_TILE 22); head dim 64 with sinks in 32 KiB
    #: (KV_TILE 64, the largest); head dim 112, f32 K and V, 6/2 heads (ALiBi's m1 slopes for heads 4
    #: and 5), ALiBi and a softcap of 50 (KV_TILE 26); head dim 80 without a mask (KV_TILE 41). Few
    #: heads, and head dim 256 (KV_TILE 23 in 32 KiB) only nightly: `sanitize` logs every access of
    #: every head, and its instrumented program at head dim 256 takes a minute on lavapipe.
    gate_shapes: dict[str, tuple[dict[str, object], ...]] = {
        "quick": ({"heads": 4}, {"head_dim": 64, "heads": 4, "kv_heads": 4, "sinks": True,
                                 "workgroup_storage": 32768}),
        "ci": ({"heads": 4}, {"head_dim": 64, "heads": 4, "kv_heads": 4, "sinks": True, "workgroup_storage": 32768},
               {"head_dim": 112, "heads": 6, "kv_heads": 2, "kv_type": "f32", "max_bias": 8.0, "softcap": 50.0},
               {"head_dim": 80, "heads": 6, "kv_heads": 2, "mask": False}),
    }
    gate_shapes["nightly"] = gate_shapes["ci"] + (
        {"head_dim": 256, "heads": 12, "kv_heads": 4, "sinks": True, "softcap": 30.0, "kv_type": "f32",
         "max_bias": 8.0, "workgroup_storage": 32768},)

    def requirements(self, config):
        return frozenset({"subgroup", "shader-f16"})  # `enable f16; enable subgroups;`

    def validate(self, config):
        validate_attention(config)
        plan_of(config)

    def gate_configs(self, profile):
        scale = get_profile(profile).scale
        return [self.config(c) for c in self.gate_shapes.get(scale, self.gate_shapes["ci"])]

    def gate_subgroup_widths(self, profile):
        """The profile's widths the gate configs' adapters may run (4 to 64 lanes): the tile path
        needs 4 x the max subgroup size within maxComputeInvocationsPerWorkgroup (C L4566-4568),
        so no adapter of 128-lane subgroups at verify's 256 invocations takes it."""
        return tuple(w for w in get_profile(profile).subgroup_widths if w <= MAX_INVOCATIONS // 4)

    def kv_tile(self, config) -> int:
        return plan_of(config).kv_tile

    def instance(self, config) -> selection.Instance:
        return plan_of(config).instance

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, TILE_FILES)])

    def cases(self, config, profile):
        return tile_cases(config, self.kv_tile(config), profile)

    def corners(self, config):
        """21 query rows (a last workgroup of one row) over 21 keys (no past, one KV tile or a
        partial one); 23 rows after a past that ends the context one key past a KV tile, in two
        batches with whole tiles hidden, zero or mixed; 24 rows in a cache padded to 256 whose used
        keys end one short of a tile. Every check runs them, `sanitize` (each access logged) too,
        so they stay prompt-sized; the random cases reach the profile's longest contexts."""
        tile = self.kv_tile(config)
        shapes = [(1, 21, 21, 21, "causal"), (2, 23, 2 * tile + 1, 2 * tile + 1, "blocks"),
                  (1, 24, 256, 3 * tile - 1 if 3 * tile - 1 >= 24 else 4 * tile - 1, "distance")]
        found = []
        for i, (batch, rows, length, used, kind) in enumerate(shapes):
            used = max(rows, min(used, length))
            length = length if config["mask"] else used
            found.append(make_tile_case(config, batch, rows, length, used, "normal", kind, 1.0, 11 + i, tile))
        return found

    def known_finding(self, check, config):
        """§19.11 under `sanitize`: the Q tile's select() reads the rows of the last 4-row tile past
        seq_len_q, past the Q binding for the last head of the last batch."""
        if check != "sanitize":
            return None
        return KnownFinding(TILE_READS_PAST_Q, kinds=(FailureKind.SANITIZER,),
                            reasons=("out-of-bounds read of storage buffer Q:",), on_this_adapter=False,
                            finding_id="llamacpp-tile-reads-past-q")

    def launch(self, device, wgsl, config, case):
        check_width(device, config)
        plan = plan_of(config, case.params["rows"], case.params["kv_len"], case.params["batch"])
        run = run_tile(device, wgsl, config, case, plan.grid)
        return Launched({"out": run.outputs["dst"]}, {"out": run.guard_intact["dst"]}, run.timing)

    def expected(self, config, case):
        o, budget = tile_reference(config, case)
        return [Expected.around("out", o, budget, "f32")]

    def features(self, case):
        return {"kv_len": case.params["kv_len"], "rows": case.params["rows"], "batch": case.params["batch"]}

    def budget_doc(self) -> str:
        import inspect

        return "\n\n".join(inspect.getdoc(f) or "" for f in (tile_score_errors, tile_output_budget))
