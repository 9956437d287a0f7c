"""Unit roundoff, gamma_n, ulps and rounding floors for the formats WGSL kernels use.

WGSL fixes no rounding mode: an implementation may return either floating-point neighbour of
an exact result (WGSL spec §15.7, "correctly rounded" means either neighbour), and may flush
subnormal inputs and results to zero. Every bound here allows for both.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

#: Significand bits (implicit bit included) of the formats that occur in kernels.
_PRECISION = {"f16": 11, "f32": 24, "f64": 53}
#: Smallest positive normal number of each format; below it FTZ may return 0.
_SMALLEST_NORMAL = {"f16": 2.0**-14, "f32": 2.0**-126, "f64": 2.0**-1022}
_NUMPY: dict[str, type[np.floating]] = {"f16": np.float16, "f32": np.float32, "f64": np.float64}


def dtype_name(dtype) -> str:
    """Normalise 'f16' | 'float16' | np.float16 to 'f16' (and likewise f32, f64)."""
    name = np.dtype(_NUMPY.get(dtype, dtype)).name
    short = {"float16": "f16", "float32": "f32", "float64": "f64"}.get(name)
    if short is None:
        raise ValueError(f"unsupported floating-point format {dtype!r}; expected f16, f32 or f64")
    return short


def numpy_dtype(dtype) -> type[np.floating]:
    return _NUMPY[dtype_name(dtype)]


def unit_roundoff(dtype) -> float:
    """u = 2**-p: the largest relative error of round-to-nearest in a format."""
    return 2.0 ** -_PRECISION[dtype_name(dtype)]


def smallest_normal(dtype) -> float:
    """The smallest positive normal number of a format (2^-14 for f16, 2^-126 for f32): below it
    WGSL lets an implementation flush a result to zero, an absolute error of up to this much."""
    return _SMALLEST_NORMAL[dtype_name(dtype)]


def gamma(n, u: float):
    """gamma_n = n*u/(1-n*u) (Higham Lemma 3.1): bounds prod(1+delta_i)-1 over n roundings.

    Accepts an array of n. Returns inf where n*u >= 1, where no bound of this form exists.
    """
    nu = np.asarray(n, dtype=np.float64) * u
    with np.errstate(divide="ignore"):
        return np.where(nu < 1.0, nu / (1.0 - nu), np.inf)


def ulp(x, dtype) -> np.ndarray:
    """Spacing of the format's numbers at |x| (the gap above |x|'s binade start); FTZ-aware.

    For |x| below the smallest normal, the spacing of the subnormals is returned; past the
    largest finite value, the gap above it (inf).
    """
    return _ulp_of_magnitude(np.abs(np.asarray(x, dtype=np.float64)), dtype)


def _ulp_of_magnitude(ax: np.ndarray, dtype) -> np.ndarray:
    """ulp of magnitudes already taken (float64, >= 0 or NaN)."""
    t = numpy_dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if t is np.float16:  # numpy's f16 spacing is emulated per element: read it from a table
            return np.take(_f16_spacing(), ax.astype(np.float16).view(np.uint16))
        rounded = np.minimum(ax, float(np.finfo(t).max)).astype(t)
        return np.spacing(rounded).astype(np.float64)


@lru_cache(maxsize=1)
def _f16_spacing() -> np.ndarray:
    """np.spacing of every f16 bit pattern, as float64 (65536 entries), made once. The infinities'
    entries are the largest finite value's (inf): a magnitude past it that the conversion rounds
    to inf has that spacing, as in the other formats, which clamp first."""
    with np.errstate(over="ignore", invalid="ignore"):
        table = np.spacing(np.arange(1 << 16, dtype=np.uint16).view(np.float16)).astype(np.float64)
    table[[0x7C00, 0xFC00]] = np.inf
    table.flags.writeable = False
    return table


def faithful_rounding_bound(y, dtype) -> np.ndarray:
    """Largest |fl(y) - y| a conforming implementation may produce when storing y in `dtype`.

    Either neighbour is allowed, so up to one ulp; below the smallest normal a flush to zero
    is allowed too, so up to the smallest normal (more than any subnormal spacing).
    """
    ay = np.abs(np.asarray(y, dtype=np.float64))
    normal = smallest_normal(dtype)
    return np.where(ay < normal, normal, _ulp_of_magnitude(ay, dtype))


def rounding_floor(y, dtype) -> np.ndarray:
    """|round_to_nearest(y) - y|: the error any kernel storing y in `dtype` must at least make.

    Reported beside err/budget so a reader sees how close a kernel is to the best possible.
    """
    y = np.asarray(y, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        stored = y.astype(numpy_dtype(dtype)).astype(np.float64)
        return np.abs(np.where(np.isfinite(stored) | ~np.isfinite(y), stored - y, np.inf))


def ulp_and_rounding_floor(y, dtype) -> tuple[np.ndarray, np.ndarray]:
    """(ulp(y, dtype), rounding_floor(y, dtype)), the same numbers, from one conversion of y to the
    format where it is f16: numpy converts float64 to f16 in software, element by element, and the
    two conversions were most of compare()'s time on a long prefill's output. The spacing of |y|'s
    f16 is the table's entry at y's f16 without its sign bit (rounding is symmetric in the sign)."""
    y = np.asarray(y, dtype=np.float64)
    if numpy_dtype(dtype) is not np.float16:
        return ulp(y, dtype), rounding_floor(y, dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        stored = y.astype(np.float16)
        spacing = np.take(_f16_spacing(), stored.view(np.uint16) & np.uint16(0x7FFF))
        # rounding_floor's mask is already in the difference: a finite y stored as +-inf differs
        # from it by inf, and an infinite or NaN y gives NaN either way
        floor = np.abs(stored.astype(np.float64) - y)
    return spacing, floor


def float64_reference_bound(magnitude, ulps: float = 4.0, terms: int = 1) -> np.ndarray:
    """Bound on a float64 reference's own error, for checking it against mpmath.

    A vectorised float64 evaluation that sums `terms` values whose absolute sum is `magnitude`
    (the condition-number numerator Σ|x_i|, or |y|·cond for a composed function) errs by at most
    gamma_terms(u64)·magnitude plus a few ulps for the elementary functions (numpy's exp/log/sin
    are accurate to < 1 ulp, each composed step adds one): (gamma(terms) + ulps·u64)·magnitude,
    plus, for results in the subnormal range where relative bounds fail, half the smallest
    subnormal (2^-1074) for every operation that may underflow.
    """
    u64 = unit_roundoff("f64")
    underflow = (terms + ulps) * 2.0**-1074
    return (gamma(terms, u64) + ulps * u64) * np.abs(np.asarray(magnitude, dtype=np.float64)) + underflow


def exp_libm(x) -> np.ndarray:
    """exp of every element as the C library computes it, float64.

    numpy's own AVX-512 exp differs from the C library's in the last bit for some inputs (numpy
    takes the library's where the CPU has no AVX-512), so a number computed with np.exp is not the
    same bytes on every x86-64 machine. A budget that a reproduction ships (`verify findings
    export` writes it into the page, and its folder is committed) must be: this is for the small
    arrays of such budgets (a row's split states), at Python speed."""
    x = np.asarray(x, np.float64)
    return np.asarray(np.frompyfunc(math.exp, 1, 1)(x), np.float64)
