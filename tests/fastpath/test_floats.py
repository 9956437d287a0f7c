"""verify.fastpath.floats: the bit-level twins return exactly what verify.budgets.roundoff returns."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.budgets import roundoff
from verify.fastpath import floats

FORMATS = ("f16", "f32")


def every_float16() -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float64)


def neighbourhoods(values: np.ndarray, dtype: str) -> np.ndarray:
    """Each format value, the midpoints to its neighbours (where rounding ties or carries into the
    next binade), and the float64 values one ulp either side of all of those."""
    t = roundoff.numpy_dtype(dtype)
    with np.errstate(over="ignore"):
        stored = values.astype(t)
    up = np.nextafter(stored, t(np.inf)).astype(np.float64)
    points = np.concatenate([stored.astype(np.float64), (stored.astype(np.float64) + up) / 2])
    points = points[np.isfinite(points)]
    return np.concatenate([points, np.nextafter(points, np.inf), np.nextafter(points, -np.inf), -points])


def assert_same(actual, expected):
    np.testing.assert_array_equal(np.asarray(actual), np.asarray(expected), strict=True)


@pytest.mark.parametrize("name", ["ulp", "faithful_rounding_bound"])
def test_twins_equal_roundoff_on_every_float16_value(name):
    x = every_float16()
    assert_same(getattr(floats, name)(x, "f16"), getattr(roundoff, name)(x, "f16"))


@pytest.mark.parametrize("dtype", FORMATS)
@pytest.mark.parametrize("name", ["ulp", "faithful_rounding_bound"])
def test_twins_equal_roundoff_at_rounding_boundaries_of_every_binade(name, dtype):
    exponents = np.arange(-160, 130) if dtype == "f32" else np.arange(-30, 17)
    mantissas = np.random.default_rng(7).integers(1 << 20, 1 << 21, (exponents.size, 8)) / 2.0**20
    x = neighbourhoods((mantissas * 2.0 ** exponents[:, None]).ravel(), dtype)
    extremes = np.array([0.0, -0.0, 2.0**-1074, roundoff.smallest_normal(dtype), 65488.0, 65504.0, 65519.0,
                         65520.0, 3.4e38, np.finfo(np.float32).max, 1e300, np.inf, -np.inf, np.nan])
    x = np.concatenate([x, extremes])
    assert_same(getattr(floats, name)(x, dtype), getattr(roundoff, name)(x, dtype))


@settings(max_examples=300)
@given(st.sampled_from(FORMATS), st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=64))
def test_twins_equal_roundoff_on_any_float64(dtype, values):
    x = np.array(values, np.float64)
    for name in ("ulp", "faithful_rounding_bound"):
        assert_same(getattr(floats, name)(x, dtype), getattr(roundoff, name)(x, dtype))


@pytest.mark.parametrize("dtype", FORMATS)
def test_ulp_writes_into_out_and_keeps_the_shape(dtype):
    x = np.random.default_rng(3).standard_normal((3, 5, 4)) * 100
    out = np.full(x.shape, np.nan)
    result = floats.ulp(x, dtype, out=out)
    assert result.shape == x.shape
    assert_same(out, roundoff.ulp(x, dtype))
    out = np.full(x.shape, np.nan)
    floats.ulp(np.append(x.ravel()[:-1], np.inf).reshape(x.shape), dtype, out=out)  # the plain fallback writes too
    assert np.isinf(out.ravel()[-1]) and np.isfinite(out.ravel()[:-1]).all()


@pytest.mark.parametrize("dtype", FORMATS)
def test_representable_normal_is_what_a_round_trip_says(dtype):
    t = roundoff.numpy_dtype(dtype)
    x = neighbourhoods(np.random.default_rng(5).standard_normal(4000) * 2.0 ** np.random.default_rng(6).uniform(
        -150 if dtype == "f32" else -26, 130 if dtype == "f32" else 17, 4000), dtype)
    x = np.concatenate([x, [0.0, -0.0, np.inf, np.nan, 2.0**-1074]])
    with np.errstate(over="ignore", invalid="ignore"):
        expected = (x.astype(t).astype(np.float64) == x) & ((x == 0) | (np.abs(x) >= roundoff.smallest_normal(dtype)))
    assert_same(floats.representable_normal(x, dtype), expected)
    assert expected.any() and not expected.all()


def test_every_float16_normal_and_infinity_is_representable_and_no_subnormal_or_nan_is():
    x = every_float16()
    normal = ~np.isnan(x) & ((x == 0) | (np.abs(x) >= 2.0**-14))
    assert_same(floats.representable_normal(x, "f16"), normal)


@pytest.mark.parametrize("dtype", FORMATS)
def test_faithful_bound_needs_no_range_check_below_the_top_of_range(dtype):
    x = np.abs(neighbourhoods(np.random.default_rng(8).standard_normal(3000) * 100.0, dtype))
    x = x[x < floats.top_of_range(dtype)]
    assert x.size > 1000
    assert_same(floats.faithful_rounding_bound(x, dtype, in_range=True), roundoff.faithful_rounding_bound(x, dtype))


def plain_rounding(x: np.ndarray, dtype: str) -> np.ndarray:
    with np.errstate(over="ignore"):
        return x.astype(roundoff.numpy_dtype(dtype)).astype(np.float64)


@pytest.mark.parametrize("dtype", FORMATS)
def test_round_to_is_numpys_conversion_at_every_binades_rounding_boundaries(dtype):
    """Each value, the ties between neighbours and one float64 ulp either side of them, subnormals,
    the top of the range (65504 stays, 65520 overflows), infinities and NaN."""
    exponents = np.arange(-160, 130) if dtype == "f32" else np.arange(-30, 17)
    mantissas = np.random.default_rng(9).integers(1 << 20, 1 << 21, (exponents.size, 8)) / 2.0**20
    x = neighbourhoods((mantissas * 2.0 ** exponents[:, None]).ravel(), dtype)
    if dtype == "f16":
        finite = every_float16()
        with np.errstate(over="ignore"):  # 65504's upper neighbour is inf
            x = np.concatenate([x, neighbourhoods(finite[np.isfinite(finite)], dtype)])
    for extra in ([0.0, -0.0, 2.0**-1074, 2.0**-25, 3 * 2.0**-26, 65504.0, 65519.0, 65520.0], [np.inf], [np.nan]):
        x = np.concatenate([x, extra])
        out = np.full(x.shape, 7.0)
        assert floats.round_to(x, dtype, out) is out
        assert_same(out, plain_rounding(x, dtype))


@settings(max_examples=300)
@given(st.sampled_from(FORMATS), st.lists(st.floats(allow_nan=False, allow_infinity=False, max_value=7e4,
                                                    min_value=-7e4), min_size=1, max_size=64))
def test_round_to_is_numpys_conversion_on_any_float64(dtype, values):
    x = np.array(values, np.float64)
    assert_same(floats.round_to(x, dtype, np.empty_like(x)), plain_rounding(x, dtype))


def test_round_to_refuses_an_output_it_cannot_write_whole():
    x = np.ones((4, 6))
    for out in (x, np.empty((4, 12))[:, :6], np.empty(24)):
        with pytest.raises(ValueError, match="C-contiguous"):
            floats.round_to(x, "f16", out)


@pytest.mark.parametrize("dtype", ("f16", "f32", "f64"))
def test_ulp_and_rounding_floor_from_one_conversion_are_the_two_functions(dtype):
    """compare()'s one conversion gives ulp() and rounding_floor() bit for bit: every f16, the
    midpoints and their float64 neighbours, the infinities, NaN, signed zeros, values past the
    format's range and a spread of magnitudes."""
    rng = np.random.default_rng(1)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 65504.0, 65519.99, 65520.0, -65520.0, 1e6,
                        -1e300, 2.0**-24, 2.0**-25, -2.0**-26, 3.4e38, 3.5e38, -1e-310])
    spread = rng.standard_normal(20000) * 10.0 ** rng.integers(-40, 40, 20000)
    with np.errstate(over="ignore", invalid="ignore"):  # f16's infinities and NaNs have no neighbours
        x = np.concatenate([special, neighbourhoods(every_float16(), "f16"), spread])
    spacing, floor = roundoff.ulp_and_rounding_floor(x, dtype)
    assert np.array_equal(spacing, roundoff.ulp(x, dtype), equal_nan=True)
    assert np.array_equal(floor, roundoff.rounding_floor(x, dtype), equal_nan=True)
