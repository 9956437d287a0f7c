"""Strategies for dp4a.quantize: activations A [(batch,) M, K] whose 128-value blocks are adversarial.

Hypothesis draws the shape, a value kind (verify.cases.values), how blocks mix and a seed; numpy
builds A, so the choice buffer stays small whatever M·K is. Each 128-value block is one of
BLOCK_KINDS, chosen per block, because the kernel must keep blocks independent: a block's
codes and scale may depend on nothing outside it (docs/ort-dp4a.md §4, §9.2, §9.3).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from hypothesis import strategies as st

from verify.budgets.roundoff import numpy_dtype, smallest_normal
from verify.cases.case import Case
from verify.cases.values import make_values, seeds, value_kinds
from verify.kernels.dp4a.sizes import SIZES
from verify.profiles import Profile
from verify.references.dp4a_quant import ACTIVATION_BLOCK

#: values: the drawn value kind as is. zero: all zeros (0/0 in ORT's shader). outlier: one value
#: 2^2..2^10 times the rest, so the others quantize to small codes. tie: block max a power of two
#: m, values m·t with 127·t at or next to k + 1/2 (t = ±1/2 is an exact tie). near_tie: a block max
#: that is no power of two and values whose 127·a/m lies within an ulp of k + 1/2, where rounding
#: a/m to f16 before the snorm rounding (a double rounding) can move the code. tiny_max: max |a|
#: near the smallest normal (subnormal values and scales, flush to zero). huge_max: max |a| from
#: 2^12 up to the dtype's largest finite value (past 2^14 in f16 WGSL bounds no division).
#: negative_max: the largest magnitude is a negative value.
BLOCK_KINDS = ("values", "zero", "outlier", "tie", "near_tie", "tiny_max", "huge_max", "negative_max")
#: plain: every block "values". mixed: a kind drawn per block. Otherwise every block is that kind.
BLOCK_MIXES = ("plain", "mixed") + BLOCK_KINDS[1:]


@dataclass(frozen=True)
class QuantizeLimits:
    """How big quantize cases get in a profile."""

    max_rows: int
    max_k: int
    max_batch: int
    #: Row counts drawn on purpose: a workgroup covers four blocks, so row counts around
    #: multiples of 4 (K = 128) and of the workgroup count leave partial workgroups.
    special_rows: tuple
    special_k: tuple


def quantize_limits(profile: Profile | str) -> QuantizeLimits:
    rows = {1, 2, 3, 4, 5, 7, 8, 9, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 299, 300}
    ks = {128, 256, 384, 512, 640, 1024, 1152, 2048, 4096}
    sizes = SIZES(profile).quantize
    max_rows, max_k, max_batch = sizes.max_rows, sizes.max_k, sizes.max_batch
    return QuantizeLimits(max_rows, max_k, max_batch, tuple(sorted(r for r in rows if r <= max_rows)),
                          tuple(sorted(k for k in ks if k <= max_k)))


def _with_max(rng, blocks: np.ndarray, block_max: np.ndarray) -> np.ndarray:
    """Put ±block_max (random sign) at a random position of each block: its max |a|."""
    n = blocks.shape[0]
    where = rng.integers(0, ACTIVATION_BLOCK, n)
    blocks[np.arange(n), where] = block_max * rng.choice([-1.0, 1.0], n)
    return blocks


def _scaled_to(blocks: np.ndarray, block_max: np.ndarray) -> np.ndarray:
    """Blocks rescaled so their max |a| is block_max (before rounding into the dtype)."""
    top = np.abs(blocks).max(axis=1, keepdims=True)
    return blocks / np.where(top > 0, top, 1.0) * block_max[:, None]


def _near_halves(rng, n: int, t_type) -> np.ndarray:
    """fl_T((k + 1/2) / 127) for random k in -127..126: 127·t lands next to a half-integer."""
    k = rng.integers(-127, 127, (n, ACTIVATION_BLOCK))
    return ((k + 0.5) / 127).astype(t_type).astype(np.float64)


def make_blocks(rng, kind: str, base: np.ndarray, dtype: str) -> np.ndarray:
    """Blocks [n, 128] of `kind` in float64, built from `base` (blocks of the drawn value kind)."""
    t_type = numpy_dtype(dtype)
    largest = float(np.finfo(t_type).max)
    n = base.shape[0]
    if kind == "values":
        return base
    if kind == "zero":
        return np.zeros_like(base)
    if kind == "outlier":
        small = rng.standard_normal(base.shape) * 2.0**-6
        return _with_max(rng, small, rng.uniform(1.0, 2.0, n) * 2.0 ** rng.integers(2, 11, n))
    if kind == "tie":
        m = 2.0 ** rng.integers(-6, 7, n)[:, None]
        t = _near_halves(rng, n, t_type)
        t = np.where(rng.random(t.shape) < 0.25, np.sign(t) * 0.5, t)
        return _with_max(rng, m * t, m[:, 0])
    if kind == "near_tie":
        m = (rng.uniform(1.0, 2.0, n) * 2.0 ** rng.integers(-4, 5, n)).astype(t_type).astype(np.float64)
        a = (m[:, None] * _near_halves(rng, n, t_type)).astype(t_type)
        step = rng.integers(-1, 2, a.shape)
        a = np.where(step > 0, np.nextafter(a, t_type(np.inf)), np.where(step < 0, np.nextafter(a, t_type(-np.inf)), a))
        return _with_max(rng, np.clip(a.astype(np.float64), -m[:, None], m[:, None]), m)
    if kind == "tiny_max":
        m = smallest_normal(dtype) * rng.uniform(1.0, 2.0, n) * 2.0 ** rng.integers(-3, 4, n)
        return _scaled_to(base, m)
    if kind == "huge_max":
        top = np.log2(largest)
        m = np.minimum(2.0 ** rng.uniform(12.0 if dtype == "f16" else 100.0, top, n), largest)
        return _scaled_to(base, m)
    if kind == "negative_max":
        blocks = base.copy()
        where = np.abs(blocks).argmax(axis=1)
        rows = np.arange(n)
        blocks[rows, where] = -np.minimum(2.0 * np.abs(blocks[rows, where]), largest)
        return blocks
    raise ValueError(f"unknown block kind {kind!r}; expected one of {BLOCK_KINDS}")


def make_activation(rng, shape, values: str, mix: str, dtype: str) -> np.ndarray:
    """A of `shape` in `dtype` (exact stored values), blocks of the kinds `mix` says."""
    t_type = numpy_dtype(dtype)
    drawn = make_values(rng, values, shape, dtype)
    if mix == "plain":  # every block "values": the drawn values themselves
        return drawn.astype(t_type, copy=False)
    base = drawn.astype(np.float64).reshape(-1, ACTIVATION_BLOCK)
    if mix != "mixed" and base.size:  # one kind for every block: the same draws as the loop below
        return make_blocks(rng, mix, base, dtype).reshape(shape).astype(t_type)
    kinds = rng.integers(0, len(BLOCK_KINDS), base.shape[0]) if mix == "mixed" else \
        np.full(base.shape[0], BLOCK_KINDS.index(mix))
    blocks = np.empty_like(base)
    for index, kind in enumerate(BLOCK_KINDS):
        chosen = kinds == index
        if chosen.any():
            blocks[chosen] = make_blocks(rng, kind, base[chosen], dtype)
    return blocks.reshape(shape).astype(t_type)


#: The mixes' strategy, built once (see _shape_draws).
_MIX = st.sampled_from(BLOCK_MIXES)


@lru_cache(maxsize=64)
def _shape_draws(limits: QuantizeLimits) -> tuple[st.SearchStrategy, st.SearchStrategy]:
    """The batch and K strategies of `limits`, built once and kept (a strategy built inside a
    draw is validated and labelled again on its first draw; see matmul_cases._ShapeDraws)."""
    return (st.integers(0, limits.max_batch),
            st.one_of(st.sampled_from(limits.special_k),
                      st.integers(1, limits.max_k // ACTIVATION_BLOCK).map(lambda b: b * ACTIVATION_BLOCK)))


@lru_cache(maxsize=256)
def _row_draws(limits: QuantizeLimits, row_limit: int) -> st.SearchStrategy:
    return st.one_of(st.sampled_from([r for r in limits.special_rows if r <= row_limit]), st.integers(1, row_limit))


@st.composite
def quantize_cases(draw, dtype: str, profile: Profile):
    """One A for dp4a.quantize: [M, K], or [batch, M, K] (rows flattened by the kernel)."""
    limits = quantize_limits(profile)
    batches, ks = _shape_draws(limits)
    batch = draw(batches)
    row_limit = max(1, limits.max_rows // max(batch, 1))
    rows = draw(_row_draws(limits, row_limit))
    k = draw(ks)
    mix = draw(_MIX)
    values = draw(value_kinds)
    seed = draw(seeds)
    shape = (batch, rows, k) if batch else (rows, k)
    a = make_activation(np.random.default_rng(seed), shape, values, mix, dtype)
    params = {"batch": batch, "rows": rows, "k": k, "mix": mix, "values": values, "seed": seed}
    return Case({"a": a}, params)
