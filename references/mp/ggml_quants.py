"""mpmath twins of references.ggml_quants, block by block and value by value, 50 digits.

Restated from ggml's block layouts (ggml/src/ggml-common.h) with plain loops over bytes and bits,
each field read by itself (an f16 decoded from its sign, exponent and mantissa bits), so that the
vectorised code has something independent to agree with: every value and every dot product
here is exact (a sum of K products of an f16 and small integers has far fewer than 166 bits).
The rounding rules of ggml's quantizers are restated on exact rationals: roundf (half away from
zero), nearest_int (half to even), the f32 and f16 roundings of one operation.
"""

from __future__ import annotations

from fractions import Fraction

from mpmath import mp, mpf

DIGITS = 50
_LAYOUT = {"q8_0": (32, 34), "q8_1": (32, 36), "q4_0": (32, 18), "q4_1": (32, 20), "q4_K": (256, 144),
           "q2_K": (256, 84)}


def f16_value(low: int, high: int) -> Fraction:
    """The little-endian f16 of two bytes, exactly: sign, five exponent bits, ten mantissa bits."""
    bits = low | (high << 8)
    sign = -1 if bits >> 15 else 1
    exponent, mantissa = (bits >> 10) & 0x1F, bits & 0x3FF
    if exponent == 0x1F:
        raise ValueError("an f16 field holds Inf or NaN")
    if exponent == 0:
        return sign * Fraction(mantissa, 1 << 24)
    return sign * Fraction(1024 + mantissa, 1024) * Fraction(2) ** (exponent - 15)


def _scale_min_k4(scales: list[int], j: int) -> tuple[int, int]:
    if j < 4:
        return scales[j] & 63, scales[j + 4] & 63
    return (scales[j + 4] & 0xF) | ((scales[j - 4] >> 6) << 4), (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4)


def block_values(kind: str, block) -> list[Fraction]:
    """The values of one block (a list of its bytes), exactly, read field by field."""
    b = [int(v) for v in block]
    if len(b) != _LAYOUT[kind][1]:
        raise ValueError(f"{kind} blocks have {_LAYOUT[kind][1]} bytes, got {len(b)}")
    if kind in ("q8_0", "q8_1"):
        d = f16_value(b[0], b[1])
        start = 2 if kind == "q8_0" else 4
        return [d * (v - 256 if v >= 128 else v) for v in b[start:start + 32]]
    if kind in ("q4_0", "q4_1"):
        d = f16_value(b[0], b[1])
        offset = -8 if kind == "q4_0" else 0
        minimum = 0 if kind == "q4_0" else f16_value(b[2], b[3])
        qs = b[2:] if kind == "q4_0" else b[4:]
        low = [d * ((v & 0xF) + offset) + minimum for v in qs]
        high = [d * ((v >> 4) + offset) + minimum for v in qs]
        return low + high
    if kind == "q4_K":
        d, dmin = f16_value(b[0], b[1]), f16_value(b[2], b[3])
        scales, qs = b[4:16], b[16:144]
        out = []
        for chunk in range(4):
            for nibble in range(2):
                sc, mn = _scale_min_k4(scales, 2 * chunk + nibble)
                for i in range(32):
                    q = (qs[32 * chunk + i] >> (4 * nibble)) & 0xF
                    out.append(d * sc * q - dmin * mn)
        return out
    scales, qs = b[0:16], b[16:80]  # q2_K
    d, dmin = f16_value(b[80], b[81]), f16_value(b[82], b[83])
    out, sub = [], 0
    for half in range(2):
        for shift in (0, 2, 4, 6):
            for part in range(2):
                sc = scales[sub]
                sub += 1
                for i in range(16):
                    q = (qs[32 * half + 16 * part + i] >> shift) & 3
                    out.append(d * (sc & 0xF) * q - dmin * (sc >> 4))
    return out


def row_values(kind: str, blocks) -> list[Fraction]:
    return [value for block in blocks for value in block_values(kind, block)]


def dot(weight_kind: str, weight_row, activation_row):
    """Σ_k w_k a_k of one weight row and one q8_1 activation row, each a list of blocks, exact
    (Fractions summed, returned as an mpf at 50 digits)."""
    w, a = row_values(weight_kind, weight_row), row_values("q8_1", activation_row)
    if len(w) != len(a):
        raise ValueError(f"rows of {len(w)} and {len(a)} values")
    with mp.workdps(DIGITS):
        return mpf(sum((x * y for x, y in zip(w, a)), Fraction(0)).numerator) / \
            sum((x * y for x, y in zip(w, a)), Fraction(0)).denominator


def round_half_away(x: Fraction) -> int:
    """C roundf on an exact value."""
    whole = abs(x.numerator) // abs(x.denominator) if x >= 0 else -((-x.numerator) // x.denominator)
    rest = abs(x - whole)
    step = 1 if x >= 0 else -1
    return whole + step if rest >= Fraction(1, 2) else whole


def round_to_float(x: Fraction, bits: int, emin: int) -> Fraction:
    """x rounded to nearest, ties to even, in a binary format of `bits` significand bits whose
    smallest normal is 2^emin (subnormals kept): one correctly rounded f32 or f16 operation."""
    if x == 0:
        return Fraction(0)
    sign, magnitude = (1, x) if x > 0 else (-1, -x)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    while Fraction(2) ** exponent > magnitude:
        exponent -= 1
    while Fraction(2) ** (exponent + 1) <= magnitude:
        exponent += 1
    spacing = Fraction(2) ** (max(exponent, emin) - bits + 1)
    steps = magnitude / spacing
    k = steps.numerator // steps.denominator
    excess = steps - k
    if excess > Fraction(1, 2) or (excess == Fraction(1, 2) and k % 2 == 1):
        k += 1
    return sign * k * spacing


def f32(x) -> Fraction:
    return round_to_float(Fraction(x), 24, -126)


def f16(x) -> Fraction:
    return round_to_float(Fraction(x), 11, -14)


def quantize_q8_1_block(values) -> tuple[Fraction, Fraction, list[int]]:
    """(d, s, q) of quantize_row_q8_1_ref restated on exact values: amax, d = f32(amax / 127),
    id = f32(1 / d), q = roundf(f32(x id)), stored d = f16(d), s = f16(f32(Σq · d))."""
    x = [Fraction(float(v)) for v in values]
    amax = max(abs(v) for v in x)
    d = f32(amax / 127)
    inverse = f32(1 / d) if d else Fraction(0)
    q = [round_half_away(f32(v * inverse)) for v in x]
    return f16(d), f16(f32(sum(q) * d)), q


def quantize_q8_0_block(values) -> tuple[Fraction, list[int]]:
    """(d, q) of quantize_row_q8_0_ref on exact values: quantize_q8_1_block without the sum."""
    d, _, q = quantize_q8_1_block(values)
    return d, q


def trunc_toward_zero(x: Fraction) -> int:
    """C's conversion of an exact value to an integer: toward zero."""
    whole = abs(x.numerator) // x.denominator
    return whole if x >= 0 else -whole


def quantize_q4_0_block(values) -> tuple[Fraction, list[int]]:
    """(d, q) of quantize_row_q4_0_ref on exact values: M the first value of largest magnitude,
    d = f32(M / -8), id = f32(1 / d) (0 for d = 0), q = min(15, trunc(f32(f32(x id) + 8.5))), stored
    d = f16(d); q the nibbles 0..15 in value order."""
    x = [Fraction(float(v)) for v in values]
    peak = Fraction(0)
    for v in x:
        if abs(peak) < abs(v):
            peak = v
    d = f32(peak / -8)
    inverse = f32(1 / d) if d else Fraction(0)
    q = [min(15, trunc_toward_zero(f32(f32(v * inverse) + Fraction(17, 2)))) for v in x]
    return f16(d), q
