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
# Each quantizer works on every block at once: an operation of ggml's per-block C code is one numpy
# f32 operation over all blocks, in the same order. A C loop that accumulates (a running sum, a
# running min or max) stays a loop over the values of a block, so every sum is added in C's order
# and every min or max keeps C's choice between equal values; a C `if` on one block is a mask.

def nearest_int(x):
    """ggml-quants.c L621-626 nearest_int of each value: x + 1.5·2^23 in f32, read back: round half
    to even (int64; a scalar for a scalar)."""
    shifted = np.asarray(np.asarray(x, F32) + F32(12582912.0), F32)
    ints = (shifted.view(np.int32).astype(np.int64) & 0x007FFFFF) - 0x00400000
    return int(ints) if ints.ndim == 0 else ints


def _roundf(x: np.ndarray) -> np.ndarray:
    """C roundf of each value: half away from zero (int64)."""
    value = np.asarray(x, np.float64)
    return (np.sign(value) * np.floor(np.abs(value) + 0.5)).astype(np.int64)


def _trunc_int8(x: np.ndarray) -> np.ndarray:
    """C's (int8_t) conversion of each value in range: toward zero (int64)."""
    return np.trunc(np.asarray(x, np.float64)).astype(np.int64)


def _row_blocks(x, values: int) -> np.ndarray:
    x = np.asarray(x, F32)
    if x.shape[-1] % values:
        raise ValueError(f"a row of {x.shape[-1]} values is not a whole number of {values}-value blocks")
    return x.reshape(-1, values)


def _running_max(values: np.ndarray, start) -> np.ndarray:
    """`m = start; for v in block: m = max(m, v)` per block (the last axis): C's fmaxf chain, a
    value replacing the running one only where it is larger."""
    running = np.full(values.shape[:-1], start, F32)
    for i in range(values.shape[-1]):
        running = np.where(values[..., i] > running, values[..., i], running)
    return running


def _running_min(values: np.ndarray, start) -> np.ndarray:
    """`m = start; for v in block: m = min(m, v)` per block, a value replacing only where smaller."""
    running = np.full(values.shape[:-1], start, F32)
    for i in range(values.shape[-1]):
        running = np.where(values[..., i] < running, values[..., i], running)
    return running


def _f32_sum(terms: np.ndarray, from_first: bool = False) -> np.ndarray:
    """Σ over the last axis in f32, one term after another as C's loop adds them: from 0, or
    (`from_first`) from the first term, as a C sum that starts `s = t[0]` does (the two differ in
    the sign of a zero sum of negative zeros)."""
    total = terms[..., 0].astype(F32) if from_first else np.zeros(terms.shape[:-1], F32)
    for i in range(1 if from_first else 0, terms.shape[-1]):
        total = total + terms[..., i]
    return total


def _inverse(d: np.ndarray) -> np.ndarray:
    """`id = d ? 1.0f/d : 0.0f` of each block."""
    with np.errstate(divide="ignore"):
        return np.where(d != 0, F32(1) / d, F32(0)).astype(F32)


def quantize_q8(x, kind: str = "q8_1") -> np.ndarray:
    """quantize_row_q8_0_ref / quantize_row_q8_1_ref (ggml-quants.c L276-331): amax over the block,
    d = amax / 127 and id = 1/d in f32 (0 for d = 0), q = roundf(x id), d stored as f16; q8_1 also
    stores s = f16(f32(Σ q) · d). Blocks [..., K/32, 34 or 36]."""
    if kind not in ("q8_0", "q8_1"):
        raise ValueError(f"quantize_q8 makes q8_0 or q8_1 blocks, not {kind}")
    x = np.asarray(x, F32)
    rows = _row_blocks(x, 32)
    out = np.zeros((rows.shape[0], block_bytes(kind)), np.uint8)
    d = _running_max(np.abs(rows), 0) / F32(127)
    q = _roundf(rows * _inverse(d)[:, None])
    out[:, 0:2] = _f16_bytes(d)
    if kind == "q8_1":
        out[:, 2:4] = _f16_bytes(q.sum(axis=1).astype(F32) * d)
    out[:, -32:] = q.astype(np.int8).view(np.uint8)
    return out.reshape(x.shape[:-1] + (-1, block_bytes(kind)))


def _nibbles(q: np.ndarray) -> np.ndarray:
    """q4_0's and q4_1's 16 bytes from 32 codes: q_j in the low nibble of byte j, q_{j+16} high."""
    return (q[:, :16] | (q[:, 16:] << 4)).astype(np.uint8)


def quantize_q4_0(x) -> np.ndarray:
    """quantize_row_q4_0_ref (L113-148): the value of largest magnitude `max` (first of equals),
    d = max / -8, id = 1/d, q = min(15, (int8)(x id + 8.5)) (truncation toward zero)."""
    x = np.asarray(x, F32)
    rows = _row_blocks(x, 32)
    out = np.zeros((rows.shape[0], 18), np.uint8)
    amax, peak = np.zeros(rows.shape[0], F32), np.zeros(rows.shape[0], F32)
    for i in range(32):  # `if (amax < fabsf(v)) { amax = fabsf(v); max = v; }`
        larger = amax < np.abs(rows[:, i])
        amax, peak = np.where(larger, np.abs(rows[:, i]), amax), np.where(larger, rows[:, i], peak)
    d = peak / F32(-8)
    q = np.minimum(15, _trunc_int8(rows * _inverse(d)[:, None] + F32(8.5)))
    out[:, 0:2], out[:, 2:] = _f16_bytes(d), _nibbles(q)
    return out.reshape(x.shape[:-1] + (-1, 18))


def quantize_q4_1(x) -> np.ndarray:
    """quantize_row_q4_1_ref (L150-185): min and max of the block, d = (max - min) / 15, id = 1/d,
    q = min(15, (int8)((x - min) id + 0.5)); d and m = min stored as f16."""
    x = np.asarray(x, F32)
    rows = _row_blocks(x, 32)
    out = np.zeros((rows.shape[0], 20), np.uint8)
    low, high = _running_min(rows, np.finfo(F32).max), _running_max(rows, -np.finfo(F32).max)
    d = (high - low) / F32(15)
    q = np.minimum(15, _trunc_int8((rows - low[:, None]) * _inverse(d)[:, None] + F32(0.5)))
    out[:, 0:2], out[:, 2:4], out[:, 4:] = _f16_bytes(d), _f16_bytes(low), _nibbles(q)
    return out.reshape(x.shape[:-1] + (-1, 20))


def make_qkx2_quants(x, weights, nmax: int, rmin: float, rdelta: float, nstep: int, use_mad: bool):
    """ggml-quants.c L799-878 make_qkx2_quants in f32, of every sub-block (the rows of x and
    weights, [sub-blocks, n]) at once: (scale, -min, codes) of each, fitting x ≈ scale q + min
    (min <= 0) by weighted least squares over nstep + 1 trial scales. A trial that fits better
    replaces scale and min, and later trials start from that min, as in C."""
    x, w = np.asarray(x, F32), np.asarray(weights, F32)
    low, high = _running_min(x, np.inf), _running_max(x, -np.inf)
    sum_w, sum_x = _f32_sum(w, from_first=True), _f32_sum(w * x, from_first=True)
    low = np.where(low > 0, F32(0), low)
    flat = high == low

    def diffs(scale, low, levels):
        diff = (scale[:, None] * levels.astype(F32) + low[:, None]) - x
        return np.abs(diff) if use_mad else diff * diff

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        iscale = F32(nmax) / (high - low)
        scale = F32(1) / iscale
        levels = np.clip(nearest_int(iscale[:, None] * (x - low[:, None])), 0, nmax)
        best = _f32_sum(w * diffs(scale, low, levels))
        for step in range(nstep + 1 if nstep >= 1 else 0):
            iscale = (F32(F32(rmin) + F32(F32(rdelta) * F32(step))) + F32(nmax)) / (high - low)
            trial = np.clip(nearest_int(iscale[:, None] * (x - low[:, None])), 0, nmax)
            levels_f32 = trial.astype(F32)  # an int64 factor would make the products float64
            wl = w * levels_f32
            sum_l, sum_l2, sum_xl = _f32_sum(wl), _f32_sum(wl * levels_f32), _f32_sum(wl * x)
            det = sum_w * sum_l2 - sum_l * sum_l
            this_scale = (sum_w * sum_xl - sum_x * sum_l) / det
            this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det
            positive = this_min > 0
            this_min = np.where(positive, F32(0), this_min)
            this_scale = np.where(positive, sum_xl / sum_l2, this_scale)
            error = _f32_sum(w * diffs(this_scale, this_min, trial))
            better = (det > 0) & (error < best) & ~flat
            levels = np.where(better[:, None], trial, levels)
            best = np.where(better, error, best)
            scale = np.where(better, this_scale, scale)
            low = np.where(better, this_min, low)
    scale = np.where(flat, F32(0), scale).astype(F32)
    levels = np.where(flat[:, None], 0, levels)
    return scale, (-low).astype(F32), levels


def quantize_q4_K(x) -> np.ndarray:
    """quantize_row_q4_K_ref (L1457-1527): per 32-value sub-block, make_qkx2_quants(32, 15, weights
    sqrt(mean x^2) + |x|, rmin -1, rdelta 0.1, 20 steps, least squares); scales and mins to six
    bits against their maxima (d = max_scale / 63, dmin = max_min / 63), then every code again
    from the stored scales: q = clamp(nearest_int((x + dmin m) / (d sc)), 0, 15)."""
    x = np.asarray(x, F32)
    rows = _row_blocks(x, 256)
    blocks = rows.shape[0]
    out = np.zeros((blocks, 144), np.uint8)
    parts = rows.reshape(blocks * 8, 32)
    av_x = np.sqrt(_f32_sum(parts * parts) / F32(32))
    scale, the_min, _ = make_qkx2_quants(parts, av_x[:, None] + np.abs(parts), 15, -1.0, 0.1, 20, False)
    scales, mins = scale.reshape(blocks, 8), the_min.reshape(blocks, 8)
    max_scale = np.where(scales > 0, scales, F32(0)).max(axis=1)
    max_min = np.where(mins > 0, mins, F32(0)).max(axis=1)
    with np.errstate(divide="ignore"):
        inv_scale = np.where(max_scale > 0, F32(63) / max_scale, F32(0)).astype(F32)
        inv_min = np.where(max_min > 0, F32(63) / max_min, F32(0)).astype(F32)
    ls = np.minimum(63, nearest_int(inv_scale[:, None] * scales) & 0xFF)
    lm = np.minimum(63, nearest_int(inv_min[:, None] * mins) & 0xFF)
    packed = np.zeros((blocks, 12), np.int64)
    packed[:, 0:4], packed[:, 4:8] = ls[:, :4], lm[:, :4]
    packed[:, 8:12] = (ls[:, 4:] & 0xF) | ((lm[:, 4:] & 0xF) << 4)
    packed[:, 0:4] |= (ls[:, 4:] >> 4) << 6
    packed[:, 4:8] |= (lm[:, 4:] >> 4) << 6
    with np.errstate(over="ignore"):
        d16, dmin16 = (max_scale / F32(63)).astype(np.float16), (max_min / F32(63)).astype(np.float16)
    out[:, 0:2], out[:, 2:4], out[:, 4:16] = _f16_bytes(d16), _f16_bytes(dmin16), packed
    sc, mn = k_scale_min(packed)
    d = d16.astype(F32)[:, None] * sc.astype(F32)
    dm = dmin16.astype(F32)[:, None] * mn.astype(F32)
    with np.errstate(divide="ignore", invalid="ignore"):
        codes = np.clip(nearest_int((rows.reshape(blocks, 8, 32) + dm[..., None]) / d[..., None]), 0, 15)
    levels = np.where(d[..., None] != 0, codes, 0).reshape(blocks, 4, 2, 32)
    out[:, 16:] = (levels[:, :, 0] | (levels[:, :, 1] << 4)).reshape(blocks, 128)
    return out.reshape(x.shape[:-1] + (-1, 144))


def quantize_q2_K(x) -> np.ndarray:
    """quantize_row_q2_K_ref (L891-959): per 16-value sub-block, make_qkx2_quants(16, 3, weights |x|,
    rmin -0.5, rdelta 0.1, 15 steps, absolute deviation); scales and mins to four bits against their
    maxima (d = max_scale / 15, dmin = max_min / 15), then the codes again from the stored scales."""
    x = np.asarray(x, F32)
    rows = _row_blocks(x, 256)
    blocks = rows.shape[0]
    out = np.zeros((blocks, 84), np.uint8)
    parts = rows.reshape(blocks * 16, 16)
    scale, the_min, found = make_qkx2_quants(parts, np.abs(parts), 3, -0.5, 0.1, 15, True)
    scales, mins = scale.reshape(blocks, 16), the_min.reshape(blocks, 16)
    max_scale = np.where(scales > 0, scales, F32(0)).max(axis=1)
    max_min = np.where(mins > 0, mins, F32(0)).max(axis=1)
    with np.errstate(divide="ignore", over="ignore"):
        iscale = np.where(max_scale > 0, F32(15) / max_scale, F32(0)).astype(F32)
        packed = np.where(max_scale[:, None] > 0, nearest_int(iscale[:, None] * scales) & 0xFF, 0)
        d16 = np.where(max_scale > 0, (max_scale / F32(15)).astype(np.float16), np.float16(0))
        iscale = np.where(max_min > 0, F32(15) / max_min, F32(0)).astype(F32)
        packed = np.where(max_min[:, None] > 0, (packed | (nearest_int(iscale[:, None] * mins) << 4)) & 0xFF, packed)
        dmin16 = np.where(max_min > 0, (max_min / F32(15)).astype(np.float16), np.float16(0))
    d = d16.astype(F32)[:, None] * (packed & 0xF).astype(F32)
    dm = dmin16.astype(F32)[:, None] * (packed >> 4).astype(F32)
    with np.errstate(divide="ignore", invalid="ignore"):
        codes = np.clip(nearest_int((rows.reshape(blocks, 16, 16) + dm[..., None]) / d[..., None]), 0, 3)
    levels = np.where(d[..., None] != 0, codes, found.reshape(blocks, 16, 16)).reshape(blocks, 2, 4, 32)
    out[:, 0:16] = packed
    out[:, 16:80] = (levels[:, :, 0] | (levels[:, :, 1] << 2) | (levels[:, :, 2] << 4)
                     | (levels[:, :, 3] << 6)).reshape(blocks, 64)
    out[:, 80:82], out[:, 82:84] = _f16_bytes(d16), _f16_bytes(dmin16)
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
