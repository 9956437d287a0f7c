"""Cases of ggml-webgpu's float and dequantizing mat-vec (`llamacpp.quant.mul_mat_vec`).

The program's shape decides where a bug would hide: 256 threads walk K, thread t taking the
vec4s (VEC), values (SCALAR) or blocks (4 threads a block) t, t + 256, ..., so row lengths around
multiples of the workgroup's step (1024 values as vec4, 256 scalar, 64 blocks) leave threads with
one term more or fewer; a workgroup writes 4 rows, so M around multiples of 4 leaves rows out.
VEC needs K % 4 == 0 (ggml-webgpu vectorizes every f32/f16 weight whose rows are: S L1972-1975),
so SCALAR cases take K % 4 != 0, the vec4 tails ggml sends there. Tensors are laid as ggml views:
an element (block) offset before each and rows padded past K (the row strides stride_01 and
stride_11 differ from K), multiples of 4 on the VEC path (whose vec4 loads divide offsets and
strides by 4). Values: verify's value kinds, all-positive rows (no cancellation, so a lost
partial sum shows), constant rows (every lane's sums round alike, so an f16-rounded partial sum
shows), whole weight rows of zeros, and extremes (f32 weights near 2^60
against activations near 2^-60, f16 weights at 65504), each scaled so Σ|w x| stays inside f32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.cases import Case
from verify.cases.values import VALUE_KINDS, make_values
from verify.profiles import FamilySizes
from verify.references import ggml_quants as gq
from verify.references.ggml_mul_mat import weight_values as decoded
from verify.sources.llamacpp.quant.cases import raw_weight_blocks


@dataclass(frozen=True)
class MatVecSizes:
    """Largest K (values a row) and M (weight rows) a case draws."""

    max_k: int
    max_m: int


SIZES = FamilySizes("llamacpp.quant.mul_mat_vec", quick=MatVecSizes(2100, 12), ci=MatVecSizes(4200, 24),
                    nightly=MatVecSizes(9000, 70))

#: Value kinds: verify's, and the mat-vec's own corners.
KINDS = VALUE_KINDS + ("positive", "zero_rows", "extreme", "constant")
NUMPY = {"f32": np.float32, "f16": np.float16}
F32_HEADROOM = 2.0**120  # Σ|w x| stays below this, far inside f32's 2^128


def k_values(weight: str, vectorized: bool, max_k: int):
    """Row lengths around the workgroup's step: vec4 K % 4 == 0 around 1024; SCALAR K % 4 != 0
    around 256; block types whole blocks around 64 of them."""
    if weight in ("f32", "f16") and vectorized:
        near = [4, 8, 1020, 1024, 1028, 2044, 2048, 2052, 4096]
        return st.one_of(st.sampled_from([k for k in near if k <= max_k]),
                         st.integers(1, max_k // 4).map(lambda n: 4 * n))
    if weight in ("f32", "f16"):
        near = [1, 2, 3, 5, 7, 255, 257, 259, 511, 513, 1023, 1025, 2047, 4097]
        return st.one_of(st.sampled_from([k for k in near if k <= max_k]),
                         st.integers(1, max_k).filter(lambda k: k % 4))
    block = gq.block_values(weight)
    near = [1, 2, 63, 64, 65, 127, 128, 129]
    return st.one_of(st.sampled_from([n * block for n in near if n * block <= max_k]),
                     st.integers(1, max(1, max_k // block)).map(lambda n: n * block))


def values(rng: np.random.Generator, kind: str, shape, dtype: str) -> np.ndarray:
    """Values of `kind` in `dtype` (f32 or f16) of `shape` (rows, K)."""
    if kind == "constant":
        # every value 1 + 2^-10 (f16) or 1 + 2^-12 (f32): every lane's sums round alike, so their
        # rounding errors add up instead of averaging out (a partial sum kept in f16 loses 2^-12 a term)
        return np.full(shape, 1 + 2.0 ** (-10 if dtype == "f16" else -12), NUMPY[dtype])
    if kind == "positive":
        return np.abs(make_values(rng, "normal", shape, NUMPY[dtype])) + NUMPY[dtype](0.25)
    if kind == "zero_rows":
        v = make_values(rng, "normal", shape, NUMPY[dtype])
        v[rng.random(shape[0]) < 0.5] = 0
        return v
    if kind == "extreme":
        v = make_values(rng, "normal", shape, NUMPY[dtype])
        if dtype == "f16":
            v[:, ::3] = np.float16(65504) * np.sign(v[:, ::3] + np.float16(0.5))
        else:
            v = np.ldexp(v, 60).astype(np.float32)
        return v
    return make_values(rng, kind, shape, NUMPY[dtype])


def weight_values(rng: np.random.Generator, weight: str, kind: str, m: int, k: int) -> np.ndarray:
    """[M, K] f32/f16 weights, or [M, K / values, bytes] blocks: random bytes (every code and scale
    a file may hold, f16 fields finite) or, for `quantized`-like kinds, ggml's CPU quantizer of the
    kind's values; `zero_rows` zeroes about half of the rows either way."""
    if weight in ("f32", "f16"):
        return values(rng, kind, (m, k), weight)
    if kind in ("normal", "positive", "constant"):
        blocks = gq.quantize(weight, values(rng, kind, (m, k), "f32"))
    else:
        blocks = raw_weight_blocks(rng, weight, m * (k // gq.block_values(weight))).reshape(m, k // 32, -1)
    if kind == "zero_rows":
        blocks[rng.random(m) < 0.5] = 0
    return blocks


def activation_values(rng: np.random.Generator, kind: str, weight_kind: str, weights, cols: int, k: int,
                      dtype: str) -> np.ndarray:
    """[cols, K] activations of `kind`, scaled by powers of two until Σ|w x| < 2^120 (f32 weights
    near 2^60 take activations near 2^-60); f16 activations for the VEC program until every vec4's
    Σ|w x| < 2^15 (its dot is f16's, §19.9)."""
    x = values(rng, "normal" if kind == "zero_rows" else kind, (cols, k), dtype)
    if kind == "extreme" and dtype == "f32":
        x = np.ldexp(x, -60).astype(np.float32)  # the extremes meet: products near 1
    if dtype == "f16" and k % 4 == 0:
        # the VEC program takes f16 x f16 dot products in f16 (docs/findings.md §19.9): drawn cases keep
        # every vec4's |w x| sum below 2^15, so they judge its precision; the finding has its own case
        w = np.abs(np.asarray(weights, np.float64))
        while (np.abs(x.astype(np.float64))[:, None, :] * w[None]).reshape(cols, -1, 4).sum(-1).max() >= 2.0**15:
            x = (x * np.float16(2.0**-4)).astype(np.float16)
    if dtype == "f32":
        w = np.abs(decoded(weight_kind, weights))
        while np.isfinite(x).all() and (np.abs(x.astype(np.float64)) @ w.T).max(initial=0) >= F32_HEADROOM:
            x = (x * np.float32(2.0**-16)).astype(np.float32)
    return x


def _layout(draw, vectorized: bool) -> tuple[int, int, int, int]:
    """(weight offset, weight row padding, activation offset, activation row padding) in elements
    (blocks for block weights): 0 mostly, else small, multiples of 4 on the VEC path."""
    unit = 4 if vectorized else 1
    pick = st.one_of(st.just(0), st.integers(1, 5).map(lambda n: n * unit))
    return draw(pick), draw(pick), draw(pick), draw(pick)


def make_case(weight: str, activation: str, vectorized: bool, cols: int, m: int, k: int, kind: str, seed: int,
              layout: tuple[int, int, int, int] = (0, 0, 0, 0)) -> Case:
    rng = np.random.default_rng(seed)
    weights = weight_values(rng, weight, kind, m, k)
    x = activation_values(rng, kind, weight, weights, cols, k, activation)
    offset_w, pad_w, offset_x, pad_x = layout
    return Case({"weights": weights, "x": x},
                {"m": m, "k": k, "cols": cols, "values": kind, "seed": seed, "offset_w": offset_w, "pad_w": pad_w,
                 "offset_x": offset_x, "pad_x": pad_x})


@st.composite
def mul_mat_vec_cases(draw, config: dict, profile) -> Case:
    sizes = SIZES(profile)
    weight, vectorized = config["weight"], config["vec4"]
    m = draw(st.one_of(st.sampled_from([1, 3, 4, 5, 8, 9]), st.integers(1, sizes.max_m)))
    k = draw(k_values(weight, vectorized, sizes.max_k))
    kind = draw(st.sampled_from(KINDS))
    seed = draw(st.integers(0, 2**32 - 1))
    return make_case(weight, config["activation"], vectorized, config["cols"], m, k, kind, seed,
                     _layout(draw, vectorized))


def overflow_case(k: int, cols: int = 1) -> Case:
    """docs/findings.md §19.9: one row of f16 weights 256 against `cols` f16 activation columns of
    256: each product is 65536, one past f16's 65504, while y = 65536 K is an ordinary f32."""
    w = np.full((1, k), 256, np.float16)
    return Case({"weights": w, "x": np.full((cols, k), 256, np.float16)},
                {"m": 1, "k": k, "cols": cols, "values": "256", "seed": 0, "offset_w": 0, "pad_w": 0, "offset_x": 0,
                 "pad_x": 0})
