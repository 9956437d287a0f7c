"""mpmath twin of references.group_query at 50 digits, following ORT's formulas literally.

One sequence at a time, one (token, head, key) at a time: the rotation pairs channel d with
d + R/2 (or 2i with 2i + 1) and reads cos/sin at row past + i of the tables, as
FusedQKRotaryEmbedding and PagedAttentionRotary do; a key is visible when it lies in
[start_offset, seq_causal_length) of InPlaceSoftmax's formula (seq_causal_length = past + i + 1;
with a window W >= 0 and seq_causal_length > W, start_offset = seq_causal_length - W, else 0),
which is not references.group_query.visible_keys' vectorised mask. The softmax is exact (no
running max): o = Σ e^s v / (Σ e^s + e^sink), the sink absent unless given.
"""

from __future__ import annotations

import mpmath
import numpy as np

from .softmax import DPS, to_mpf


def _rotate(x, cos_row, sin_row, interleaved: bool):
    """One head's vector x (mpf list) rotated with one table row (mpf lists of R/2)."""
    half = len(cos_row)
    out = list(x)
    for i in range(half):
        a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + half)
        out[a] = x[a] * cos_row[i] - x[b] * sin_row[i]
        out[b] = x[a] * sin_row[i] + x[b] * cos_row[i]
    return out


def attend_sequence(q, k_new, v_new, k_past, v_past, *, scale, cos=None, sin=None, interleaved=False,
                    local_window_size=-1, softcap=0.0, sink=None, bias=None) -> np.ndarray:
    """o [S, N, H] (object array of mpf) of one sequence: q [S, N, H], k_new/v_new [S, Nkv, H] (the
    new tokens, k_new unrotated), k_past/v_past [Nkv, P, H] (the cache, already rotated), tables
    cos/sin [rows, R/2] or None (no rotary), sink [N] or None, bias [S, N, P + S] or None (added
    to the (capped) score of token i, head h, key c)."""
    new, heads, head_size = np.shape(q)
    kv_heads, past = np.shape(k_past)[0], np.shape(k_past)[1]
    group = heads // kv_heads
    out = np.empty((new, heads, head_size), dtype=object)
    with mpmath.workdps(DPS):
        def row(a):
            return [to_mpf(x) for x in a]

        def rotated(x, position):
            if cos is None:
                return row(x)
            return _rotate(row(x), row(cos[position]), row(sin[position]), interleaved)

        keys = [[row(k_past[g, c]) for c in range(past)] for g in range(kv_heads)]
        values = [[row(v_past[g, c]) for c in range(past)] for g in range(kv_heads)]
        for i in range(new):
            for g in range(kv_heads):
                keys[g].append(rotated(k_new[i][g], past + i))
                values[g].append(row(v_new[i][g]))
        for i in range(new):
            causal_length = past + i + 1
            applies = 0 <= local_window_size < causal_length
            start = causal_length - local_window_size if applies else 0
            for h in range(heads):
                g = h // group
                query = rotated(q[i][h], past + i)
                scores = []
                for c in range(start, causal_length):
                    s = to_mpf(scale) * mpmath.fsum(a * b for a, b in zip(query, keys[g][c]))
                    if softcap > 0:
                        s = to_mpf(softcap) * mpmath.tanh(s / to_mpf(softcap))
                    if bias is not None:
                        s = s + to_mpf(bias[i][h][c])
                    scores.append((s, c))
                weights = [(mpmath.exp(s), c) for s, c in scores]
                denominator = mpmath.fsum(w for w, _ in weights)
                if sink is not None:
                    denominator += mpmath.exp(to_mpf(sink[h]))
                for d in range(head_size):  # a query that sees nothing (and has no sink) attends to 0
                    total = mpmath.fsum(w * values[g][c][d] for w, c in weights)
                    out[i, h, d] = total / denominator if denominator else mpmath.mpf(0)
    return out
