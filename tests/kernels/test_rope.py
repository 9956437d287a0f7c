"""The `rope` kernel on a real adapter: rotation properties beyond the reference comparison.

The reference check (`verify check rope`) judges every element against references.rope within
rope_budget; these tests pin down what a rotation must do whatever the reference says: leave
position 0 alone, keep each pair's length, treat q and k heads identically, and reach every
(token, head) row whatever the sizes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.budgets.rope import rope_budget
from verify.cases import Case
from verify.cases.rope import ROPE_MAX_POSITION, rope_cases
from verify.kernels.attention.rope import Rope, rows_per_group

KERNEL = Rope()
HEAD_DIMS = (64, 96, 128, 256)


def _config(head_dim=128, dtype="f32", qo_heads=4, kv_heads=2):
    return KERNEL.config({"head_dim": head_dim, "dtype": dtype, "qo_heads": qo_heads, "kv_heads": kv_heads})


def _run(device, config, case):
    launched = KERNEL.launch(device, KERNEL.wgsl(config), config, case)
    assert all(launched.guard_intact.values()), launched.guard_intact
    return launched.outputs


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint16 if x.dtype == np.float16 else np.uint32)


def _configs():
    return st.builds(_config, head_dim=st.sampled_from(HEAD_DIMS), dtype=st.sampled_from(["f16", "f32"]),
                     qo_heads=st.integers(1, 6), kv_heads=st.integers(1, 3))


def test_cases_cover_the_promised_ranges():
    """Strategy output matches the binding layout: shapes, dtypes, positions in a 32k context."""
    config = _config(head_dim=96, dtype="f16", qo_heads=3, kv_heads=1)

    @settings(max_examples=50, database=None)
    @given(rope_cases(config, "ci"))
    def check(case):
        tokens = case["positions"].shape[0]
        assert 1 <= tokens <= 16
        assert case["q"].shape == (tokens, 3, 96) and case["k"].shape == (tokens, 1, 96)
        assert case["q"].dtype == case["k"].dtype == np.float16
        assert case["positions"].dtype == np.int32
        assert 0 <= case["positions"].min() and case["positions"].max() <= ROPE_MAX_POSITION
        assert case.params["rope_theta"] in (1e4, 5e5, 1e6) and case.params["rope_scale"] in (1.0, 0.5, 8.0)

    check()


@pytest.mark.gpu
@settings(max_examples=16, database=None)
@given(data=st.data(), config=_configs())
def test_position_zero_is_the_identity(device, data, config):
    """At position 0 every angle is 0, cos 0 = 1 and sin 0 = 0, so q and k come back bit for bit
    (up to the sign of zero: cos(0)·(-0) + sin(0)·x is +0 in IEEE arithmetic).

    The WGSL spec would allow sin/cos 2^-11 off even at 0; every implementation evaluates them
    exactly there (odd and even polynomials after range reduction), and a token that is not
    moved must leave the cache identical: a phase or position offset breaks it at once.
    """
    case = data.draw(rope_cases(config, "quick"))
    case = case.replace({"positions": np.zeros_like(case["positions"])})
    outputs = _run(device, config, case)
    for name in ("q", "k"):
        unsigned_zero = lambda x: x + x.dtype.type(0)  # -0 + 0 = +0; every other value unchanged
        np.testing.assert_array_equal(_bits(unsigned_zero(outputs[name])), _bits(unsigned_zero(case[name])))


@pytest.mark.gpu
@settings(max_examples=24, database=None)
@given(data=st.data(), config=_configs())
def test_rotation_keeps_each_pair_length(device, data, config):
    """|(y_i, y_i+D/2)| = |(x_i, x_i+D/2)| within the pair's budget.

    An exact rotation keeps the length, and by the triangle inequality the kernel's pair differs
    from the exact one's length by at most the 2-norm of the two elements' budgets. Independent
    of the reference's angles: a kernel that scales instead of rotating (a sign lost in one of
    the two products, mismatched cos/sin) fails here whatever the position.
    """
    case = data.draw(rope_cases(config, "quick"))
    outputs = _run(device, config, case)
    half = config["head_dim"] // 2
    positions = case["positions"].astype(np.int64)[:, None]
    for name in ("q", "k"):
        x = case[name].astype(np.float64)
        y = outputs[name].astype(np.float64)
        _, budget = rope_budget(case[name], positions, case.params["rope_theta"], case.params["rope_scale"],
                                config["dtype"])
        before = np.hypot(x[..., :half], x[..., half:])
        after = np.hypot(y[..., :half], y[..., half:])
        allowed = np.hypot(budget[..., :half], budget[..., half:])
        assert np.all(np.abs(after - before) <= allowed), np.max(np.abs(after - before) / allowed)


@pytest.mark.gpu
@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_k_rotates_exactly_like_q(device, head_dim, dtype):
    """A key head holding the same vector as a query head of its token comes out bit-identical:
    q and k take the same rotation (same position, frequencies and arithmetic), as q.k
    depending only on the position difference requires."""
    config = _config(head_dim=head_dim, dtype=dtype, qo_heads=4, kv_heads=2)
    rng = np.random.default_rng(head_dim)
    tokens = 9
    storage = np.float16 if dtype == "f16" else np.float32
    q = rng.standard_normal((tokens, 4, head_dim)).astype(storage)
    k = q[:, [3, 0]].copy()
    positions = np.array([0, 1, 2, 255, 4096, 17, 32767, 32766, 1000], np.int32)
    case = Case({"q": q, "k": k, "positions": positions}, {"rope_theta": 5e5, "rope_scale": 8.0})
    outputs = _run(device, config, case)
    np.testing.assert_array_equal(_bits(outputs["k"]), _bits(outputs["q"][:, [3, 0]]))


@pytest.mark.gpu
@pytest.mark.parametrize("head_dim,qo_heads,kv_heads,tokens", [
    (64, 5, 2, 7), (96, 7, 2, 13), (128, 3, 2, 5), (256, 1, 2, 3), (64, 1, 1, 1)])
def test_dispatch_covers_every_token_and_head(device, head_dim, qo_heads, kv_heads, tokens):
    """Odd head and token counts leave the last workgroup part empty: every (token, head) row is
    still rotated, within budget, and nothing is written past the end.

    Pair 0 turns by the position itself (a whole number of radians, never a multiple of 2 pi),
    so a row the dispatch misses keeps its x_0 and fails the second assertion, not just the first.
    """
    config = _config(head_dim=head_dim, dtype="f32", qo_heads=qo_heads, kv_heads=kv_heads)
    rows, per_group = tokens * (qo_heads + kv_heads), rows_per_group(head_dim)
    assert per_group == 1 or rows % per_group, "sizes chosen to leave a partial workgroup"
    rng = np.random.default_rng(tokens)
    q = rng.standard_normal((tokens, qo_heads, head_dim)).astype(np.float32)
    k = rng.standard_normal((tokens, kv_heads, head_dim)).astype(np.float32)
    positions = rng.integers(1, ROPE_MAX_POSITION, tokens).astype(np.int32)
    case = Case({"q": q, "k": k, "positions": positions}, {"rope_theta": 1e4, "rope_scale": 1.0})
    outputs = _run(device, config, case)
    for expected in KERNEL.expected(config, case):
        out = outputs[expected.name]
        assert np.all(np.abs(out - expected.reference) <= expected.budget)
        assert np.all(out[..., 0] != case[expected.name][..., 0]), f"{expected.name}: a row was not rotated"
