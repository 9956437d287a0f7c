"""mpmath twin of references.ggml_attention at 50 digits, following ggml's CPU code
(ggml_compute_forward_flash_attn_ext) literally.

One (batch, query row, head) at a time, one key at a time: a key whose mask value is -inf is
skipped (`if (mv == -INFINITY) continue`), the score is scale·q·k, capped t·tanh(s/t) with a
softcap t > 0, plus slope·mask; the softmax is exact (no running max), the sink one more term
of the denominator, and a row that sees nothing attends to 0. ALiBi's slope is computed from
m0, m1 and n_head_log2 as ggml's host passes them, by its own formula.
"""

from __future__ import annotations

import mpmath
import numpy as np

from .softmax import DPS, NEG_INF, to_mpf


def slope(h: int, m0, m1, n_head_log2):
    """ggml's ALiBi slope of head h: m0^(h+1) below n_head_log2, else m1^(2(h - n_head_log2) + 1)."""
    if h < n_head_log2:
        return mpmath.power(to_mpf(m0), h + 1)
    return mpmath.power(to_mpf(m1), 2 * (h - to_mpf(n_head_log2)) + 1)


def flash_attn_ext(q, k, v, mask=None, *, scale, softcap=0.0, alibi=None, sinks=None) -> np.ndarray:
    """o [B, S, N, Dv] (object array of mpf) for q [B, S, N, Dk], k [B, Nkv, L, Dk], v [B, Nkv, L,
    Dv], mask [B or 1, S, L] or None, `alibi` = (m0, m1, n_head_log2) or None, sinks [N] or None."""
    batch, rows, heads, _ = np.shape(q)
    kv_heads, length, dv = np.shape(k)[1], np.shape(k)[2], np.shape(v)[3]
    group = heads // kv_heads
    out = np.empty((batch, rows, heads, dv), dtype=object)
    with mpmath.workdps(DPS):
        for b in range(batch):
            for i in range(rows):
                for h in range(heads):
                    g = h // group
                    weights = []
                    for c in range(length):
                        mv = to_mpf(0)
                        if mask is not None:
                            mv = to_mpf(mask[b if len(mask) > 1 else 0][i][c])
                            if mv == NEG_INF:
                                continue
                            if alibi is not None:
                                mv = slope(h, *alibi) * mv
                        s = to_mpf(scale) * mpmath.fsum(to_mpf(a) * to_mpf(x) for a, x in zip(q[b][i][h], k[b][g][c]))
                        if softcap:
                            s = to_mpf(softcap) * mpmath.tanh(s / to_mpf(softcap))
                        weights.append((mpmath.exp(s + mv), c))
                    denominator = mpmath.fsum(w for w, _ in weights)
                    if sinks is not None:
                        denominator += mpmath.exp(to_mpf(sinks[h]))
                    for d in range(dv):
                        total = mpmath.fsum(w * to_mpf(v[b][g][c][d]) for w, c in weights)
                        out[b, i, h, d] = total / denominator if denominator else mpmath.mpf(0)
    return out
