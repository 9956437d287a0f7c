"""ggml's quantizers transcribed scalar by scalar (one block at a time, numpy f32 scalars in C's
order): the oracle the vectorised quantizers of references/ggml_quants.py are held to, bit for bit
(tests/references/test_ggml_quants.py)."""

from __future__ import annotations

import numpy as np

from verify.references.ggml_quants import _f16_bytes, _row_blocks, block_bytes, k_scale_min

F32 = np.float32


def _roundf(x: np.float32) -> int:
    """C roundf: half away from zero."""
    value = float(x)
    return int(np.sign(value) * np.floor(abs(value) + 0.5))


def nearest_int(x) -> int:
    """ggml-quants.c L621-626 nearest_int: round half to even."""
    shifted = F32(F32(x) + F32(12582912.0))
    bits = int(np.asarray(shifted, F32).view(np.int32))
    return (bits & 0x007FFFFF) - 0x00400000


def quantize_q8(x, kind: str = "q8_1") -> np.ndarray:
    """quantize_row_q8_0_ref / quantize_row_q8_1_ref, one block at a time."""
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
    """quantize_row_q4_0_ref, one block at a time."""
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
    """quantize_row_q4_1_ref, one block at a time."""
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
    """ggml-quants.c L799-878 make_qkx2_quants in f32, one block at a time."""
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
    """quantize_row_q4_K_ref, one block at a time."""
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
    """quantize_row_q2_K_ref, one block at a time."""
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
