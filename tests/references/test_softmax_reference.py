"""references.softmax: agreement with mpmath within derived bounds, and the algebra of merges."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from reference_bounds import U64, assert_within, merge_bounds, softmax_bounds

from verify.references import softmax as sm
from verify.references.mp import softmax as mp_sm

BASES = st.sampled_from([2, "e"])
LOGIT = st.floats(-60, 60) | st.just(-np.inf)
VALUE = st.floats(-100, 100)


@st.composite
def contexts(draw, min_len=0, max_len=10):
    """(logits [R, n], values [R, n, D]) with -inf logits mixed in (so empty rows occur)."""
    rows, n, dim = draw(st.integers(1, 3)), draw(st.integers(min_len, max_len)), draw(st.integers(1, 3))
    return draw(arrays(np.float64, (rows, n), elements=LOGIT)), draw(arrays(np.float64, (rows, n, dim), elements=VALUE))


@st.composite
def outputs(draw, count=1, rows=2, dim=2):
    """`count` stored outputs (o [rows, dim], lse [rows]), some empty (lse = -inf, o = 0)."""
    result = []
    for _ in range(count):
        lse = draw(arrays(np.float64, (rows,), elements=st.floats(-300, 300) | st.just(-np.inf)))
        o = draw(arrays(np.float64, (rows, dim), elements=VALUE))
        result.append((np.where(np.isneginf(lse)[:, None], 0.0, o), lse))
    return result


def bits(x) -> np.ndarray:
    return np.asarray(x, np.float64).view(np.uint64)


@settings(max_examples=60)
@given(x=arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(0, 12)), elements=LOGIT), base=BASES)
def test_logsumexp_matches_mpmath(x, base):
    exact = mp_sm.logsumexp(x, base).astype(np.float64)
    lse = sm.logsumexp(x, base=base)
    _, bound = softmax_bounds(x, np.zeros(x.shape + (1,)), np.zeros(x.shape[:-1] + (1,)), lse, base)
    assert_within(lse, exact, bound, f"logsumexp base {base}")


@settings(max_examples=60)
@given(context=contexts(), base=BASES)
def test_softmax_output_matches_mpmath(context, base):
    logits, values = context
    o, lse = sm.state_to_output(*sm.softmax_state(logits, values, base=base), base=base)
    o_exact, lse_exact = (a.astype(np.float64) for a in mp_sm.softmax_output(logits, values, base))
    o_bound, lse_bound = softmax_bounds(logits, values, o, lse, base)
    assert_within(o, o_exact, o_bound, "o")
    assert_within(lse, lse_exact, lse_bound, "lse")


@settings(max_examples=40)
@given(context=contexts(), base=BASES)
def test_softmax_state_matches_mpmath(context, base):
    """m is exact; d and the unnormalised o err like the sums in `softmax_bounds` (times d)."""
    logits, values = context
    m, d, o = sm.softmax_state(logits, values, base=base)
    m_exact, d_exact, o_exact = (a.astype(np.float64) for a in mp_sm.softmax_state(logits, values, base))
    assert np.array_equal(m, m_exact)
    o_normalized, lse = sm.state_to_output(m, d, o, base=base)
    o_bound, lse_bound = softmax_bounds(logits, values, o_normalized, lse, base)
    assert_within(o, o_exact, o_bound * d[..., None], "unnormalised o")
    assert_within(d, d_exact, lse_bound * d, "d")


@settings(max_examples=60)
@given(pair=outputs(count=2), base=BASES)
def test_merge_outputs_matches_mpmath(pair, base):
    (o_a, lse_a), (o_b, lse_b) = pair
    o, lse = sm.merge_outputs(o_a, lse_a, o_b, lse_b, base=base)
    o_exact, lse_exact = (a.astype(np.float64) for a in mp_sm.merge_outputs(o_a, lse_a, o_b, lse_b, base))
    o_bound, lse_bound = merge_bounds(o_a, lse_a, o_b, lse_b, lse, base)
    assert_within(o, o_exact, o_bound, "merged o")
    assert_within(lse, lse_exact, lse_bound, "merged lse")


@settings(max_examples=60)
@given(context=contexts(min_len=1), split=st.floats(0, 1), base=BASES)
def test_splitting_a_context_anywhere_and_merging_equals_the_whole(context, split, base):
    """The merged halves agree with the exact whole within the halves' bounds propagated through
    the merge, for every split point (including the empty prefix and suffix)."""
    logits, values = context
    k = round(split * logits.shape[-1])
    halves = [(logits[:, :k], values[:, :k]), (logits[:, k:], values[:, k:])]
    parts = [sm.state_to_output(*sm.softmax_state(s, v, base=base), base=base) for s, v in halves]
    errors = [softmax_bounds(s, v, o, lse, base) for (s, v), (o, lse) in zip(halves, parts)]
    (o_a, lse_a), (o_b, lse_b) = parts
    o, lse = sm.merge_outputs(o_a, lse_a, o_b, lse_b, base=base)
    o_exact, lse_exact = (a.astype(np.float64) for a in mp_sm.softmax_output(logits, values, base))
    o_bound, lse_bound = merge_bounds(o_a, lse_a, o_b, lse_b, lse, base, errors[0], errors[1])
    assert_within(o, o_exact, o_bound, "merged o")
    assert_within(lse, lse_exact, lse_bound, "merged lse")


@settings(max_examples=60)
@given(pair=outputs(count=2), base=BASES)
def test_merge_is_commutative_bit_for_bit(pair, base):
    """Except the sign of a zero running max m: np.maximum(-0.0, 0.0) returns its first argument."""
    (o_a, lse_a), (o_b, lse_b) = pair
    ab, ba = sm.merge_outputs(o_a, lse_a, o_b, lse_b, base=base), sm.merge_outputs(o_b, lse_b, o_a, lse_a, base=base)
    assert all(np.array_equal(bits(x), bits(y)) for x, y in zip(ab, ba))
    state_a, state_b = sm.output_to_state(o_a, lse_a), sm.output_to_state(o_b, lse_b)
    ab, ba = sm.merge_states(state_a, state_b, base=base), sm.merge_states(state_b, state_a, base=base)
    assert np.array_equal(ab.m, ba.m)
    assert np.array_equal(bits(ab.d), bits(ba.d)) and np.array_equal(bits(ab.o), bits(ba.o))


@settings(max_examples=60)
@given(triple=outputs(count=3), base=BASES)
def test_merge_is_associative(triple, base):
    """(a+b)+c and a+(b+c) each agree with the exact three-way merge within the bound of their
    two merge steps (the first step's bound propagated through the second), so they agree with
    each other within the sum of the two."""
    (o_a, lse_a), (o_b, lse_b), (o_c, lse_c) = triple
    exact_bc = mp_sm.merge_outputs(o_b, lse_b, o_c, lse_c, base)
    o_exact, lse_exact = (a.astype(np.float64) for a in mp_sm.merge_outputs(o_a, lse_a, *exact_bc, base))

    ab = sm.merge_outputs(o_a, lse_a, o_b, lse_b, base=base)
    o_left, lse_left = sm.merge_outputs(*ab, o_c, lse_c, base=base)
    ab_err = merge_bounds(o_a, lse_a, o_b, lse_b, ab[1], base)
    bound_left = merge_bounds(*ab, o_c, lse_c, lse_left, base, err_a=ab_err)
    bc = sm.merge_outputs(o_b, lse_b, o_c, lse_c, base=base)
    o_right, lse_right = sm.merge_outputs(o_a, lse_a, *bc, base=base)
    bc_err = merge_bounds(o_b, lse_b, o_c, lse_c, bc[1], base)
    bound_right = merge_bounds(o_a, lse_a, *bc, lse_right, base, err_b=bc_err)
    assert_within(o_left, o_exact, bound_left[0], "(a+b)+c o")
    assert_within(o_right, o_exact, bound_right[0], "a+(b+c) o")
    assert_within(lse_left, lse_exact, bound_left[1], "(a+b)+c lse")
    assert_within(lse_right, lse_exact, bound_right[1], "a+(b+c) lse")
    assert_within(lse_left, lse_right, bound_left[1] + bound_right[1], "lse grouping")
    assert_within(o_left, o_right, bound_left[0] + bound_right[0], "o grouping")


@settings(max_examples=40)
@given(many=outputs(count=4, rows=3), base=BASES)
def test_merge_many_outputs_is_a_softmax_over_the_lses(many, base):
    """Merging N outputs is the softmax of their LSEs weighting their outputs, so it has the
    softmax's mpmath twin and bounds."""
    o = np.stack([o for o, _ in many], axis=1)      # [rows, N, D]
    lse = np.stack([lse for _, lse in many], axis=1)  # [rows, N]
    merged_o, merged_lse = sm.merge_many_outputs(o, lse, axis=1, base=base)
    o_exact, lse_exact = (a.astype(np.float64) for a in mp_sm.softmax_output(lse, o, base))
    o_bound, lse_bound = softmax_bounds(lse, o, merged_o, merged_lse, base)
    assert_within(merged_o, o_exact, o_bound, "merge_many o")
    assert_within(merged_lse, lse_exact, lse_bound, "merge_many lse")
    state = sm.merge_many_states(*sm.output_to_state(np.moveaxis(o, 1, 0), lse.T), axis=0, base=base)
    o_state, lse_state = sm.state_to_output(*state, base=base)
    assert_within(o_state, o_exact, o_bound, "merge_many_states o")
    assert_within(lse_state, lse_exact, lse_bound, "merge_many_states lse")


@settings(max_examples=60)
@given(
    x=arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 10)), elements=st.floats(-60, 60, width=16)),
    shift=st.integers(-1000, 1000),
    base=BASES,
)
def test_softmax_is_invariant_under_a_logit_shift(x, shift, base):
    """f16 logits plus an integer shift are exact in float64, so s - max(s) is unchanged and the
    output is identical bit for bit; the LSE moves by the shift up to its two final roundings."""
    values = np.arange(x.size * 2, dtype=np.float64).reshape(x.shape + (2,)) - x.size
    o, lse = sm.state_to_output(*sm.softmax_state(x, values, base=base), base=base)
    o_shift, lse_shift = sm.state_to_output(*sm.softmax_state(x + shift, values, base=base), base=base)
    assert np.array_equal(bits(o), bits(o_shift))
    assert_within(lse_shift, lse + shift, 2 * U64 * (np.abs(lse) + np.abs(lse_shift) + abs(shift)), "shifted lse")


@settings(max_examples=60)
@given(one=outputs(count=1, rows=3), negative_zeros=arrays(np.bool_, (3, 2)), base=BASES)
def test_merging_with_the_empty_state_is_the_identity_bit_for_bit(one, negative_zeros, base):
    """Also for outputs holding -0.0, which a recomputed 1*o + 0*0 would turn into +0.0."""
    (o, lse), = one
    o = np.where(negative_zeros & np.isfinite(lse)[:, None], -0.0, o)
    empty_o, empty_lse = np.zeros_like(o), np.full_like(lse, -np.inf)
    for merged in (sm.merge_outputs(o, lse, empty_o, empty_lse, base=base),
                   sm.merge_outputs(empty_o, empty_lse, o, lse, base=base)):
        assert np.array_equal(bits(merged[0]), bits(o)) and np.array_equal(bits(merged[1]), bits(lse))
    state = sm.SoftmaxState(lse, np.where(np.isneginf(lse), 0.0, 2.5), o)
    empty = sm.SoftmaxState(empty_lse, np.zeros_like(lse), empty_o)
    for merged in (sm.merge_states(state, empty, base=base), sm.merge_states(empty, state, base=base)):
        assert all(np.array_equal(bits(x), bits(y)) for x, y in zip(merged, state))


@settings(max_examples=40)
@given(many=outputs(count=3, rows=2), base=BASES)
def test_empty_states_are_ignored_whatever_their_output_holds(many, base):
    """An empty state's o is never read: a kernel may leave it unwritten (NaN poison)."""
    o = np.stack([o for o, _ in many])      # [N, rows, D]
    lse = np.stack([lse for _, lse in many])  # [N, rows]
    poisoned = np.where(np.isneginf(lse)[..., None], np.nan, o)
    assert all(np.array_equal(x, y) for x, y in zip(sm.merge_many_outputs(poisoned, lse, base=base),
                                                     sm.merge_many_outputs(o, lse, base=base)))
    m, d, _ = sm.output_to_state(o, lse)
    assert all(np.array_equal(x, y) for x, y in zip(sm.merge_many_states(m, d, poisoned, base=base),
                                                     sm.merge_many_states(m, d, o, base=base)))
    assert all(np.array_equal(x, y) for x, y in zip(sm.merge_outputs(poisoned[0], lse[0], poisoned[1], lse[1], base=base),
                                                     sm.merge_outputs(o[0], lse[0], o[1], lse[1], base=base)))
    assert all(np.array_equal(x, y) for x, y in zip(sm.merge_states((m[0], d[0], poisoned[0]), (m[1], d[1], poisoned[1]), base=base),
                                                     sm.merge_states((m[0], d[0], o[0]), (m[1], d[1], o[1]), base=base)))
    o_state, _ = sm.state_to_output(*sm.output_to_state(poisoned, lse))
    assert np.array_equal(o_state, np.where(np.isneginf(lse)[..., None], 0.0, o))


@pytest.mark.parametrize("base", [2, "e"])
def test_empty_contexts_give_the_empty_state_without_nan_or_warnings(base):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for logits in (np.zeros((2, 0)), np.full((2, 3), -np.inf)):
            values = np.ones(logits.shape + (4,))
            m, d, o = sm.softmax_state(logits, values, base=base)
            assert np.all(np.isneginf(m)) and np.all(d == 0) and np.all(o == 0)
            o_norm, lse = sm.state_to_output(m, d, o, base=base)
            assert np.all(o_norm == 0) and np.all(np.isneginf(lse))
            assert np.all(np.isneginf(sm.logsumexp(logits, base=base)))
        empty_o, empty_lse = np.zeros((2, 4)), np.full(2, -np.inf)
        o, lse = sm.merge_outputs(empty_o, empty_lse, empty_o, empty_lse, base=base)
        assert np.all(o == 0) and np.all(np.isneginf(lse))
        m, d, o = sm.merge_states((empty_lse, np.zeros(2), empty_o), (empty_lse, np.zeros(2), empty_o), base=base)
        assert np.all(np.isneginf(m)) and np.all(d == 0) and np.all(o == 0)
        o, lse = sm.merge_many_outputs(np.zeros((3, 2, 4)), np.full((3, 2), -np.inf), base=base)
        assert np.all(o == 0) and np.all(np.isneginf(lse))
        m, d, o = sm.merge_many_states(np.full((3, 2), -np.inf), np.zeros((3, 2)), np.zeros((3, 2, 4)), base=base)
        assert np.all(np.isneginf(m)) and np.all(d == 0) and np.all(o == 0)


@settings(max_examples=40)
@given(one=outputs(count=1, rows=3))
def test_output_to_state_and_back_is_the_identity(one):
    (o, lse), = one
    for base in (2, "e"):
        o_back, lse_back = sm.state_to_output(*sm.output_to_state(o, lse), base=base)
        assert np.array_equal(o_back, o) and np.array_equal(lse_back, lse)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: sm.logsumexp([1.0, 2.0], base=10), "base must be 2 or 'e'"),
        (lambda: sm.logsumexp([1.0, np.inf]), r"\+inf"),
        (lambda: sm.softmax_state([np.nan], [[1.0]]), "NaN"),
        (lambda: sm.softmax_state([1.0, 2.0], [[1.0]]), "values must have shape"),
        (lambda: sm.merge_outputs([[1.0]], [np.inf], [[1.0]], [0.0]), r"lse_a contains \+inf"),
        (lambda: sm.merge_many_outputs(np.zeros((3, 2)), np.zeros(2)), "o must have shape"),
        (lambda: sm.merge_many_outputs(np.zeros((3, 2, 1)), np.zeros((3, 2)), axis=2), "axis 2 is out of range"),
        (lambda: sm.merge_many_states(np.zeros(3), np.zeros(2), np.zeros((3, 1))), "need d.shape"),
    ],
)
def test_bad_inputs_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_values_shared_by_a_head_s_rows_give_the_same_state():
    """Values [..., 1, n, D] shared by every row of a head are summed as one matrix product; the
    state equals the one formed row by row from the same values laid out per row."""
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(2, 5, 7)) * 4
    logits[0, 1] = -np.inf  # an empty row
    values = rng.normal(size=(2, 1, 7, 3))
    m, d, o = sm.softmax_state(logits, values)
    m_rows, d_rows, o_rows = sm.softmax_state(logits, np.repeat(values, 5, axis=1))
    np.testing.assert_array_equal(m, m_rows)
    np.testing.assert_array_equal(d, d_rows)
    np.testing.assert_allclose(o, o_rows, rtol=1e-14, atol=1e-300)
    assert not o[0, 1].any()
