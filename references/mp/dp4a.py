"""mpmath twins of references.dp4a_quant and references.nbits, element by element, 50 digits.

Restated from the definitions (docs/ort-dp4a.md §2, §4, §5; WGSL #floating-point-accuracy,
#pack4x8snorm-builtin) with plain loops, so that the vectorised float64 code has something
independent to agree with: formats are rounded by scaling to an integer grid, ULPs found from
neighbouring T-values, legal codes by trying every code, bits read one field at a time.

At 50 digits (166 bits) a quotient of T-values is exact when it is dyadic with few bits, and
otherwise lies at least 2^-52 (relative) from every number of p + 4 bits (T-values, half-way
points, the ends of a 2.5-ULP interval), so every rounding decision below is the exact one.
Inputs are float64 arrays or nested lists of exact values.
"""

from __future__ import annotations

from mpmath import mp, mpf

DIGITS = 50
_FORMATS = {"f16": (11, -14), "f32": (24, -126)}  # significand bits p, smallest normal exponent


def round_to_format(x, dtype: str, mode: str = "nearest"):
    """x rounded to a T-value: "nearest" (ties to even), "down" or "up". Subnormals kept."""
    x = mpf(x)
    if x == 0:
        return mpf(0)
    p, emin = _FORMATS[dtype]
    _, exponent = mp.frexp(abs(x))  # |x| = f * 2**exponent, f in [0.5, 1)
    spacing = mpf(2) ** (max(exponent - 1, emin) - p + 1)
    steps = x / spacing
    if mode == "down":
        k = mp.floor(steps)
    elif mode == "up":
        k = mp.ceil(steps)
    else:
        k = mp.floor(steps)
        excess = steps - k
        if excess > 0.5 or (excess == 0.5 and int(k) % 2 == 1):
            k += 1
    return k * spacing


def wgsl_ulp(x, dtype: str):
    """ULP(x) as WGSL defines it: the least b - a over T-values a <= x <= b with a != b."""
    with mp.workdps(DIGITS):
        below, above = round_to_format(x, dtype, "down"), round_to_format(x, dtype, "up")
        if below != above:
            return above - below
        # a step below every gap of T (>= 2^-24 |x|, >= 2^-149) yet visible at 50 digits
        step = max(abs(x) * mpf(2) ** -100, mpf(2) ** -200)
        predecessor = round_to_format(x - step, dtype, "down")
        successor = round_to_format(x + step, dtype, "up")
        return min(x - predecessor, successor - x)


def division_results(num, den, dtype: str):
    """(least, greatest) T-value within 2.5 ULP of num/den: what WGSL's `/` may return."""
    with mp.workdps(DIGITS):
        quotient = mpf(num) / mpf(den)
        half_width = mpf(2.5) * wgsl_ulp(quotient, dtype)
        least = round_to_format(quotient - half_width, dtype, "up")
        return least, round_to_format(quotient + half_width, dtype, "down")


def quantize_block(values, dtype: str) -> dict:
    """One 128-value block: nominal codes and scale, and the legal code and scale ranges.

    Returns {"codes", "code_lo", "code_hi": lists of int; "scale", "scale_lo", "scale_hi": mpf}.
    """
    emin = _FORMATS[dtype][1]
    smallest_normal = mpf(2) ** emin
    with mp.workdps(DIGITS):
        a = [mpf(float(v)) for v in values]
        m = max(abs(x) for x in a)
        scale_lo, scale_hi = division_results(m, 127, dtype)
        if scale_lo < smallest_normal:  # a subnormal result may be flushed to zero
            scale_lo = min(scale_lo, mpf(0))
        bounded = 2 ** emin <= m <= 2 ** -emin  # where WGSL bounds the division's error
        result = {"codes": [], "code_lo": [], "code_hi": [], "scale": round_to_format(m / 127, dtype),
                  "scale_lo": scale_lo, "scale_hi": scale_hi}
        for x in a:
            t = round_to_format(x / m, dtype) if m != 0 else mpf(0)
            result["codes"].append(int(mp.floor(mpf(0.5) + 127 * t)))
            if not bounded:
                result["code_lo"].append(-128)
                result["code_hi"].append(127)
                continue
            t_lo, t_hi = division_results(x, m, dtype)
            # f32 values, so exact as Python floats
            x_lo = float(round_to_format(127 * max(mpf(-1), min(mpf(1), t_lo)), "f32", "down"))
            x_hi = float(round_to_format(127 * max(mpf(-1), min(mpf(1), t_hi)), "f32", "up"))
            legal = [k for k in range(-127, 128) if k - 0.5 <= x_hi and k + 0.5 >= x_lo]
            if x != 0 and abs(x) < smallest_normal:  # a subnormal input may be flushed to zero
                legal.append(0)
            result["code_lo"].append(min(legal))
            result["code_hi"].append(max(legal))
        return result


def unpack_field(octets, index: int, bits: int) -> int:
    """Field `index` of a packed byte row: bits (index*bits) % 8 upward of byte (index*bits) // 8."""
    byte = int(octets[index * bits // 8])
    return (byte >> (index * bits % 8)) & (2**bits - 1)


def centered_weights(packed, zero_points, bits: int, block_size: int, K: int) -> list:
    """q - zp for every weight, [N][K] Python ints."""
    rows = []
    for n in range(len(packed)):
        row = []
        for k in range(K):
            block, element = divmod(k, block_size)
            q = unpack_field(packed[n][block], element, bits)
            zp = 2 ** (bits - 1) if zero_points is None else unpack_field(zero_points[n], block, bits)
            row.append(q - zp)
        rows.append(row)
    return rows


def dequantize_weights(packed, scales, zero_points, bits: int, block_size: int, K: int) -> list:
    """w = (q - zp) * scale, [N][K] mpf."""
    centered = centered_weights(packed, zero_points, bits, block_size, K)
    return [[c * mpf(float(scales[n][k // block_size])) for k, c in enumerate(row)] for n, row in enumerate(centered)]


def matmul_nbits(a, packed, scales, zero_points, bias, bits: int, block_size: int) -> list:
    """Y [M][N] = sum_k a[m][k] * w[n][k] + bias[n] for a 2-D A [M][K], in mpf."""
    with mp.workdps(DIGITS):
        K = len(a[0])
        w = dequantize_weights(packed, scales, zero_points, bits, block_size, K)
        return [
            [mp.fsum(mpf(float(a_row[k])) * w_row[k] for k in range(K)) + (0 if bias is None else mpf(float(bias[n])))
             for n, w_row in enumerate(w)]
            for a_row in a
        ]


def dp4a_chunk_sums(a_codes, w_centered) -> list:
    """I[m][n][c] = sum over the 32 k of chunk c of a_code * (q - zp), Python ints."""
    K = len(w_centered[0])
    return [
        [[sum(int(a_row[k]) * w_row[k] for k in range(c, c + 32)) for c in range(0, K, 32)] for w_row in w_centered]
        for a_row in a_codes
    ]


def dp4a_product(codes, a_scales, packed, scales, zero_points, bias, bits: int, block_size: int) -> list:
    """y[m][n] = sum_c s_a[m][c // 4] * s_b[n][32c // block_size] * I_c + bias[n], in mpf (2-D codes)."""
    with mp.workdps(DIGITS):
        K = len(codes[0])
        sums = dp4a_chunk_sums(codes, centered_weights(packed, zero_points, bits, block_size, K))
        y = []
        for m, row in enumerate(sums):
            y_row = []
            for n, chunk_sums in enumerate(row):
                total = mp.fsum(
                    mpf(float(a_scales[m][c // 4])) * mpf(float(scales[n][32 * c // block_size])) * chunk_sum
                    for c, chunk_sum in enumerate(chunk_sums)
                )
                y_row.append(total + (0 if bias is None else mpf(float(bias[n]))))
            y.append(y_row)
        return y
