"""dp4a.quantize's legal codes and scales, evaluated fast: bit for bit those of
references.dp4a_quant.quantize_blocks.

quantize_blocks decides every element's legal codes exactly: the T-values within 2.5 ULP of a/m
(each end settled by float16 or float32 round trips and nextafter, which numpy does one element at
a time for float16), then either f32 neighbour of 127 t, then either tie. About 25 ns an element,
so 65 ms for a nightly case of a few million values. Most elements need none of it: every legal
code is within a small distance of 127 a/m, and an element whose 127 a/m is farther than that
from every half-integer has one legal code, round(127 a/m).

The bound, for a of a block with max m in the divisor range WGSL bounds (2^emin <= m <= 2^-emin)
and a zero or normal (q = a/m, |q| <= 1, T of p significand bits):

- t' is a T-value within 2.5 ULP(q) of q, and ULP(q) <= 2^(1-p) |q| (the binade spacing, halved
  at a power of two) or 2^(emin+1-p) below the smallest normal; clamping t' to [-1, 1] moves it
  towards q. So |t'' - q| <= w = 2.5 max(2^(1-p) |q|, 2^(emin+1-p)).
- x' is an f32 neighbour of 127 t'', |127 t''| <= 127 < 2^7: |x' - 127 t''| <= 2^-17.
- the code is x' rounded to nearest, either tie: it can only differ from round(127 q) if some x'
  reaches a half-integer, that is if 127 q lies within 127 w + 2^-17 of one.

So where the distance from y = fl(127 fl(a / m)) (within 2^-45 of 127 q) to the nearest
half-integer exceeds 127 w + 2^-17 + 2^-40, the legal codes are exactly {round(y)}: the
interval quantize_blocks computes, [x'_lo, x'_hi], lies strictly inside (k - 1/2, k + 1/2), so its
ceil(x'_lo - 1/2) and floor(x'_hi + 1/2) are both k. Every other element (near a half-integer, a
subnormal a) is decided by references.dp4a_quant.legal_codes,
the plain code, on those elements only; a block outside the divisor range (the zero block too)
may hold any byte, -128..127, as quantize_blocks says. Where most values need the plain code (the
tie and subnormal blocks the cases draw on purpose), quantize_blocks decides the whole input.
Scales (one per 128 values) are its legal_scales.

tests/fastpath/test_dp4a_quantize_fastpath.py checks the result against quantize_blocks with ==
on drawn cases (which place values at ties on purpose) and on every float16 value against
chosen block maxima.
"""

from __future__ import annotations

import numpy as np

from verify.references.dp4a_quant import ACTIVATION_BLOCK, CODE_MAX, legal_codes, legal_scales, quantize_blocks

#: (significand bits p, smallest normal exponent emin) of each format.
_FORMATS = {"f16": (11, -14), "f32": (24, -126)}
_NUMPY = {"f16": np.float16, "f32": np.float32}


def legal_sets(a, dtype: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(code_lo, code_hi, scale_lo, scale_hi) of quantize_blocks(a, dtype), exactly (codes int16,
    scales float64). An input quantize_blocks would refuse, or one not already stored in dtype, is
    handed to quantize_blocks, which decides it (errors included)."""
    a = np.asarray(a)
    if dtype not in _FORMATS or a.dtype != _NUMPY[dtype] or a.ndim < 1 or a.shape[-1] == 0 or \
            a.shape[-1] % ACTIVATION_BLOCK or not np.isfinite(a).all():
        plain = quantize_blocks(a, dtype)
        return plain.code_lo, plain.code_hi, plain.scale_lo, plain.scale_hi
    precision, emin = _FORMATS[dtype]
    blocks = a.astype(np.float64).reshape(-1, ACTIVATION_BLOCK)
    magnitude = np.abs(blocks)
    block_max = magnitude.max(axis=-1)
    bounded = (block_max >= 2.0**emin) & (block_max <= 2.0**-emin)
    y = blocks / np.where(bounded, block_max, 1.0)[:, None]
    # margin = 127 w + 2^-17 + 2^-40 with w = 2.5 max(2^(1-p) |q|, 2^(emin+1-p)), |q| = |y| / 127 here
    margin = np.maximum(np.abs(y), 2.0**emin)
    margin *= CODE_MAX * 2.5 * 2.0 ** (1 - precision)
    margin += 2.0**-17 + 2.0**-40
    y *= CODE_MAX
    nearest = np.floor(y)
    distance = np.abs(y - nearest - 0.5)  # to the nearest half-integer, floor(y) + 1/2
    sure = (distance > margin) & ((magnitude == 0) | (magnitude >= 2.0**emin))
    unsure = np.flatnonzero(~sure & bounded[:, None])
    if unsure.size > blocks.size // 2:  # mostly ties or subnormals (drawn on purpose): the plain code whole
        plain = quantize_blocks(a, dtype)
        return plain.code_lo, plain.code_hi, plain.scale_lo, plain.scale_hi
    code = np.floor(y + 0.5)
    lo, hi = np.where(bounded[:, None], code, -CODE_MAX - 1), np.where(bounded[:, None], code, CODE_MAX)
    if unsure.size:
        row = unsure // ACTIVATION_BLOCK
        lo.reshape(-1)[unsure], hi.reshape(-1)[unsure] = legal_codes(blocks.reshape(-1)[unsure], block_max[row], dtype)
    scale_lo, scale_hi = legal_scales(block_max, dtype)
    blocks_shape = a.shape[:-1] + (a.shape[-1] // ACTIVATION_BLOCK,)
    return (lo.reshape(a.shape).astype(np.int16), hi.reshape(a.shape).astype(np.int16),
            scale_lo.reshape(blocks_shape), scale_hi.reshape(blocks_shape))
