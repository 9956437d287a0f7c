"""references.ggml_norm: agreement with its mpmath twin (ggml's RMS_NORM then MUL, row by row)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.budgets.roundoff import unit_roundoff
from verify.references.ggml_norm import rms_norm_mul, rms_scale
from verify.references.mp import ggml_norm as mp


@st.composite
def rows(draw):
    """1-3 rows of 1-40 values spread over 2^-60..2^60 (zero rows too), a weight, an epsilon."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    shape = (draw(st.integers(1, 3)), draw(st.integers(1, 40)))
    x = np.ldexp(rng.standard_normal(shape), rng.integers(-60, 61, shape))
    if draw(st.booleans()):
        x[0] = 0.0
    return x, rng.standard_normal(shape[1]), draw(st.sampled_from([1e-5, 1e-6]))


@settings(max_examples=60, deadline=None)
@given(rows())
def test_rms_norm_mul_matches_its_mpmath_twin(problem):
    """Each element within 8 u_64 of the twin's 50 digits (relative: a sum of non-negative squares,
    one square root, one quotient, two products)."""
    x, w, eps = problem
    got = rms_norm_mul(x, w, eps)
    twin = np.array(mp.rms_norm_mul(x, w, eps), dtype=np.float64)
    assert np.all(np.abs(got - twin) <= 8 * unit_roundoff("f64") * np.abs(twin) + 1e-300)


def test_an_all_zero_row_is_zero_and_a_constant_row_is_the_weight():
    w = np.array([1.0, -2.0, 0.5])
    assert not rms_norm_mul(np.zeros((1, 3)), w, 1e-6).any()
    # mean(c²) = c², so y = c / sqrt(c² + eps) · w, which is w for eps = 0 and just below it otherwise
    y = rms_norm_mul(np.full((1, 3), 4.0), w, 0.0)
    assert np.array_equal(y[0], w)
    assert rms_scale(np.full((1, 3), 4.0), 1e-6)[0] < 0.25
