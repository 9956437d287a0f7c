"""Error budget of llama.cpp ggml-webgpu's tiled prefill attention (flash_attn_tile.wgsl), from
the arithmetic its WGSL does, on top of the split-KV decode's (verify.budgets.llamacpp_attention).

The program runs the same online softmax as flash_attn_vec_split (f32 logits, `exp`, a rescale
of the running sum and output by exp(prev_max - max) per KV tile, a sink folded in last, 1/Σ and
a product), so score_errors and output_budget bound its f32 arithmetic. Three things differ, and
each adds its own term here:

- Q is multiplied by the (host's) scale before the dot product (`q_shmem = Q * scale`), not the
  dot product after: the same D + 1 roundings in another order (gamma_D + r, score_errors' bound),
  but a flushed q·scale loses FTZ |k_d| of one product: FTZ Σ_d |k_d| more (times the softcap t,
  which multiplies the argument's error by t·sech² <= t).
- K and V are staged in workgroup memory as f16 (`kv_shmem: array<f16>`, STAGING_OUT_TYPE f16),
  whatever their storage type. f16 K and V pass exactly; f32 ones are converted, each value to
  either f16 neighbour (r16 = 2^-10 relative) or, below f16's smallest normal (2^-14), to a
  subnormal or to 0 (WGSL may flush): |k̂ - k| <= r16 |k| + a16, a16 = 2^-14. The cases keep
  K and V within f16's range (WGSL leaves the conversion of larger values undefined).
- Each weight p = exp(s - max) is stored as f16 in `p_shmem` for the P·V product, while the
  running sum adds the f32 p: the numerator sees p̂ = f16(p), the denominator p.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.attention import FTZ_ABS, weight_errors
from verify.budgets.llamacpp_attention import LOG2E, output_budget, score_errors_and_dots, weighted_rows
from verify.budgets.roundoff import gamma, smallest_normal
from verify.budgets.wgsl_accuracy import rounding_rel

R = rounding_rel("f32")
#: One f32 -> f16 conversion, either neighbour, and what a value below f16's smallest normal may lose.
R16 = rounding_rel("f16")
A16 = smallest_normal("f16")


def tile_score_errors(q, k, mask=None, *, scale: float, softcap: float = 0.0, slopes=None, alibi=None,
                      kv_type: str = "f16"):
    """Bound on |s_hat - s| (natural units) of every logit [B, S, N, L] of flash_attn_tile: the
    split-KV decode's score_errors (D products and their sum, the scale, the softcap, ALiBi's pow,
    the mask's addition), plus:

    - q·scale flushed to 0 (`Q * params.scale` below f32's smallest normal): FTZ |k_d| per
      channel, FTZ Σ_d |k_d|, times t with a softcap t (the program takes t·tanh(x) of the product
      with the scale divided by t: an error e in x moves the logit by at most t·e);
    - with f32 K, its conversion to f16 in kv_shmem: the dot product sees k̂_d = k_d + e_d with
      |e_d| <= r16 |k_d| + a16, which moves the scaled dot product by scale Σ_d |q_d| (r16 |k_d| +
      a16), then the same roundings as the exact one: times (1 + gamma_D + 3r) (the sum's
      gamma_D on the larger terms, the scale's roundings, the mask's addition); the softcap's tanh
      is 1-Lipschitz, so this passes through it unamplified (scale = the op's, before the
      host's division by t).
    """
    delta, abs_dot = score_errors_and_dots(q, k, mask, scale=scale, softcap=softcap, slopes=slopes, alibi=alibi)
    qa = np.abs(np.asarray(q, np.float64))
    ka = np.abs(np.asarray(k, np.float64))
    heads, dk = qa.shape[2], qa.shape[3]
    k_sum = np.repeat(ka.sum(-1), heads // ka.shape[1], axis=1)[:, None, :, :]  # [B, 1, N, L]
    flushed = (1.0 + softcap) * FTZ_ABS * k_sum
    delta = delta + np.broadcast_to(flushed, delta.shape)
    if kv_type == "f32":
        staged = scale * (R16 * abs_dot + A16 * qa.sum(-1)[..., None])
        delta = delta + staged * (1.0 + gamma(dk, R) + 3 * R)
    return delta


def tile_output_budget(v, logits2, delta, *, v_type: str = "f16") -> np.ndarray:
    """Budget [..., Dv] of flash_attn_tile's outputs from values v [..., L, Dv] (a zero row for a
    sink), exact base-2 logits2 [..., L] (-inf where masked; the sink last) and the score errors
    delta [..., L] (tile_score_errors; 0 for the sink).

    output_budget bounds the f32 online softmax (the weights' errors pi_j, the P·V sum, 1/Σ and
    the product, flushes). On top of it:

    - the f16 weights of P·V: at its tile the program stores p'_j = exp(ŝ_j - m_t) (m_t the
      running max then) as f16: an error of at most r16 p'_j, or, below f16's smallest normal,
      of at most min(p'_j, a16) (a subnormal or a flush to 0). The later rescales c_j <= 1 and
      the final 1/Σ carry it into the output as they carry p'_j itself, and p'_j c_j / Σ is the
      computed final weight p̂_j <= p_j (1 + pi_j): the output moves by at most
      Σ_j |v_jd| (r16 p_j (1 + pi_j) + min(p_j (1 + pi_j), a16 (1 + max pi))), the last factor
      bounding c_j / Σ (Σ >= 1 less its own error: the largest logit's term is exp(0));
    - with f32 V, its conversion to f16 in kv_shmem: |v̂ - v| <= r16 |v| + a16 per value, weighed
      by p̂_j: Σ_j p_j (1 + pi_j) (r16 |v_jd| + a16).
    """
    v = np.abs(np.asarray(v, np.float64))
    logits2 = np.asarray(logits2, np.float64)
    valid = np.isfinite(logits2)
    n = valid.sum(-1).astype(np.float64)
    w = weight_errors(logits2, np.where(valid, np.asarray(delta, np.float64) * LOG2E, 0.0), n)
    base = output_budget(v, logits2, delta, weights=w)
    weight = np.where(valid, w.p * (1.0 + w.pi), 0.0)
    top = np.where(valid, w.pi, 0.0).max(-1, initial=0.0)[..., None]
    per_key = R16 * weight + np.where(valid, np.minimum(weight, A16 * (1.0 + top)), 0.0)
    budget = base + weighted_rows(per_key, v)
    if v_type == "f32":
        budget = budget + R16 * weighted_rows(weight, v) + A16 * weight.sum(-1)[..., None]
    return np.where(w.nonempty[..., None], budget, 0.0)


__all__ = ["tile_output_budget", "tile_score_errors"]
