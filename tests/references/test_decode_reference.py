"""references.decode: agreement with the literal mpmath twin, and the properties of paged decode."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from paged_cases import PagedCase, decode_cases, lay_out
from reference_bounds import U64, assert_within, frequency_ulps, rope_bound, softmax_bounds

from verify.references.decode import LOG2E, decode_attention
from verify.references.mp.decode import decode_attention as mp_decode_attention
from verify.references.paged_kv import gather_kv
from verify.references.rope import rope_frequencies, rotate_neox
from verify.references.softmax import logsumexp


def decode(case: PagedCase, **changes):
    return decode_attention(*case.arguments(), **dict(case.keywords(), **changes))


def rope_errors(case: PagedCase, k_stored: np.ndarray):
    """Bounds on the float64 rotation of q and k (`rope_bound`), zero when there is none.

    When the rotated values are rounded (rotary_dtype), the float64 and exact rotations round to
    the same value unless a rounding boundary lies within the bound; such cases are rejected, and
    the rounded q and k are then exact.
    """
    opts = case.options
    q = case.q.astype(np.float64)
    if opts.get("rotary_mode", 0) == 0:
        return np.zeros_like(q), np.zeros_like(k_stored)
    q_pos = opts["q_rope_position"][:, None]
    k_pos = opts["k_rope_pos_offset"][:, None, None] + np.arange(k_stored.shape[2])
    freq = rope_frequencies(q.shape[-1], opts["rope_theta"], opts["llama3"])
    kappa = frequency_ulps(opts["rope_theta"], opts["llama3"])
    errors = []
    for x, pos in ((q, q_pos), (k_stored, k_pos)):
        err = rope_bound(x, pos, opts["rope_scale"], freq, "neox", kappa)
        if opts["rotary_dtype"] is not None:
            rotated = rotate_neox(x, pos, opts["rope_theta"], opts["rope_scale"], opts["llama3"])
            dtype = opts["rotary_dtype"]
            assume(np.array_equal((rotated - err).astype(dtype), (rotated + err).astype(dtype)))
            err = np.zeros_like(err)
        errors.append(err)
    return errors


def decode_bounds(case: PagedCase, result):
    """Bounds on the float64 decode's o and lse2.

    A logit s = sm_scale q.k errs (natural-log units) by at most
      E = sm_scale (sum_d e_q|k| + |q|e_k + e_q e_k  +  (gamma_D + 3u) sum_d |q k|)
    from the rotations' errors e_q, e_k (`rope_errors`), the dot product (Higham §3.1) and the
    scaling by sm_scale*log2(e). Perturbing every logit by up to E moves each softmax weight by a
    factor within e^(+-2E), so o moves by <= 2.01 E A_d (A_d = sum_j p_j|v_jd|) and lse2 by E log2(e);
    the softmax of the computed logits then adds `softmax_bounds`.
    """
    k_stored, _, _ = gather_kv(case.pages, case.page_indptr, case.page_values, case.length_info,
                               sliding_window=case.sliding_window)
    e_q, e_k = rope_errors(case, k_stored)
    group = result.q.shape[1] // result.k.shape[1]
    q, e_q = result.q[:, :, None, :], e_q[:, :, None, :]
    k, e_k = np.repeat(result.k, group, axis=1), np.repeat(e_k, group, axis=1)
    dim = q.shape[-1]
    dot = (U64 * dim / (1 - U64 * dim) + 3 * U64) * np.sum(np.abs(q * k), axis=-1)
    dot = dot + np.sum(e_q * np.abs(k) + np.abs(q) * e_k + e_q * e_k, axis=-1)
    valid = np.isfinite(result.logits2)
    logit_err = case.options["sm_scale"] * np.max(np.where(valid, dot, 0.0), axis=-1, initial=0.0)
    v = np.repeat(result.v, group, axis=1)
    o_bound, lse_bound = softmax_bounds(result.logits2, v, result.o, result.lse2, 2)
    top = np.max(result.logits2, axis=-1, initial=-np.inf, keepdims=True)
    p = np.exp2(result.logits2 - np.where(np.isfinite(top), top, 0.0))
    p /= np.where(p.sum(-1, keepdims=True) == 0, 1.0, p.sum(-1, keepdims=True))
    spread = np.matmul(p[..., None, :], np.abs(v))[..., 0, :]
    return o_bound + 2.01 * logit_err[..., None] * spread, lse_bound + LOG2E * logit_err


@settings(max_examples=30, deadline=None)  # mpmath loops take longer than the default deadline
@given(case=decode_cases(rotary_dtype=st.sampled_from([None, np.float16])))
def test_decode_matches_the_literal_mpmath_kernel(case):
    """Also checks the vectorised gather: the twin walks TVM's row -> slot -> page loop itself."""
    result = decode(case)
    o_exact, lse_exact = (a.astype(np.float64) for a in mp_decode_attention(*case.arguments(), **case.keywords()))
    o_bound, lse_bound = decode_bounds(case, result)
    assert_within(result.o, o_exact, o_bound, "o")
    assert_within(result.lse2, lse_exact, lse_bound, "lse2")


@settings(max_examples=40)
@given(case=decode_cases(max_len=30))
def test_result_fields_describe_the_attended_context(case):
    """logits2 is -inf exactly past each length and lse2 is its base-2 log-sum-exp; q is what the
    logits were formed with; k and v are zero past each length."""
    result = decode(case)
    past = np.arange(result.logits2.shape[-1]) >= result.length[:, None]
    assert np.array_equal(np.isneginf(result.logits2), np.broadcast_to(past[:, None, :], result.logits2.shape))
    assert np.array_equal(result.lse2, logsumexp(result.logits2, base=2))
    group = result.q.shape[1] // result.k.shape[1]
    k = np.repeat(result.k, group, axis=1)
    scale = case.options["sm_scale"] * LOG2E
    dots = np.einsum("bhd,bhld->bhl", result.q, k) * scale
    dim = result.q.shape[-1]
    dot_bound = 2 * (U64 * dim / (1 - U64 * dim) + 3 * U64) * abs(scale) * np.einsum("bhd,bhld->bhl", np.abs(result.q), np.abs(k))
    assert_within(result.logits2, np.where(past[:, None, :], -np.inf, dots), dot_bound, "logits2")
    assert np.all(result.k.transpose(0, 2, 1, 3)[past] == 0) and np.all(result.v.transpose(0, 2, 1, 3)[past] == 0)


@settings(max_examples=40)
@given(case=decode_cases(max_len=30), seed=st.integers(0, 2**32 - 1))
def test_permuting_physical_pages_changes_nothing(case, seed):
    permutation = np.random.default_rng(seed).permutation(case.pages.shape[0])  # old page -> new page
    pages = np.empty_like(case.pages)
    pages[permutation] = case.pages
    moved = decode_attention(case.q, pages, case.page_indptr, permutation[case.page_values], case.length_info,
                             **case.keywords())
    original = decode(case)
    for name in ("o", "lse2", "q", "k", "v", "length", "logits2"):
        assert np.array_equal(getattr(original, name), getattr(moved, name)), name


@settings(max_examples=40)
@given(case=decode_cases(max_len=30))
def test_gqa_equals_repeating_each_kv_head_for_its_query_group(case):
    """Query head h reads kv head h // G: the same as MHA over kv heads repeated G times. The two
    differ only in how BLAS groups the dot products, so they agree to within the dot product bound."""
    kv_heads = case.pages.shape[2]
    group = case.q.shape[1] // kv_heads
    grouped = decode(case)
    repeated_pages = np.repeat(case.pages, group, axis=2)
    repeated = decode_attention(case.q, repeated_pages, *case.arguments()[2:], **case.keywords())
    assert np.array_equal(repeated.k, np.repeat(grouped.k, group, axis=1))
    o_bound, lse_bound = decode_bounds(case, grouped)
    assert_within(repeated.o, grouped.o, 2 * o_bound, "o")
    assert_within(repeated.lse2, grouped.lse2, 2 * lse_bound, "lse2")


@settings(max_examples=40)
@given(history=st.integers(1, 40), window=st.integers(0, 40), sink=st.integers(0, 4), extra_offset=st.integers(0, 20),
       page_size=st.sampled_from([1, 4, 16]), rotary=st.booleans(), seed=st.integers(0, 2**32 - 1))
def test_sliding_window_equals_attention_over_the_sinks_and_the_last_window(
        history, window, sink, extra_offset, page_size, rotary, seed):
    """Decode over a sliding-window cache equals plain attention, written here in numpy, over the
    history's first `sink` rows followed by its last `window` rows; with rotary, key row r of that
    explicit context sits at position k_rope_pos_offset + r (cache-relative, as in TVM's runtime)."""
    sink = min(sink, history)
    window = min(window, history - sink)
    rng = np.random.default_rng(seed)
    full_k, full_v = (rng.standard_normal((2, history, 8)).astype(np.float16) for _ in range(2))
    explicit_k = np.concatenate([full_k[:, :sink], full_k[:, history - window:]], axis=1).astype(np.float64)
    explicit_v = np.concatenate([full_v[:, :sink], full_v[:, history - window:]], axis=1).astype(np.float64)
    pages, indptr, values, info = lay_out([(full_k[:, np.r_[0:sink, history - window:history]],
                                            full_v[:, np.r_[0:sink, history - window:history]])],
                                          [sink], [sink + extra_offset], page_size, 2, rng, sliding_window=True)
    q = rng.standard_normal((1, 4, 8)).astype(np.float16)
    options = dict(sm_scale=8**-0.5)
    q_explicit = q.astype(np.float64)
    if rotary:
        options.update(rotary_mode=1, k_rope_pos_offset=np.array([7]), q_rope_position=np.array([history + 3]))
        q_explicit = rotate_neox(q_explicit, np.array([[history + 3]]))
        explicit_k = rotate_neox(explicit_k, 7 + np.arange(sink + window))
    result = decode_attention(q, pages, indptr, values, info, sliding_window=True, **options)
    assert np.array_equal(result.k[0], explicit_k) and np.array_equal(result.v[0], explicit_v)
    scores = np.einsum("hd,hld->hl", q_explicit[0], np.repeat(explicit_k, 2, axis=0)) * 8**-0.5
    if sink + window == 0:
        assert np.all(result.o == 0) and np.all(np.isneginf(result.lse2))
        return
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    o = np.einsum("hl,hld->hd", weights / weights.sum(-1, keepdims=True), np.repeat(explicit_v, 2, axis=0))
    lse2 = (np.log(weights.sum(-1)) + scores.max(-1)) * LOG2E
    case = PagedCase(q, pages, indptr, values, info, True, [], dict(options, rotary_mode=0))
    o_bound, lse_bound = decode_bounds(case, result)  # rotation errors cancel: both sides rotate alike
    assert_within(result.o[0], o, 2 * o_bound[0], "o")
    assert_within(result.lse2[0], lse2, 2 * lse_bound[0], "lse2")


def test_empty_contexts_give_zero_output_and_neg_inf_lse():
    """A sequence without pages, and a sliding-window sequence whose pages hold no attended row
    (sink 0, window 0, offset 5), both give o = 0 exactly and lse2 = -inf, without warnings."""
    rng = np.random.default_rng(0)
    full = [tuple(rng.standard_normal((1, n, 4)).astype(np.float16) for _ in range(2)) for n in (3, 0, 0)]
    pages, indptr, values, info = lay_out(full, [0, 0, 0], [0, 0, 5], 4, 1, rng, sliding_window=True)
    q = rng.standard_normal((3, 2, 4)).astype(np.float16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = decode_attention(q, pages, indptr, values, info, sm_scale=0.5, sliding_window=True)
    assert result.length.tolist() == [3, 0, 0]
    assert np.all(result.o[1:] == 0) and np.all(np.isneginf(result.lse2[1:]))
    assert np.all(np.isfinite(result.o[0])) and np.all(np.isfinite(result.lse2[0]))
    empty = decode_attention(q, pages[:0], [0, 0, 0, 0], [], [0, 0, 0], sm_scale=0.5)
    assert np.all(empty.o == 0) and np.all(np.isneginf(empty.lse2)) and empty.k.shape == (3, 1, 0, 4)


@settings(max_examples=30)
@given(case=decode_cases(rotary_mode=True, rotary_dtype=st.sampled_from([np.float16, np.float32])))
def test_rotary_dtype_rounds_the_rotated_q_and_k(case):
    result = decode(case)
    dtype = case.options["rotary_dtype"]
    assert np.array_equal(result.q.astype(dtype).astype(np.float64), result.q)
    assert np.array_equal(result.k.astype(dtype).astype(np.float64), result.k)
    exact = decode(case, rotary_dtype=None)
    assert np.array_equal(exact.q.astype(dtype).astype(np.float64), result.q)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(rotary_mode=2), "rotary_mode must be 0 or 1"),
        (dict(rotary_mode=1, q_rope_position=None), "q_rope_position is required"),
        (dict(rotary_mode=1, k_rope_pos_offset=np.array([0.5])), r"k_rope_pos_offset must be an integer array of shape \(B,\)"),
        (dict(rotary_mode=1, rotary_dtype=np.int8), "rotary_dtype must be None, float16 or float32"),
        (dict(q=np.zeros((1, 3, 4))), "Hq=3 must be a multiple of Hkv=2"),
        (dict(q=np.zeros((1, 2, 8))), r"pages must be \[max_num_pages, 2, Hkv, page_size, D=8\]"),
        (dict(q=np.zeros((2, 2, 4))), r"page_indptr must have B\+1=3 entries"),
        (dict(sm_scale=np.inf), "sm_scale must be finite"),
        (dict(page_values=[3]), r"page_values\[0\]=3 is not a page index in \[0, 2\)"),
    ],
)
def test_bad_arguments_raise_value_error(changes, message):
    arguments = dict(q=np.zeros((1, 2, 4)), pages=np.zeros((2, 2, 2, 4, 4)), page_indptr=[0, 1], page_values=[1],
                     length_info=[2], sm_scale=0.5, k_rope_pos_offset=np.array([0]), q_rope_position=np.array([3]))
    with pytest.raises(ValueError, match=message):
        decode_attention(**dict(arguments, **changes))
