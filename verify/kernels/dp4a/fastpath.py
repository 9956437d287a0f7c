"""The DP4A matmul's float64 reference and error budget, evaluated fast: bit for bit the numbers of
references.nbits.dp4a_product and verify.budgets.dp4a.matmul_budget.

matmul_budget walks every 32-value chunk of every output ([chunks, rows, N] slabs) and, per
element, asks where a float64 value rounds in f16 or f32 (verify.budgets.roundoff: a float16
round trip and np.spacing, 10-15 ns an element in numpy). Here:

- the roundings are read off the float64 bits (verify.fastpath.floats, exact twins);
- the scale product's rounding error d_sigma depends only on sigma_c = s_a s_b, which is constant
  over the chunks of one (activation block, weight block) pair, so it is taken once per pair;
- where no chunk product of a slab is exact in T, the exactness tests (which could only zero a
  term) are skipped: np.where(False, 0, x) is x;
- the reference is dp4a_product's own computation (the same dequantized operands, the same
  matrix product), with the activation codes read as the int8 bytes they are packed as.

Everything else is matmul_budget line for line, on the same slabs in the same order, so every
sum is formed in the same order and the budget is identical, not merely close;
tests/fastpath/test_dp4a_fastpath.py checks both on drawn cases. Inputs outside what the fast
path takes go to the plain pair.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from verify.budgets.dp4a import _SLAB_ELEMENTS, A_BLOCK, CHUNK, matmul_budget
from verify.budgets.roundoff import gamma, smallest_normal, unit_roundoff
from verify.budgets.wgsl_accuracy import rounding_rel
from verify.fastpath import floats
from verify.fastpath.memo import CaseMemo
from verify.references.dp4a_quant import dequantize_activation, unpack_codes
from verify.references.nbits import (
    SUPPORTED_BITS,
    default_zero_point,
    dp4a_product,
    unpack_weights,
    unpack_zero_points,
)


@dataclass(frozen=True)
class MatmulInputs:
    """Everything the DP4A reference and budget of one case read (and nothing else)."""

    a_codes: np.ndarray          # uint32 [..., M, K/4], four int8 codes per word
    a_scales: np.ndarray         # [..., M, K/128], stored in T
    b: np.ndarray                # uint8 [N, K/block_size, blob]
    b_scales: np.ndarray         # [N, K/block_size], stored in T
    zero_points: np.ndarray | None
    bias: np.ndarray | None
    bits: int
    block_size: int
    dtype: str
    acc: str

    def arrays(self) -> tuple:
        return tuple(a for a in (self.a_codes, self.a_scales, self.b, self.b_scales, self.zero_points, self.bias)
                     if a is not None)

    def scalars(self) -> tuple:
        return (self.zero_points is not None, self.bias is not None, int(self.bits), int(self.block_size),
                self.dtype, self.acc)

    def centred_weights(self) -> np.ndarray:
        """q - zp per weight, int16 [N, K] (the integers dot4I8Packed multiplies)."""
        n, k_blocks, _ = self.b.shape
        k = k_blocks * self.block_size
        q = unpack_weights(self.b, self.bits, k).astype(np.int16)
        if self.zero_points is not None:
            zp = unpack_zero_points(self.zero_points, self.bits, k_blocks).astype(np.int16)
        else:
            zp = np.full((n, k_blocks), default_zero_point(self.bits), dtype=np.int16)
        return q - np.repeat(zp, self.block_size, axis=-1)

    def reference(self) -> tuple[np.ndarray, np.ndarray]:
        """(y, codes): the plain reference, references.nbits.dp4a_product, and A's int8 codes."""
        codes = unpack_codes(self.a_codes)
        y = dp4a_product((codes, self.a_scales.astype(np.float64)), self.b, self.b_scales.astype(np.float64),
                         self.zero_points, None if self.bias is None else self.bias.astype(np.float64),
                         bits=self.bits, block_size=self.block_size).y
        return y, codes

    def budget(self, y: np.ndarray, codes: np.ndarray) -> np.ndarray:
        """The plain budget, verify.budgets.dp4a.matmul_budget."""
        return matmul_budget(codes, self.a_scales, self.centred_weights(), self.b_scales,
                             None if self.bias is None else self.bias.astype(np.float64), y,
                             dtype=self.dtype, acc=self.acc, block_size=self.block_size)


@dataclass(frozen=True)
class MatmulEvaluation:
    """A case's DP4A-exact Y [..., M, N] and its budget."""

    y: np.ndarray
    budget: np.ndarray


def evaluate_plain(inputs: MatmulInputs) -> MatmulEvaluation:
    y, codes = inputs.reference()
    return MatmulEvaluation(y, inputs.budget(y, codes))


def evaluate(inputs: MatmulInputs) -> MatmulEvaluation:
    """The reference and budget of a DP4A matmul case: the fast path, or the plain pair for inputs
    it does not take (the plain pair then raises its own error for invalid ones)."""
    return _evaluate_fast(inputs) if _takes(inputs) else evaluate_plain(inputs)


_MEMO = CaseMemo()


def remembered(inputs: MatmulInputs) -> MatmulEvaluation:
    """evaluate(inputs), computed once for the same input arrays and scalars (verify.fastpath.memo)."""
    return _MEMO.get(inputs.arrays(), inputs.scalars(), lambda: evaluate(inputs))


# -- the fast path -----------------------------------------------------------------------------------
def _stored_scales(scales) -> bool:
    scales = np.asarray(scales, np.float64)
    return bool(np.isfinite(scales).all() and (scales.astype(np.float32) == scales).all())


def _takes(x: MatmulInputs) -> bool:
    """Layouts the fast path handles; anything else goes to the plain pair, which raises its own error."""
    codes, b = np.asarray(x.a_codes), np.asarray(x.b)
    if codes.dtype != np.uint32 or codes.ndim < 2 or b.dtype != np.uint8 or b.ndim != 3:
        return False
    if sys.byteorder != "little" or x.bits not in SUPPORTED_BITS or x.dtype not in ("f16", "f32"):
        return False
    if x.block_size < CHUNK or x.block_size & (x.block_size - 1) or b.shape[2] * 8 != x.block_size * x.bits:
        return False
    k = codes.shape[-1] * 4
    if k != b.shape[1] * x.block_size or k % A_BLOCK:
        return False
    if np.shape(x.a_scales) != codes.shape[:-1] + (k // A_BLOCK,) or np.shape(x.b_scales) != b.shape[:2]:
        return False
    if x.bias is not None and np.shape(x.bias) != (b.shape[0],):
        return False
    if x.zero_points is not None and np.shape(x.zero_points) != (b.shape[0], -(-b.shape[1] * x.bits // 8)):
        return False
    return _stored_scales(x.a_scales) and _stored_scales(x.b_scales)


def _evaluate_fast(x: MatmulInputs) -> MatmulEvaluation:
    codes = np.ascontiguousarray(x.a_codes).view(np.int8)  # pack_codes' layout: code 4j+i in byte i of word j
    a_scales = np.asarray(x.a_scales, np.float64)
    w_scales = np.asarray(x.b_scales, np.float64)
    bias = None if x.bias is None else np.asarray(x.bias).astype(np.float64)
    centred = x.centred_weights()
    n, k = centred.shape

    # dp4a_product: y = A_deq W_deq^T + bias, one float64 product of the exact dequantized operands.
    a_deq = dequantize_activation(codes, a_scales)
    w_deq = (centred.reshape(n, -1, x.block_size).astype(np.float64) * w_scales[..., None]).reshape(n, k)
    a_deq = a_deq.reshape(-1, k)
    y = (a_deq @ w_deq.T).reshape(*codes.shape[:-1], n)
    if bias is not None:
        y += bias
    # matmul_budget's item 7 (_reference_error): |s_a a| and |s_b w| are |A_deq| and |W_deq|, exactly.
    magnitude = np.abs(a_deq) @ np.abs(w_deq).T + (np.abs(bias) if bias is not None else 0.0)
    reference_error = gamma(k + 1, unit_roundoff("f64")) * magnitude
    return MatmulEvaluation(y, _budget(x, codes, a_scales, centred, w_scales, reference_error, y))


def _pair_index(chunks: int, block_size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each chunk, the (activation block, weight block) pair it lies in, and each pair's blocks."""
    c = np.arange(chunks)
    per_pair = min(A_BLOCK, block_size) // CHUNK
    pair = c // per_pair
    first = np.arange(0, chunks, per_pair)
    return pair, first * CHUNK // A_BLOCK, first * CHUNK // block_size


#: Elements of one block of a slab the elementwise work is done on at a time (cache-sized); the
#: slab's sums are still formed over the whole slab, as matmul_budget forms them.
_BLOCK_ELEMENTS = 1 << 16


def _budget(x: MatmulInputs, codes, a_scales, centred, w_scales, reference_error, y) -> np.ndarray:
    """matmul_budget, line for line, with its roundings from verify.fastpath.floats."""
    dtype, acc = x.dtype, x.acc
    chunks = codes.shape[-1] // CHUNK
    shape = y.shape
    rows, n = int(np.prod(shape[:-1])), shape[-1]

    # _chunk_slabs' operands. Chunk sums I_c in float32: |products| <= 127 * 255 and |I_c| < 2^20,
    # so every partial sum is an integer below 2^24 and the product is exact, as the float64 one is.
    a = codes.reshape(-1, chunks, CHUNK).astype(np.float32).transpose(1, 0, 2)  # [C, R, 32]
    w = centred.reshape(-1, chunks, CHUNK).astype(np.float32).transpose(1, 2, 0)  # [C, 32, N]
    # Per (activation block, weight block) pair: |sigma| = |s_a| |s_b| (exact; sigma is stored
    # unchanged exactly when |sigma| is), d_sigma, and |sigma| + d_sigma.
    pair, pair_a, pair_b = _pair_index(chunks, x.block_size)
    abs_sigma = np.abs(a_scales.reshape(rows, -1)[:, pair_a].T)[:, :, None] * np.abs(w_scales[:, pair_b].T)[:, None, :]
    d_sigma = _rounding_error(abs_sigma, abs_sigma, True, dtype)
    sigma_bound = abs_sigma + d_sigma
    exact = d_sigma == 0
    step = max(1, _SLAB_ELEMENTS // max(1, rows * n))

    products_error = np.zeros((rows, n))
    products_abs = np.zeros((rows, n))
    error_slab, magnitude_slab = np.empty((min(step, chunks), rows, n)), np.empty((min(step, chunks), rows, n))
    for start in range(0, chunks, step):
        part = slice(start, start + step)
        slab = (len(range(*part.indices(chunks))), rows, n)
        error, magnitude = error_slab[:slab[0]], magnitude_slab[:slab[0]]
        block_rows = max(1, _BLOCK_ELEMENTS // (slab[0] * n))
        chunk_pairs = pair[part]
        chunk_sums = a[part] @ w[part]
        slab_pairs = slice(int(chunk_pairs[0]), int(chunk_pairs[-1]) + 1)
        any_exact = bool(exact[slab_pairs].any())
        all_exact = any_exact and bool(exact[slab_pairs].all())
        # Every product bound |I|(|sigma| + d_sigma) of the slab is at most `largest`; below the top
        # of both formats' ranges the roundings need no range check of their own.
        largest = float(np.abs(chunk_sums).max(initial=0.0)) * float(sigma_bound[slab_pairs].max(initial=0.0))
        in_range = largest * (1 + 2.0**-8) < min(floats.top_of_range("f32"), floats.top_of_range(dtype))
        for r in range(0, rows, block_rows):
            block = slice(r, r + block_rows)
            _slab_terms(chunk_sums[:, block].astype(np.float64), sigma_bound[chunk_pairs, block],
                        d_sigma[chunk_pairs, block], exact[chunk_pairs, block] if any_exact else None,
                        abs_sigma[chunk_pairs, block] if any_exact and not all_exact else None,
                        dtype, in_range, error[:, block], magnitude[:, block])
        products_error += error.sum(axis=0)
        products_abs += magnitude.sum(axis=0)
    error = products_error + gamma(chunks - 1, rounding_rel(acc)) * products_abs
    error = error + (chunks - 1) * smallest_normal(acc)
    error = error + reference_error
    magnitude = np.abs(y).reshape(rows, n)
    if x.bias is not None:
        error = error + floats.faithful_rounding_bound(magnitude + error, acc)
    if acc != dtype:
        error = error + floats.faithful_rounding_bound(magnitude + error, dtype)
    return error.reshape(shape)


def _slab_terms(sums, sigma_bound, d_sigma, exact, abs_sigma, dtype, in_range, error_out, magnitude_out) -> None:
    """matmul_budget's per-chunk terms for a block of rows ([chunks, rows, N]): the chunk's error
    |I| d_sigma + d_f32 + d_store and its bound on |p_c|, |I|(|sigma| + d_sigma) + d_f32 + d_store,
    both 0 where I_c = 0. The same operations on the same values as matmul_budget's, in the same
    order; skipped only where they cannot change a value: the exactness tests where no scale
    product is exact in T (`exact` None: they could only zero a term), the product |I||sigma| where
    every d_sigma is 0 (`abs_sigma` None: it is then the product bound itself), and the roundings'
    range checks where the caller has bounded every value (`in_range`)."""
    np.abs(sums, out=sums)
    product_bound = np.multiply(sums, sigma_bound, out=sigma_bound)
    if exact is None:
        d_f32 = floats.faithful_rounding_bound(product_bound, "f32", in_range=in_range)
    else:
        product = product_bound if abs_sigma is None else np.multiply(sums, abs_sigma, out=abs_sigma)
        d_f32 = _rounding_error(product, product_bound, exact, "f32", in_range)
    np.add(product_bound, d_f32, out=magnitude_out)  # product_bound + d_f32 (+ d_store below)
    if dtype != "f32":
        if exact is None:
            d_store = floats.faithful_rounding_bound(magnitude_out, dtype, in_range=in_range)
        else:
            d_store = _rounding_error(product, magnitude_out, exact & (d_f32 == 0), dtype, in_range)
        magnitude_out += d_store
    np.multiply(sums, d_sigma, out=error_out)  # as np.where(nonzero, sums d_sigma + d_f32 + d_store, 0)
    error_out += d_f32
    if dtype != "f32":  # matmul_budget adds a zero d_store in f32: to terms >= +0, which it leaves alone
        error_out += d_store
    zero = sums == 0
    if zero.any():
        np.copyto(error_out, 0.0, where=zero)
        np.copyto(magnitude_out, 0.0, where=zero)


def _rounding_error(value, bound_of_value, exact_input, dtype, in_range: bool = False) -> np.ndarray:
    """verify.budgets.dp4a._rounding_error, exactly: 0 where `exact_input` holds and `value` is
    stored unchanged as 0 or a normal number, else faithful_rounding_bound(bound_of_value).
    `exact_input` may be True (everywhere)."""
    bound = floats.faithful_rounding_bound(bound_of_value, dtype, in_range=in_range)
    zero = floats.representable_normal(value, dtype)
    if exact_input is not True:
        zero &= exact_input
    if bound is bound_of_value or not bound.flags.writeable:
        bound = bound.copy()
    np.copyto(bound, 0.0, where=zero)
    return bound
