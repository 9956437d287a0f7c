"""references.rope: agreement with mpmath within derived bounds, and the geometry of rotations."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from reference_bounds import ETA, U64, assert_within, frequency_ulps, partner_index, rope_bound

from verify.references import rope
from verify.references.mp import rope as mp_rope

LLAMA3 = [
    None,
    rope.Llama3Scaling(8.0, 1.0, 4.0, 8192),
    rope.Llama3Scaling(32.0, 1.0, 32.0, 64),
    rope.Llama3Scaling(4.0, 2.0, 2.0, 1024),  # high == low: TVM's step form
]
ROTATE = {"neox": (rope.rotate_neox, mp_rope.rotate_neox), "gptj": (rope.rotate_gptj, mp_rope.rotate_gptj)}


@st.composite
def rope_settings(draw):
    """head_dim (powers of two and not, where the exponent k/D rounds), theta, scale, llama3."""
    return dict(
        head_dim=draw(st.sampled_from([2, 4, 6, 8, 12, 16])),
        rope_theta=draw(st.sampled_from([10.0, 1e4, 5e5])),
        rope_scale=draw(st.sampled_from([1.0, 0.25, 3.0])),
        llama3=draw(st.sampled_from(LLAMA3)),
        pairing=draw(st.sampled_from(["neox", "gptj"])),
    )


def vectors(head_dim, rows=st.integers(1, 3)):
    return rows.flatmap(lambda r: arrays(np.float64, (r, head_dim), elements=st.floats(-1e3, 1e3)))


def rotate(x, positions, config):
    return ROTATE[config["pairing"]][0](x, positions, config["rope_theta"], config["rope_scale"], config["llama3"])


def bound(x, positions, config):
    freq = rope.rope_frequencies(config["head_dim"], config["rope_theta"], config["llama3"], config["pairing"])
    kappa = frequency_ulps(config["rope_theta"], config["llama3"])
    return rope_bound(x, positions, config["rope_scale"], freq, config["pairing"], kappa)


def dot_bound(q, k, e_q, e_k):
    """|fl(q^ . k^) - q . k| <= sum_d (e_q|k^| + |q^|e_k + e_q e_k) + gamma_D sum_d |q^ k^| + 2D ETA
    (Higham §3.1, with an underflow term per product and sum)."""
    dim = q.shape[-1]
    own = (U64 * dim / (1 - U64 * dim)) * np.sum(np.abs(q * k), axis=-1) + 2 * dim * ETA
    return np.sum(e_q * np.abs(k) + np.abs(q) * e_k + e_q * e_k, axis=-1) + own


@settings(max_examples=60)
@given(config=rope_settings())
def test_rope_frequencies_match_mpmath(config):
    """Each frequency is within kappa*u relative (`frequency_ulps`), plus half an ulp for the
    rounding of the mpmath value itself."""
    args = (config["head_dim"], config["rope_theta"], config["llama3"], config["pairing"])
    freq = rope.rope_frequencies(*args)
    exact = mp_rope.rope_frequencies(*args).astype(np.float64)
    kappa = frequency_ulps(config["rope_theta"], config["llama3"])
    assert_within(freq, exact, (kappa + 1) * U64 * exact, "frequencies")


@settings(max_examples=60)
@given(config=rope_settings(), data=st.data())
def test_rotation_matches_mpmath(config, data):
    x = data.draw(vectors(config["head_dim"]))
    positions = data.draw(arrays(np.int64, x.shape[:-1], elements=st.integers(0, 100_000)))
    out = rotate(x, positions, config)
    mp_rotate = ROTATE[config["pairing"]][1]
    exact = mp_rotate(x, positions, config["rope_theta"], config["rope_scale"], config["llama3"]).astype(np.float64)
    assert_within(out, exact, bound(x, positions, config) + U64 * np.abs(exact), "rotated")


@settings(max_examples=60)
@given(config=rope_settings(), data=st.data())
def test_rotation_preserves_the_norm_of_every_pair(config, data):
    x = data.draw(vectors(config["head_dim"]))
    positions = data.draw(arrays(np.int64, x.shape[:-1], elements=st.integers(0, 100_000)))
    out = rotate(x, positions, config)
    partner = partner_index(config["head_dim"], config["pairing"])
    err = bound(x, positions, config)
    before, after = np.hypot(x, x[..., partner]), np.hypot(out, out[..., partner])
    assert_within(after, before, err + err[..., partner] + 4 * U64 * before + 4 * ETA, "pair norms")


@settings(max_examples=60)
@given(config=rope_settings(), data=st.data())
def test_rotated_dot_product_depends_only_on_the_relative_position(config, data):
    """q(m).k(n) = q(m+s).k(n+s): both sides are within their `dot_bound` of the exact value."""
    q, k = (data.draw(vectors(config["head_dim"], rows=st.just(1)))[0] for _ in range(2))
    m, n, shift = (data.draw(st.integers(0, 5000)) for _ in range(3))
    sides = []
    for a, b in ((m, n), (m + shift, n + shift)):
        q_rot, k_rot = rotate(q, a, config), rotate(k, b, config)
        sides.append((q_rot @ k_rot, dot_bound(q_rot, k_rot, bound(q, a, config), bound(k, b, config))))
    (left, left_err), (right, right_err) = sides
    assert_within(left, right, left_err + right_err, f"q({m}).k({n}) vs shifted by {shift}")


@settings(max_examples=40)
@given(config=rope_settings(), data=st.data())
def test_position_zero_is_the_identity(config, data):
    x = data.draw(vectors(config["head_dim"]))
    assert np.array_equal(rotate(x, np.zeros(x.shape[:-1], np.int64), config), x)


@settings(max_examples=40)
@given(config=rope_settings(), data=st.data())
def test_gptj_is_neox_on_interleaved_dims_bit_for_bit(config, data):
    """GPT-J pairs (2i, 2i+1) with NeoX's (i, i + D/2) and the same frequency, so permuting the
    dims turns one rotation into the other exactly."""
    x = data.draw(vectors(config["head_dim"]))
    positions = data.draw(arrays(np.int64, x.shape[:-1], elements=st.integers(0, 100_000)))
    half = config["head_dim"] // 2
    interleave = np.stack([np.arange(half), np.arange(half) + half], axis=-1).reshape(-1)  # gptj dim -> neox dim
    args = (config["rope_theta"], config["rope_scale"], config["llama3"])
    neox = rope.rotate_neox(x, positions, *args)
    gptj = rope.rotate_gptj(x[..., interleave], positions, *args)
    assert np.array_equal(gptj, neox[..., interleave])


def test_frequencies_follow_tvm_exponents():
    """NeoX: f_d = theta**(-(2d mod D)/D), so d and d + D/2 share one; GPT-J: theta**(-2(d//2)/D)."""
    assert np.allclose(rope.rope_frequencies(4, 1e4), [1.0, 1e-2, 1.0, 1e-2], rtol=1e-15)
    assert np.allclose(rope.rope_frequencies(4, 1e4, pairing="gptj"), [1.0, 1.0, 1e-2, 1e-2], rtol=1e-15)
    assert np.allclose(rope.rope_frequencies(6, 1e3, pairing="neox")[:3], [1.0, 1e-1, 1e-2], rtol=1e-15)


def test_llama3_keeps_high_frequencies_divides_low_ones_and_blends_between():
    """Wavelength 2 pi/f below original_max/high is kept, above original_max/low divided by
    factor, and in between f' moves monotonically from f/factor to f (HF llama3, TVM rope_freq_llama3)."""
    scaling = rope.Llama3Scaling(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192)
    wavelength = np.geomspace(100, 100_000, 400)
    f = 2 * np.pi / wavelength
    scaled = scaling.apply(f)
    short, long = wavelength < 8192 / 4, wavelength > 8192 / 1
    assert np.array_equal(scaled[short], f[short])
    assert np.allclose(scaled[long], f[long] / 8, rtol=1e-15)
    middle = ~short & ~long
    ratio = scaled[middle] / f[middle]
    assert np.all((ratio > 1 / 8) & (ratio < 1)) and np.all(np.diff(ratio) < 0)
    step = rope.Llama3Scaling(factor=8.0, low_freq_factor=2.0, high_freq_factor=2.0, original_max_position_embeddings=8192)
    assert np.array_equal(step.apply(f), np.where(wavelength > 8192 / 2, f / 8, f))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: rope.rope_frequencies(5), "head_dim must be a positive even integer"),
        (lambda: rope.rope_frequencies(0), "head_dim must be a positive even integer"),
        (lambda: rope.rope_frequencies(4, rope_theta=0.0), "rope_theta must be finite and > 0"),
        (lambda: rope.rope_frequencies(4, pairing="halves"), "pairing must be 'neox' or 'gptj'"),
        (lambda: rope.rotate_neox(np.ones((2, 3)), [0, 1]), "head_dim must be a positive even integer"),
        (lambda: rope.rotate_neox(np.ones((2, 4)), [0.5, 1.0]), "positions must be an integer array"),
        (lambda: rope.rotate_gptj(np.ones((2, 4)), [0, 1, 2]), "do not broadcast"),
        (lambda: rope.rotate_neox(np.ones((2, 4)), [0, 1], rope_scale=np.nan), "rope_scale must be finite"),
        (lambda: rope.Llama3Scaling(0.0, 1.0, 4.0, 8192), "factor must be finite and > 0"),
        (lambda: rope.Llama3Scaling(8.0, 4.0, 1.0, 8192), "high_freq_factor=1.0 must be >= low_freq_factor=4.0"),
    ],
)
def test_bad_inputs_raise_value_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


#: Llama 3.1 (factor 8) and Llama 3.2 1B/3B (factor 32) `rope_scaling` blocks.
MODEL_SCALINGS = [rope.Llama3Scaling(8.0, 1.0, 4.0, 8192), rope.Llama3Scaling(32.0, 1.0, 4.0, 8192)]


def _edge_theta(head_dim, pair, wavelength):
    """A base putting pair `pair`'s wavelength 2 pi theta^(2 pair/D) on `wavelength` (float64)."""
    return (wavelength / (2 * np.pi)) ** (head_dim / (2 * pair))


@settings(max_examples=12, deadline=None)
@given(head_dim=st.sampled_from([64, 128]), llama3=st.sampled_from(MODEL_SCALINGS),
       pairing=st.sampled_from(["neox", "gptj"]), edge=st.sampled_from([None, 2048.0, 8192.0]), data=st.data())
def test_llama3_rotation_at_model_shapes_matches_mpmath_up_to_128k(head_dim, llama3, pairing, edge, data):
    """The float64 rotation with the models' scaling agrees with mpmath at positions up to 131072,
    for Llama 3's base and for bases that put a pair's wavelength on a band edge (where the
    float64 frequency may fall on either side of the clamp: the map is continuous, so the bound
    holds on both)."""
    theta = 5e5
    if edge is not None:
        pair = data.draw(st.integers(head_dim // 5, head_dim // 2 - 1))
        theta = _edge_theta(head_dim, pair, edge)
    config = dict(head_dim=head_dim, rope_theta=theta, rope_scale=1.0, llama3=llama3, pairing=pairing)
    x = data.draw(arrays(np.float64, (2, head_dim), elements=st.floats(-4.0, 4.0)))
    positions = np.array([data.draw(st.integers(0, 131072)), 131072])
    exact = ROTATE[pairing][1](x, positions, theta, 1.0, llama3).astype(np.float64)
    assert_within(rotate(x, positions, config), exact, bound(x, positions, config) + U64 * np.abs(exact), "rotated")


@pytest.mark.parametrize("llama3", MODEL_SCALINGS)
@pytest.mark.parametrize("head_dim", [64, 128])
def test_llama3_model_frequencies_span_all_three_bands(head_dim, llama3):
    """At Llama 3's base 5e5 a model's head has kept, interpolated and stretched frequencies, so
    cases at that base exercise every branch of the scaling."""
    f = rope.rope_frequencies(head_dim, 5e5)
    scaled = rope.rope_frequencies(head_dim, 5e5, llama3)
    wavelength = 2 * np.pi / f
    kept = wavelength < 8192 / 4
    stretched = wavelength > 8192
    assert kept.any() and stretched.any() and (~kept & ~stretched).any()
    assert np.array_equal(scaled[kept], f[kept]) and np.allclose(scaled[stretched], f[stretched] / llama3.factor)
