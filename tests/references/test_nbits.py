"""Properties of references.nbits: MatMulNBits packing, dequantization, product and DP4A product.

Float64 results are held to float64_reference_bound(sum_k |a_k w_k| + |bias|, ulps=0, terms=K+1):
the dequantized operands are exact in float64, so the only roundings are the matmul's K products
and K - 1 additions and the bias add, at most gamma_{K+1}(2^-53) times that magnitude in any order
(Higham 2002 §3.1). Exact references are rationals (Fraction) or 50-digit mpmath.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mpmath import mpf

from verify.references.dp4a_quant import ACTIVATION_BLOCK, dequantize_activation, quantize_blocks
from verify.references.mp import dp4a as mp_dp4a
from verify.references.nbits import (
    DP4A_CHUNK,
    default_zero_point,
    dequantize_weights,
    dp4a_chunk_sums,
    dp4a_product,
    matmul_nbits,
    pack_weights,
    pack_zero_points,
    unpack_weights,
    unpack_zero_points,
)
from verify.budgets.roundoff import float64_reference_bound


def _f16(x) -> np.ndarray:
    return np.asarray(x).astype(np.float16).astype(np.float64)


@dataclass(frozen=True)
class Weights:
    """Unpacked codes and zero points next to their packed MatMulNBits form."""

    q: np.ndarray
    zero_points: np.ndarray | None
    packed: np.ndarray
    packed_zero_points: np.ndarray | None
    scales: np.ndarray
    bits: int
    block_size: int

    @property
    def K(self) -> int:
        return self.q.shape[1]

    @property
    def kwargs(self) -> dict:
        return {"bits": self.bits, "block_size": self.block_size}

    def dequantized(self) -> np.ndarray:
        """(q - zp) * scale from the unpacked codes, float64 [N, K]."""
        n, k_blocks = self.scales.shape
        zp = np.full((n, k_blocks), default_zero_point(self.bits)) if self.zero_points is None else self.zero_points
        centered = self.q.reshape(n, k_blocks, -1).astype(np.int64) - zp[..., None]
        return (centered * self.scales[..., None]).reshape(self.q.shape)


def _weights(rng, n: int, K: int, bits: int, block_size: int, with_zero_points: bool) -> Weights:
    k_blocks = K // block_size
    q = rng.integers(0, 2**bits, (n, K), dtype=np.uint8)
    zp = rng.integers(0, 2**bits, (n, k_blocks), dtype=np.uint8) if with_zero_points else None
    scales = _f16(rng.uniform(-0.05, 0.05, (n, k_blocks)))
    return Weights(q, zp, pack_weights(q, bits, block_size), None if zp is None else pack_zero_points(zp, bits),
                   scales, bits, block_size)


@st.composite
def matmul_cases(draw, dp4a: bool = False):
    """(A [M, K] exact f16 values, Weights, bias or None); K % 128 == 0 and block_size >= 32 for DP4A."""
    bits = draw(st.sampled_from([2, 4, 8]))
    if dp4a:
        K = draw(st.sampled_from([128, 256]))
        block_size = draw(st.sampled_from([b for b in (32, 64, 128, 256) if b <= K]))
    else:
        block_size = draw(st.sampled_from([16, 32, 64, 128]))
        K = block_size * draw(st.integers(1, 3))  # odd block counts pad the packed zero points
    m, n = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    w = _weights(rng, n, K, bits, block_size, draw(st.booleans()))
    a = _f16(rng.normal(0, draw(st.sampled_from([0.25, 1e-3, 100.0])), (m, K)))
    if draw(st.booleans()):
        a[:, :ACTIVATION_BLOCK] = 0.0  # an all-zero activation block
    bias = _f16(rng.uniform(1, 5, n)) if draw(st.booleans()) else None
    return a, w, bias


def _exact_product(a: np.ndarray, w: np.ndarray, bias) -> list:
    """sum_k a[m, k] w[n, k] + bias[n] in exact rationals, [M][N]."""
    return [[sum(Fraction(x) * Fraction(y) for x, y in zip(a_row, w_row)) + (0 if bias is None else Fraction(bias[j]))
             for j, w_row in enumerate(w)] for a_row in a]


def _bound(a: np.ndarray, w: np.ndarray, bias) -> np.ndarray:
    magnitude = np.abs(a) @ np.abs(w).T + (0 if bias is None else np.abs(bias))
    return float64_reference_bound(magnitude, ulps=0, terms=a.shape[-1] + 1)


def _distance(y: np.ndarray, exact: list) -> np.ndarray:
    """|y - exact| element-wise, exact values as Fractions or mpf, computed without rounding y."""
    return np.array([[float(abs((Fraction(float(v)) if isinstance(e, Fraction) else mpf(float(v))) - e))
                      for v, e in zip(y_row, e_row)] for y_row, e_row in zip(y, exact)])


def test_weights_pack_low_bits_first_in_k_order():
    """Element e of a block sits at bit (e * bits) % 8 of byte (e * bits) // 8: for 4 bits the
    first value in the low nibble, the order ORT's DequantizedFrom4BitsTo8Bits unpacks."""
    q4 = np.array([list(range(1, 16)) + [0]], dtype=np.uint8)
    assert pack_weights(q4, 4, 16).tolist() == [[[0x21, 0x43, 0x65, 0x87, 0xA9, 0xCB, 0xED, 0x0F]]]
    q2 = np.array([[1, 2, 3, 0] * 4], dtype=np.uint8)
    assert pack_weights(q2, 2, 16).tolist() == [[[0x39] * 4]]
    q8 = np.arange(32, dtype=np.uint8).reshape(1, 32) * 7
    assert pack_weights(q8, 8, 16).tolist() == [q8.reshape(2, 16).tolist()]


def test_zero_points_pack_low_bits_first_and_start_each_row_on_a_byte():
    zp4 = np.array([[3, 5, 7], [1, 2, 15]], dtype=np.uint8)
    assert pack_zero_points(zp4, 4).tolist() == [[0x53, 0x07], [0x21, 0x0F]]
    zp2 = np.array([[1, 2, 3, 0, 1], [3, 3, 3, 3, 3]], dtype=np.uint8)
    assert pack_zero_points(zp2, 2).tolist() == [[0x39, 0x01], [0xFF, 0x03]]
    zp8 = np.array([[0, 128, 255]], dtype=np.uint8)
    assert pack_zero_points(zp8, 8).tolist() == [[0, 128, 255]]


@settings(max_examples=60, deadline=None)
@given(bits=st.sampled_from([2, 4, 8]), block_size=st.sampled_from([16, 32, 64, 128, 256]),
       n=st.integers(1, 5), k_blocks=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
def test_pack_then_unpack_round_trips_weights_and_zero_points(bits, block_size, n, k_blocks, seed):
    rng = np.random.default_rng(seed)
    q = rng.integers(0, 2**bits, (n, k_blocks * block_size), dtype=np.uint8)
    packed = pack_weights(q, bits, block_size)
    assert packed.dtype == np.uint8 and packed.shape == (n, k_blocks, block_size * bits // 8)
    assert (unpack_weights(packed, bits, q.shape[1]) == q).all()
    zp = rng.integers(0, 2**bits, (n, k_blocks), dtype=np.uint8)
    packed_zp = pack_zero_points(zp, bits)
    assert packed_zp.shape == (n, -(-k_blocks * bits // 8))
    assert (unpack_zero_points(packed_zp, bits, k_blocks) == zp).all()


@pytest.mark.parametrize(("bits", "zero_point"), [(2, 2), (4, 8), (8, 128)])
def test_missing_zero_points_mean_half_the_code_range(bits, zero_point):
    assert default_zero_point(bits) == zero_point
    w = _weights(np.random.default_rng(bits), 3, 64, bits, 32, with_zero_points=False)
    explicit = pack_zero_points(np.full((3, 2), zero_point, dtype=np.uint8), bits)
    assert (dequantize_weights(w.packed, w.scales, None, K=64, **w.kwargs)
            == dequantize_weights(w.packed, w.scales, explicit, K=64, **w.kwargs)).all()


@settings(max_examples=40, deadline=None)
@given(matmul_cases())
def test_dequantized_weights_equal_the_mpmath_definition_exactly(case):
    _, w, _ = case
    got = dequantize_weights(w.packed, w.scales, w.packed_zero_points, K=w.K, **w.kwargs)
    want = mp_dp4a.dequantize_weights(w.packed, w.scales, w.packed_zero_points, w.bits, w.block_size, w.K)
    assert got.tolist() == [[float(v) for v in row] for row in want]
    assert (got == w.dequantized()).all()


@settings(max_examples=40, deadline=None)
@given(matmul_cases())
def test_matmul_nbits_matches_mpmath_within_the_float64_bound(case):
    a, w, bias = case
    y = matmul_nbits(a, w.packed, w.scales, w.packed_zero_points, bias, **w.kwargs)
    want = mp_dp4a.matmul_nbits(a, w.packed, w.scales, w.packed_zero_points, bias, w.bits, w.block_size)
    assert (_distance(y, want) <= _bound(a, w.dequantized(), bias)).all()


@settings(max_examples=30, deadline=None)
@given(matmul_cases())
def test_matmul_nbits_equals_dequantize_then_matmul(case):
    a, w, bias = case
    y = matmul_nbits(a, w.packed, w.scales, w.packed_zero_points, bias, **w.kwargs)
    dequantized = dequantize_weights(w.packed, w.scales, w.packed_zero_points, K=w.K, **w.kwargs)
    assert (_distance(y, _exact_product(a, dequantized, bias)) <= _bound(a, dequantized, bias)).all()


@settings(max_examples=40, deadline=None)
@given(matmul_cases(dp4a=True), st.sampled_from(["f16", "f32"]))
def test_dp4a_product_matches_mpmath_within_the_float64_bound(case, dtype):
    a, w, bias = case
    qa = quantize_blocks(a, dtype)
    y = dp4a_product(qa, w.packed, w.scales, w.packed_zero_points, bias, **w.kwargs).y
    want = mp_dp4a.dp4a_product(qa.codes, qa.scales, w.packed, w.scales, w.packed_zero_points, bias,
                                w.bits, w.block_size)
    a_dequantized = dequantize_activation(qa.codes, qa.scales)
    assert (_distance(y, want) <= _bound(a_dequantized, w.dequantized(), bias)).all()


@settings(max_examples=30, deadline=None)
@given(matmul_cases(dp4a=True))
def test_dp4a_product_is_the_product_of_the_dequantized_operands(case):
    a, w, bias = case
    qa = quantize_blocks(a, "f16")
    y = dp4a_product(qa, w.packed, w.scales, w.packed_zero_points, bias, **w.kwargs).y
    a_dequantized = np.repeat(qa.scales, ACTIVATION_BLOCK, axis=-1) * qa.codes
    exact = _exact_product(a_dequantized, w.dequantized(), bias)
    assert (_distance(y, exact) <= _bound(a_dequantized, w.dequantized(), bias)).all()


@settings(max_examples=30, deadline=None)
@given(matmul_cases(dp4a=True))
def test_dp4a_chunks_are_exact_bounded_integers_that_reassemble_y(case):
    a, w, bias = case
    qa = quantize_blocks(a, "f16")
    product = dp4a_product(qa, w.packed, w.scales, w.packed_zero_points, bias, return_chunks=True, **w.kwargs)
    sums, chunk_scales = product.chunk_sums, product.chunk_scales
    m, n, chunks = a.shape[0], w.q.shape[0], w.K // DP4A_CHUNK
    assert sums.dtype == np.int64 and sums.shape == chunk_scales.shape == (m, n, chunks)
    centered = mp_dp4a.centered_weights(w.packed, w.packed_zero_points, w.bits, w.block_size, w.K)
    assert sums.tolist() == mp_dp4a.dp4a_chunk_sums(qa.codes.tolist(), centered)
    assert (np.abs(sums) <= DP4A_CHUNK * 127 * (2**w.bits - 1)).all()
    for c in range(chunks):
        a_scale = qa.scales[:, c * DP4A_CHUNK // ACTIVATION_BLOCK, None]
        assert (chunk_scales[..., c] == a_scale * w.scales[None, :, c * DP4A_CHUNK // w.block_size]).all()
    reassembled = (sums * chunk_scales).sum(axis=-1) + (0 if bias is None else bias)
    a_dequantized = dequantize_activation(qa.codes, qa.scales)
    bound = _bound(a_dequantized, w.dequantized(), bias)
    assert (np.abs(reassembled - product.y) <= 2 * bound).all()


@pytest.mark.parametrize("bits", [2, 4, 8])
@pytest.mark.parametrize("sign", [1, -1])
def test_chunk_sums_reach_32_127_times_the_largest_weight_without_overflow(bits, sign):
    """a = +-127 against q - zp = 2^bits - 1 (zp = 0) gives |I_c| = 32 * 127 * (2^bits - 1) exactly;
    1,036,320 for 8 bits overflows 16-bit arithmetic, not ORT's i32."""
    limit = DP4A_CHUNK * 127 * (2**bits - 1)
    codes = np.full((1, 2 * ACTIVATION_BLOCK), 127 * sign, dtype=np.int8)
    centered = np.full((2, 2 * ACTIVATION_BLOCK), 2**bits - 1, dtype=np.int16)
    assert (dp4a_chunk_sums(codes, centered) == sign * limit).all()
    q = np.full((2, 2 * ACTIVATION_BLOCK), 2**bits - 1, dtype=np.uint8)
    zero = pack_zero_points(np.zeros((2, 8), dtype=np.uint8), bits)
    product = dp4a_product((codes, np.ones((1, 2))), pack_weights(q, bits, 32), np.ones((2, 8)), zero,
                           bits=bits, block_size=32, return_chunks=True)
    assert (product.chunk_sums == sign * limit).all()
    assert (product.y == sign * limit * 2 * ACTIVATION_BLOCK // DP4A_CHUNK).all()


def test_all_zero_activation_block_contributes_nothing():
    rng = np.random.default_rng(5)
    a = _f16(rng.normal(0, 1, (3, 2 * ACTIVATION_BLOCK)))
    a[:, ACTIVATION_BLOCK:] = 0.0
    w = _weights(rng, 4, 2 * ACTIVATION_BLOCK, 4, 32, with_zero_points=True)
    other = _weights(rng, 4, 2 * ACTIVATION_BLOCK, 4, 32, with_zero_points=True)
    half = slice(0, ACTIVATION_BLOCK // 32)  # weight blocks under the first activation block
    mixed_packed, mixed_scales = other.packed.copy(), other.scales.copy()
    mixed_packed[:, half], mixed_scales[:, half] = w.packed[:, half], w.scales[:, half]
    zp = w.zero_points.copy()
    zp[:, ACTIVATION_BLOCK // 32:] = other.zero_points[:, ACTIVATION_BLOCK // 32:]
    qa = quantize_blocks(a, "f16")
    assert (qa.scales[:, 1] == 0).all()
    y = dp4a_product(qa, w.packed, w.scales, w.packed_zero_points, **w.kwargs).y
    y_mixed = dp4a_product(qa, mixed_packed, mixed_scales, pack_zero_points(zp, 4), **w.kwargs).y
    assert (y == y_mixed).all()


def test_batch_dims_give_the_same_rows_as_separate_calls():
    rng = np.random.default_rng(9)
    a = _f16(rng.normal(0, 0.5, (2, 3, 5, 256)))
    w = _weights(rng, 6, 256, 4, 64, with_zero_points=True)
    bias = _f16(rng.uniform(1, 5, 6))
    qa = quantize_blocks(a, "f16")
    y = matmul_nbits(a, w.packed, w.scales, w.packed_zero_points, bias, **w.kwargs)
    product = dp4a_product(qa, w.packed, w.scales, w.packed_zero_points, bias, return_chunks=True, **w.kwargs)
    assert y.shape == product.y.shape == (2, 3, 5, 6) and product.chunk_sums.shape == (2, 3, 5, 6, 8)
    for i in range(2):
        for j in range(3):
            bound = _bound(a[i, j], w.dequantized(), bias)
            alone = matmul_nbits(a[i, j], w.packed, w.scales, w.packed_zero_points, bias, **w.kwargs)
            assert (np.abs(y[i, j] - alone) <= 2 * bound).all()
            pair = (qa.codes[i, j], qa.scales[i, j])
            alone = dp4a_product(pair, w.packed, w.scales, w.packed_zero_points, bias, return_chunks=True, **w.kwargs)
            assert (np.abs(product.y[i, j] - alone.y) <= 2 * bound).all()
            assert (product.chunk_sums[i, j] == alone.chunk_sums).all()


def test_dp4a_product_forms_chunk_arrays_only_when_asked():
    rng = np.random.default_rng(2)
    a = _f16(rng.normal(0, 1, (2, 128)))
    w = _weights(rng, 3, 128, 4, 32, with_zero_points=False)
    product = dp4a_product(quantize_blocks(a), w.packed, w.scales, **w.kwargs)
    assert product.chunk_sums is None and product.chunk_scales is None


_W = _weights(np.random.default_rng(0), 2, 128, 4, 32, with_zero_points=True)
_W16 = _weights(np.random.default_rng(0), 2, 128, 4, 16, with_zero_points=False)
_P, _S, _Z, _KW = _W.packed, _W.scales, _W.packed_zero_points, {"bits": 4, "block_size": 32}
_QA = quantize_blocks(np.ones((1, 128)))
_CODES, _ONE = np.ones((1, 128), dtype=np.int8), np.ones((1, 1))


@pytest.mark.parametrize(("call", "message"), [
    (lambda: pack_weights(np.zeros((2, 64), dtype=np.uint8), 3, 32), r"bits must be one of \(2, 4, 8\)"),
    (lambda: pack_weights(np.zeros((2, 64), dtype=np.uint8), 4, 8), "power of two >= 16"),
    (lambda: pack_weights(np.zeros((2, 96), dtype=np.uint8), 4, 48), "power of two >= 16"),
    (lambda: pack_weights(np.zeros((2, 80), dtype=np.uint8), 4, 32), "multiple of block_size"),
    (lambda: pack_weights(np.full((2, 64), 16, dtype=np.uint8), 4, 32), r"out of range.*\[0, 15\]"),
    (lambda: pack_weights(np.zeros((2, 64)), 4, 32), "must be integers"),
    (lambda: pack_weights(np.zeros(64, dtype=np.uint8), 4, 32), r"\[N, K\]"),
    (lambda: pack_zero_points(np.full((2, 3), 4, dtype=np.uint8), 2), r"zero points out of range.*\[0, 3\]"),
    (lambda: pack_zero_points(np.full((2, 3), -1), 8), "zero points out of range"),
    (lambda: unpack_weights(_P, 4, 96), "does not match"),
    (lambda: unpack_weights(_P[:, :, :7], 4, 112), "power of two >= 16"),
    (lambda: unpack_weights(_P.astype(np.int32), 4, 128), "uint8"),
    (lambda: unpack_zero_points(_Z, 4, 5), r"uint8 \[N, 3\]"),
    (lambda: dequantize_weights(_P, _S, K=100, **_KW), "multiple of block_size"),
    (lambda: dequantize_weights(_P, _S, bits=4, block_size=64, K=128), "blobs of 16 bytes"),
    (lambda: dequantize_weights(_P, _S[:, :3], K=128, **_KW), r"scales must be \[N, k_blocks\]"),
    (lambda: dequantize_weights(_P, np.full((2, 4), np.inf), K=128, **_KW), "scales hold inf"),
    (lambda: dequantize_weights(_P, _S + 1e-12, K=128, **_KW), "not f32 values"),
    (lambda: dequantize_weights(_P, _S, _Z[:1], K=128, **_KW), "zero points have 1 rows"),
    (lambda: matmul_nbits(np.ones(128), _P, _S, **_KW), r"\[\.\.\., M, K\]"),
    (lambda: matmul_nbits(np.ones((1, 96)), _P, _S, **_KW), "does not match"),
    (lambda: matmul_nbits(np.full((1, 128), np.nan), _P, _S, **_KW), "inf or NaN"),
    (lambda: matmul_nbits(np.ones((1, 128)), _P, _S, bias=np.ones(3), **_KW), r"bias must be \[N\]"),
    (lambda: dp4a_product(_QA, _W16.packed, _W16.scales, bits=4, block_size=16), "block_size >= 32"),
    (lambda: dp4a_product((_CODES[:, :96], _ONE), _P, _S, **_KW), "do not match"),
    (lambda: dp4a_product((np.ones((1, 128)), _ONE), _P, _S, **_KW), r"integers in \[-128, 127\]"),
    (lambda: dp4a_product((_CODES, np.full((1, 1), np.nan)), _P, _S, **_KW), "inf or NaN"),
    (lambda: dp4a_product(np.ones((1, 128)), _P, _S, **_KW), "QuantizedActivation or a"),
    (lambda: dp4a_product(_QA, _P, _S, bits=3, block_size=32), "bits must be one of"),
    (lambda: dp4a_chunk_sums(np.ones((1, 48), dtype=np.int8), np.ones((2, 48), dtype=np.int8)), "multiple of 32"),
    (lambda: dp4a_chunk_sums(np.ones((1, 64), dtype=np.int8), np.ones((2, 32), dtype=np.int8)), r"\[N, K\]"),
    (lambda: dp4a_chunk_sums(np.ones((1, 64)), np.ones((2, 64))), "integer codes"),
    (lambda: default_zero_point(5), "bits must be one of"),
])
def test_bad_input_raises_a_value_error_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()
