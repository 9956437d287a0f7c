"""How ORT's host code launches its split-K decode attention programs, for verify's own launches.

onnxruntime-web 1.30 routes attention with fewer than 32 new tokens per sequence (and prefill
whose dense tile would not fit workgroup memory) to two programs
(contrib_ops/webgpu/bert/flash_attention.cc, ApplyFlashAttention's split-reduce branch):

- FlashAttentionDecodeQKV: one workgroup per (batch, query head, block of `m_tile` new tokens,
  64-key tile of the KV cache). It computes the tile's scores scale·q·k in f32, masks keys past
  the causal end with -FLT_MAX, and writes the tile's softmax statistics (max m_t, sum
  l_t = Σ exp(s - m_t), base e) to `metadata` (f32 pairs) and the tile's *normalised* partial
  output Σ_j exp(s_j - m_t)/l_t · v_j (in the model's type) to `out_split_vx`. A tile wholly past
  a sequence's length writes (-FLT_MAX, 0) and no partial output.
- FlashAttentionDecodeVxReduce: one workgroup per (batch, query head, token block, 32 channels of
  the head). It merges the tiles: M = max_t m_t (and the head's sink logit, if any),
  L = Σ_t l_t·exp(m_t - M) (+ exp(sink - M)), output = Σ_t out_t · (l_t·exp(m_t - M)/L), the
  weight rounded to the model's type before the product.

`DecodeSplit` holds the sizes ORT derives these launches from and gives the uniform values (by
the field names the programs' WGSL declares, so verify.sources.ort.launch.bind packs them as
ORT's ProgramManager does), the workgroup counts and the intermediate tensors' shapes.
tests/sources/ort/test_ort_attention.py holds launches built from it to ORT's own, bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from verify.errors import UsageError
from verify.sources.ort.launch import ort_grid, packed_grid

#: Keys per tile of the decode programs (`tile_size` in ApplyFlashAttention).
KEY_TILE = 64
#: vec4 channels per VxReduce workgroup (`tile_size` 8 in ComputeFlashAttentionDecodeVxReduce).
REDUCE_CHANNEL_VECS = 8
#: New tokens from which ApplyFlashAttention takes the single-kernel FlashAttention program
#: instead of the split-reduce pair (when the dense tile fits workgroup memory).
SPLIT_REDUCE_BELOW = 32
#: ApplyFlashAttention's ceiling on workgroup memory per decode workgroup: the device's
#: maxComputeWorkgroupStorageSize (16384 in WebGPU's default limits; ORT requests the adapter's).
DEFAULT_WORKGROUP_STORAGE = 16384


def decode_workgroup_storage(m_tile: int, head_size_vec: int, element_size: int) -> int:
    """Bytes of workgroup memory FlashAttentionDecodeQKV declares (DecodeWorkgroupStorageBytes in
    flash_attention.cc, for an unquantized, unpaged cache)."""
    k_vec = 32 if m_tile == 1 else 8
    workgroup = 128 if m_tile == 1 else 64
    value = 4 * element_size
    return (m_tile * k_vec * value + m_tile * KEY_TILE * k_vec * 4 + m_tile * KEY_TILE * 4
            + m_tile * head_size_vec * value + m_tile * workgroup * value + 2 * m_tile * 4)


@dataclass(frozen=True)
class AttentionShape:
    """The sizes GroupQueryAttention passes every one of its flash programs, checked as ORT checks
    them. total_sequence_length is the batch's largest total (past + new); present_sequence_length
    the KV buffer's length, at least that."""

    batch: int
    num_heads: int
    kv_num_heads: int
    head_size: int
    new_sequence_length: int
    total_sequence_length: int
    present_sequence_length: int
    scale: float = 0.0  # 0: ORT's default 1/sqrt(head_size)

    def __post_init__(self):
        if self.head_size % 4:
            raise UsageError(f"head_size={self.head_size}: ORT's flash attention needs a multiple of 4")
        if self.num_heads % self.kv_num_heads:
            raise UsageError(f"num_heads={self.num_heads} is not a multiple of kv_num_heads={self.kv_num_heads}")
        if self.present_sequence_length < self.total_sequence_length:
            raise UsageError("present_sequence_length must hold the total sequence length")

    @property
    def alpha(self) -> float:
        """The score scale, as the f32 ORT computes on the host."""
        return self.scale if self.scale else 1.0 / math.sqrt(self.head_size)


@dataclass(frozen=True)
class DecodeSplit(AttentionShape):
    """The sizes of one split-reduce attention launch, as ORT's GroupQueryAttention passes them.

    total_sequence_length is the batch's largest total (past + new; GQA's input 6), and
    present_sequence_length the KV buffer's length (present_key.shape[2]: the capacity of a shared
    static cache, else max(past buffer, total)). Per-sequence totals travel in seqlens_k.
    """

    element_size: int = 4  # bytes of the model's type: 2 for f16, 4 for f32
    max_workgroup_storage: int = DEFAULT_WORKGROUP_STORAGE

    @property
    def head_size_vec(self) -> int:
        return self.head_size // 4

    @property
    def m_tile(self) -> int:
        """New tokens per QKV workgroup: 4 from 4 tokens, 2 from 2, else 1, halved while the
        workgroup memory would exceed the device's (SelectDecodeMTile)."""
        tile = 4 if self.new_sequence_length >= 4 else 2 if self.new_sequence_length >= 2 else 1
        while tile > 1 and (decode_workgroup_storage(tile, self.head_size_vec, self.element_size)
                            > self.max_workgroup_storage):
            tile //= 2
        return tile

    @property
    def workgroup_size(self) -> int:
        """Lanes of a QKV workgroup: 128 (32 vec4 of K per row) for one token, else 64 (8 vec4)."""
        return 128 if self.m_tile == 1 else 64

    @property
    def num_total_tiles(self) -> int:
        return -(-self.total_sequence_length // KEY_TILE)

    @property
    def num_present_tiles(self) -> int:
        return -(-self.present_sequence_length // KEY_TILE)

    @property
    def token_blocks(self) -> int:
        return -(-self.new_sequence_length // self.m_tile)

    @property
    def out_split_shape(self) -> tuple[int, ...]:
        """out_split_vx: [B, N, S, present tiles, H] in the model's type."""
        return (self.batch, self.num_heads, self.new_sequence_length, self.num_present_tiles, self.head_size)

    @property
    def metadata_shape(self) -> tuple[int, ...]:
        """metadata: [B, N, S, present tiles, 2] f32 (tile max, tile sum)."""
        return (self.batch, self.num_heads, self.new_sequence_length, self.num_present_tiles, 2)

    def qkv_uniforms(self) -> dict:
        """FlashAttentionDecodeQKV's uniforms (ComputeFlashAttentionDecodeQKV; no attention bias)."""
        return {"head_size_vec": self.head_size_vec, "total_sequence_length": self.total_sequence_length,
                "alpha": self.alpha, "present_sequence_length": self.present_sequence_length,
                "n_reps": self.num_heads // self.kv_num_heads,
                "num_present_sequence_length_tile": self.num_present_tiles,
                "num_heads": self.num_heads, "batch_size": self.batch, "attn_bias_dim0": 1, "attn_bias_dim1": 1,
                "attn_bias_dim3": 0, "new_sequence_length": self.new_sequence_length,
                # onnxruntime-web 1.31.1's local window (0: none; its program masks keys before
                # query_end - local_window_size only where the value is > 0); 1.30.0's has no such field.
                "local_window_size": 0}

    def qkv_grid(self, grid: str = "flat") -> tuple[int, int, int]:
        """ORT's dispatch of the QKV's workgroups; `grid` packs it under a lowered limit (GRIDS)."""
        return packed_grid(self.batch * self.num_heads * self.token_blocks * self.num_total_tiles, grid)

    @property
    def num_channel_tiles(self) -> int:
        return -(-self.head_size // (4 * REDUCE_CHANNEL_VECS))

    def reduce_uniforms(self) -> dict:
        """FlashAttentionDecodeVxReduce's uniforms (ComputeFlashAttentionDecodeVxReduce)."""
        return {"head_size_vec": self.head_size_vec, "num_total_seq_length_tile": self.num_total_tiles,
                "num_present_sequence_length_tile": self.num_present_tiles,
                "num_head_size_tile": self.num_channel_tiles,
                "batch_heads": self.batch * self.num_heads, "new_sequence_length": self.new_sequence_length,
                "num_heads": self.num_heads,
                # onnxruntime-web 1.31.1 clamps each sequence's total (seqlens_k + 1) to the cache's capacity
                "present_sequence_length": self.present_sequence_length}

    def reduce_grid(self, grid: str = "flat") -> tuple[int, int, int]:
        """ORT's dispatch of the reduce's workgroups; `grid` packs it under a lowered limit (GRIDS)."""
        return packed_grid(self.batch * self.num_heads * self.token_blocks * self.num_channel_tiles, grid)


#: Queries per FlashAttention workgroup (its 64 lanes, one new token each).
FLASH_QUERY_TILE = 64


@dataclass(frozen=True)
class FlashPrefill(AttentionShape):
    """One FlashAttention launch (ApplyFlashAttention's single-program branch, 32 new tokens or
    more, no attention bias, no head sink), as GroupQueryAttention passes it.

    One workgroup of 64 lanes per (sequence, query head, 64 new tokens): each lane owns one new
    token and walks the keys in steps of min(subgroup size, 16), K and V of a step shared through
    workgroup memory and subgroupShuffle. total_sequence_length is the batch's largest total;
    each sequence's own total (and so its past, total - new) comes from seqlens_k.
    tests/sources/ort/test_ort_attention_kernels.py holds these uniforms and the workgroup count to
    a recorded ORT dispatch, field for field.
    """


    @property
    def num_seq_tile(self) -> int:
        return -(-self.new_sequence_length // FLASH_QUERY_TILE)

    @property
    def output_shape(self) -> tuple[int, ...]:
        """output: [B, S, N·H] in the model's type."""
        return (self.batch, self.new_sequence_length, self.num_heads * self.head_size)

    def uniforms(self) -> dict:
        """FlashAttention's uniforms (FlashAttentionProgram in flash_attention.cc): without an
        attention bias its dims are (1, 1, 0); without a local window local_window_size is 0
        (the program is generated without its window test, so the value is never read)."""
        return {"new_sequence_length": self.new_sequence_length, "total_sequence_length": self.total_sequence_length,
                "present_sequence_length": self.present_sequence_length, "batch_size": self.batch,
                "n_reps": self.num_heads // self.kv_num_heads, "alpha": self.alpha, "num_seq_tile": self.num_seq_tile,
                "attn_bias_dim0": 1, "attn_bias_dim1": 1, "attn_bias_dim3": 0, "local_window_size": 0}

    def grid(self) -> tuple[int, int, int]:
        return ort_grid(self.batch * self.num_heads * self.num_seq_tile)
