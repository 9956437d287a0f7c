"""Cases of ggml-webgpu's Q8 activation path: activation rows, weight blocks, q8_1 activation blocks.

Rows and block counts cross the programs' boundaries: quantize_q8 covers 32 blocks (1024 values)
per workgroup of 256 lanes, so K tails below and past a multiple of 1024 leave lanes without a
value; the mat-vec writes 4 weight rows per workgroup, so M tails leave rows without a value, and
each weight block is shared by 4 (legacy) or 16 (K types) lanes of 256, so block counts below,
at and past 64 (legacy) or 16 (K) leave lanes idle. Values: any of verify's value kinds, all-zero
blocks, rounding ties (multiples of 1/4 over a max of 127), and for weights also raw bytes (every
code and scale a weight file may hold, f16 fields finite).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.cases import Case
from verify.cases.values import VALUE_KINDS, make_values
from verify.profiles import FamilySizes
from verify.references import ggml_quants as gq


@dataclass(frozen=True)
class QuantSizes:
    """Largest activation rows, K (values per row) and weight rows a case draws."""

    max_rows: int
    max_k: int
    max_m: int


SIZES = FamilySizes("llamacpp.quant", quick=QuantSizes(3, 2048, 12), ci=QuantSizes(4, 4096, 40),
                    nightly=QuantSizes(8, 8192, 130))

#: Kinds of activation values: verify's, and two of this path's own corners.
ACTIVATION_KINDS = VALUE_KINDS + ("zero_blocks", "ties")


def activation_values(rng: np.random.Generator, kind: str, shape) -> np.ndarray:
    """f32 activations of `kind`: a value kind of verify's; `zero_blocks`, normal values with a
    random half of the 32-value blocks zero; `ties`, multiples of 1/4 in blocks whose max is 127
    (so x / d lands on halves, where roundf and WGSL's round() part)."""
    if kind == "zero_blocks":
        x = rng.standard_normal(shape).astype(np.float32)
        blocks = x.reshape(-1, 32)
        blocks[rng.random(blocks.shape[0]) < 0.5] = 0
        return x
    if kind == "ties":
        x = (rng.integers(-508, 509, shape) / 4).astype(np.float32)
        blocks = x.reshape(-1, 32)
        blocks[:, 0] = 127.0
        return x
    if kind == "large":
        # q8_1 stores d = max|x| / 127 as f16, so a block's max must stay below 127 · 65504 (8.3e6)
        # for the format to hold it at all; "large" reaches 2^16 · N(0, 1) here, not 2^40
        x = rng.standard_normal(shape).astype(np.float32)
        return np.ldexp(x, rng.integers(4, 17, shape)).astype(np.float32)
    return make_values(rng, kind, shape, "f32")


def k_values(sizes: QuantSizes, block: int = 32):
    """K as a multiple of `block`, with the lane tails of quantize_q8 (1024 values a workgroup)."""
    top = max(1, sizes.max_k // block)
    corners = sorted({n for n in (1, 2, 31, 32, 33, 63, 64, 65) if n * block <= sizes.max_k})
    return st.one_of(st.sampled_from(corners), st.integers(1, top)).map(lambda n: n * block)


@st.composite
def quantize_cases(draw, profile) -> Case:
    sizes = SIZES(profile)
    rows = draw(st.integers(1, sizes.max_rows))
    k = draw(k_values(sizes))
    kind = draw(st.sampled_from(ACTIVATION_KINDS))
    seed = draw(st.integers(0, 2**32 - 1))
    x = with_finite_sums(activation_values(np.random.default_rng(seed), kind, (rows, k)))
    return Case({"x": x}, {"rows": rows, "k": k, "values": kind, "seed": seed})


def raw_weight_blocks(rng: np.random.Generator, kind: str, count: int) -> np.ndarray:
    """`count` blocks of random bytes with finite f16 fields of moderate size (|d| < 2^3)."""
    data = rng.integers(0, 256, (count, gq.block_bytes(kind)), dtype=np.uint8)
    f16_at = {"q8_0": (0,), "q4_0": (0,), "q4_1": (0, 2), "q4_K": (0, 2), "q2_K": (80, 82)}[kind]
    for offset in f16_at:
        value = (rng.standard_normal(count) * 2.0 ** rng.integers(-12, 3, count)).astype(np.float16)
        data[:, offset:offset + 2] = value.astype("<f2").view(np.uint8).reshape(count, 2)
    return data


def weight_blocks(rng: np.random.Generator, kind: str, m: int, k: int, style: str) -> np.ndarray:
    """[m, k / values, bytes] weight blocks: quantized from normal rows by ggml's CPU reference
    (`quantized`), random bytes (`raw`), or quantized rows with every second block zeroed (`zero`)."""
    values = gq.block_values(kind)
    if style == "raw":
        return raw_weight_blocks(rng, kind, m * (k // values)).reshape(m, k // values, -1)
    if kind in ("q4_K", "q2_K"):
        # ggml's K-quantizer searches 16-21 trial scales per sub-block in Python: quantize four
        # super-blocks and tile them (the kernel sees every code and scale pattern they hold)
        made = gq.quantize(kind, rng.standard_normal((1, 4 * values)).astype(np.float32))[0]
        blocks = made[rng.integers(0, 4, m * (k // values))].reshape(m, k // values, -1)
    else:
        blocks = gq.quantize(kind, rng.standard_normal((m, k)).astype(np.float32))
    if style == "zero":
        blocks[:, ::2] = 0
    return blocks


def with_finite_sums(x: np.ndarray) -> np.ndarray:
    """x with each 32-value block whose q8_1 sum s = f16(d Σq) would overflow f16 (|d Σq| > 65504,
    a block of large same-sign values) scaled down by 2^8 until it does not: such blocks are the
    q8_1 format's limit, which docs/findings.md §19.2 takes up, not the drawn cases'."""
    x = np.array(x, np.float32)
    blocks = x.reshape(-1, 32)
    while True:
        _, sums, _ = gq.q8_1_fields(gq.quantize("q8_1", x))
        bad = ~np.isfinite(sums.reshape(-1))
        if not bad.any():
            return x
        blocks[bad] *= np.float32(2.0**-8)


def q8_1_with_finite_sums(x: np.ndarray) -> np.ndarray:
    """q8_1 blocks of with_finite_sums(x)."""
    return gq.quantize("q8_1", with_finite_sums(x))


@st.composite
def mul_mat_vec_cases(draw, weight: str, cols: int, profile) -> Case:
    """A weight matrix [M, K] of `weight` blocks and `cols` q8_1 activation rows of K values."""
    sizes = SIZES(profile)
    block = gq.block_values(weight)
    m = draw(st.one_of(st.sampled_from([1, 3, 4, 5]), st.integers(1, sizes.max_m)))
    k = draw(k_values(sizes, block))
    style = draw(st.sampled_from(("quantized", "raw", "zero")))
    kind = draw(st.sampled_from(ACTIVATION_KINDS))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    weights = weight_blocks(rng, weight, m, k, style)
    activations = q8_1_with_finite_sums(activation_values(rng, kind, (cols, k)))
    return Case({"weights": weights, "activations": activations},
                {"m": m, "k": k, "cols": cols, "weights": style, "values": kind, "seed": seed})


# -- the findings' cases (docs/findings.md §19.1-19.3) ---------------------------------------------------------
def half_block_case() -> Case:
    """One 32-value block whose max lies in its upper half, a second whose max lies in its lower
    half: at 4-lane subgroups quantize_q8 takes each block's scale from half the block (§19.1)."""
    x = np.full((1, 64), 0.5, np.float32)
    x[0, 31] = 100.0  # lanes 4-7 of the first block (values 16-31)
    x[0, 33] = 100.0  # lanes 0-3 of the second block
    return Case({"x": x}, {"rows": 1, "k": 64, "values": "half blocks", "seed": 0})


def overflowing_sum_case(cols: int = 1) -> Case:
    """One Q4_0 weight row (a ramp over [-1, 1]) against `cols` columns of 32 activations of 3000:
    d = 23.6, every code 127, d Σq = 96000 > 65504, so each q8_1 block sum s is inf (§19.2) while
    the product is finite."""
    weights = gq.quantize("q4_0", np.linspace(-1, 1, 32, dtype=np.float32)[None])
    activations = gq.quantize("q8_1", np.full((cols, 32), 3000.0, np.float32))
    return Case({"weights": weights, "activations": activations},
                {"m": 1, "k": 32, "cols": cols, "weights": "ramp", "values": "3000", "seed": 0})


def past_the_weights_case() -> Case:
    """4 Q4_0 weight rows of 2 blocks (144 bytes, 36 words exactly: the binding ends at the last
    block's last word) against one q8_1 activation row of N(0, 1) values: the last load of the
    last block reads src0[36] (§19.3)."""
    rng = np.random.default_rng(19)
    weights = gq.quantize("q4_0", rng.standard_normal((4, 64)).astype(np.float32))
    activations = gq.quantize("q8_1", rng.standard_normal((1, 64)).astype(np.float32))
    return Case({"weights": weights, "activations": activations},
                {"m": 4, "k": 64, "cols": 1, "weights": "quantized", "values": "normal", "seed": 19})
