"""Error budgets of llama.cpp ggml-webgpu's split-KV decode attention (flash_attn_vec_split and
flash_attn_vec_reduce), from the arithmetic its WGSL does.

Everything runs in f32: Q is f32, K and V (f16 or f32) convert to f32 exactly, the mask (f16)
too. Per query row and key j, flash_attn_vec_split computes the dot product q·k_j (vec4 dots
summed by lanes, then over D_SPLIT lanes by subgroupShuffleDown: D products and their sum in
some order), multiplies it by the host's f32 scale (with a softcap t the host passes
f32(scale / t) and the program takes t·tanh of the product), adds slope·mask (slope = 1, or
ALiBi's `pow(m0, h + 1)` / `pow(m1, 2(h - n_head_log2) + 1)` in f32), and runs an online softmax
over KV tiles with `exp` (natural base): per tile the max, exp(s_j - max), their subgroupAdd, and
a rescale of the running sum and output by exp(prev_max - max); P·V sums p_j v_j onto the
running output. A sink is one more logit (split 0 only). With one split the program writes
o / Σ (1/Σ, then the product); with several it writes each split's unnormalised o, Σ and max,
and flash_attn_vec_reduce merges them: M = max m_i, w_i = exp(m_i - M), o = Σ o_i w_i · (1/Σ s_i w_i).

Conventions as verify.budgets.attention's: worst-case bounds for any summation order, "r" an
f32 operation rounded to either neighbour (2u), built-ins at the WGSL spec's accuracy
(verify.budgets.wgsl_accuracy; WGSL's exp has exp2's (3 + 2|x|) ULP at its own argument, and
for x = ln2·x₂ that is at most exp2's bound at the base-2 argument x₂), second order by
inflating T to T(1 + T), and a flushed subnormal (FTZ, f32's smallest normal) per operation that
may produce one.
"""

from __future__ import annotations

import math

import numpy as np

from verify.budgets.attention import FTZ_ABS, WeightErrors, per_kv_head, weight_errors
from verify.budgets.roundoff import exp_libm, gamma, unit_roundoff
from verify.budgets.wgsl_accuracy import division_rel, exp2_rel, log2_abs, rounding_rel, tanh_abs

LOG2E = math.log2(math.e)
LN2 = math.log(2.0)
R = rounding_rel("f32")
#: One float64 operation (verify's own evaluation of a derived quantity: o_i / s_i, m_i + ln s_i).
U64 = unit_roundoff("f64")


def _second_order(total):
    return total * (1.0 + total)


def grouped_dots(q, k) -> np.ndarray:
    """Σ_d q[b, s, n, d] k[b, n // G, l, d] for q [B, S, N, Dk] and k [B, Nkv, L, Dk] (G = N / Nkv
    query heads per KV head): [B, S, N, L]. One matrix product per (batch, KV head), of every row
    and query head that reads it, rather than a product per row and head: the same sums of the same
    products (their order is the library's either way)."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    batch, rows, heads, dk = q.shape
    kv_heads = k.shape[1]
    grouped = q.reshape(batch, rows, kv_heads, heads // kv_heads, dk)
    return per_kv_head(grouped, k.transpose(0, 1, 3, 2)).reshape(batch, rows, heads, k.shape[2])


def weighted_rows(p, v) -> np.ndarray:
    """Σ_j p[..., j] v[..., j, :] for weights p [..., L] and values v [..., L, Dv] that broadcast
    against them: [..., Dv]. Where v is shared along axes of p (size 1 there: one KV head's values
    for every query row), one matrix product per distinct v, whose rows are every p sharing it,
    rather than one vector product per row (numpy's broadcast matmul, reading v again each time)."""
    p, v = np.asarray(p, np.float64), np.asarray(v, np.float64)
    lead = p.shape[:-1]
    v = v.reshape((1,) * (len(lead) - (v.ndim - 2)) + v.shape)
    shared = [i for i, (a, b) in enumerate(zip(lead, v.shape[:-2])) if b == 1 and a > 1]
    if not shared:
        return np.matmul(p[..., None, :], v)[..., 0, :]
    own = [i for i in range(len(lead)) if i not in shared]
    order = own + shared
    rows = p.transpose(*order, len(lead))
    own_shape = tuple(lead[i] for i in own)
    rows = rows.reshape(own_shape + (-1, p.shape[-1]))
    values = v.transpose(*order, len(lead), len(lead) + 1)
    values = values.reshape(tuple(v.shape[i] for i in own) + v.shape[-2:])
    out = np.matmul(rows, values)  # [own..., shared rows, Dv]
    out = out.reshape(own_shape + tuple(lead[i] for i in shared) + (v.shape[-1],))
    return out.transpose(*np.argsort(order), len(lead))


def pow_rel(x, y):
    """Relative error bound of WGSL pow(x, y), x > 0: the spec's accuracy is inherited from
    exp2(y · log2(x)). log2(x) errs by log2_abs(x) (absolute), the product y·log2(x) rounds (r
    relative), so the argument z of exp2 errs by |y| log2_abs(x) + r|z|, which moves exp2(z) by a
    factor 2^(that) - 1 relative; exp2 itself adds exp2_rel(z): to second order."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    z = y * np.log2(x)
    moved = np.expm1(LN2 * (np.abs(y) * log2_abs(x) + R * np.abs(z)))
    return _second_order(exp2_rel(z) + moved)


def score_errors(q, k, mask=None, *, scale: float, softcap: float = 0.0, slopes=None, alibi=None):
    """Bound on |s_hat - s| (natural units) of every logit s [B, S, N, L] of q [B, S, N, Dk] and
    k [B, Nkv, L, Dk] (the stored values), mask [B or 1, S, L] (f16 values, -inf masked) or None.

    - q·k: Dk products and their sum in any order: gamma_Dk(r) Σ_d |q_d k_d|.
    - times the f32 scale the host passes: one rounding (r |y|, y = scale q·k); with a softcap t
      the host's f32(scale / t) is one more (r |y|).
    - the softcap t·tanh(x / t), x = scale q·k: the argument's error e passes through scaled by
      tanh's slope between the two arguments, at most sech²(max(|x|/t - e/t, 0)) (small where
      the cap saturates), and never more than 2t (both values lie in [-t, t]); tanh adds
      t·tanh_abs(x / t), at most 2t (tanh_abs, inherited from exp, grows without bound with |x|,
      while a tanh is in [-1, 1]), the product by t r·t|tanh(x / t)|.
    - the mask: with ALiBi (`alibi` = (m0, m1, n_head_log2) as passed, `slopes` their exact
      slopes) slope·mask errs by (pow_rel + r)|slope·mask| (pow's error, the product); adding it
      rounds: r |ŝ + slope·mask| <= r (|s| + |slope·mask|) to first order.
    - flushes: Dk products and Dk sums, the scaling, tanh's two exps, the cap's product, the
      mask's product and sum may each flush a subnormal: (2 Dk + 6) FTZ.
    """
    return score_errors_and_dots(q, k, mask, scale=scale, softcap=softcap, slopes=slopes, alibi=alibi)[0]


def score_errors_and_dots(q, k, mask=None, *, scale: float, softcap: float = 0.0, slopes=None, alibi=None):
    """(score_errors, Σ_d |q_d| |k_d| [B, S, N, L]): the bound and the products it is made of,
    which the tile budget reads again (llamacpp_attention_tile.tile_score_errors)."""
    q_signed, k_signed = q, k
    q, k = np.abs(np.asarray(q, np.float64)), np.abs(np.asarray(k, np.float64))
    batch, rows, heads, dk = q.shape
    abs_dot = grouped_dots(q, k)
    y = scale * abs_dot
    rel = gamma(dk, R) + R + (R if softcap else 0.0)
    delta = _second_order(rel) * y
    s = y
    if softcap:
        qs = np.asarray(q_signed, np.float64)
        exact = scale * grouped_dots(qs, k_signed)
        arg = np.abs(exact) / softcap
        e = np.exp(-2.0 * np.maximum(arg - delta / softcap, 0.0))
        slope = 4.0 * e / (1.0 + e) ** 2  # sech², without cosh's overflow
        delta = np.minimum(delta * slope, 2 * softcap) + softcap * (np.minimum(tanh_abs(arg), 2.0) + R * np.tanh(arg))
        s = softcap * np.tanh(arg)
    if mask is not None:
        m = np.asarray(mask, np.float64)
        m = np.abs(np.where(np.isfinite(m), m, 0.0))
        m = np.broadcast_to(m, (batch,) + m.shape[1:])[:, :, None, :]  # [B, S, 1, L]
        if alibi is not None:
            m0, m1, n_head_log2 = alibi
            h = np.arange(heads, dtype=np.float64)
            base = np.where(h < n_head_log2, m0, m1)
            power = np.where(h < n_head_log2, h + 1.0, 2.0 * (h - n_head_log2) + 1.0)
            bias = np.abs(np.asarray(slopes, np.float64))[None, None, :, None] * m
            delta = delta + (pow_rel(base, power)[None, None, :, None] + R) * bias
        else:
            bias = m
        delta = delta + R * (s + bias)
    return delta + (2 * dk + 6) * FTZ_ABS, abs_dot


def output_budget(v, logits2, delta, *, evaluated: str = "kernel", weights: WeightErrors | None = None) -> np.ndarray:
    """Budget [..., Dv] of attention outputs from values v [..., L, Dv] (a zero row for a sink),
    the exact base-2 logits2 [..., L] (-inf where masked; the sink a last column) and the score
    errors delta [..., L] (natural units, score_errors; 0 for the sink, which the program reads
    exactly).

    The weights err as verify.budgets.attention.weight_errors derives for an online softmax
    (pi_j: each weight's exp and subtraction, the rescale chain it passes, at most 2n events
    whose exponents telescope to the logit range: a split's tile maxima, the sink's and the
    reduce's exp(m_i - M) are such events, and the first rescale of a split multiplies the
    zero sum and output it starts from, exactly; the sum of n terms), with delta in base-2
    units. The P·V sum is over n terms in any order (in pi's gamma_n), each split's partial
    output included. With A_d = Σ_j p_j |v_jd|: o_d errs by Σ_j p_j |v_jd| pi_j, and by the
    normalisation, which `evaluated` says: "kernel" (1/Σ, then the product: division_rel + r,
    the split with one split and the reduce alike), or "float64" (the check divides a split's
    stored o_i by its s_i: one float64 rounding); plus (2n + 4) flushed subnormals of the sums
    and products, and the weights that flush: a weight relative to the running max (its exp, or
    a product of its rescale chain, such as a sink far above every score makes) that falls below
    f32's smallest normal may become 0, losing at most 2 FTZ |v_jd| of its key (divided by the
    final sum, which is at least 1: the largest logit's term is exp(0)): 2 FTZ Σ_j |v_jd|.
    `weights`: weight_errors of these logits and errors, where the caller has them already."""
    v = np.abs(np.asarray(v, np.float64))
    logits2 = np.asarray(logits2, np.float64)
    valid = np.isfinite(logits2)
    n = valid.sum(-1).astype(np.float64)
    if weights is None:
        weights = weight_errors(logits2, np.where(valid, np.asarray(delta, np.float64) * LOG2E, 0.0), n)
    w = weights
    spread = weighted_rows(w.p * w.pi, v)
    a_d = weighted_rows(w.p, v)
    final = division_rel("f32") + R if evaluated == "kernel" else U64
    flushed = 2 * FTZ_ABS * weighted_rows(valid.astype(np.float64), v)
    budget = spread + final * a_d + (2 * n[..., None] + 4) * FTZ_ABS + flushed
    return np.where(w.nonempty[..., None], budget, 0.0)


def lse_budget(logits2, delta) -> np.ndarray:
    """Budget [...] of a split's log-sum-exp m_i + ln s_i (natural units), evaluated
    in float64 from the stored max m_i and sum s_i, over the split's keys: base-2 logits2 [..., L]
    (-inf where masked or another split's) and their errors delta [..., L] (natural units).

    s_i = Σ_j exp(ŝ_j - m_i)(1 + e_j), the computed logits ŝ_j off by delta_j and e_j each term's
    own error: the subtraction (r|x_j|) and exp (kappa_j = exp_rel(x_j) + r|x_j|, x_j = ŝ_j - m_i),
    the rescale chain (eps_chain of weight_errors) and the sum (gamma_n(r)). m_i cancels: m_i +
    ln s_i = ln Σ_j exp(ŝ_j)(1 + e_j), which lies within a factor 1 ± E of Σ_j exp(s_j), E =
    Σ_j p_j (expm1(delta_j)(1 + e_j) + e_j) (p_j the exact weights), so the lse errs by at most
    -ln(1 - E). Log-sum-exp is also 1-Lipschitz in the largest change of its arguments, so it errs
    by at most max_j delta_j - ln(1 - max_j e_j) too (the bound that holds where the scores' errors
    are large, E >= 1); the smaller of the two. The sum's 2n flushed subnormals are at most 2n FTZ
    relative (s_i >= 1: its largest term is exp(0)); float64's m_i + ln s_i adds 3 u64 (|lse| + 1)."""
    logits2 = np.asarray(logits2, np.float64)
    valid = np.isfinite(logits2)
    n = valid.sum(-1).astype(np.float64)
    delta = np.where(valid, np.asarray(delta, np.float64), 0.0)
    w = weight_errors(logits2, delta * LOG2E, n)
    top = np.max(np.where(valid, logits2, -np.inf), axis=-1, initial=-np.inf)
    x = np.where(valid, logits2 - np.where(w.nonempty, top, 0.0)[..., None], 0.0)
    kappa = np.where(valid, exp2_rel(x) + LN2 * R * np.abs(x), 0.0)
    e = _second_order(kappa + (w.eps_chain + w.gamma_n)[..., None])
    with np.errstate(over="ignore", invalid="ignore"):
        terms = np.where(w.p > 0, w.p * (np.expm1(delta) * (1.0 + e) + e), 0.0)
    total = terms.sum(-1) + 2 * n * FTZ_ABS
    lse = np.where(w.nonempty, top * LN2 + np.log(np.where(w.nonempty, w.d, 1.0)), 0.0)
    e_max = np.where(valid, e, 0.0).max(-1, initial=0.0) + 2 * n * FTZ_ABS
    with np.errstate(divide="ignore", invalid="ignore"):
        shift = np.where(total < 1.0, -np.log1p(-np.minimum(total, 1.0)), np.inf)
        lipschitz = delta.max(-1, initial=0.0) + np.where(e_max < 1.0, -np.log1p(-np.minimum(e_max, 1.0)), np.inf)
    budget = np.minimum(shift, lipschitz) + 3 * U64 * (np.abs(lse) + 1.0)
    return np.where(w.nonempty, budget, 0.0)


def reduce_budget(o, s, m) -> np.ndarray:
    """Budget [..., Dv] of flash_attn_vec_reduce merging nwg split states of one row: o [..., nwg,
    Dv] (unnormalised), s and m [..., nwg], all exact inputs (f32 values as stored).

    With M = max m_i, x_i = m_i - M <= 0 and w_i = exp(x_i): kappa_i = exp_rel(x_i) + r|x_i| (the
    subtraction and exp). The numerator N_d = Σ o_id w_i: each product rounds (r), nwg terms summed
    by subgroupAdd (gamma_nwg(r)): |N_d err| <= Σ_i |o_id| w_i (kappa_i + r + gamma_nwg); the
    denominator S = Σ s_i w_i likewise, S eps_S with eps_S = Σ s_i w_i (kappa_i + r + gamma_nwg) / S;
    then 1/S (division_rel) and the product (r): with rho = eps_S + division_rel + r to second order,
    |err| <= (|N err| / S)(1 + rho) + |out| rho, plus flushes of every product and sum ((2 nwg + 2) FTZ
    / S, and FTZ).
    Rows whose every split is empty (S = 0) write 0 exactly (budget 0)."""
    o, s, m = (np.asarray(a, np.float64) for a in (o, s, m))
    nwg = m.shape[-1]
    top = m.max(-1, keepdims=True)
    x = m - top
    w = exp_libm(x)  # the same bytes on every CPU: its reproduction ships this budget
    kappa = exp2_rel(x * LOG2E) + R * np.abs(x)
    step = _second_order(kappa + R + gamma(nwg, R))
    total = (s * w).sum(-1)
    nonempty = total > 0
    safe = np.where(nonempty, total, 1.0)
    eps_s = (s * w * step).sum(-1) / safe
    out = (o * w[..., None]).sum(-2) / safe[..., None]
    numerator = (np.abs(o) * (w * step)[..., None]).sum(-2) / safe[..., None]
    rho = _second_order(eps_s + division_rel("f32") + R)[..., None]
    budget = numerator * (1.0 + rho) + np.abs(out) * rho + ((2 * nwg + 2) / safe + 1.0)[..., None] * FTZ_ABS
    return np.where(nonempty[..., None], budget, 0.0)


__all__ = ["lse_budget", "output_budget", "pow_rel", "reduce_budget", "score_errors"]
