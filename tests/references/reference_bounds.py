"""Derived bounds on the float64 references' own error, used to check them against mpmath.

Every bound is `float64_reference_bound(magnitude, ulps, terms)` = (gamma_terms + ulps*u)*magnitude
(u = 2**-53) with the magnitude a condition number of the computation, derived in each docstring.
numpy's exp, exp2, log, log2, sin, cos and power are taken to err by at most 2u relative (glibc's
are below 1 ulp). Input errors propagate to first order; they are ~1e-13 relative, so second-order
terms are far below the slack left in the ulps. Where results can be subnormal, each operation
may add an absolute ETA instead of a relative error, so those bounds carry a few ETA.
"""

from __future__ import annotations

import math

import numpy as np

from verify.budgets.roundoff import float64_reference_bound, unit_roundoff

U64 = unit_roundoff("f64")
#: Absolute error of one float64 operation whose result underflows (Higham §2.1, eta <= 2**-1075).
ETA = 2.0**-1074
LN_BASE = {2: math.log(2.0), "e": 1.0}


def assert_within(actual, exact, bound, what: str) -> None:
    """Assert |actual - exact| <= bound elementwise, and -inf exactly where exact is -inf."""
    actual = np.asarray(actual, np.float64)
    exact = np.asarray(exact, np.float64)
    neg_inf = np.isneginf(exact)
    mismatched = np.isneginf(actual) != neg_inf
    assert not mismatched.any(), f"{what}: -inf expected at {np.argwhere(neg_inf).tolist()}, got {actual}"
    err = np.where(neg_inf, 0.0, np.abs(np.where(neg_inf, 0.0, actual) - np.where(neg_inf, 0.0, exact)))
    bound = np.broadcast_to(bound, err.shape)
    bad = ~(err <= bound)
    if bad.any():
        worst = np.unravel_index(np.argmax(np.where(bad, err / np.maximum(bound, 1e-300), 0)), err.shape)
        raise AssertionError(
            f"{what}: {bad.sum()} of {bad.size} elements exceed the bound; worst at {worst}: "
            f"actual={actual[worst]!r} exact={exact[worst]!r} err={err[worst]:.3e} bound={bound[worst]:.3e}"
        )


def _spread(logits):
    """(number of finite logits, T = max_j |s_j - max s|) per row; T is 0 for an empty row."""
    s = np.asarray(logits, np.float64)
    finite = np.isfinite(s)
    top = np.max(s, axis=-1, initial=-np.inf, keepdims=True)
    gap = np.where(finite, np.abs(s - np.where(np.isfinite(top), top, 0.0)), 0.0)
    return finite.sum(axis=-1), gap.max(axis=-1, initial=0.0)


def softmax_bounds(logits, values, o, lse, base):
    """Bounds on the float64 (o, lse) of `softmax_state` + `state_to_output` (logits [..., n]).

    With T = max_j |s_j - m| and n finite logits: s_j - m errs by u|s_j - m|, so each weight
    base**(s_j - m) by ln(base)*u*T + 2u relative; the sums of n terms add gamma_n; o = sum p v / d
    is off by (gamma_n + u(T + 3)) (A_d + |o_d|), A_d = sum_j p_j |v_jd|  ->  magnitude
    (A_d + |o_d|)(2 + T). lse = m + log_base(d) errs by the relative error of d over ln(base), plus
    u|log_base d| <= u log_base n and u|lse|  ->  magnitude 2 + T + |lse| + 2 log_base n.
    Products and sums of tiny values may underflow instead: one ETA per operation.
    """
    n, spread = _spread(logits)
    exp = np.exp2 if base == 2 else np.exp
    s = np.asarray(logits, np.float64)
    top = np.max(s, axis=-1, initial=-np.inf, keepdims=True)
    p = exp(s - np.where(np.isfinite(top), top, 0.0))
    total = p.sum(axis=-1)
    weights = p / np.where(total == 0, 1.0, total)[..., None]
    a = np.matmul(weights[..., None, :], np.abs(np.asarray(values, np.float64)))[..., 0, :]
    o_bound = float64_reference_bound((a + np.abs(o)) * (2 + spread[..., None]), 4, n[..., None])
    log_n = np.log(np.maximum(n, 1)) / LN_BASE[base]
    lse_bound = float64_reference_bound(2 + spread + np.abs(np.where(np.isfinite(lse), lse, 0)) + 2 * log_n, 4, n)
    return o_bound + (2 * n[..., None] + 4) * ETA, lse_bound + 4 * ETA


def merge_bounds(o_a, lse_a, o_b, lse_b, lse, base, err_a=(0.0, 0.0), err_b=(0.0, 0.0)):
    """Bounds on the float64 `merge_outputs` of inputs that already err by err_x = (|do_x|, |dlse_x|).

    Own rounding, with D = |lse_a - lse_b| and weights w_x = base**(lse_x - lse): the smaller input's
    shifted LSE errs by uD, its weight by ln(base)uD + 2u relative, the normalisation and products add
    a few u  ->  (gamma_2 + 4u)(w_a|o_a| + w_b|o_b|)(4 + D) (this sum bounds |o|) and (gamma_2 + 4u)(3 + D + |lse|).
    Propagated: d lse/d lse_x = w_x, d o/d o_x = w_x, d o/d lse_a = ln(base) w_a w_b (o_a - o_b).
    An empty input (lse = -inf) makes the result the other input exactly. Plus ETA per operation.
    """
    o_a, o_b = np.asarray(o_a, np.float64), np.asarray(o_b, np.float64)
    lse_a, lse_b, lse = (np.asarray(x, np.float64) for x in (lse_a, lse_b, lse))
    (eo_a, el_a), (eo_b, el_b) = ([np.asarray(e, np.float64) for e in err] for err in (err_a, err_b))
    a_empty, b_empty = np.isneginf(lse_a), np.isneginf(lse_b)
    both = ~(a_empty | b_empty)
    lse_a0, lse_b0, lse0 = (np.where(both, x, 0.0) for x in (lse_a, lse_b, lse))
    exp = np.exp2 if base == 2 else np.exp
    w_a, w_b = np.where(both, exp(lse_a0 - lse0), 0.0), np.where(both, exp(lse_b0 - lse0), 0.0)
    gap = np.abs(lse_a0 - lse_b0)
    mixed = w_a[..., None] * np.abs(o_a) + w_b[..., None] * np.abs(o_b)  # >= |o|
    o_own = float64_reference_bound(mixed * (4 + gap[..., None]), 4, 2) + 8 * ETA
    o_prop = (w_a[..., None] * eo_a + w_b[..., None] * eo_b
              + LN_BASE[base] * (w_a * w_b)[..., None] * np.abs(o_a - o_b) * (el_a + el_b)[..., None])
    lse_own = float64_reference_bound(3 + gap + np.abs(lse0), 4, 2) + 4 * ETA
    o_bound = np.where(b_empty[..., None], eo_a, np.where(a_empty[..., None], eo_b, o_own + o_prop))
    lse_bound = np.where(b_empty, el_a, np.where(a_empty, el_b, lse_own + w_a * el_a + w_b * el_b))
    return o_bound, lse_bound


def frequency_ulps(rope_theta: float, llama3=None) -> float:
    """kappa: the relative error, in units of u, of the float64 `rope_frequencies`.

    theta**(-e): the power errs by 2u and the rounded exponent e = k/D (exact only for D a power
    of two) by u*e*ln(theta) <= u ln(theta). Llama 3 scaling, with beta = lo/(hi - lo): alpha and beta
    round 4u and 2u, so smooth = alpha f - beta errs by u((kappa + 5)(1 + beta) + 2 beta + 1) inside
    the ramp (alpha f < 1 + beta); that times |1 - 1/factor| f, relative to f' >= f / max(factor, 1),
    plus ~6u for the blend. The step form (hi == lo) adds one division.
    """
    kappa = 2 + math.log(rope_theta)
    if llama3 is None:
        return kappa
    if llama3.high_freq_factor == llama3.low_freq_factor:
        return kappa + 1
    beta = llama3.low_freq_factor / (llama3.high_freq_factor - llama3.low_freq_factor)
    smooth_error = (kappa + 5) * (1 + beta) + 2 * beta + 1
    factor = llama3.factor
    return kappa + 6 + abs(1 - 1 / factor) * max(factor, 1.0) * smooth_error


def partner_index(head_dim: int, pairing: str) -> np.ndarray:
    """The dim each dim is rotated with: d +- D/2 (neox) or d xor 1 (gptj)."""
    d = np.arange(head_dim)
    return (d + head_dim // 2) % head_dim if pairing == "neox" else d ^ 1


def rope_bound(x, positions, rope_scale, freq, pairing: str, kappa: float):
    """Bound on the float64 rotation of x [..., D] at positions (broadcastable to x.shape[:-1]).

    t = pos*scale*f errs by (kappa + 2)u|t| (f by kappa u, two products), so cos t and sin t err by
    that plus 2u; the two products and the sum add 3u on |x_d| + |x_pair|  ->  magnitude
    (|x_d| + |x_pair|)(1 + |t_d|) with ulps kappa + 2 over 2 terms. The angle's rounding is amplified
    by |t|, which is why large positions and low theta lose absolute accuracy. Three operations
    per element may underflow: 3 ETA.
    """
    x = np.abs(np.asarray(x, np.float64))
    t = np.abs((np.asarray(positions, np.float64) * rope_scale)[..., None] * np.asarray(freq, np.float64))
    magnitude = (x + x[..., partner_index(x.shape[-1], pairing)]) * (1 + t)
    return float64_reference_bound(magnitude, kappa + 2, 2) + 3 * ETA
