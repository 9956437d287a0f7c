"""The `rope` kernel on a real adapter: rotation properties beyond the reference comparison.

The reference check (`verify check rope`) judges every element against references.rope within
rope_budget; these tests pin down what a rotation must do whatever the reference says: leave
position 0 alone, keep each pair's length, treat q and k heads identically, pair GPT-J's dims
as NeoX's permuted, stay within budget on either side of Llama 3's band edges, and reach every
(token, head) row whatever the sizes.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import find, given, settings
from hypothesis import strategies as st

from verify.budgets.metrics import compare
from verify.budgets.rope import partner_dims, rope_budget
from verify.cases import Case
from verify.kernels.attention.rope import Rope, rows_per_group
from verify.kernels.attention.rope_cases import (
    LLAMA3_MAX_POSITION,
    LLAMA3_THETA,
    ROPE_MAX_POSITION,
    band_edges,
    edge_pairs,
    edge_theta,
    rope_bases,
    rope_cases,
    rope_positions,
)
from verify.kernels.attention.rope_variant import LLAMA_3_1, LLAMA_3_2, RopeVariant

KERNEL = Rope()
HEAD_DIMS = (64, 96, 128, 256)
#: The rotations the kernel compiles: unscaled, Llama 3.1 and 3.2 scaling, with either pairing.
VARIANTS = (dict(), LLAMA_3_1, LLAMA_3_2)


def _config(head_dim=128, dtype="f32", qo_heads=4, kv_heads=2, pairing="neox", scaling=None):
    return KERNEL.config({"head_dim": head_dim, "dtype": dtype, "qo_heads": qo_heads, "kv_heads": kv_heads,
                          "rope_pairing": pairing, **(scaling or {})})


def _run(webgpu_device, config, case):
    launched = KERNEL.launch(webgpu_device, KERNEL.wgsl(config), config, case)
    assert all(launched.guard_intact.values()), launched.guard_intact
    return launched.outputs


def _bits(x: np.ndarray) -> np.ndarray:
    return x.view(np.uint16 if x.dtype == np.float16 else np.uint32)


def _configs():
    return st.builds(_config, head_dim=st.sampled_from(HEAD_DIMS), dtype=st.sampled_from(["f16", "f32"]),
                     qo_heads=st.integers(1, 6), kv_heads=st.integers(1, 3),
                     pairing=st.sampled_from(["neox", "gptj"]), scaling=st.sampled_from(VARIANTS))


def _cases(config, profile):
    return rope_cases(config, profile, llama3=RopeVariant.from_config(config).llama3)


def _budget(config, case, name):
    variant = RopeVariant.from_config(config)
    return rope_budget(case[name], case["positions"].astype(np.int64)[:, None], case.params["rope_theta"],
                       case.params["rope_scale"], config["dtype"], llama3=variant.llama3, pairing=variant.pairing)


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


@pytest.mark.parametrize("head_dim,scaling", [(64, LLAMA_3_2), (128, LLAMA_3_1)])
def test_llama3_cases_reach_128k_and_both_band_edges(head_dim, scaling):
    """With Llama 3 scaling, positions stay within 131072 and reach it, scale is 1, and bases are
    Llama 3's or put the named pair on the named band edge, on it or one ulp of the base off."""
    config = _config(head_dim=head_dim, scaling=scaling)
    llama3 = RopeVariant.from_config(config).llama3
    strategy = _cases(config, "ci")

    @settings(max_examples=100, database=None)
    @given(strategy)
    def check(case):
        assert case["positions"].max() <= LLAMA3_MAX_POSITION and case.params["rope_scale"] == 1.0
        edge = case.params.get("band_edge")
        if edge is None:
            assert case.params["rope_theta"] == LLAMA3_THETA
            return
        side, pair, ulps = edge.split()
        assert case.params["rope_theta"] == edge_theta(head_dim, int(pair), band_edges(llama3)[side], int(ulps))

    check()
    for side in ("high", "low"):
        for ulps in ("-1", "0", "1"):
            find(rope_bases(head_dim, llama3), lambda base: base[1].split()[::2] == [side, ulps],
                 settings=settings(database=None, max_examples=2000))
    find(rope_positions(llama3), lambda position: position == LLAMA3_MAX_POSITION, settings=settings(database=None))


@pytest.mark.parametrize("head_dim,scaling", [(64, LLAMA_3_2), (128, LLAMA_3_1), (96, LLAMA_3_1), (256, LLAMA_3_2)])
def test_one_ulp_of_an_edge_base_puts_the_pair_on_either_side_of_the_edge(head_dim, scaling):
    """For every pair a band-edge base exists for, the base one f32 ulp down puts the pair's exact
    wavelength below the edge and one ulp up above it (by 0.3 to 6 f32 ulps of the wavelength), the
    base itself within rounding of it: the reference sees both branches, and a kernel's f32
    frequency may land on either side of its own comparison."""
    llama3 = RopeVariant.from_config(_config(head_dim=head_dim, scaling=scaling)).llama3
    for side, wavelength in band_edges(llama3).items():
        pairs = edge_pairs(head_dim, wavelength)
        assert pairs, side
        for pair in pairs:
            offsets = [2 * np.pi * edge_theta(head_dim, pair, wavelength, u) ** (2 * pair / head_dim) / wavelength - 1
                       for u in (-1, 0, 1)]
            assert offsets[0] < 0 < offsets[2] and abs(offsets[1]) < 2**-20, (side, pair, offsets)


@pytest.mark.webgpu
@settings(max_examples=16, database=None)
@given(data=st.data(), config=_configs())
def test_position_zero_is_the_identity(webgpu_device, data, config):
    """At position 0 every angle is 0, cos 0 = 1 and sin 0 = 0, so q and k come back bit for bit
    (up to the sign of zero: cos(0)·(-0) + sin(0)·x is +0 in IEEE arithmetic).

    The WGSL spec would allow sin/cos 2^-11 off even at 0; every implementation evaluates them
    exactly there (odd and even polynomials after range reduction), and a token that is not
    moved must leave the cache identical: a phase or position offset breaks it at once.
    """
    case = data.draw(_cases(config, "quick"))
    case = case.replace({"positions": np.zeros_like(case["positions"])})
    outputs = _run(webgpu_device, config, case)
    for name in ("q", "k"):
        unsigned_zero = lambda x: x + x.dtype.type(0)  # -0 + 0 = +0; every other value unchanged
        np.testing.assert_array_equal(_bits(unsigned_zero(outputs[name])), _bits(unsigned_zero(case[name])))


@pytest.mark.webgpu
@settings(max_examples=24, database=None)
@given(data=st.data(), config=_configs())
def test_rotation_keeps_each_pair_length(webgpu_device, data, config):
    """|(y_d, y_pair(d))| = |(x_d, x_pair(d))| within the pair's budget, for either pairing.

    An exact rotation keeps the length, and by the triangle inequality the kernel's pair differs
    from the exact one's length by at most the 2-norm of the two elements' budgets. Independent
    of the reference's angles: a kernel that scales instead of rotating (a sign lost in one of
    the two products, mismatched cos/sin) or rotates the wrong dims together fails here
    whatever the position.
    """
    case = data.draw(_cases(config, "quick"))
    outputs = _run(webgpu_device, config, case)
    partner = partner_dims(config["head_dim"], config["rope_pairing"])
    for name in ("q", "k"):
        x = case[name].astype(np.float64)
        y = outputs[name].astype(np.float64)
        _, budget = _budget(config, case, name)
        before = np.hypot(x, x[..., partner])
        after = np.hypot(y, y[..., partner])
        allowed = np.hypot(budget, budget[..., partner])
        assert np.all(np.abs(after - before) <= allowed), np.max(np.abs(after - before) / allowed)


@pytest.mark.webgpu
@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("dtype", ["f16", "f32"])
@pytest.mark.parametrize("pairing,scaling", [("neox", None), ("gptj", LLAMA_3_2)])
def test_k_rotates_exactly_like_q(webgpu_device, head_dim, dtype, pairing, scaling):
    """A key head holding the same vector as a query head of its token comes out bit-identical:
    q and k take the same rotation (same position, frequencies and arithmetic), as q.k
    depending only on the position difference requires."""
    config = _config(head_dim=head_dim, dtype=dtype, qo_heads=4, kv_heads=2, pairing=pairing, scaling=scaling)
    rng = np.random.default_rng(head_dim)
    tokens = 9
    storage = np.float16 if dtype == "f16" else np.float32
    q = rng.standard_normal((tokens, 4, head_dim)).astype(storage)
    k = q[:, [3, 0]].copy()
    positions = np.array([0, 1, 2, 255, 4096, 17, 32767, 32766, 1000], np.int32)
    case = Case({"q": q, "k": k, "positions": positions}, {"rope_theta": 5e5, "rope_scale": 8.0})
    outputs = _run(webgpu_device, config, case)
    np.testing.assert_array_equal(_bits(outputs["k"]), _bits(outputs["q"][:, [3, 0]]))


@pytest.mark.webgpu
@pytest.mark.parametrize("head_dim,qo_heads,kv_heads,tokens", [
    (64, 5, 2, 7), (96, 7, 2, 13), (128, 3, 2, 5), (256, 1, 2, 3), (64, 1, 1, 1)])
def test_dispatch_covers_every_token_and_head(webgpu_device, head_dim, qo_heads, kv_heads, tokens):
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
    outputs = _run(webgpu_device, config, case)
    for expected in KERNEL.expected(config, case):
        out = outputs[expected.name]
        assert np.all(np.abs(out - expected.reference) <= expected.budget)
        assert np.all(out[..., 0] != case[expected.name][..., 0]), f"{expected.name}: a row was not rotated"


@pytest.mark.webgpu
@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("scaling", VARIANTS)
def test_gptj_kernel_is_the_neox_kernel_on_interleaved_dims(webgpu_device, head_dim, scaling):
    """GPT-J pairs (2i, 2i+1) with NeoX's (i, i + D/2) and the same frequency and arithmetic, so
    the GPT-J kernel on interleaved dims gives the NeoX kernel's output interleaved, bit for bit."""
    neox, gptj = (_config(head_dim=head_dim, dtype="f16", pairing=p, scaling=scaling) for p in ("neox", "gptj"))
    rng = np.random.default_rng(head_dim)
    q = rng.standard_normal((5, 4, head_dim)).astype(np.float16)
    k = rng.standard_normal((5, 2, head_dim)).astype(np.float16)
    half = head_dim // 2
    interleave = np.stack([np.arange(half), np.arange(half) + half], axis=-1).reshape(-1)
    positions = np.array([1, 4095, 32767, 100000, 131072], np.int32)
    params = {"rope_theta": 5e5, "rope_scale": 1.0}
    by_neox = _run(webgpu_device, neox, Case({"q": q, "k": k, "positions": positions}, params))
    by_gptj = _run(webgpu_device, gptj, Case({"q": q[..., interleave], "k": k[..., interleave], "positions": positions}, params))
    for name in ("q", "k"):
        np.testing.assert_array_equal(_bits(by_gptj[name]), _bits(by_neox[name][..., interleave]))


def _nudged(wgsl: str, constant: str, ulps: int) -> str:
    """`wgsl` with one f32 literal constant moved by `ulps` f32 ulps."""
    line = next(line for line in wgsl.splitlines() if line.startswith(f"const {constant}: f32 = "))
    value = np.float32(float(line.split("=")[1].strip(" ;")))
    moved = value + np.float32(ulps) * np.spacing(value)
    return wgsl.replace(line, f"const {constant}: f32 = {float(moved)!r};")


@pytest.mark.webgpu
@pytest.mark.parametrize("head_dim,scaling", [(64, LLAMA_3_2), (128, LLAMA_3_1)])
def test_either_branch_at_a_band_edge_is_within_budget(webgpu_device, head_dim, scaling):
    """Frequencies put on a band edge pass whichever side the kernel's f32 arithmetic puts them:
    kernels whose edge constants are moved 4 ulps either way (within the 7-digit literal error
    the budget allows) take different branches there, so their outputs differ, and every one is
    within budget of the reference."""
    config = _config(head_dim=head_dim, dtype="f32", qo_heads=2, kv_heads=1, scaling=scaling)
    llama3 = RopeVariant.from_config(config).llama3
    wgsl = KERNEL.wgsl(config)
    rng = np.random.default_rng(7)
    outputs = {}
    for side, wavelength in band_edges(llama3).items():
        constant = {"high": "HIGH_FREQ_WAVELENGTH", "low": "LOW_FREQ_WAVELENGTH"}[side]
        for pair in edge_pairs(head_dim, wavelength):
            theta = edge_theta(head_dim, pair, wavelength)  # on the edge to f32 rounding
            q = rng.standard_normal((4, 2, head_dim)).astype(np.float32)
            k = rng.standard_normal((4, 1, head_dim)).astype(np.float32)
            positions = np.array([8192, 65536, 131071, 131072], np.int32)
            case = Case({"q": q, "k": k, "positions": positions}, {"rope_theta": theta, "rope_scale": 1.0})
            expected = KERNEL.expected(config, case)
            for ulps in (-4, 0, 4):
                launched = KERNEL.launch(webgpu_device, _nudged(wgsl, constant, ulps), config, case)
                for e in expected:
                    metrics = compare(launched.outputs[e.name], e)
                    assert metrics.passed, f"{side} edge, pair {pair}, {ulps:+d} ulps: {metrics.message()}"
                outputs[side, pair, ulps] = launched.outputs["q"][..., pair]
    for side in ("high", "low"):
        flipped = [pair for (s, pair, ulps) in outputs if s == side and ulps == -4
                   and not np.array_equal(outputs[side, pair, -4], outputs[side, pair, 4])]
        assert flipped, f"no pair at the {side} edge changed branch between -4 and +4 ulps: the test shows nothing"
