"""Properties of references.ggml_quants: ggml's block formats, exact dequantization, ggml's quantizers."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from verify.references import ggml_quants as gq
from verify.references.mp import ggml_quants as mq

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "llamacpp" / "ggml_quants_golden.npz"
KINDS = ("q8_0", "q8_1", "q4_0", "q4_1", "q4_K", "q2_K")


@pytest.mark.parametrize("kind", KINDS)
def test_quantizers_write_the_bytes_ggmls_cpu_reference_writes(kind):
    golden = np.load(GOLDEN)
    made = gq.quantize(kind, golden["x"]).reshape(golden[kind].shape)
    assert np.array_equal(made, golden[kind])


@st.composite
def raw_blocks(draw, kind: str, count: int = 2) -> np.ndarray:
    """Blocks of any bytes whose f16 fields are finite: every code and scale pattern a weight
    file can hold, not only what a quantizer writes."""
    size = gq.block_bytes(kind)
    data = np.frombuffer(draw(st.binary(min_size=size * count, max_size=size * count)), np.uint8).reshape(count, size)
    data = data.copy()
    f16_at = {"q8_0": (0,), "q8_1": (0, 2), "q4_0": (0,), "q4_1": (0, 2), "q4_K": (0, 2), "q2_K": (80, 82)}[kind]
    for offset in f16_at:
        data[:, offset + 1] &= 0xBB  # exponent bits below 0x1F: finite
    return data


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_dequantization_agrees_with_the_mpmath_twin_bit_for_bit(kind, data):
    blocks = data.draw(raw_blocks(kind))
    values = gq.dequantize(kind, blocks)
    twin = np.array([[float(v) for v in mq.block_values(kind, block)] for block in blocks])
    assert np.array_equal(values, twin)


@pytest.mark.parametrize("kind", KINDS)
def test_every_code_is_the_nearest_level_of_its_stored_scales(kind):
    """Each code is the level nearest the value under the block's stored (f16) scale and min, so
    |x - deq| <= step / 2 (up to the f32 division that computes x / step) wherever the code is
    not clamped at the grid's ends; the K types' codes are made again from their stored scales
    (quantize_row_q4_K_ref's second pass), so the same holds for them, sub-block by sub-block."""
    x = np.load(GOLDEN)["x"]
    blocks = gq.quantize(kind, x)
    back = gq.dequantize_row(kind, blocks).reshape(x.shape)
    q = gq.codes(kind, blocks).reshape(x.shape)
    if kind in ("q4_K", "q2_K"):
        raw = blocks.reshape(-1, gq.block_bytes(kind))
        if kind == "q4_K":
            sc, _ = gq.k_scale_min(raw[:, 4:16])
            step = np.repeat(gq.f16_field(raw, 0)[:, None] * sc, 32, axis=-1)
        else:
            step = np.repeat(gq.f16_field(raw, 80)[:, None] * (raw[:, :16] & 0xF), 16, axis=-1)
        step = step.reshape(x.shape)
    else:
        step = np.repeat(gq.f16_field(blocks, 0), 32, axis=-1).reshape(x.shape)
    top = {"q8_0": 127, "q8_1": 127, "q4_0": 15, "q4_1": 15, "q4_K": 15, "q2_K": 3}[kind]
    bottom = -127 if kind.startswith("q8") else 0
    inside = (q > bottom) & (q < top) & (step > 0)
    slack = 2.0**-20 * (np.abs(x) + step)
    if kind in ("q8_0", "q8_1", "q4_0", "q4_1"):
        # these codes come from the f32 scale and min, which are then stored as f16 (half an f16
        # ulp each, 2^-11 relative): |q| |d - fl16(d)| + |m - fl16(m)| more
        levels = np.abs(q - 8) if kind == "q4_0" else np.abs(q)
        # (an absolute 2^-25 below f16's smallest normal, where the spacing is 2^-24)
        slack = slack + levels * np.maximum(2.0**-11 * step, 2.0**-25)
        if kind == "q4_1":
            low = np.repeat(np.abs(gq.f16_field(blocks, 2)), 32, axis=-1).reshape(x.shape)
            slack = slack + np.maximum(2.0**-11 * low, 2.0**-25)
    assert inside.any()
    assert np.all((np.abs(back - x) <= 0.5 * step * (1 + 2.0**-10) + slack)[inside])


def test_q8_1_stores_the_scaled_sum_of_its_codes_and_agrees_with_the_twin():
    x = np.load(GOLDEN)["x"][1]
    blocks = gq.quantize("q8_1", x)
    d, s, q = gq.q8_1_fields(blocks)
    for b in range(blocks.shape[0]):
        d_mp, s_mp, q_mp = mq.quantize_q8_1_block(x[32 * b:32 * b + 32])
        assert (Fraction(d[b]), Fraction(s[b]), list(q[b])) == (d_mp, s_mp, q_mp)


def test_ties_round_away_from_zero_in_q8_and_to_even_in_nearest_int():
    x = np.zeros(32, np.float32)
    x[0], x[1] = 127.0, 0.5  # d = 1, id = 1: 0.5 rounds to 1 (roundf), not 0 (ties to even)
    assert gq.codes("q8_0", gq.quantize("q8_0", x))[0, 1] == 1
    assert [gq.nearest_int(v) for v in (0.5, 1.5, 2.5, -0.5)] == [0, 2, 2, 0]


def test_an_all_zero_block_has_scale_zero_and_zero_codes():
    blocks = gq.quantize("q8_1", np.zeros(64, np.float32))
    d, s, q = gq.q8_1_fields(blocks)
    assert not d.any() and not s.any() and not q.any()


def test_the_dot_product_of_blocks_agrees_with_the_exact_twin():
    golden = np.load(GOLDEN)
    weights = gq.quantize("q4_K", golden["x"][2:4])
    activations = gq.quantize("q8_1", golden["x"][4:5])
    product = gq.dot("q4_K", weights, activations)
    for row in range(2):
        exact = mq.dot("q4_K", weights[row], activations[0])
        magnitude = np.abs(gq.dequantize_row("q4_K", weights[row])) @ np.abs(gq.dequantize_row("q8_1", activations[0]))
        assert abs(product[0, row] - float(exact)) <= 512 * 2.0**-53 * magnitude


def test_a_row_that_is_not_whole_blocks_or_an_unknown_type_is_refused():
    with pytest.raises(ValueError, match="whole number"):
        gq.quantize("q4_0", np.zeros(33, np.float32))
    with pytest.raises(ValueError, match="unknown block type"):
        gq.quantize("q5_0", np.zeros(32, np.float32))
    with pytest.raises(ValueError, match="18 bytes"):
        gq.dequantize("q4_0", np.zeros((1, 20), np.uint8))


@pytest.mark.parametrize("kind", ["q8_0", "q4_0"])
def test_q8_0_and_q4_0_agree_with_their_twins_bit_for_bit_ties_included(kind):
    """The quantizers set_rows_quant's contract is checked against (ggml's CPU ones), block by
    block against their exact restatements: the golden rows and blocks of exact ties (x id
    halfway between two codes: roundf away from zero in q8_0, q4_0's x id + 8.5 truncated)."""
    from verify.sources.llamacpp.ops.rows_quant_cases import source_values

    twin = mq.quantize_q8_0_block if kind == "q8_0" else mq.quantize_q4_0_block
    rows = [np.load(GOLDEN)["x"][:2].reshape(-1, 32),
            source_values(np.random.default_rng(3), kind, "ties", (4, 64)).reshape(-1, 32)]
    for x in np.concatenate(rows):
        block = gq.quantize(kind, x)[0]
        d_mp, q_mp = twin(x)
        assert Fraction(float(gq.f16_field(block, 0))) == d_mp
        assert gq.codes(kind, block).tolist() == q_mp


@st.composite
def quantizer_rows(draw) -> np.ndarray:
    """Two 256-value rows of the values quantizers meet at their edges: zeros of either sign,
    repeats (a flat sub-block), exact quarters (ties), one-sided signs, any magnitude from
    subnormal to large."""
    size = 512
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(size) * 10.0 ** draw(st.integers(-40, 6))
    shape = draw(st.sampled_from(["plain", "zeros", "negative_zeros", "quarters", "flat", "one_sign"]))
    if shape == "zeros":
        x[rng.random(size) < 0.5] = 0.0
    elif shape == "negative_zeros":
        x[rng.random(size) < 0.5] = -0.0
    elif shape == "quarters":
        x = np.round(x * 4) / 4
    elif shape == "flat":
        x[:] = x[0]
    elif shape == "one_sign":
        x = -np.abs(x) if draw(st.booleans()) else np.abs(x)
    return x.astype(np.float32)


@pytest.mark.parametrize("kind", KINDS)
@settings(max_examples=60, deadline=None)
@given(x=quantizer_rows())
def test_quantizers_agree_bit_for_bit_with_ggmls_code_transcribed_block_by_block(kind, x):
    """The quantizers work on every block at once; ggml's C, transcribed one block and one f32
    operation at a time (tests/references/ggml_quants_scalar.py), writes the same bytes.
    Inputs ggml's C has no defined result for (a scale so small that 1/d overflows: x·id is
    inf, and C's conversion of inf to int is undefined) are outside both."""
    from tests.references import ggml_quants_scalar as scalar

    with np.errstate(all="ignore"):
        try:
            expected = scalar.QUANTIZERS[kind](x)
        except (OverflowError, ValueError):  # the scalar int() of inf or NaN: undefined in C
            assume(False)
        assert np.array_equal(gq.quantize(kind, x), expected)
