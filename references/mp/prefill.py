"""mpmath twins of references.prefill at 50 digits, following TVM's CPU prefill kernels literally.

`_attention_prefill_cpu`, `_attention_prefill_ragged_cpu`, `tree_attn_cpu` and
`tree_attn_with_paged_kv_cache_cpu` (apache-tvm 0.27, `_prefill_kernels.py` and `tree_attn.py`) loop
over sequences, query tokens, heads and context rows, and test each (row, column) pair with the
mask helpers of `_kernel_common.py`. This twin does the same with plain Python loops:

- The masks are TVM's formulas, one pair at a time (`_causal_or_sliding_cross_mask`, and
  `_check_tree_order` on the preorder pairs of references.token_tree.tree_order). They do not use
  references.prefill's vectorised masks or the parent walk of references.token_tree.ancestry.
- The paged rows are found with references.mp.decode's row -> slot -> page walk.

The softmax is exact (no running max, no -5e4): o = sum e^(s) V / sum e^(s) over the visible
rows, lse2 = log2 sum e^(s), s = sm_scale q.k. A row that sees nothing gets o = 0, lse2 = -inf.
"""

from __future__ import annotations

import functools

import mpmath
import numpy as np

from ..token_tree import tree_order
from .decode import _round_to, _rows
from .rope import rotate_gptj, rotate_neox
from .softmax import DPS, NEG_INF, to_mpf

_ROTATIONS = {"neox": rotate_neox, "gptj": rotate_gptj}


def causal_or_sliding_cross_mask(causal, row, col, kv_len, qo_len, sliding_window_size) -> bool:
    """TVM `_causal_or_sliding_cross_mask` / `_causal_mask` (`_kernel_common.py` L130-144), as written."""
    if causal > 0 and sliding_window_size > 0:
        visible_past = max(sliding_window_size - row - 1, 0)
        return col < kv_len and col >= max(kv_len - visible_past, 0)
    if causal > 0:
        return col < kv_len - qo_len + row + 1
    return col < kv_len


def check_tree_order(order, row, col, kv_len, qo_len) -> bool:
    """TVM `_check_tree_order` (tree_attn.py L47-64) for one sequence's preorder pairs `order` [n, 2]."""
    tree_order_len = len(order)
    tree_start = kv_len - tree_order_len
    child = row + tree_order_len - qo_len
    parent = col - tree_start
    return col < kv_len and (col < tree_start or order[parent][0] <= order[child][0] < order[parent][1])


def _attend(q_row, keys, values, visible, width):
    """(o, lse2) of one query over rows (keys[j], values[j]) where visible[j]; exact."""
    scores = [mpmath.fsum(a * c for a, c in zip(q_row, k)) for k, seen in zip(keys, visible) if seen]
    rows = [v for v, seen in zip(values, visible) if seen]
    if not scores:
        return [mpmath.mpf(0)] * width, NEG_INF
    weights = [mpmath.exp(s) for s in scores]
    total = mpmath.fsum(weights)
    o = [mpmath.fsum(w * v[d] for w, v in zip(weights, rows)) / total for d in range(width)]
    return o, mpmath.log(total) / mpmath.log(2)


def _rotation(rotary_mode, rope_pairing, rope_theta, rope_scale, llama3, rotary_dtype):
    rotate = _ROTATIONS[rope_pairing]
    options = dict(rope_theta=rope_theta, rope_scale=rope_scale, llama3=llama3)

    def vector(x, position):
        if rotary_mode != 1:
            return [to_mpf(value) for value in x]
        return _round_to(rotate(x, int(position), **options), rotary_dtype)

    return vector


def _run(q, q_indptr, sm_scale, width, context, visible, rotation, q_rope_position):
    """Loop over sequences, heads and tokens. context(b, h) -> (keys, values) of the sequence's rows
    for head h's kv head; visible(b, i, c, kv_len, qo_len) -> bool; width is the V head dim."""
    q = np.asarray(q)
    total_q, qo_heads, _ = q.shape
    o = np.empty((total_q, qo_heads, width), dtype=object)
    lse2 = np.empty((total_q, qo_heads), dtype=object)
    with mpmath.workdps(DPS):
        scale = to_mpf(sm_scale)
        for b in range(len(q_indptr) - 1):
            qo_len = int(q_indptr[b + 1]) - int(q_indptr[b])
            for h in range(qo_heads):
                keys, values = context(b, h)
                for i in range(qo_len):
                    row = int(q_indptr[b]) + i
                    position = None if q_rope_position is None else q_rope_position[row]
                    q_row = [scale * x for x in rotation(q[row, h], position)]
                    seen = [visible(b, i, c, len(keys), qo_len) for c in range(len(keys))]
                    o[row, h], lse2[row, h] = _attend(q_row, keys, values, seen, width)
    return o, lse2


def _paged_context(pages, page_indptr, page_values, length_info, page_size, sliding_window, group,
                   rotation, k_rope_pos_offset):
    pages = np.asarray(pages)
    page_size = pages.shape[3] if page_size is None else page_size

    @functools.cache
    def rows_of(b, g):
        rows = _rows(page_indptr, page_values, length_info, page_size, sliding_window, b)
        position = (lambda r: None) if k_rope_pos_offset is None else (lambda r: int(k_rope_pos_offset[b]) + r)
        keys = [rotation(pages[page, 0, g, offset], position(r)) for r, page, offset in rows]
        values = [[to_mpf(x) for x in pages[page, 1, g, offset]] for _, page, offset in rows]
        return keys, values

    return lambda b, h: rows_of(b, h // group)


def paged_prefill_attention(q, q_indptr, pages, page_indptr, page_values, length_info, *, sm_scale, causal=True,
                            sliding_window=False, sliding_window_size=0, rotary_mode=0, rope_theta=1e4,
                            rope_scale=1.0, llama3=None, rope_pairing="neox", k_rope_pos_offset=None,
                            q_rope_position=None, rotary_dtype=None, page_size=None):
    """(o [total_q, Hq, D], lse2 [total_q, Hq]) as object arrays of mpf; see references.prefill."""
    rotation = _rotation(rotary_mode, rope_pairing, rope_theta, rope_scale, llama3, rotary_dtype)
    group = np.asarray(q).shape[1] // np.asarray(pages).shape[2]
    context = _paged_context(pages, page_indptr, page_values, length_info, page_size, sliding_window, group,
                             rotation, k_rope_pos_offset if rotary_mode == 1 else None)
    window = sliding_window_size if sliding_window else 0

    def visible(b, i, c, kv_len, qo_len):
        return causal_or_sliding_cross_mask(int(causal), i, c, kv_len, qo_len, window)

    return _run(q, q_indptr, sm_scale, np.asarray(pages).shape[4], context, visible, rotation, q_rope_position)


def _ragged_context(k, v, kv_indptr, group, rotation, key_position):
    k, v = np.asarray(k), np.asarray(v)

    @functools.cache
    def rows_of(b, g):
        begin, end = int(kv_indptr[b]), int(kv_indptr[b + 1])
        keys = [rotation(k[begin + c, g], key_position(b, c)) for c in range(end - begin)]
        values = [[to_mpf(x) for x in v[begin + c, g]] for c in range(end - begin)]
        return keys, values

    return lambda b, h: rows_of(b, h // group)


def ragged_prefill_attention(q, q_indptr, k, v, kv_indptr, *, sm_scale, causal=True, rotary_mode=0, rope_theta=1e4,
                             rope_scale=1.0, llama3=None, rope_pairing="neox", k_rope_pos_offset=None,
                             q_rope_position=None, rotary_dtype=None):
    """(o [total_q, Hq, Dv], lse2 [total_q, Hq]) as object arrays of mpf; see references.prefill."""
    rotation = _rotation(rotary_mode, rope_pairing, rope_theta, rope_scale, llama3, rotary_dtype)
    group = np.asarray(q).shape[1] // np.asarray(k).shape[1]

    def key_position(b, c):
        return None if rotary_mode != 1 else int(k_rope_pos_offset[b]) + c

    def visible(b, i, c, kv_len, qo_len):
        return causal_or_sliding_cross_mask(int(causal), i, c, kv_len, qo_len, 0)

    context = _ragged_context(k, v, kv_indptr, group, rotation, key_position)
    return _run(q, q_indptr, sm_scale, np.asarray(v).shape[2], context, visible, rotation, q_rope_position)


def _tree_visible(token_tree_parent_ptr, tree_order_indptr):
    orders = [tree_order(np.asarray(token_tree_parent_ptr)[tree_order_indptr[b]: tree_order_indptr[b + 1]]).tolist()
              for b in range(len(tree_order_indptr) - 1)]

    def visible(b, i, c, kv_len, qo_len):
        return check_tree_order(orders[b], i, c, kv_len, qo_len)

    return visible


def tree_attention(q, q_indptr, k, v, kv_indptr, token_tree_parent_ptr, tree_order_indptr, *, sm_scale,
                   rotary_mode=0, rope_theta=1e4, rope_scale=1.0, llama3=None, rope_pairing="neox",
                   q_rope_position=None, rotary_dtype=None):
    """(o, lse2) as object arrays of mpf; K row c of sequence b rotated at q_rope_position[kv_indptr[b] + c]."""
    rotation = _rotation(rotary_mode, rope_pairing, rope_theta, rope_scale, llama3, rotary_dtype)
    group = np.asarray(q).shape[1] // np.asarray(k).shape[1]

    def key_position(b, c):
        return None if rotary_mode != 1 else int(q_rope_position[int(kv_indptr[b]) + c])

    context = _ragged_context(k, v, kv_indptr, group, rotation, key_position)
    visible = _tree_visible(token_tree_parent_ptr, tree_order_indptr)
    return _run(q, q_indptr, sm_scale, np.asarray(v).shape[2], context, visible, rotation, q_rope_position)


def paged_tree_attention(q, q_indptr, pages, page_indptr, page_values, length_info, token_tree_parent_ptr,
                         tree_order_indptr, *, sm_scale, page_size=None):
    """(o, lse2) as object arrays of mpf; no rotary (the kernel asserts rotary_mode == 0)."""
    rotation = _rotation(0, "neox", 1e4, 1.0, None, None)
    group = np.asarray(q).shape[1] // np.asarray(pages).shape[2]
    context = _paged_context(pages, page_indptr, page_values, length_info, page_size, False, group, rotation, None)
    visible = _tree_visible(token_tree_parent_ptr, tree_order_indptr)
    return _run(q, q_indptr, sm_scale, np.asarray(pages).shape[4], context, visible, rotation, None)
