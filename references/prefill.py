"""Prefill attention (many query tokens per sequence), as TVM's prefill kernels define it.

A prefill step attends qo_len[b] new query tokens of every sequence b at once; decode is the
case qo_len = 1 (references.decode). Paths below are relative to `tvm/relax/frontend/nn/llm/`
in the apache-tvm 0.27 wheel. For sequence b, query token i < qo_len[b] (global row
q_indptr[b] + i), query head h, over the logical K/V rows c < kv_len[b] of the sequence:

    g    = h // (H_qo / H_kv)                                                       (GQA)
    q_i  = rotary_mode == 1 ? cast(rope(Q[q_indptr[b] + i, h], q_rope_position[q_indptr[b] + i])) : Q[...]
    k_c  = rotary_mode == 1 ? cast(rope(K_c, k_rope_pos_offset[b] + c)) : K_c
    s_c  = sm_scale * log2(e) * q_i . k_c                                            (base-2 logits)
    o    = sum_{c visible} 2**(s_c - m) V_c / sum_{c visible} 2**(s_c - m)
    lse2 = log2 sum_{c visible} 2**s_c = ln(sum_{c visible} exp(sm_scale q_i . k_c)) / ln 2

(`_prefill_kernels.py` `_attention_prefill` L217-391: Q rotated at q_rope_position of its own
token L334-338, K at k_rope_pos_offset[b] + c L355-359; `_kernel_common.py` `compute_s_gemm` L247
for the log2(e) scaling, `paged_store_output_lse` L312-334 for lse = m + log2 d.) Every lse
returned here is base 2. Which rows c query i sees, `prefill_mask`:

- causal = 0: every c < kv_len (`_causal_mask`, `_kernel_common.py` L130-135). The runtime uses
  this for the paged context, which then holds only tokens before the chunk
  (`paged_kv_cache.cc` `AttentionInternal` L2161-2180 at apache/tvm 5d4dc87).
- causal = 1: c < kv_len - qo_len + i + 1 (`_causal_mask`): the chunk is the last qo_len rows of the
  context and token i is row kv_len - qo_len + i. This needs kv_len >= qo_len.
- causal = 1 with a window W > 0 (only the sliding-window kernel has one; its factory argument
  `sliding_window_size`, which `kv_cache.py` L703 sets to the layer window): the last
  max(W - i - 1, 0) rows, max(kv_len - max(W - i - 1, 0), 0) <= c < kv_len
  (`_causal_or_sliding_cross_mask`, `_kernel_common.py` L138-144). This is a cross mask: the
  context then holds only the tokens before the chunk, the ragged kernel attends the chunk
  itself, and the runtime merges the two. Token i's window of W tokens is W - i - 1 cached rows
  plus chunk tokens 0..i. Sink rows are masked like any other row.
- tree: see `paged_tree_attention` and `tree_attention`.

A query row that sees nothing (kv_len = 0, or a window row with W - i - 1 <= 0; a tree query always
sees its own node) gets o = 0 and lse2 = -inf, as references.decode gives an empty context. TVM's
kernels start their running max at -5e4 (`init_states`, `_kernel_common.py` L229-230) and store
something else there. This module is the exact math, in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .decode import LOG2E, _rounder
from .paged_kv import gather_kv
from .rope import Llama3Scaling, rotate_gptj, rotate_neox
from .softmax import softmax_state, state_to_output
from .token_tree import ancestry, validate_parents

_ROTATIONS = {"neox": rotate_neox, "gptj": rotate_gptj}


@dataclass(frozen=True)
class PrefillResult:
    """The reference output and the intermediates error budgets are derived from.

    Rows follow the kernels' ragged layout: sequence b's query tokens are rows
    q_indptr[b]:q_indptr[b+1] of o, lse2, q and logits2.
    """

    o: np.ndarray        # [total_q, Hq, Dv] float64; exactly 0 for a row that sees nothing
    lse2: np.ndarray     # [total_q, Hq] base-2 LSE of sm_scale*q.k over the visible rows; -inf if none
    q: np.ndarray        # [total_q, Hq, D] the (rotated, rounded) queries attended with
    k: np.ndarray        # [B, Hkv, Lmax, D] each sequence's (rotated, rounded) keys, zero past kv_len
    v: np.ndarray        # [B, Hkv, Lmax, Dv] each sequence's values, zero past kv_len
    q_indptr: np.ndarray  # [B+1] int64
    qo_len: np.ndarray   # [B] int64 query tokens per sequence
    kv_len: np.ndarray   # [B] int64 K/V rows per sequence (TVM's kv_chunk_len)
    logits2: np.ndarray  # [total_q, Hq, Lmax] sm_scale*log2(e)*q.k, -inf where the row is not visible


def _int_array(name: str, x, shape: tuple, meaning: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.shape != shape or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise ValueError(f"{name} must be an integer array of shape {meaning} = {shape}, got {arr.dtype} {arr.shape}")
    return arr.astype(np.int64)


def _indptr(name: str, x, total: int, batch: int | None = None) -> np.ndarray:
    """A validated CSR pointer array: starts at 0, never decreases, ends at `total`."""
    indptr = np.asarray(x)
    if indptr.ndim != 1 or indptr.size == 0 or (indptr.size and not np.issubdtype(indptr.dtype, np.integer)):
        raise ValueError(f"{name} must be a non-empty 1-d integer array, got {indptr.dtype} {indptr.shape}")
    if batch is not None and indptr.size != batch + 1:
        raise ValueError(f"{name} must have B+1={batch + 1} entries, got {indptr.size}")
    indptr = indptr.astype(np.int64)
    if indptr[0] != 0:
        raise ValueError(f"{name} must start at 0; {name}[0]={indptr[0]}")
    drops = np.flatnonzero(np.diff(indptr) < 0)
    if drops.size:
        b = int(drops[0])
        raise ValueError(f"{name} must be non-decreasing; {name}[{b}]={indptr[b]} > {name}[{b + 1}]={indptr[b + 1]}")
    if indptr[-1] != total:
        raise ValueError(f"{name}[-1]={indptr[-1]} must equal the number of rows it indexes, {total}")
    return indptr


def prefill_mask(qo_len: int, kv_len: int, *, causal: bool, sliding_window_size: int = 0) -> np.ndarray:
    """visible[i, c] (bool [qo_len, kv_len]): may query token i attend to context row c.

    TVM `_causal_mask` and `_causal_or_sliding_cross_mask` (`_kernel_common.py` L130-144); see the
    module docstring. Raises ValueError when a causal prefill without a window has fewer context
    rows than query tokens: the chunk must be the last qo_len rows of the context.
    """
    if sliding_window_size < 0:
        raise ValueError(f"sliding_window_size must be >= 0 (0: no window), got {sliding_window_size}")
    row = np.arange(qo_len)[:, None]
    col = np.arange(kv_len)[None, :]
    if not causal:
        return np.broadcast_to(col < kv_len, (qo_len, kv_len)).copy()
    if sliding_window_size > 0:
        visible_past = np.maximum(sliding_window_size - row - 1, 0)
        return (col < kv_len) & (col >= np.maximum(kv_len - visible_past, 0))
    if kv_len < qo_len:
        raise ValueError(
            f"causal prefill needs kv_len >= qo_len (the {qo_len} new tokens are the last rows of the "
            f"context, token i at row kv_len - qo_len + i); got kv_len={kv_len} < qo_len={qo_len}"
        )
    return col < kv_len - qo_len + row + 1


def tree_mask(parents, qo_len: int, kv_len: int) -> np.ndarray:
    """visible[i, c] (bool [qo_len, kv_len]) for a token tree occupying the last rows of the context.

    TVM `_check_tree_order` (tree_attn.py L47-64): the tree's len(parents) nodes are the context's
    last rows, from tree_start = kv_len - len(parents) on, and every row before tree_start is visible.
    The queries are the tree's last qo_len nodes, so query i is node i + len(parents) - qo_len. It
    sees a tree row when that node is the query's node or one of its ancestors.
    """
    parents = validate_parents(parents)
    tree_len = parents.size
    if not qo_len <= tree_len <= kv_len:
        raise ValueError(
            f"a token tree of {tree_len} nodes must hold the {qo_len} query tokens and fit in the "
            f"{kv_len} context rows: need qo_len <= tree size <= kv_len"
        )
    visible = np.ones((qo_len, kv_len), dtype=bool)
    visible[:, kv_len - tree_len:] = ancestry(parents)[tree_len - qo_len:]
    return visible


def attend(q, q_indptr, k, v, kv_len, masks, sm_scale: float) -> PrefillResult:
    """Softmax attention of every query row over its sequence's visible rows.

    q [total_q, Hq, D] and k [B, Hkv, L, D] are already rotated (`rotated`); masks[b] is bool
    [qo_len[b], kv_len[b]]. The reference functions below call it once their rows are gathered and
    rotated; a query row's result depends only on its own q, mask row and sequence, so the rows of
    a sequence may be attended a block at a time on the same K and V.
    Query head h reads kv head h // G, so the products are formed per (sequence, kv head) as one
    [qo_len G, D] @ [D, L] matrix product, and the weighted sum of V as one [qo_len G, L] @ [L, Dv]
    product: with qo_len = 1 the shapes references.decode uses per sequence.
    """
    if not math.isfinite(sm_scale):
        raise ValueError(f"sm_scale must be finite, got {sm_scale!r}")
    total_q, qo_heads, head_dim = q.shape
    batch, kv_heads, max_len, _ = k.shape
    group = qo_heads // kv_heads
    logits2 = np.full((total_q, qo_heads, max_len), -np.inf)
    o = np.zeros((total_q, qo_heads, v.shape[-1]))
    lse2 = np.full((total_q, qo_heads), -np.inf)
    for b in range(batch):
        begin, end = int(q_indptr[b]), int(q_indptr[b + 1])
        if begin == end:
            continue
        rows = end - begin
        visible = np.zeros((rows, max_len), dtype=bool)
        visible[:, : kv_len[b]] = masks[b]
        # [Hkv, rows, G, ·]: the query heads of every row of the sequence beside their kv head
        q_b = q[begin:end].reshape(rows, kv_heads, group, head_dim).transpose(1, 0, 2, 3)
        scores = q_b.reshape(kv_heads, rows * group, head_dim) @ k[b].transpose(0, 2, 1)
        logits = np.where(visible[None, :, None, :], scores.reshape(kv_heads, rows, group, max_len) *
                          (sm_scale * LOG2E), -np.inf)
        o_b, lse_b = state_to_output(*softmax_state(logits.reshape(kv_heads, rows * group, max_len),
                                                    v[b][:, None], base=2), base=2)
        logits2[begin:end] = logits.transpose(1, 0, 2, 3).reshape(rows, qo_heads, max_len)
        o[begin:end] = o_b.reshape(kv_heads, rows, group, -1).transpose(1, 0, 2, 3).reshape(rows, qo_heads, -1)
        lse2[begin:end] = lse_b.reshape(kv_heads, rows, group).transpose(1, 0, 2).reshape(rows, qo_heads)
    return PrefillResult(o=o, lse2=lse2, q=q, k=k, v=v, q_indptr=q_indptr, qo_len=np.diff(q_indptr),
                         kv_len=kv_len, logits2=logits2)


def _queries(q, kv_heads: int) -> np.ndarray:
    q = np.asarray(q, np.float64)
    if q.ndim != 3:
        raise ValueError(f"q must be [total_q, Hq, D], got shape {q.shape}")
    if kv_heads == 0 or q.shape[1] % kv_heads:
        raise ValueError(f"Hq={q.shape[1]} must be a multiple of Hkv={kv_heads}")
    return q


class _Rotary:
    """The inline RoPE of TVM's kernels (rotary_mode 1), or nothing (rotary_mode 0).

    `pairing` "neox" is the half rotation all TVM attention kernels use (`_rope`,
    `_kernel_common.py` L115-127). "gptj" rotates interleaved pairs (2i, 2i+1), as HF GPT-J does.
    TVM's kernels do not use it: their rope_type "gptj" changes only the frequencies.
    rotary_dtype rounds the rotated vectors as the kernels' `cast` to the qkv dtype does.
    """

    def __init__(self, rotary_mode, rope_theta, rope_scale, llama3, pairing, rotary_dtype):
        if rotary_mode not in (0, 1):
            raise ValueError(f"rotary_mode must be 0 or 1, got {rotary_mode!r}")
        if pairing not in _ROTATIONS:
            raise ValueError(f"rope_pairing must be 'neox' or 'gptj', got {pairing!r}")
        self.enabled = rotary_mode == 1
        self.rotate = _ROTATIONS[pairing]
        self.options = dict(rope_theta=rope_theta, rope_scale=rope_scale, llama3=llama3)
        self.round = _rounder(rotary_dtype)

    def __call__(self, x: np.ndarray, positions: np.ndarray) -> np.ndarray:
        return self.round(self.rotate(x, positions, **self.options)) if self.enabled else x


def rotated(x, positions, *, rotary_mode: int, rope_theta: float = 1e4, rope_scale: float = 1.0,
            llama3: Llama3Scaling | None = None, rope_pairing: str = "neox", rotary_dtype=None) -> np.ndarray:
    """x (float64 [..., D]) rotated at `positions` (broadcast against x's leading axes) as the
    kernels' inline RoPE rotates q and K rows, rounded to rotary_dtype; x itself with rotary_mode 0."""
    return _Rotary(rotary_mode, rope_theta, rope_scale, llama3, rope_pairing, rotary_dtype)(x, positions)


def _rope_positions(rotary: _Rotary, q_rope_position, k_rope_pos_offset, total_q: int, batch: int):
    if not rotary.enabled:
        return None, None
    for name, value in (("q_rope_position", q_rope_position), ("k_rope_pos_offset", k_rope_pos_offset)):
        if value is None:
            raise ValueError(f"{name} is required when rotary_mode == 1")
    return (_int_array("q_rope_position", q_rope_position, (total_q,), "(total_q,)"),
            _int_array("k_rope_pos_offset", k_rope_pos_offset, (batch,), "(B,)"))


def paged_prefill_attention(q, q_indptr, pages, page_indptr, page_values, length_info, *, sm_scale: float,
                            causal: bool = True, sliding_window: bool = False, sliding_window_size: int = 0,
                            rotary_mode: int = 0, rope_theta: float = 1e4, rope_scale: float = 1.0,
                            llama3: Llama3Scaling | None = None, rope_pairing: str = "neox",
                            k_rope_pos_offset=None, q_rope_position=None, rotary_dtype=None,
                            page_size: int | None = None) -> PrefillResult:
    """Reference of TVM's paged prefill (`_attention_prefill`, `batch_prefill_paged_kv[_sliding_window]`).

    q [total_q, Hq, D], q_indptr [B+1]; the context of sequence b is its paged K/V rows, addressed
    as in decode (references.paged_kv: page_indptr, page_values, length_info [B], or [3, B] with
    sliding_window). q_rope_position [total_q] holds one position per query token and
    k_rope_pos_offset [B] the position of each sequence's row 0. sliding_window_size is the
    sliding-window kernel's window W (0: none). It needs sliding_window=True, because the kernel
    without a window passes 0 (`_prefill_kernels.py` L379).
    """
    pages = np.asarray(pages)
    if pages.ndim != 5:
        raise ValueError(f"pages must be [max_num_pages, 2, Hkv, page_size, D], got shape {pages.shape}")
    q = _queries(q, pages.shape[2])
    if pages.shape[4] != q.shape[2]:
        raise ValueError(f"pages must be [max_num_pages, 2, Hkv, page_size, D={q.shape[2]}], got {pages.shape}")
    if sliding_window_size and not sliding_window:
        raise ValueError("sliding_window_size applies only to the sliding-window kernel (sliding_window=True)")
    k, v, kv_len = gather_kv(pages, page_indptr, page_values, length_info, page_size, sliding_window)
    batch = kv_len.size
    q_indptr = _indptr("q_indptr", q_indptr, q.shape[0], batch)
    rotary = _Rotary(rotary_mode, rope_theta, rope_scale, llama3, rope_pairing, rotary_dtype)
    q_pos, k_pos = _rope_positions(rotary, q_rope_position, k_rope_pos_offset, q.shape[0], batch)
    qo_len = np.diff(q_indptr)
    masks = [prefill_mask(int(qo_len[b]), int(kv_len[b]), causal=causal, sliding_window_size=sliding_window_size)
             for b in range(batch)]
    if rotary.enabled:
        q = rotary(q, q_pos[:, None])
        k = rotary(k, k_pos[:, None, None] + np.arange(k.shape[2]))
    return attend(q, q_indptr, k, v, kv_len, masks, sm_scale)


def _ragged_kv(q, q_indptr, k, v, kv_indptr):
    """(q, q_indptr, k, v, kv_len, kv_indptr), validated, with the ragged K [total_kv, Hkv, D] and
    V [total_kv, Hkv, Dv] laid out as [B, Hkv, Lmax, ·], zero past each kv_len."""
    k = np.asarray(k, np.float64)
    v = np.asarray(v, np.float64)
    if k.ndim != 3 or v.ndim != 3 or k.shape[:2] != v.shape[:2]:
        raise ValueError(f"k and v must be [total_kv, Hkv, D] and [total_kv, Hkv, Dv]; got {k.shape} and {v.shape}")
    q = _queries(q, k.shape[1])
    if k.shape[2] != q.shape[2]:
        raise ValueError(f"k must have the head dim of q, {q.shape[2]}; got {k.shape[2]}")
    q_indptr = _indptr("q_indptr", q_indptr, q.shape[0])
    batch = q_indptr.size - 1
    kv_indptr = _indptr("kv_indptr", kv_indptr, k.shape[0], batch)
    kv_len = np.diff(kv_indptr)
    max_len = int(kv_len.max(initial=0))
    rows = kv_indptr[:-1, None] + np.arange(max_len)
    valid = np.arange(max_len) < kv_len[:, None]
    rows = np.where(valid, rows, 0)

    def padded(x):
        out = x[rows] if x.shape[0] else np.zeros((batch, max_len) + x.shape[1:])  # [B, Lmax, Hkv, ·]
        out[~valid] = 0
        return np.ascontiguousarray(out.transpose(0, 2, 1, 3))  # the layout gather_kv returns

    return q, q_indptr, padded(k), padded(v), kv_len, kv_indptr


def ragged_prefill_attention(q, q_indptr, k, v, kv_indptr, *, sm_scale: float, causal: bool = True,
                             rotary_mode: int = 0, rope_theta: float = 1e4, rope_scale: float = 1.0,
                             llama3: Llama3Scaling | None = None, rope_pairing: str = "neox",
                             k_rope_pos_offset=None, q_rope_position=None, rotary_dtype=None) -> PrefillResult:
    """Reference of TVM's ragged prefill (`_attention_prefill_ragged`, `batch_prefill_ragged_kv`).

    The context of sequence b is k, v rows kv_indptr[b]:kv_indptr[b+1] (k [total_kv, Hkv, D],
    v [total_kv, Hkv, Dv]; TVM allows Dv != D). Sequences may be empty on either side. K row c is
    rotated at k_rope_pos_offset[b] + c (`_prefill_kernels.py` L892-896). The kernel has no window
    (it passes 0, L913). The runtime calls it with causal = 1 on the chunk's own K/V, kv_indptr equal to
    q_indptr (`paged_kv_cache.cc` L2182-2191).
    """
    q, q_indptr, k, v, kv_len, _ = _ragged_kv(q, q_indptr, k, v, kv_indptr)
    batch = kv_len.size
    rotary = _Rotary(rotary_mode, rope_theta, rope_scale, llama3, rope_pairing, rotary_dtype)
    q_pos, k_pos = _rope_positions(rotary, q_rope_position, k_rope_pos_offset, q.shape[0], batch)
    qo_len = np.diff(q_indptr)
    masks = [prefill_mask(int(qo_len[b]), int(kv_len[b]), causal=causal) for b in range(batch)]
    if rotary.enabled:
        q = rotary(q, q_pos[:, None])
        k = rotary(k, k_pos[:, None, None] + np.arange(k.shape[2]))
    return attend(q, q_indptr, k, v, kv_len, masks, sm_scale)


def _trees(token_tree_parent_ptr, tree_order_indptr, batch: int) -> list[np.ndarray]:
    """Each sequence's parent array: token_tree_parent_ptr[tree_order_indptr[b]:tree_order_indptr[b+1]]."""
    flat = np.asarray(token_tree_parent_ptr)
    indptr = _indptr("tree_order_indptr", tree_order_indptr, flat.size, batch)
    return [validate_parents(flat[indptr[b]: indptr[b + 1]], f"token_tree_parent_ptr of sequence {b}")
            for b in range(batch)]


def tree_attention(q, q_indptr, k, v, kv_indptr, token_tree_parent_ptr, tree_order_indptr, *, sm_scale: float,
                   rotary_mode: int = 0, rope_theta: float = 1e4, rope_scale: float = 1.0,
                   llama3: Llama3Scaling | None = None, rope_pairing: str = "neox", q_rope_position=None,
                   rotary_dtype=None) -> PrefillResult:
    """Reference of TVM's ragged tree attention (`tree_attn`, `batch_tree_attn`).

    As `ragged_prefill_attention`, with the causal mask replaced by `tree_mask`: sequence b's tree
    is token_tree_parent_ptr[tree_order_indptr[b]:tree_order_indptr[b+1]] (local parent indices, -1
    for roots; the kernel receives it as `tree_order`, see references.token_tree). The kernel
    rotates K row c of sequence b at q_rope_position[kv_indptr[b] + c] (tree_attn.py L404-408). This
    means something only when kv_indptr equals q_indptr, as the runtime passes
    (`paged_kv_cache.cc` L2193-2200), so rotary_mode 1 requires it. The positions are then the
    nodes' depths plus the sequence offset.
    """
    q, q_indptr, k, v, kv_len, kv_indptr = _ragged_kv(q, q_indptr, k, v, kv_indptr)
    batch = kv_len.size
    trees = _trees(token_tree_parent_ptr, tree_order_indptr, batch)
    qo_len = np.diff(q_indptr)
    masks = [tree_mask(trees[b], int(qo_len[b]), int(kv_len[b])) for b in range(batch)]
    rotary = _Rotary(rotary_mode, rope_theta, rope_scale, llama3, rope_pairing, rotary_dtype)
    if rotary.enabled:
        if not np.array_equal(kv_indptr, q_indptr):
            raise ValueError("rotary_mode 1 needs kv_indptr == q_indptr: the kernel rotates K row "
                             "kv_indptr[b] + c at q_rope_position[kv_indptr[b] + c]")
        if q_rope_position is None:
            raise ValueError("q_rope_position is required when rotary_mode == 1")
        q_pos = _int_array("q_rope_position", q_rope_position, (q.shape[0],), "(total_q,)")
        q = rotary(q, q_pos[:, None])
        rows = kv_indptr[:-1, None] + np.arange(k.shape[2])
        k_pos = np.where(np.arange(k.shape[2]) < kv_len[:, None], q_pos[np.minimum(rows, q_pos.size - 1)], 0)
        k = rotary(k, k_pos[:, None, :])  # past kv_len k is 0 and stays 0
    return attend(q, q_indptr, k, v, kv_len, masks, sm_scale)


def paged_tree_attention(q, q_indptr, pages, page_indptr, page_values, length_info, token_tree_parent_ptr,
                         tree_order_indptr, *, sm_scale: float, page_size: int | None = None) -> PrefillResult:
    """Reference of TVM's tree attention over the paged cache (`tree_attn_with_paged_kv_cache`, `tree_attn_paged_kv`).

    The tree of sequence b (as in `tree_attention`) is the last rows of its paged context. Every
    row before the tree is visible to every query. The kernel asserts rotary_mode == 0
    (tree_attn.py L887-889) and supports no sliding window (L804), so neither is offered here.
    """
    pages = np.asarray(pages)
    if pages.ndim != 5:
        raise ValueError(f"pages must be [max_num_pages, 2, Hkv, page_size, D], got shape {pages.shape}")
    q = _queries(q, pages.shape[2])
    if pages.shape[4] != q.shape[2]:
        raise ValueError(f"pages must be [max_num_pages, 2, Hkv, page_size, D={q.shape[2]}], got {pages.shape}")
    k, v, kv_len = gather_kv(pages, page_indptr, page_values, length_info, page_size, False)
    batch = kv_len.size
    q_indptr = _indptr("q_indptr", q_indptr, q.shape[0], batch)
    trees = _trees(token_tree_parent_ptr, tree_order_indptr, batch)
    qo_len = np.diff(q_indptr)
    masks = [tree_mask(trees[b], int(qo_len[b]), int(kv_len[b])) for b in range(batch)]
    return attend(q, q_indptr, k, v, kv_len, masks, sm_scale)
