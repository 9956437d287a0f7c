"""verify.budgets.rope: the Llama 3 frequency bound holds for adversarial f32 arithmetic of both
ways kernels write the scaling, on both sides of the band edges; pairings index their partners.

The kernels' arithmetic is replayed in float64 with every operation's result moved by an
error the WGSL spec allows it (an either-neighbour rounding 2u, a division 2.5 ULP, a literal
printed to 7 digits, f's own error), each at its extreme or half of it, chosen by Hypothesis;
band tests and clamps see the moved values, so frequencies at an edge take whichever branch
the errors push them to. The bound must cover every such run.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.references.rope import Llama3Scaling, rope_frequencies
from verify.budgets.rope import LITERAL_DIGITS, frequency_rel, llama3_frequency_rel, partner_dims, rope_error
from verify.budgets.wgsl_accuracy import division_rel, literal_rel, rounding_rel

R, DIV, C = rounding_rel("f32"), division_rel("f32"), literal_rel(LITERAL_DIGITS, "f32")
SCALINGS = [Llama3Scaling(8.0, 1.0, 4.0, 8192), Llama3Scaling(32.0, 1.0, 4.0, 8192),
            Llama3Scaling(16.0, 2.0, 3.0, 4096)]
#: An error's share of its bound: at either extreme, half, or none.
SHARES = st.sampled_from([-1.0, -0.5, 0.0, 0.5, 1.0])


class Moves:
    """Hands out the error of each operation in turn, as share * bound. A rounded operation whose
    exact result is representable returns it exactly (x * 1, x * 0, x + 0, 1 - 1): no error."""

    def __init__(self, shares):
        self.shares = list(shares)

    def __call__(self, value, bound):
        return value * (1.0 + self.shares.pop() * bound)

    def mul(self, a, b):
        return a * b if a in (0.0, 1.0) or b in (0.0, 1.0) else self(a * b, R)

    def add(self, a, b):
        return a + b if a == 0.0 or b == 0.0 else self(a + b, R)


def wavelength_form(f, freq_rel, llama3, move):
    """The models' form (our WGSL, rope_frequency_llama3.wgsl)."""
    lo, hi, factor, original = (llama3.low_freq_factor, llama3.high_freq_factor, llama3.factor,
                                llama3.original_max_position_embeddings)
    f = move(f, freq_rel)
    wavelength = move(move(2 * math.pi, C) / f, DIV)
    high_edge, low_edge = move(original / hi, C), move(original / lo, C)
    weight = move(move(move(move(original, C) / wavelength, DIV) - move(lo, C), R) / move(hi - lo, C), DIV)
    blended = move.add(move(move.mul(move.add(1.0, -weight), f) / move(factor, C), DIV), move.mul(weight, f))
    if wavelength < high_edge:
        return f
    if wavelength > low_edge:
        return move(f / move(factor, C), DIV)
    return blended


def clamp_form(f, freq_rel, llama3, move):
    """TVM's form (position_embedding.py rope_freq_llama3): s = clamp(alpha f - beta),
    fma(s, f, ((1 - s) f) (1/factor)) with its fma allowed two roundings."""
    lo, hi, factor, original = (llama3.low_freq_factor, llama3.high_freq_factor, llama3.factor,
                                llama3.original_max_position_embeddings)
    alpha, beta = original / (2 * math.pi) / (hi - lo), lo / (hi - lo)
    f = move(f, freq_rel)
    s = min(max(move(move(move(alpha, C) * f, R) - move(beta, C), R), 0.0), 1.0)
    rest = move.mul(move.mul(move.add(1.0, -s), f), move(1.0 / factor, C))
    return move.add(move.mul(s, f), rest)


#: Operations each form draws an error for (an upper count; unused ones are left over).
MOVES = 24


def frequencies_near_edges(llama3):
    """Frequencies on, just inside and just outside both band edges, and across all bands."""
    edges = [2 * math.pi * llama3.high_freq_factor / llama3.original_max_position_embeddings,
             2 * math.pi * llama3.low_freq_factor / llama3.original_max_position_embeddings]
    near = [edge * (1 + k * 2.0**-22) for edge in edges for k in (-64, -8, -1, 0, 1, 8, 64)]
    return st.one_of(st.sampled_from(near), st.floats(1e-6, 1.0))


@settings(max_examples=600, deadline=None)
@given(llama3=st.sampled_from(SCALINGS), form=st.sampled_from([wavelength_form, clamp_form]), data=st.data())
def test_llama3_frequency_bound_covers_either_branch_at_the_edges(llama3, form, data):
    f = data.draw(frequencies_near_edges(llama3))
    freq_rel = data.draw(st.sampled_from([0.0, 1e-6, 2e-5]))
    move = Moves(data.draw(st.lists(SHARES, min_size=MOVES, max_size=MOVES)))
    computed = form(f, freq_rel, llama3, move)
    exact = float(llama3.apply(f))
    bound = float(llama3_frequency_rel(f, freq_rel, llama3))
    assert abs(computed - exact) <= bound * exact, (computed, exact, abs(computed - exact) / exact, bound)


@pytest.mark.parametrize("llama3", SCALINGS)
def test_llama3_bound_reduces_to_the_unscaled_one_far_from_the_band(llama3):
    """Far above the interpolated band the scaled frequency is f itself, far below f/factor in
    one operation: their error is f's (plus that operation), not the band's amplified one."""
    freq_rel = 1e-5
    high, low = llama3_frequency_rel(np.array([1.0, 1e-6]), freq_rel, llama3)
    assert high == freq_rel * (1 + freq_rel)
    assert low <= (freq_rel + DIV + C) * 1.001
    band = 2 * math.pi * (llama3.low_freq_factor + 0.01) / llama3.original_max_position_embeddings
    assert llama3_frequency_rel(band, freq_rel, llama3) > 2 * low


def test_llama3_amplifies_frequency_error_most_at_the_low_edge():
    """d ln f'/d ln f = 1 + (s + beta)(F - 1)/(1 + s(F - 1)): 1 + beta(F - 1) at the low edge, where
    the bound's coefficient of f's error must reach it (11.3 for Llama 3.2)."""
    llama3 = SCALINGS[1]
    low_edge = 2 * math.pi * llama3.low_freq_factor / llama3.original_max_position_embeddings
    freq_rel = 1e-5
    amplification = (llama3_frequency_rel(low_edge, freq_rel, llama3) - llama3_frequency_rel(low_edge, 0.0, llama3))
    beta = llama3.low_freq_factor / (llama3.high_freq_factor - llama3.low_freq_factor)
    assert amplification / freq_rel >= 1 + beta * (llama3.factor - 1)


def test_unscaled_frequency_error_grows_with_the_exponent():
    """pow(theta, -e) = exp2(-e log2 theta): exp2's (3 + 2|y|) ULP and log2's 3 ULP grow with e."""
    rel = frequency_rel(128, 5e5)
    assert rel[0] < rel[63] and np.all(np.diff(rel[:64]) > 0) and np.array_equal(rel[:64], rel[64:])
    assert np.array_equal(frequency_rel(128, 5e5, "gptj")[0::2], rel[:64])


def test_pairings_index_their_partners():
    assert list(partner_dims(8, "neox")) == [4, 5, 6, 7, 0, 1, 2, 3]
    assert list(partner_dims(8, "gptj")) == [1, 0, 3, 2, 5, 4, 7, 6]


def test_rope_error_weighs_each_dim_with_its_own_partner():
    """GPT-J's bound on dim d carries |x_d| + |x_(d xor 1)|, NeoX's |x_d| + |x_(d +- D/2)|."""
    x = np.array([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    angles, rel = np.zeros(8), np.zeros(8)
    neox, gptj = rope_error(x, angles, rel, "neox"), rope_error(x, angles, rel, "gptj")
    assert neox[4] == neox[0] and neox[1] < neox[0]
    assert gptj[1] == gptj[0] and gptj[4] < gptj[0]


def test_model_frequencies_have_a_finite_bound():
    for llama3 in SCALINGS:
        f = rope_frequencies(128, 5e5)
        assert np.all(np.isfinite(llama3_frequency_rel(f, frequency_rel(128, 5e5), llama3)))
