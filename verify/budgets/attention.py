"""Error budgets of attention kernels: state merge, paged decode (rotary embedding: verify.budgets.rope).

Every budget is an a-priori worst-case bound (Higham 2002 §3) that holds for any summation
order, since WebGPU backends may reassociate. Inputs are the exact stored values, so the
budget covers only the kernel's arithmetic, done in f32 ("r" below is the relative error of
one f32 operation rounded to either neighbour, 2u). Built-ins use the WGSL spec's accuracy
(verify.budgets.wgsl_accuracy). Second-order products of relative errors are covered by
inflating a total relative error T to T(1+T). WGSL also lets any f32 intermediate below the
smallest normal be flushed to zero: each operation that can produce one adds FTZ_ABS absolute.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from verify.budgets.rope import rope_angle_rel, rope_error
from verify.budgets.roundoff import (
    faithful_rounding_bound,
    gamma,
    smallest_normal,
    ulp,
    unit_roundoff,
)
from verify.budgets.wgsl_accuracy import division_rel, exp2_rel, log2_abs, rounding_rel

LN2 = math.log(2.0)
#: Accumulation and built-ins run in f32 in every attention kernel we check.
ACC = "f32"
#: Absolute error of one f32 operation whose result may be flushed to zero.
FTZ_ABS = smallest_normal(ACC)


def _second_order(total):
    return total * (1.0 + total)


# -- merge of two (o, lse) states --------------------------------------------------------------
def merge_budget(v_a, lse_a, v_b, lse_b, v_ref, lse_ref, v_dtype: str):
    """Budgets (for v, for lse) of merging two base-2 states in f32 (docs/budgets.md §6.2).

    M = max(lse_a, lse_b); x_i = lse_i - M <= 0 costs one subtraction (ln2*r*|x_i| relative on
    the weight 2^x_i) and exp2 (exp2_rel(x_i)). d = w_a + w_b adds r. lse = M + log2(d): log2
    errs by log2_abs(d) plus -log2(1 - rel_d) from d's relative error, the add by r|lse|.
    v = (w_a v_a + w_b v_b)/d: each term's weight error, d's, a division and two roundings,
    then the store to v's dtype; two products, a sum and a division may each flush a subnormal.
    An empty state (lse = -inf) has weight exactly 0.
    """
    r = rounding_rel(ACC)
    lse_a, lse_b = np.asarray(lse_a, np.float64), np.asarray(lse_b, np.float64)
    m = np.maximum(lse_a, lse_b)
    finite = np.isfinite(m)
    m_safe = np.where(finite, m, 0.0)
    with np.errstate(invalid="ignore"):
        x_a = np.where(np.isfinite(lse_a), lse_a - m_safe, -np.inf)
        x_b = np.where(np.isfinite(lse_b), lse_b - m_safe, -np.inf)
    w_a, w_b = np.exp2(x_a), np.exp2(x_b)
    eps_a = np.where(w_a > 0,
                     exp2_rel(np.where(w_a > 0, x_a, 0.0)) + LN2 * r * np.abs(np.where(w_a > 0, x_a, 0.0)), 0.0)
    eps_b = np.where(w_b > 0,
                     exp2_rel(np.where(w_b > 0, x_b, 0.0)) + LN2 * r * np.abs(np.where(w_b > 0, x_b, 0.0)), 0.0)
    d = np.where(finite, w_a + w_b, 1.0)
    rel_d = _second_order(r + np.maximum(eps_a, eps_b))
    lse_budget = -np.log2(1.0 - rel_d) + log2_abs(d) + r * np.abs(np.where(finite, lse_ref, 0.0))
    term = division_rel(ACC) + 3 * r + rel_d
    pa, pb = (w_a / d)[..., None], (w_b / d)[..., None]
    spread = pa * np.abs(v_a) * _second_order(eps_a[..., None] + term[..., None]) + \
        pb * np.abs(v_b) * _second_order(eps_b[..., None] + term[..., None])
    v_budget = spread + 4 * FTZ_ABS + faithful_rounding_bound(v_ref, v_dtype)
    return np.where(finite[..., None], v_budget, 0.0), np.where(finite, lse_budget, 0.0)


# -- paged decode --------------------------------------------------------------------------------
def _rotated_input_error(rotated, angles, angle_rel, qkv_dtype):
    """Error of a kernel's rotated-and-stored q or k against the reference's (also stored).

    The kernel's f32 rope errs by rope_error of the unrotated input; a rotation keeps each
    pair's norm, so |x_d| + |x_pair| <= sqrt(2)·(|y_d| + |y_pair|) in terms of the rotated y.
    Its store to qkv_dtype may then round to the other neighbour than the reference did: one
    more ulp of the stored value.
    """
    return math.sqrt(2.0) * rope_error(rotated, angles, angle_rel) + ulp(rotated, qkv_dtype)


def decode_budget(result, qkv_dtype: str, *, sm_scale: float, rotary_mode: int = 0, rope_theta: float = 1e4,
                  rope_scale: float = 1.0, q_positions=None, k_positions=None, llama3=None):
    """Budgets (for o [B,Hq,D], for lse2 [B,Hq]) of a paged decode kernel, f32 math.

    With rotary_mode 1, q_positions [B] and k_positions [B, Lmax] give each rotated row's position,
    and llama3 (references.rope.Llama3Scaling or None) the frequency scaling compiled into the kernel;
    the rotated inputs err by verify.budgets.rope's bound (NeoX pairing, Llama 3's scaled frequency
    with either branch legal at a band edge, an angle error growing with the position).

    `result` is references.decode.DecodeResult. Per (b, h), with n attended rows, exact base-2
    logits s_j, x_j = s_j - max s, p_j the softmax weights (docs/budgets.md §6.3):

    - logit error delta_j = (gamma_{D+3}(r) + u)·c·Σ_d |q_d k_jd| with c = sm_scale·log2(e)
      (D products and adds, two scalings, the rounded log2(e) constant), plus, with inline
      rotary, c·Σ_d (e_q,d |k_jd| + |q_d| e_k,jd + e_q,d e_k,jd) for the rotated inputs' errors.
    - weight of row j: exp2 of x_j (kappa_j = exp2_rel(x_j) + ln2·r·|x_j|), and the chain of
      online-softmax rescales its accumulator goes through: at most one per row absorbed and
      one per merge of partial states, so N_e <= 2n events whose exponents telescope to at
      most the logit range R: eps_chain = 2u(3 N_e + 2R) + N_e·r + ln2·r·R.
    - normalised weight error pi_j = kappa_j + Σ p kappa + ln2(delta_j + Σ p delta) + 2 eps_chain + gamma_n(r).
    - o_d: Σ_j p_j|v_jd|(pi_j + gamma_n(r) + r) + division_rel·A_d, A_d = Σ_j p_j|v_jd|, plus
      (2n + 4) flushed subnormals (products and sums of the accumulation, the division), then
      the store to qkv_dtype (faithful rounding).
    - lse = m + log2(d): Σ p delta + (-log2(1 - eps_d)) + log2_abs(d) + r|lse|, with
      eps_d = Σ p kappa + eps_chain + gamma_n(r).
    Empty contexts have o = 0 and lse = -inf exactly (budget 0; the check demands bit equality).
    """
    r = rounding_rel(ACC)
    u = unit_roundoff(ACC)
    q, k, v = result.q, result.k, result.v
    batch, qo_heads, head_dim = q.shape
    kv_heads = k.shape[1]
    group = qo_heads // kv_heads
    c = sm_scale * math.log2(math.e)
    n = result.length.astype(np.float64)[:, None]  # [B, 1]
    logits = result.logits2  # [B, Hq, L], -inf past length
    valid = np.isfinite(logits)

    qg = q.reshape(batch, kv_heads, group, head_dim)
    abs_dot = np.abs(qg) @ np.abs(k).transpose(0, 1, 3, 2)  # [B, Hkv, G, L]
    delta = (gamma(head_dim + 3, r) + u) * c * abs_dot
    if rotary_mode == 1:
        angle_rel = rope_angle_rel(head_dim, rope_theta, llama3)
        from verify.references.rope import rope_frequencies

        freq = rope_frequencies(head_dim, rope_theta, llama3) * rope_scale
        e_q = _rotated_input_error(q, q_positions[:, None, None] * freq, angle_rel, qkv_dtype)
        e_k = _rotated_input_error(k, k_positions[:, None, :, None] * freq, angle_rel, qkv_dtype)
        e_qg = e_q.reshape(batch, kv_heads, group, head_dim)
        kt = np.abs(k).transpose(0, 1, 3, 2)
        e_kt = e_k.transpose(0, 1, 3, 2)
        delta = delta + c * (e_qg @ kt + np.abs(qg) @ e_kt + e_qg @ e_kt)
    delta = delta.reshape(batch, qo_heads, -1)
    delta = np.where(valid, delta, 0.0)

    w = weight_errors(logits, delta, n)
    p, pi, nonempty = w.p, w.pi, w.nonempty

    vg = np.abs(v)  # [B, Hkv, L, D]
    pg = p.reshape(batch, kv_heads, group, -1)
    spread = ((pg * pi.reshape(pg.shape)) @ vg).reshape(batch, qo_heads, head_dim)
    a_d = (pg @ vg).reshape(batch, qo_heads, head_dim)
    o_budget = spread + division_rel(ACC) * a_d + (2 * n[..., None] + 4) * FTZ_ABS + \
        faithful_rounding_bound(result.o, qkv_dtype)

    eps_d = _second_order(w.mean_kappa + w.eps_chain + w.gamma_n)
    lse_budget = w.mean_delta + (-np.log2(1.0 - np.minimum(eps_d, 0.5))) + log2_abs(w.d) + \
        r * np.abs(np.where(nonempty, result.lse2, 0.0))
    return np.where(nonempty[..., None], o_budget, 0.0), np.where(nonempty, lse_budget, 0.0)


@dataclass(frozen=True)
class WeightErrors:
    """decode_budget's softmax terms per (sequence, query head) [B, Hq] and row [B, Hq, L]:
    p the normalised weights, pi their relative error (with gamma_n(r) + r added and to second
    order), and the pieces the lse budget reads; rows past a sequence's length have weight 0."""

    p: np.ndarray
    pi: np.ndarray
    nonempty: np.ndarray
    d: np.ndarray
    mean_kappa: np.ndarray
    mean_delta: np.ndarray
    eps_chain: np.ndarray
    gamma_n: np.ndarray


def per_kv_head(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a [..., rows, Hkv, G, K] @ b [..., Hkv, K, N] -> [..., rows, Hkv, G, N]: the products of every
    query row and head of a GQA group with its kv head's matrix, as one [rows G, K] @ [K, N] product
    per kv head (and leading index). The same sums as numpy's broadcast `a @ b[..., None, :, :, :]`,
    which makes rows x Hkv products of G rows each and reads b once per row: four times slower at
    prefill's sizes."""
    *lead, rows, kv_heads, group, inner = a.shape
    by_kv_head = np.swapaxes(a, -4, -3).reshape(*lead, kv_heads, rows * group, inner)
    product = by_kv_head @ b
    return np.swapaxes(product.reshape(*lead, kv_heads, rows, group, product.shape[-1]), -4, -3)


def weight_errors(logits: np.ndarray, delta: np.ndarray, n: np.ndarray) -> WeightErrors:
    """The weight terms of decode_budget (see its docstring) from base-2 logits [B, Hq, L]
    (-inf past the length), their errors delta (0 there) and the lengths n [B, 1]."""
    r = rounding_rel(ACC)
    u = unit_roundoff(ACC)
    valid = np.isfinite(logits)
    m = np.max(np.where(valid, logits, -np.inf), axis=-1, initial=-np.inf)  # [B, Hq]
    nonempty = np.isfinite(m)
    m_safe = np.where(nonempty, m, 0.0)
    x = np.where(valid, logits - m_safe[..., None], 0.0)
    w = np.where(valid, np.exp2(x), 0.0)
    d = np.where(nonempty, w.sum(-1), 1.0)
    p = w / d[..., None]
    kappa = np.where(valid, exp2_rel(x) + LN2 * r * np.abs(x), 0.0)
    logit_range = np.where(nonempty, m - np.min(np.where(valid, logits, np.inf), axis=-1, initial=np.inf), 0.0)
    events = 2.0 * n
    eps_chain = 2 * u * (3 * events + 2 * logit_range) + events * r + LN2 * r * logit_range
    gamma_n = gamma(n, r)
    mean_kappa = (p * kappa).sum(-1)
    mean_delta = (p * delta).sum(-1)
    pi = kappa + mean_kappa[..., None] + LN2 * (delta + mean_delta[..., None]) + (2 * eps_chain + gamma_n)[..., None]
    pi = _second_order(pi + (gamma_n + r)[..., None])
    return WeightErrors(p, pi, nonempty, d, mean_kappa, mean_delta, eps_chain, gamma_n)


def merged_parts_budget(o_a, lse_a, budget_o_a, budget_lse_a, o_b, lse_b, budget_o_b, budget_lse_b):
    """How far merge(o_a, lse_a, o_b, lse_b) can move when its inputs err by the given budgets.

    lse = log2(2^lse_a + 2^lse_b) is monotone and shifts with its inputs, so it errs by at most
    max(delta_a, delta_b). o = o_b + p_a (o_a - o_b) with p_a = 1/(1 + 2^(lse_b - lse_a)):
    dp_a/d(lse_a - lse_b) = ln2 p_a p_b <= ln2/4, so |dp_a| <= ln2 (delta_a + delta_b) min(1/4,
    p_a p_b 2^(delta_a + delta_b)); a perturbed weight is at most p·2^(delta_a + delta_b).
    Inputs are exact references (o, lse) with per-element budgets; -inf LSEs have weight 0.
    """
    lse_a, lse_b = np.asarray(lse_a, np.float64), np.asarray(lse_b, np.float64)
    m = np.maximum(lse_a, lse_b)
    finite = np.isfinite(m)
    m_safe = np.where(finite, m, 0.0)
    with np.errstate(invalid="ignore"):
        w_a = np.where(np.isfinite(lse_a), np.exp2(lse_a - m_safe), 0.0)
        w_b = np.where(np.isfinite(lse_b), np.exp2(lse_b - m_safe), 0.0)
    total = np.where(finite, w_a + w_b, 1.0)
    p_a, p_b = w_a / total, w_b / total
    delta = np.where(np.isfinite(lse_a), budget_lse_a, 0.0) + np.where(np.isfinite(lse_b), budget_lse_b, 0.0)
    growth = np.exp2(np.minimum(delta, 1000.0))  # finite, so p·growth with p = 0 stays 0
    dp = LN2 * delta * np.minimum(0.25, p_a * p_b * growth)
    o_budget = (np.minimum(1.0, p_a * growth)[..., None] * budget_o_a
                + np.minimum(1.0, p_b * growth)[..., None] * budget_o_b
                + dp[..., None] * np.abs(np.asarray(o_a, np.float64) - np.asarray(o_b, np.float64)))
    lse_budget = np.maximum(np.where(np.isfinite(lse_a), budget_lse_a, 0.0),
                            np.where(np.isfinite(lse_b), budget_lse_b, 0.0))
    return np.where(finite[..., None], o_budget, 0.0), np.where(finite, lse_budget, 0.0)
