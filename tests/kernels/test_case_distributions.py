"""The cases the strategies draw keep their corners: fast value generation (quantile tables,
values drawn only for attended rows) must not lose an edge case the checks rely on."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, Phase, given, seed, settings

from verify.cases.values import VALUE_KINDS, make_values
from verify.kernels.attention.cases import DECODE_VALUE_KINDS, decode_cases, special_lengths
from verify.kernels.registry import get_kernel
from verify.profiles import get_profile


def drawn(strategy, count: int) -> list:
    found = []

    @settings(max_examples=count, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @seed(1)
    @given(strategy)
    def collect(case):
        found.append(case)

    collect()
    return found


def test_decode_cases_still_draw_every_corner():
    config = get_kernel("decode.tiled").config({"head_dim": 64, "qo_heads": 4, "kv_heads": 2, "dtype": "f16"})
    cases = drawn(decode_cases(config, get_profile("ci")), 400)
    lengths = {n for case in cases for n in case.params["lengths"]}
    assert 0 in lengths and 1 in lengths
    assert {15, 16, 17, 127, 128, 129, 511, 512, 513} <= lengths, sorted(lengths)
    assert set(special_lengths(16, 520)) - lengths == set() or len(set(special_lengths(16, 520)) - lengths) <= 3
    assert {case.params["values"] for case in cases} == set(DECODE_VALUE_KINDS)
    assert any(case.params["spare_pages"] for case in cases) and any(case.params["rotary_mode"] for case in cases)
    for case in cases[:40]:  # spare pages and unused slots stay poisoned
        assert np.isnan(case["pages"]).any() == (case.params["spare_pages"] > 0 or
                                                 any(n % 16 for n in case.params["lengths"]))


def test_every_value_kind_keeps_its_range_in_f16_and_f32():
    rng = np.random.default_rng(0)
    for dtype, tiny_top in (("f16", 5 * 2.0**-8), ("f32", 5 * 2.0**-115)):
        made = {kind: make_values(rng, kind, (64, 128), dtype).astype(np.float64) for kind in VALUE_KINDS}
        assert abs(made["normal"].mean()) < 0.05 and 0.95 < made["normal"].std() < 1.05
        assert made["normal"].max() > 3.0 and made["normal"].min() < -3.0
        assert np.abs(made["uniform"]).max() <= 1.0 and made["uniform"].std() > 0.5
        assert np.abs(made["large"]).max() > 2.0**9
        assert 0 < np.abs(made["tiny"][made["tiny"] != 0]).max() < tiny_top
        spikes = np.abs(made["spiky"]) > 1.0
        assert 0.001 < spikes.mean() < 0.03


# -- the page pool the decode values are drawn into -------------------------------------------------
def _slots_held(case, config) -> np.ndarray:
    """[P, page_size] True where a slot holds an attended row (references.paged_kv's addressing)."""
    from verify.references.paged_kv import attended_length, row_to_slot

    sliding = bool(config["sliding_window"])
    page_size = config["page_size"]
    length = attended_length(case["page_indptr"], case["length_info"], page_size, sliding)
    held = np.zeros(case["pages"].shape[0] * page_size, bool)
    for b, n in enumerate(length):
        row = np.zeros((length.size, int(n)), np.int64)
        row[b] = np.arange(n)
        slot = row_to_slot(row, case["length_info"], sliding)[b]
        page = case["page_values"][case["page_indptr"][b] + slot // page_size]
        held[page * page_size + slot % page_size] = True
    return held.reshape(-1, page_size)


def test_decode_pages_hold_the_attended_rows_and_poison_everything_else():
    """Every attended row is finite, every other slot (tails, stale window slots, spare pages) is
    NaN in K and V, in f16 and f32, with and without a sliding window; the page table is a
    shuffled part of the pool (some drawn table is not in order)."""
    shuffled = False
    for keys in ({"dtype": "f16", "sliding_window": 1, "head_dim": 64}, {"dtype": "f32", "kv_heads": 1}):
        config = get_kernel("decode.tiled").config(dict({"qo_heads": 4, "kv_heads": 2, "head_dim": 64}, **keys))
        for case in drawn(decode_cases(config, get_profile("ci")), 60):
            held = _slots_held(case, config)
            finite = np.isfinite(case["pages"]).all(axis=(1, 2, 4))  # [P, page_size]
            poisoned = np.isnan(case["pages"]).all(axis=(1, 2, 4))
            assert (finite == held).all() and (poisoned == ~held).all(), case.summary()
            spare = case["pages"].shape[0] - case["page_values"].size
            assert spare == case.params["spare_pages"]
            assert np.unique(case["page_values"]).size == case["page_values"].size
            shuffled |= bool(np.any(np.diff(case["page_values"]) != 1))
    assert shuffled


def test_decode_value_kinds_keep_their_shape():
    """The shaped kinds, drawn into the pool, are still what they say: rising keys rise along the
    rows of each sequence, a peaked sequence has one dominant key, equal_logits keys are equal
    to ~1e-3, far_negative logits sit near FAR_NEGATIVE_LOGIT (read back through gather_kv)."""
    from verify.references.paged_kv import gather_kv
    from verify.kernels.attention.cases import FAR_NEGATIVE_LOGIT, paged_decode_values

    rng = np.random.default_rng(3)
    lengths = np.array([40, 0, 17])
    for dtype in (np.float16, np.float32):
        made = {kind: paged_decode_values(rng, kind, (3, 4, 64), 2, lengths, 16, dtype, 0.125, spare_pages=2)
                for kind in ("rising", "peaked", "equal_logits", "far_negative")}
        for kind, (q, pages, indptr, values, info) in made.items():
            k, _, length = gather_kv(pages, indptr, values, info, 16)
            assert (length == lengths).all()
            q = q.astype(np.float64).reshape(3, 2, 2, 64)
            logits = np.einsum("bhgd,bhld->bhgl", q, k) * 0.125 / np.log(2.0)
            for b, n in enumerate(lengths):
                if not n:
                    continue
                row = logits[b, :, :, :n]
                if kind == "rising":
                    assert (np.diff(row, axis=-1) > -1.0).all() and (row[..., -1] > row[..., 0]).all()
                elif kind == "peaked":
                    top = row.argmax(axis=-1)
                    assert (top == top.flat[0]).all() and (np.sort(row, axis=-1)[..., -1] - np.sort(
                        row, axis=-1)[..., -2] > 1.0).all()
                elif kind == "equal_logits":
                    assert np.ptp(k[b, :, :n], axis=1).max() < 0.02
                else:
                    assert (row < FAR_NEGATIVE_LOGIT * 0.9).all() and (row > FAR_NEGATIVE_LOGIT * 1.6).all()


def test_nightly_context_lengths_keep_the_8k_corners():
    """At nightly sizes the drawn lengths still reach the top of the context and its corners."""
    from verify.kernels.attention.cases import context_lengths, decode_limits

    lengths = set(drawn(context_lengths(decode_limits("nightly", 16)), 2000))
    assert {0, 1, 15, 16, 17, 128, 129, 2047, 4096, 4097, 8191} <= lengths, sorted(lengths)
    assert max(lengths) == 8192 or any(n > 6000 for n in lengths)


def test_shrinking_still_reduces_a_decode_case():
    """Shrinking works on the structure and the value kind: the smallest case with a long context
    is one sequence of normal values from seed 0, no spare pages."""
    from hypothesis import find
    from hypothesis import settings as hsettings

    config = get_kernel("decode.tiled").config({"head_dim": 64, "qo_heads": 4, "kv_heads": 2, "dtype": "f16"})
    case = find(decode_cases(config, get_profile("ci")), lambda c: max(c.params["lengths"]) >= 300,
                settings=hsettings(database=None, max_examples=2000, derandomize=True))
    assert case.params["batch"] == 1 and case.params["values"] == "normal"
    assert case.params["seed"] == 0 and case.params["spare_pages"] == 0
    assert 300 <= case.params["lengths"][0] <= 383, case.params


def test_f16_value_tables_are_the_f32_computation_rounded_once():
    """Each f16 table entry is what the float32 path computes from the quantile, rounded once."""
    from verify.cases.values import _f16_table, _normal_table

    quantiles = _normal_table()
    assert (_f16_table("normal") == quantiles.astype(np.float16)).all()
    large = _f16_table("large").reshape(-1, 1 << 16)
    assert large.shape[0] == 8 and (large[3] == np.ldexp(quantiles, 7).astype(np.float16)).all()
    tiny = _f16_table("tiny").reshape(-1, 1 << 16)
    assert (tiny[0] == np.ldexp(quantiles.astype(np.float64), -13).astype(np.float16)).all()
    spiky = _f16_values_share_of_spikes()
    assert 0.007 < spiky < 0.013


def _f16_values_share_of_spikes() -> float:
    x = make_values(np.random.default_rng(5), "spiky", (400, 256), "f16").astype(np.float64)
    return float(np.mean(np.abs(x) > 0.05 * 4.5))


def test_rows_are_fresh_up_to_fresh_rows_and_picked_from_fresh_ones_past_it():
    """A case of up to FRESH_ROWS rows (K or V of one head in one slot) has no two rows alike; a
    larger one picks its rows from FRESH_ROWS fresh ones, which keep their kind (spiky's 1%)."""
    from verify.kernels.attention.cases import FRESH_ROWS, paged_decode_values

    rng = np.random.default_rng(7)
    for kind in ("normal", "rising", "equal_logits"):
        pages = paged_decode_values(rng, kind, (1, 2, 64), 2, np.array([FRESH_ROWS // 4 - 16]), 16, np.float16,
                                    0.125)[1]
        rows = pages.reshape(-1, 64)
        rows = rows[np.isfinite(rows).all(axis=1)]
        assert rows.shape[0] > FRESH_ROWS // 2 and np.unique(rows, axis=0).shape[0] == rows.shape[0], kind
    pages = paged_decode_values(rng, "spiky", (1, 2, 64), 2, np.array([4 * FRESH_ROWS]), 16, np.float16, 0.125)[1]
    rows = pages.reshape(-1, 64)
    assert FRESH_ROWS // 2 < np.unique(rows, axis=0).shape[0] <= FRESH_ROWS
    assert 0.007 < np.mean(np.abs(rows.astype(np.float64)) > 0.05 * 4.5) < 0.013


def test_scaled_noise_tables_are_the_f32_product_rounded_once():
    """rising's and peaked's f16 noise (_scaled_normal) is, draw for draw, the float32 product of
    the scale and _normal's quantile rounded to f16, as before the tables; f32 is that product."""
    from verify.kernels.attention.cases import _normal, _scaled_normal

    for dtype in (np.float16, np.float32):
        for scale in (0.1, 0.3):
            made = _scaled_normal(np.random.default_rng(11), scale, (300, 64), dtype)
            product = (np.float32(scale) * _normal(np.random.default_rng(11), (300, 64), dtype)).astype(dtype)
            assert made.dtype == dtype and (made.view(np.uint8) == product.view(np.uint8)).all()


def _activation_per_block(rng, shape, values, mix, dtype):
    """make_activation as a kind chosen per block (the definition the one-kind paths must equal)."""
    from verify.references.dp4a_quant import ACTIVATION_BLOCK
    from verify.budgets.roundoff import numpy_dtype
    from verify.kernels.dp4a.quantize_cases import BLOCK_KINDS, make_blocks

    base = make_values(rng, values, shape, dtype).astype(np.float64).reshape(-1, ACTIVATION_BLOCK)
    if mix == "plain":
        kinds = np.zeros(base.shape[0], dtype=int)
    elif mix == "mixed":
        kinds = rng.integers(0, len(BLOCK_KINDS), base.shape[0])
    else:
        kinds = np.full(base.shape[0], BLOCK_KINDS.index(mix))
    blocks = np.empty_like(base)
    for index, kind in enumerate(BLOCK_KINDS):
        chosen = kinds == index
        if chosen.any():
            blocks[chosen] = make_blocks(rng, kind, base[chosen], dtype)
    return blocks.reshape(shape).astype(numpy_dtype(dtype))


def test_dp4a_activations_of_one_block_kind_are_the_per_block_construction():
    """make_activation builds a one-kind mix without the per-kind masks: the same values, bit for
    bit, and the same generator state after (the weights drawn next are the same), every mix."""
    from verify.kernels.dp4a.quantize_cases import BLOCK_MIXES, make_activation

    for dtype in ("f16", "f32"):
        for mix in BLOCK_MIXES:
            for values in ("normal", "spiky"):
                fast, plain = np.random.default_rng(21), np.random.default_rng(21)
                a = make_activation(fast, (2, 3, 256), values, mix, dtype)
                b = _activation_per_block(plain, (2, 3, 256), values, mix, dtype)
                assert a.dtype == b.dtype and a.shape == b.shape
                assert (a.view(np.uint8) == b.view(np.uint8)).all(), (dtype, mix, values)
                assert fast.integers(0, 2**62) == plain.integers(0, 2**62), (dtype, mix, values)


def test_dp4a_matmul_cases_draw_every_kind_and_the_range_bound_only_settles_sums_within_room():
    """The drawn matmul cases still take every activation mix, weight code, scale and zero point
    kind; and _within, which spares _within_range the R x N x K product, is True only where every
    sum of that product is within the room (and it does settle cases both ways)."""
    from verify.kernels.dp4a.matmul_cases import A_MIXES, CODE_KINDS, SCALE_KINDS, ZERO_POINT_KINDS, _within

    kernel = get_kernel("dp4a.matmul")
    config = kernel.config({"dtype": "f16", "bits": 4, "block_size": 32, "has_zero_points": 1})
    cases = drawn(kernel.cases(config, get_profile("ci")), 120)
    assert {case.params["mix"] for case in cases} == set(A_MIXES)
    assert {case.params["codes"] for case in cases} == set(CODE_KINDS)
    assert {case.params["scales"] for case in cases} == set(SCALE_KINDS)
    assert {case.params["zero_points"] for case in cases} == set(ZERO_POINT_KINDS)
    rng = np.random.default_rng(4)
    settled = set()
    for _ in range(200):
        rows, n, k = (int(x) for x in rng.integers(1, 40, 3))
        a = np.abs(rng.standard_normal((rows, 8 * k))) * 2.0 ** rng.integers(-4, 4, (rows, 1))
        w = np.abs(rng.standard_normal((n, 8 * k))) * (rng.random((n, 8 * k)) < 0.5)
        largest = float((a @ w.T).max())
        room = largest * 2.0 ** rng.uniform(-1, 3)
        within = _within(a, w, room)
        assert not within or largest <= room
        settled.add(within)
    assert settled == {True, False}


def test_values_of_one_shape_are_one_strategy_that_still_draws_varied_arrays():
    from verify import strategies as vs

    assert vs.values((3, 5), "f16") is vs.values([3, 5], "f16")
    assert vs.values((3, 5), "f16") is not vs.values((3, 5), "f32")
    assert vs.values((3, 5), "f16") is not vs.values((3, 6), "f16")
    arrays = drawn(vs.values((3, 5), "f16"), 80)
    assert all(a.shape == (3, 5) and a.dtype == np.float16 for a in arrays)
    assert len({a.tobytes() for a in arrays}) > 40
