"""ggml's SOFT_MAX (`ggml_soft_max_ext`) as its CPU backend defines the op
(`ggml_compute_forward_soft_max_f32`), in float64.

For the row of x at (batch i3, head h, row i1), with the mask row the op broadcasts onto it:

    s_c = scale · x_c + slope_h · mask[i3 % M3, h % M2, i1, c]      (no mask: s_c = scale · x_c)
    y_c = exp(s_c) / (Σ_k exp(s_k) + exp(sink_h))                   (the sink term only with sinks)

ALiBi: slope_h is 1 unless max_bias > 0; then the host's n_head_log2 = 2^floor(log2 H) (H heads,
x's ne[2]), m0 = 2^(-max_bias / n_head_log2), m1 = 2^(-max_bias / 2 / n_head_log2), and slope_h =
m0^(h + 1) for h < n_head_log2, else m1^(2(h - n_head_log2) + 1) (alibi_host and
references.ggml_attention.alibi_slopes, from m0 and m1 as passed). A -inf mask value hides its
column (y_c = 0). The sink is a per-head logit in the denominator only, as if its column were
there with no output of its own.

A row whose every logit is -inf: with a sink the sum is exp(sink)'s alone and every y_c is 0.
Without one ggml's CPU code asserts the sum positive (`assert(sum > 0.0)`, a debug build); a
release build computes max = -inf and exp(-inf - (-inf)) = NaN: the op defines no value there,
and the reference returns NaN for such a row, ggml's release arithmetic.

Shapes follow ggml's dims reversed: x [B, H, R, n] (ne03, ne02, ne01, ne00); mask [M3, M2, R', n]
with R' >= R rows (llama.cpp pads the KQ mask; rows past R are never read), B % M3 == 0 and
H % M2 == 0; sinks [H]. The result has x's shape.
"""

from __future__ import annotations

import math

import numpy as np

from .ggml_attention import alibi_slopes


def alibi_host(max_bias: float, heads: int) -> tuple[float, float, float]:
    """(n_head_log2, m0, m1) of ALiBi as ggml's host computes them, exactly (float64): n_head_log2 =
    2^floor(log2 heads), m0 = 2^(-max_bias / n_head_log2), m1 = 2^(-max_bias / 2 / n_head_log2)."""
    n_head_log2 = float(1 << int(math.floor(math.log2(heads))))
    return n_head_log2, 2.0 ** (-max_bias / n_head_log2), 2.0 ** (-(max_bias / 2.0) / n_head_log2)


def logits(x, mask=None, *, scale: float, max_bias: float = 0.0, alibi=None) -> np.ndarray:
    """s [B, H, R, n] = scale · x + slope_h · mask (broadcast as ggml does), -inf where masked.

    `alibi` = (n_head_log2, m0, m1) as the host passes them (None: alibi_host(max_bias, H))."""
    x = np.asarray(x, np.float64)
    batch, heads, rows, _ = x.shape
    s = scale * x
    if mask is None:
        return s
    m = np.asarray(mask, np.float64)
    if batch % m.shape[0] or heads % m.shape[1] or m.shape[2] < rows or m.shape[3] != x.shape[3]:
        raise ValueError(f"mask {m.shape} does not broadcast onto x {x.shape} as ggml_soft_max_ext requires")
    m = m[np.arange(batch) % m.shape[0]][:, np.arange(heads) % m.shape[1], :rows]
    slopes = np.ones(heads)
    if max_bias > 0:
        n_head_log2, m0, m1 = alibi if alibi is not None else alibi_host(max_bias, heads)
        slopes = alibi_slopes(heads, m0, m1, n_head_log2)
    bias = np.where(np.isneginf(m), -np.inf, slopes[None, :, None, None] * np.where(np.isneginf(m), 0.0, m))
    return s + bias


def soft_max_ext(x, mask=None, sinks=None, *, scale: float, max_bias: float = 0.0, alibi=None) -> np.ndarray:
    """y [B, H, R, n]: the softmax of each row of `logits(...)`, with each head's sink in the
    denominator; NaN for a row of -inf logits without a sink (see the module's docstring)."""
    s = logits(x, mask, scale=scale, max_bias=max_bias, alibi=alibi)
    top = s.max(axis=-1)
    if sinks is not None:
        top = np.maximum(top, np.asarray(sinks, np.float64)[None, :, None])
    with np.errstate(invalid="ignore"):
        w = np.exp(s - top[..., None])  # NaN throughout a row of -inf without a sink: ggml's -inf - -inf
        total = w.sum(axis=-1)
        if sinks is not None:
            total = total + np.exp(np.asarray(sinks, np.float64)[None, :, None] - top)
        return w / total[..., None]
