"""Budgets of MatMulNBits run end to end (ort.matmul_nbits): Y from float A, whatever ORT quantizes.

dp4a.matmul is handed int8 codes and is judged against the DP4A-exact product of those codes;
an end-to-end run is handed float A and quantizes it itself, so its codes and scales are not
known in advance. WGSL leaves them open within a legal set (references.dp4a_quant: the division
a/m within 2.5 ULP, either rounding of the f32 product and of the tie, flushed subnormals, any
byte for an all-zero block), so the budget must hold for every legal quantization, not just
the nominal one. Two budgets, one per path ORT may take:

- `dp4a_budget`: ORT's DP4A programs (accuracy level 4). Centred on the DP4A-exact product of
  the nominal quantization.
- `float_budget`: ORT's floating-point MatMulNBits programs (accuracy level 0, and f16 models
  with M < 4). Centred on the unquantized float64 product.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.dp4a import _chunk_slabs
from verify.budgets.roundoff import (
    faithful_rounding_bound,
    gamma,
    smallest_normal,
    unit_roundoff,
)
from verify.budgets.wgsl_accuracy import rounding_rel
from verify.references.dp4a_quant import ACTIVATION_BLOCK, quantize_blocks
from verify.references.nbits import dequantize_weights, matmul_nbits


def _blocks(values: np.ndarray, k: int) -> np.ndarray:
    """Per-128-block values [..., K/128] repeated over their block: [..., K]."""
    return np.repeat(values, ACTIVATION_BLOCK, axis=-1)[..., :k]


def _matmul_upper(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """An upper bound on x @ w^T for nonnegative x [..., K] and w [N, K]: the float64 product
    inflated by its own worst rounding, (1 + gamma_K(u_f64))."""
    k = x.shape[-1]
    product = (x.reshape(-1, k) @ w.T).reshape(*x.shape[:-1], w.shape[0])
    return product * (1.0 + gamma(k, unit_roundoff("f64")))


def dp4a_budget(a, w_codes, w_scales, bias, *, dtype: str, acc: str, mul: str, block_size: int):
    """(centre, budget) of ORT's DP4A path on float A, for any legal quantization of A.

    Inputs: A [..., M, K] (exact T-values), the centred weight codes q - zp [N, K] (integers),
    the weight scales [N, K/bs] and bias [N] as stored. ORT's quantizer stores codes c*_k and block
    scales s*, each anywhere in the legal set of references.dp4a_quant.quantize_blocks:
    c*_k in [c_lo, c_hi], s* in [s_lo, s_hi]. Then its matmul computes, with the arithmetic of
    verify.budgets.dp4a.matmul_budget, Y* = bias + sum_c T(mul(I*_c) mul(T(s*_a s_b))) summed in
    `acc`. The centre is D_nom = sum_k s_nom c_nom_k w_k + bias, the DP4A-exact product of the
    nominal quantization (the nominal division, the spec's rounding), and

      |Y* - D_nom| <= |D(c*, s*) - D_nom| + |Y* - D(c*, s*)|.

    1. Quantization freedom. D(c*, s*) - D_nom = sum_k (s* c*_k - s_nom c_nom_k) w_k, and s c is
       bilinear, so over the box [s_lo, s_hi] x [c_lo, c_hi] it is extreme at a corner:
       |s* c*_k - s_nom c_nom_k| <= e_k := max over the four corners. The bound is sum_k e_k |w_k|
       with w_k = (q_k - zp) s_b exact. (An all-zero block has s_lo = s_hi = 0: e_k = 0, whatever
       byte its codes are.)
    2. Arithmetic, for the unknown (c*, s*). matmul_budget's bound is built from |I_c| and
       |sigma_c| through monotone terms (an ulp grows with its argument), so evaluating it at the
       upper bounds |I*_c| <= sum_{k in c} max(|c_lo|, |c_hi|)_k |q_k - zp| and
       |s*_a s_b| <= s_hi |s_b| bounds the error for every legal quantization. Unlike
       matmul_budget it cannot credit exactly representable products (it does not know them), so
       every rounding is charged its full ulp: per chunk, sigma to T, then either (mul = f32) the
       f32 product and its store to T, or (mul = T) I_c to T and the product in T; then
       gamma_{C-1}(2 u_acc) sum_c |p_c| + (C - 1) N_acc for the sum in any order (Higham 2002
       §4.2), one rounding for the bias and one for the store when acc is wider than T.
    3. The float64 centre itself errs by gamma_{K+1}(u_f64) (sum_k |s c w| + |bias|).

    The budget is what quantizing A may legally change plus what the arithmetic may; the
    quantization_error check reports the separate distance to the unquantized product.
    """
    a = np.asarray(a, dtype=np.float64)
    k = a.shape[-1]
    chunks = k // 32
    w_codes = np.asarray(w_codes, dtype=np.float64)
    w_scales = np.asarray(w_scales, dtype=np.float64)
    w = w_codes * np.repeat(w_scales, block_size, axis=-1)
    bias64 = None if bias is None else np.asarray(bias, dtype=np.float64)
    q = quantize_blocks(a, dtype)
    centre = _dp4a_centre(q, w, bias64)

    nominal = q.codes.astype(np.float64) * _blocks(q.scales, k)
    corners = [_blocks(s, k) * c for s in (q.scale_lo, q.scale_hi) for c in (q.code_lo.astype(np.float64),
                                                                             q.code_hi.astype(np.float64))]
    deviation = np.max([np.abs(corner - nominal) for corner in corners], axis=0)
    quantization = _matmul_upper(deviation, np.abs(w))

    code_max = np.maximum(np.abs(q.code_lo), np.abs(q.code_hi)).astype(np.float64)
    rows = int(np.prod(a.shape[:-1]))
    n = w.shape[0]
    errors, products = np.zeros((rows, n)), np.zeros((rows, n))
    for sums, sigma in _chunk_slabs(code_max.reshape(rows, k), q.scale_hi.reshape(rows, -1), np.abs(w_codes),
                                    np.abs(w_scales), block_size):
        d_sigma = faithful_rounding_bound(sigma, dtype)
        if mul == "f32":
            product = sums * (sigma + d_sigma)
            d_f32 = faithful_rounding_bound(product, "f32")
            d_store = 0.0 if dtype == "f32" else faithful_rounding_bound(product + d_f32, dtype)
            error = sums * d_sigma + d_f32 + d_store
            rounded = product + d_f32 + d_store
        else:
            d_sum = faithful_rounding_bound(sums, mul)
            product = (sums + d_sum) * (sigma + d_sigma)
            d_mul = faithful_rounding_bound(product, mul)
            error = sums * d_sigma + d_sum * (sigma + d_sigma) + d_mul
            rounded = product + d_mul
        nonzero = sums > 0
        errors += np.where(nonzero, error, 0.0).sum(axis=0)
        products += np.where(nonzero, rounded, 0.0).sum(axis=0)
    arithmetic = errors + gamma(chunks - 1, rounding_rel(acc)) * products + (chunks - 1) * smallest_normal(acc)
    magnitude = products + (0.0 if bias64 is None else np.abs(bias64))
    if bias64 is not None:
        arithmetic = arithmetic + faithful_rounding_bound(magnitude + arithmetic, acc)
    if acc != dtype:
        arithmetic = arithmetic + faithful_rounding_bound(magnitude + arithmetic, dtype)

    reference = gamma(k + 1, unit_roundoff("f64")) * (
        _matmul_upper(np.abs(nominal), np.abs(w)) + (0.0 if bias64 is None else np.abs(bias64)))
    budget = quantization + arithmetic.reshape(quantization.shape) + reference
    return centre, budget


def _dp4a_centre(q, w: np.ndarray, bias) -> np.ndarray:
    """sum_k s_nom c_nom_k w_k + bias in float64 (both factors exact, one matmul)."""
    k = q.codes.shape[-1]
    a_deq = q.codes.astype(np.float64) * _blocks(q.scales, k)
    y = (a_deq.reshape(-1, k) @ w.T).reshape(*a_deq.shape[:-1], w.shape[0])
    return y if bias is None else y + bias


def float_budget(a, packed, scales, zero_points, bias, *, dtype: str, bits: int, block_size: int):
    """(centre, budget) of ORT's floating-point MatMulNBits programs: the unquantized product.

    ORT's non-DP4A programs (MatMulNBits, MatMulNBitsWideTile) compute in T, A's type: each
    weight w'_k = T((q_k - zp) s_b) (q - zp is a small integer, exact in T), each product
    T(a_k w'_k), the K products summed in T in the program's order (partial sums per lane, then
    across lanes; a dot() is its own products and sums), the bias added in T, the result stored
    in T. So every term a_k w_k passes through at most K + 2 correctly rounded operations
    before it reaches Y (two for the weight and the product, K - 1 sums, one bias add), each of
    relative error at most 2 u_T (either neighbour may be returned, WGSL §15.7), and the bias
    through at most one: |Y - Y_exact| <= gamma_{K+2}(2 u_T) (sum_k |a_k w_k| + |bias|)
    (Higham 2002 §3.1, any order; a fused multiply-add only removes roundings). Results below
    T's smallest normal N_T may flush to zero: the weight (|a_k| N_T each), and the 2K + 1
    products and sums (N_T each), an absolute error amplified by at most (1 + gamma_{K+2}) by the
    roundings after it. The centre is the float64 product, itself within
    gamma_{K+1}(u_f64) (sum_k |a_k w_k| + |bias|).
    """
    a = np.asarray(a, dtype=np.float64)
    k = a.shape[-1]
    bias64 = None if bias is None else np.asarray(bias, dtype=np.float64)
    centre = matmul_nbits(a, packed, scales, zero_points, bias64, bits=bits, block_size=block_size)
    w = dequantize_weights(packed, scales, zero_points, bits=bits, block_size=block_size, K=k)
    magnitude = _matmul_upper(np.abs(a), np.abs(w)) + (0.0 if bias64 is None else np.abs(bias64))
    relative = gamma(k + 2, rounding_rel(dtype))
    normal = smallest_normal(dtype)
    underflow = (np.abs(a).sum(axis=-1, keepdims=True) + 2 * k + 1) * normal * (1.0 + relative)
    return centre, relative * magnitude + underflow + gamma(k + 1, unit_roundoff("f64")) * magnitude
