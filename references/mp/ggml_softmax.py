"""mpmath twin of references.ggml_softmax at 50 digits: ggml's SOFT_MAX one row and one element at
a time (the mask broadcast by index, ALiBi's slope m0^(h+1) or m1^(2(h - n_head_log2)+1) from the
float64 m0 and m1 passed, the sink a term of the denominator)."""

from __future__ import annotations

import mpmath
import numpy as np

from .softmax import DPS, to_mpf


def slope(h: int, heads: int, max_bias: float, alibi) -> mpmath.mpf:
    """ALiBi's slope of head h (1 without a max_bias), from alibi = (n_head_log2, m0, m1)."""
    if max_bias <= 0:
        return mpmath.mpf(1)
    n_head_log2, m0, m1 = (to_mpf(v) for v in alibi)
    if h < n_head_log2:
        return mpmath.power(m0, h + 1)
    return mpmath.power(m1, 2 * (h - n_head_log2) + 1)


def soft_max_ext(x, mask=None, sinks=None, *, scale: float, max_bias: float = 0.0, alibi=None) -> np.ndarray:
    """y (object array of mpf, x's shape); mpf NaN for a row of -inf logits without a sink."""
    x = np.asarray(x)
    batch, heads, rows, n = x.shape
    out = np.empty(x.shape, dtype=object)
    with mpmath.workdps(DPS):
        for b in range(batch):
            for h in range(heads):
                sl = slope(h, heads, max_bias, alibi)
                for i in range(rows):
                    s = []
                    for c in range(n):
                        v = to_mpf(scale) * to_mpf(x[b, h, i, c])
                        if mask is not None:
                            m = float(mask[b % mask.shape[0], h % mask.shape[1], i, c])
                            v = mpmath.mpf("-inf") if m == -np.inf else v + sl * to_mpf(m)
                        s.append(v)
                    terms = [mpmath.exp(v) if v != mpmath.mpf("-inf") else mpmath.mpf(0) for v in s]
                    total = mpmath.fsum(terms) + (mpmath.exp(to_mpf(sinks[h])) if sinks is not None else 0)
                    for c in range(n):
                        out[b, h, i, c] = terms[c] / total if total != 0 else mpmath.mpf("nan")
    return out
