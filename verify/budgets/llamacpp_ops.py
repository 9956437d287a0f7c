"""Error budgets of ggml-webgpu's row ops (verify.sources.llamacpp.ops), derived from their WGSL.

rms_norm_mul.wgsl, per row of n values with WG_SIZE lanes: each lane adds `pow(x, 2.0)` of its
columns, the lanes' sums are added by a tree in workgroup memory, then
`scale = 1.0/sqrt(sum/f32(ne0) + eps)` and `y = scale * x * w` (left to right).
"""

from __future__ import annotations

import numpy as np

from verify.budgets.roundoff import gamma, smallest_normal, unit_roundoff
from verify.budgets.wgsl_accuracy import division_rel, exp2_rel, inverse_sqrt_rel, log2_abs, rounding_rel


def _compose(*rels) -> np.ndarray:
    """The relative error of a chain of operations with relative errors `rels`: Π(1 + r) - 1."""
    total = np.ones(np.broadcast(*[np.asarray(r) for r in rels]).shape)
    for r in rels:
        total = total * (1.0 + np.asarray(r, np.float64))
    return total - 1.0


def square_rel(x) -> np.ndarray:
    """Relative error bound of WGSL `pow(x, 2.0)` for x != 0, whose accuracy the spec inherits
    from exp2(2 log2 x): log2's absolute error a (2^-21 on [0.5, 2], else 3 ULP of the result),
    doubled, moves the exponent by 2a, a factor 2^(2a); exp2 adds (3 + 2|2 log2 x|) ULP. The bound
    is taken on |x|: for x < 0 log2 has no value and the spec bounds nothing; what such a lane
    computes is judged against x² as ggml's op defines it."""
    a = np.abs(np.asarray(x, np.float64))
    safe = np.where(a > 0, a, 1.0)
    exponent = 2.0 * np.log2(safe)
    shift = np.exp2(2.0 * log2_abs(safe)) - 1.0
    return np.where(a > 0, _compose(shift, exp2_rel(exponent)), 0.0)


def rms_norm_mul_budget(x, w, eps: float, y_exact) -> np.ndarray:
    """Budget [..., n] of ggml-webgpu's rms_norm_mul against references.ggml_norm.rms_norm_mul.

    With r = 2u_f32 (either neighbour) and q_j the squares' bound (square_rel, each square may also
    flush to zero when below f32's smallest normal 2^-126: n of those at most):
    - sum: S = Σ fl(x_j²) in any order (each lane's running sum, then the tree): |Ŝ - Σx²| <=
      Σ q_j x_j² + gamma_{n-1}(r) Σ (1 + q_j) x_j² + n 2^-126 =: e_S;
    - mean: Ŝ / f32(n) (n exact below 2^24) within division_rel (2.5 ULP), then + eps within r:
      the argument m̂ of sqrt errs relatively by rel_m = (e_S / n) / (Σx²/n + eps) composed with
      the division and the addition;
    - sqrt(m̂): the spec inherits its accuracy from 1/inverseSqrt(m̂): halves rel_m, then
      inverse_sqrt_rel (2 ULP) and the division (2.5 ULP); `1.0/sqrt(...)` one more division:
      scale errs relatively by rel_s;
    - y = (scale·x)·w: two products, r each, and each may flush a subnormal (2 · 2^-126 |w| + 2^-126).
    So |ŷ_j - y_j| <= |y_j| ((1 + rel_s)(1 + r)² - 1) + 2^-126 (1 + 2|w_j|), plus the float64
    reference's own error, 8 u_64 |y_j| (n-term sum, sqrt, quotient, two products)."""
    x64 = np.asarray(x, np.float64)
    n = x64.shape[-1]
    r = rounding_rel("f32")
    squares = x64 * x64
    q = square_rel(x64)
    tiny = smallest_normal("f32")
    e_sum = (q * squares).sum(-1) + gamma(max(n - 1, 1), r) * ((1 + q) * squares).sum(-1) + n * tiny
    mean = squares.sum(-1) / n + float(eps)
    rel_mean = _compose(np.where(mean > 0, (e_sum / n) / np.where(mean > 0, mean, 1.0), np.inf),
                        division_rel("f32"), r)
    rel_sqrt = _compose(rel_mean / 2.0 + rel_mean**2, inverse_sqrt_rel("f32"), division_rel("f32"))
    rel_scale = _compose(rel_sqrt, division_rel("f32"))
    y = np.abs(np.asarray(y_exact, np.float64))
    w64 = np.abs(np.asarray(w, np.float64))
    budget = y * _compose(rel_scale[..., None], r, r) + tiny * (1.0 + 2.0 * w64)
    return budget + 8 * unit_roundoff("f64") * y
