"""Paged-KV decode attention (one query token per sequence), as TVM's `_attention_decode` defines it.

Per sequence b and query head h (docs/tvm.md §2, §3; `_decode_kernels.py`):

    g      = h // (H_qo / H_kv)                                   (GQA)
    q      = rotary_mode == 1 ? cast(rope(Q[b,h], q_rope_position[b])) : Q[b,h]
    k_r    = rotary_mode == 1 ? cast(rope(K_r, k_rope_pos_offset[b] + r)) : K_r
    s_r    = sm_scale * log2(e) * q . k_r                         (log2 domain)
    o      = sum_r 2**(s_r - m) V_r / sum_r 2**(s_r - m),   lse2 = log2 sum_r 2**s_r

with r the logical row (not the physical slot) and rope the NeoX rotation. The kernel computes
this in f32 with an online softmax initialised at m = -5e4; this reference is the exact math in
float64, with -inf (not -5e4) for an empty context.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from .paged_kv import gather_kv
from .rope import Llama3Scaling, rotate_neox
from .softmax import softmax_state, state_to_output

LOG2E = 1.0 / math.log(2.0)


@dataclass(frozen=True)
class DecodeResult:
    """The reference output and the intermediates error budgets are derived from."""

    o: np.ndarray        # [B, Hq, D] float64; exactly 0 for an empty context
    lse2: np.ndarray     # [B, Hq] base-2 LSE of sm_scale*q.k (= ln sum exp(sm_scale q.k) / ln 2); -inf if empty
    q: np.ndarray        # [B, Hq, D] the (rotated, rounded) query actually attended with
    k: np.ndarray        # [B, Hkv, Lmax, D] gathered (rotated, rounded) keys, zero past length
    v: np.ndarray        # [B, Hkv, Lmax, D] gathered values, zero past length
    length: np.ndarray   # [B] attended length
    logits2: np.ndarray  # [B, Hq, Lmax] sm_scale*log2(e)*q.k, -inf past length


def _positions(name: str, x, batch: int) -> np.ndarray:
    if x is None:
        raise ValueError(f"{name} is required when rotary_mode == 1")
    pos = np.asarray(x)
    if pos.shape != (batch,) or not np.issubdtype(pos.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array of shape (B,) = ({batch},), got {pos.dtype} {pos.shape}")
    return pos.astype(np.int64)


def _rounder(rotary_dtype):
    """A function rounding a fresh float64 array in place to rotary_dtype (TVM's `cast_qkv` after the
    f32 rope), or leaving it unchanged for None."""
    if rotary_dtype is None:
        return lambda x: x
    dtype = np.dtype(rotary_dtype)
    if dtype not in (np.float16, np.float32):
        raise ValueError(f"rotary_dtype must be None, float16 or float32, got {rotary_dtype!r}")

    def round_in_place(x: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):  # beyond the dtype's range it stores inf, as the kernel does
            x[...] = x.astype(dtype)
        return x

    return round_in_place


def decode_attention(q, pages, page_indptr, page_values, length_info, *, sm_scale: float,
                     rotary_mode: int = 0, rope_theta: float = 1e4, rope_scale: float = 1.0,
                     k_rope_pos_offset=None, q_rope_position=None, sliding_window: bool = False,
                     rotary_dtype=None, page_size: int | None = None,
                     llama3: Llama3Scaling | None = None) -> DecodeResult:
    """Reference decode attention over a TVM paged KV cache; see the module docstring.

    q [B, Hq, D] and pages [max_num_pages, 2, Hkv, page_size, D] are the stored values (any float
    dtype, used exactly). rotary_dtype (None | float16 | float32) rounds the rotated q and k as the
    kernel's cast to its qkv dtype does; None keeps them exact. It has no effect when rotary_mode
    is 0 (q and k are then used as stored). llama3 selects TVM's llama3 rope frequencies.
    """
    q = np.asarray(q, np.float64)
    pages = np.asarray(pages)
    if q.ndim != 3:
        raise ValueError(f"q must be [B, Hq, D], got shape {q.shape}")
    batch, qo_heads, head_dim = q.shape
    if pages.ndim != 5 or pages.shape[4] != head_dim:
        raise ValueError(f"pages must be [max_num_pages, 2, Hkv, page_size, D={head_dim}], got {pages.shape}")
    kv_heads = pages.shape[2]
    if kv_heads == 0 or qo_heads % kv_heads:
        raise ValueError(f"Hq={qo_heads} must be a multiple of Hkv={kv_heads}")
    if np.asarray(page_indptr).shape != (batch + 1,):
        raise ValueError(f"page_indptr must have B+1={batch + 1} entries, got shape {np.asarray(page_indptr).shape}")
    if not math.isfinite(sm_scale):
        raise ValueError(f"sm_scale must be finite, got {sm_scale!r}")
    if rotary_mode not in (0, 1):
        raise ValueError(f"rotary_mode must be 0 or 1, got {rotary_mode!r}")
    round_qk = _rounder(rotary_dtype)

    k, v, length = gather_kv(pages, page_indptr, page_values, length_info, page_size, sliding_window)
    max_len = k.shape[2]
    if rotary_mode == 1:
        q_pos = _positions("q_rope_position", q_rope_position, batch)
        k_pos = _positions("k_rope_pos_offset", k_rope_pos_offset, batch)
        rotate = partial(rotate_neox, rope_theta=rope_theta, rope_scale=rope_scale, llama3=llama3)
        q = round_qk(rotate(q, q_pos[:, None]))
        k = round_qk(rotate(k, k_pos[:, None, None] + np.arange(max_len)))

    group = qo_heads // kv_heads
    scores = q.reshape(batch, kv_heads, group, head_dim) @ k.transpose(0, 1, 3, 2)  # [B, Hkv, G, L]
    valid = (np.arange(max_len) < length[:, None])[:, None, None, :]
    logits2 = np.where(valid, scores * (sm_scale * LOG2E), -np.inf)
    o, lse2 = state_to_output(*softmax_state(logits2, v[:, :, None], base=2), base=2)
    return DecodeResult(
        o=o.reshape(batch, qo_heads, head_dim),
        lse2=lse2.reshape(batch, qo_heads),
        q=q,
        k=k,
        v=v,
        length=length,
        logits2=logits2.reshape(batch, qo_heads, max_len),
    )
