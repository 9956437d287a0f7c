"""ggml's block-quantized formats: their bytes, exact dequantization, and quantization as ggml's CPU does it.

ggml stores a row of K values as K / QK blocks (ggml/src/ggml-common.h; ggml-quants.c holds the
CPU reference code each function here follows, named in its docstring):

| type | values | bytes | fields (in byte order)                          | value j                          |
|------|--------|-------|-------------------------------------------------|----------------------------------|
| q8_0 | 32     | 34    | d f16, qs int8[32]                               | d q_j                            |
| q8_1 | 32     | 36    | d f16, s f16 (= d Σ q, rounded), qs int8[32]     | d q_j                            |
| q4_0 | 32     | 18    | d f16, qs u8[16]: q_j in the low nibble of byte j, q_{j+16} in the high | d (q_j - 8)   |
| q4_1 | 32     | 20    | d f16, m f16, qs u8[16] as q4_0                  | d q_j + m                        |
| q4_K | 256    | 144   | d f16, dmin f16, scales u8[12] (8 six-bit scales, mins), qs u8[128] | d sc_b q_j - dmin m_b |
| q2_K | 256    | 84    | scales u8[16] (low nibble scale, high min), qs u8[64], d, dmin f16 | d sc_b q_j - dmin m_b |

Dequantization is exact in float64: every value is a product of an f16 and a small integer
(plus an f16), which float64 holds exactly. Quantization follows ggml's `quantize_row_*_ref`
in f32, operation by operation (numpy f32 scalars in the C order, so the bytes are ggml's on a
machine that does not contract a*b+c into one FMA): `roundf` rounds half away from zero,
`nearest_int` (the 1.5·2^23 trick) half to even. Blocks are numpy uint8 arrays [..., bytes].
"""

from __future__ import annotations

import numpy as np

#: (values per block, bytes per block) of each type.
FORMATS = {"q8_0": (32, 34), "q8_1": (32, 36), "q4_0": (32, 18), "q4_1": (32, 20), "q4_K": (256, 144),
           "q2_K": (256, 84)}
F32 = np.float32


def block_values(kind: str) -> int:
    return FORMATS[kind][0]


def block_bytes(kind: str) -> int:
    return FORMATS[kind][1]


def _check(kind: str, blocks: np.ndarray) -> np.ndarray:
    if kind not in FORMATS:
        raise ValueError(f"unknown block type {kind!r}; expected one of {', '.join(FORMATS)}")
    blocks = np.asarray(blocks, np.uint8)
    if blocks.shape[-1] != block_bytes(kind):
        raise ValueError(f"{kind} blocks are {block_bytes(kind)} bytes, got a last axis of {blocks.shape[-1]}")
    return blocks


def f16_field(blocks: np.ndarray, offset: int) -> np.ndarray:
    """The little-endian f16 at byte `offset` of each block, as float64 (exact)."""
    pair = np.ascontiguousarray(blocks[..., offset:offset + 2])
    return pair.view("<f2")[..., 0].astype(np.float64)


def _f16_bytes(values) -> np.ndarray:
    """Little-endian f16 bytes of values (GGML_FP32_TO_FP16: round to nearest even; past 65504, inf)."""
    with np.errstate(over="ignore"):
        return np.asarray(values, np.float16).astype("<f2")[..., None].view(np.uint8)


def k_scale_min(scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """q4_K's 8 six-bit (scale, min) pairs from its 12 scale bytes: get_scale_min_k4 (ggml-quants.c
    L880-889): j < 4: scales[j] & 63, scales[j+4] & 63; else the low nibbles of scales[j+4] with the
    top two bits of scales[j-4] (scale) and of scales[j] (min)."""
    q = np.asarray(scales, np.int64)
    sc, mn = np.zeros(q.shape[:-1] + (8,), np.int64), np.zeros(q.shape[:-1] + (8,), np.int64)
    for j in range(8):
        if j < 4:
            sc[..., j], mn[..., j] = q[..., j] & 63, q[..., j + 4] & 63
        else:
            sc[..., j] = (q[..., j + 4] & 0xF) | ((q[..., j - 4] >> 6) << 4)
            mn[..., j] = (q[..., j + 4] >> 4) | ((q[..., j] >> 6) << 4)
    return sc, mn


def codes(kind: str, blocks) -> np.ndarray:
    """The integer codes q_j of each block [..., values] (int8 for q8, 0..15 for 4-bit, 0..3 for q2_K)."""
    blocks = _check(kind, blocks)
    if kind in ("q8_0", "q8_1"):
        start = 2 if kind == "q8_0" else 4
        return blocks[..., start:start + 32].view(np.int8).astype(np.int64)
    if kind in ("q4_0", "q4_1"):
        qs = blocks[..., (2 if kind == "q4_0" else 4):].astype(np.int64)
        return np.concatenate([qs & 0xF, qs >> 4], axis=-1)
    if kind == "q4_K":
        qs = blocks[..., 16:144].astype(np.int64).reshape(blocks.shape[:-1] + (4, 32))
        return np.stack([qs & 0xF, qs >> 4], axis=-2).reshape(blocks.shape[:-1] + (256,))
    qs = blocks[..., 16:80].astype(np.int64).reshape(blocks.shape[:-1] + (2, 32))  # q2_K: two halves of 128
    parts = [(qs[..., h, :] >> shift) & 3 for h in range(2) for shift in (0, 2, 4, 6)]
    return np.stack(parts, axis=-2).reshape(blocks.shape[:-1] + (256,))


def dequantize(kind: str, blocks) -> np.ndarray:
    """The values of each block [..., values], float64, exact (dequantize_row_* in ggml-quants.c)."""
    blocks = _check(kind, blocks)
    q = codes(kind, blocks).astype(np.float64)
    if kind in ("q8_0", "q8_1"):
        return f16_field(blocks, 0)[..., None] * q
    if kind == "q4_0":
        return f16_field(blocks, 0)[..., None] * (q - 8)
    if kind == "q4_1":
        return f16_field(blocks, 0)[..., None] * q + f16_field(blocks, 2)[..., None]
    if kind == "q4_K":
        d, dmin = f16_field(blocks, 0), f16_field(blocks, 2)
        sc, mn = k_scale_min(blocks[..., 4:16])
        scale = np.repeat(d[..., None] * sc, 32, axis=-1)
        low = np.repeat(dmin[..., None] * mn, 32, axis=-1)
        return scale * q - low
    d, dmin = f16_field(blocks, 80), f16_field(blocks, 82)  # q2_K
    sc = blocks[..., 0:16].astype(np.int64)
    scale = np.repeat(d[..., None] * (sc & 0xF), 16, axis=-1)
    low = np.repeat(dmin[..., None] * (sc >> 4), 16, axis=-1)
    return scale * q - low


def dequantize_row(kind: str, blocks) -> np.ndarray:
    """A row of blocks [..., n, bytes] as its values [..., n * values]."""
    values = dequantize(kind, blocks)
    return values.reshape(values.shape[:-2] + (-1,))


# -- quantization, as ggml's CPU reference does it ------------------------------------------------------
def _roundf(x: np.float32) -> int:
    """C roundf: half away from zero."""
    value = float(x)
    return int(np.sign(value) * np.floor(abs(value) + 0.5))


def nearest_int(x) -> int:
    """ggml-quants.c L621-626 nearest_int: x + 1.5·2^23 in f32, read back: round half to even."""
    shifted = F32(F32(x) + F32(12582912.0))
    bits = int(np.asarray(shifted, F32).view(np.int32))
    return (bits & 0x007FFFFF) - 0x00400000


def _row_blocks(x, values: int) -> np.ndarray:
    x = np.asarray(x, F32)
    if x.shape[-1] % values:
        raise ValueError(f"a row of {x.shape[-1]} values is not a whole number of {values}-value blocks")
    return x.reshape(-1, values)


def quantize_q8(x, kind: str = "q8_1") -> np.ndarray:
    """quantize_row_q8_0_ref / quantize_row_q8_1_ref (ggml-quants.c L276-331): amax over the block,
    d = amax / 127 and id = 1/d in f32 (0 for d = 0), q = roundf(x id), d stored as f16; q8_1 also
    stores s = f16(f32(Σ q) · d). Blocks [..., K/32, 34 or 36]."""
    if kind not in ("q8_0", "q8_1"):
        raise ValueError(f"quantize_q8 makes q8_0 or q8_1 blocks, not {kind}")
    x = np.asarray(x, F32)
    rows = _row_blocks(x, 32)
    out = np.zeros((rows.shape[0], block_bytes(kind)), np.uint8)
    for b, block in enumerate(rows):
        amax = F32(0)
        for v in block:
            amax = max(amax, F32(abs(v)))
        d = F32(amax / F32(127))
        inverse = F32(F32(1) / d) if d else F32(0)
        q = np.array([_roundf(F32(v * inverse)) for v in block], np.int64)
        out[b, 0:2] = _f16_bytes(d)
        if kind == "q8_1":
            out[b, 2:4] = _f16_bytes(F32(F32(int(q.sum())) * d))
        out[b, -32:] = q.astype(np.int8).view(np.uint8)
    return out.reshape(x.shape[:-1] + (-1, block_bytes(kind)))


def quantize_q4_0(x) -> np.ndarray:
    """quantize_row_q4_0_ref (L113-148): the value of largest magnitude `max` (first of equals),
    d = max / -8, id = 1/d, q = min(15, (int8)(x id + 8.5)) (truncation toward zero)."""
    x = np.asarray(x, F32)
    rows = _row_blocks(x, 32)
    out = np.zeros((rows.shape[0], 18), np.uint8)
    for b, block in enumerate(rows):
        amax, peak = F32(0), F32(0)
        for v in block:
            if amax < F32(abs(v)):
                amax, peak = F32(abs(v)), v
        d = F32(peak / F32(-8))
        inverse = F32(F32(1) / d) if d else F32(0)
        q = [min(15, _trunc_int8(F32(F32(v * inverse) + F32(8.5)))) for v in block]
        out[b, 0:2] = _f16_bytes(d)
        out[b, 2:] = [q[j] | (q[j + 16] << 4) for j in range(16)]
    return out.reshape(x.shape[:-1] + (-1, 18))


def quantize_q4_1(x) -> np.ndarray:
    """quantize_row_q4_1_ref (L150-185): min and max of the block, d = (max - min) / 15, id = 1/d,
    q = min(15, (int8)((x - min) id + 0.5)); d and m = min stored as f16."""
    x = np.asarray(x, F32)
    rows = _row_blocks(x, 32)
    out = np.zeros((rows.shape[0], 20), np.uint8)
    for b, block in enumerate(rows):
        low, high = F32(np.finfo(F32).max), F32(-np.finfo(F32).max)
        for v in block:
            low, high = min(low, v), max(high, v)
        d = F32(F32(high - low) / F32(15))
        inverse = F32(F32(1) / d) if d else F32(0)
        q = [min(15, _trunc_int8(F32(F32(F32(v - low) * inverse) + F32(0.5)))) for v in block]
        out[b, 0:2], out[b, 2:4] = _f16_bytes(d), _f16_bytes(low)
        out[b, 4:] = [q[j] | (q[j + 16] << 4) for j in range(16)]
    return out.reshape(x.shape[:-1] + (-1, 20))


def _trunc_int8(value: np.float32) -> int:
    """C's (int8_t) conversion of a value in range: toward zero."""
    return int(np.trunc(float(value)))


def make_qkx2_quants(x, weights, nmax: int, rmin: float, rdelta: float, nstep: int, use_mad: bool):
    """ggml-quants.c L799-878 make_qkx2_quants in f32: (scale, -min, codes) of one sub-block,
    fitting x ≈ scale q + min (min <= 0) by weighted least squares over nstep + 1 trial scales."""
    x = [F32(v) for v in x]
    w = [F32(v) for v in weights]
    n = len(x)
    low, high, sum_w = x[0], x[0], w[0]
    sum_x = F32(sum_w * x[0])
    for i in range(1, n):
        low, high = min(low, x[i]), max(high, x[i])
        sum_w = F32(sum_w + w[i])
        sum_x = F32(sum_x + F32(w[i] * x[i]))
    if low > 0:
        low = F32(0)
    if high == low:
        return F32(0), F32(-low), [0] * n
    iscale = F32(F32(nmax) / F32(high - low))
    scale = F32(F32(1) / iscale)
    best = F32(0)
    levels = []
    for i in range(n):
        level = max(0, min(nmax, nearest_int(F32(iscale * F32(x[i] - low)))))
        levels.append(level)
        diff = F32(F32(scale * F32(level)) + low) - x[i]
        diff = F32(abs(diff)) if use_mad else F32(diff * diff)
        best = F32(best + F32(w[i] * diff))
    if nstep < 1:
        return scale, F32(-low), levels
    for step in range(nstep + 1):
        iscale = F32(F32(F32(F32(rmin) + F32(F32(rdelta) * F32(step))) + F32(nmax)) / F32(high - low))
        sum_l = sum_l2 = sum_xl = F32(0)
        trial = []
        for i in range(n):
            level = max(0, min(nmax, nearest_int(F32(iscale * F32(x[i] - low)))))
            trial.append(level)
            wl = F32(w[i] * F32(level))
            sum_l = F32(sum_l + wl)
            sum_l2 = F32(sum_l2 + F32(wl * F32(level)))
            sum_xl = F32(sum_xl + F32(wl * x[i]))
        det = F32(F32(sum_w * sum_l2) - F32(sum_l * sum_l))
        if det > 0:
            this_scale = F32(F32(F32(sum_w * sum_xl) - F32(sum_x * sum_l)) / det)
            this_min = F32(F32(F32(sum_l2 * sum_x) - F32(sum_l * sum_xl)) / det)
            if this_min > 0:
                this_min = F32(0)
                this_scale = F32(sum_xl / sum_l2)
            error = F32(0)
            for i in range(n):
                diff = F32(F32(this_scale * F32(trial[i])) + this_min) - x[i]
                diff = F32(abs(diff)) if use_mad else F32(diff * diff)
                error = F32(error + F32(w[i] * diff))
            if error < best:
                levels, best, scale, low = trial, error, this_scale, this_min
    return scale, F32(-low), levels


def quantize_q4_K(x) -> np.ndarray:
    """quantize_row_q4_K_ref (L1457-1527): per 32-value sub-block, make_qkx2_quants(32, 15, weights
    sqrt(mean x^2) + |x|, rmin -1, rdelta 0.1, 20 steps, least squares); scales and mins to six
    bits against their maxima (d = max_scale / 63, dmin = max_min / 63), then every code again
    from the stored scales: q = clamp(nearest_int((x + dmin m) / (d sc)), 0, 15)."""
    x = np.asarray(x, F32)
    rows = _row_blocks(x, 256)
    out = np.zeros((rows.shape[0], 144), np.uint8)
    for b, row in enumerate(rows):
        scales, mins = [], []
        for j in range(8):
            part = row[32 * j:32 * j + 32]
            sum_x2 = F32(0)
            for v in part:
                sum_x2 = F32(sum_x2 + F32(v * v))
            av_x = F32(np.sqrt(F32(sum_x2 / F32(32))))
            weights = [F32(av_x + F32(abs(v))) for v in part]
            scale, the_min, _ = make_qkx2_quants(part, weights, 15, -1.0, 0.1, 20, False)
            scales.append(scale)
            mins.append(the_min)
        max_scale = max([F32(0)] + [s for s in scales if s > 0])
        max_min = max([F32(0)] + [m for m in mins if m > 0])
        inv_scale = F32(F32(63) / max_scale) if max_scale > 0 else F32(0)
        inv_min = F32(F32(63) / max_min) if max_min > 0 else F32(0)
        packed = [0] * 12
        for j in range(8):
            ls = min(63, nearest_int(F32(inv_scale * scales[j])) & 0xFF)
            lm = min(63, nearest_int(F32(inv_min * mins[j])) & 0xFF)
            if j < 4:
                packed[j], packed[j + 4] = ls, lm
            else:
                packed[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4)
                packed[j - 4] |= (ls >> 4) << 6
                packed[j] |= (lm >> 4) << 6
        d16, dmin16 = np.float16(F32(max_scale / F32(63))), np.float16(F32(max_min / F32(63)))
        out[b, 0:2], out[b, 2:4], out[b, 4:16] = _f16_bytes(d16), _f16_bytes(dmin16), packed
        sc, mn = k_scale_min(np.asarray(packed, np.uint8))
        levels = [0] * 256
        for j in range(8):
            d = F32(F32(d16) * F32(int(sc[j])))
            if not d:
                continue
            dm = F32(F32(dmin16) * F32(int(mn[j])))
            for i in range(32):
                levels[32 * j + i] = max(0, min(15, nearest_int(F32(F32(row[32 * j + i] + dm) / d))))
        for half in range(4):
            for i in range(32):
                out[b, 16 + 32 * half + i] = levels[64 * half + i] | (levels[64 * half + i + 32] << 4)
    return out.reshape(x.shape[:-1] + (-1, 144))


def quantize_q2_K(x) -> np.ndarray:
    """quantize_row_q2_K_ref (L891-959): per 16-value sub-block, make_qkx2_quants(16, 3, weights |x|,
    rmin -0.5, rdelta 0.1, 15 steps, absolute deviation); scales and mins to four bits against their
    maxima (d = max_scale / 15, dmin = max_min / 15), then the codes again from the stored scales."""
    x = np.asarray(x, F32)
    rows = _row_blocks(x, 256)
    out = np.zeros((rows.shape[0], 84), np.uint8)
    for b, row in enumerate(rows):
        levels = [0] * 256
        scales, mins = [], []
        for j in range(16):
            part = row[16 * j:16 * j + 16]
            scale, the_min, found = make_qkx2_quants(part, [F32(abs(v)) for v in part], 3, -0.5, 0.1, 15, True)
            scales.append(scale)
            mins.append(the_min)
            levels[16 * j:16 * j + 16] = found
        max_scale = max([F32(0)] + [s for s in scales if s > 0])
        max_min = max([F32(0)] + [m for m in mins if m > 0])
        packed = [0] * 16
        if max_scale > 0:
            iscale = F32(F32(15) / max_scale)
            packed = [nearest_int(F32(iscale * s)) & 0xFF for s in scales]
            d16 = np.float16(F32(max_scale / F32(15)))
        else:
            d16 = np.float16(0)
        if max_min > 0:
            iscale = F32(F32(15) / max_min)
            packed = [(p | (nearest_int(F32(iscale * m)) << 4)) & 0xFF for p, m in zip(packed, mins)]
            dmin16 = np.float16(F32(max_min / F32(15)))
        else:
            dmin16 = np.float16(0)
        for j in range(16):
            d = F32(F32(d16) * F32(packed[j] & 0xF))
            if not d:
                continue
            dm = F32(F32(dmin16) * F32(packed[j] >> 4))
            for i in range(16):
                levels[16 * j + i] = max(0, min(3, nearest_int(F32(F32(row[16 * j + i] + dm) / d))))
        out[b, 0:16] = packed
        for half in range(2):
            for i in range(32):
                base = 128 * half + i
                out[b, 16 + 32 * half + i] = (levels[base] | (levels[base + 32] << 2) | (levels[base + 64] << 4)
                                              | (levels[base + 96] << 6))
        out[b, 80:82], out[b, 82:84] = _f16_bytes(d16), _f16_bytes(dmin16)
    return out.reshape(x.shape[:-1] + (-1, 84))


QUANTIZERS = {"q8_0": lambda x: quantize_q8(x, "q8_0"), "q8_1": quantize_q8, "q4_0": quantize_q4_0,
              "q4_1": quantize_q4_1, "q4_K": quantize_q4_K, "q2_K": quantize_q2_K}


def quantize(kind: str, x) -> np.ndarray:
    """A row x [..., K] as `kind` blocks [..., K / values, bytes], as ggml's CPU reference makes them."""
    if kind not in QUANTIZERS:
        raise ValueError(f"unknown block type {kind!r}; expected one of {', '.join(QUANTIZERS)}")
    return QUANTIZERS[kind](x)


def q8_1_fields(blocks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(d, s, q) of q8_1 blocks, float64 and int64: the scale, the stored sum and the codes."""
    blocks = _check("q8_1", blocks)
    return f16_field(blocks, 0), f16_field(blocks, 2), codes("q8_1", blocks)


def dot(weight_kind: str, weights, activations) -> np.ndarray:
    """Σ_k w_k a_k of weight rows [M, K / values, bytes] with q8_1 activation rows [N, K / 32, 36],
    both dequantized exactly ([N, M], float64): the product the quantized mat-vec computes, with
    the activations as their codes say (d q), not as their stored sums do."""
    w = dequantize_row(weight_kind, weights)
    a = dequantize_row("q8_1", activations)
    return a @ w.T
