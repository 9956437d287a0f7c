"""references.ggml_softmax: agreement with its mpmath twin, ALiBi's slopes as ggml defines them, and
the rows ggml gives special meaning (masked columns, a row of -inf with and without a sink)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.budgets.roundoff import unit_roundoff
from verify.references.ggml_attention import alibi_slopes
from verify.references.ggml_softmax import alibi_host, logits, soft_max_ext
from verify.references.mp import ggml_softmax as mp


@st.composite
def problems(draw):
    """x [B, H, R, n] of logits up to ±60 after scaling, an optional mask (broadcast over batches or
    heads or not, padded rows, some -inf), optional sinks, ALiBi or not."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    batch, heads, rows, n = draw(st.integers(1, 2)), draw(st.integers(1, 5)), draw(st.integers(1, 3)), draw(
        st.integers(1, 12))
    x = rng.standard_normal((batch, heads, rows, n)) * draw(st.sampled_from([1.0, 20.0]))
    mask = None
    if draw(st.booleans()):
        shape = (draw(st.sampled_from([1, batch])), draw(st.sampled_from([1, heads])), rows + draw(st.integers(0, 2)),
                 n)
        mask = -np.abs(rng.standard_normal(shape))
        mask[rng.random(shape) < 0.3] = -np.inf
        mask[..., 0] = 0.0  # every row sees its first column
    sinks = rng.standard_normal(heads) * 2 if draw(st.booleans()) else None
    max_bias = draw(st.sampled_from([0.0, 8.0]))
    return x, mask, sinks, float(draw(st.sampled_from([1.0, 0.125]))), max_bias


@settings(max_examples=40, deadline=None)
@given(problems())
def test_soft_max_ext_matches_its_mpmath_twin(problem):
    """Each element within (n + 10) u_64 of the twin's 50 digits, relative: the logits' product and
    sum, exp of the shifted logit (|s - max| <= 60 + 20·8: exp's error is |x| u_64), the sum of
    n + 1 terms, the quotient."""
    x, mask, sinks, scale, max_bias = problem
    alibi = alibi_host(max_bias, x.shape[1])
    got = soft_max_ext(x, mask, sinks, scale=scale, max_bias=max_bias, alibi=alibi)
    twin = np.array(mp.soft_max_ext(x, mask, sinks, scale=scale, max_bias=max_bias, alibi=alibi), dtype=np.float64)
    s = logits(x, mask, scale=scale, max_bias=max_bias, alibi=alibi)
    spread = np.where(np.isfinite(s), np.abs(s), 0.0).max() * 2 + 1
    tol = (x.shape[-1] + 10 + spread) * unit_roundoff("f64")
    assert np.all(np.abs(got - twin) <= tol * np.abs(twin) + 1e-300)


def test_alibi_slopes_are_the_geometric_sequences_of_the_alibi_paper():
    """8 heads, max_bias 8: slopes 2^-1 .. 2^-8. 12 heads: n_head_log2 = 8, the first 8 heads 2^-1 ..
    2^-8, the other 4 the odd powers of m1 = 2^-(8/2/8): 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5."""
    n, m0, m1 = alibi_host(8.0, 8)
    assert (n, m0, m1) == (8.0, 0.5, 2**-0.5)
    assert np.allclose(alibi_slopes(8, m0, m1, n), 2.0 ** -np.arange(1, 9), rtol=1e-15, atol=0)
    n, m0, m1 = alibi_host(8.0, 12)
    expected = np.concatenate([2.0 ** -np.arange(1, 9), 2.0 ** -np.array([0.5, 1.5, 2.5, 3.5])])
    assert np.allclose(alibi_slopes(12, m0, m1, n), expected, rtol=1e-15, atol=0)


def test_the_mask_is_scaled_by_each_heads_slope_and_broadcast_by_index():
    x = np.zeros((2, 4, 1, 3))
    mask = np.array([[[[0.0, -1.0, -2.0]]], [[[0.0, -3.0, -6.0]]]])  # [2 batches, 1 head, 1 row, 3]
    s = logits(x, mask, scale=1.0, max_bias=8.0)  # 4 heads: slopes 2^-2, 2^-4, 2^-6, 2^-8
    assert np.array_equal(s[1, 2, 0], np.array([0.0, -3.0, -6.0]) * 2.0**-6)
    assert np.array_equal(logits(x, mask, scale=1.0)[0, 3, 0], mask[0, 0, 0])  # no ALiBi: slope 1


def test_masked_columns_are_zero_and_the_sink_only_enlarges_the_denominator():
    x = np.array([[[[1.0, 2.0, 3.0]]]])
    mask = np.array([[[[0.0, -np.inf, 0.0]]]])
    y = soft_max_ext(x, mask, scale=1.0)
    assert y[0, 0, 0, 1] == 0.0 and np.isclose(y.sum(), 1.0)
    with_sink = soft_max_ext(x, mask, np.array([3.0]), scale=1.0)
    assert np.isclose(with_sink[0, 0, 0, 2], np.e**3 / (np.e + 2 * np.e**3))


def test_a_row_of_minus_inf_is_zero_with_a_sink_and_nan_without_one():
    """With a sink the denominator is exp(sink) alone; without one ggml asserts the sum positive
    (a release build: exp(-inf - -inf) = NaN)."""
    x = np.zeros((1, 2, 2, 4))
    mask = np.zeros((1, 1, 2, 4))
    mask[0, 0, 1] = -np.inf
    y = soft_max_ext(x, mask, np.array([0.0, 5.0]), scale=1.0)
    assert not y[:, :, 1].any() and np.allclose(y[0, 0, 0], 1 / 5)
    bare = soft_max_ext(x, mask, scale=1.0)
    assert np.isnan(bare[:, :, 1]).all() and np.allclose(bare[:, :, 0], 0.25)
    twin = np.array(mp.soft_max_ext(x, mask, scale=1.0), dtype=np.float64)
    assert np.isnan(twin[:, :, 1]).all()


def test_large_logits_do_not_overflow():
    y = soft_max_ext(np.array([[[[1e4, 1e4 - 1.0, -1e4]]]]), scale=1.0)
    assert np.allclose(y[0, 0, 0], [1 / (1 + np.e**-1), np.e**-1 / (1 + np.e**-1), 0.0])
