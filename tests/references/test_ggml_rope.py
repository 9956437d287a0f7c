"""references.ggml_rope: agreement with its mpmath twin (ggml's ROPE, normal and NeoX, with YaRN,
frequency factors and a moved window), and the properties a rotation must have."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.budgets.roundoff import unit_roundoff
from verify.references import ggml_rope as ref
from verify.references.mp import ggml_rope as mp


@st.composite
def problems(draw):
    """1-2 tokens x 1-2 heads of a head dim up to 24, a window of n_dims at n_offs, a mode,
    positions up to 5000, YaRN's parameters (ext_factor 0 or not) and maybe frequency factors."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_dims = 2 * draw(st.integers(1, 8))
    n_offs = 2 * draw(st.integers(0, 4))
    ne0 = n_offs + n_dims + 2 * draw(st.integers(0, 2))
    tokens, heads = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    x = rng.standard_normal((tokens, heads, ne0))
    positions = rng.integers(0, 5000, tokens)
    base = draw(st.sampled_from([10000.0, 500000.0, 1e6]))
    ext = draw(st.sampled_from([0.0, 0.7465, 1.0]))
    params = {"theta_scale": ref.theta_scale(base, n_dims), "freq_scale": draw(st.sampled_from([1.0, 0.25, 0.702])),
              "ext_factor": ext, "attn_factor": draw(st.sampled_from([1.0, 1.4245])),
              "corr_dims": ref.yarn_corr_dims(n_dims, draw(st.sampled_from([512, 4096])), base, 32.0, 1.0),
              "freq_factors": rng.uniform(0.9, 4.0, n_dims // 2) if draw(st.booleans()) else None,
              "n_offs": n_offs}
    return x, positions, n_dims, draw(st.sampled_from([ref.ROPE_TYPE_NORMAL, ref.ROPE_TYPE_NEOX])), params


@settings(max_examples=40, deadline=None)
@given(problems())
def test_rope_matches_its_mpmath_twin(problem):
    """Rotated channels within 64 u_64 (1 + |theta|) mscale (|x_a| + |x_b|) of the twin's 50
    digits (the angle's power, product and quotient err relatively by a few u_64, which cos and
    sin pass on as |theta| times that; the two products and the sum a few u_64 more); copied
    channels exactly equal."""
    x, positions, n_dims, mode, params = problem
    got = ref.rope(x, positions, n_dims, mode, **params)
    twin = np.array(mp.rope(x, positions, n_dims, mode, **params).tolist(), dtype=np.float64)
    theta = ref.rope_angles(positions, n_dims, params["theta_scale"], params["freq_scale"], params["ext_factor"],
                            params["corr_dims"], params["freq_factors"])
    mscale = ref.yarn_mscale(params["freq_scale"], params["ext_factor"], params["attn_factor"])
    a, b = ref.pair_channels(n_dims, mode, params["n_offs"])
    scale = (64 * unit_roundoff("f64") * (1 + np.abs(theta)) * mscale)[:, None, :]
    scale = scale * (np.abs(x[..., a]) + np.abs(x[..., b]))
    for channels in (a, b):
        assert np.all(np.abs(got[..., channels] - twin[..., channels]) <= scale)
    copied = np.setdiff1d(np.arange(x.shape[-1]), np.concatenate([a, b]))
    assert np.array_equal(got[..., copied], x[..., copied])


def test_yarn_corr_dims_match_the_twin_and_llamas_numbers():
    """n_dims 128, n_ctx_orig 4096, base 10000: corr_dim(32) = 20.9 and corr_dim(1) = 45.0, so
    the ramp runs from pair 20 to pair 46; n_ctx_orig 32 puts corr_dim(32) below 0 (clamped)."""
    assert ref.yarn_corr_dims(128, 4096, 10000.0, 32.0, 1.0) == (20.0, 46.0)
    for args in ((128, 4096, 10000.0, 32.0, 1.0), (64, 8192, 500000.0, 32.0, 1.0), (32, 32, 10000.0, 32.0, 1.0)):
        assert ref.yarn_corr_dims(*args) == mp.yarn_corr_dims(*args)
    assert ref.yarn_corr_dims(32, 32, 10000.0, 32.0, 1.0)[0] == 0.0


def test_a_rotation_keeps_each_pairs_norm_and_position_zero_is_the_identity():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 2, 16))
    ts = ref.theta_scale(10000.0, 12)
    for mode in (ref.ROPE_TYPE_NORMAL, ref.ROPE_TYPE_NEOX):
        y = ref.rope(x, [0, 7, 4000], 12, mode, theta_scale=ts, n_offs=2)
        a, b = ref.pair_channels(12, mode, 2)
        assert np.allclose(np.hypot(y[..., a], y[..., b]), np.hypot(x[..., a], x[..., b]), rtol=1e-14)
        assert np.array_equal(y[0], x[0])  # theta = 0: cos 1, sin 0
        assert np.array_equal(y[..., :2], x[..., :2]) and np.array_equal(y[..., 14:], x[..., 14:])


def test_neox_is_normal_rope_of_the_interleaved_channels():
    """NeoX pairs channel k with k + n/2; the normal mode pairs 2k with 2k + 1: interleaving the
    two halves turns one into the other, with the same angle for pair k."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 8))
    ts = ref.theta_scale(10000.0, 8)
    order = np.array([0, 4, 1, 5, 2, 6, 3, 7])  # interleaved position j holds NeoX channel order[j]
    neox = ref.rope(x, [5, 900], 8, ref.ROPE_TYPE_NEOX, theta_scale=ts)
    normal = ref.rope(x[..., order], [5, 900], 8, ref.ROPE_TYPE_NORMAL, theta_scale=ts)
    assert np.allclose(neox[..., order], normal, rtol=0, atol=1e-15)


def test_yarn_with_no_extrapolation_is_plain_interpolation():
    """ext_factor 0: theta = freq_scale p theta_scale^k, mscale = attn_factor."""
    theta = ref.rope_angles([10], 4, 0.5, freq_scale=0.25)
    assert np.array_equal(theta, [[2.5, 1.25]])
    assert ref.yarn_mscale(0.25, 0.0, 1.5) == 1.5
    # full extrapolation below the ramp (ramp 1, mix = ext 1): theta = theta_extrap
    assert np.array_equal(ref.rope_angles([10], 4, 0.5, 0.25, 1.0, (4.0, 8.0)), [[10.0, 5.0]])


def test_modes_the_reference_does_not_implement_are_refused():
    with pytest.raises(ValueError, match="normal \\(0\\) and NeoX \\(2\\)"):
        ref.rope(np.zeros((1, 1, 4)), [1], 4, 8, theta_scale=0.1)
