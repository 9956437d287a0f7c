"""Bit-level twins of verify.budgets.roundoff's ulp, faithful_rounding_bound and representability,
for float64 arrays: the same values, computed on the float64 bit patterns.

roundoff.ulp rounds to the format with `astype` and asks `np.spacing`; numpy has no vectorised
float16 conversion or spacing, so on large arrays that costs 10-15 ns per element. Here the
format's rounding is read off the float64 bits instead (a few integer passes, about 1.5 ns per
element), with the plain function as the fallback wherever an input is outside the range these
twins handle (values near the format's largest finite number, infinities, NaN). Every function
returns exactly what its plain twin returns; tests/fastpath/test_floats.py checks all float16
values, float32 and float64 values across every binade, and the boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from verify.budgets import roundoff

_EXPONENT_BITS = np.int64(0x7FF0000000000000)
_INFINITY_BITS = np.int64(0x7FF0000000000000)


def _bits_of(value: float) -> np.int64:
    return np.array(value, np.float64).view(np.int64)[()]


@dataclass(frozen=True)
class _Format:
    """What the bit recipes need to know of a storage format with p significand bits."""

    precision: int
    smallest_normal: float
    largest: float

    @property
    def half_spacing(self) -> np.int64:
        """Half the format's spacing, in units of the float64 fraction of the same binade: adding it
        to a float64 bit pattern carries into the exponent exactly when rounding to the format does."""
        return np.int64(1 << (52 - self.precision))

    @property
    def spacing_shift(self) -> np.int64:
        """Subtracted from an exponent field: the binade's spacing 2^(e - p + 1)."""
        return np.int64((self.precision - 1) << 52)

    @property
    def subnormal_spacing_bits(self) -> np.int64:
        return _bits_of(self.smallest_normal * 2.0 ** (1 - self.precision))

    @property
    def smallest_normal_bits(self) -> np.int64:
        return _bits_of(self.smallest_normal)

    @property
    def largest_bits(self) -> np.int64:
        return _bits_of(self.largest)

    @property
    def dropped_bits(self) -> np.int64:
        """The float64 fraction bits a value of the format leaves zero."""
        return np.int64((1 << (53 - self.precision)) - 1)

    @property
    def top_of_range(self) -> float:
        """From here up, rounding may land on the largest finite value (np.spacing of which is inf)
        or overflow: the twins hand such inputs to the plain functions."""
        top_spacing = 2.0 ** (np.floor(np.log2(self.largest)) - self.precision + 1)
        return self.largest - top_spacing / 2


_FORMATS = {
    "f16": _Format(11, 2.0**-14, 65504.0),
    "f32": _Format(24, 2.0**-126, float(np.finfo(np.float32).max)),
}


def _format(dtype) -> tuple[str, _Format]:
    name = roundoff.dtype_name(dtype)
    if name not in _FORMATS:
        raise ValueError(f"the bit-level twins cover f16 and f32, got {dtype!r}")
    return name, _FORMATS[name]


def _magnitude_bits(x, out: np.ndarray | None = None) -> np.ndarray:
    """The bits of |x| as int64, in `out` (float64, x's shape) or a fresh array: the callers work
    on it in place."""
    magnitude = np.abs(np.asarray(x, np.float64), out=out)
    return magnitude.view(np.int64)


def _in_range(magnitude_bits: np.ndarray, fmt: _Format) -> bool:
    """True when every |x| is below the format's top of range (NaN and inf are not)."""
    return magnitude_bits.size == 0 or magnitude_bits.max() < _bits_of(fmt.top_of_range)


def _spacing_bits(magnitude_bits: np.ndarray, fmt: _Format) -> np.ndarray:
    """Bits of spacing(round_to_format(|x|)), |x| below the top of range, computed in place.

    Rounding to p bits carries into the next binade exactly when adding half the format's spacing
    to the float64 fraction does, so the exponent field of (bits + half) is that of the rounded
    value; its spacing is 2^(e - p + 1), and never less than the subnormals' spacing.
    """
    spacing = magnitude_bits
    np.add(spacing, fmt.half_spacing, out=spacing)
    np.bitwise_and(spacing, _EXPONENT_BITS, out=spacing)
    np.subtract(spacing, fmt.spacing_shift, out=spacing)
    return np.maximum(spacing, fmt.subnormal_spacing_bits, out=spacing)


def ulp(x, dtype, out: np.ndarray | None = None) -> np.ndarray:
    """roundoff.ulp(x, dtype), exactly, for float64 x (f16 or f32); written into `out` (a float64
    array of x's shape, not x itself) when given."""
    _, fmt = _format(dtype)
    magnitude = _magnitude_bits(x, out)
    if not _in_range(magnitude, fmt):
        spacing = roundoff.ulp(x, dtype)
        if out is None:
            return spacing
        out[...] = spacing
        return out
    return _spacing_bits(magnitude, fmt).view(np.float64)


def faithful_rounding_bound(y, dtype) -> np.ndarray:
    """roundoff.faithful_rounding_bound(y, dtype), exactly: one ulp, or the smallest normal below it."""
    _, fmt = _format(dtype)
    magnitude = _magnitude_bits(y)
    if not _in_range(magnitude, fmt):
        return roundoff.faithful_rounding_bound(y, dtype)
    subnormal = magnitude < fmt.smallest_normal_bits
    bound = _spacing_bits(magnitude, fmt)
    bound[subnormal] = fmt.smallest_normal_bits
    return bound.view(np.float64)


def representable_normal(x, dtype) -> np.ndarray:
    """Where float64 x is stored unchanged in the format and is 0, a normal number or an infinity:
    `x.astype(format) == x & (x == 0 | |x| >= smallest normal)`, exactly, without the conversion."""
    _, fmt = _format(dtype)
    magnitude = _magnitude_bits(x)
    normal = (magnitude >= fmt.smallest_normal_bits) & (magnitude <= fmt.largest_bits)
    normal &= np.bitwise_and(magnitude, fmt.dropped_bits) == 0
    normal |= magnitude == 0
    normal |= magnitude == _INFINITY_BITS
    return normal
