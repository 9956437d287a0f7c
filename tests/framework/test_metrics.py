"""verify.budgets.metrics.compare: what passes, what fails, and what the record says."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.budgets.expected import Expected
from verify.budgets.metrics import compare


def _expected(reference, budget, dtype="f32", exact=None):
    return Expected.around("y", np.asarray(reference, float), np.asarray(budget, float), dtype, exact)


def test_within_budget_passes_and_reports_the_largest_ratio():
    m = compare(np.array([1.0, 2.0005], np.float32), _expected([1.0, 2.0], [1e-3, 1e-3]))
    assert m.passed and m.failing == 0
    assert 0.45 < m.max_err_over_budget < 0.55


def test_over_budget_fails_and_names_the_worst_element():
    m = compare(np.array([[1.0, 2.5]]), _expected([[1.0, 2.0]], [[1e-3, 1e-3]]))
    assert not m.passed and m.failing == 1
    assert m.worst_index == [0, 1] and m.worst_value == 2.5 and m.worst_expected == 2.0
    assert "1/2 elements over budget" in m.message()


def test_nan_where_the_reference_is_finite_fails_even_with_a_huge_budget():
    m = compare(np.array([np.nan, 1.0]), _expected([0.0, 1.0], [1e30, 1e30]))
    assert not m.passed and m.nan_count == 1


def test_exact_elements_must_match_bit_for_bit():
    reference = np.array([-np.inf, 0.5])
    exact = np.array([True, False])
    assert compare(np.array([-np.inf, 0.5]), _expected(reference, [0.0, 1e-3], exact=exact)).passed
    wrong = compare(np.array([-5e4, 0.5]), _expected(reference, [1e9, 1e-3], exact=exact))
    assert not wrong.passed and wrong.exact_mismatches == 1


def test_interval_outputs_pass_anywhere_inside_their_legal_range():
    legal = Expected("codes", np.array([3.0, -7.0]), np.array([4.0, -7.0]), np.zeros(2), "i8")
    assert compare(np.array([4, -7]), legal).passed
    outside = compare(np.array([5, -7]), legal)
    assert not outside.passed and outside.max_ulp == 1.0


def test_ulps_are_counted_in_the_output_format():
    one_ulp = np.float16(1.0) + np.finfo(np.float16).eps
    m = compare(np.array([one_ulp], np.float16), _expected([1.0], [1.0], dtype="f16"))
    assert m.max_ulp == 1.0


def test_record_is_json_friendly():
    import json

    m = compare(np.array([np.inf]), _expected([1.0], [1.0]))
    json.dumps(m.as_record())


def test_a_nan_budget_fails_rather_than_excusing_the_element():
    """Even an exact element fails: with no defined budget nothing is proven about it."""
    m = compare(np.array([1.5, 1.0]), _expected([1.0, 1.0], [np.nan, np.nan]))
    assert not m.passed and m.failing == 2


def test_an_infinite_output_is_never_within_an_infinite_budget():
    m = compare(np.array([np.inf, 2.0]), _expected([1.0, 1.0], [np.inf, np.inf]))
    assert not m.passed and m.failing == 1


def test_f16_ulp_is_numpys_spacing_of_the_rounded_value():
    """roundoff.ulp reads f16 spacings from a table: it equals np.spacing on every f16 value, on
    values between them (rounded first), and past the largest finite value and on NaN."""
    from verify.budgets.roundoff import ulp

    values = np.arange(1 << 16, dtype=np.uint16).view(np.float16).astype(np.float64)
    between = np.random.default_rng(0).standard_normal(10_000) * np.exp2(np.random.default_rng(1).uniform(-30, 17, 10_000))
    edges = np.array([0.0, -0.0, 65504.0, 65519.0, 65520.0, 1e9, np.inf, -np.inf, np.nan, 2.0**-25, 2.0**-14])
    for x in (values, between, edges):
        with np.errstate(over="ignore", invalid="ignore"):
            expected = np.spacing(np.minimum(np.abs(x), 65504.0).astype(np.float16)).astype(np.float64)
        np.testing.assert_array_equal(ulp(x, "f16"), expected)
    assert ulp(1.0, "f16") == 2.0**-10 and np.ndim(ulp(1.0, "f16")) == 0


_SPECIALS = st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 5e-324, 65504.0, 2.0**1023])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), _SPECIALS), min_size=1, max_size=12),
       st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), _SPECIALS), min_size=1, max_size=12))
def test_a_point_output_is_judged_as_an_interval_of_one_point(actual, reference):
    """compare() takes a shorter path for a point (lo is hi): |a - lo| for the distance and lo for
    the middle. Every metric and every element's err/budget is the interval path's, bit for bit,
    special values and signed zeros included."""
    from verify.budgets.metrics import element_errors

    n = min(len(actual), len(reference))
    a, ref = np.array(actual[:n]), np.array(reference[:n])
    budget = np.abs(ref) * 1e-3 + 1e-6
    point = compare(a, Expected.around("x", ref, budget, "f16"))
    interval = compare(a, Expected("x", ref, ref.copy(), budget, "f16"))  # lo is not hi: the general path
    assert np.array_equal(point.ratio, interval.ratio, equal_nan=True)
    assert np.array_equal(np.signbit(point.ratio), np.signbit(interval.ratio))
    for name in ("failing", "nan_count", "max_abs", "max_ulp", "rel_l2", "max_err_over_budget", "max_err_over_floor",
                 "worst_index", "worst_value", "worst_expected", "worst_budget"):
        x, y = getattr(point, name), getattr(interval, name)
        assert x == y or (x != x and y != y), name
    from verify.budgets.metrics import _point_errors
    with np.errstate(invalid="ignore", over="ignore"):  # as compare() calls them
        assert np.array_equal(_point_errors(a, ref), element_errors(a, ref, ref), equal_nan=True)
