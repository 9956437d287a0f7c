"""Value distributions for kernel inputs, drawn from a seed so big tensors stay cheap to draw.

Hypothesis draws the *kind* of data and a seed; numpy builds the tensor. Shrinking then moves
toward the simplest kind and small seeds, and a case file stores the arrays themselves.
"""

from __future__ import annotations

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
    """An array of `dtype` (exactly representable stored values) of the given kind."""
    dtype = numpy_dtype(dtype)
    if kind == "normal":
        x = rng.standard_normal(shape)
    elif kind == "uniform":
        x = rng.uniform(-1.0, 1.0, shape)
    elif kind == "large":
        top = 12 if dtype == np.float16 else 40
        x = rng.standard_normal(shape) * 2.0 ** rng.integers(4, top, size=shape)
    elif kind == "tiny":
        bottom = -13 if dtype == np.float16 else -120
        x = rng.standard_normal(shape) * 2.0 ** rng.integers(bottom, bottom + 6, size=shape)
    elif kind == "spiky":
        x = rng.standard_normal(shape) * 0.05
        spikes = rng.random(shape) < 0.01
        x = np.where(spikes, rng.standard_normal(shape) * 30.0, x)
    else:
        raise ValueError(f"unknown value kind {kind!r}; expected one of {VALUE_KINDS}")
    return x.astype(dtype)
