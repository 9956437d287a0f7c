"""Bit-level twins of verify.budgets.roundoff's ulp, faithful_rounding_bound and representability,
for float64 arrays: the same values, computed on the float64 bit patterns.

roundoff.ulp rounds to the format with `astype` and asks `np.spacing`; numpy has no vectorised
float16 conversion or spacing, so on large arrays that costs 10-15 ns per element. Here the
format's rounding is read off the float64 bits instead (a handful of integer passes), with the
plain function as the fallback wherever an input is outside the range these twins handle
(values near the format's largest finite number, infinities, NaN). Every function returns exactly
what its plain twin returns; tests/fastpath/test_floats.py checks all float16 values, float32 and
float64 values across every binade, and the boundaries.

The recipe: a non-negative float64 compares like its bit pattern read as an integer, and rounding
its 53-bit significand to p bits carries into the next binade exactly when adding half the
format's spacing (2^(52-p) in units of the float64 fraction) to the bit pattern carries into the
exponent field. So the exponent field of (bits + 2^(52-p)) is that of the rounded value, and the
rounded value's spacing is 2^(e - p + 1), never below the format's subnormal spacing.
"""

from __future__ import annotations

import numpy as np

from verify.budgets import roundoff

_EXPONENT = np.int64(0x7FF0000000000000)
_INFINITY = np.uint64(0x7FF0000000000000)


def _bits_of(value: float) -> int:
    return int(np.array(value, np.float64).view(np.int64))


class _Format:
    """The integer constants the recipes use, for a format of `precision` significand bits."""

    def __init__(self, precision: int, smallest_normal: float, largest: float):
        top_spacing = 2.0 ** (np.floor(np.log2(largest)) - precision + 1)
        self.half_spacing = np.int64(1 << (52 - precision))
        self.spacing_shift = np.int64((precision - 1) << 52)
        self.subnormal_spacing = np.int64(_bits_of(smallest_normal * 2.0 ** (1 - precision)))
        self.smallest_normal = np.int64(_bits_of(smallest_normal))
        self.smallest_normal_value = float(smallest_normal)
        self.normal_span = np.uint64(_bits_of(largest) - _bits_of(smallest_normal))
        #: The float64 fraction bits a value of the format leaves zero.
        self.dropped = np.int64((1 << (53 - precision)) - 1)
        #: From here up, rounding may land on the largest finite value (whose np.spacing is inf) or
        #: overflow: such inputs go to the plain functions.
        self.top_of_range = np.uint64(_bits_of(largest - top_spacing / 2))


_FORMATS = {"f16": _Format(11, 2.0**-14, 65504.0), "f32": _Format(24, 2.0**-126, float(np.finfo(np.float32).max))}


def _format(dtype) -> _Format:
    fmt = _FORMATS.get(dtype) if isinstance(dtype, str) else None
    if fmt is None:
        name = roundoff.dtype_name(dtype)
        if name not in _FORMATS:
            raise ValueError(f"the bit-level twins cover f16 and f32, got {dtype!r}")
        fmt = _FORMATS[name]
    return fmt


def _bits(x) -> np.ndarray:
    return np.asarray(x, np.float64).view(np.int64)


def _magnitude_in_range(x, fmt: _Format, out=None) -> np.ndarray | None:
    """The bits of |x| when every |x| lies below the format's top of range, else None. A bit
    pattern read as unsigned is below that exactly when the value is non-negative and below it,
    so non-negative inputs are used as they are (no copy unless `out` is given)."""
    bits = _bits(x)
    if bits.size == 0:
        return bits if out is None else out.view(np.int64)
    if bits.view(np.uint64).max() < fmt.top_of_range:
        if out is None:
            return bits
        np.copyto(out, np.asarray(x, np.float64))
        return out.view(np.int64)
    magnitude = np.abs(np.asarray(x, np.float64), out=out).view(np.int64)
    return magnitude if magnitude.view(np.uint64).max() < fmt.top_of_range else None


def _spacing_bits(magnitude: np.ndarray, fmt: _Format, out: np.ndarray | None = None) -> np.ndarray:
    """Bits of spacing(round_to_format(|x|)) from the bits of |x| (below the top of range)."""
    spacing = np.add(magnitude, fmt.half_spacing, out=out)
    np.bitwise_and(spacing, _EXPONENT, out=spacing)
    np.subtract(spacing, fmt.spacing_shift, out=spacing)
    return np.maximum(spacing, fmt.subnormal_spacing, out=spacing)


def ulp(x, dtype, out: np.ndarray | None = None) -> np.ndarray:
    """roundoff.ulp(x, dtype), exactly, for float64 x (f16 or f32); written into `out` (a float64
    array of x's shape, not x itself) when given."""
    fmt = _format(dtype)
    magnitude = _magnitude_in_range(x, fmt)
    if magnitude is None:
        spacing = roundoff.ulp(x, dtype)
        if out is None:
            return spacing
        out[...] = spacing
        return out
    spacing = _spacing_bits(magnitude, fmt, None if out is None else out.view(np.int64))
    return spacing.view(np.float64)


def round_to(x, dtype, out: np.ndarray) -> np.ndarray:
    """`out[...] = x.astype(format)` for float64 x, exactly (round to nearest, ties to even; inf
    beyond the format's range, as numpy stores it), into `out`, a C-contiguous float64 array of x's
    shape other than x.

    float32 is numpy's own conversion (vectorised). numpy converts to float16 one element at a
    time (about 4 ns each, most of the cost of rotating an f16 key); here a float16 normal is
    rounded on the float64 bits instead: keep the top 10 of the 52 fraction bits after adding half
    the dropped range less one plus the kept part's last bit (round to nearest, ties to even; a
    carry out of the fraction moves into the exponent field, which is then the next binade's
    correct value). Two's complement addition on a negative value's pattern acts on its magnitude
    bits alike. Values below the smallest normal (where the spacing is the subnormals' fixed one)
    are converted by numpy one by one, and an array holding a value at or above the top of range
    (where rounding may overflow), an infinity or NaN is converted by numpy whole."""
    fmt = _format(dtype)
    x = np.asarray(x, np.float64)
    if fmt is not _FORMATS["f16"]:
        with np.errstate(over="ignore"):
            out[...] = x.astype(roundoff.numpy_dtype(dtype))
        return out
    if out.shape != x.shape or not out.flags.c_contiguous or np.shares_memory(out, x):
        raise ValueError("round_to writes into a C-contiguous array of x's shape other than x")
    bits, rounded = _bits(x), out.view(np.int64)
    if bits.size == 0:
        return out
    np.left_shift(bits, 1, out=rounded)  # |x|'s bits without the sign: ordered as unsigned integers
    magnitudes = rounded.view(np.uint64)
    if magnitudes.max() >= fmt.top_of_range << np.uint64(1):
        with np.errstate(over="ignore"):
            out[...] = x.astype(np.float16)
        return out
    smallest = np.uint64(fmt.smallest_normal) << np.uint64(1)
    below = np.flatnonzero(magnitudes < smallest) if magnitudes.min() < smallest else None
    dropped = 52 - 10
    np.right_shift(bits, dropped, out=rounded)
    np.bitwise_and(rounded, 1, out=rounded)
    np.add(rounded, bits, out=rounded)
    np.add(rounded, (1 << (dropped - 1)) - 1, out=rounded)
    np.bitwise_and(rounded, ~np.int64((1 << dropped) - 1), out=rounded)
    if below is not None:
        out.reshape(-1)[below] = x.reshape(-1)[below].astype(np.float16)
    return out


def top_of_range(dtype) -> float:
    """The largest float64 below which every value's rounding to the format is handled here."""
    return float(np.array(_format(dtype).top_of_range).view(np.float64))


def faithful_rounding_bound(y, dtype, *, in_range: bool = False) -> np.ndarray:
    """roundoff.faithful_rounding_bound(y, dtype), exactly: one ulp, or the smallest normal below it.

    in_range=True: the caller vouches that every y is non-negative and below top_of_range(dtype)
    (the check is then skipped)."""
    fmt = _format(dtype)
    magnitude = _bits(y) if in_range else _magnitude_in_range(y, fmt)
    if magnitude is None:
        return roundoff.faithful_rounding_bound(y, dtype)
    # Below the smallest normal the bound is the smallest normal, so the subnormal floor of
    # _spacing_bits is not needed there: add, mask and shift only.
    bound = np.add(magnitude, fmt.half_spacing)
    np.bitwise_and(bound, _EXPONENT, out=bound)
    np.subtract(bound, fmt.spacing_shift, out=bound)
    bound = bound.view(np.float64)
    np.copyto(bound, fmt.smallest_normal_value, where=magnitude.view(np.float64) < fmt.smallest_normal_value)
    return bound


def representable_normal(x, dtype) -> np.ndarray:
    """Where float64 x is stored unchanged in the format and is 0, a normal number or an infinity:
    `x.astype(format) == x & (x == 0 | |x| >= smallest normal)`, exactly, without the conversion."""
    fmt = _format(dtype)
    bits = _bits(x)
    signed_or_special = bits.size and bits.view(np.uint64).max() >= _INFINITY
    magnitude = np.abs(np.asarray(x, np.float64)).view(np.int64) if signed_or_special else bits
    stored = np.bitwise_and(magnitude, fmt.dropped) == 0
    span = np.subtract(magnitude, fmt.smallest_normal).view(np.uint64)  # |x| - smallest normal, wrapping below 0
    normal_or_zero = span <= fmt.normal_span
    normal_or_zero |= magnitude.view(np.float64) == 0.0
    stored &= normal_or_zero
    if signed_or_special:
        stored |= magnitude.view(np.uint64) == _INFINITY
    return stored
