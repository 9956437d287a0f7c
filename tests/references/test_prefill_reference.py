"""references.prefill: agreement with the literal mpmath kernels, and the properties of prefill masks."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from prefill_cases import PrefillCase, parent_arrays, prefill_cases, ragged_layout
from reference_bounds import LN_BASE, U64, assert_within, frequency_ulps, rope_bound, softmax_bounds

from verify.references.decode import LOG2E, decode_attention
from verify.references.prefill import (
    paged_prefill_attention,
    prefill_mask,
    ragged_prefill_attention,
    tree_attention,
    tree_mask,
)
from verify.references.rope import rope_frequencies, rotate_gptj, rotate_neox
from verify.references.softmax import logsumexp
from verify.references.token_tree import ancestry, tree_depths, tree_order
from verify.budgets.roundoff import float64_reference_bound

ROTATE = {"neox": rotate_neox, "gptj": rotate_gptj}


def padded_contexts(case: PrefillCase):
    """The stored (unrotated) K and V of every sequence as [B, Hkv, Lmax, ·] float64, zero past kv_len."""
    max_len = max(k.shape[1] for k, _ in case.contexts)
    k = np.zeros((len(case.contexts), case.contexts[0][0].shape[0], max_len, case.contexts[0][0].shape[2]))
    v = np.zeros(k.shape[:3] + (case.contexts[0][1].shape[2],))
    for b, (k_b, v_b) in enumerate(case.contexts):
        k[b, :, : k_b.shape[1]], v[b, :, : v_b.shape[1]] = k_b, v_b
    return k, v


def key_positions(case: PrefillCase, max_len: int) -> np.ndarray:
    """[B, Lmax] RoPE position of each context row: k_rope_pos_offset[b] + c, or for a ragged tree
    the position of the query token stored at the same ragged row (TVM tree_attn.py L404-408)."""
    opts = case.options
    if case.kind == "tree":
        rows = case.layout["kv_indptr"][:-1, None] + np.arange(max_len)
        return opts["q_rope_position"][np.minimum(rows, len(case.q) - 1)] if len(case.q) else rows * 0
    return opts["k_rope_pos_offset"][:, None] + np.arange(max_len)


def rope_errors(case: PrefillCase, k_stored: np.ndarray):
    """Bounds on the float64 rotation of q [T, Hq, D] and k [B, Hkv, L, D] (`rope_bound`), zero
    without rotation. When the rotated values are rounded (rotary_dtype), the float64 and exact
    rotations round alike unless a rounding boundary lies within the bound: such cases are rejected,
    and the rounded values are then exact."""
    opts = case.options
    q = case.q.astype(np.float64)
    if opts.get("rotary_mode", 0) == 0:
        return np.zeros_like(q), np.zeros_like(k_stored)
    pairing = opts["rope_pairing"]
    freq = rope_frequencies(q.shape[-1], opts["rope_theta"], opts["llama3"], pairing)
    kappa = frequency_ulps(opts["rope_theta"], opts["llama3"])
    errors = []
    for x, pos in ((q, opts["q_rope_position"][:, None]), (k_stored, key_positions(case, k_stored.shape[2])[:, None])):
        err = rope_bound(x, pos, opts["rope_scale"], freq, pairing, kappa)
        if opts["rotary_dtype"] is not None:
            rotated = ROTATE[pairing](x, pos, opts["rope_theta"], opts["rope_scale"], opts["llama3"])
            dtype = opts["rotary_dtype"]
            assume(np.array_equal((rotated - err).astype(dtype), (rotated + err).astype(dtype)))
            err = np.zeros_like(err)
        errors.append(err)
    return errors


def row_sequences(result) -> np.ndarray:
    """The sequence b of every query row."""
    return np.repeat(np.arange(result.qo_len.size), result.qo_len)


def attention_bounds(result, sm_scale: float, e_q=None, e_k=None):
    """Bounds on the float64 prefill's o and lse2, row by row as for decode (test_decode_reference).

    A logit s = sm_scale q.k errs (natural-log units) by at most
      E = |sm_scale| (sum_d e_q|k| + |q|e_k + e_q e_k  +  (gamma_D + 3u) sum_d |q k|)
    from the rotations' errors e_q, e_k, the dot product (Higham §3.1) and the scaling by
    sm_scale*log2(e). Moving every logit by up to E moves each softmax weight by a factor within
    e^(+-2E), so o moves by <= 2.01 E A_d (A_d = sum_j p_j|v_jd|) and lse2 by E log2(e); the softmax
    of the computed logits adds `softmax_bounds`.
    """
    group = result.q.shape[1] // result.k.shape[1]
    seq = row_sequences(result)
    e_q = np.zeros_like(result.q) if e_q is None else e_q
    e_k = np.zeros_like(result.k) if e_k is None else e_k
    q, e_q = result.q[:, :, None, :], e_q[:, :, None, :]
    k, e_k = np.repeat(result.k, group, axis=1)[seq], np.repeat(e_k, group, axis=1)[seq]
    dim = q.shape[-1]
    dot = (U64 * dim / (1 - U64 * dim) + 3 * U64) * np.sum(np.abs(q * k), axis=-1)
    dot = dot + np.sum(e_q * np.abs(k) + np.abs(q) * e_k + e_q * e_k, axis=-1)
    valid = np.isfinite(result.logits2)
    logit_err = abs(sm_scale) * np.max(np.where(valid, dot, 0.0), axis=-1, initial=0.0)
    v = np.repeat(result.v, group, axis=1)[seq]
    o_bound, lse_bound = softmax_bounds(result.logits2, v, result.o, result.lse2, 2)
    top = np.max(result.logits2, axis=-1, initial=-np.inf, keepdims=True)
    p = np.exp2(result.logits2 - np.where(np.isfinite(top), top, 0.0))
    total = p.sum(-1, keepdims=True)
    p /= np.where(total == 0, 1.0, total)
    spread = np.matmul(p[..., None, :], np.abs(v))[..., 0, :]
    return o_bound + 2.01 * logit_err[..., None] * spread, lse_bound + LOG2E * logit_err


def case_bounds(case: PrefillCase, result):
    k_stored, _ = padded_contexts(case)
    return attention_bounds(result, case.options["sm_scale"], *rope_errors(case, k_stored))


@settings(max_examples=30, deadline=None)  # mpmath loops take longer than the default deadline
@given(case=prefill_cases(rotary_dtype=st.sampled_from([None, np.float16])))
def test_prefill_matches_the_literal_mpmath_kernels(case):
    """Paged, ragged, tree and paged-tree prefill against twins that walk TVM's CPU kernels' loops
    and test TVM's mask formulas pair by pair (the tree through its preorder intervals)."""
    result = case.run()
    o_exact, lse_exact = case.run_mp()
    o_bound, lse_bound = case_bounds(case, result)
    assert_within(result.o, o_exact, o_bound, "o")
    assert_within(result.lse2, lse_exact, lse_bound, "lse2")


@settings(max_examples=40)
@given(case=prefill_cases(kind="paged", min_q=1, max_q=1, causal=True, windows=(0,)), causal=st.booleans())
def test_one_query_token_per_sequence_is_decode_bit_for_bit(case, causal):
    """With qo_len = 1 and no window a prefill row sees the whole context, causal or not, as decode
    does; the products and reductions have the same shapes, so the two references agree exactly."""
    options = dict(case.options, causal=causal, sliding_window_size=0)
    options.pop("rope_pairing", None)  # decode knows only TVM's (NeoX) pairing
    result = paged_prefill_attention(*case.arguments(), **options)
    decode_options = {key: value for key, value in options.items() if key not in ("causal", "sliding_window_size")}
    decode = decode_attention(case.q, *case.arguments()[2:], **decode_options)
    assert np.array_equal(result.o, decode.o)
    assert np.array_equal(result.lse2, decode.lse2)
    assert np.array_equal(result.logits2, decode.logits2)


def token_window_attention(case: PrefillCase):
    """Attention written per token from the explicit contexts, with the mask stated in token terms.

    Context row c is token c. Causal: query i is token kv_len - qo_len + i and sees tokens up to
    itself. Cross window W (TVM's sliding-window kernel, causal): the context holds the tokens
    before the chunk, query i is token kv_len + i, and it sees the cached tokens among the last W
    tokens up to itself, those after kv_len + i - W. Natural-base softmax over the visible tokens.
    Returns (o, lse2, natural logits with -inf where hidden).
    """
    opts = case.options
    causal, window = opts.get("causal", True), opts.get("sliding_window_size", 0)
    kv_heads = case.contexts[0][0].shape[0]
    group = case.q.shape[1] // kv_heads
    max_len = max(k.shape[1] for k, _ in case.contexts)
    o = np.zeros(case.q.shape[:2] + (case.contexts[0][1].shape[2],))
    lse2 = np.full(case.q.shape[:2], -np.inf)
    logits = np.full(case.q.shape[:2] + (max_len,), -np.inf)
    for b, (k_b, v_b) in enumerate(case.contexts):
        kv_len, begin, end = k_b.shape[1], case.q_indptr[b], case.q_indptr[b + 1]
        for i in range(end - begin):
            if not causal:
                seen = np.arange(kv_len)
            elif window:
                seen = np.arange(kv_len)[np.arange(kv_len) > kv_len + i - window]
            else:
                seen = np.arange(kv_len - (end - begin) + i + 1)
            if seen.size == 0:
                continue
            for h in range(case.q.shape[1]):
                keys = k_b[h // group, seen].astype(np.float64)
                s = opts["sm_scale"] * np.einsum("d,cd->c", case.q[begin + i, h].astype(np.float64), keys)
                weights = np.exp(s - s.max())
                o[begin + i, h] = weights @ v_b[h // group, seen].astype(np.float64) / weights.sum()
                lse2[begin + i, h] = (np.log(weights.sum()) + s.max()) / np.log(2.0)
                logits[begin + i, h, seen] = s
    return o, lse2, logits


@settings(max_examples=60)
@given(case=st.sampled_from(["paged", "ragged"]).flatmap(lambda kind: prefill_cases(kind=kind, rotary_mode=False)))
def test_prefill_equals_attention_written_per_token_with_the_mask_in_token_terms(case):
    """Against `token_window_attention`: a different mask formulation, a natural-base softmax and
    no paging. The tolerance is the sum of both float64 computations' own bounds."""
    result = case.run()
    o, lse2, logits = token_window_attention(case)
    assert np.array_equal(np.isfinite(result.logits2), np.isfinite(logits))
    group = case.q.shape[1] // case.contexts[0][0].shape[0]
    _, v_stored = padded_contexts(case)
    v = np.repeat(v_stored, group, axis=1)[row_sequences(result)]
    dim = case.q.shape[-1]
    o_own, lse_own = softmax_bounds(logits, v, o, lse2 * np.log(2.0), "e")
    dot = float64_reference_bound(np.abs(case.options["sm_scale"]) * np.einsum(
        "thd,thld->thl", np.abs(result.q), np.abs(np.repeat(result.k, group, axis=1)[row_sequences(result)])), 3, dim)
    logit_err = np.max(np.where(np.isfinite(logits), dot, 0.0), axis=-1, initial=0.0)
    o_dense = o_own + 2.01 * logit_err[..., None] * np.max(np.abs(v), axis=-2, initial=0.0)
    lse_dense = (lse_own + logit_err) / LN_BASE[2] + 2 * U64 * np.abs(np.where(np.isfinite(lse2), lse2, 0.0))
    o_bound, lse_bound = attention_bounds(result, case.options["sm_scale"])
    assert_within(result.o, o, o_bound + o_dense, "o")
    assert_within(result.lse2, lse2, lse_bound + lse_dense, "lse2")


@settings(max_examples=40)
@given(case=prefill_cases(kind="paged", causal=True, sliding_window=False), split=st.integers(0, 5))
def test_splitting_a_causal_chunk_in_two_leaves_every_row_unchanged(case, split):
    """Prefilling tokens [0, p) on the context that ends at token p - 1, then tokens [p, qo_len) on
    the full context, gives each row of the single prefill (no merging: the rows see the same
    context rows). The parts are computed over other padded lengths, so they agree within the
    sum of both results' rounding bounds."""
    qo_len, kv_len = np.diff(case.q_indptr), np.array([k.shape[1] for k, _ in case.contexts])
    head = np.minimum(split, qo_len)
    full = case.run()
    full_o_bound, full_lse_bound = case_bounds(case, full)
    rows_head = np.concatenate([np.arange(case.q_indptr[b], case.q_indptr[b] + head[b]) for b in range(qo_len.size)])
    rows_tail = np.setdiff1d(np.arange(len(case.q)), rows_head)
    for rows, lengths, counts in ((rows_head, kv_len - qo_len + head, head), (rows_tail, kv_len, qo_len - head)):
        contexts = [(k[:, :n], v[:, :n]) for (k, v), n in zip(case.contexts, lengths)]
        options = {key: value for key, value in case.options.items()
                   if key not in ("sliding_window", "sliding_window_size")}
        if "q_rope_position" in options:
            options["q_rope_position"] = options["q_rope_position"][rows]
        part_case = PrefillCase("ragged", case.q[rows], np.concatenate([[0], np.cumsum(counts)]), contexts,
                                ragged_layout(contexts), options)
        part = part_case.run()
        o_bound, lse_bound = case_bounds(part_case, part)
        assert_within(part.o, full.o[rows], o_bound + full_o_bound[rows], "o")
        assert_within(part.lse2, full.lse2[rows], lse_bound + full_lse_bound[rows], "lse2")


@settings(max_examples=40)
@given(case=prefill_cases(kind="paged", causal=True, sliding_window=False, rotary_mode=False))
def test_paged_and_ragged_layouts_of_one_context_agree_bit_for_bit(case):
    paged = case.run()
    layout = ragged_layout(case.contexts)
    ragged = ragged_prefill_attention(case.q, case.q_indptr, layout["k"], layout["v"], layout["kv_indptr"],
                                      sm_scale=case.options["sm_scale"], causal=True)
    for name in ("o", "lse2", "q", "k", "v", "kv_len", "logits2"):
        assert np.array_equal(getattr(paged, name), getattr(ragged, name)), name


@settings(max_examples=40)
@given(case=st.sampled_from(["tree", "paged_tree"]).flatmap(lambda kind: prefill_cases(kind=kind, rotary_mode=False)))
def test_a_chain_tree_is_causal_prefill_bit_for_bit(case):
    """Parents [-1, 0, 1, ...] make every node see the context before the tree and the nodes up to
    itself: tree attention over chains equals causal prefill of the same rows bit for bit (the same
    products under the same mask), for the ragged and the paged kernel."""
    sizes = np.diff(case.layout["tree_order_indptr"])
    chains = np.concatenate([np.arange(n) - 1 for n in sizes]).astype(np.int32)
    tree = case.function(*case.arguments()[:-2], chains, case.layout["tree_order_indptr"], **case.options)
    if case.kind == "tree":
        causal = ragged_prefill_attention(*case.arguments()[:-2], causal=True, **case.options)
    else:
        causal = paged_prefill_attention(*case.arguments()[:-2], causal=True, **case.options)
    for name in ("o", "lse2", "logits2"):
        assert np.array_equal(getattr(causal, name), getattr(tree, name)), name


def test_a_chain_tree_with_rotary_positions_by_depth_is_causal_prefill():
    """The runtime gives a tree node the position offset + depth; along a chain that is offset + i,
    exactly the causal prefill's positions, so the two agree bit for bit."""
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((6, h, 8)).astype(np.float16) for h in (4, 2, 2))
    chain = np.arange(6) - 1
    positions = 17 + tree_depths(chain)
    options = dict(sm_scale=0.35, rotary_mode=1, q_rope_position=positions, rotary_dtype=np.float16)
    causal = ragged_prefill_attention(q, [0, 6], k, v, [0, 6], k_rope_pos_offset=[17], **options)
    tree = tree_attention(q, [0, 6], k, v, [0, 6], chain, [0, 6], **options)
    assert np.array_equal(causal.o, tree.o) and np.array_equal(causal.lse2, tree.lse2)


def test_a_star_tree_lets_each_leaf_see_the_prefix_the_root_and_itself():
    """Parents [-1, 0, 0, 0]: the root sees the prefix and itself, leaf j the prefix, the root and
    itself, never a sibling. Checked against attention over exactly those rows."""
    rng = np.random.default_rng(5)
    prefix, star = 3, np.array([-1, 0, 0, 0])
    k, v = (rng.standard_normal((prefix + 4, 1, 4)) for _ in range(2))
    q = rng.standard_normal((4, 2, 4))
    layout = dict(pages=np.zeros((2, 2, 1, 4, 4)), page_indptr=[0, 2], page_values=[1, 0], length_info=[3])
    for r in range(prefix + 4):
        page = layout["page_values"][r // 4]
        layout["pages"][page, 0, :, r % 4], layout["pages"][page, 1, :, r % 4] = k[r], v[r]
    result = PrefillCase("paged_tree", q, np.array([0, 4]), [], dict(layout, token_tree_parent_ptr=star,
                         tree_order_indptr=[0, 4]), dict(sm_scale=0.5)).run()
    for node, seen in enumerate([[0, 1, 2, 3], [0, 1, 2, 3, 4], [0, 1, 2, 3, 5], [0, 1, 2, 3, 6]]):
        assert np.flatnonzero(np.isfinite(result.logits2[node, 0])).tolist() == seen
        for h in range(2):
            s = 0.5 * k[seen, 0] @ q[node, h]
            weights = np.exp(s - s.max())
            assert np.allclose(result.o[node, h], weights @ v[seen, 0] / weights.sum(), rtol=0, atol=1e-14)
            assert np.isclose(result.lse2[node, h], (np.log(weights.sum()) + s.max()) / np.log(2), rtol=0, atol=1e-14)


@settings(max_examples=100)
@given(parents=st.integers(0, 12).flatmap(parent_arrays))
def test_tree_order_intervals_encode_exactly_the_ancestor_relation(parents):
    """TVM tests `first[i] <= first[j] < second[i]` on the runtime's preorder pairs; for every pair
    of nodes that equals `ancestry` (parent links followed), and depth is the number of strict ancestors."""
    order = tree_order(parents)
    seen = ancestry(parents)
    by_interval = (order[None, :, 0] <= order[:, None, 0]) & (order[:, None, 0] < order[None, :, 1])
    assert np.array_equal(by_interval, seen)
    assert np.array_equal(tree_depths(parents), seen.sum(axis=1) - 1)
    assert sorted(order[:, 0].tolist()) == list(range(len(parents)))


def test_tree_order_matches_the_runtime_preorder_on_a_forest():
    """Hand-checked against `ConstructTokenTreeMask`'s walk: roots 0 and 4, node 1's subtree {1, 3}."""
    parents = [-1, 0, 0, 1, -1, 4]
    assert tree_order(parents).tolist() == [[0, 4], [1, 3], [3, 4], [2, 3], [4, 6], [5, 6]]
    assert tree_depths(parents).tolist() == [0, 1, 1, 2, 0, 1]


def test_masks_match_tvm_formulas_on_a_worked_example():
    """qo_len 3, kv_len 5: causal rows end at 3, 4, 5 (exclusive); window 3 leaves the last 2, 1, 0
    cached rows; not causal sees everything."""
    assert prefill_mask(3, 5, causal=True).sum(axis=1).tolist() == [3, 4, 5]
    window = prefill_mask(3, 5, causal=True, sliding_window_size=3)
    assert [np.flatnonzero(row).tolist() for row in window] == [[3, 4], [4], []]
    assert prefill_mask(3, 5, causal=False).all()
    assert tree_mask([-1, 0, 0], 2, 5).tolist() == [[True, True, True, True, False], [True, True, True, False, True]]


def test_rows_that_see_nothing_give_zero_output_and_neg_inf_lse():
    """An empty context, a sequence without queries beside it, and window rows past the window all
    give o = 0 exactly and lse2 = -inf, without warnings."""
    rng = np.random.default_rng(0)
    k, v = (rng.standard_normal((4, 1, 4)) for _ in range(2))
    pages = np.zeros((1, 2, 1, 4, 4))
    pages[0, 0, 0], pages[0, 1, 0] = k[:, 0], v[:, 0]
    q = rng.standard_normal((5, 2, 4))
    info = np.array([[4, 0, 0], [0, 0, 0], [0, 0, 0]])  # rows: last_page_len, offset, sink
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = paged_prefill_attention(q, [0, 3, 3, 5], pages, [0, 1, 1, 1], [0], info, sm_scale=0.5,
                                         sliding_window=True, sliding_window_size=2)
    assert result.kv_len.tolist() == [4, 0, 0] and result.qo_len.tolist() == [3, 0, 2]
    empty = [1, 2, 3, 4]  # sequence 0 rows 1, 2 see max(2 - i - 1, 0) = 0 rows; sequence 2 has no context
    assert np.all(result.o[empty] == 0) and np.all(np.isneginf(result.lse2[empty]))
    assert np.all(np.isfinite(result.lse2[0]))
    assert np.flatnonzero(np.isfinite(result.logits2[0, 0])).tolist() == [3]


@settings(max_examples=40)
@given(case=prefill_cases())
def test_logits_are_neg_inf_exactly_where_hidden_and_lse_is_their_logsumexp(case):
    """One mask per query token (the same for all its heads); a row that sees nothing has o = 0;
    k and v are zero past each kv_len."""
    result = case.run()
    assert np.array_equal(result.lse2, logsumexp(result.logits2, base=2))
    hidden = ~np.isfinite(result.logits2)
    assert np.array_equal(hidden, np.broadcast_to(hidden[:, :1], hidden.shape))
    assert np.all(result.o[np.all(hidden, axis=-1)] == 0)
    past = np.arange(result.k.shape[2]) >= result.kv_len[:, None]
    assert np.all(result.k.transpose(0, 2, 1, 3)[past] == 0) and np.all(result.v.transpose(0, 2, 1, 3)[past] == 0)


def _paged(**changes):
    rng = np.random.default_rng(1)
    arguments = dict(q=rng.standard_normal((3, 2, 4)), q_indptr=[0, 3], pages=rng.standard_normal((2, 2, 1, 4, 4)),
                     page_indptr=[0, 1], page_values=[1], length_info=[4], sm_scale=0.5)
    return paged_prefill_attention(**dict(arguments, **changes))


def _tree(**changes):
    rng = np.random.default_rng(1)
    arguments = dict(q=rng.standard_normal((3, 2, 4)), q_indptr=[0, 3], k=rng.standard_normal((3, 1, 4)),
                     v=rng.standard_normal((3, 1, 4)), kv_indptr=[0, 3], token_tree_parent_ptr=[-1, 0, 0],
                     tree_order_indptr=[0, 3], sm_scale=0.5)
    return tree_attention(**dict(arguments, **changes))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: _paged(length_info=[2]), r"causal prefill needs kv_len >= qo_len .* kv_len=2 < qo_len=3"),
        (lambda: _paged(q_indptr=[0, 2]), r"q_indptr\[-1\]=2 must equal the number of rows it indexes, 3"),
        (lambda: _paged(q_indptr=[0, 2, 3]), r"q_indptr must have B\+1=2 entries"),
        (lambda: _paged(q_indptr=[1, 3]), r"q_indptr must start at 0"),
        (lambda: _paged(sliding_window_size=4), "sliding_window_size applies only to the sliding-window kernel"),
        (lambda: _paged(rotary_mode=1, k_rope_pos_offset=[0]), "q_rope_position is required"),
        (lambda: _paged(rotary_mode=1, k_rope_pos_offset=[0], q_rope_position=[0, 1]),
         r"q_rope_position must be an integer array of shape \(total_q,\) = \(3,\)"),
        (lambda: _paged(rotary_mode=1, rope_pairing="halves"), "rope_pairing must be 'neox' or 'gptj'"),
        (lambda: _paged(q=np.zeros((3, 3, 4)), pages=np.zeros((2, 2, 2, 4, 4))), "Hq=3 must be a multiple of Hkv=2"),
        (lambda: _paged(sm_scale=np.nan), "sm_scale must be finite"),
        (lambda: _tree(token_tree_parent_ptr=[-1, 1, 0]), r"parent_ptr of sequence 0\[1\]=1 is not a valid parent"),
        (lambda: _tree(token_tree_parent_ptr=[-1, 0, -2]), r"\[2\]=-2 is not a valid parent"),
        (lambda: _tree(token_tree_parent_ptr=[-1, 0], tree_order_indptr=[0, 2]),
         r"a token tree of 2 nodes must hold the 3 query tokens"),
        (lambda: _tree(token_tree_parent_ptr=[-1, 0, 0], tree_order_indptr=[0, 2]),
         r"tree_order_indptr\[-1\]=2 must equal the number of rows it indexes, 3"),
        (lambda: _tree(rotary_mode=1, q_rope_position=[0, 1, 1], kv_indptr=[0, 4], k=np.zeros((4, 1, 4)),
                       v=np.zeros((4, 1, 4))), r"rotary_mode 1 needs kv_indptr == q_indptr"),
        (lambda: _tree(kv_indptr=[0, 2]), r"kv_indptr\[-1\]=2 must equal the number of rows it indexes, 3"),
        (lambda: ragged_prefill_attention(np.zeros((3, 2, 4)), [0, 3], np.zeros((3, 1, 8)), np.zeros((3, 1, 8)),
                                          [0, 3], sm_scale=1.0), "k must have the head dim of q, 4"),
    ],
)
def test_bad_arguments_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
