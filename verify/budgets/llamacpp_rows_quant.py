"""Legal outputs of ggml-webgpu's SET_ROWS into block-quantized tables (set_rows_quant.wgsl).

The program quantizes each 32-value block of an f32 source row the way ggml's CPU quantizer does
(references.ggml_quants.quantize_q8 / quantize_q4_0) but in WGSL's f32, whose division may err by
2.5 ULP (WGSL §15.7.4 accuracy), whose other operations may round to either neighbour and may
flush subnormals, whose round() rounds half to even where ggml's roundf rounds half away from zero,
and whose pack2x16float rounds to either f16 neighbour. Nothing else in it is approximate: the
block's max |x| is found exactly, the codes are integers and the stores move bits. So, as
quantize_q8's (verify.budgets.llamacpp_quant.quantize_legal), its budget is an interval of legal
values per stored field with no further tolerance: `set_rows_quant_legal`.

The contract speaks for blocks whose max |x| is 0 or at least 2^-96 (the scale d stays a normal
f32, so the division's accuracy holds and only values far below the block's max can be flushed),
and whose scale stays inside f16's range (pack2x16float of a value past it is indeterminate in
WGSL; ggml's CPU stores inf): `QUANT_DOMAIN` says what the cases keep to.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.llamacpp_quant import _f16_interval
from verify.budgets.roundoff import smallest_normal
from verify.budgets.wgsl_accuracy import division_rel, rounding_rel

#: The divisor of each type's scale (d = amax / 127 for q8_0, d = max / -8 for q4_0) and the
#: smallest nonzero block max |x| the contract speaks for.
DIVISOR = {"q8_0": 127.0, "q4_0": -8.0}
SMALLEST_MAX = 2.0**-96
F16_MAX = 65504.0


def _blocks(x) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if x.shape[-1] % 32:
        raise ValueError(f"rows of {x.shape[-1]} values are not whole 32-value blocks")
    return x.reshape(x.shape[:-1] + (x.shape[-1] // 32, 32))


def block_peaks(x) -> np.ndarray:
    """Per block [..., blocks] of rows x [..., n]: the value of largest magnitude, the first of
    equal magnitudes in the block's order (what both ggml's CPU loop and the program's `amax < av`
    loop keep); its magnitude is the block's max |x|."""
    blocks = _blocks(x)
    first = np.argmax(np.abs(blocks), axis=-1)
    return np.take_along_axis(blocks, first[..., None], axis=-1)[..., 0]


def quant_domain_error(dst_type: str, x) -> str | None:
    """Why rows x [..., n] lie outside the contract of `set_rows_quant_legal`, or None."""
    peak = np.abs(block_peaks(x))
    e_div = division_rel("f32") + rounding_rel("f32")
    if ((peak > 0) & (peak < SMALLEST_MAX)).any():
        return "a block's max |x| lies in (0, 2^-96): its scale would not be a normal f32"
    if (peak / abs(DIVISOR[dst_type]) * (1 + e_div) >= F16_MAX).any():
        return "a block's scale reaches past f16's range (pack2x16float of it is indeterminate)"
    return None


def set_rows_quant_legal(dst_type: str, x):
    """Legal (d, codes) intervals, ([..., blocks], [..., blocks, 32]) float64, of the blocks
    set_rows_quant.wgsl writes for f32 rows x [..., n] into a `dst_type` (q8_0 or q4_0) table.

    Per block with m = max |x| exact and M its first value of that magnitude:

    - d' = m / 127 (q8_0) or M / -8 (q4_0) in f32: within e_div = division_rel + r of the exact
      quotient (r = 2u_f32, either neighbour); id' = 1/d' within e_div of 1/d'. So x id' lies
      within t (1 ± e) of t = x / d exactly (t = 127 x / m, or -8 x / M), with
      e = (1 + e_div)^3 (1 + r) - 1 (1/(1 - δ) <= (1 + δ)^2 for δ < 1/2 covers d's error in the
      inverse; r the product's rounding), and within a = 2^-126 (1 + id'_max) more, where a
      subnormal x may be read as 0 or the product flushed (the flush moves a result below 2^-126;
      x below 2^-126 contributes |x| id' at most).
    - q8_0: round(x id') (WGSL: ties to even; ggml: away from zero) is an integer within 1/2 of
      x id', so the legal codes are the integers in [t_lo - 1/2, t_hi + 1/2]; |t| <= 127 keeps
      them in [-127, 127] before the & 0xFF.
    - q4_0: i32(x id' + 8.5) truncates the f32 sum, which lies in (t ± a)(1 ± e) + 8.5 rounded
      once more (r); the sum stays above 0 (t >= -8 (1 + e)), so truncation is floor there, and
      floor is monotone: the legal codes are clamp(floor(y_lo), 0, 15) .. clamp(floor(y_hi), 0, 15)
      with y_lo = (t_lo - a + 8.5)(1 - r), y_hi = (t_hi + a + 8.5)(1 + r). (ggml's CPU takes the
      same floor of x id + 8.5, a tie rounding up; its min(15, .) the same clamp.)
    - d stored: pack2x16float(d') keeps either f16 neighbour of d', or 0 below f16's smallest
      normal (_f16_interval), on d's side of zero (q8_0: d >= 0; q4_0: d has the sign of -M).
    - A block of zeros: d = 0 (0 / 127), id = 0 by the program's select, every code round(0) = 0
      (q8_0) or i32(8.5) = 8 (q4_0), exactly.

    Rows must lie in quant_domain_error's domain (a ValueError otherwise)."""
    if dst_type not in DIVISOR:
        raise ValueError(f"set_rows_quant quantizes to q8_0 or q4_0, not {dst_type!r}")
    why = quant_domain_error(dst_type, x)
    if why:
        raise ValueError(why)
    blocks = _blocks(x)
    peak = block_peaks(x)
    m = np.abs(peak)
    zero = m == 0
    r = rounding_rel("f32")
    e_div = division_rel("f32") + r
    e = (1 + e_div) ** 3 * (1 + r) - 1
    exact_d = np.where(zero, 0.0, peak / DIVISOR[dst_type]) if dst_type == "q4_0" else m / DIVISOR[dst_type]
    safe_d = np.where(zero, 1.0, exact_d)
    t = np.where(zero[..., None], 0.0, blocks / safe_d[..., None])
    inverse_max = np.where(zero, 0.0, 1.0 / np.abs(safe_d) * (1 + e_div) ** 3)
    a = smallest_normal("f32") * (1 + inverse_max)[..., None]
    t_lo, t_hi = t - e * np.abs(t) - a, t + e * np.abs(t) + a
    if dst_type == "q8_0":
        q_lo, q_hi = np.ceil(t_lo - 0.5), np.floor(t_hi + 0.5)
    else:
        q_lo = np.clip(np.floor((t_lo + 8.5) * (1 - r)), 0, 15)
        q_hi = np.clip(np.floor((t_hi + 8.5) * (1 + r)), 0, 15)
    q_lo, q_hi = np.where(zero[..., None], 0.0 if dst_type == "q8_0" else 8.0, q_lo), \
        np.where(zero[..., None], 0.0 if dst_type == "q8_0" else 8.0, q_hi)
    d_lo, d_hi = _f16_interval(exact_d - e_div * np.abs(exact_d), exact_d + e_div * np.abs(exact_d))
    positive = exact_d > 0
    d_lo = np.where(positive, np.maximum(d_lo, 0.0), d_lo)
    d_hi = np.where(positive, d_hi, np.minimum(d_hi, 0.0))
    d_lo, d_hi = np.where(zero, 0.0, d_lo), np.where(zero, 0.0, d_hi)
    return (d_lo, d_hi), (q_lo, q_hi)
