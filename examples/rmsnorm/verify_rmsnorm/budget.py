"""The error budget of an f32 RMSNorm kernel, derived from the arithmetic.

Built from verify's error model (verify.budgets): WGSL lets every f32 operation round to either
neighbour (relative error r = 2u, u = 2^-24), division is accurate to 2.5 ULP and
inverseSqrt to 2 ULP (WGSL spec, floating-point accuracy), any summation order is allowed, and
subnormal inputs and results may be flushed to zero.
"""

from __future__ import annotations

import numpy as np

from verify.budgets import (
    division_rel,
    faithful_rounding_bound,
    gamma,
    inverse_sqrt_rel,
    rounding_rel,
    smallest_normal,
)


def rms_norm_budget(x, weight, eps: float, y_exact, out_dtype: str) -> np.ndarray:
    """Per-element bound on |kernel y - exact y| for y = x * inverseSqrt(s/n + eps) * w in f32.

    With s = sum_j x_j^2 over the n values of a row (exact inputs: the stored x, w, eps):
    - s: n products and up to n-1 additions of non-negative terms in any order, so
      |s_hat - s| <= gamma_n(r) s, plus n flushed subnormals (a square or a partial sum below
      2^-126 may become 0): n * FTZ absolute.
    - m = s/n + eps: the division adds division_rel, the addition r; as s/n <= m, the relative
      error of m_hat is at most delta_m = gamma_n(r) + division_rel + r + n FTZ / (n m).
    - inverseSqrt(m_hat) = m^(-1/2)(1 + e) with |e| <= delta_m / 2 + inverse_sqrt_rel (the square
      root halves a relative error, to first order).
    - y = x * inv * w: two products, 2r relative, and each may flush a subnormal (2 FTZ).
    - a subnormal x_i or w_i may itself be read as 0 (WGSL allows flushing inputs; SwiftShader and
      NVIDIA do): the product is then 0 whatever y_i is, and inv (up to 1/sqrt(eps)) lifts that
      loss far above any absolute floor, so such an element may lose all of |y_i|.
    The total relative error T is inflated to T(1 + T) for the second-order products, and the
    store into `out_dtype` adds faithful rounding of the exact y (either neighbour).
    """
    x = np.asarray(x, np.float64)
    n = x.shape[-1]
    r = rounding_rel("f32")
    ftz = smallest_normal("f32")
    m = np.mean(x * x, axis=-1, keepdims=True) + eps
    delta_m = gamma(n, r) + division_rel("f32") + r + ftz / m
    total = delta_m / 2 + inverse_sqrt_rel("f32") + 2 * r
    total = total * (1 + total)
    w = np.abs(np.asarray(weight, np.float64))
    flushable = ((np.abs(x) > 0) & (np.abs(x) < ftz)) | ((w > 0) & (w < ftz))
    return (total * np.abs(y_exact) + 2 * ftz + np.where(flushable, np.abs(y_exact), 0.0)
            + faithful_rounding_bound(y_exact, out_dtype))
