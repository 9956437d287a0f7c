"""ggml's FLASH_ATTN_EXT as ggml defines it (ggml.h `ggml_flash_attn_ext`, the CPU backend's
reference), in float64.

For batch b, query row i and head h (query head h reads KV head h // (N / Nkv): GQA), over keys c:

    s_c = scale · q_i · k_c                      (softcap t > 0: s_c = t · tanh(s_c / t))
    s_c = s_c + slope_h · mask[b, i, c]          (mask f16 as stored; -inf hides the key)
    o   = Σ_c exp(s_c) v_c / (Σ_c exp(s_c) + exp(sink_h))

The sink (`ggml_flash_attn_ext_add_sinks`) is one more logit per head with a zero value, absent
unless given; a row that sees no key (and has no sink) attends to 0, as ggml's CPU code does
(`S_inv = S == 0 ? 0 : 1/S`). ALiBi's slope_h is 1 without a max_bias; with one, ggml's host
passes m0, m1 and n_head_log2 (2^floor(log2 N)) and slope_h = m0^(h+1) for h < n_head_log2,
else m1^(2(h - n_head_log2) + 1) (`alibi_slopes`, from the values as passed). Shapes follow
ggml's dims reversed: q [B, S, N, Dk], k [B, Nkv, L, Dk], v [B, Nkv, L, Dv], mask [B or 1, S,
L], output [B, S, N, Dv] (ggml's result is permuted the same way: [Dv, N, S, B]). The softmax
is references.softmax's, through references.group_query.attend; logits come back in base 2.
"""

from __future__ import annotations

import numpy as np

from .group_query import attend


def alibi_slopes(heads: int, m0: float, m1: float, n_head_log2: float) -> np.ndarray:
    """slope_h [N] of ggml's ALiBi from the host's m0, m1 and n_head_log2, exactly in float64."""
    h = np.arange(heads, dtype=np.float64)
    m0, m1, n_head_log2 = float(m0), float(m1), float(n_head_log2)
    return np.where(h < n_head_log2, m0 ** (h + 1.0), m1 ** (2.0 * (h - n_head_log2) + 1.0))


def flash_attn_ext(q, k, v, mask=None, *, scale: float, softcap: float = 0.0, slopes=None, sinks=None):
    """(o [B, S, N, Dv], logits2 [B, S, N, L], or L + 1 with sinks, base 2, -inf where masked).

    `slopes` [N] multiply the mask (None: 1); `sinks` [N] are natural-base logits."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    batch, rows, heads, _ = q.shape
    length = k.shape[2]
    if heads % k.shape[1]:
        raise ValueError(f"{heads} query heads do not share {k.shape[1]} KV heads evenly")
    slopes = np.ones(heads) if slopes is None else np.asarray(slopes, np.float64)
    outputs, logits = [], []
    for b in range(batch):
        if mask is None:
            visible, bias = np.ones((rows, length), bool), None
        else:
            m = np.asarray(mask, np.float64)[b if len(mask) > 1 else 0]
            visible = m > -np.inf
            bias = slopes[None, :, None] * np.where(visible, m, 0.0)[:, None, :]
        o, logits2 = attend(q[b], k[b], v[b], visible, scale=scale, softcap=softcap, sink=sinks, bias=bias)
        outputs.append(o)
        logits.append(logits2)
    return np.stack(outputs), np.stack(logits)
