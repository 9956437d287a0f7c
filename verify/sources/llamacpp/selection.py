"""ggml-webgpu's selection rules, ported: which program, defines, workgroup sizes and dispatch a shape gets.

ggml-webgpu decides per tensor shape and adapter which template to instantiate, with which
defines, at which workgroup size, and how to dispatch it. verify cannot run that C++ (it needs
Dawn), so each rule it relies on is ported here as a plain function of typed values, with the
file and line of the pinned release (verify.sources.llamacpp.source.VERSION) it follows in its
docstring; tests/sources/llamacpp/test_selection.py holds each rule to the C++ it cites (the
line must still say what the rule does) and to worked examples.

`Adapter` is what ggml-webgpu reads of the adapter (ggml-webgpu.cpp L4133-4177: its limits, the
`subgroups` feature, the packed_4x8_integer_dot_product language feature, the subgroup size
range and the vendor string). Files: S = ggml-webgpu-shader-lib.hpp, C = ggml-webgpu.cpp.
"""

from __future__ import annotations

from dataclasses import dataclass

#: S L20-24: the vec path's limits and the KV cache padding llama.cpp applies.
FLASH_ATTN_VEC_MAX_SEQ_LEN = 20
FLASH_ATTN_VEC_MAX_KV_TILE = 32
KV_SEQ_PAD = 256
#: S L677: float K/V are read as vec4 (the head dim must be a multiple of 4 on the vec path).
TILE_KV_VEC_WIDTH = 4
#: S L50-56: the mat-vec workgroup and rows per workgroup (every weight type: 4).
MUL_MAT_VEC_WG_SIZE = 256
MUL_MAT_VEC_OUTPUTS_PER_WG = 4
#: S L17-18, f32 and f16 bytes in the workgroup-memory estimate.
F32_BYTES = 4

#: ggml's block types the rules distinguish: (block size in values, bytes per block).
BLOCKS = {"f32": (1, 4), "f16": (1, 2), "q4_0": (32, 18), "q4_1": (32, 20), "q8_0": (32, 34), "q8_1": (32, 36),
          "q2_K": (256, 84), "q4_K": (256, 144)}
QUANTIZED = frozenset(name for name in BLOCKS if name not in ("f32", "f16"))


@dataclass(frozen=True)
class Adapter:
    """What ggml-webgpu reads of the adapter (C L4133-4177) and uses in the rules below.

    `vendor` is WGPUAdapterInfo.vendor as Dawn reports it ("nvidia", "amd", "intel", "apple",
    ...). `min_subgroup` and `max_subgroup` are subgroupMinSize and subgroupMaxSize: the
    subgroup size of a dispatch may be any power of two between them (the comment at C L4173).
    """

    vendor: str = "nvidia"
    subgroups: bool = True
    dot_product: bool = True
    min_subgroup: int = 32
    max_subgroup: int = 32
    max_workgroup_storage: int = 16384
    max_invocations: int = 256
    max_workgroups_per_dimension: int = 65535

    def __post_init__(self):
        widths = (4, 8, 16, 32, 64, 128)
        if self.min_subgroup not in widths or self.max_subgroup not in widths or self.min_subgroup > self.max_subgroup:
            raise ValueError(f"subgroup sizes {self.min_subgroup}..{self.max_subgroup}: WebGPU's are powers of two "
                             "from 4 to 128, min <= max")


def ceil_div(a: int, b: int) -> int:
    """C L36 CEIL_DIV."""
    return (a + b - 1) // b


def compute_2d_workgroups(total: int, max_per_dim: int) -> tuple[int, int]:
    """C L40-43 compute_2d_workgroups: y = max(1, ceil(total / max)), x = ceil(total / y)."""
    y = max(1, ceil_div(total, max_per_dim))
    return ceil_div(total, y), y


def type_name(ggml_type: str) -> str:
    """ggml_type_name as the variant names spell it."""
    return ggml_type


# -- flash attention, vec path (split-KV decode) -------------------------------------------------------
@dataclass(frozen=True)
class AttentionShape:
    """A GGML_OP_FLASH_ATTN_EXT node as the rules read it: Q [head_dim, q_len, heads, batch] f32,
    K and V [head_dim, kv_len, kv_heads, batch] of `k_type`/`v_type`, an optional f16 mask,
    optional f32 sinks, a logit softcap (0: none), and whether K and V share one binding.
    `mask_batched`: the mask has a batch stride (mask->nb[3] > 0, one mask per batch, as
    llama.cpp's KQ mask has one per stream), so flash_attn_vec_blk classifies every batch's."""

    head_dim_qk: int
    head_dim_v: int
    q_len: int
    heads: int
    kv_heads: int
    kv_len: int
    k_type: str = "f16"
    v_type: str = "f16"
    mask: bool = True
    sinks: bool = False
    softcap: float = 0.0
    kv_overlap: bool = False
    batch: int = 1
    mask_batched: bool = False


def flash_attn_use_vec_path(adapter: Adapter, shape: AttentionShape) -> bool:
    """C L1952-1971 ggml_webgpu_flash_attn_use_vec_path: subgroups, fewer than 20 query rows, head
    dims aligned to the K/V block (quantized) or to 4 (float), and K/V offsets vec4-aligned
    (verify binds every tensor at offset 0, so they always are)."""
    k_align = BLOCKS[shape.k_type][0] if shape.k_type in QUANTIZED else TILE_KV_VEC_WIDTH
    v_align = BLOCKS[shape.v_type][0] if shape.v_type in QUANTIZED else TILE_KV_VEC_WIDTH
    aligned = shape.head_dim_qk % k_align == 0 and shape.head_dim_v % v_align == 0
    return adapter.subgroups and shape.q_len < FLASH_ATTN_VEC_MAX_SEQ_LEN and aligned


def flash_attn_k_direct(shape: AttentionShape, align: int = TILE_KV_VEC_WIDTH) -> bool:
    """S L700-703 ggml_webgpu_flash_attn_k_direct: K read straight from global memory when it is
    f16, q8_0 or q4_0, the head dim is a multiple of `align` and the KV length of 256 (llama.cpp
    pads its cache to 256, S L24)."""
    return (shape.k_type in ("f16", "q8_0", "q4_0") and shape.head_dim_qk % align == 0
            and shape.kv_len % KV_SEQ_PAD == 0)


def flash_attn_v_direct(shape: AttentionShape, align: int = TILE_KV_VEC_WIDTH) -> bool:
    """S L705-707 ggml_webgpu_flash_attn_v_direct: the K rule applied to Q and V (V's type, Q's head
    dim, V's length)."""
    return (shape.v_type in ("f16", "q8_0", "q4_0") and shape.head_dim_qk % align == 0
            and shape.kv_len % KV_SEQ_PAD == 0)


def flash_attn_wg_mem_bytes(q_tile: int, kv_tile: int, head_dim_qk: int, head_dim_v: int, has_mask: bool,
                            kv_direct: bool) -> int:
    """S L882-904 ggml_webgpu_flash_attn_wg_mem_bytes: f32 words of q, kv (unless direct), o,
    mask, the scores and two row statistics."""
    words = q_tile * head_dim_qk
    if not kv_direct:
        words += kv_tile * max(head_dim_qk, head_dim_v)
    words += q_tile * head_dim_v
    if has_mask:
        words += q_tile * kv_tile
    words += q_tile * kv_tile + 2 * q_tile
    return words * F32_BYTES


def flash_attn_max_kv_tile(limit_bytes: int, q_tile: int, kv_granularity: int, head_dim_qk: int, head_dim_v: int,
                           has_mask: bool, kv_direct: bool) -> int:
    """S L906-926 ggml_webgpu_flash_attn_max_kv_tile: the KV rows that fit the workgroup storage
    limit, rounded down to `kv_granularity`."""
    base = flash_attn_wg_mem_bytes(q_tile, 0, head_dim_qk, head_dim_v, has_mask, kv_direct)
    if limit_bytes <= base:
        return 0
    per_kv = flash_attn_wg_mem_bytes(q_tile, 1, head_dim_qk, head_dim_v, has_mask, kv_direct) - base
    if per_kv == 0:
        return 0
    return ((limit_bytes - base) // per_kv // kv_granularity) * kv_granularity


def flash_attn_vec_kv_tile(adapter: Adapter, shape: AttentionShape) -> int:
    """S L928-946 ggml_webgpu_flash_attn_get_vec_kv_tile: at most 32 KV rows a tile, as many as fit
    (so 29 for head dim 128 with a mask in 16 KiB); on the direct path a divisor of 256."""
    kv_direct = flash_attn_k_direct(shape) or flash_attn_v_direct(shape)
    largest = flash_attn_max_kv_tile(adapter.max_workgroup_storage, 1, 1, shape.head_dim_qk, shape.head_dim_v,
                                     shape.mask, kv_direct)
    if largest <= 0:
        raise ValueError("ggml-webgpu asserts max_kv_tile > 0 (S L935): the head dims do not fit the workgroup storage")
    kv_tile = min(FLASH_ATTN_VEC_MAX_KV_TILE, largest)
    if kv_direct:
        kv_tile = min(kv_tile, KV_SEQ_PAD)
        while KV_SEQ_PAD % kv_tile != 0:
            kv_tile -= 1
    return kv_tile


def flash_attn_d_split(adapter: Adapter, shape: AttentionShape) -> int:
    """S L2934-2938: D_SPLIT = min(min subgroup, 4, max(lowest set bit of (D_qk | D_v) / 4, 1)),
    the lanes that share one K row's dot product."""
    d = shape.head_dim_qk | shape.head_dim_v
    lowest = d & -d
    return min(min(adapter.min_subgroup, 4), max(lowest // 4, 1))


def flash_attn_vec_nwg(adapter: Adapter, kv_tile: int, kv_len: int) -> int:
    """C L2071-2078 ggml_webgpu_flash_attn_vec_nwg, capped by the minimum subgroup size (C L2105):
    the split count doubles while twice the split's tiles still fall short of the KV length."""
    cap = adapter.min_subgroup
    nwg = 1
    while 2 * nwg * kv_tile < kv_len and nwg < cap:
        nwg <<= 1
    return min(nwg, cap)


def flash_attn_common_defines(shape: AttentionShape, q_tile: int, kv_tile: int, wg_size: int, *,
                              direct: tuple[bool, bool] | None = None) -> tuple[list[str], str]:
    """S L729-843 ggml_webgpu_flash_attn_common_defines: (defines, variant suffix) of the types,
    mask, sinks, softcap, direct loads, K/V overlap, head dims, tiles and workgroup size.
    `direct`: the key's (k_direct, v_direct) where the getter overrides them (the tile path clears
    both, S L2841-2842); by default the vec path's flash_attn_k_direct / flash_attn_v_direct."""
    defines, variant = [], ""
    names = {"f32": "F32", "f16": "F16", "q4_0": "Q4_0", "q8_0": "Q8_0"}
    for role, kind in (("K", shape.k_type), ("V", shape.v_type)):
        if kind not in names:
            raise ValueError(f"ggml-webgpu aborts: unsupported {role} type {kind} for flash attention (S L752, L770)")
        defines.append(f"{role}_{names[kind]}")
        variant += f"_{role.lower()}{kind}"
    defines.append("Q_F32")
    variant += "_qf32"
    defines.append("DST_F32")
    variant += "_dstf32"
    k_direct, v_direct = direct if direct is not None else (flash_attn_k_direct(shape), flash_attn_v_direct(shape))
    for flag, define, suffix in ((shape.mask, "MASK", "_mask"), (shape.sinks, "SINKS", "_sinks"),
                                 (shape.softcap != 0.0, "LOGIT_SOFTCAP", "_lgsc"), (k_direct, "K_DIRECT", "_k_direct"),
                                 (v_direct, "V_DIRECT", "_v_direct"), (shape.kv_overlap, "KV_OVERLAP", "_kv_overlap")):
        if flag:
            defines.append(define)
            variant += suffix
    defines += [f"HEAD_DIM_QK={shape.head_dim_qk}", f"HEAD_DIM_V={shape.head_dim_v}", f"Q_TILE={q_tile}",
                f"KV_TILE={kv_tile}", f"WG_SIZE={wg_size}"]
    variant += f"_hsqk{shape.head_dim_qk}_hsv{shape.head_dim_v}"
    if shape.k_type in QUANTIZED or shape.v_type in QUANTIZED:
        defines.append("U32_DEQUANT_HELPERS")
        if shape.k_type in QUANTIZED:
            defines.append("LOADERS_QUANTIZED_K")
        if shape.v_type in QUANTIZED:
            defines.append("LOADERS_QUANTIZED_V")
    return defines, variant


@dataclass(frozen=True)
class Instance:
    """One program as ggml-webgpu instantiates it: the embedded template (`wgsl_<template>`), the
    defines in the order the shader library pushes them, and its pipeline's variant name."""

    template: str
    defines: tuple[str, ...]
    variant: str


@dataclass(frozen=True)
class VecAttentionPlan:
    """Everything ggml_webgpu_flash_attn_vec (C L2089-2272) decides for one shape: the split,
    blk (with a mask) and reduce (with nwg > 1) programs, the KV tile, the split count, the
    workgroup sizes and each dispatch's grid."""

    split: Instance
    blk: Instance | None
    reduce: Instance | None
    kv_tile: int
    nwg: int
    split_wg_size: int
    reduce_wg_size: int
    blk_grid: tuple[int, int] | None
    split_grid: tuple[int, int]
    reduce_grid: tuple[int, int] | None

    @property
    def rows(self) -> int:
        """Query rows (q_len x heads x batch): one split workgroup each per split."""
        return self.split_grid[0] // self.nwg


def vec_attention_plan(adapter: Adapter, shape: AttentionShape) -> VecAttentionPlan:
    """The vec path's programs and dispatches for `shape` on `adapter`:

    - split (S L2910-2949): KV tile by flash_attn_vec_kv_tile, WG_SIZE = the adapter's maximum
      subgroup size (S L2924), Q_TILE 1, BLK with a mask (S L2929-2933), D_SPLIT (S L2934-2938);
      one workgroup per query row and split, ne1·ne2·ne3·nwg (C L2247-2260).
    - blk (S L2951-2976; C L2142-2166, only with a mask): KV_TILE as the split's, WG_SIZE the
      largest power of two within maxComputeInvocationsPerWorkgroup; a grid of
      ceil(kv_len / kv_tile) x q_len·(batch where the mask has a batch stride, else 1).
    - reduce (S L2978-3013; C L2219-2244, only with nwg > 1): WG_SIZE = max(max subgroup,
      min(nwg · max subgroup, maxComputeInvocationsPerWorkgroup)); one workgroup per row.
    """
    if not flash_attn_use_vec_path(adapter, shape):
        raise ValueError("ggml-webgpu takes the tiled path for this shape (C L1952-1971), not the vec path")
    kv_tile = flash_attn_vec_kv_tile(adapter, shape)
    wg_size = adapter.max_subgroup
    defines, suffix = flash_attn_common_defines(shape, 1, kv_tile, wg_size)
    variant = "flash_attn_vec" + suffix
    if shape.mask:
        defines.append("BLK")
        # S L2931-2932 cuts len("_mask") characters off the end of the name, which by then ends in
        # "_hsv<D>", not "_mask": the label comes out as "..._h_mask_blk". It only names the pipeline.
        variant = variant[:-len("_mask")] + "_mask_blk"
    d_split = flash_attn_d_split(adapter, shape)
    defines.append(f"D_SPLIT={d_split}")
    variant += f"_dsplit{d_split}"
    split = Instance("flash_attn_vec_split", tuple(defines), variant)

    nwg = flash_attn_vec_nwg(adapter, kv_tile, shape.kv_len)
    rows = shape.q_len * shape.heads * shape.batch
    blk = blk_grid = None
    if shape.mask:
        blk_wg = 1
        while (blk_wg << 1) <= adapter.max_invocations:
            blk_wg <<= 1
        blk = Instance("flash_attn_vec_blk", (f"KV_TILE={kv_tile}", f"WG_SIZE={blk_wg}"),
                       f"flash_attn_vec_blk_kvt{kv_tile}_wg{blk_wg}")
        blk_grid = (ceil_div(shape.kv_len, kv_tile), shape.q_len * (shape.batch if shape.mask_batched else 1))
    reduce = reduce_grid = None
    reduce_wg = 0
    if nwg > 1:
        reduce = flash_attn_vec_reduce_instance(adapter, shape.head_dim_v, nwg)
        reduce_wg = flash_attn_vec_reduce_wg_size(adapter, nwg)
        reduce_grid = (rows, 1)
    return VecAttentionPlan(split, blk, reduce, kv_tile, nwg, wg_size, reduce_wg, blk_grid, (rows * nwg, 1),
                            reduce_grid)


def flash_attn_vec_reduce_wg_size(adapter: Adapter, nwg: int) -> int:
    """C L2219-2224: the reduce's WG_SIZE = max(max subgroup, min(nwg · max subgroup,
    maxComputeInvocationsPerWorkgroup))."""
    return max(adapter.max_subgroup, min(nwg * adapter.max_subgroup, adapter.max_invocations))


def flash_attn_vec_reduce_instance(adapter: Adapter, head_dim_v: int, nwg: int) -> Instance:
    """S L2978-3013 get_flash_attn_vec_reduce_pipeline for an f32 dst: DST_F32, HEAD_DIM_V and
    the WG_SIZE of flash_attn_vec_reduce_wg_size (which depends on the split count nwg)."""
    wg = flash_attn_vec_reduce_wg_size(adapter, nwg)
    return Instance("flash_attn_vec_reduce", ("DST_F32", f"HEAD_DIM_V={head_dim_v}", f"WG_SIZE={wg}"),
                    f"flash_attn_vec_reduce_dstf32_hsv{head_dim_v}_wg{wg}")


def alibi(max_bias: float, heads: int) -> tuple[float, float, float]:
    """(n_head_log2, m0, m1) of ALiBi (C L1986-1988), in f32 as the host computes them: n_head_log2
    = 2^floor(log2 heads), m0 = 2^(-max_bias / n_head_log2), m1 = 2^(-max_bias / 2 / n_head_log2)."""
    import numpy as np

    n_head_log2 = np.float32(1 << int(np.floor(np.log2(heads))))
    m0 = np.float32(np.power(np.float32(2.0), np.float32(-np.float32(max_bias) / n_head_log2)))
    m1 = np.float32(np.power(np.float32(2.0), np.float32(-(np.float32(max_bias) / np.float32(2.0)) / n_head_log2)))
    return float(n_head_log2), float(m0), float(m1)


# -- flash attention, tile path (prefill without subgroup matrices) ----------------------------------
#: S L23-24, L678: the tile path's largest KV tile, its preferred workgroup size and the query rows a
#: workgroup takes (one subgroup each).
FLASH_ATTN_TILE_MAX_KV_TILE = 64
FLASH_ATTN_PREFERRED_WG_SIZE = 128
FLASH_ATTN_TILE_Q_TILE = 4


def flash_attn_can_use_subgroup_matrix_path(shape: AttentionShape,
                                            subgroup_matrix: tuple[int, int, int] | None = None) -> bool:
    """S L948-954 ggml_webgpu_flash_attn_can_use_subgroup_matrix_path: the adapter reports an f16
    subgroup-matrix config (M, N, K) (chromium_experimental_subgroup_matrix, C L4150-4172; None
    without it, as on lavapipe and in browsers) and D_qk % K == 0, D_v % N == 0."""
    if subgroup_matrix is None:
        return False
    _, n, k = subgroup_matrix
    return shape.head_dim_qk % k == 0 and shape.head_dim_v % n == 0


def flash_attn_tile_supported(adapter: Adapter, shape: AttentionShape,
                              subgroup_matrix: tuple[int, int, int] | None = None) -> bool:
    """C L4527-4587 supports_op for FLASH_ATTN_EXT where the subgroup-matrix path is not taken
    (f32 Q and dst, f32/f16/q4_0/q8_0 K and V: every shape verify makes): subgroups, head dims a
    multiple of 4 for float K/V or of the block for quantized ones (L4558-4565), and
    maxComputeInvocationsPerWorkgroup >= Q_TILE (4) x the max subgroup size (L4566-4568), so a
    workgroup holds a subgroup per query row at every width; then some KV row must fit the
    workgroup storage at Q_TILE 4 without direct loads (L4576-4586). K/V offsets are vec4-aligned
    (L4553-4557): verify binds every tensor at offset 0."""
    if flash_attn_can_use_subgroup_matrix_path(shape, subgroup_matrix):
        return False
    k_align = BLOCKS[shape.k_type][0] if shape.k_type in QUANTIZED else TILE_KV_VEC_WIDTH
    v_align = BLOCKS[shape.v_type][0] if shape.v_type in QUANTIZED else TILE_KV_VEC_WIDTH
    aligned = shape.head_dim_qk % k_align == 0 and shape.head_dim_v % v_align == 0
    rows_fit = adapter.max_invocations >= FLASH_ATTN_TILE_Q_TILE * adapter.max_subgroup
    if not (adapter.subgroups and aligned and rows_fit):
        return False
    return flash_attn_max_kv_tile(adapter.max_workgroup_storage, FLASH_ATTN_TILE_Q_TILE, 1, shape.head_dim_qk,
                                  shape.head_dim_v, shape.mask, False) > 0


def flash_attn_uses_tile_path(adapter: Adapter, shape: AttentionShape,
                              subgroup_matrix: tuple[int, int, int] | None = None) -> bool:
    """C L2277-2281: FLASH_ATTN_EXT takes the vec path where flash_attn_use_vec_path holds (fewer
    than 20 query rows), else ggml_webgpu_flash_attn_direct, whose get_flash_attn_pipeline
    instantiates flash_attn_tile.wgsl where the subgroup-matrix path cannot be used (S L2832-2836,
    L2890-2891), on an adapter supports_op accepts it for."""
    return (not flash_attn_use_vec_path(adapter, shape)
            and flash_attn_tile_supported(adapter, shape, subgroup_matrix))


@dataclass(frozen=True)
class TileAttentionPlan:
    """What get_flash_attn_pipeline (S L2831-2907) and ggml_webgpu_flash_attn_direct (C
    L2080-2086) decide for one shape on the tile path: the program, its query and KV tiles, its
    workgroup size and its grid."""

    instance: Instance
    q_tile: int
    kv_tile: int
    wg_size: int
    grid: tuple[int, int]


def flash_attn_tile_wg_size(adapter: Adapter) -> int:
    """S L2868-2872 (tile path): WG_SIZE = min(maxComputeInvocationsPerWorkgroup, max(128, Q_TILE x
    the max subgroup size)), so that Q_TILE subgroups exist at every width the adapter may run."""
    return min(adapter.max_invocations, max(FLASH_ATTN_PREFERRED_WG_SIZE,
                                            FLASH_ATTN_TILE_Q_TILE * adapter.max_subgroup))


def flash_attn_tile_kv_tile(adapter: Adapter, shape: AttentionShape) -> int:
    """S L2845-2848, L2865-2867 (tile path): at most 64 KV rows, as many as the workgroup-storage
    estimate admits at Q_TILE 4 with granularity 1 and no direct loads (S L2841-2842 clear
    k_direct and v_direct off the subgroup-matrix path, so L2874-2879 never applies): 22 for head
    dim 128 with a mask in 16 KiB, 49 for 64. The estimate counts f32 words where the program
    keeps f16 (kv_shmem, p_shmem), so the tile is smaller than what fits."""
    largest = flash_attn_max_kv_tile(adapter.max_workgroup_storage, FLASH_ATTN_TILE_Q_TILE, 1, shape.head_dim_qk,
                                     shape.head_dim_v, shape.mask, False)
    if largest <= 0:
        raise ValueError("ggml-webgpu refuses the op (C L4586): the head dims do not fit the workgroup storage")
    return min(FLASH_ATTN_TILE_MAX_KV_TILE, largest)


def tile_attention_plan(adapter: Adapter, shape: AttentionShape,
                        subgroup_matrix: tuple[int, int, int] | None = None) -> TileAttentionPlan:
    """The tile path's program and dispatch for `shape` on `adapter`:

    - flash_attn_tile (S L2886-2895): the common defines (S L729-843) with K_DIRECT and V_DIRECT
      cleared (S L2841-2842), Q_TILE 4 (S L2836), KV_TILE (flash_attn_tile_kv_tile), WG_SIZE
      (flash_attn_tile_wg_size), then MIN_SUBGROUP_SIZE and MAX_SUBGROUP_SIZE (S L2892-2893: the
      per-lane register arrays are sized for the smallest subgroup); variant
      flash_attn_tile<common>_tile_sg<min>_<max>.
    - the grid (C L2080-2086): ceil(q_len / Q_TILE) workgroups per head, times heads and batches,
      along x (not folded into 2-D).
    """
    if not flash_attn_uses_tile_path(adapter, shape, subgroup_matrix):
        raise ValueError("ggml-webgpu does not take the tile path for this shape and adapter (C L2277-2281, "
                         "L4548-4575)")
    kv_tile = flash_attn_tile_kv_tile(adapter, shape)
    wg_size = flash_attn_tile_wg_size(adapter)
    defines, suffix = flash_attn_common_defines(shape, FLASH_ATTN_TILE_Q_TILE, kv_tile, wg_size,
                                                direct=(False, False))
    defines += [f"MIN_SUBGROUP_SIZE={adapter.min_subgroup}u", f"MAX_SUBGROUP_SIZE={adapter.max_subgroup}u"]
    variant = f"flash_attn_tile{suffix}_tile_sg{adapter.min_subgroup}_{adapter.max_subgroup}"
    grid = (ceil_div(shape.q_len, FLASH_ATTN_TILE_Q_TILE) * shape.heads * shape.batch, 1)
    return TileAttentionPlan(Instance("flash_attn_tile", tuple(defines), variant), FLASH_ATTN_TILE_Q_TILE, kv_tile,
                             wg_size, grid)


# -- quantized mat-vec with Q8 activations (MMVQ) ---------------------------------------------------------
#: S L1180-1186: the weight types the DP4A (MMVQ) path accepts.
MMVQ_TYPES = ("q4_0", "q4_1", "q8_0", "q2_K", "q4_K")
#: S L1176-1177: the vendors whose adapters take it.
MMVQ_VENDORS = ("amd", "intel", "nvidia")


def can_use_mmvq(adapter: Adapter, weight_type: str, k: int, cols: int) -> bool:
    """S L1172-1198 ggml_webgpu_can_use_mmvq: at most 4 activation columns, an AMD, Intel or NVIDIA
    adapter with packed_4x8_integer_dot_product, f32 activations, one of MMVQ_TYPES and K a
    multiple of 4. Elsewhere (lavapipe, Apple, ARM) the float mat-vec runs instead."""
    return (cols <= 4 and adapter.vendor in MMVQ_VENDORS and adapter.dot_product and weight_type in MMVQ_TYPES
            and k % 4 == 0)


def quantize_q8_instance(adapter: Adapter, weight_type: str) -> Instance:
    """S L1930-1966 get_quantize_q8_pipeline: SRC1_INNER_TYPE=f32, WG_SIZE=256, MUL_ACC_<TYPE>
    (which decides whether the block sum `s` is written), Q8_1_T, and a subgroup or workgroup
    reduction by the adapter's subgroups feature."""
    reduce = "USE_SUBGROUP_REDUCTION" if adapter.subgroups else "USE_WORKGROUP_REDUCTION"
    variant = f"quantize_q8_{type_name(weight_type)}_{'sg' if adapter.subgroups else 'wg'}_reduce"
    return Instance("quantize_q8", ("SRC1_INNER_TYPE=f32", f"WG_SIZE={MUL_MAT_VEC_WG_SIZE}",
                                    f"MUL_ACC_{weight_type.upper()}", "Q8_1_T", reduce), variant)


def quantize_q8_grid(adapter: Adapter, k: int, rows: int) -> tuple[int, int]:
    """C L1605-1611: ceil(K/4 / 256) workgroups per activation row, folded into 2-D."""
    per_row = ceil_div(k // 4, MUL_MAT_VEC_WG_SIZE)
    return compute_2d_workgroups(rows * per_row, adapter.max_workgroups_per_dimension)


def mul_mat_vec_instance(adapter: Adapter, weight_type: str, k: int, cols: int) -> Instance:
    """S L1968-2111 get_mul_mat_vec_pipeline for a quantized weight on the MMVQ path: BYTE_HELPERS,
    MUL_ACC_<TYPE>, U32_DEQUANT_HELPERS, SRC0_INNER_TYPE=u32, LEGACY_QUANTS (q4_0, q4_1, q8_0) or
    K_QUANTS (q2_K, q4_K), SRC1_INNER_TYPE=f32, SCALAR (quantized weights are never
    `vectorized`, S L1973-1976), MMVQ and Q8_1_T, WG_SIZE=256, OUTPUTS_PER_WG=4, the reduction, and
    NUM_COLS = the activation columns (dst->ne[1])."""
    if not can_use_mmvq(adapter, weight_type, k, cols):
        raise ValueError(f"ggml-webgpu does not take the MMVQ path for {weight_type} on this adapter (S L1172-1198)")
    group = "LEGACY_QUANTS" if weight_type in ("q4_0", "q4_1", "q8_0") else "K_QUANTS"
    reduce = "USE_SUBGROUP_REDUCTION" if adapter.subgroups else "USE_WORKGROUP_REDUCTION"
    defines = ("BYTE_HELPERS", f"MUL_ACC_{weight_type.upper()}", "U32_DEQUANT_HELPERS", "SRC0_INNER_TYPE=u32", group,
               "SRC1_INNER_TYPE=f32", "SCALAR", "MMVQ", "Q8_1_T", f"WG_SIZE={MUL_MAT_VEC_WG_SIZE}",
               f"OUTPUTS_PER_WG={MUL_MAT_VEC_OUTPUTS_PER_WG}", reduce, f"NUM_COLS={cols}")
    variant = f"mul_mat_vec_{type_name(weight_type)}_f32_{'sg' if adapter.subgroups else 'wg'}_reduce"
    return Instance("mul_mat_vec", defines, variant)


def mul_mat_vec_grid(adapter: Adapter, m: int, batches: int = 1) -> tuple[int, int]:
    """C L1714-1720: ceil(M / OUTPUTS_PER_WG) workgroups per batch, folded into 2-D."""
    groups = ceil_div(m, MUL_MAT_VEC_OUTPUTS_PER_WG) * batches
    return compute_2d_workgroups(groups, adapter.max_workgroups_per_dimension)


# -- row ops: RMS_NORM + MUL ----------------------------------------------------------------------------
#: How rms_norm_mul's tensors share bindings (S L2630-2639): each its own, the norm written over its
#: source (`rn_src == dst`), over the MUL's other operand (`mul_src == dst`), or both sources in one
#: buffer (SRC_OVERLAP).
RMS_NORM_MUL_MODES = {"separate": None, "inplace": "INPLACE", "overlap": "OVERLAP", "src_overlap": "SRC_OVERLAP"}


def rms_norm_mul_instance(adapter: Adapter, mode: str = "separate") -> Instance:
    """S L2615-2652 get_rms_norm_mul_pipeline: INPLACE, OVERLAP or SRC_OVERLAP by how the tensors
    share bindings (S L2630-2639, in that order of precedence), and WG_SIZE = context.max_wg_size
    (S L2641), which the host sets to the adapter's maxComputeInvocationsPerWorkgroup (C L2649)."""
    if mode not in RMS_NORM_MUL_MODES:
        raise ValueError(f"rms_norm_mul mode {mode!r}: one of {', '.join(RMS_NORM_MUL_MODES)}")
    define = RMS_NORM_MUL_MODES[mode]
    variant = "RMS_NORM_MUL" + ("" if define is None else f"_{mode}")
    return Instance("rms_norm_mul", ((define,) if define else ()) + (f"WG_SIZE={adapter.max_invocations}",), variant)


def rms_norm_mul_grid(rows: int) -> tuple[int, int]:
    """C L2679: one workgroup per row of dst (ggml_nrows(dst)) along x, y = 1: no fold into 2-D,
    so more than maxComputeWorkgroupsPerDimension rows cannot be dispatched."""
    return rows, 1


# -- row ops: GET_ROWS ----------------------------------------------------------------------------------
#: The source types verify instantiates get_rows for: the float ones and i32 (FLOAT_PARALLEL, one
#: invocation per element or vec4) and the block types references.ggml_quants decodes (one
#: invocation per row). S L1616-1634 lists the block types read as u32 words; the others as structs.
GET_ROWS_TYPES = ("f32", "f16", "i32", "q4_0", "q4_1", "q8_0", "q2_K", "q4_K")
_GET_ROWS_U32_TYPES = frozenset({"q4_0", "q8_0"})  # of GET_ROWS_TYPES, those S L1616-1634 reads as u32 words


def get_rows_vec4_aligned(offset_src: int, offset_dst: int, stride_src1: int, stride_src2: int,
                          stride_src3: int) -> bool:
    """C L1528-1529: the source and destination offsets and the source's strides (in elements) are
    multiples of 4."""
    return all(v % 4 == 0 for v in (offset_src, offset_dst, stride_src1, stride_src2, stride_src3))


def get_rows_vectorized(src_type: str, ne0: int, vec4_aligned: bool) -> bool:
    """S L1562: vec4 only for an f32 source whose row length is a multiple of 4, vec4-aligned."""
    return src_type == "f32" and ne0 % 4 == 0 and vec4_aligned


def get_rows_instance(adapter: Adapter, src_type: str, vectorized: bool = False) -> Instance:
    """S L1561-1686 get_get_rows_pipeline: FLOAT_PARALLEL with F32_VEC or F32 (vec4<f32> or f32,
    BLOCK_SIZE 4u or 1u), F16 (f16 to f32) or I32; a block type pushes SRC_TYPE (u32 with
    U32_DEQUANT_HELPERS for the types of S L1616-1634, else the type's struct, S L1639), BYTE_HELPERS
    and <TYPE>_T, <TYPE>, <TYPE>_SCALE_MIN, <TYPE>_TABLES, <TYPE>_GRID, <TYPE>_LUT, DST_TYPE=f32 and
    BLOCK_SIZE (32u for q4_0..q8_1, S L1660; 256u for the K types, S L1664); then WG_SIZE =
    maxComputeInvocationsPerWorkgroup (S L1676). The variant is get_rows_<type>[_vec] (S L1673)."""
    if src_type not in GET_ROWS_TYPES:
        raise ValueError(f"get_rows source type {src_type!r}: one of {', '.join(GET_ROWS_TYPES)}")
    if vectorized and src_type != "f32":
        raise ValueError("get_rows is vectorized for an f32 source only (S L1562)")
    defines: tuple[str, ...]
    if src_type == "f32":
        defines = (("FLOAT_PARALLEL", "F32_VEC", "SRC_TYPE=vec4<f32>", "DST_TYPE=vec4<f32>", "BLOCK_SIZE=4u")
                   if vectorized else ("FLOAT_PARALLEL", "F32", "SRC_TYPE=f32", "DST_TYPE=f32", "BLOCK_SIZE=1u"))
    elif src_type == "f16":
        defines = ("FLOAT_PARALLEL", "F16", "SRC_TYPE=f16", "DST_TYPE=f32", "BLOCK_SIZE=1u")
    elif src_type == "i32":
        defines = ("FLOAT_PARALLEL", "I32", "SRC_TYPE=i32", "DST_TYPE=i32", "BLOCK_SIZE=1u")
    else:
        upper = src_type.upper()
        source = (("SRC_TYPE=u32", "U32_DEQUANT_HELPERS") if src_type in _GET_ROWS_U32_TYPES
                  else (f"SRC_TYPE={src_type}",))
        block = 256 if src_type.endswith("_K") else 32
        defines = source + ("BYTE_HELPERS", f"{upper}_T", upper, f"{upper}_SCALE_MIN", f"{upper}_TABLES",
                            f"{upper}_GRID", f"{upper}_LUT", "DST_TYPE=f32", f"BLOCK_SIZE={block}u")
    variant = f"get_rows_{type_name(src_type)}" + ("_vec" if vectorized else "")
    return Instance("get_rows", defines + (f"WG_SIZE={adapter.max_invocations}",), variant)


def get_rows_grid(adapter: Adapter, src_type: str, vectorized: bool, ne0: int, rows: int) -> tuple[int, int]:
    """C L1514, L1557-1562: the float types (f32, f16, i32) run one invocation per element (per
    vec4 when vectorized), a block type one per row; ceil(threads / WG_SIZE) workgroups along x,
    y = 1 (not folded: the program reads gid.x alone)."""
    float_parallel = src_type in ("f32", "f16", "i32")
    per_row = ne0 // (4 if vectorized else 1)
    threads = per_row * rows if float_parallel else rows
    return ceil_div(threads, adapter.max_invocations), 1


# -- row ops: SOFT_MAX ----------------------------------------------------------------------------------
#: The mask types get_soft_max_pipeline instantiates (S L3220-3230: MASK_F32, MASK_F16; any other
#: aborts), and no mask.
SOFT_MAX_MASKS = ("none", "f32", "f16")


def soft_max_instance(adapter: Adapter, mask: str = "none", sinks: bool = False, inplace: bool = False) -> Instance:
    """S L3203-3253 get_soft_max_pipeline: HAS_MASK with MASK_F32 or MASK_F16 where the op has a
    mask (src1, S L3218-3230), HAS_SINK where it has sinks (src2, S L3234-3237), INPLACE where dst
    is src0 (S L3208, L3239-3242), in that order, then WG_SIZE = context.max_wg_size (S L3244),
    which the host sets to the adapter's maxComputeInvocationsPerWorkgroup (C L2928). The
    variant name grows by `_mask_<type>`, `_sink`, `_inplace` in the same order."""
    if mask not in SOFT_MAX_MASKS:
        raise ValueError(f"soft_max mask {mask!r}: one of {', '.join(SOFT_MAX_MASKS)}")
    defines: tuple[str, ...] = ()
    variant = "soft_max"
    if mask != "none":
        defines += ("HAS_MASK", f"MASK_{mask.upper()}")
        variant += f"_mask_{mask}"
    if sinks:
        defines += ("HAS_SINK",)
        variant += "_sink"
    if inplace:
        defines += ("INPLACE",)
        variant += "_inplace"
    return Instance("soft_max", defines + (f"WG_SIZE={adapter.max_invocations}",), variant)


def soft_max_grid(rows: int) -> tuple[int, int]:
    """C L2985: one workgroup per row of dst (ggml_nrows(dst) = ne01 ne02 ne03) along x, y = 1; the
    program splits wid.x into (i3, i2, i1) itself. Not folded into 2-D: more rows than
    maxComputeWorkgroupsPerDimension cannot be dispatched."""
    return rows, 1


def soft_max_alibi(max_bias: float, heads: int) -> tuple[float, float, float]:
    """(n_head_log2, m0, m1) the soft_max host passes (C L2937-2939): the same f32 computation as
    flash attention's (`alibi`, C L1986-1988), from src0->ne[2] heads."""
    return alibi(max_bias, heads)


# -- ROPE ------------------------------------------------------------------------------------------------
#: The storage types ggml-webgpu's ROPE takes (C L4594-4595: supports_op for an f32 or f16 dst).
ROPE_TYPES = ("f32", "f16")


def rope_instance(adapter: Adapter, dtype: str = "f32", inplace: bool = False, freq_factors: bool = False) -> Instance:
    """S L3154-3200 get_rope_pipeline: keyed by dst's type, whether src0 is dst (INPLACE) and
    whether a frequency-factor tensor src2 is bound (FF_FUNC) (S L3156-3158); TYPE_F32 or TYPE_F16
    (S L3170, L3174), INPLACE (S L3182), FF_FUNC (S L3187) in that order, then WG_SIZE =
    context.max_wg_size (S L3191), the adapter's maxComputeInvocationsPerWorkgroup (C L2723). The
    mode (normal, NeoX, multi-section, vision) is no define: the one program reads it from params."""
    if dtype not in ROPE_TYPES:
        raise ValueError(f"rope type {dtype!r}: one of {', '.join(ROPE_TYPES)}")
    defines = (f"TYPE_{dtype.upper()}",) + (("INPLACE",) if inplace else ()) + (("FF_FUNC",) if freq_factors else ())
    variant = f"rope_{dtype}" + ("_inplace" if inplace else "") + ("_ff" if freq_factors else "")
    return Instance("rope", defines + (f"WG_SIZE={adapter.max_invocations}",), variant)


def rope_grid(elements: int, wg_size: int) -> tuple[int, int]:
    """C L2799: ceil(ggml_nelements(dst) / WG_SIZE) workgroups along x, y = 1, while the program
    gives each invocation two elements (`n_threads` = ggml_nelements(src0) / 2, C L2769) and
    returns from the second half: half the workgroups idle. Not folded into 2-D: past 65535
    workgroups (about 16.7M elements at 256 lanes) it cannot be dispatched."""
    return ceil_div(elements, wg_size), 1


def rope_host_params(freq_base: float, n_dims: int, n_ctx_orig: int, beta_fast: float,
                     beta_slow: float) -> tuple[float, float, float]:
    """(theta_scale, corr_dim0, corr_dim1) as the host computes them in f32 (C L2753,
    `powf(freq_base, -2.0f / n_dims)`; C L2756, ggml.c's `ggml_rope_yarn_corr_dims`: n_dims
    logf(n_ctx_orig / (n_rot 2 pi)) / (2 logf(base)), floored or ceiled, clamped to [0, n_dims - 1])."""
    import numpy as np

    f32 = np.float32
    with np.errstate(divide="ignore"):
        theta_scale = f32(freq_base) ** (f32(-2.0) / f32(n_dims))

        def corr(n_rot: float):
            ratio = f32(n_ctx_orig) / (f32(n_rot) * f32(2) * f32(np.pi))
            return f32(n_dims) * np.log(ratio) / (f32(2) * np.log(f32(freq_base)))

        low = max(f32(0), np.floor(corr(beta_fast)))
        high = min(f32(n_dims - 1), np.ceil(corr(beta_slow)))
    return float(theta_scale), float(low), float(high)


# -- row ops: SET_ROWS ----------------------------------------------------------------------------------
#: The destination types ggml-webgpu's SET_ROWS takes (C L4429-4433): f32 and f16 through
#: set_rows.wgsl, q8_0 and q4_0 through set_rows_quant.wgsl; the source is f32, the indices i32 or i64.
SET_ROWS_DST_TYPES = ("f32", "f16", "q8_0", "q4_0")


def set_rows_vec4(dst_type: str, ne0: int) -> bool:
    """S L1391-1392: vec4 for an f32 or f16 destination whose rows are a multiple of 4 long."""
    return dst_type in ("f32", "f16") and ne0 % 4 == 0


def set_rows_instance(adapter: Adapter, dst_type: str, vec4: bool = False, i64_idx: bool = False,
                      pair_blocks: bool = False) -> Instance:
    """S L1387-1450 get_set_rows_pipeline: DST_F32, DST_F16, DST_Q8_0 or DST_Q4_0 (S L1404-1423),
    then VEC4, I64_IDX (an i64 index tensor, S L1393) and PAIR_BLOCKS (a block type with an even
    number of blocks a row, S L1394) where they hold, WG_SIZE = maxComputeInvocationsPerWorkgroup
    (S L1438); set_rows_quant.wgsl for the block types, set_rows.wgsl else (S L1440)."""
    if dst_type not in SET_ROWS_DST_TYPES:
        raise ValueError(f"set_rows destination type {dst_type!r}: one of {', '.join(SET_ROWS_DST_TYPES)}")
    quantized = dst_type in QUANTIZED
    if vec4 and quantized or pair_blocks and not quantized:
        raise ValueError("set_rows: vec4 is for f32 and f16 destinations, pair_blocks for block types (S L1391-1394)")
    defines = [f"DST_{dst_type.upper()}"]
    variant = f"set_rows_dst{dst_type}"
    for on, define, suffix in ((vec4, "VEC4", "_vec4"), (i64_idx, "I64_IDX", "_i64idx"),
                               (pair_blocks, "PAIR_BLOCKS", "_pair_blocks")):
        if on:
            defines.append(define)
            variant += suffix
    defines.append(f"WG_SIZE={adapter.max_invocations}")
    return Instance("set_rows_quant" if quantized else "set_rows", tuple(defines), variant)


def set_rows_grid(adapter: Adapter, dst_type: str, vec4: bool, pair_blocks: bool, ne0: int,
                  rows: int) -> tuple[int, int]:
    """C L1489-1499: one invocation per block (per pair of blocks) of each source row for a block
    type, per vec4, else per element; ceil(threads / WG_SIZE) workgroups along x, y = 1."""
    if dst_type in QUANTIZED:
        blocks = ne0 // BLOCKS[dst_type][0]
        threads = rows * (blocks // 2 if pair_blocks else blocks)
    else:
        threads = rows * (ne0 // 4 if vec4 else ne0)
    return ceil_div(threads, adapter.max_invocations), 1


# -- the float and dequantizing mat-vec (MUL_MAT without MMVQ) -------------------------------------------
#: C L4443-4446: MUL_MAT takes f16 activations (src1) only with f16 weights; f32 activations with any
#: weight type of C L4448-4473.
MUL_MAT_VEC_ACTIVATIONS = ("f32", "f16")
#: The weight types verify runs on this program: the float ones (MUL_ACC_FLOAT) and the legacy block
#: formats references.ggml_quants decodes (MUL_ACC_Q4_0, MUL_ACC_Q4_1, MUL_ACC_Q8_0).
MUL_MAT_VEC_WEIGHTS = ("f32", "f16", "q4_0", "q4_1", "q8_0")


def uses_mat_vec(cols: int) -> bool:
    """C L1624: MUL_MAT takes mul_mat_vec.wgsl where dst has at most 4 columns (dst->ne[1] <= 4),
    else the tiled programs (get_mul_mat_fast_pipeline, C L1651-1658)."""
    return cols <= 4


def mul_mat_vec_vectorized(weight_type: str, k: int) -> bool:
    """S L1972-1975: `vectorized` (the VEC define, vec4 loads) for f32 and f16 weights whose rows
    are a multiple of 4 long (src0->ne[0] % 4 == 0); block types and other lengths are SCALAR."""
    return k % 4 == 0 and weight_type in ("f32", "f16")


def mul_mat_vec_dequant_instance(adapter: Adapter, weight_type: str, activation_type: str, k: int,
                                 cols: int) -> Instance:
    """S L1968-2111 get_mul_mat_vec_pipeline where MMVQ is not taken (can_use_mmvq false: any
    adapter for f32/f16 weights, an adapter without DP4A, or a vendor other than AMD, Intel or
    NVIDIA, as lavapipe's, for the block types). In the C++'s order: SRC0_INNER_TYPE=f32 or f16 with
    MUL_ACC_FLOAT (S L1992-2001), or for a block type BYTE_HELPERS, MUL_ACC_<TYPE>,
    U32_DEQUANT_HELPERS, SRC0_INNER_TYPE=u32 (S L2011-2014; LEGACY_QUANTS only with MMVQ,
    S L2019-2021); SRC1_INNER_TYPE (S L2055-2063); VEC or SCALAR (S L2069, by
    mul_mat_vec_vectorized); WG_SIZE=256, OUTPUTS_PER_WG=4 (S L2071-2080, L2092-2093); the
    reduction (S L2094); NUM_COLS = dst->ne[1] (S L2099). The variant: mul_mat_vec_<w>_<a>, then
    _sg_reduce or _wg_reduce and _vectorized (S L2095-2098)."""
    if not uses_mat_vec(cols):
        raise ValueError(f"{cols} columns: MUL_MAT takes the tiled programs, not the mat-vec (C L1624)")
    if weight_type not in MUL_MAT_VEC_WEIGHTS or activation_type not in MUL_MAT_VEC_ACTIVATIONS:
        raise ValueError(f"mul_mat_vec weight {weight_type!r}, activations {activation_type!r}: verify runs "
                         f"{', '.join(MUL_MAT_VEC_WEIGHTS)} with {', '.join(MUL_MAT_VEC_ACTIVATIONS)}")
    if activation_type == "f16" and weight_type != "f16":
        raise ValueError("ggml-webgpu's MUL_MAT takes f16 activations with f16 weights only (C L4443-4446)")
    if activation_type == "f32" and can_use_mmvq(adapter, weight_type, k, cols):
        raise ValueError(f"ggml-webgpu takes the MMVQ path for {weight_type} on this adapter (S L1172-1198)")
    if weight_type in ("f32", "f16"):
        defines = [f"SRC0_INNER_TYPE={weight_type}", "MUL_ACC_FLOAT"]
    else:
        defines = ["BYTE_HELPERS", f"MUL_ACC_{weight_type.upper()}", "U32_DEQUANT_HELPERS", "SRC0_INNER_TYPE=u32"]
    vectorized = mul_mat_vec_vectorized(weight_type, k)
    reduce = "USE_SUBGROUP_REDUCTION" if adapter.subgroups else "USE_WORKGROUP_REDUCTION"
    defines += [f"SRC1_INNER_TYPE={activation_type}", "VEC" if vectorized else "SCALAR",
                f"WG_SIZE={MUL_MAT_VEC_WG_SIZE}", f"OUTPUTS_PER_WG={MUL_MAT_VEC_OUTPUTS_PER_WG}", reduce,
                f"NUM_COLS={cols}"]
    variant = (f"mul_mat_vec_{type_name(weight_type)}_{activation_type}_{'sg' if adapter.subgroups else 'wg'}_reduce"
               + ("_vectorized" if vectorized else ""))
    return Instance("mul_mat_vec", tuple(defines), variant)
