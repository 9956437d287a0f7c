"""verify.kernels.dp4a.fastpath gives the plain path's numbers bit for bit: references.nbits.dp4a_product
and verify.budgets.dp4a.matmul_budget, on the cases every dp4a.matmul check draws."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.references.dp4a_quant import unpack_codes
from verify.kernels.dp4a import fastpath as fast
from verify.kernels.dp4a.matmul import GATE_CONFIGS, Matmul
from verify.kernels.dp4a.matmul_cases import accumulator_range_cases, integer_sum_cases, matmul_cases

KERNEL = Matmul()
CONFIGS = {f"{c['tile']}-{c['dtype']}-{c['bits']}bit-bs{c['block_size']}-acc{c['acc']}"
           f"{'-zp' if c['has_zero_points'] else ''}{'-bias' if c['has_bias'] else ''}": KERNEL.config(c)
           for c in GATE_CONFIGS}
STRATEGIES = {"matmul": matmul_cases, "integer_sums": integer_sum_cases, "accumulator_range": accumulator_range_cases}


def assert_fast_is_plain(config, case):
    x = KERNEL.matmul_inputs(config, case)
    assert fast._takes(x)
    result = fast._evaluate_fast(x)
    plain = fast.evaluate_plain(x)
    np.testing.assert_array_equal(result.y, plain.y, strict=True)
    np.testing.assert_array_equal(result.budget, plain.budget, strict=True)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=12)
@given(data=st.data())
def test_fast_dp4a_reference_and_budget_are_the_plain_ones_bit_for_bit(name, data):
    config = CONFIGS[name]
    strategy = data.draw(st.sampled_from(sorted(STRATEGIES)), label="strategy")
    assert_fast_is_plain(config, data.draw(STRATEGIES[strategy](config, "ci"), label="case"))


@settings(max_examples=30)
@given(st.data())
def test_packed_codes_read_as_bytes_are_the_unpacked_codes(data):
    config = CONFIGS[sorted(CONFIGS)[0]]
    case = data.draw(matmul_cases(config, "quick"))
    packed = case["a_codes"]
    np.testing.assert_array_equal(np.ascontiguousarray(packed).view(np.int8), unpack_codes(packed), strict=True)


WIDE = KERNEL.config(dict(GATE_CONFIGS[1], m=300, n=288, k=1024))
SMALL = CONFIGS[sorted(CONFIGS)[0]]


@settings(max_examples=3)
@given(matmul_cases(WIDE, "ci"))
def test_an_evaluation_slab_with_many_blocks_is_the_plain_one(case):
    """Wide cases, whose slabs are split into many cache-sized blocks of rows."""
    assert_fast_is_plain(WIDE, case)


@settings(max_examples=3)
@given(matmul_cases(SMALL, "quick"))
def test_malformed_inputs_get_the_plain_references_error(case):
    config = SMALL
    bad_scales = case.replace({"b_scales": np.full_like(case["b_scales"], np.inf)})
    x = KERNEL.matmul_inputs(config, bad_scales)
    assert not fast._takes(x)
    with pytest.raises(ValueError) as plain:
        x.reference()
    with pytest.raises(ValueError) as fast_error:
        fast.evaluate(x)
    assert str(fast_error.value) == str(plain.value)


@settings(max_examples=3)
@given(matmul_cases(SMALL, "quick"))
def test_a_case_is_evaluated_once_however_many_checks_ask(case):
    calls = []
    real = fast.evaluate
    config = SMALL
    fast.evaluate = lambda inputs: calls.append(inputs) or real(inputs)
    try:
        _evaluated_once(config, case, calls)
    finally:
        fast.evaluate = real


def _evaluated_once(config, case, calls):
    first, = KERNEL.expected(config, case)
    second, = KERNEL.expected(config, case)
    assert len(calls) == 1 and first.lo is second.lo
    KERNEL.expected(dict(config, acc="f16" if config["acc"] == "f32" else "f32"), case)
    assert len(calls) == 2
