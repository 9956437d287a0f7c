"""Accuracy the WGSL spec grants each built-in, as bounds the budgets compose.

Source: WGSL spec §15.7.4 "Floating Point Accuracy" (as encoded in gpuweb/cts
src/webgpu/util/floating_point.ts). An "N ULP" bound is turned into a relative one with
ulp(y) <= 2u|y| for normal y. Correctly rounded operations (+, -, *) may return either
neighbour: relative error < 2u, not u.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.roundoff import dtype_name, unit_roundoff

#: exp2(x) is accurate to (3 + 2|x|) ULP in f32 and (1 + 2|x|) ULP in f16.
_EXP2_BASE_ULPS = {"f32": 3.0, "f16": 1.0}
#: log2 inside [0.5, 2] has an absolute bound; outside it, 3 ULP.
_LOG2_ABS_NEAR_ONE = {"f32": 2.0**-21, "f16": 2.0**-7}
#: sin/cos: absolute error inside [-pi, pi]; the spec promises nothing outside, implementations
#: reduce the argument first, so we apply the same bound to the reduced argument.
_TRIG_ABS = {"f32": 2.0**-11, "f16": 2.0**-7}
#: inverseSqrt(x) is accurate to 2 ULP (sqrt is inherited from 1.0 / inverseSqrt(x)).
INVERSE_SQRT_ULPS = 2.0
#: x / y is accurate to 2.5 ULP for |y| in [2^-126, 2^126] (f32) / [2^-14, 2^14] (f16).
DIVISION_ULPS = 2.5


def rounding_rel(dtype) -> float:
    """Relative error of one correctly rounded operation when either neighbour is allowed."""
    return 2.0 * unit_roundoff(dtype)


def exp2_rel(x, dtype="f32"):
    """Relative error bound of WGSL exp2(x): (3 + 2|x|) ULP in f32, (1 + 2|x|) ULP in f16."""
    name = dtype_name(dtype)
    return 2.0 * unit_roundoff(name) * (_EXP2_BASE_ULPS[name] + 2.0 * np.abs(x))


def exp_rel(x, dtype="f32"):
    """Relative error bound of WGSL exp(x), the natural exponential: the spec grants exp the same
    (3 + 2|x|) ULP in f32 and (1 + 2|x|) ULP in f16 as exp2, |x| being exp's own argument."""
    return exp2_rel(x, dtype)


def log2_abs(y, dtype="f32"):
    """Absolute error bound of WGSL log2(y), y > 0: 2^-21 (f32) or 2^-7 (f16) for y in [0.5, 2],
    else 3 ULP of the result."""
    return _log_abs(y, dtype, np.log2)


def log_abs(y, dtype="f32"):
    """Absolute error bound of WGSL log(y), the natural logarithm, y > 0: as log2's, 2^-21 (f32)
    or 2^-7 (f16) for y in [0.5, 2], else 3 ULP of the result |ln y|."""
    return _log_abs(y, dtype, np.log)


def _log_abs(y, dtype, log):
    name = dtype_name(dtype)
    y = np.asarray(y, dtype=np.float64)
    near_one = (y >= 0.5) & (y <= 2.0)
    with np.errstate(divide="ignore"):
        far = 3.0 * 2.0 * unit_roundoff(name) * np.abs(log(y))
    return np.where(near_one, _LOG2_ABS_NEAR_ONE[name], far)


def tanh_abs(x, dtype="f32"):
    """Absolute error bound of WGSL tanh(x): the spec's accuracy is inherited from
    sinh(x) / cosh(x), each inherited from (exp(x) -/+ exp(-x)) * 0.5. With rho = exp_rel(|x|)
    the relative error of each exp, sinh errs by rho·cosh + r|sinh| (the subtraction rounds) and
    cosh by (rho + r)·cosh; the quotient by division_rel. Dividing by cosh >= 1 and with
    |tanh| <= 1: |err| <= 2 rho + 2 r + division_rel, inflated to second order. Where exp(|x|)
    overflows the inherited bound says nothing; the bound at |x| is what the budgets take there."""
    name = dtype_name(dtype)
    r = rounding_rel(name)
    total = 2.0 * exp_rel(np.abs(x), name) + 2.0 * r + division_rel(name)
    return total * (1.0 + total)


def division_rel(dtype="f32") -> float:
    """Relative error bound of WGSL x / y: 2.5 ULP, for |y| in [2^-126, 2^126] (f32) or
    [2^-14, 2^14] (f16)."""
    return DIVISION_ULPS * 2.0 * unit_roundoff(dtype)


def trig_abs(dtype="f32") -> float:
    """Absolute error bound of WGSL sin/cos."""
    return _TRIG_ABS[dtype_name(dtype)]


def inverse_sqrt_rel(dtype="f32") -> float:
    """Relative error bound of WGSL inverseSqrt(x), x > 0."""
    return INVERSE_SQRT_ULPS * 2.0 * unit_roundoff(dtype)


def literal_rel(significant_digits: int | None = None, dtype="f32") -> float:
    """Relative error of a floating-point literal as the shader holds it.

    The literal's value is converted to `dtype` (either neighbour: 2u); a code generator that
    prints it with p significant decimal digits first moves it by up to half a unit in the
    p-th digit, 0.5·10^(1-p) relative (the mantissa is at least 1). None: printed exactly
    (a Python float's repr round-trips).
    """
    printed = 0.0 if significant_digits is None else 0.5 * 10.0 ** (1 - significant_digits)
    return printed + rounding_rel(dtype) * (1.0 + printed)
