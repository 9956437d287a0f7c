"""Strategies for rotary embedding: positions, bases and scales, and the rope kernel's cases.

A wrong frequency shows only where the angle pos * f is large, so positions reach the top of
the context a model is run with: 32k unscaled, 128k with Llama 3 scaling (Llama 3.1/3.2's
max_position_embeddings is 131072). Llama 3's scaling splits the frequencies into bands at the
wavelengths original/high and original/low; besides Llama 3's own base (5e5, which puts dims in
all three bands for head_dim 64 and 128), bases are drawn that put one pair's wavelength on a
band edge, to f32 rounding (a kernel may see it on either side) or one ulp of the base to
either side of it.
"""

from __future__ import annotations

import math
from functools import cache, lru_cache

import numpy as np
from hypothesis import strategies as st

from verify.cases.case import Case
from verify.cases.values import make_values, seeds, value_kinds
from verify.profiles import Profile, get_profile

#: Positions drawn on purpose: 0 (the identity), 1 (the smallest turn), powers of two, and the
#: top of a 32k context, where f32 angles are largest and least accurate.
ROPE_POSITIONS = (0, 1, 2, 3, 255, 256, 4095, 4096, 16383, 16384, 32766, 32767)
ROPE_MAX_POSITION = 32767
#: With Llama 3 scaling: Llama 3's original context (8192), and the top of a 128k context.
LLAMA3_MAX_POSITION = 131072
LLAMA3_POSITIONS = ROPE_POSITIONS + (8191, 8192, 65535, 65536, 131071, 131072)
#: Bases: Llama 2 (1e4), Llama 3 (5e5), Qwen-style (1e6).
ROPE_THETAS = (1e4, 5e5, 1e6)
#: Llama 3's base.
LLAMA3_THETA = 5e5
#: Band-edge bases are kept within what models use.
EDGE_THETA_RANGE = (1e3, 1e7)


def max_position(llama3) -> int:
    """The largest position drawn: 131072 with Llama 3 scaling, else 32767."""
    return LLAMA3_MAX_POSITION if llama3 is not None else ROPE_MAX_POSITION


def band_edges(llama3) -> dict[str, float]:
    """Llama 3's band edges as wavelengths: high (original/high: shorter waves are kept) and
    low (original/low: longer waves are divided by the factor)."""
    original = llama3.original_max_position_embeddings
    return {"high": original / llama3.high_freq_factor, "low": original / llama3.low_freq_factor}


def edge_theta(head_dim: int, pair: int, wavelength: float, ulps: int = 0) -> float:
    """The base, as the f32 the kernel reads, that puts pair `pair`'s wavelength 2 pi theta^(2 pair / D)
    on `wavelength`, moved by `ulps` f32 ulps: one ulp of theta moves the wavelength by about
    e ln(theta) ~ 6 f32 ulps, so -1 and +1 put it on either side of the edge, 0 on it to rounding."""
    if pair not in edge_pairs(head_dim, wavelength):
        raise ValueError(f"pair {pair} of head_dim {head_dim} needs a base outside {EDGE_THETA_RANGE} "
                         f"for wavelength {wavelength}")
    value = np.float32((wavelength / (2 * math.pi)) ** (head_dim / (2 * pair)))
    return float(value + np.float32(ulps) * np.spacing(value))


def edge_pairs(head_dim: int, wavelength: float) -> list[int]:
    """Pairs whose band-edge base lies in EDGE_THETA_RANGE (models' bases: 1e3 .. 1e7)."""
    low, high = (math.log(bound) for bound in EDGE_THETA_RANGE)
    log_ratio = math.log(wavelength / (2 * math.pi))
    return [i for i in range(1, head_dim // 2) if low <= head_dim / (2 * i) * log_ratio <= high]


# rope_bases' strategies, one object each (a case's draws from new strategy objects cost it their
# validation; verify.kernels.attention.cases): the same draws.
_MODEL_THETAS = st.sampled_from(ROPE_THETAS)
_EDGES = st.sampled_from(["", "high", "low"])
_EDGE_ULPS = st.sampled_from([0, -1, 1])


@cache
def _edge_pair_choices(head_dim: int, wavelength: float):
    return st.sampled_from(edge_pairs(head_dim, wavelength))


@st.composite
def rope_bases(draw, head_dim: int, llama3=None):
    """(rope_theta, band_edge): a model's base, or with Llama 3 scaling one that puts a pair on a
    band edge, at or one f32 ulp to either side; band_edge names it ("high 23 -1", "low 35 0")
    or is "" for a model's base."""
    if llama3 is None:
        return draw(_MODEL_THETAS), ""
    edge = draw(_EDGES)
    if not edge:
        return LLAMA3_THETA, ""
    wavelength = band_edges(llama3)[edge]
    pairs = edge_pairs(head_dim, wavelength)
    if not pairs:
        return LLAMA3_THETA, ""
    pair = draw(_edge_pair_choices(head_dim, wavelength))
    ulps = draw(_EDGE_ULPS)
    return edge_theta(head_dim, pair, wavelength, ulps), f"{edge} {pair} {ulps}"


#: rope_bases, one strategy object per (head_dim, llama3), for strategies that draw it in every case.
cached_rope_bases = lru_cache(maxsize=None)(rope_bases)


def rope_positions(llama3=None):
    """Mostly the special positions, else anything up to max_position(llama3)."""
    special = LLAMA3_POSITIONS if llama3 is not None else ROPE_POSITIONS
    return st.one_of(st.sampled_from(special), st.integers(0, max_position(llama3)))


def rope_scales(llama3=None):
    """Linear position scaling: shrink or stretch (0.5, 8) as position interpolation does; Llama 3
    models scale through their frequencies and run at 1."""
    return st.just(1.0) if llama3 is not None else st.sampled_from([1.0, 0.5, 8.0])


@st.composite
def rope_cases(draw, config: dict, profile: Profile | str, llama3=None):
    """q [T, Hq, D], k [T, Hkv, D] in the config's dtype, positions [T] i32, theta and scale.

    `llama3` (references.rope.Llama3Scaling) is the scaling the kernel was built with: positions
    then reach 128k and bases include band-edge ones (rope_bases).
    """
    tokens = draw(st.integers(1, get_profile(profile).max_tokens))
    positions = draw(st.lists(rope_positions(llama3), min_size=tokens, max_size=tokens))
    head_dim = config["head_dim"]
    rope_theta, band_edge = draw(cached_rope_bases(head_dim, llama3))
    rope_scale = draw(rope_scales(llama3))
    values = draw(value_kinds)
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    q = make_values(rng, values, (tokens, config["qo_heads"], head_dim), config["dtype"])
    k = make_values(rng, values, (tokens, config["kv_heads"], head_dim), config["dtype"])
    params = {"tokens": tokens, "rope_theta": rope_theta, "rope_scale": rope_scale, "values": values, "seed": seed}
    if band_edge:
        params["band_edge"] = band_edge
    return Case({"q": q, "k": k, "positions": np.array(positions, dtype=np.int32)}, params)
