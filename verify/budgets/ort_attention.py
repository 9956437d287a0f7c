"""Error budgets of ONNX Runtime Web's attention (GroupQueryAttention, PagedAttention), end to end.

ORT's programs do part of their arithmetic in the model's type t (f16 or f32), not in f32 as
the toolkit's own kernels do (verify.budgets.attention), so the budgets here take t's unit
roundoff u_t where ORT rounds to t. What each path rounds where, read from the WGSL
onnxruntime-web 1.30 generates (docs/ort-attention.md §2 names the programs):

- `split` (FlashAttentionDecodeQKV / VxReduce and their paged variants, fewer than 32 new
  tokens): q is scaled by alpha in t (`q * q_element_t(alpha)`: alpha rounded to f32 on the
  host, then to t, and the product rounded to t), q.k is summed in f32 over the head, the tile
  softmax (max, exp, sum, division) in f32; the normalised probabilities are rounded to t and
  multiplied with v and summed in t over a 64-key tile, the tile's output is stored in t; the
  reduce weights l_t exp(m_t - M) / L are computed in f32, rounded to t, and the tiles summed
  in t.
- `probs` (AttentionProbs / InPlaceSoftmax / VxAttentionScore, which GroupQueryAttention takes
  with a local window): each q_d k_d product is rounded to t and summed in f32, the score
  `sum * alpha` is stored in t; the softmax runs in f32 and stores probabilities in t; P.V is
  multiplied and summed in t over every key.
- `flash` (FlashAttention, 32 new tokens or more): q scaled in t as for `split`, q.k and the
  online softmax in f32 (`qk_precision`), P.V over steps of 16 keys summed in t onto an output
  rescaled by each step's correction in t.
- `paged_prefill` (FlashAttentionPagedPrefill, PagedAttention's prefill of 32 new tokens or
  more in 32-token blocks): everything in t but the exponentials: q scaled in t, q.k summed in
  t (`var score = q_element_t(0)`), the running max, the step's sum of exponentials and the
  running denominator in t, each exp taken in f32 and rounded to t, the weights divided by the
  denominator in t, P.V over steps of 32 keys summed in t onto an output rescaled in t.

Conventions as in verify.budgets.attention: worst-case bounds valid for any summation order,
"r" an f32 operation rounded to either neighbour (2u), built-ins at the WGSL spec's accuracy,
second-order terms by inflating T to T(1+T), and any result below the smallest normal of its
type may be flushed to zero (for t = f16 that is 6.1e-5, so flushes are a visible term).
"""

from __future__ import annotations

import math

import numpy as np

from verify.budgets.attention import weight_errors
from verify.budgets.roundoff import gamma, smallest_normal
from verify.budgets.wgsl_accuracy import division_rel, exp2_rel, rounding_rel, tanh_abs

LOG2E = math.log2(math.e)
LN2 = math.log(2.0)
#: The programs' paths (module docstring); "split_tile" is one tile of `split` before the reduce.
PATHS = ("split", "split_tile", "probs", "flash", "paged_prefill")
#: Keys per tile of the split path, and per step of the flash and paged_prefill paths.
SPLIT_KEY_TILE = 64
FLASH_KEY_STEP = 16
PAGED_PREFILL_KEY_STEP = 32


def _second_order(total):
    return total * (1.0 + total)


def rotation_error(x, partner, cos, sin, dtype: str) -> np.ndarray:
    """Bound on |rotated - exact| of ORT's rotary in type `dtype` (FusedQKRotaryEmbedding,
    PagedAttentionRotary): out = x cos -/+ x_pair sin, two products and a sum, each rounded
    to `dtype`, from the stored x, x_pair and table values (the reference uses the same stored
    values). Higham (3.5): fl(a b + c d) errs by gamma_2(r_t)(|a b| + |c d|), which includes the
    final rounding to the stored type; a fused multiply-add only removes one of them. Each of
    the three operations may also flush a result below t's smallest normal: 3 N_t. Channels
    past rotary_dim are copied (pass cos = 1, sin = 0 there: the bound is then gamma_2|x|, a
    harmless over-estimate of the exact copy)."""
    r_t = rounding_rel(dtype)
    magnitude = np.abs(x) * np.abs(cos) + np.abs(partner) * np.abs(sin)
    return gamma(2, r_t) * magnitude + 3 * smallest_normal(dtype)


def score_errors(q, k, *, scale: float, dtype: str, path: str, e_q=None, e_k=None, bias=None):
    """Bound on |s_hat - s| (natural units) of every score s = scale q.k [S, N, L], for
    q [S, N, H] and k [Nkv, L, H] as the program reads them (rotated and stored in t).

    `split` and `flash`: alpha = fl_t(fl_f32(scale)) errs by r + r_t relative, q_d alpha rounds
    to t (r_t), the products and the sum of H terms run in f32: (gamma_{H+1}(r) + r + 2 r_t)
    scale sum_d |q_d k_d|. `probs`: each product rounds to t (r_t), H terms summed in f32, the
    sum times alpha (alpha rounded to f32 on the host, the product: two more f32 roundings),
    stored to t: (gamma_{H+3}(r) + r_t) scale sum_d |q_d k_d| + r_t |s|, and |s| <= scale
    sum_d |q_d k_d|, so (gamma_{H+3}(r) + 2 r_t) scale sum_d |q_d k_d|. `paged_prefill`: as `flash`
    with the H products and their sum in t (H/4 vec4 dots, each of 4 products and 3 sums, added
    onto the running score: no term passes more than H + 1 roundings): (gamma_{H+1}(r_t) + r +
    2 r_t) scale sum_d |q_d k_d|, and (2H + 2) N_t for its flushed products and sums; this holds
    while every partial sum stays below t's largest finite value (65504 in f16), which the
    program does not guard (docs/findings.md §18.4). With rotary, q and k err
    by e_q, e_k (rotation_error): scale sum_d (e_q |k| + |q| e_k + e_q e_k) more. Subnormal
    products and sums in f32 flush: (2H + 2) f32 smallest normals; in t (`probs` and the q scaling):
    H + 1 N_t times scale max|k| for the scaled q, one N_t for the stored score.

    With an attention bias b (`bias`, [S, N, L] as stored in t: the reference adds the same
    values), one more addition: `split` and `flash` add f32(b) to the f32 score
    (FlashAttentionDecodeQKV's `sum += f32(loadAttentionBias(...))`, FlashAttention's
    `qk + loadAttentionBias(...)` in qk_precision, f32), rounding to f32: r |s_hat + b|; `probs`
    adds it to the stored score in t (AttentionProbs' `output_value_t(sum * alpha) + bias`):
    r_t |s_hat + b|. |s_hat + b| <= |s| + delta + |b|, so the sum adds r' (|s| + |b|) + r' delta
    and one flush (N of that type), r' the adding type's rounding."""
    if path not in PATHS:
        raise ValueError(f"path must be one of {', '.join(PATHS)}, got {path!r}")
    r, r_t = rounding_rel("f32"), rounding_rel(dtype)
    q, k = np.abs(np.asarray(q, np.float64)), np.abs(np.asarray(k, np.float64))
    new, heads, head_size = q.shape
    kv_heads = k.shape[0]
    group = heads // kv_heads

    def dot(a, b):  # [S, N, H] x [Nkv, L, H] -> [S, N, L] by GQA's head mapping
        return (a.reshape(new, kv_heads, group, head_size) @ b.transpose(0, 2, 1)).reshape(new, heads, -1)

    abs_dot = dot(q, k)
    if path == "probs":
        rel = gamma(head_size + 3, r) + 2 * r_t
    elif path == "paged_prefill":
        rel = gamma(head_size + 1, r_t) + r + 2 * r_t
    else:
        rel = gamma(head_size + 1, r) + r + 2 * r_t
    delta = _second_order(rel) * scale * abs_dot
    if e_q is not None:
        delta = delta + scale * (dot(e_q, k) + dot(q, e_k) + dot(e_q, e_k))
    k_max = k.max(axis=(1, 2), initial=0.0)  # per KV head
    k_max = np.repeat(k_max, group)[None, :, None]
    delta = (delta + (2 * head_size + 2) * smallest_normal("f32")
             + (head_size + 1) * smallest_normal(dtype) * scale * k_max)
    if path == "probs":
        delta = delta + smallest_normal(dtype)
    if path == "paged_prefill":
        delta = delta + (2 * head_size + 2) * smallest_normal(dtype)
    if bias is not None:
        add = dtype if path == "probs" else "f32"
        r_add = rounding_rel(add)
        delta = (1 + r_add) * delta + r_add * (scale * abs_dot + np.abs(np.asarray(bias, np.float64))) \
            + smallest_normal(add)
    return delta


def softcap_errors(q, k, delta, *, scale: float, softcap: float):
    """Bound on the error of capped scores t·tanh(s/t) [S, N, L] (GroupQueryAttention's `softcap`
    t > 0), computed in f32 from scores s = scale q.k that err by delta (score_errors, of the same
    q [S, N, H] and k [Nkv, L, H]). The cap is 1-Lipschitz (|d/ds t tanh(s/t)| = sech^2 <= 1), so the scores'
    error passes through at most as delta; evaluating it costs the division s/t (division_rel,
    moving tanh's argument by division_rel |s/t|, so the result by at most division_rel |s|),
    tanh itself (wgsl_accuracy.tanh_abs at s/t, times t) and the product by t (r t |tanh|):
    delta + division_rel |s| + t (tanh_abs(s/t) + r |tanh(s/t)|). For t = 0 it is delta."""
    delta = np.asarray(delta, np.float64)
    if not softcap > 0:
        return delta
    s = np.abs(_scores(q, k, scale))
    y = s / softcap
    r = rounding_rel("f32")
    return delta + division_rel("f32") * s + softcap * (tanh_abs(y) + r * np.tanh(y))


def output_budget(v, logits2, delta, *, dtype: str, path: str) -> np.ndarray:
    """Budget [S, N, H] of ORT's attention output from values v [Nkv, L, H], the exact base-2
    logits2 [S, N, L] (-inf where masked) and the score errors delta [S, N, L] (natural units,
    score_errors).

    The softmax weights err as verify.budgets.attention.weight_errors derives (pi_j: exp of
    x_j = s_j - m, the online rescale chain, the sum, to second order), with delta in base-2
    units (delta log2 e). ORT calls exp, not exp2: WGSL gives both (3 + 2|x|) ULP, and
    |x_e| = ln2 |x_2| <= |x_2|, so the exp2 bound covers it. Then with A_d = sum_j p_j |v_jd|:

    - `split_tile` (one tile's normalised partial output, FlashAttentionDecodeQKV alone): one
      division, p rounded (r_t), p v (r_t), 64 products summed (gamma_63(r_t)), the store (r_t):
      e_pv = 3 r_t + gamma_63(r_t) + division_rel, 2·64 + 4 flushes in t.
    - `split`: two f32 divisions (by the tile sum l_t, by the total L) and the reduce weight
      l_t exp(m_t - M) (one more exp and product over the logit range R, covered by pi's chain
      term) cost 2 division_rel; in t, p rounds (r_t), p v rounds (r_t), a tile's 64 products
      are summed (gamma_63(r_t)), the tile output stored (r_t), its weight rounded (r_t), the
      product (r_t), and T tiles summed (gamma_T(r_t)): e_pv = 5 r_t + gamma_63(r_t) + gamma_T(r_t).
    - `probs`: one division; p stored in t (r_t), products (r_t), n terms summed in t
      (gamma_n(r_t)): e_pv = 2 r_t + gamma_n(r_t).
    - `flash`: one division; in t per step of 16 keys the products (r_t) and their sum
      (gamma_16(r_t)), and per step the running output's rescale and add (2 r_t each) over
      ceil(n/16) steps: e_pv = r_t + gamma_16(r_t) + 2 r_t ceil(n/16).

    - `paged_prefill`: the weights are prefill_weight_errors' (their softmax runs in t, and
      they are divided by the running denominator before P.V); in t per step of 32 keys the
      products (r_t) and their sum (gamma_32(r_t)), and per step the running output's rescale
      and add (2 r_t each): e_pv = r_t + gamma_32(r_t) + 2 r_t ceil(n/32). A weight may flush
      to zero (its exponential, or its quotient, below N_t) only where it is below 2 N_t: those
      keys add 2 N_t |v_jd| each.

    o_d errs by sum_j p_j |v_jd| pi_j + (e_pv + divisions) A_d, to second order, plus
    flushed subnormals: every product and sum in t of the P.V chain may lose up to N_t
    (2·64 + 2T for split, 2n for probs, 2n + 2 steps for flash and paged_prefill, + 4), and
    (2n + 4) in f32."""
    if path not in PATHS:
        raise ValueError(f"path must be one of {', '.join(PATHS)}, got {path!r}")
    r_t = rounding_rel(dtype)
    v = np.abs(np.asarray(v, np.float64))
    new, heads, length = logits2.shape
    kv_heads = v.shape[0]
    group = heads // kv_heads
    valid = np.isfinite(logits2)
    n = valid.sum(-1).astype(np.float64)  # [S, N]
    if path == "paged_prefill":
        p, pi = prefill_weight_errors(logits2, np.where(valid, delta, 0.0), n, dtype)
    else:
        w = weight_errors(logits2, np.where(valid, delta * LOG2E, 0.0), n[..., :1])
        p, pi = w.p, w.pi
    pg = p.reshape(new, kv_heads, group, length)
    spread = ((pg * pi.reshape(pg.shape)) @ v).reshape(new, heads, -1)
    a_d = (pg @ v).reshape(new, heads, -1)
    n_max = n.max(initial=1.0)
    if path == "split_tile":
        e_pv = 3 * r_t + gamma(SPLIT_KEY_TILE - 1, r_t) + division_rel("f32")
        flushes = 2 * SPLIT_KEY_TILE + 4
    elif path == "split":
        tiles = math.ceil(length / SPLIT_KEY_TILE)
        e_pv = 5 * r_t + gamma(SPLIT_KEY_TILE - 1, r_t) + gamma(tiles, r_t) + 2 * division_rel("f32")
        flushes = 2 * SPLIT_KEY_TILE + 2 * tiles + 4
    elif path == "probs":
        e_pv = 2 * r_t + gamma(n_max, r_t) + division_rel("f32")
        flushes = 2 * n_max + 4
    elif path == "paged_prefill":
        steps = math.ceil(n_max / PAGED_PREFILL_KEY_STEP)
        e_pv = r_t + gamma(PAGED_PREFILL_KEY_STEP, r_t) + 2 * r_t * steps
        flushes = 2 * n_max + 2 * steps + 4
        tiny = (valid & (p * (1.0 + pi) <= 2 * smallest_normal(dtype))).astype(np.float64)
        spread = spread + 2 * smallest_normal(dtype) * (tiny.reshape(pg.shape) @ v).reshape(new, heads, -1)
    else:
        steps = math.ceil(n_max / FLASH_KEY_STEP)
        e_pv = r_t + gamma(FLASH_KEY_STEP, r_t) + 2 * r_t * steps + division_rel("f32")
        flushes = 2 * n_max + 2 * steps + 4
    budget = spread + _second_order(e_pv) * a_d
    return budget + flushes * smallest_normal(dtype) + (2 * n_max + 4) * smallest_normal("f32")


def prefill_weight_errors(logits2, delta, n, dtype: str):
    """(p, pi) [S, N, L] of FlashAttentionPagedPrefill: the exact weights p_j and a bound pi_j on
    the relative error of the weight the program multiplies v_j by, from the exact base-2 logits2
    (-inf where masked), the score errors delta (natural units, score_errors' `paged_prefill`) and
    the visible keys per row n [S, N].

    Per step of 32 keys the program takes the step's max in t (exact: a max of stored scores),
    e_j = fl_t(exp(f32(s_j) - f32(m))) (the subtraction r|x_j|, exp's exp_rel(x_j), the rounding
    to t: kappa_j = exp_rel(x_j) + r|x_j| + r_t, x_j natural, exp2's bound at the base-2 argument
    covering exp's as in output_budget), the correction c = fl_t(exp(m_old - m_new)) (over the
    logit range R: exp_rel(R) + r R + r_t) and dleft = d c (r_t), d = dleft + Σ e_j (33 terms in t:
    gamma_33(r_t)), p_j = e_j / d and ratio = dleft / d (two divisions in t, division_rel(t) each).
    A weight of step s reaches the output as (e_j / d_s) Π_{s' > s} ratio_{s'}: the running
    denominators cancel between one step's quotient and the next's ratio, so each step adds only
    its own roundings, chain = ceil(n/32) (exp_rel(R) + r R + 2 r_t + gamma_33(r_t) + 2
    division_rel(t)); the denominator's terms add the weighted means of kappa and delta (as
    verify.budgets.attention.weight_errors), and the score errors shift the exponents by delta_j:
    pi_j = kappa_j + Σ p kappa + delta_j + Σ p delta + chain, to second order. Flushes (an e_j
    or a quotient below N_t) are output_budget's. Valid while the denominators stay inside
    division's accuracy range (below 2^14 = 16384 keys in f16)."""
    r, r_t = rounding_rel("f32"), rounding_rel(dtype)
    valid = np.isfinite(logits2)
    m = np.max(np.where(valid, logits2, -np.inf), axis=-1, initial=-np.inf)
    nonempty = np.isfinite(m)
    m_safe = np.where(nonempty, m, 0.0)
    x = np.where(valid, logits2 - m_safe[..., None], 0.0)  # base 2, <= 0
    w = np.where(valid, np.exp2(x), 0.0)
    p = w / np.where(nonempty, w.sum(-1), 1.0)[..., None]
    kappa = np.where(valid, exp2_rel(x) + LN2 * r * np.abs(x) + r_t, 0.0)
    logit_range = np.where(nonempty, m - np.min(np.where(valid, logits2, np.inf), axis=-1, initial=np.inf), 0.0)
    steps = np.ceil(np.maximum(n, 1.0) / PAGED_PREFILL_KEY_STEP)
    chain = steps * (exp2_rel(logit_range) + LN2 * r * logit_range + 2 * r_t
                     + gamma(PAGED_PREFILL_KEY_STEP + 1, r_t) + 2 * division_rel(dtype))
    delta = np.where(valid, delta, 0.0)
    pi = kappa + (p * kappa).sum(-1)[..., None] + delta + (p * delta).sum(-1)[..., None] + chain[..., None]
    return p, np.where(valid, _second_order(pi), 0.0)


def tile_state_budget(tiles, shape, dtype: str, *, scale: float, softcap: float = 0.0):
    """Budgets (o [B, N, S, P, H], m [B, N, S, P], l [B, N, S, P]) of FlashAttentionDecodeQKV's
    tile states. `tiles` lists (b, t, q [S, N, H], k [Nkv, L_t, H], v [Nkv, L_t, H], s [S, N, L_t])
    per written tile, s the exact natural scores (-inf where masked), capped where `softcap` > 0;
    delta_j then bounds the capped scores' errors, softcap_errors of the split path's.

    With delta_j the score errors of the split path (score_errors) and delta = max_j delta_j over
    the tile's visible keys: the maximum m_t is a max of computed scores, so it errs by delta. Each
    term of l_t = Σ exp(s_j - m_t) has its exponent off by at most 2 delta (both s_j and m_t err),
    the subtraction rounds (r|x_j|), exp errs by exp_rel(x_j); the sum of L_t terms in f32 adds
    gamma_{L_t}(r): l_t errs by l_t (expm1(2 delta) + max_j (exp_rel(x_j) + r|x_j|) + gamma_{L_t}(r))
    to second order, plus (2 L_t + 1) flushed f32 subnormals. o_t is output_budget's `split_tile`
    over the tile's keys alone. Tiles without a visible key, and tiles never written, are held
    bit for bit by the contract (budget 0 here)."""
    r = rounding_rel("f32")
    o_budget, m_budget, l_budget = np.zeros(shape), np.zeros(shape[:-1]), np.zeros(shape[:-1])
    for b, t, q, k, v, s in tiles:
        visible = np.isfinite(s)
        if not visible.any():
            continue
        delta = score_errors(q, k, scale=scale, dtype=dtype, path="split")
        if softcap > 0:
            delta = softcap_errors(q, k, delta, scale=scale, softcap=softcap)
        delta = np.where(visible, delta, 0.0)
        has = visible.any(-1)  # [S, N]
        d_max = delta.max(-1)
        top = np.where(has, s.max(-1, initial=-np.inf), 0.0)
        x = np.where(visible, s - top[..., None], 0.0)
        kappa = np.where(visible, exp2_rel(x * LOG2E) + r * np.abs(x), 0.0).max(-1)
        n_keys = visible.sum(-1)
        lsum = np.where(visible, np.exp(x), 0.0).sum(-1)
        rel = _second_order(np.expm1(2 * d_max) + kappa + gamma(n_keys, r))
        l_b = lsum * rel + (2 * n_keys + 1) * smallest_normal("f32")
        logits2 = np.where(visible, s * LOG2E, -np.inf)
        o_b = output_budget(v, logits2, delta, dtype=dtype, path="split_tile")
        o_budget[b, :, :, t] = np.where(has[..., None], o_b, 0.0).transpose(1, 0, 2)
        m_budget[b, :, :, t] = np.where(has, d_max, 0.0).T
        l_budget[b, :, :, t] = np.where(has, l_b, 0.0).T
    return o_budget, m_budget, l_budget


def _scores(q, k, scale: float) -> np.ndarray:
    """The exact uncapped scores scale·q.k [S, N, L] of q [S, N, H] and k [Nkv, L, H], by GQA's head mapping."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    new, heads, head_size = q.shape
    kv_heads = k.shape[0]
    return scale * (q.reshape(new, kv_heads, heads // kv_heads, head_size)
                    @ k.transpose(0, 2, 1)).reshape(new, heads, -1)


def reduce_budget(o, m, lsum, dtype: str) -> np.ndarray:
    """Budget [N, S, H] of FlashAttentionDecodeVxReduce merging T tile states of one sequence:
    o [N, S, T, H] (stored in t), m and lsum [N, S, T] (f32), all exact inputs.

    With M = max m_t, x_t = m_t - M <= 0 and w_t = l_t exp(x_t) / L, L = Σ_s l_s exp(x_s): the
    subtraction rounds (r|x_t|), exp errs by exp_rel(x_t), the product by l_t r; L's terms err by
    kappa_t = exp_rel(x_t) + r|x_t| + r and its sum adds gamma_T(r); the division division_rel;
    the weight is rounded to t (r_t): eps_t = kappa_t + max_s kappa_s + gamma_T(r) + division_rel + r_t.
    Each product o_t w_t rounds in t (r_t) and T terms are summed in t (gamma_T(r_t)):
    |err| <= Σ_t w_t |o_t| (eps_t + r_t + gamma_T(r_t)) to second order, plus a flushed subnormal
    of t per product and sum (2T + 2) and of f32 for each step of L (2T)."""
    r, r_t = rounding_rel("f32"), rounding_rel(dtype)
    o, m, lsum = (np.asarray(a, np.float64) for a in (o, m, lsum))
    tiles = m.shape[-1]
    top = m.max(-1, keepdims=True)
    x = m - top
    w = lsum * np.exp(x)
    w = w / w.sum(-1, keepdims=True)
    kappa = exp2_rel(x * LOG2E) + r * np.abs(x) + r
    eps = kappa + kappa.max(-1, keepdims=True) + gamma(tiles, r) + division_rel("f32") + r_t
    rel = _second_order(eps + r_t + gamma(tiles, r_t))
    spread = (w[..., None] * np.abs(o) * rel[..., None]).sum(-2)
    return spread + (2 * tiles + 2) * smallest_normal(dtype) + 2 * tiles * smallest_normal("f32")


def cache_budget(e_k, dtype: str) -> np.ndarray:
    """Budget of a new key row in the cache: the rotation's error (rotation_error), or 0 for a
    plain copy (pass e_k = 0): ORT copies keys and values bit for bit."""
    return np.asarray(e_k, np.float64)


__all__ = ["PATHS", "cache_budget", "output_budget", "prefill_weight_errors", "reduce_budget", "rotation_error",
           "score_errors", "softcap_errors", "tile_state_budget"]
