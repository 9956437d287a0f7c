"""ggml-webgpu's split-KV decode attention (FLASH_ATTN_EXT's vec path), end to end and program by
program: `llamacpp.attention.flash_attn_vec` (blk, split, reduce as ggml_webgpu_flash_attn_vec
dispatches them), `llamacpp.attention.flash_attn_vec_blk`, `llamacpp.attention.flash_attn_vec_split`
and `llamacpp.attention.flash_attn_vec_reduce`.

For fewer than 20 query rows on an adapter with subgroups, ggml-webgpu (ggml-webgpu.cpp
L2089-2272) runs up to three programs: with a mask, flash_attn_vec_blk classifies each KV tile
of each query row's mask (0: every value -inf or at most -65504, skipped; 2: all zero, the mask
is not added; 1: anything else); flash_attn_vec_split runs one workgroup per query row and split,
split iwg taking KV tiles iwg, iwg + nwg, ... with an online softmax done by subgroup 0; with one
split it writes the output, with nwg > 1 each split's unnormalised output, exp-sum and max into a
scratch buffer, which flash_attn_vec_reduce merges. verify instantiates each program exactly as
the shader library does for the config's adapter (verify.sources.llamacpp.selection:
vec_attention_plan: the KV tile, D_SPLIT, the split count, the workgroup sizes and grids),
binds and fills `params` as the host code does, and judges:

- the end-to-end output against references.ggml_attention.flash_attn_ext (ggml's op) within
  verify.budgets.llamacpp_attention.output_budget;
- flash_attn_vec_blk's tile states exactly against the classification its comments state;
- each split's state (o_i / s_i and m_i + ln s_i, evaluated by verify in float64 from the
  stored values; an empty split must hold o = 0, s = 0, m = -1e9 bit for bit) against the
  reference softmax over that split's keys, within output_budget and lse_budget;
- the reduce's output against references.softmax.merge_many_outputs of its input states within
  reduce_budget.

The programs call subgroup built-ins in control flow uniform within a subgroup only (the work
is subgroup 0's; the reduce loops from subgroup_id), which verify's emulation of other widths
cannot run: they are compared at the adapter's own width (the `native_width` check).
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.llamacpp_attention import lse_budget, output_budget, reduce_budget, score_errors
from verify.cases import Case
from verify.errors import FailureKind, UsageError
from verify.gpu import Output
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.profiles import get_profile
from verify.references.ggml_attention import alibi_slopes, flash_attn_ext
from verify.references.softmax import merge_many_outputs, softmax_state, state_to_output
from verify.results.record import KnownFinding
from verify.sources.llamacpp import programs, selection
from verify.sources.llamacpp.attention.cases import SIZES, attention_cases, make_case
from verify.sources.llamacpp.findings import REDUCE_READS_PAST_STATS, SPLIT_READS_PAST_MASK, SPLIT_READS_PAST_TILE
from verify.sources.llamacpp.launch import (
    SUBGROUP_MAX,
    SUBGROUP_MIN,
    Program,
    bind,
    check_width,
    header,
    modules_text,
    split_modules,
    upstream,
)

HEAD_DIM = ConfigKey("head_dim", 128, (32, 40, 64, 80, 96, 112, 128, 192, 256),
                     "head dim of Q, K and V (HEAD_DIM_QK = HEAD_DIM_V)")
HEADS = ConfigKey("heads", 8, (1, 2, 4, 6, 8, 12, 16, 32), "query heads (Q->ne[2])")
KV_HEADS = ConfigKey("kv_heads", 2, (1, 2, 4, 8, 16, 32), "KV heads (K->ne[2]): heads / kv_heads query heads share one")
KV_TYPE = ConfigKey("kv_type", "f16", ("f16", "f32"), "K and V storage type (K_<T>, V_<T>)")
MASK = ConfigKey("mask", True, (True, False), "an f16 mask (MASK, and flash_attn_vec_blk with BLK)")
SINKS = ConfigKey("sinks", False, (False, True), "attention sinks, one f32 logit per head (SINKS)")
SOFTCAP = ConfigKey("softcap", 0.0, (0.0, 30.0, 50.0), "logit softcap t: t·tanh(s / t) (LOGIT_SOFTCAP)")
MAX_BIAS = ConfigKey("max_bias", 0.0, (0.0, 8.0), "ALiBi's max_bias: the mask times each head's slope (needs a mask)")
KV_PADDED = ConfigKey("kv_padded", False, (False, True),
                      "KV length a multiple of 256, as llama.cpp pads its cache: K and V read directly "
                      "(K_DIRECT, V_DIRECT)")
STORAGE = ConfigKey("workgroup_storage", 16384, (16384, 32768),
                    "the adapter's maxComputeWorkgroupStorageSize, which sizes the KV tile")
NWG = ConfigKey("nwg", 4, (2, 4, 8, 16, 32, 64, 128), "splits merged per row (at most subgroup_min: C L2105)")
KV_TILE = ConfigKey("kv_tile", 32, (8, 13, 16, 29, 32), "KV rows a tile (KV_TILE: 29 and 13 are the split's for "
                    "head dims 128 and 256 with a mask in 16 KiB)")
#: WGSL's FLOAT_MIN of the programs: the max an empty split stores.
FLOAT_MIN = -1.0e9
#: flash_attn_vec_blk's threshold: a tile whose mask is at most this everywhere is skipped.
MASK_MIN = -65504.0
SPLIT_FILES = ("wgsl-shaders/flash_attn_vec_split.wgsl", "wgsl-shaders/flash_attn_decls.tmpl",
               "wgsl-shaders/flash_attn_staging.tmpl", "wgsl-shaders/common_decls.tmpl")
BLK_FILES = ("wgsl-shaders/flash_attn_vec_blk.wgsl",)
REDUCE_FILES = ("wgsl-shaders/flash_attn_vec_reduce.wgsl",)
MAX_INVOCATIONS = 256


def adapter_of(config: dict) -> selection.Adapter:
    """An adapter with subgroups, the config's subgroup range and workgroup storage, 256 invocations."""
    try:
        return selection.Adapter(min_subgroup=config["subgroup_min"], max_subgroup=config["subgroup_max"],
                                 max_workgroup_storage=config.get("workgroup_storage", 16384),
                                 max_invocations=MAX_INVOCATIONS)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def shape_of(config: dict, kv_len: int, rows: int = 1, batch: int = 1) -> selection.AttentionShape:
    return selection.AttentionShape(config["head_dim"], config["head_dim"], rows, config["heads"], config["kv_heads"],
                                    kv_len, config["kv_type"], config["kv_type"], config["mask"], config["sinks"],
                                    config["softcap"], batch=batch, mask_batched=True)


def config_kv_len(config: dict) -> int:
    """A KV length of the config's kind (padded to 256 or not): the split program depends on no other."""
    return selection.KV_SEQ_PAD if config["kv_padded"] else selection.KV_SEQ_PAD + 1


def plan_of(config: dict, kv_len: int, rows: int = 1, batch: int = 1) -> selection.VecAttentionPlan:
    try:
        return selection.vec_attention_plan(adapter_of(config), shape_of(config, kv_len, rows, batch))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def case_plan(config: dict, case: Case) -> selection.VecAttentionPlan:
    return plan_of(config, case.params["kv_len"], case.params["rows"], case.params["batch"])


def alibi_of(config: dict) -> tuple[float, float, float]:
    """(m0, m1, n_head_log2) as the host computes them in f32 (C L1986-1988)."""
    n_head_log2, m0, m1 = selection.alibi(config["max_bias"], config["heads"])
    return m0, m1, n_head_log2


def split_params(config: dict, case: Case, plan: selection.VecAttentionPlan) -> dict:
    """The split's `params` in the host's order (C L2021-2064, L2168-2176): every tensor at offset
    0, ggml's strides in elements (Q [D, rows, heads, batch], K and V [D, L, kv_heads, batch], the
    mask [L, rows, 1, batch]), the scale divided by the softcap where there is one."""
    batch, rows, length = case.params["batch"], case.params["rows"], case.params["kv_len"]
    d, heads, kv_heads = config["head_dim"], config["heads"], config["kv_heads"]
    scale = np.float32(1.0 / np.sqrt(np.float32(d)))
    if config["softcap"]:
        scale = np.float32(scale / np.float32(config["softcap"]))
    m0, m1, n_head_log2 = alibi_of(config)
    nrows = rows * heads * batch
    params = {"offset_q": 0, "offset_k": 0, "offset_v": 0, "offset_mask": 0, "offset_sinks": 0, "offset_dst": 0,
              "n_heads": heads, "seq_len_q": rows, "seq_len_kv": length, "stride_q1": d, "stride_q2": rows * d,
              "stride_q3": heads * rows * d, "stride_k1": d, "stride_k2": length * d,
              "stride_k3": kv_heads * length * d, "stride_v1": d, "stride_v2": length * d,
              "stride_v3": kv_heads * length * d,
              "stride_mask3": rows * length if config["mask"] else 0, "q_per_kv": heads // kv_heads,
              "scale": float(scale), "max_bias": float(config["max_bias"]), "logit_softcap": float(config["softcap"]),
              "n_head_log2": n_head_log2, "m0": m0, "m1": m1, "tmp_data_base": 0,
              "tmp_stats_base": nrows * d * plan.nwg if plan.nwg > 1 else 0, "nwg": plan.nwg}
    if config["mask"]:
        params.update(blk_base=0, blk_nblk0=selection.ceil_div(length, plan.kv_tile), blk_nblk1=rows)
    return params


def op_scale(config: dict) -> float:
    """The op's scale (1/sqrt(D) in f32, as llama.cpp passes it)."""
    return float(np.float32(1.0 / np.sqrt(np.float32(config["head_dim"]))))


def blk_states(mask: np.ndarray, kv_tile: int) -> np.ndarray:
    """flash_attn_vec_blk's contract [batch, rows, tiles] (u32): per KV tile of a query row's mask,
    0 where every value is at most -65504 (-inf included; a tile with no key is 0 too), 2 where
    every value is 0, else 1."""
    m = np.asarray(mask, np.float64)
    batch, rows, length = m.shape
    tiles = -(-length // kv_tile)
    padded = np.full((batch, rows, tiles * kv_tile), np.nan)
    padded[..., :length] = m
    blocks = padded.reshape(batch, rows, tiles, kv_tile)
    top = np.nanmax(blocks, axis=-1)
    low = np.nanmin(blocks, axis=-1)
    return np.where(top <= MASK_MIN, 0, np.where((low == 0) & (top == 0), 2, 1)).astype(np.uint32)


def reference(config: dict, case: Case):
    """(o [B, S, N, Dv], logits2 [B, S, N, L(+1)], values per head [B, 1, N, L(+1), Dv], delta
    [B, S, N, L(+1)]): the op's output, its base-2 logits (the sink last), the values each logit
    weighs (a zero row for the sink) and the logits' error bounds (natural units; 0 for the sink)."""
    q, k, v = case["q"], case["k"], case["v"]
    mask, sinks = case.arrays.get("mask"), case.arrays.get("sinks")
    alibi = alibi_of(config) if config["max_bias"] else None
    slopes = alibi_slopes(config["heads"], *alibi) if alibi else None
    o, logits2 = flash_attn_ext(q, k, v, mask, scale=op_scale(config), softcap=config["softcap"], slopes=slopes,
                                sinks=sinks)
    delta = score_errors(q, k, mask, scale=op_scale(config), softcap=config["softcap"], slopes=slopes, alibi=alibi)
    group = config["heads"] // config["kv_heads"]
    values = np.repeat(np.asarray(v, np.float64), group, axis=1)[:, None]
    if sinks is not None:
        pad = np.zeros(values.shape[:3] + (1, values.shape[-1]))
        values = np.concatenate([values, pad], axis=3)
        delta = np.concatenate([delta, np.zeros(delta.shape[:-1] + (1,))], axis=-1)
    return o, logits2, values, delta


class _VecAttention(Kernel):
    family = "llamacpp.attention"
    source = "llamacpp"
    #: native_width in place of reference: the work is subgroup 0's (verify.sources.llamacpp.checks).
    checks: tuple[str, ...] = ("native_width",)
    config_keys: tuple[ConfigKey, ...] = (HEAD_DIM, HEADS, KV_HEADS, KV_TYPE, MASK, SINKS, SOFTCAP, MAX_BIAS,
                                          KV_PADDED, STORAGE, SUBGROUP_MIN, SUBGROUP_MAX)
    #: Gate configs per scale: (D, heads, kv heads, KV type, mask, sinks, softcap, max_bias, padded,
    #: storage, subgroup range): a KV tile of 29 (head dim 128 with a mask in 16 KiB) with the widest
    #: subgroup range; subgroups of exactly 8 (lavapipe's: WG_SIZE 8, up to 8 splits) with sinks and
    #: a padded cache (direct K and V); f32 K/V with ALiBi and a softcap at head dim 256; no mask.
    gate_shapes: dict[str, tuple[dict[str, object], ...]] = {
        "quick": ({}, {"head_dim": 64, "heads": 4, "kv_heads": 4, "sinks": True, "kv_padded": True,
                       "subgroup_min": 8, "subgroup_max": 8}),
        "ci": ({}, {"head_dim": 64, "heads": 4, "kv_heads": 4, "sinks": True, "kv_padded": True,
                    "subgroup_min": 8, "subgroup_max": 8},
               {"head_dim": 256, "heads": 8, "kv_heads": 1, "kv_type": "f32", "max_bias": 8.0, "softcap": 50.0,
                "workgroup_storage": 32768, "subgroup_min": 4, "subgroup_max": 32},
               {"head_dim": 80, "heads": 6, "kv_heads": 2, "mask": False, "subgroup_min": 8, "subgroup_max": 8}),
    }
    gate_shapes["nightly"] = gate_shapes["ci"] + (
        {"head_dim": 112, "heads": 12, "kv_heads": 4, "kv_padded": True, "sinks": True, "softcap": 30.0,
         "subgroup_min": 4, "subgroup_max": 64},)

    def requirements(self, config):
        return frozenset({"subgroup", "shader-f16"})  # every program says `enable f16;`

    def validate(self, config):
        validate_attention(config)
        plan_of(config, config_kv_len(config))

    def gate_configs(self, profile):
        scale = get_profile(profile).scale
        return [self.config(c) for c in self.gate_shapes.get(scale, self.gate_shapes["ci"])]

    def kv_tile(self, config) -> int:
        return plan_of(config, config_kv_len(config)).kv_tile

    def cases(self, config, profile):
        return attention_cases(config, self.kv_tile(config), profile)

    def corners(self, config):
        """One key; a second split's first key (2·KV_TILE + 1: nwg 2) in two batches of 3 rows
        with tiles of every blk state; the longest context the quick sizes reach (the most
        splits); with a padded cache, 256 rows of which 200 are used."""
        tile = self.kv_tile(config)
        quick = SIZES("quick").max_kv
        if config["kv_padded"]:
            shapes = [(1, 1, 256, 200, "causal"), (2, 3, 512, 300, "blocks")]
        else:
            shapes = [(1, 1, 1, 1, "causal"), (2, 3, 2 * tile + 1, 2 * tile + 1, "blocks"),
                      (1, 2, quick - quick % tile + 1, quick - quick % tile + 1, "distance")]
        return [make_case(config, b, s, length, used, "normal", kind, 1.0, 7 + i, tile)
                for i, (b, s, length, used, kind) in enumerate(shapes)]

    def launch_paths(self, config, case):
        return (f"nwg {case_plan(config, case).nwg}",)

    def features(self, case):
        return {"kv_len": case.params["kv_len"], "rows": case.params["rows"], "batch": case.params["batch"]}

    def upstream(self, config, wgsl):
        plan = plan_of(config, config_kv_len(config))
        used = [Program(plan.split.variant, SPLIT_FILES)]
        return upstream(used)


def run_blk(device, wgsl: str, case: Case, kv_tile: int, grid: tuple[int, int]):
    """flash_attn_vec_blk as C L2142-2166 dispatches it: the mask, a blk buffer of nblk0 · nblk1 · batches."""
    mask = case["mask"]
    batch, rows, length = mask.shape
    tiles = selection.ceil_div(length, kv_tile)
    pipeline = device.pipeline(wgsl)
    params = {"offset_mask": 0, "seq_len_q": rows, "seq_len_kv": length, "stride_mask3": rows * length,
              "nblk0": tiles, "nblk1": rows}
    resources = bind(pipeline, {"mask": mask, "blk": Output(np.uint32, (batch, rows, tiles))}, params)
    return device.run(pipeline, resources, grid + (1,))


def q_buffer(case: Case) -> np.ndarray:
    """Q in ggml's layout [batch, heads, rows, D] (ne = [D, rows, heads, batch])."""
    return np.ascontiguousarray(np.asarray(case["q"], np.float32).transpose(0, 2, 1, 3))


def run_split(device, wgsl: str, config: dict, case: Case, plan: selection.VecAttentionPlan, blk):
    """flash_attn_vec_split as C L2168-2260 binds and dispatches it (scratch `tmp` of rows · nwg
    · (D + 2) floats, or 4 bytes with one split)."""
    batch, rows = case.params["batch"], case.params["rows"]
    heads, d = config["heads"], config["head_dim"]
    nrows = batch * rows * heads
    tmp = nrows * plan.nwg * (d + 2) if plan.nwg > 1 else 1
    arrays = {"Q": q_buffer(case), "K": case["k"], "V": case["v"], "tmp": Output(np.float32, (tmp,)),
              "dst": Output(np.float32, (batch, rows, heads, d))}
    if config["mask"]:
        arrays["mask"], arrays["blk"] = case["mask"], np.ascontiguousarray(blk, np.uint32)
    if config["sinks"]:
        arrays["sinks"] = case["sinks"]
    pipeline = device.pipeline(wgsl)
    resources = bind(pipeline, arrays, split_params(config, case, plan))
    return device.run(pipeline, resources, plan.split_grid + (1,))


def run_reduce(device, wgsl: str, tmp: np.ndarray, shape: tuple[int, int, int, int], nwg: int):
    """flash_attn_vec_reduce as C L2219-2244 binds and dispatches it: one workgroup per row.
    `shape` = (batch, rows, heads, Dv) of the output."""
    batch, rows, heads, d = shape
    nrows = batch * rows * heads
    pipeline = device.pipeline(wgsl)
    params = {"nrows": nrows, "seq_len_q": rows, "n_heads": heads, "offset_dst": 0, "nwg": nwg, "tmp_data_base": 0,
              "tmp_stats_base": nrows * d * nwg}
    resources = bind(pipeline, {"tmp": np.ascontiguousarray(tmp, np.float32), "dst": Output(np.float32, shape)},
                     params)
    return device.run(pipeline, resources, (nrows, 1, 1))


def reduce_instances(config: dict) -> list[selection.Instance]:
    """The reduce programs a config may need: one per split count 2..subgroup_min with its own
    WG_SIZE (they coincide where nwg · max subgroup passes 256 invocations)."""
    adapter = adapter_of(config)
    found: dict[str, selection.Instance] = {}
    nwg = 2
    while nwg <= adapter.min_subgroup:
        instance = selection.flash_attn_vec_reduce_instance(adapter, config["head_dim"], nwg)
        found.setdefault(instance.variant, instance)
        nwg *= 2
    return list(found.values())


def validate_attention(config: dict) -> None:
    """What FLASH_ATTN_EXT's configs must hold on either path (vec, tile): UsageError otherwise."""
    if config["subgroup_min"] > config["subgroup_max"]:
        raise UsageError(f"subgroup_min={config['subgroup_min']} is above subgroup_max={config['subgroup_max']}")
    if config["heads"] % config["kv_heads"]:
        raise UsageError(f"heads={config['heads']} is not a multiple of kv_heads={config['kv_heads']}")
    if config["max_bias"] and not config["mask"]:
        raise UsageError("max_bias (ALiBi) scales the mask: it needs mask=true")


class FlashAttnVec(_VecAttention):
    """FLASH_ATTN_EXT on the vec path, end to end: blk, split and reduce as ggml-webgpu dispatches them."""

    name = "llamacpp.attention.flash_attn_vec"
    summary = ("llama.cpp ggml-webgpu's split-KV decode attention end to end (flash_attn_vec_blk, _split, _reduce as "
               "FLASH_ATTN_EXT's vec path dispatches them): GQA, f16/f32 K and V, mask, ALiBi, softcap, sinks")
    reference = "verify.references.ggml_attention.flash_attn_ext"
    checks = ("native_width",)
    leaves_out = {"sanitize": "three programs in one launch; each is sanitized on its own as "
                              "llamacpp.attention.flash_attn_vec_blk, _split and _reduce"}
    output_axes = {"out": ("batch", "row", "head", "channel")}
    budget_function = staticmethod(output_budget)

    def budget_doc(self) -> str:
        import inspect

        return "\n\n".join(inspect.getdoc(f) or "" for f in (score_errors, output_budget))

    def instances(self, config) -> list[selection.Instance]:
        plan = plan_of(config, config_kv_len(config))
        return ([plan.blk] if plan.blk else []) + [plan.split] + reduce_instances(config)

    def wgsl(self, config):
        return modules_text(self.name, config, self.instances(config))

    def modules(self, wgsl):
        return list(split_modules(wgsl).values())

    def upstream(self, config, wgsl):
        files = {"flash_attn_vec_blk": BLK_FILES, "flash_attn_vec_split": SPLIT_FILES,
                 "flash_attn_vec_reduce": REDUCE_FILES}
        return upstream([Program(i.variant, files[i.template]) for i in self.instances(config)])

    def launch(self, device, wgsl, config, case):
        check_width(device, config)
        plan = case_plan(config, case)
        modules = split_modules(wgsl)

        def module(instance):
            if instance.variant not in modules:
                raise UsageError(f"the WGSL has no module {instance.variant} (// ---- module: NAME ----)")
            return modules[instance.variant]

        blk, guards = None, {}
        if plan.blk is not None:
            run = run_blk(device, module(plan.blk), case, plan.kv_tile, plan.blk_grid)
            blk, guards["blk"] = run.outputs["blk"], run.guard_intact["blk"]
        run = run_split(device, module(plan.split), config, case, plan, blk)
        out, guards["split"] = run.outputs["dst"], run.guard_intact["dst"] and run.guard_intact["tmp"]
        if plan.nwg > 1:
            reduced = run_reduce(device, module(plan.reduce), run.outputs["tmp"], out.shape, plan.nwg)
            out, guards["reduce"] = reduced.outputs["dst"], reduced.guard_intact["dst"]
        return Launched({"out": out}, {"out": all(guards.values())}, run.timing)

    def expected(self, config, case):
        o, logits2, values, delta = reference(config, case)
        return [Expected.around("out", o, output_budget(values, logits2, delta), "f32")]


class FlashAttnVecBlk(Kernel):
    """flash_attn_vec_blk: each KV tile of each query row's mask classified (0 skip, 1 general, 2 zero)."""

    name = "llamacpp.attention.flash_attn_vec_blk"
    family = "llamacpp.attention"
    source = "llamacpp"
    summary = ("llama.cpp ggml-webgpu's flash_attn_vec_blk: each KV tile of a query row's f16 mask classified as "
               "skipped (all -inf), zero, or general, for flash_attn_vec_split")
    reference = "verify.sources.llamacpp.attention.kernels.blk_states"
    checks = ("reference",)
    config_keys = (KV_TILE,)
    output_axes = {"blk": ("batch", "row", "tile")}

    def instance(self, config) -> selection.Instance:
        wg = 1
        while wg * 2 <= MAX_INVOCATIONS:
            wg *= 2
        return selection.Instance("flash_attn_vec_blk", (f"KV_TILE={config['kv_tile']}", f"WG_SIZE={wg}"),
                                  f"flash_attn_vec_blk_kvt{config['kv_tile']}_wg{wg}")

    def requirements(self, config):
        return frozenset({"shader-f16"})

    def gate_configs(self, profile):
        return [self.config({"kv_tile": 29}), self.config({"kv_tile": 32})]

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, BLK_FILES)])

    def cases(self, config, profile):
        blk_config = {"head_dim": 64, "heads": 1, "kv_heads": 1, "kv_type": "f16", "mask": True, "sinks": False,
                      "kv_padded": False}
        return attention_cases(blk_config, config["kv_tile"], profile)

    def launch(self, device, wgsl, config, case):
        batch, rows, length = case["mask"].shape
        grid = (selection.ceil_div(length, config["kv_tile"]), rows * batch)  # C L2142-2166, a mask per batch
        run = run_blk(device, wgsl, case, config["kv_tile"], grid)
        return Launched({"blk": run.outputs["blk"].astype(np.float64)}, {"blk": run.guard_intact["blk"]}, run.timing)

    def expected(self, config, case):
        states = blk_states(case["mask"], config["kv_tile"]).astype(np.float64)
        return [Expected("blk", states, states, np.zeros(states.shape), "u32", np.ones(states.shape, bool))]

    def features(self, case):
        return {"kv_len": case.params["kv_len"], "rows": case.params["rows"]}


def split_reference(config: dict, case: Case, plan: selection.VecAttentionPlan):
    """Each split's state as the reference gives it: (o [B, S, N, nwg, Dv] normalised, lse [B, S,
    N, nwg] natural, nonempty [B, S, N, nwg], and per split its logits2 and delta with the other
    splits' keys hidden). Split i holds KV tiles i, i + nwg, ...; the sink is split 0's."""
    _, logits2, values, delta = reference(config, case)
    length, nwg, tile = case.params["kv_len"], plan.nwg, plan.kv_tile
    key_split = (np.arange(logits2.shape[-1]) // tile) % nwg
    if config["sinks"]:
        key_split[length:] = 0
    states, budgets = [], []
    for i in range(nwg):
        mine = np.where(key_split == i, logits2, -np.inf)
        m, d, o = softmax_state(mine, values, base=2)
        o_i, lse2 = state_to_output(m, d, o, base=2)
        states.append((o_i, lse2 * np.log(2.0), np.isfinite(m)))
        budgets.append((output_budget(values, mine, delta, evaluated="float64" if nwg > 1 else "kernel"),
                        lse_budget(mine, delta)))
    o = np.stack([s[0] for s in states], axis=3)
    lse = np.stack([s[1] for s in states], axis=3)
    nonempty = np.stack([s[2] for s in states], axis=3)
    return o, lse, nonempty, np.stack([b[0] for b in budgets], axis=3), np.stack([b[1] for b in budgets], axis=3)


class FlashAttnVecSplit(_VecAttention):
    """flash_attn_vec_split alone: each split's softmax state over its KV tiles (its blk input
    from the classification flash_attn_vec_blk's contract states)."""

    name = "llamacpp.attention.flash_attn_vec_split"
    summary = ("llama.cpp ggml-webgpu's flash_attn_vec_split: per query row and split, an online softmax over the "
               "split's KV tiles (its output, or its unnormalised output, exp-sum and max for the reduce)")
    reference = ("verify.references.softmax.softmax_state over each split's keys of "
                 "verify.references.ggml_attention.flash_attn_ext's logits")
    output_axes = {"o": ("batch", "row", "head", "split", "channel"), "lse": ("batch", "row", "head", "split")}
    budget_function = staticmethod(lse_budget)

    def budget_doc(self) -> str:
        import inspect

        return "\n\n".join(inspect.getdoc(f) or "" for f in (score_errors, output_budget, lse_budget))

    def wgsl(self, config):
        return header(self.name, config) + programs.load(plan_of(config, config_kv_len(config)).split)

    def known_finding(self, check, config):
        """§19.4 under `sanitize`: the softmax's select() reads inter_shmem and mask_shmem past
        KV_TILE where the subgroup size does not divide the tile (a 29-row tile at any width);
        §19.8: the mask tile's select() reads the mask past its binding for columns past
        seq_len_kv in the last row."""
        if check != "sanitize":
            return None
        return [*(KnownFinding(SPLIT_READS_PAST_TILE, kinds=(FailureKind.SANITIZER,),
                               reasons=(f"out-of-bounds read of workgroup array {array}:",), on_this_adapter=False,
                               finding_id="llamacpp-vec-split-reads-past-tile")
                  for array in ("inter_shmem", "mask_shmem")),
                KnownFinding(SPLIT_READS_PAST_MASK, kinds=(FailureKind.SANITIZER,),
                             reasons=("out-of-bounds read of storage buffer mask:",), on_this_adapter=False,
                             finding_id="llamacpp-vec-split-reads-past-mask")]

    def launch(self, device, wgsl, config, case):
        check_width(device, config)
        plan = case_plan(config, case)
        blk = blk_states(case["mask"], plan.kv_tile) if config["mask"] else None
        run = run_split(device, wgsl, config, case, plan, blk)
        batch, rows = case.params["batch"], case.params["rows"]
        heads, d, nwg = config["heads"], config["head_dim"], plan.nwg
        guard = run.guard_intact["dst"] and run.guard_intact["tmp"]
        if nwg == 1:
            return Launched({"o": run.outputs["dst"][:, :, :, None, :]}, {"o": guard}, run.timing)
        nrows = batch * rows * heads
        tmp = run.outputs["tmp"].astype(np.float64)
        o = tmp[:nrows * nwg * d].reshape(batch, heads, rows, nwg, d).transpose(0, 2, 1, 3, 4)
        stats = tmp[nrows * nwg * d:].reshape(batch, heads, rows, nwg, 2).transpose(0, 2, 1, 3, 4)
        s, m = stats[..., 0], stats[..., 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            normalised = np.where(s[..., None] > 0, o / np.where(s > 0, s, 1.0)[..., None], o)
            lse = np.where(s > 0, m + np.log(np.where(s > 0, s, 1.0)), m)
        return Launched({"o": normalised, "lse": lse}, {"o": guard, "lse": guard}, run.timing)

    def expected(self, config, case):
        """Each split's (o_i / s_i, m_i + ln s_i) within output_budget (evaluated in float64) and
        lse_budget; an empty split must be o = 0 and m = -1e9 bit for bit (its s is 0). With one
        split the program writes the normalised output itself (output_budget, the kernel's 1/Σ)."""
        plan = case_plan(config, case)
        o, lse, nonempty, o_budget, l_budget = split_reference(config, case, plan)
        empty = ~nonempty
        o_exact = np.broadcast_to(empty[..., None], o.shape)
        expected = [Expected.around("o", np.where(o_exact, 0.0, o), np.where(o_exact, 0.0, o_budget), "f32",
                                    exact=o_exact)]
        if plan.nwg > 1:
            expected.append(Expected.around("lse", np.where(empty, FLOAT_MIN, lse), np.where(empty, 0.0, l_budget),
                                            "f32", exact=empty))
        return expected


def reduce_states(rng: np.random.Generator, shape: tuple[int, ...], d: int, spread: float, empty_share: float):
    """Split states [..., nwg] as the split program stores them: m ~ N(0, (4 spread)²), s in [1,
    64], o = s · N(0, 1) (unnormalised); a share of splits empty (m = -1e9, s = 0, o = 0)."""
    m = (rng.standard_normal(shape) * 4 * spread).astype(np.float32)
    s = rng.uniform(1.0, 64.0, shape).astype(np.float32)
    o = (rng.standard_normal(shape + (d,)) * s[..., None]).astype(np.float32)
    empty = rng.random(shape) < empty_share
    m[empty], s[empty], o[empty] = FLOAT_MIN, 0.0, 0.0
    return o, s, m


class FlashAttnVecReduce(Kernel):
    """flash_attn_vec_reduce: nwg split states per row merged into the output."""

    name = "llamacpp.attention.flash_attn_vec_reduce"
    family = "llamacpp.attention"
    source = "llamacpp"
    summary = ("llama.cpp ggml-webgpu's flash_attn_vec_reduce: each row's split states (unnormalised output, exp-sum, "
               "max) merged into the attention output")
    reference = "verify.references.softmax.merge_many_outputs (base e)"
    checks = ("native_width",)
    config_keys = (HEAD_DIM, NWG, SUBGROUP_MIN, SUBGROUP_MAX)
    output_axes = {"out": ("batch", "row", "head", "channel")}
    budget_function = staticmethod(reduce_budget)

    def validate(self, config):
        if config["subgroup_min"] > config["subgroup_max"]:
            raise UsageError(f"subgroup_min={config['subgroup_min']} is above subgroup_max={config['subgroup_max']}")
        if config["nwg"] > config["subgroup_min"]:
            raise UsageError(f"nwg={config['nwg']}: ggml-webgpu caps the split count at subgroup_min="
                             f"{config['subgroup_min']} (C L2105)")

    def requirements(self, config):
        return frozenset({"subgroup", "shader-f16"})

    def instance(self, config) -> selection.Instance:
        return selection.flash_attn_vec_reduce_instance(adapter_of(config), config["head_dim"], config["nwg"])

    def gate_configs(self, profile):
        return [self.config(c) for c in ({"head_dim": 128, "nwg": 4}, {"head_dim": 64, "nwg": 8, "subgroup_min": 8,
                                                                        "subgroup_max": 8},
                                         {"head_dim": 256, "nwg": 2, "subgroup_min": 8, "subgroup_max": 32})]

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, REDUCE_FILES)])

    def known_finding(self, check, config):
        """§19.5 under `sanitize`: lanes past nwg read split statistics through select(), past the
        scratch buffer for the last row (where nwg is below the subgroup size)."""
        if check != "sanitize":
            return None
        return KnownFinding(REDUCE_READS_PAST_STATS, kinds=(FailureKind.SANITIZER,),
                            reasons=("out-of-bounds read of storage buffer tmp:",), on_this_adapter=False,
                            finding_id="llamacpp-vec-reduce-reads-past-stats")

    def cases(self, config, profile):
        from hypothesis import strategies as st

        @st.composite
        def draw_case(draw):
            batch, rows, heads = draw(st.integers(1, 2)), draw(st.integers(1, 4)), draw(st.integers(1, 8))
            spread = draw(st.sampled_from((0.25, 1.0, 4.0, 16.0)))
            empty_share = draw(st.sampled_from((0.0, 0.3, 1.0)))
            seed = draw(st.integers(0, 2**32 - 1))
            return self.make_case(config, batch, rows, heads, spread, empty_share, seed)

        return draw_case()

    def make_case(self, config, batch, rows, heads, spread, empty_share, seed) -> Case:
        rng = np.random.default_rng(seed)
        o, s, m = reduce_states(rng, (batch, rows, heads, config["nwg"]), config["head_dim"], spread, empty_share)
        return Case({"o": o, "s": s, "m": m}, {"batch": batch, "rows": rows, "heads": heads, "spread": spread,
                                               "empty_share": empty_share, "seed": seed})

    def corners(self, config):
        """Every split empty in some rows and none in others; one row, one head."""
        return [self.make_case(config, 1, 1, 1, 1.0, 0.0, 3), self.make_case(config, 2, 3, 4, 4.0, 0.3, 5)]

    def launch(self, device, wgsl, config, case):
        check_width(device, config)
        o, s, m = case["o"], case["s"], case["m"]
        batch, rows, heads, nwg, d = o.shape
        data = o.transpose(0, 2, 1, 3, 4).reshape(-1)  # rid = batch, head, row; then split, channel
        stats = np.stack([s, m], axis=-1).transpose(0, 2, 1, 3, 4).reshape(-1)
        run = run_reduce(device, wgsl, np.concatenate([data, stats]), (batch, rows, heads, d), nwg)
        return Launched({"out": run.outputs["dst"]}, {"out": run.guard_intact["dst"]}, run.timing)

    def expected(self, config, case):
        """merge_many_outputs of the states (o_i / s_i, lse_i = m_i + ln s_i; an empty split, s = 0,
        has lse -inf) within reduce_budget; a row of empty splits only must be 0 exactly."""
        o, s, m = (case[name].astype(np.float64) for name in ("o", "s", "m"))
        nonempty = s > 0
        with np.errstate(divide="ignore"):
            lse = np.where(nonempty, m + np.log(np.where(nonempty, s, 1.0)), -np.inf)
        normalised = o / np.where(nonempty, s, 1.0)[..., None]
        merged, _ = merge_many_outputs(normalised, lse, axis=3, base="e")
        budget = reduce_budget(o, s, m)
        exact = np.broadcast_to(~nonempty.any(-1)[..., None], merged.shape)
        return [Expected.around("out", merged, budget, "f32", exact=exact)]

    def features(self, case):
        return {"rows": case.params["batch"] * case.params["rows"] * case.params["heads"]}
