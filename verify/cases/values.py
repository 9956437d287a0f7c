"""Value distributions for kernel inputs, drawn from a seed so big tensors stay cheap to draw.

Hypothesis draws the *kind* of data and a seed; numpy builds the tensor. Shrinking then moves
toward the simplest kind and small seeds, and a case file stores the arrays themselves.
"""

from __future__ import annotations

from functools import lru_cache
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


def make_values(rng: np.random.Generator, kind: str, shape, dtype) -> np.ndarray:
    """An array of `dtype` (exactly representable stored values) of the given kind.

    A nightly decode case holds tens of millions of values, and drawing them was most of what a
    case cost, so: for f16 storage, N(0,1) comes from a table of its 65536 quantiles indexed by a
    uniform 16-bit integer (`_normal_table`: f16 holds no finer distinction); for f32 from numpy's
    float32 generator (exact before the store); float64 only for f64 storage."""
    dtype = numpy_dtype(dtype)
    work = np.float64 if dtype == np.float64 else np.float32

    def normal(size):
        if dtype == np.float16:
            return _normal_table()[rng.integers(0, 1 << 16, size=size, dtype=np.uint16)]
        return rng.standard_normal(size, dtype=work)

    if kind == "normal":
        x = normal(shape)
    elif kind == "uniform":
        x = (rng.random(shape, dtype=work) * 2 - 1).astype(work)
    elif kind == "large":
        top = 12 if dtype == np.float16 else 40
        x = np.ldexp(normal(shape), rng.integers(4, top, size=shape, dtype=np.int8))
    elif kind == "tiny":
        bottom = -13 if dtype == np.float16 else -120
        x = np.ldexp(normal(shape).astype(np.float64), rng.integers(bottom, bottom + 6, size=shape, dtype=np.int16))
    elif kind == "spiky":
        x = normal(shape) * work(0.05)
        spikes = rng.random(shape, dtype=np.float32) < 0.01
        x[spikes] = normal(int(spikes.sum())) * work(30.0)
    else:
        raise ValueError(f"unknown value kind {kind!r}; expected one of {VALUE_KINDS}")
    return x.astype(dtype)


@lru_cache(maxsize=1)
def _normal_table() -> np.ndarray:
    """N(0,1) by inverse transform, for f16 storage: the 65536 quantiles (i + 1/2)/65536 of the
    normal distribution (float32), indexed by a uniform 16-bit integer. Rounded to f16 (whose
    values near 1 are 2^-10 apart) they are distributed as rounded N(0,1) draws are, tails
    truncated at 4.4 sigma, at a fraction of the cost (one integer and one table read a value)."""
    inverse = NormalDist().inv_cdf
    return np.array([inverse((i + 0.5) / 65536) for i in range(65536)], dtype=np.float32)
