"""Value distributions for kernel inputs, drawn from a seed so big tensors stay cheap to draw.

Hypothesis draws the *kind* of data and a seed; numpy builds the tensor. Shrinking then moves
toward the simplest kind and small seeds, and a case file stores the arrays themselves.
"""

from __future__ import annotations

from functools import cache, lru_cache
from statistics import NormalDist

import numpy as np
from hypothesis import strategies as st

from verify.budgets.roundoff import numpy_dtype

#: normal: N(0,1). uniform: U(-1,1) as TVM's tests use. large: N(0,1)·2^k up to the dtype's
#: comfortable range (stress relative-error handling). tiny: values near the bottom of the
#: dtype's normal range (stress flush-to-zero and underflow). spiky: mostly small with rare
#: outliers (peaked attention / outlier-dominated quantization blocks).
VALUE_KINDS = ("normal", "uniform", "large", "tiny", "spiky")

seeds = st.integers(min_value=0, max_value=2**32 - 1)

#: Largest workgroup count along x a launch may use before the grid wraps into another
#: dimension, drawn per case: None is the kernel's own limit (tens of thousands, which small
#: cases never reach); the small ones make small cases take the wrapped path too.
GRID_LIMITS = (None, 2, 3)


def with_grid_limit(cases, limits=GRID_LIMITS):
    """`cases` with a drawn `grid_limit` parameter (absent for None) for the launcher to honour."""
    return st.tuples(cases, st.sampled_from(limits)).map(
        lambda pair: pair[0] if pair[1] is None else pair[0].replace(grid_limit=pair[1]))


def wrapped_grid(groups: int, limit: int) -> tuple[int, int]:
    """(x, y) workgroups covering `groups` with at most `limit` along x."""
    return min(groups, limit), -(-groups // limit)
value_kinds = st.sampled_from(VALUE_KINDS)


def make_values(rng: np.random.Generator, kind: str, shape: int | tuple[int, ...], dtype) -> np.ndarray:
    """An array of `dtype` (exactly representable stored values) of the given kind.

    A nightly decode case holds tens of millions of values, and drawing them was most of what a
    case cost, so for f16 storage every kind is one uniform integer and one table read per value
    (`_f16_table`): N(0,1) is the table of its 65536 quantiles (f16 holds no finer distinction),
    large and tiny those quantiles times each of the kind's powers of two, spiky a 1% share of
    the positions redrawn from the quantiles times 30; each table entry is the value the float32
    computation rounds to. f32 storage draws from numpy's float32 generator (exact before the
    store); float64 only for f64 storage."""
    dtype = numpy_dtype(dtype)
    if dtype == np.float16 and kind in VALUE_KINDS:
        return _f16_values(rng, kind, shape)
    work = np.float64 if dtype == np.float64 else np.float32

    def normal(size):
        return rng.standard_normal(size, dtype=work)

    if kind == "normal":
        x = normal(shape)
    elif kind == "uniform":
        x = (rng.random(shape, dtype=work) * 2 - 1).astype(work)
    elif kind == "large":
        x = np.ldexp(normal(shape), rng.integers(*_EXPONENTS["large"][1], size=shape, dtype=np.int8))
    elif kind == "tiny":
        x = np.ldexp(normal(shape), rng.integers(*_EXPONENTS["tiny"][1], size=shape, dtype=np.int16))
    elif kind == "spiky":
        x = normal(shape) * work(0.05)
        spikes = rng.random(shape, dtype=np.float32) < SPIKE_SHARE
        x[spikes] = normal(int(spikes.sum())) * work(30.0)
    else:
        raise ValueError(f"unknown value kind {kind!r}; expected one of {VALUE_KINDS}")
    return x.astype(dtype)


#: The powers of two of "large" and "tiny" ([low, high) exponents), for f16 and for f32 storage:
#: large up to the dtype's comfortable range, tiny at the bottom of its normal range.
_EXPONENTS: dict[str, tuple[tuple[int, int], tuple[int, int]]] = {"large": ((4, 12), (4, 40)),
                                                                  "tiny": ((-13, -7), (-120, -114))}
#: The share of a spiky array's values that are outliers (30 sigma instead of 0.05).
SPIKE_SHARE = 0.01


def _f16_values(rng: np.random.Generator, kind: str, shape) -> np.ndarray:
    """make_values for f16 storage: one integer and one table read per value (see _f16_table)."""
    table = _f16_table(kind)
    index = np.uint16 if table.size <= 1 << 16 else np.uint32
    x = np.take(table, rng.integers(0, table.size, size=shape, dtype=index))  # take: table[...] less its overhead
    if kind == "spiky" and x.size:
        flat = x.reshape(-1)
        where = rng.integers(0, flat.size, size=rng.binomial(flat.size, SPIKE_SHARE))
        flat[where] = _f16_table("spike")[rng.integers(0, 1 << 16, size=where.size, dtype=np.uint16)]
    return x


@cache
def _f16_table(kind: str) -> np.ndarray:
    """The f16 values of a kind, equally likely: a table of 65536 entries per power of two.

    Each entry is the float32 computation of the f32 path on the quantile in place of a normal
    draw, rounded once to f16 (normal: the quantile; large, tiny: times 2^e, exact in float32
    and float64; spiky: times 0.05, its outliers ("spike") times 30; uniform: the midpoints of
    65536 equal steps of (-1, 1), 2^-15 apart, finer than f16 near +-1)."""
    quantiles = _normal_table()
    if kind == "normal":
        values = quantiles
    elif kind == "uniform":
        values = (np.arange(1 << 16) + 0.5) / (1 << 15) - 1.0
    elif kind in _EXPONENTS:
        low, high = _EXPONENTS[kind][0]
        values = np.ldexp(quantiles.astype(np.float64)[None, :], np.arange(low, high)[:, None])
    elif kind == "spiky":
        values = quantiles * np.float32(0.05)
    elif kind == "spike":
        values = quantiles * np.float32(30.0)
    else:
        raise ValueError(f"unknown value kind {kind!r}; expected one of {VALUE_KINDS}")
    table = np.asarray(values).astype(np.float16).reshape(-1)
    table.flags.writeable = False
    return table


@lru_cache(maxsize=1)
def _normal_table() -> np.ndarray:
    """N(0,1) by inverse transform, for f16 storage: the 65536 quantiles (i + 1/2)/65536 of the
    normal distribution (float32), indexed by a uniform 16-bit integer. Rounded to f16 (whose
    values near 1 are 2^-10 apart) they are distributed as rounded N(0,1) draws are, tails
    truncated at 4.4 sigma, at a fraction of the cost (one integer and one table read a value)."""
    inverse = NormalDist().inv_cdf
    return np.array([inverse((i + 0.5) / 65536) for i in range(65536)], dtype=np.float32)
