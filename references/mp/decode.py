"""mpmath twin of references.decode at 50 digits, following TVM's CPU kernel literally.

`_attention_decode_cpu` (`_decode_kernels.py`; docs/tvm.md §3) loops over sequences, query
heads and logical rows, finding each row's page through `_get_kv_chunk_len` and `_get_seq_offset`.
This twin does the same with plain Python loops, independently of the vectorised gather in
references.paged_kv, so comparing the two also checks the gather. The softmax is exact (no running
max, no -5e4): o = sum_r e^(s_r) V_r / sum_r e^(s_r), lse2 = log2 sum_r e^(s_r), s_r = sm_scale q.k_r.
"""

from __future__ import annotations

import mpmath
import numpy as np

from ..rope import Llama3Scaling
from .rope import rotate_neox
from .softmax import DPS, NEG_INF, to_mpf


def _rows(page_indptr, page_values, length_info, page_size: int, sliding_window: bool, b: int):
    """[(logical row r, page, in-page offset)] of sequence b, as the TVM kernel walks them."""
    begin, end = int(page_indptr[b]), int(page_indptr[b + 1])
    if begin == end:
        return []
    if sliding_window:
        last, offset, sink = (int(length_info[i][b]) for i in range(3))
        length = (end - begin - 1) * page_size + last - offset + sink
    else:
        length = (end - begin - 1) * page_size + int(length_info[b])
    rows = []
    for r in range(length):
        slot = r
        if sliding_window:
            slot = r if r < sink else r - sink + offset
        rows.append((r, int(page_values[begin + slot // page_size]), slot % page_size))
    return rows


def _round_to(values, rotary_dtype):
    """The values rounded to rotary_dtype (TVM's cast_qkv), through float64: exact unless the
    float64 rounding lands on a midpoint of the narrower format (probability ~2**-40)."""
    if rotary_dtype is None:
        return list(values)
    return [mpmath.mpf(float(np.asarray(float(v), dtype=rotary_dtype))) for v in values]


def decode_attention(q, pages, page_indptr, page_values, length_info, *, sm_scale, rotary_mode=0,
                     rope_theta=1e4, rope_scale=1.0, k_rope_pos_offset=None, q_rope_position=None,
                     sliding_window=False, rotary_dtype=None, page_size=None,
                     llama3: Llama3Scaling | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(o [B, Hq, D], lse2 [B, Hq]) as object arrays of mpf; o = 0 and lse2 = -inf for an empty context."""
    q = np.asarray(q)
    pages = np.asarray(pages)
    batch, qo_heads, head_dim = q.shape
    kv_heads = pages.shape[2]
    group = qo_heads // kv_heads
    page_size = pages.shape[3] if page_size is None else page_size
    rope = dict(rope_theta=rope_theta, rope_scale=rope_scale, llama3=llama3)
    o = np.empty((batch, qo_heads, head_dim), dtype=object)
    lse2 = np.empty((batch, qo_heads), dtype=object)
    with mpmath.workdps(DPS):
        for b in range(batch):
            rows = _rows(page_indptr, page_values, length_info, page_size, sliding_window, b)
            for h in range(qo_heads):
                g = h // group
                q_row = [to_mpf(x) for x in q[b, h]]
                if rotary_mode == 1:
                    q_row = _round_to(rotate_neox(q[b, h], int(q_rope_position[b]), **rope), rotary_dtype)
                scores, values = [], []
                for r, page, offset in rows:
                    k_row = [to_mpf(x) for x in pages[page, 0, g, offset]]
                    if rotary_mode == 1:
                        position = int(k_rope_pos_offset[b]) + r
                        k_row = _round_to(rotate_neox(pages[page, 0, g, offset], position, **rope), rotary_dtype)
                    scores.append(to_mpf(sm_scale) * mpmath.fsum(a * c for a, c in zip(q_row, k_row)))
                    values.append([to_mpf(x) for x in pages[page, 1, g, offset]])
                if not rows:
                    lse2[b, h] = NEG_INF
                    o[b, h] = [mpmath.mpf(0)] * head_dim
                    continue
                weights = [mpmath.exp(s) for s in scores]
                total = mpmath.fsum(weights)
                lse2[b, h] = mpmath.log(total) / mpmath.log(2)
                for d in range(head_dim):
                    o[b, h, d] = mpmath.fsum(w * v[d] for w, v in zip(weights, values)) / total
    return o, lse2
