"""verify.kernels.dp4a.quantize_fastpath gives quantize_blocks's legal codes and scales bit for bit,
on the cases dp4a.quantize draws (which put values at ties on purpose), on every float16 value
against chosen block maxima, and at float32's ties."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.references.dp4a_quant import quantize_blocks
from verify.kernels.dp4a.quantize_cases import quantize_cases
from verify.kernels.dp4a.quantize_fastpath import legal_sets


def assert_plain(a, dtype):
    plain = quantize_blocks(a, dtype)
    for ours, theirs in zip(legal_sets(a, dtype), (plain.code_lo, plain.code_hi, plain.scale_lo, plain.scale_hi)):
        np.testing.assert_array_equal(ours, theirs, strict=True)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
@settings(max_examples=60)
@given(data=st.data())
def test_legal_sets_are_quantize_blocks_on_drawn_cases(dtype, data):
    assert_plain(data.draw(quantize_cases(dtype, "ci"), label="case")["a"], dtype)


@pytest.mark.parametrize("block_max", [1.0, 2.0**-14, 2.0**-13 * 1.5, 0.333, 127.0, 65504.0, 3e-5, 2.0**14, 2.0**15])
def test_every_float16_value_in_a_block_of_a_chosen_max(block_max):
    """Every float16 value v with |v| <= m in blocks whose max is m (each block -m and 127 of the
    values): every quotient a conforming kernel can meet for that m, ties, subnormals and signs."""
    values = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    m = np.float16(block_max)
    values = values[np.isfinite(values) & (np.abs(values.astype(np.float64)) <= float(m))]
    values = np.concatenate([values, np.zeros(-values.size % 127, np.float16)]).reshape(-1, 127)
    assert_plain(np.concatenate([np.full((values.shape[0], 1), -m), values], axis=1), "f16")


def test_most_values_of_a_drawn_case_need_no_plain_code(monkeypatch):
    """The plain code decides only the values near a tie (a fifth or so of normal f16 values)."""
    from verify.kernels.dp4a import quantize_fastpath

    decided = []
    real = quantize_fastpath.legal_codes
    monkeypatch.setattr(quantize_fastpath, "legal_codes", lambda a, m, dtype: decided.append(a.size) or real(a, m, dtype))
    a = np.random.default_rng(4).standard_normal((64, 1024)).astype(np.float16)
    assert_plain(a, "f16")
    assert 0 < sum(decided) < a.size / 2


def test_float32_values_at_and_beside_every_tie():
    """float32 quotients at k + 1/2 and a few float32 ulps either side, for every code k."""
    ties = (np.arange(-127, 127) + 0.5) / 127.0
    near = [ties]
    for steps in (1, 2, 3, 8, 64):
        near += [ties * (1 + steps * 2.0**-23), ties * (1 - steps * 2.0**-23)]
    values = np.concatenate(near).astype(np.float32)
    values = values[np.abs(values) <= 1.0]
    blocks = np.zeros((values.size, 128), np.float32)
    blocks[:, 0] = values
    blocks[:, 5] = 1.0
    assert_plain(blocks, "f32")
    assert_plain(blocks * np.float32(2.0**-100), "f32")


def test_inputs_the_fast_path_does_not_take_get_quantize_blocks_and_its_errors():
    a = np.random.default_rng(2).standard_normal((3, 256)).astype(np.float16)
    assert_plain(a.astype(np.float64), "f16")  # stored in float64: quantize_blocks checks it
    assert_plain(np.zeros((2, 128), np.float16), "f16")
    for bad in (np.full((1, 128), np.inf, np.float16), np.ones((1, 100), np.float16)):
        with pytest.raises(ValueError) as plain:
            quantize_blocks(bad, "f16")
        with pytest.raises(ValueError) as ours:
            legal_sets(bad, "f16")
        assert str(ours.value) == str(plain.value)
