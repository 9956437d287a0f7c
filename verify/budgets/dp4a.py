"""Error budgets of the DP4A matmul: the kernel against the DP4A-exact product, and quantization.

The kernel is judged against references.nbits.dp4a_product, built from the same int8 codes and
stored scales the kernel reads, so quantizing A is not the kernel's error (docs/budgets.md
§7.2). What quantization costs against the unquantized MatMulNBits is bounded separately
(`quantization_bound`) and only reported.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.roundoff import (
    faithful_rounding_bound,
    gamma,
    numpy_dtype,
    smallest_normal,
    unit_roundoff,
)
from verify.budgets.wgsl_accuracy import rounding_rel

#: K values per integer chunk (eight dot4I8Packed) and per activation scale.
CHUNK = 32
A_BLOCK = 128
#: Elements of one [chunks, rows, N] slab the chunk loop holds at once (float64).
_SLAB_ELEMENTS = 1 << 20


def _rounding_error(value, bound_of_value, exact_input, dtype):
    """Bound on |fl(v) - v| when v, the exact result of one operation, is stored in `dtype`.

    `bound_of_value` bounds |v|. Where `exact_input` holds, v is `value`, exactly (the caller
    vouches that float64 holds it), and a representable normal (or zero) v is returned unchanged
    by a correctly rounded operation; anywhere else either neighbour, or 0 below the smallest
    normal, may come back (verify.budgets.roundoff.faithful_rounding_bound).
    """
    with np.errstate(over="ignore"):
        stored = value.astype(numpy_dtype(dtype)).astype(np.float64)
    representable = (stored == value) & ((value == 0) | (np.abs(value) >= smallest_normal(dtype)))
    return np.where(exact_input & representable, 0.0, faithful_rounding_bound(bound_of_value, dtype))


def _chunk_slabs(a_codes, a_scales, w_centered, w_scales, block_size):
    """(I_c, sigma_c) over slabs of chunks: int sums and exact scale products, [chunks, rows, N].

    rows are A's rows over the batch; I_c = sum_{k in c} a_k (q_k - zp) and sigma_c =
    s_a[row, c / 4] * s_b[n, 32 c / block_size], both exact in float64 (|I_c| < 2^20; the
    scales carry at most 24 significant bits each).
    """
    k = a_codes.shape[-1]
    chunks = k // CHUNK
    a = a_codes.reshape(-1, chunks, CHUNK).astype(np.float64).transpose(1, 0, 2)  # [C, R, 32]
    w = w_centered.reshape(-1, chunks, CHUNK).astype(np.float64).transpose(1, 2, 0)  # [C, 32, N]
    c = np.arange(chunks)
    s_a = np.asarray(a_scales, np.float64).reshape(a.shape[1], -1)[:, c * CHUNK // A_BLOCK].T  # [C, R]
    s_b = np.asarray(w_scales, np.float64)[:, c * CHUNK // block_size].T  # [C, N]
    step = max(1, _SLAB_ELEMENTS // max(1, a.shape[1] * w.shape[2]))
    for start in range(0, chunks, step):
        part = slice(start, start + step)
        yield a[part] @ w[part], s_a[part][:, :, None] * s_b[part][:, None, :]


def _reference_error(a_codes, a_scales, w_centered, w_scales, bias, block_size):
    """gamma_{K+1}(u_f64) (sum_k |s_a a_k| |s_b w_k| + |bias|) per output, [rows, N]."""
    k = a_codes.shape[-1]
    a = np.abs(a_codes.reshape(-1, k).astype(np.float64))
    a *= np.repeat(np.abs(np.asarray(a_scales, np.float64)).reshape(a.shape[0], -1), A_BLOCK, axis=-1)
    w = np.abs(w_centered.astype(np.float64)) * np.repeat(np.abs(np.asarray(w_scales, np.float64)), block_size, axis=-1)
    magnitude = a @ w.T + (np.abs(bias) if bias is not None else 0.0)
    return gamma(k + 1, unit_roundoff("f64")) * magnitude


def matmul_budget(a_codes, a_scales, w_centered, w_scales, bias, y, *, dtype: str, acc: str, block_size: int,
                  mul: str = "f32"):
    """Budget of Y = bias + sum_c T(mul(I_c) * mul(T(s_a s_b))), summed in `acc`, against the DP4A-exact Y.

    Every input is exact: int8 codes, centred weight codes, stored scales, the bias. Per chunk c
    (32 K values, docs/ort-dp4a.md §5), with r_F = 2 u_F the relative error of one correctly rounded
    operation in format F when either neighbour may be returned (WGSL §15.7), N_F the smallest
    normal of F, and "fl_F(x) err" the bound of verify.budgets.roundoff.faithful_rounding_bound
    (one ulp, or N_F below N_F for a flush to zero), zero where x is exactly representable:

    1. sigma_c = s_a s_b rounded to T: |d sigma_c| <= fl_T(sigma_c) err. In f16 a product below
       2^-14 may flush to 0, an absolute error up to N_f16 = 6.1e-5 per chunk, scaled by |I_c|.
    2. f32(I_c) is exact: |I_c| <= 32 * 127 * 255 < 2^24.
    3. With mul = f32: p_c = f32(I_c) * f32(sigma^_c) is rounded in f32 (fl_f32 err of
       |I_c|(|sigma_c| + |d sigma_c|)), then to T when T = f16 (fl_f16 err of that, plus the f32
       error). With mul = T (ONNX Runtime's 2- and 4-bit programs: `mul_precision = output_element_t`),
       I_c is first rounded to T (fl_T err of |I_c|: f16 holds integers exactly only up to 2048,
       and |I_c| reaches 60960), then the product once in T: |I_c| |d sigma_c| + |d I_c|
       (|sigma_c| + |d sigma_c|) + fl_T err of (|I_c| + |d I_c|)(|sigma_c| + |d sigma_c|).
    4. The C = K/32 products are summed in acc: gamma_{C-1}(r_acc) * sum_c |p^_c| for any order
       (Higham 2002 §4.2; the tile kernels add in ascending c, small_m in 16 strided partial
       sums, both covered), plus (C-1) N_acc for additions whose result flushes to zero.
    5. bias: one addition in acc, fl_acc err of |y| + (1..4).
    6. The store to T when acc is wider than T: fl_T err of |y| + (1..5).

    7. The float64 reference itself, one matmul over K (references.nbits.dp4a_product), errs by up
       to gamma_{K+1}(u_f64) (sum_k |s_a a_k| |s_b w_k| + |bias|). This is far below every term
       above unless chunk sums cancel to 0 (I_c = 0 exactly: the kernel returns an exact 0 where
       the matmul leaves float64 noise), so it is added rather than letting that noise fail a kernel.

    Each |.| above is bounded from the exact values plus the errors before it, so the budget is
    rigorous, not first order. It is the error of the arithmetic only; quantizing A is outside
    (see quantization_bound).
    """
    chunks = a_codes.shape[-1] // CHUNK
    shape = y.shape
    rows, n = int(np.prod(shape[:-1])), shape[-1]
    products_error = np.zeros((rows, n))
    products_abs = np.zeros((rows, n))
    for sums, sigma in _chunk_slabs(a_codes, a_scales, w_centered, w_scales, block_size):
        sums = np.abs(sums)
        nonzero = sums > 0
        d_sigma = _rounding_error(sigma, np.abs(sigma), np.ones_like(nonzero), dtype)
        # Where sigma_c is exact in T (d_sigma = 0) it has at most 24 significant bits and
        # |I_c| < 2^20, so float64 holds I_c sigma_c exactly and representability is decidable.
        exact_product = d_sigma == 0
        product = sums * np.abs(sigma)
        if mul == "f32":
            product_bound = sums * (np.abs(sigma) + d_sigma)
            d_f32 = _rounding_error(product, product_bound, exact_product, "f32")
            if dtype == "f32":
                d_store = np.zeros_like(d_f32)
            else:
                d_store = _rounding_error(product, product_bound + d_f32, exact_product & (d_f32 == 0), dtype)
            d_product = sums * d_sigma + d_f32 + d_store
            rounded_bound = product_bound + d_f32 + d_store
        else:
            d_sum = _rounding_error(sums, sums, np.ones_like(nonzero), mul)
            product_bound = (sums + d_sum) * (np.abs(sigma) + d_sigma)
            d_mul = _rounding_error(product, product_bound, exact_product & (d_sum == 0), mul)
            d_product = sums * d_sigma + d_sum * (np.abs(sigma) + d_sigma) + d_mul
            rounded_bound = product_bound + d_mul
        products_error += np.where(nonzero, d_product, 0.0).sum(axis=0)
        products_abs += np.where(nonzero, rounded_bound, 0.0).sum(axis=0)
    error = products_error + gamma(chunks - 1, rounding_rel(acc)) * products_abs
    error = error + (chunks - 1) * smallest_normal(acc)
    error = error + _reference_error(a_codes, a_scales, w_centered, w_scales, bias, block_size)
    magnitude = np.abs(y).reshape(rows, n)
    if bias is not None:
        error = error + faithful_rounding_bound(magnitude + error, acc)
    if acc != dtype:
        error = error + faithful_rounding_bound(magnitude + error, dtype)
    return error.reshape(shape)


def quantization_bound(a, a_dequantized_weights, dtype: str):
    """Bound on |dp4a_product - matmul_nbits|: what quantizing A to int8 in 128-blocks may cost.

    For a block with max |a| = m, nominal quantization (references.dp4a_quant.quantize_blocks)
    stores s = fl_T(m/127) and q = round(fl_f32(127 fl_T(a/m))). Then
    |q - 127 a/m| <= 1/2 + 127 (2 u_f32 + u_T)   (the code, the f32 product, the quotient in T) and
    |s - m/127| <= fl_T(m/127) err, so
    |a - s q| <= (m/127)(1/2 + 127 (2 u_f32 + u_T)) + 127 fl_T(m/127) err =: e(m),
    and |sum_k (a_k - s q_k) w_k| <= sum_k e(m_k) |w_k| with the exact dequantized weights w.
    A tolerance of one quantization step per element, as this is, would be vacuous as a gate
    for the kernel (docs/budgets.md §7.3); it measures the quantization, and is only reported.
    """
    a = np.asarray(a, np.float64)
    blocks = np.abs(a).reshape(*a.shape[:-1], -1, A_BLOCK)
    m = blocks.max(axis=-1)
    per_element = (m / 127) * (0.5 + 127 * (2 * unit_roundoff("f32") + unit_roundoff(dtype)))
    per_element = per_element + 127 * faithful_rounding_bound(m / 127, dtype)
    per_element = np.repeat(per_element, A_BLOCK, axis=-1)
    w = np.abs(np.asarray(a_dequantized_weights, np.float64))
    return (per_element.reshape(-1, a.shape[-1]) @ w.T).reshape(*a.shape[:-1], w.shape[0])
