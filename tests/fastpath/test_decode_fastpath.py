"""verify.kernels.attention.fastpath gives the plain path's numbers: references.decode.decode_attention and
verify.budgets.attention.decode_budget, on cases drawn as the gate draws them.

- the rotated, rounded keys and queries, the logits, the softmax's d and the LSE are bit for bit
  the plain ones; o is within the float64 rounding of its sum (bound derived below);
- every budget element is >= the plain one and larger by no more than float64 rounding (or, for
  an output within rounding of a binade edge of its format, by the larger binade's rounding term);
- inputs the fast path does not take are decided by the plain path, errors included;
- the kernels compute a case's evaluation once however many checks ask.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.references.paged_kv import gather_kv
from verify.budgets.roundoff import faithful_rounding_bound, float64_reference_bound, gamma
from verify.kernels.attention import fastpath as fast
from verify.kernels.attention.cases import decode_cases, explicit_decode_case, split_context
from verify.kernels.attention.common import STORAGE
from verify.kernels.attention.decode_tiled import DecodeTiled
from verify.kernels.attention.rope_variant import LLAMA_3_1, LLAMA_3_2, RopeVariant

KERNEL = DecodeTiled()


def _config(**keys) -> dict:
    return dict(dict(page_size=16, sliding_window=0), **keys)


#: decode.tiled's (and decode.sharded's) gate configs, TVM's gate shapes, and f32 with rotation
#: and a sliding window, which the gate configs leave out.
CONFIGS = {
    "llama3.2-3b": _config(head_dim=128, qo_heads=24, kv_heads=8, dtype="f16", **LLAMA_3_2),
    "mqa-f32": _config(head_dim=64, qo_heads=8, kv_heads=1, dtype="f32"),
    "d256-window": _config(head_dim=256, qo_heads=4, kv_heads=4, dtype="f16", sliding_window=1),
    "d96": _config(head_dim=96, qo_heads=6, kv_heads=2, dtype="f16"),
    "llama3.1-8b": _config(head_dim=128, qo_heads=32, kv_heads=8, dtype="f16", **LLAMA_3_1),
    "llama3.2-1b-window": _config(head_dim=64, qo_heads=32, kv_heads=8, dtype="f16", sliding_window=1, **LLAMA_3_2),
    "mha-f32-window": _config(head_dim=128, qo_heads=8, kv_heads=8, dtype="f32", sliding_window=1),
}


def draw_case(data, config):
    return data.draw(decode_cases(config, "ci", llama3=RopeVariant.from_config(config).llama3), label="case")


def o_rounding_bound(result) -> np.ndarray:
    """Bound on |o_fast - o_plain|: both sum p_j v_jd (the same float64 weights, bit for bit) over
    at most Lmax terms in some order and divide by the same d, so each is within
    gamma_{Lmax+1}(u) sum_j p_j |v_jd| / d (+ underflows) of the exact quotient
    (float64_reference_bound with magnitude A_d = sum_j p_j |v_jd| / d), and they differ by twice that."""
    batch, qo_heads, longest = result.logits2.shape
    kv_heads = result.v.shape[1]
    top = np.max(result.logits2, axis=-1, initial=-np.inf, keepdims=True)
    weights = np.exp2(result.logits2 - np.where(np.isfinite(top), top, 0.0))
    total = weights.sum(-1, keepdims=True)
    p = (weights / np.where(total == 0, 1.0, total)).reshape(batch, kv_heads, qo_heads // kv_heads, longest)
    a_d = (p @ np.abs(result.v)).reshape(result.o.shape)
    return 2 * float64_reference_bound(a_d, ulps=4.0, terms=longest + 2)


def rounding_jump(o, spread, dtype) -> np.ndarray:
    """How much the store's rounding term faithful_rounding_bound(o) can change within |o| +- spread
    (non-zero only for outputs within float64 rounding of a binade edge of their format)."""
    magnitude = np.abs(o)
    low = faithful_rounding_bound(np.maximum(magnitude - spread, 0.0), dtype)
    high = faithful_rounding_bound(magnitude + spread, dtype)
    return np.abs(high - low)


def check_against_plain(x: fast.DecodeInputs, result: fast.DecodeEvaluation | None = None) -> fast.DecodeEvaluation:
    """The fast evaluation of x (`result`, or computed here) against the plain pair: the contract."""
    try:
        plain = x.reference()
    except ValueError as exc:  # the plain path rejects the case: so does the fast one, with its words
        with pytest.raises(ValueError) as raised:
            fast.evaluate(x)
        assert str(raised.value) == str(exc)
        return None
    assert fast._takes(x)
    result = fast._evaluate_fast(x) if result is None else result
    assert result is not None, "the fast path handed a case the plain path takes back to it"

    np.testing.assert_array_equal(result.logits2, plain.logits2, strict=True)
    np.testing.assert_array_equal(result.lse2, plain.lse2, strict=True)
    np.testing.assert_array_equal(result.length, plain.length)
    bound = o_rounding_bound(plain)
    assert (np.abs(result.o - plain.o) <= bound).all(), np.max(np.abs(result.o - plain.o) - bound)

    o_budget, lse_budget = x.budget(plain)
    assert (result.o_budget >= o_budget).all(), "a fast output budget is below the plain one"
    assert (result.lse_budget >= lse_budget).all(), "a fast LSE budget is below the plain one"
    slack = 1e-9
    jump = rounding_jump(plain.o, 2 * bound, x.qkv_dtype)
    assert (result.o_budget <= o_budget * (1 + slack) + jump).all(), "a fast output budget is looser than rounding"
    assert (result.lse_budget <= lse_budget * (1 + slack)).all(), "a fast LSE budget is looser than rounding"
    empty = plain.length == 0
    assert (result.o[empty] == 0).all() and np.isneginf(result.lse2[empty]).all()
    assert (result.o_budget[empty] == 0).all() and (result.lse_budget[empty] == 0).all()
    return result


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=40)
@given(data=st.data())
def test_fast_decode_has_the_plain_reference_and_budget_on_drawn_cases(name, data):
    config = CONFIGS[name]
    check_against_plain(KERNEL.decode_inputs(config, draw_case(data, config)))


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=15)
@given(data=st.data())
def test_split_parts_hold_the_wholes_rows_before_and_after_the_cut(name, data):
    """split_context copies each part's rows straight from the case's pages: read back in logical
    order (gather_kv, the references' reading), the first part is the whole's rows [0, cut) and the
    second its rows [cut, L), bit for bit, each at the whole's positions."""
    config = CONFIGS[name]
    case = draw_case(data, config)
    first, second, cut = split_context(case, config)
    sliding = bool(config["sliding_window"])

    def rows(part):
        return gather_kv(part["pages"], part["page_indptr"], part["page_values"], part["length_info"],
                         config["page_size"], sliding, stored=True)

    k, v, length = rows(case)
    bits = np.dtype(f"u{k.dtype.itemsize}")
    for part, start, stop in ((first, np.zeros_like(cut), cut), (second, cut, length)):
        k_part, v_part, part_length = rows(part)
        assert part_length.tolist() == (stop - start).tolist()
        assert part["k_rope_pos_offset"].tolist() == (case["k_rope_pos_offset"] + start).tolist()
        for b in range(length.size):
            for ours, whole in ((k_part, k), (v_part, v)):
                assert np.array_equal(ours[b, :, :part_length[b]].view(bits), whole[b, :, start[b]:stop[b]].view(bits))


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=15)
@given(data=st.data())
def test_split_parts_evaluated_with_the_whole_keep_the_contract(name, data):
    """split_merge's parts, evaluated from the whole's per-row work (remember_split), have the plain
    pair's numbers as evaluate() has them, and the logits, LSE and o of evaluating each alone."""
    config = CONFIGS[name]
    case = draw_case(data, config)
    first, second, cut = split_context(case, config)
    whole = KERNEL.decode_inputs(config, case)
    parts = [(KERNEL.decode_inputs(config, first), np.zeros_like(cut)), (KERNEL.decode_inputs(config, second), cut)]
    if not fast._takes(whole):
        return
    joint = fast._evaluate_fast(whole, parts)
    if fast._evaluate_fast(whole) is None:
        assert joint is None
        return
    assert joint is not None and all(result is not None for result in joint), "a part was not found to be the whole's"
    for (x, _), result in zip([(whole, None)] + parts, joint):
        check_against_plain(x, result)
        alone = fast._evaluate_fast(x)
        for name in ("logits2", "lse2", "o", "length"):
            np.testing.assert_array_equal(getattr(result, name), getattr(alone, name), strict=True)


def test_a_part_that_is_not_the_wholes_rows_is_evaluated_alone():
    config = CONFIGS["llama3.2-3b"]
    case = explicit_decode_case(config, [40, 23], seed=8, rotary_mode=1)
    first, second, cut = split_context(case, config)
    whole, one, two = (KERNEL.decode_inputs(config, c) for c in (case, first, second))
    zeros = np.zeros_like(cut)
    assert all(r is not None for r in fast._evaluate_fast(whole, [(one, zeros), (two, cut)]))
    pages = two.pages.copy()
    pages[two.page_values[0], 1, 0, 0, 0] += np.float16(1.0)  # a value of the second part's first row
    moved = dataclasses.replace(two, pages=pages)
    shifted = dataclasses.replace(two, k_rope_pos_offset=two.k_rope_pos_offset + 1)
    for part, start in ((moved, cut), (shifted, cut), (two, cut - (cut > 0)), (one, zeros + 1)):
        joint = fast._evaluate_fast(whole, [(one, zeros), (part, start)])
        assert joint[1] is not None and joint[2] is None
    fast.remember_split(whole, [(one, zeros), (moved, cut)])
    calls = []
    fast._MEMO.get(moved.arrays(), moved.scalars(), lambda: calls.append(1))
    assert calls == [1], "a part that is not the whole's rows was remembered"


def test_split_merge_evaluates_the_parts_once_with_the_whole(monkeypatch):
    calls = []
    real = fast.evaluate
    monkeypatch.setattr(fast, "evaluate", lambda inputs: calls.append(inputs) or real(inputs))
    config = CONFIGS["llama3.2-3b"]
    case = explicit_decode_case(config, [45, 0, 17], seed=9, rotary_mode=1)
    first, second, cut = split_context(case, config)
    KERNEL.prepare_split(config, case, ((first, np.zeros_like(cut)), (second, cut)))
    for c in (case, first, second):
        KERNEL.expected(config, c)
    assert calls == []


@pytest.mark.parametrize("name", ["llama3.2-3b", "mha-f32-window", "llama3.2-1b-window"])
@settings(max_examples=25)
@given(data=st.data())
def test_fast_decode_rotates_and_rounds_every_key_as_the_plain_reference(name, data):
    config = CONFIGS[name]
    case = draw_case(data, config)
    x = KERNEL.decode_inputs(config, case)
    plain = x.reference()
    rows = fast._rows(x)
    k_stored, v_stored = fast._gather(x, rows)
    keys = k_stored.astype(np.float64)
    if case.params["rotary_mode"]:
        fast._Rotation.of(x, rows, k_stored.shape[-1]).rotate_into(k_stored, keys, STORAGE[config["dtype"]])
    k_plain, v_plain, _ = gather_kv(case["pages"], case["page_indptr"], case["page_values"], case["length_info"],
                                    config["page_size"], bool(config["sliding_window"]))
    for b in range(rows.length.size):
        span = rows.span(b)
        length = rows.length[b]
        np.testing.assert_array_equal(keys[:, span], plain.k[b, :, :length], strict=True)
        np.testing.assert_array_equal(v_stored[:, span].astype(np.float64), v_plain[b, :, :length], strict=True)


@pytest.mark.parametrize("name", ["llama3.2-3b", "mha-f32-window", "llama3.2-1b-window"])
@settings(max_examples=25)
@given(data=st.data(), count=st.sampled_from([1, 5, 16]))
def test_leading_rows_are_the_first_rows_of_the_full_reference(name, data, count):
    """leading_rows keeps each sequence's first attended rows as the full reference has them: the
    same rotated, rounded q and keys bit for bit, and logits within the float64 rounding of
    their sums over D (2 gamma_{D+1} sm_scale log2(e) sum_d |q_d k_d|, see tvm's leading_floor)."""
    config = CONFIGS[name]
    x = KERNEL.decode_inputs(config, draw_case(data, config))
    full, part = x.reference(), fast.leading_rows(x, count).reference()
    keep = np.minimum(full.length, count)
    np.testing.assert_array_equal(part.length, keep)
    np.testing.assert_array_equal(part.q, full.q, strict=True)
    batch, _, dim = full.q.shape
    kv_heads = full.k.shape[1]
    for b, n in enumerate(keep):
        np.testing.assert_array_equal(part.k[b, :, :n], full.k[b, :, :n], strict=True)
        magnitude = (np.abs(full.q[b]).reshape(kv_heads, -1, dim) @ np.abs(full.k[b, :, :n]).transpose(0, 2, 1))
        bound = 2 * gamma(dim + 1, 2.0**-53) * x.sm_scale / np.log(2.0) * magnitude.reshape(full.q.shape[1], n)
        assert (np.abs(part.logits2[b, :, :n] - full.logits2[b, :, :n]) <= bound).all()


@pytest.mark.parametrize("name", ["mqa-f32", "llama3.2-1b-window"])
@settings(max_examples=20)
@given(data=st.data())
def test_key_ranges_are_the_extremes_of_the_attended_keys(name, data):
    config = CONFIGS[name]
    case = draw_case(data, config)
    hi, lo = fast.key_ranges(KERNEL.decode_inputs(config, case))
    k, _, length = gather_kv(case["pages"], case["page_indptr"], case["page_values"], case["length_info"],
                             config["page_size"], bool(config["sliding_window"]))
    for b, n in enumerate(length):
        if n:
            np.testing.assert_array_equal(hi[b], k[b, :, :n].max(axis=1))
            np.testing.assert_array_equal(lo[b], k[b, :, :n].min(axis=1))
        else:
            assert np.isneginf(hi[b]).all() and np.isposinf(lo[b]).all()


def test_fast_decode_handles_empty_contexts_and_a_single_row():
    config = CONFIGS["llama3.2-3b"]
    for lengths in ([0], [0, 0, 0], [1], [0, 1, 0, 17], [16, 0, 33]):
        for rotary_mode in (0, 1):
            case = explicit_decode_case(config, lengths, seed=len(lengths), rotary_mode=rotary_mode)
            check_against_plain(KERNEL.decode_inputs(config, case))


def test_invalid_page_tables_get_the_plain_references_error():
    config = CONFIGS["d96"]
    case = explicit_decode_case(config, [20, 5], seed=3)
    bad = case.replace({"page_values": case["page_values"] + 1000})
    x = KERNEL.decode_inputs(config, bad)
    assert not fast._takes(x)
    with pytest.raises(ValueError) as plain:
        x.reference()
    with pytest.raises(ValueError) as fast_error:
        fast.evaluate(x)
    assert str(fast_error.value) == str(plain.value)


def test_nan_in_an_attended_row_gets_the_plain_references_error():
    config = CONFIGS["d96"]
    case = explicit_decode_case(config, [20, 5], seed=4)
    pages = case["pages"].copy()
    pages[case["page_values"][0], 0, 0, 3, 7] = np.nan  # a key of sequence 0, row 3
    check_against_plain(KERNEL.decode_inputs(config, case.replace({"pages": pages})))


@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")
def test_keys_rotated_past_the_float16_range_are_decided_by_the_plain_path():
    config = CONFIGS["d96"]
    case = explicit_decode_case(config, [40], seed=5, rotary_mode=1)
    pages = np.where(np.isnan(case["pages"]), np.nan, np.float16(60000.0)).astype(np.float16)
    x = KERNEL.decode_inputs(config, case.replace({"pages": pages}))
    try:
        plain = fast.evaluate_plain(x)
    except ValueError as exc:
        with pytest.raises(ValueError, match=str(exc)[:20]):
            fast.evaluate(x)
    else:
        result = fast.evaluate(x)
        for name in ("o", "lse2", "o_budget", "lse_budget"):
            np.testing.assert_array_equal(getattr(result, name), getattr(plain, name))


def test_a_case_is_evaluated_once_however_many_checks_ask(monkeypatch):
    calls = []
    real = fast.evaluate
    monkeypatch.setattr(fast, "evaluate", lambda inputs: calls.append(inputs) or real(inputs))
    config = CONFIGS["llama3.2-3b"]
    case = explicit_decode_case(config, [30, 3], seed=6, rotary_mode=1)
    first = KERNEL.expected(config, case)
    second = KERNEL.expected(config, case)
    assert len(calls) == 1
    assert all(a.lo is b.lo and a.budget is b.budget for a, b in zip(first, second))
    # TVM binds its cases' small arrays at drawn offsets: a parameter the reference does not read.
    KERNEL.expected(config, case.replace(grid_limit=2, layout_offsets=[3, 1]))
    assert len(calls) == 1
    # Anything the reference reads is part of the key.
    KERNEL.expected(config, case.replace(sm_scale=0.5))
    KERNEL.expected(config, case.replace({"q": case["q"].copy()}))
    KERNEL.expected(dict(config, dtype="f32"), case)
    assert len(calls) == 4


def test_expected_outputs_are_read_only():
    config = CONFIGS["d96"]
    output, lse = KERNEL.expected(config, explicit_decode_case(config, [9], seed=7))
    with pytest.raises(ValueError):
        output.budget[...] = 0.0
