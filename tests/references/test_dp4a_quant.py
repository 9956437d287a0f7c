"""Properties of references.dp4a_quant: ORT's DP4A activation quantization and its legal results."""

from __future__ import annotations

import math
from fractions import Fraction

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.references import dp4a_quant as dq
from verify.references.dp4a_quant import (
    ACTIVATION_BLOCK,
    dequantize_activation,
    pack_codes,
    quantize_blocks,
    quantize_nominal,
    unpack_codes,
)
from verify.references.mp import dp4a as mp_dp4a

_TYPES = {"f16": np.float16, "f32": np.float32}
_PRECISION = {"f16": 11, "f32": 24}
_SMALLEST_NORMAL = {"f16": 2.0**-14, "f32": 2.0**-126}
_SMALLEST_SUBNORMAL = {"f16": 2.0**-24, "f32": 2.0**-149}
_DIVISOR_RANGE = {"f16": (2.0**-14, 2.0**14), "f32": (2.0**-126, 2.0**126)}


@st.composite
def activations(draw, dtype: str, max_blocks: int = 2) -> np.ndarray:
    """A [1, 128 * blocks] of exact T-values: anything finite, unit-sized, near the subnormals, or
    powers of two and 127 times them (quotients and scales that are powers of two)."""
    width = 16 if dtype == "f16" else 32
    powers_of_two = st.integers(-24, 8).map(lambda e: 2.0**e)  # 127 * 2^8 < 65504
    elements = draw(st.sampled_from([
        st.floats(width=width, allow_nan=False, allow_infinity=False),
        st.floats(-1, 1, width=width),
        st.floats(-(2.0**-13), 2.0**-13, width=width),
        st.one_of(powers_of_two, powers_of_two.map(lambda p: 127 * p)).flatmap(lambda v: st.sampled_from([v, -v])),
    ]))
    blocks = draw(st.integers(1, max_blocks))
    a = draw(hnp.arrays(_TYPES[dtype], (1, ACTIVATION_BLOCK * blocks), elements=elements))
    return a.astype(np.float64)


def _block_max(a: np.ndarray) -> np.ndarray:
    """max |a| of each element's block, broadcast to a's shape."""
    blocks = np.abs(a).reshape(*a.shape[:-1], -1, ACTIVATION_BLOCK)
    return np.repeat(blocks.max(axis=-1), ACTIVATION_BLOCK, axis=-1)


def _bounded(a: np.ndarray, dtype: str) -> np.ndarray:
    """Where WGSL bounds the division a / m, element-wise (m inside the divisor range)."""
    low, high = _DIVISOR_RANGE[dtype]
    m = _block_max(a)
    return (m >= low) & (m <= high)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_quantization_matches_the_mpmath_definition_exactly(dtype, data):
    a = data.draw(activations(dtype))
    q = quantize_blocks(a, dtype)
    for b in range(a.shape[-1] // ACTIVATION_BLOCK):
        block = slice(b * ACTIVATION_BLOCK, (b + 1) * ACTIVATION_BLOCK)
        want = mp_dp4a.quantize_block(a[0, block], dtype)
        assert q.codes[0, block].tolist() == want["codes"]
        assert q.code_lo[0, block].tolist() == want["code_lo"]
        assert q.code_hi[0, block].tolist() == want["code_hi"]
        assert (q.scales[0, b], q.scale_lo[0, b], q.scale_hi[0, b]) == tuple(
            float(want[k]) for k in ("scale", "scale_lo", "scale_hi"))


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_nominal_codes_and_scales_lie_inside_their_legal_ranges(dtype, data):
    a = data.draw(activations(dtype))
    q = quantize_blocks(a, dtype)
    assert q.codes.dtype == np.int8 and q.codes.shape == a.shape
    assert ((-127 <= q.codes) & (q.codes <= 127)).all()
    assert ((-128 <= q.code_lo) & (q.code_lo <= q.codes) & (q.codes <= q.code_hi) & (q.code_hi <= 127)).all()
    assert ((q.scale_lo <= q.scales) & (q.scales <= q.scale_hi)).all()
    t_type = _TYPES[dtype]
    for scale in (q.scales, q.scale_lo, q.scale_hi):
        assert (scale.astype(t_type).astype(np.float64) == scale).all(), "scales must be T-values"


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_nominal_code_reconstructs_a_within_half_a_step_plus_the_rounding_allowance(dtype, data):
    """|a - s q| <= s/2 + (2 + 1/254) u m + (m/2 + 64) eta, for the nominal q and s.

    With t = a/m, t^ = fl_T(t), q = floor(1/2 + 127 t^), s = fl_T(m/127), u = 2^-p and eta the
    smallest subnormal: |t^ - t| <= u|t| + eta/2, |q - 127 t^| <= 1/2, |s - m/127| <= u m/127 + eta/2.
    a - s q = (m/127)(127 t - q) + (m/127 - s) q, so with |t| <= 1 and |q| <= 127,
    |a - s q| <= m/254 + 2 u m + (m + 127) eta/2, and m/254 <= s/2 + u m/254 + eta/4.
    """
    a = data.draw(activations(dtype))
    q = quantize_blocks(a, dtype)
    u, eta = 2.0 ** -_PRECISION[dtype], _SMALLEST_SUBNORMAL[dtype]
    m = _block_max(a)
    s = np.repeat(q.scales, ACTIVATION_BLOCK, axis=-1)
    for value, scale, code, block_max in zip(a.ravel(), s.ravel(), q.codes.ravel(), m.ravel()):
        error = abs(Fraction(value) - Fraction(scale) * int(code))
        allowance = Fraction(scale) / 2 + Fraction((2 + 1 / 254) * u * block_max) + Fraction((block_max / 2 + 64) * eta)
        assert error <= allowance, (value, scale, code)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_legal_codes_hold_the_exact_code_and_stay_within_the_division_allowance(dtype, data):
    """round(127 a / m), either tie, is legal; every legal code is within
    1/2 + 127 * 2.5 ULP_T(t) + 2^-17 of 127 a / m, with ULP_T(t) <= 2^(1-p)|t| + eta
    (the 2.5-ULP division, then the f32 product's rounding below 128).
    Subnormal inputs (which may flush to code 0) and unbounded blocks are excluded."""
    a = data.draw(activations(dtype))
    q = quantize_blocks(a, dtype)
    p, eta = _PRECISION[dtype], _SMALLEST_SUBNORMAL[dtype]
    subnormal = (a != 0) & (np.abs(a) < _SMALLEST_NORMAL[dtype])
    checked = _bounded(a, dtype) & ~subnormal
    m = _block_max(a)
    for value, block_max, lo, hi in zip(a[checked], m[checked], q.code_lo[checked], q.code_hi[checked]):
        x = 127 * Fraction(value) / Fraction(block_max)
        assert lo <= math.ceil(x - Fraction(1, 2)) and math.floor(x + Fraction(1, 2)) <= hi
        t = abs(value / block_max)
        allowance = 0.5 + 127 * 2.5 * (2.0 ** (1 - p) * t + eta) + 2.0**-17
        assert abs(lo - x) <= allowance and abs(hi - x) <= allowance, (value, block_max, lo, hi)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@pytest.mark.parametrize("block_max", [1.0, 3.0, 0.75, 1000.0])
def test_exact_ties_at_half_the_block_max_are_two_valued(dtype, block_max):
    """127 t is k + 1/2 for a T-value t only at t = +-1/2 (127 is odd): codes {63, 64} and {-64, -63}.

    The nominal code follows WGSL's floor(0.5 + x): 64 and -63 (round-half-even would give -64).
    """
    a = np.zeros((1, ACTIVATION_BLOCK))
    a[0, :3] = block_max, block_max / 2, -block_max / 2
    q = quantize_blocks(a, dtype)
    assert (q.code_lo[0, 1], q.code_hi[0, 1]) == (63, 64)
    assert (q.code_lo[0, 2], q.code_hi[0, 2]) == (-64, -63)
    assert (q.codes[0, 1], q.codes[0, 2]) == (64, -63)
    assert q.code_lo[0, 0] == q.code_hi[0, 0] == q.codes[0, 0] == 127


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_every_near_tie_is_two_valued(dtype):
    """t = fl_T((k + 1/2) / 127) puts 127 t within half a T-step of k + 1/2; the division's 2.5 ULP
    straddles the tie, so the legal codes are exactly {k, k + 1}, for every k in -127..126."""
    ks = np.arange(-127, 127)
    near_ties = ((ks + 0.5) / 127).astype(_TYPES[dtype]).astype(np.float64)
    a = np.zeros((2, ACTIVATION_BLOCK))
    a[:, 0] = 1.0  # block max 1: a / m = t exactly
    a[:, 1:] = near_ties.reshape(2, -1)
    q = quantize_blocks(a, dtype)
    assert (q.code_lo[:, 1:].ravel() == ks).all()
    assert (q.code_hi[:, 1:].ravel() == ks + 1).all()


@pytest.mark.parametrize(("dtype", "gap"), [("f16", 2.0**-10), ("f32", 2.0**-23)])
def test_scale_at_a_power_of_two_counts_ulps_by_the_smaller_gap_below(dtype, gap):
    """m = 127 makes m/127 = 1, whose WGSL ULP is the gap below 1 (half the gap above): 2.5 of
    those reach two T-values down (1 - gap) but only one up (1 + gap)."""
    a = np.zeros((1, ACTIVATION_BLOCK))
    a[0, 0] = 127.0
    q = quantize_blocks(a, dtype)
    assert (q.scale_lo[0, 0], q.scales[0, 0], q.scale_hi[0, 0]) == (1 - gap, 1.0, 1 + gap)


def test_f32_product_rounding_can_carry_127t_onto_a_tie():
    """For some f32 a in [0.5, 1) (m = 1, so t = a) every quotient within 2.5 ULP gives
    127 t' < k + 1/2, yet the f32 product may round 127 t' up to k + 1/2 exactly, a tie: k + 1 is legal."""
    half, eta = Fraction(1, 2), Fraction(2) ** -24  # eta: the f32 gap in [0.5, 1)
    carried = []
    for k in range(64, 127):
        centre = np.float32((k + 0.5) / 127 - 2.0**-23)
        for a in (np.nextafter(centre, np.float32(0)), centre, np.nextafter(centre, np.float32(1))):
            highest_product = 127 * (Fraction(float(a)) + 2 * eta)  # largest legal quotient: a + 2 gaps
            if k + half - Fraction(2) ** -17 < highest_product < k + half:  # the f32 above it is k + 1/2
                carried.append((float(a), k))
    assert 0 < 2 * len(carried) < ACTIVATION_BLOCK
    values = np.array([a for a, _ in carried])
    ks = np.array([k for _, k in carried])
    block = np.zeros((1, ACTIVATION_BLOCK))
    block[0, 0] = 1.0
    block[0, 1:1 + 2 * len(carried)] = np.concatenate([values, -values])  # and the mirror image
    q = quantize_blocks(block, "f32")
    positive, negative = slice(1, 1 + len(carried)), slice(1 + len(carried), 1 + 2 * len(carried))
    assert (q.code_hi[0, positive] == ks + 1).all() and (q.codes[0, positive] == ks).all()
    assert (q.code_lo[0, negative] == -ks - 1).all() and (q.codes[0, negative] == -ks).all()


def test_f16_rounding_of_the_quotient_crosses_halves_and_makes_codes_two_valued():
    """Rounding t = a/m to f16 before the snorm rounding (a double rounding) moves 127 t across a
    half-integer for some a: then even a correctly rounded division gives another code than
    round(127 a / m), and the legal range must hold both. Searched over every f16 a in (0, 3], m = 3."""
    m = 3.0
    a = np.arange(1, 0x4201, dtype=np.uint16).view(np.float16).astype(np.float64)
    nominal = np.floor(0.5 + 127 * (a / m).astype(np.float16).astype(np.float64))
    exact = np.floor(0.5 + 127 * a / m)  # 127 a / 3 is never a tie
    crossing = a[nominal != exact]
    assert 0 < len(crossing) < ACTIVATION_BLOCK
    block = np.zeros((1, ACTIVATION_BLOCK))
    block[0, 0] = m
    block[0, 1:1 + len(crossing)] = crossing
    q = quantize_blocks(block, "f16")
    found = slice(1, 1 + len(crossing))
    both = np.sort(np.stack([nominal[nominal != exact], exact[nominal != exact]]), axis=0)
    assert (q.codes[0, found] == nominal[nominal != exact]).all()
    assert (q.code_lo[0, found] == both[0]).all() and (q.code_hi[0, found] == both[1]).all()


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_all_zero_block_has_zero_codes_and_scale_and_leaves_its_neighbours_alone(dtype):
    """ORT divides 0/0 there, so any byte is legal; the stored scale is 0 (up to the two smallest
    subnormals a 2.5-ULP division of 0 may return), which zeroes the block's products."""
    rng = np.random.default_rng(7)
    other = rng.normal(0, 1, ACTIVATION_BLOCK).astype(_TYPES[dtype]).astype(np.float64)
    a = np.concatenate([np.zeros(ACTIVATION_BLOCK), other])[None]
    q = quantize_blocks(a, dtype)
    zero = slice(0, ACTIVATION_BLOCK)
    assert (q.codes[0, zero] == 0).all() and q.scales[0, 0] == 0.0
    assert (q.code_lo[0, zero] == -128).all() and (q.code_hi[0, zero] == 127).all()
    eta = _SMALLEST_SUBNORMAL[dtype]
    assert (q.scale_lo[0, 0], q.scale_hi[0, 0]) == (-2 * eta, 2 * eta)
    alone = quantize_blocks(other[None], dtype)
    assert (q.codes[0, ACTIVATION_BLOCK:] == alone.codes[0]).all() and q.scales[0, 1] == alone.scales[0, 0]
    assert (dequantize_activation(q.codes, q.scales)[0, zero] == 0).all()


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_outlier_dominated_block_maps_the_outlier_to_127_and_the_rest_to_zero(dtype, sign):
    rng = np.random.default_rng(3)
    a = rng.uniform(-1e-3, 1e-3, (1, ACTIVATION_BLOCK))
    a[0, 17] = sign * 1000.0
    a = a.astype(_TYPES[dtype]).astype(np.float64)
    q = quantize_blocks(a, dtype)
    expected = np.zeros(ACTIVATION_BLOCK)
    expected[17] = sign * 127
    assert (q.codes[0] == expected).all()
    assert (q.code_lo[0] == expected).all() and (q.code_hi[0] == expected).all()
    assert q.scales[0, 0] == float(_TYPES[dtype](1000.0 / 127))


def test_subnormal_inputs_may_flush_to_code_zero():
    """f16 a = 2^-15 is subnormal; with m = 2^-13 its code is round(31.75) = 32, or 0 if flushed."""
    a = np.zeros((1, ACTIVATION_BLOCK))
    a[0, :3] = 2.0**-13, 2.0**-15, -(2.0**-15)
    q = quantize_blocks(a, "f16")
    assert q.codes[0, :3].tolist() == [127, 32, -32]
    assert q.code_lo[0, :3].tolist() == [127, 0, -32]
    assert q.code_hi[0, :3].tolist() == [127, 32, 0]


@pytest.mark.parametrize(("dtype", "block_max"), [
    ("f16", 20000.0), ("f16", 2.0**-16), ("f32", 2.0**127), ("f32", 2.0**-130),
])
def test_block_max_outside_the_divisor_range_leaves_codes_unbounded(dtype, block_max):
    """WGSL bounds x / y only for |y| in [2^-14, 2^14] (f16) or [2^-126, 2^126] (f32)."""
    a = np.zeros((1, ACTIVATION_BLOCK))
    a[0, :2] = block_max, block_max / 4
    q = quantize_blocks(a, dtype)
    assert (q.code_lo == -128).all() and (q.code_hi == 127).all()
    assert q.codes[0, :2].tolist() == [127, 32]


def test_subnormal_f16_scale_may_flush_to_zero():
    """m / 127 below 2^-14 is an f16 subnormal, which WGSL lets a device flush to 0."""
    a = np.zeros((2, ACTIVATION_BLOCK))
    a[0, 0], a[1, 0] = float(np.float16(0.001)), 1.0
    q = quantize_blocks(a, "f16")
    assert 0 < q.scales[0, 0] < 2.0**-14 and q.scale_lo[0, 0] == 0.0
    assert q.scale_lo[1, 0] > 0.0


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_batch_dims_quantize_every_row_independently(dtype):
    rng = np.random.default_rng(11)
    a = rng.normal(0, 0.5, (2, 3, 2 * ACTIVATION_BLOCK)).astype(_TYPES[dtype]).astype(np.float64)
    a[1, 2, :ACTIVATION_BLOCK] = 0.0
    q = quantize_blocks(a, dtype)
    assert q.scales.shape == (2, 3, 2)
    for i in range(2):
        for j in range(3):
            row = quantize_blocks(a[i, j], dtype)
            for field in ("codes", "scales", "code_lo", "code_hi", "scale_lo", "scale_hi"):
                assert (getattr(q, field)[i, j] == getattr(row, field)).all(), field


@pytest.mark.parametrize("least", [True, False])
@pytest.mark.parametrize("offset", [-1, 0, 1])
def test_interval_ends_settle_exactly_from_an_estimate_one_value_off(least, offset):
    """The float64 estimate of an interval end may round into T one value off; the exact test fixes it."""
    end = np.float16(40.0)  # the predicate holds from 40 up (least) or from 40 down (greatest)

    def holds(v):
        return v.astype(np.float64) >= 40.0 if least else v.astype(np.float64) <= 40.0

    step = np.float16(2.0**-5)  # the f16 gap at 40
    estimate = np.array([end + offset * step], dtype=np.float16)
    assert dq._settle(estimate, holds, least=least)[0] == end


def test_pack_codes_puts_code_i_in_bits_8i_to_8i_plus_7_in_twos_complement():
    codes = np.array([[1, -1, 2, -128, 127, 0, -127, 5]], dtype=np.int8)
    packed = pack_codes(codes)
    assert packed.dtype == np.uint32
    assert packed.tolist() == [[0x80_02_FF_01, 0x05_81_00_7F]]
    assert (unpack_codes(packed) == codes).all()


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.int8, hnp.array_shapes(min_dims=1, max_dims=3).map(lambda s: (*s[:-1], 4 * s[-1]))))
def test_pack_then_unpack_codes_round_trips(codes):
    packed = pack_codes(codes)
    assert packed.shape == (*codes.shape[:-1], codes.shape[-1] // 4)
    unpacked = unpack_codes(packed)
    assert unpacked.dtype == np.int8 and (unpacked == codes).all()


def test_dequantize_activation_scales_each_block_by_its_own_scale():
    codes = np.arange(-128, 128, dtype=np.int8).reshape(1, 2 * ACTIVATION_BLOCK)
    scales = np.array([[0.5, 2.0**-20]])
    a = dequantize_activation(codes, scales)
    assert (a[0, :ACTIVATION_BLOCK] == np.arange(-128, 0) * 0.5).all()
    assert (a[0, ACTIVATION_BLOCK:] == np.arange(0, 128) * 2.0**-20).all()


@pytest.mark.parametrize(("call", "message"), [
    (lambda: quantize_blocks(np.zeros((2, 96))), "multiple of 128"),
    (lambda: quantize_blocks(np.zeros((2, 0))), "K > 0"),
    (lambda: quantize_blocks(np.zeros(())), r"\[\.\.\., K\]"),
    (lambda: quantize_blocks(np.zeros((1, 128)), dtype="bf16"), "'f16' or 'f32'"),
    (lambda: quantize_blocks(np.full((1, 128), np.nan)), "inf or NaN"),
    (lambda: quantize_blocks(np.full((1, 128), np.inf), "f32"), "inf or NaN"),
    (lambda: quantize_blocks(np.full((1, 128), 0.1), "f16"), "not representable in f16"),
    (lambda: quantize_blocks(np.full((1, 128), 1e5), "f16"), "not representable in f16"),
    (lambda: quantize_blocks(np.full((1, 128), 0.1), "f32"), "not representable in f32"),
    (lambda: quantize_blocks(np.full((1, 128), "x")), "real numbers"),
    (lambda: pack_codes(np.zeros((2, 6), dtype=np.int8)), "multiple of 4"),
    (lambda: pack_codes(np.full((1, 4), 200)), r"\[-128, 127\]"),
    (lambda: pack_codes(np.zeros((1, 4))), r"integers in \[-128, 127\]"),
    (lambda: unpack_codes(np.zeros((1, 4), dtype=np.int32)), "uint32"),
    (lambda: dequantize_activation(np.zeros((1, 256), dtype=np.int8), np.ones((1, 1))), "do not match"),
])
def test_bad_input_raises_a_value_error_naming_the_problem(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), dtype=st.sampled_from(["f16", "f32"]),
       mix=st.sampled_from(["normal", "zero_block", "huge", "tiny", "ties"]))
def test_the_nominal_quantization_is_quantize_blocks_codes_and_scales(seed, dtype, mix):
    """Case generation uses quantize_nominal; it must hand the matmul what quantize_blocks says."""
    rng = np.random.default_rng(seed)
    t = np.float16 if dtype == "f16" else np.float32
    a = rng.standard_normal((3, 384))
    if mix == "zero_block":
        a[1, 128:256] = 0.0
    elif mix == "huge":
        a *= 6e4 / 8 if dtype == "f16" else 1e30
    elif mix == "tiny":
        a *= 1e-6 if dtype == "f16" else 1e-40
    elif mix == "ties":
        a = np.round(a * 127) / 127
    a = a.astype(t)
    full = quantize_blocks(a, dtype)
    codes, scales = quantize_nominal(a, dtype)
    assert codes.dtype == np.int8 and np.array_equal(codes, full.codes)
    assert np.array_equal(scales, full.scales)
