"""Cases of ggml-webgpu's row ops: rows [rows, n] of f32 activations and a norm weight [n].

rms_norm_mul runs one workgroup of WG_SIZE (256) lanes per row, lane l summing the squares of
columns l, l + 256, ...: row lengths below, at and past multiples of 256 leave lanes without a
column or give some one more. Values: verify's value kinds (normal, uniform, large, tiny, spiky),
all-zero rows (mean 0: scale = 1/sqrt(eps)), and rows at f32's extremes whose squares stay finite
(|x| up to 2^56, so that n x² stays below f32's largest for any n verify draws), and rows of
subnormal-sized squares (|x| near 2^-70).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.cases import Case
from verify.cases.values import VALUE_KINDS, make_values
from verify.profiles import FamilySizes


@dataclass(frozen=True)
class RowSizes:
    """Largest rows and row length a case draws."""

    max_rows: int
    max_n: int


SIZES = FamilySizes("llamacpp.ops", quick=RowSizes(4, 1100), ci=RowSizes(8, 4200), nightly=RowSizes(16, 8300))
#: Kinds of row values: verify's, all-zero rows, and the two ends of f32's range.
ROW_KINDS = VALUE_KINDS + ("zero_rows", "huge", "minute")
#: The norm's epsilon values llama.cpp's models use (rms_norm_eps: 1e-5, 1e-6).
EPSILONS = (1e-5, 1e-6)


def row_values(rng: np.random.Generator, kind: str, shape: tuple[int, int]) -> np.ndarray:
    """f32 rows of `kind`: one of verify's value kinds; `zero_rows`, normal rows with a random half
    of them zero; `huge`, N(0, 1) times 2^40..2^56; `minute`, N(0, 1) times 2^-75..2^-60 (squares
    below f32's smallest normal, which may flush)."""
    if kind == "zero_rows":
        x = rng.standard_normal(shape).astype(np.float32)
        x[rng.random(shape[0]) < 0.5] = 0
        return x
    if kind in ("huge", "minute"):
        low, high = (40, 57) if kind == "huge" else (-75, -59)
        return np.ldexp(rng.standard_normal(shape), rng.integers(low, high, shape)).astype(np.float32)
    return make_values(rng, kind, shape, "f32")


def row_lengths(sizes: RowSizes, lanes: int = 256):
    """n with the lane tails of one workgroup: 1, below, at and past multiples of `lanes`."""
    corners = sorted({n for n in (1, 2, 255, 256, 257, 511, 512, 513, 1024, 1025, 4096, 4097, 8192)
                      if n <= sizes.max_n})
    return st.one_of(st.sampled_from(corners), st.integers(1, sizes.max_n))


def make_case(rows: int, n: int, kind: str, eps: float, seed: int) -> Case:
    rng = np.random.default_rng(seed)
    x = row_values(rng, kind, (rows, n))
    w = (1.0 + 0.25 * rng.standard_normal(n)).astype(np.float32)  # a norm weight: around 1, some negative tails
    return Case({"x": x, "w": w}, {"rows": rows, "n": n, "values": kind, "eps": eps, "seed": seed})


@st.composite
def rms_norm_mul_cases(draw, profile) -> Case:
    sizes = SIZES(profile)
    return make_case(draw(st.integers(1, sizes.max_rows)), draw(row_lengths(sizes)), draw(st.sampled_from(ROW_KINDS)),
                     draw(st.sampled_from(EPSILONS)), draw(st.integers(0, 2**32 - 1)))
