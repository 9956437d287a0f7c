"""references.paged_kv: the vectorised gather against explicit per-sequence K/V, and validation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from paged_cases import decode_cases, lay_out

from verify.references.paged_kv import attended_length, gather_kv, row_to_slot, validate_page_table


def gather(case):
    return gather_kv(case.pages, case.page_indptr, case.page_values, case.length_info,
                     sliding_window=case.sliding_window)


@settings(max_examples=80)
@given(case=decode_cases(max_len=40))
def test_gather_returns_each_sequence_rows_in_logical_order(case):
    """The gathered rows are the explicit context bit for bit, zero past each length, so the NaN
    poison in unused slots and spare pages never leaks."""
    k, v, length = gather(case)
    assert length.tolist() == [ctx_k.shape[1] for ctx_k, _ in case.contexts]
    for b, (ctx_k, ctx_v) in enumerate(case.contexts):
        assert np.array_equal(k[b, :, : length[b]], ctx_k.astype(np.float64))
        assert np.array_equal(v[b, :, : length[b]], ctx_v.astype(np.float64))
    past = np.arange(k.shape[2]) >= length[:, None]
    assert np.all(k.transpose(0, 2, 1, 3)[past] == 0) and np.all(v.transpose(0, 2, 1, 3)[past] == 0)


@settings(max_examples=60)
@given(case=decode_cases(max_len=40), seed=st.integers(0, 2**32 - 1))
def test_permuting_physical_pages_changes_nothing(case, seed):
    permutation = np.random.default_rng(seed).permutation(case.pages.shape[0])  # old page -> new page
    pages = np.empty_like(case.pages)
    pages[permutation] = case.pages
    moved = gather_kv(pages, case.page_indptr, permutation[case.page_values], case.length_info,
                      sliding_window=case.sliding_window)
    for original, permuted in zip(gather(case), moved):
        assert np.array_equal(original, permuted)


@settings(max_examples=60)
@given(history=st.integers(0, 40), window=st.integers(0, 40), sink=st.integers(0, 5), page_size=st.sampled_from([1, 4, 16]),
       extra_offset=st.integers(0, 20), seed=st.integers(0, 2**32 - 1))
def test_sliding_window_keeps_the_sinks_and_the_last_window_rows(history, window, sink, page_size, extra_offset, seed):
    """A history of N rows with sink S and window W attends to rows [0, S) and [N - W', N) of the
    history (W' = min(W, N - S)), in that order, wherever the window starts in its pages."""
    sink = min(sink, history)
    window = min(window, history - sink)
    rng = np.random.default_rng(seed)
    full_k, full_v = (rng.standard_normal((2, history, 4)).astype(np.float16) for _ in range(2))
    keep = np.r_[0:sink, history - window:history]
    pages, indptr, values, info = lay_out([(full_k[:, keep], full_v[:, keep])], [sink], [sink + extra_offset],
                                          page_size, 2, rng, sliding_window=True)
    k, v, length = gather_kv(pages, indptr, values, info, sliding_window=True)
    assert length.tolist() == [sink + window]
    assert np.array_equal(k[0], np.concatenate([full_k[:, :sink], full_k[:, history - window:]], axis=1))
    assert np.array_equal(v[0], np.concatenate([full_v[:, :sink], full_v[:, history - window:]], axis=1))


def test_attended_length_and_slots_follow_tvm():
    """_get_kv_chunk_len and _get_seq_offset on a hand-computed table (page_size 4)."""
    indptr = np.array([0, 3, 3, 5])
    assert attended_length(indptr, np.array([2, 0, 4]), 4).tolist() == [10, 0, 8]
    info = np.array([[2, 0, 4], [6, 0, 3], [2, 0, 1]])  # last_page_len, sliding_window_offset, sink_size
    assert attended_length(indptr, info, 4, sliding_window=True).tolist() == [10 - 6 + 2, 0, 8 - 3 + 1]
    rows = np.tile(np.arange(6), (3, 1))
    assert row_to_slot(rows, info, sliding_window=True).tolist() == [
        [0, 1, 6, 7, 8, 9], [0, 1, 2, 3, 4, 5], [0, 3, 4, 5, 6, 7]]
    assert np.array_equal(row_to_slot(rows, info[0]), rows)


GOOD = dict(page_indptr=[0, 2, 3], page_values=[4, 0, 2], length_info=[3, 1], num_pages=5, page_size=4)
SLIDING = dict(GOOD, length_info=[[3, 1], [2, 0], [1, 0]], sliding_window=True)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(page_indptr=[1, 2, 3]), r"page_indptr must start at 0; page_indptr\[0\]=1"),
        (dict(page_indptr=[0, 3, 2], page_values=[4, 0]), r"non-decreasing; page_indptr\[1\]=3 > page_indptr\[2\]=2"),
        (dict(page_indptr=[0, 2, 2]), r"page_indptr\[-1\]=2 must equal len\(page_values\)=3"),
        (dict(page_values=[4, 5, 2]), r"page_values\[1\]=5 is not a page index in \[0, 5\)"),
        (dict(page_values=[4, -1, 2]), r"page_values\[1\]=-1 is not a page index"),
        (dict(page_values=[4.0, 0.0, 2.0]), "page_values must be an integer array"),
        (dict(length_info=[3, 0]), r"last_page_len\[1\]=0 is outside 1..4 for sequence 1 with 1 pages"),
        (dict(length_info=[5, 1]), r"last_page_len\[0\]=5 is outside 1..4"),
        (dict(length_info=[3, 1, 1]), r"length_info must have shape \(B,\) = \(2,\)"),
        (dict(page_size=0), "page_size must be a positive integer"),
        (dict(page_indptr=[]), "page_indptr must have B\\+1 >= 1 entries"),
        (dict(SLIDING, length_info=[3, 1]), r"length_info must have shape \(3, B\)"),
        (dict(SLIDING, length_info=[[3, 1], [2, 0], [-1, 0]]), r"sink_size\[0\]=-1 must be >= 0"),
        (dict(SLIDING, length_info=[[3, 1], [1, 0], [2, 0]]), r"sliding_window_offset\[0\]=1 < sink_size\[0\]=2"),
        (dict(SLIDING, length_info=[[3, 1], [8, 0], [1, 0]]), r"sequence 0: the window has negative length -1"),
    ],
)
def test_inconsistent_page_tables_raise_value_error(changes, message):
    with pytest.raises(ValueError, match=message):
        validate_page_table(**dict(GOOD, **changes))


def test_consistent_tables_validate_and_empty_sequences_ignore_their_length_info():
    validate_page_table(**GOOD)
    validate_page_table(**SLIDING)
    validate_page_table(**dict(GOOD, page_indptr=[0, 3, 3], length_info=[3, -7]))


def test_gather_checks_the_pages_layout():
    pages = np.zeros((5, 2, 1, 4, 8), np.float16)
    with pytest.raises(ValueError, match=r"pages must be \[max_num_pages, 2, H_kv, page_size, D\]"):
        gather_kv(pages[:, :1], [0, 1], [0], [1])
    with pytest.raises(ValueError, match=r"page_size=16 differs from pages.shape\[3\]=4"):
        gather_kv(pages, [0, 1], [0], [1], page_size=16)
