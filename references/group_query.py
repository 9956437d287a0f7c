"""Group-query attention as ONNX Runtime's contrib ops define it (GroupQueryAttention, PagedAttention).

Both ops attend, for sequence b with past_b cached tokens and S_b new ones, each new token i
(at position p = past_b + i) over the keys c <= p of the sequence (causal), with a local window
W >= 0 only the last W of them, p - W < c <= p (the window onnxruntime-web 1.30's WebGPU programs
apply; onnxruntime's CPU code has attended W + 1 keys, p - W - 1 < c, in some releases), with
query head h reading KV head h // (N / Nkv):

    s_c = scale · q_i · k_c          (softcap t > 0: s_c = t · tanh(s_c / t))
    s_c = s_c + B[i, h, c]           (with an attention bias B, `attention_bias`)
    o   = Σ_c exp(s_c - m) v_c / Σ_c exp(s_c - m)

(onnxruntime/contrib_ops/cpu/bert/gqa_attention_base.h, ComputeAttentionProbs /
ComputeVxAttentionScore; the op schemas in core/graph/contrib_ops/bert_defs.cc.) An attention
sink (`head_sink`, or 0 with `smooth_softmax`) is one more logit per head in the denominator. With
`do_rotary`, q and the new keys are rotated before attending, with the cos/sin tables the
model is given ([max_len, rotary_dim / 2], row = position): non-interleaved pairs channel d with
d + rotary_dim/2 (NeoX), interleaved pairs 2i with 2i + 1 (GPT-J); channels past rotary_dim are
untouched. The cache then holds the rotated keys. This module is the exact math in float64,
from the tables' stored values; the softmax is references.softmax's (base 2, as everywhere in
`references`).
"""

from __future__ import annotations

import math

import numpy as np

from .decode import LOG2E
from .softmax import softmax_state, state_to_output


def rotate_with_tables(x, cos, sin, positions, interleaved: bool) -> np.ndarray:
    """x [..., D] rotated at integer `positions` (broadcast to x.shape[:-1]) by the tables cos/sin
    [max_len, R/2] (R = rotary_dim <= D), in float64.

    interleaved: out[2i] = x[2i] cos - x[2i+1] sin, out[2i+1] = x[2i] sin + x[2i+1] cos (GPT-J);
    else out[d] = x[d] cos - x[d+R/2] sin, out[d+R/2] = x[d] sin + x[d+R/2] cos (NeoX), for i, d < R/2.
    """
    x = np.asarray(x, np.float64)
    cos, sin = np.asarray(cos, np.float64), np.asarray(sin, np.float64)
    half = cos.shape[-1]
    if 2 * half > x.shape[-1]:
        raise ValueError(f"the tables rotate {2 * half} channels, more than the head's {x.shape[-1]}")
    pos = np.broadcast_to(np.asarray(positions), x.shape[:-1])
    c, s = cos[pos], sin[pos]
    out = x.copy()
    if interleaved:
        even, odd = x[..., 0:2 * half:2], x[..., 1:2 * half:2]
        out[..., 0:2 * half:2] = even * c - odd * s
        out[..., 1:2 * half:2] = even * s + odd * c
    else:
        lower, upper = x[..., :half], x[..., half:2 * half]
        out[..., :half] = lower * c - upper * s
        out[..., half:2 * half] = lower * s + upper * c
    return out


def visible_keys(total: int, new: int, local_window_size: int = -1) -> np.ndarray:
    """visible[i, c] (bool [new, total]): may new token i (at position total - new + i) attend key c."""
    if new > total:
        raise ValueError(f"{new} new tokens do not fit a sequence of {total}")
    position = total - new + np.arange(new)[:, None]
    key = np.arange(total)[None, :]
    visible = key <= position
    if local_window_size >= 0:
        visible &= key > position - local_window_size
    return visible


def softcapped(scores, softcap: float):
    """The scores as GroupQueryAttention's `softcap` t caps them: t · tanh(s / t), or s for t = 0."""
    scores = np.asarray(scores, np.float64)
    return softcap * np.tanh(scores / softcap) if softcap > 0 else scores


def attend(q, k, v, visible, *, scale: float, softcap: float = 0.0, sink=None, bias=None):
    """(o [S, N, H], logits2 [S, N, L]) of new tokens q [S, N, H] over one sequence's keys and
    values k, v [Nkv, L, H] (already rotated) under visible [S, L]; logits2 are base-2 (-inf where
    masked), o as references.softmax.state_to_output gives it.

    `bias` [S, N, L] (natural base, broadcastable) is added to every score (after the softcap,
    if any): the ops' `attention_bias`. Masked keys stay masked whatever their bias.

    `sink` [N] (natural base) is each head's attention sink (GroupQueryAttention's head_sink; 0
    for smooth_softmax): one more logit in the softmax's denominator with a zero value, o =
    Σ_c exp(s_c) v_c / (Σ_c exp(s_c) + exp(sink)). logits2 then has it as a last column, L + 1."""
    if not math.isfinite(scale):
        raise ValueError(f"scale must be finite, got {scale!r}")
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    new, heads, head_size = q.shape
    kv_heads, length = k.shape[0], k.shape[1]
    group = heads // kv_heads
    # Per KV head, the rows of every new token and query head that read it: [Nkv, S·G, ...], so
    # each product below is one matrix product per KV head.
    q_by_kv = q.reshape(new, kv_heads, group, head_size).transpose(1, 0, 2, 3).reshape(kv_heads, new * group, head_size)
    scores = scale * (q_by_kv @ k.transpose(0, 2, 1))  # [Nkv, S·G, L]
    scores = softcapped(scores, softcap).reshape(kv_heads, new, group, length)
    if bias is not None:
        bias = np.broadcast_to(np.asarray(bias, np.float64), (new, heads, length))
        scores = scores + bias.reshape(new, kv_heads, group, length).transpose(1, 0, 2, 3)
    logits2 = np.where(visible[None, :, None, :], scores * LOG2E, -np.inf)  # [Nkv, S, G, L]
    if sink is not None:
        sink2 = np.broadcast_to(np.asarray(sink, np.float64).reshape(kv_heads, 1, group, 1) * LOG2E,
                                (kv_heads, new, group, 1))
        logits2 = np.concatenate([logits2, sink2], axis=-1)
        v = np.concatenate([v, np.zeros((kv_heads, 1, v.shape[-1]))], axis=1)
    columns = logits2.shape[-1]
    state = softmax_state(logits2.reshape(kv_heads, new * group, columns), v[:, None], base=2)
    o, _ = state_to_output(*state, base=2)
    o = o.reshape(kv_heads, new, group, -1).transpose(1, 0, 2, 3)
    return o.reshape(new, heads, -1), logits2.transpose(1, 0, 2, 3).reshape(new, heads, columns)
