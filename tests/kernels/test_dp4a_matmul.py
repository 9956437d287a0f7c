"""The `dp4a.matmul` contract: shape rules, the budget's arithmetic, the case families' promises,
and one explicit case per tile on a real adapter.

The property checks themselves (`verify check dp4a.matmul`) judge thousands of drawn cases; these
tests pin what those checks rely on: a shape the kernel cannot take is a usage error naming the
rule, the budget is never below the output's rounding floor and matches a hand derivation, and
each case family delivers what its check assumes (exact integers, a finite result past 65504).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings

from verify.references.dp4a_quant import pack_codes, quantize_blocks, unpack_codes
from verify.references.nbits import dp4a_product, pack_weights, pack_zero_points
from verify.budgets.dp4a import matmul_budget
from verify.budgets.roundoff import gamma, rounding_floor
from verify.cases import Case
from verify.errors import UsageError
from verify.kernels.dp4a.matmul import Matmul, centred_weights, dp4a_exact
from verify.kernels.dp4a.matmul_cases import (
    EXACT_INTEGERS,
    MAGNITUDE,
    accumulator_range_cases,
    integer_sum_cases,
    matmul_cases,
)

KERNEL = Matmul()
TILES = ("64x64", "128x32", "small_m")


def _config(**overrides):
    return KERNEL.config(overrides)


# -- shape rules ---------------------------------------------------------------------------------
@pytest.mark.parametrize("config,rule", [
    ("k=130", "K % 128 == 0"),
    ("n=40", "N % 16 == 0"),
    ("block_size=256,k=384", "multiple of block_size=256"),
    ("block_size=48", "power of two >= 32"),
    ("block_size=16", "power of two >= 32"),
    ("acc=f16,dtype=f32", "needs dtype=f16"),
    ("m=-1", "expected 0 to 65536"),
])
def test_a_shape_the_kernel_cannot_take_exits_2_naming_the_rule(config, rule):
    result = subprocess.run([sys.executable, "-m", "verify", "check", "dp4a.matmul", "--config", config],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stdout + result.stderr
    assert rule in result.stderr and "Traceback" not in result.stderr


def test_pinned_shapes_are_checked_at_config_time_and_drawn_cases_obey_them():
    with pytest.raises(UsageError, match="K % 128"):
        _config(k=200)
    config = _config(m=3, n=48, k=384, block_size=128)

    @settings(max_examples=10, database=None)
    @given(matmul_cases(config, "ci"))
    def check(case):
        assert case["a_codes"].shape[1:] == (3, 96) and case["b"].shape == (48, 3, 64)

    check()


def test_only_f16_accumulation_is_a_known_accumulator_range_finding():
    """acc=f16 reproduces ORT's overflow by design (reported as "known"); acc=f32 must pass, and no
    other check may be excused."""
    f16 = _config(dtype="f16", acc="f16")
    finding = KERNEL.known_finding("accumulator_range", f16)
    assert "65504" in finding.text and finding.finding_id == "dp4a-f16-accumulation" and finding.outputs == ("y",)
    assert KERNEL.known_finding("accumulator_range", _config(dtype="f16", acc="f32")) is None
    assert all(KERNEL.known_finding(check, f16) is None for check in KERNEL.checks if check != "accumulator_range")


# -- the budget ----------------------------------------------------------------------------------
def _hand_case(sums, a_scale, b_scale):
    """K = 128 (four chunks): one A row whose chunk c holds I_c ones against weights of 1 (zp 8)."""
    codes = np.zeros((1, 1, 128), dtype=np.int8)
    weights = np.zeros((16, 128), dtype=np.int16)
    for c, s in enumerate(sums):
        codes[0, 0, 32 * c:32 * c + abs(s)] = np.sign(s)
        weights[:, 32 * c:32 * (c + 1)] = 1
    return codes, np.full((1, 1, 1), a_scale), weights, np.full((16, 4), b_scale)


def test_budget_of_exact_products_is_the_accumulation_bound():
    """I_c = (10, -20, 30, -4), unit scales: products exact, so only summation and bias remain.

    f32, no bias: gamma_3(2u_32) * 64 + 3 N_f32. f16 accumulated in f16 with bias 0.5 (Y = 16.5):
    gamma_3(2u_16) * 64 + 3 N_f16 for the sum, one f16 ulp of |Y| + that for the bias add, no store.
    Both add the float64 reference's own bound, gamma_129(2^-53) (sum_k |a_k w_k| + |bias|).
    """
    codes, a_scales, weights, b_scales = _hand_case((10, -20, 30, -4), 1.0, 1.0)
    y = np.full((1, 1, 16), 16.0)
    f32 = matmul_budget(codes, a_scales, weights, b_scales, None, y, dtype="f32", acc="f32", block_size=32)
    reference = gamma(129, 2.0**-53)
    np.testing.assert_allclose(f32, gamma(3, 2.0**-23) * 64 + 3 * 2.0**-126 + reference * 64, rtol=1e-15)
    y = y + 0.5
    f16 = matmul_budget(codes, a_scales, weights, b_scales, np.full(16, 0.5), y, dtype="f16", acc="f16", block_size=32)
    summed = gamma(3, 2.0**-10) * 64 + 3 * 2.0**-14 + reference * 64.5
    np.testing.assert_allclose(f16, summed + 2.0**-6, rtol=1e-15)  # ulp_f16(16.5 + summed) = 2^(4-10)


def test_budget_allows_a_flushed_scale_product_below_the_smallest_normal():
    """s_a s_b = 2^-16 is a subnormal f16: WGSL may flush it to 0, an error of up to N_f16 per unit of |I_c|.

    That term, sum_c |I_c| N_f16 = 64 * 2^-14, dominates; the f32/f16 roundings of the tiny
    products, the f32 sum and the f16 store add well under 2%. It is 16 times |Y|: every chunk
    may flush, and the budget must allow an output of 0.
    """
    codes, a_scales, weights, b_scales = _hand_case((10, -20, 30, -4), 2.0**-8, 2.0**-8)
    y = np.full((1, 1, 16), 16.0 * 2.0**-16)
    budget = matmul_budget(codes, a_scales, weights, b_scales, None, y, dtype="f16", acc="f32", block_size=32)
    flush = 64 * 2.0**-14
    assert (budget >= flush).all() and (budget <= flush * (1 + 2.0**-6)).all()
    assert (budget >= np.abs(y)).all()


@pytest.mark.parametrize("dtype,acc,bits,block_size,zp,bias", [
    ("f16", "f16", 4, 32, 0, 1), ("f16", "f32", 8, 64, 1, 0), ("f32", "f32", 4, 128, 1, 1), ("f32", "f32", 8, 32, 0, 0)])
def test_budget_is_never_below_the_rounding_floor(dtype, acc, bits, block_size, zp, bias):
    """No kernel can store Y in T closer than round_to_nearest(Y); a budget below that is wrong."""
    config = _config(dtype=dtype, acc=acc, bits=bits, block_size=block_size, has_zero_points=zp, has_bias=bias)

    @settings(max_examples=25, database=None)
    @given(matmul_cases(config, "quick"))
    def check(case):
        (expected,) = KERNEL.expected(config, case)
        floor = rounding_floor(expected.reference, dtype)
        assert (expected.budget >= floor).all()

    check()


# -- the case families ---------------------------------------------------------------------------
def _magnitude(case, config):
    """sum_k |s_a a_k| |s_b w_k| + |bias| per output: bounds every partial sum in any order."""
    codes = unpack_codes(case["a_codes"]).astype(np.float64)
    a = np.abs(codes) * np.repeat(case["a_scales"].astype(np.float64), 128, axis=-1)
    w = np.abs(centred_weights(case, config)) * np.repeat(
        np.abs(case["b_scales"].astype(np.float64)), config["block_size"], axis=-1)
    total = a.reshape(-1, a.shape[-1]) @ w.T
    return total + (np.abs(case["bias"].astype(np.float64)) if config["has_bias"] else 0.0)


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_integer_cases_keep_every_partial_sum_an_exact_integer(dtype):
    config = _config(dtype=dtype, acc=dtype, bits=8, has_zero_points=1, has_bias=1)

    @settings(max_examples=20, database=None)
    @given(integer_sum_cases(config, "quick"))
    def check(case):
        assert (case["a_scales"] == 1).all() and (case["b_scales"] == 1).all()
        assert _magnitude(case, config).max() <= EXACT_INTEGERS[dtype]
        y, _ = dp4a_exact(case, config)
        assert (y == np.round(y)).all() and case.params["exact_arithmetic"]

    check()


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_general_cases_cannot_overflow_in_any_summation_order(dtype):
    config = _config(dtype=dtype, acc=dtype, bits=4, has_zero_points=1, has_bias=1)

    @settings(max_examples=30, database=None)
    @given(matmul_cases(config, "quick"))
    def check(case):
        assert _magnitude(case, config).max() <= MAGNITUDE[dtype] * (1 + 2.0**-9)

    check()


@pytest.mark.parametrize("tile", TILES)
def test_accumulator_cases_pass_65504_with_a_finite_result(tile):
    """Each chunk product is finite in f16, the running sums (strided ones for small_m) pass 65504,
    and the exact Y is well inside f16."""
    config = _config(tile=tile, dtype="f16", bits=4, has_bias=1)

    @settings(max_examples=8, database=None)
    @given(accumulator_range_cases(config, "quick"))
    def check(case):
        product = dp4a_product((unpack_codes(case["a_codes"]), case["a_scales"].astype(np.float64)), case["b"],
                               case["b_scales"].astype(np.float64), None, None, bits=4, block_size=32,
                               return_chunks=True)
        p = product.chunk_sums * product.chunk_scales
        assert np.abs(p).max() <= 65504
        lanes = 16 if tile == "small_m" else 1
        strided = np.stack([np.cumsum(p[..., j::lanes], axis=-1) for j in range(lanes)])
        assert np.abs(strided).max() > 65504
        y, _ = dp4a_exact(case, config)
        assert np.abs(y).max() < 2.0**15

    check()


# -- one explicit case per tile ------------------------------------------------------------------
def _explicit_case(config) -> Case:
    """batch 2, M = 65, N = 80, K = 384: tails past every tile, three weight blocks of 128 (an odd
    count, so packed 4-bit zero-point rows end in half a byte), random zero points and bias."""
    rng = np.random.default_rng(20260529)
    batch, m, n, k, block_size = 2, 65, 80, 384, config["block_size"]
    a = rng.standard_normal((batch, m, k)).astype(np.float16)
    a[0, 3, 128:256] = 0  # one all-zero activation block
    quantized = quantize_blocks(a, "f16")
    codes = rng.integers(0, 16, (n, k))
    zero_points = rng.integers(0, 16, (n, k // block_size))
    return Case({
        "a_codes": pack_codes(quantized.codes),
        "a_scales": quantized.scales.astype(np.float16),
        "b": pack_weights(codes.astype(np.uint8), 4, block_size),
        "b_scales": (2.0 ** rng.uniform(-6, -3, (n, k // block_size))).astype(np.float16),
        "zero_points": pack_zero_points(zero_points.astype(np.uint8), 4),
        "bias": rng.uniform(1, 5, n).astype(np.float16),
    }, {"batch": batch, "m": m, "n": n, "k": k})


@pytest.mark.webgpu
@pytest.mark.parametrize("tile", TILES)
def test_each_tile_computes_an_explicit_case_within_budget(webgpu_device, tile):
    config = _config(tile=tile, dtype="f16", acc="f32", bits=4, block_size=128, has_zero_points=1, has_bias=1)
    case = _explicit_case(config)
    launched = KERNEL.launch(webgpu_device, KERNEL.wgsl(config), config, case)
    assert launched.guard_intact == {"y": True}
    (expected,) = KERNEL.expected(config, case)
    y = launched.outputs["y"].astype(np.float64)
    assert np.isfinite(y).all(), "an output was never written (still the NaN poison)"
    err = np.abs(y - expected.reference)
    assert (err <= expected.budget).all(), f"max err/budget {np.max(err / expected.budget):.3g}"


@pytest.mark.webgpu
@pytest.mark.parametrize("tile", TILES)
def test_f16_accumulation_overflow_is_the_known_finding_on_every_tile(webgpu_device, tile):
    """The overflow cases' a-priori budget may be infinite on every element (sums past 65504 in
    an f16 accumulator); the check judges the Inf itself, so the verdict is the finding, never a
    broken-contract ERROR."""
    from verify.checks import get_check
    from verify.checks.context import CheckContext
    from verify.checks.runner import RunOptions, run_check
    from verify.profiles import get_profile
    from verify.results.record import Verdict

    config = _config(tile=tile, dtype="f16", acc="f16", bits=4, block_size=32, has_zero_points=1, has_bias=1)
    ctx = CheckContext(KERNEL, config, webgpu_device, KERNEL.wgsl(config), get_profile("quick"))
    result = run_check(get_check("accumulator_range"), ctx, RunOptions(3, seed=0, shrink=False)).result
    result = result.with_known_finding(KERNEL.known_finding("accumulator_range", config))
    assert result.verdict is Verdict.KNOWN and result.finding_reproduced, result.reason
