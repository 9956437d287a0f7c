"""Strategies for dp4a.matmul: quantized activations against N-bit weights, with tile tails.

Hypothesis draws the shape, the kinds of data and a seed; numpy builds the tensors. A is drawn
in T with adversarial 128-value blocks (verify.kernels.dp4a.quantize_cases.make_activation: all-zero,
outlier-dominated, tie, tiny and huge blocks) and quantized by references.dp4a_quant, so the
kernel gets exactly what dp4a.quantize writes. Weights are codes with per-block scales and
optional zero points, packed as MatMulNBits stores them.

Three families of cases, one per check:
- `matmul_cases` (reference, determinism, quantization_error): everything above, magnitudes kept
  so that no product or partial sum can leave T's range in any order (sum_c |p_c| + |bias| <= 2^14
  in f16, 2^100 in f32), so the budget is the only judge.
- `integer_sum_cases` (integer_sums): unit scales and small integer codes, so every product and
  partial sum is an exact integer in T; the output must be sum_c I_c + bias bit for bit.
- `accumulator_range_cases` (accumulator_range): large same-sign chunk products whose running
  sums pass 65504 while the exact result stays small (docs/findings.md §7).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from hypothesis import strategies as st

from verify.budgets.roundoff import numpy_dtype
from verify.cases.case import Case
from verify.cases.values import seeds, value_kinds
from verify.kernels.dp4a.quantize_cases import BLOCK_MIXES, make_activation
from verify.kernels.dp4a.sizes import SIZES
from verify.profiles import Profile
from verify.references.dp4a_quant import ACTIVATION_BLOCK, pack_codes, quantize_nominal
from verify.references.nbits import default_zero_point, pack_weights, pack_zero_points

#: Activation mixes: dp4a.quantize's block mixes, plus extreme_codes (every block all ±max, so
#: every code is ±127).
A_MIXES = BLOCK_MIXES + ("extreme_codes",)
#: Weight codes: uniform over 0..2^bits-1; extreme (only 0 and 2^bits-1: -8/+7 after centring
#: 4-bit codes on 8); near_zero (within a few codes of the zero point: small centred weights).
CODE_KINDS = ("uniform", "extreme", "near_zero")
#: Weight scales per block: typical (2^-9..2^-4), wide (2^-14..2^2), powers_of_two (exact products,
#: so rounding ties of p_c and the sums occur), underflow (s_a s_b below f16's smallest normal).
SCALE_KINDS = ("typical", "wide", "powers_of_two", "underflow")
#: Zero points (has_zero_points=1): random; all 0; all 2^bits-1; all the default 2^(bits-1).
ZERO_POINT_KINDS = ("random", "zero", "max", "default")
#: The kinds' strategies, built once (see _ShapeDraws).
_A_MIX = st.sampled_from(A_MIXES)
_CODE_KIND = st.sampled_from(CODE_KINDS)
_SCALE_KIND = st.sampled_from(SCALE_KINDS)
_ZERO_POINT_KIND = st.sampled_from(ZERO_POINT_KINDS)
#: Largest |code| of the integer cases' A.
_A_MAX = st.sampled_from([1, 2, 7, 127])
_PEAK_SHARE = st.floats(0.0, 1.0)
_SIGN = st.sampled_from([1.0, -1.0])
#: Largest sum_c |p_c| + |bias| drawn: in f16 a quarter of the largest finite value, so no
#: rounding inside the budget can overflow; in f32 far from both ends of the range.
MAGNITUDE = {"f16": 2.0**14, "f32": 2.0**100}
#: Largest |partial sum| of the integer cases: integers up to 2^11 (f16) / 2^24 (f32) are exact.
EXACT_INTEGERS = {"f16": 2**11, "f32": 2**24}


@dataclass(frozen=True)
class MatmulLimits:
    """How big matmul cases get in a profile; max_macs caps batch·M·N·K unless the shape is pinned."""

    max_m: int
    max_n: int
    max_k: int
    max_batch: int
    max_macs: int
    special_m: tuple
    special_n: tuple
    special_k: tuple


def matmul_limits(profile: Profile | str) -> MatmulLimits:
    ms = (1, 2, 3, 4, 5, 31, 32, 33, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255, 256, 257, 299, 300)
    ns = (16, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 240, 256, 272, 288, 1008, 1024)
    ks = (128, 256, 384, 512, 640, 1024, 1152, 2048, 3072, 4096)
    sizes = SIZES(profile).matmul
    max_m, max_n, max_k, max_batch, max_macs = sizes.max_m, sizes.max_n, sizes.max_k, sizes.max_batch, sizes.max_macs
    return MatmulLimits(max_m, max_n, max_k, max_batch, max_macs, tuple(m for m in ms if m <= max_m),
                        tuple(n for n in ns if n <= max_n), tuple(k for k in ks if k <= max_k))


def _k_step(config: dict) -> int:
    """K must be a multiple of 128 (activation blocks) and of the weights' block size."""
    return max(ACTIVATION_BLOCK, config["block_size"])


def _fit(config: dict, batch: int, m: int, n: int, k: int, max_macs: int) -> tuple[int, int, int]:
    """Shrink the drawn (not pinned) N, then M, until batch·M·N·K fits the profile's budget."""
    if batch * m * n * k > max_macs and not config["n"]:
        n = max(16, max_macs // (batch * m * k) // 16 * 16)
    if batch * m * n * k > max_macs and not config["m"]:
        m = max(1, max_macs // (batch * n * k))
    return m, n, k


@dataclass(frozen=True)
class _ShapeDraws:
    """The strategies a shape is drawn from, built once per (limits, K step, K values) and kept.
    A strategy built inside a draw is validated and labelled again on its first draw: drawing a
    shape cost 0.7-1.4 ms more that way (benchmarks/results/cases_ci_dp4a_kept_strategies.json)."""

    k: st.SearchStrategy
    m: st.SearchStrategy
    n: st.SearchStrategy
    batch: st.SearchStrategy


@lru_cache(maxsize=64)
def _shape_draws(limits: MatmulLimits, step: int, ks: tuple | None) -> _ShapeDraws:
    if ks is None:
        k_values = st.one_of(
            st.sampled_from([k for k in limits.special_k if k % step == 0] or [step]),
            st.integers(1, max(1, limits.max_k // step)).map(lambda i: i * step))
    else:
        k_values = st.sampled_from([k for k in ks if k % step == 0] or [step])
    return _ShapeDraws(
        k=k_values,
        m=st.one_of(st.sampled_from(limits.special_m), st.integers(1, limits.max_m), st.integers(1, 4)),
        n=st.one_of(st.sampled_from(limits.special_n), st.integers(1, limits.max_n // 16).map(lambda i: 16 * i)),
        batch=st.integers(1, limits.max_batch))


@st.composite
def matmul_shapes(draw, config: dict, profile: Profile, ks=None):
    """(batch, M, N, K): tails around the 64/128-row and 16/32/64-column tiles; config m/n/k pin them.

    `ks` replaces the drawn K values (multiples of the K step are kept).
    """
    limits = matmul_limits(profile)
    shapes = _shape_draws(limits, _k_step(config), None if ks is None else tuple(ks))
    k = config["k"] or draw(shapes.k)
    m = config["m"] or draw(shapes.m)
    n = config["n"] or draw(shapes.n)
    batch = draw(shapes.batch)
    m, n, k = _fit(config, batch, m, n, k, limits.max_macs)
    return batch, m, n, k


# -- building blocks ------------------------------------------------------------------------------
def _activation(rng, shape, values: str, mix: str, dtype: str) -> np.ndarray:
    if mix != "extreme_codes":
        return make_activation(rng, shape, values, mix, dtype)
    blocks = np.prod(shape) // ACTIVATION_BLOCK
    block_max = 2.0 ** rng.uniform(-6, 6, (blocks, 1))
    signs = rng.choice([-1.0, 1.0], (blocks, ACTIVATION_BLOCK))
    return (signs * block_max).reshape(shape).astype(numpy_dtype(dtype))


def _weight_codes(rng, kind: str, shape, bits: int, centre) -> np.ndarray:
    top = 2**bits - 1
    if kind == "uniform":
        return rng.integers(0, top + 1, shape)
    if kind == "extreme":
        return rng.choice([0, top], shape)
    if kind == "near_zero":
        return np.clip(centre + rng.integers(-2, 3, shape), 0, top)
    raise ValueError(f"unknown weight code kind {kind!r}; expected one of {CODE_KINDS}")


def _zero_points(rng, kind: str, shape, bits: int) -> np.ndarray:
    top = 2**bits - 1
    fill = {"zero": 0, "max": top, "default": default_zero_point(bits)}
    if kind == "random":
        return rng.integers(0, top + 1, shape)
    if kind in fill:
        return np.full(shape, fill[kind])
    raise ValueError(f"unknown zero point kind {kind!r}; expected one of {ZERO_POINT_KINDS}")


def _weight_scales(rng, kind: str, shape, dtype: str) -> np.ndarray:
    if kind == "typical":
        exponent = rng.uniform(-9, -4, shape)
    elif kind == "wide":
        exponent = rng.uniform(-14, 2, shape)
    elif kind == "powers_of_two":
        exponent = rng.integers(-8, -1, shape).astype(np.float64)
    elif kind == "underflow":
        exponent = rng.uniform(-22, -14, shape)
    else:
        raise ValueError(f"unknown scale kind {kind!r}; expected one of {SCALE_KINDS}")
    sign = rng.choice([-1.0, 1.0], shape) if kind == "wide" else 1.0
    return (sign * 2.0**exponent).astype(numpy_dtype(dtype))


def _centred(codes: np.ndarray, zero_points: np.ndarray, block_size: int) -> np.ndarray:
    return codes - np.repeat(zero_points, block_size, axis=-1)


def _case(config, a, a_codes, a_scales, codes, zero_points, b_scales, bias, params) -> Case:
    """Pack everything as the kernel binds it; zero points and bias only where the config has them."""
    arrays = {
        "a_codes": pack_codes(a_codes),
        "a_scales": np.asarray(a_scales).astype(numpy_dtype(config["dtype"])),
        "b": pack_weights(codes.astype(np.uint8), config["bits"], config["block_size"]),
        "b_scales": b_scales,
    }
    if a is not None:
        arrays["a"] = a
    if config["has_zero_points"]:
        arrays["zero_points"] = pack_zero_points(zero_points.astype(np.uint8), config["bits"])
    if config["has_bias"]:
        arrays["bias"] = bias
    return Case(arrays, params)


def _zero_point_array(rng, config, kind: str, n: int, k: int) -> np.ndarray:
    blocks = (n, k // config["block_size"])
    if not config["has_zero_points"]:
        return np.full(blocks, default_zero_point(config["bits"]))
    return _zero_points(rng, kind, blocks, config["bits"])


# -- the strategies -------------------------------------------------------------------------------
@st.composite
def matmul_cases(draw, config: dict, profile: Profile):
    """A general case: adversarial A blocks, weight codes, scales, zero points and bias."""
    batch, m, n, k = draw(matmul_shapes(config, profile))
    values, mix = draw(value_kinds), draw(_A_MIX)
    code_kind, scale_kind = draw(_CODE_KIND), draw(_SCALE_KIND)
    zero_kind = draw(_ZERO_POINT_KIND)
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    dtype, bits, block_size = config["dtype"], config["bits"], config["block_size"]
    t_type = numpy_dtype(dtype)

    a = _activation(rng, (batch, m, k), values, mix, dtype)
    a_codes, a_scales = quantize_nominal(a, dtype)
    zero_points = _zero_point_array(rng, config, zero_kind, n, k)
    codes = _weight_codes(rng, code_kind, (n, k), bits, np.repeat(zero_points, block_size, axis=-1))
    b_scales = _weight_scales(rng, scale_kind, (n, k // block_size), dtype)
    bias = (rng.standard_normal(n) * 2.0 ** rng.uniform(-2, 3)).astype(t_type) if config["has_bias"] else None
    b_scales, bias = _within_range(a_codes, a_scales, codes, zero_points, b_scales, bias, block_size, dtype)
    params = {"batch": batch, "m": m, "n": n, "k": k, "values": values, "mix": mix, "codes": code_kind,
              "scales": scale_kind, "zero_points": zero_kind if config["has_zero_points"] else "none", "seed": seed}
    return _case(config, a, a_codes, a_scales, codes, zero_points, b_scales, bias, params)


def _within_range(a_codes, a_scales, codes, zero_points, b_scales, bias, block_size: int, dtype: str):
    """Scale weights (by a power of two) and bias down until sum_k |s_a a||s_b w| + |bias| <= MAGNITUDE."""
    limit = MAGNITUDE[dtype]
    t_type = numpy_dtype(dtype)
    if bias is not None:
        bias = np.clip(bias, -limit / 2, limit / 2).astype(t_type)
    a_deq = np.abs(a_codes.astype(np.float64)) * np.repeat(a_scales, ACTIVATION_BLOCK, axis=-1)
    w = np.abs(_centred(codes, zero_points, block_size) * np.repeat(b_scales.astype(np.float64), block_size, axis=-1))
    a_deq = a_deq.reshape(-1, a_deq.shape[-1])
    room = limit - (float(np.abs(bias).max()) if bias is not None else 0.0)
    if _within(a_deq, w, room):
        return b_scales, bias
    magnitude = float((a_deq @ w.T).max(initial=0.0))
    if magnitude > room:
        shift = int(np.ceil(np.log2(magnitude / room))) + 1
        b_scales = (b_scales.astype(np.float64) * 2.0**-shift).astype(t_type)
    return b_scales, bias


def _within(a_deq: np.ndarray, w: np.ndarray, room: float) -> bool:
    """True when every sum_k a_k w_k (a_deq [R, K] and w [N, K], both >= 0) as _within_range
    computes it is at most `room`, found without the R x N x K product: each is at most
    sum_k a_k max_n w_nk and at most sum_k max_r a_rk w_k. Computed in float64, a sum of K
    non-negative terms is within gamma_K of the exact one (Higham, (3.5)) in any order, so a
    bound that clears `room` by a factor 1 + 4 K u leaves the product's own sums at or below it
    (False decides nothing: _within_range then computes them)."""
    if a_deq.size == 0 or w.size == 0:
        return True
    bound = min(float((a_deq @ w.max(axis=0)).max()), float((w @ a_deq.max(axis=0)).max()))
    return bound * (1 + 4 * a_deq.shape[-1] * 2.0**-53) <= room


@st.composite
def integer_sum_cases(draw, config: dict, profile: Profile):
    """Unit scales, small integer codes: every p_c and partial sum is an exact integer in T.

    s_a = s_b = 1, so p_c = I_c; A's codes are thinned (zeroed at random) until
    sum_k |a_k w_k| + |bias| <= 2^11 (f16: integers up to 2048 are exact) or 2^24 (f32), which
    bounds every partial sum in any order. The case is marked exact_arithmetic: the output must
    then equal sum_c I_c + bias bit for bit.
    """
    batch, m, n, k = draw(matmul_shapes(config, profile))
    a_max = draw(_A_MAX)
    code_kind, zero_kind = draw(_CODE_KIND), draw(_ZERO_POINT_KIND)
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    dtype, bits, block_size = config["dtype"], config["bits"], config["block_size"]
    t_type = numpy_dtype(dtype)
    limit = EXACT_INTEGERS[dtype]

    zero_points = _zero_point_array(rng, config, zero_kind, n, k)
    codes = _weight_codes(rng, code_kind, (n, k), bits, np.repeat(zero_points, block_size, axis=-1))
    bias = rng.integers(-64, 65, n).astype(t_type) if config["has_bias"] else None
    room = limit - (int(np.abs(bias).max()) if bias is not None else 0)
    a_codes = _thinned(rng, rng.integers(-a_max, a_max + 1, (batch, m, k)),
                       np.abs(_centred(codes, zero_points, block_size)), room)
    a_scales = np.ones((batch, m, k // ACTIVATION_BLOCK))
    b_scales = np.ones((n, k // block_size), dtype=t_type)
    params = {"batch": batch, "m": m, "n": n, "k": k, "a_max": a_max, "codes": code_kind,
              "zero_points": zero_kind if config["has_zero_points"] else "none", "seed": seed,
              "exact_arithmetic": True}
    return _case(config, None, a_codes.astype(np.int8), a_scales, codes, zero_points, b_scales, bias, params)


def _thinned(rng, a_codes: np.ndarray, w_abs: np.ndarray, room: int) -> np.ndarray:
    """Zero random halves of the nonzero codes of rows whose sum_k |a_k||w_k| exceeds `room`."""
    rows = a_codes.reshape(-1, a_codes.shape[-1]).copy()
    w = w_abs.astype(np.float64).T
    while True:
        over = (np.abs(rows).astype(np.float64) @ w).max(axis=1) > room
        if not over.any():
            return rows.reshape(a_codes.shape)
        drop = (rng.random(rows.shape) < 0.5) & over[:, None]
        rows[drop] = 0


@st.composite
def accumulator_range_cases(draw, config: dict, profile: Profile):
    """Large same-sign chunk products: running sums past 65504, a small exact result.

    Every A block is ±m with codes ±127 and every weight has the largest centred magnitude
    (|q - zp| = 8 or 15 for 4 bits, 128 or 255 for 8), so every |p_c| is close to one value p.
    A is +m1 over the first half of K and -m2 (m2 = m1 (1 - delta)) over the second. A running
    sum therefore climbs through P terms of p before it falls back: P = C/2 for the tile kernels'
    sequential sums, C/32 for each of small_m's 16 strided partial sums (so small_m cases take
    K >= 2048). p is drawn in [1.25 · 65504 / P, 60000]: each p_c is finite in f16, the peak
    passes 65504, and delta keeps |Y| <= 2^14 + rounding + |bias|. A kernel that keeps its
    running sums in f16 overflows to Inf here (the f16-accumulation overflow of docs/findings.md §7,
    seen on Intel at K = 3072); one that sums in f32 is within the budget.
    """
    small_m = config.get("tile") == "small_m"
    ks = (2048, 3072, 4096) if small_m else (512, 1024, 2048, 3072, 4096)
    batch, m, n, k = draw(matmul_shapes(config, profile, ks=ks))
    chunks = k // 32
    peak_share = draw(_PEAK_SHARE)
    sign = draw(_SIGN)
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    dtype, bits, block_size = config["dtype"], config["bits"], config["block_size"]
    t_type = numpy_dtype(dtype)

    if config["has_zero_points"]:
        zero_points = np.zeros((n, k // block_size), dtype=int)
        codes = np.full((n, k), 2**bits - 1)
    else:
        zero_points = np.full((n, k // block_size), default_zero_point(bits))
        codes = np.zeros((n, k), dtype=int)
    weight = abs(int(codes[0, 0]) - int(zero_points[0, 0]))
    b_scale = 2.0 ** (-4 if bits == 4 else -7)
    b_scales = np.full((n, k // block_size), b_scale, dtype=t_type)
    peak_terms = max(1, chunks // 32 if small_m else chunks // 2)
    low = min(60000.0, 1.25 * 65504 / peak_terms)
    product = low + peak_share * (60000 - low)
    first_max = t_type(product / (32 * weight * b_scale))  # m1 = 127 s_a, p = 32 * 127 * |w| * s_a * s_b
    delta = rng.uniform(0.0, 2.0**14 / (chunks / 2 * product), (batch, m, 1))
    second_max = (float(first_max) * (1 - delta)).astype(t_type)
    half = k // 2
    a = np.empty((batch, m, k), dtype=t_type)
    a[..., :half] = sign * first_max
    a[..., half:] = np.broadcast_to(-sign * second_max, (batch, m, k - half))
    a_codes, a_scales = quantize_nominal(a, dtype)
    bias = (rng.standard_normal(n) * 2.0**8).astype(t_type) if config["has_bias"] else None
    params = {"batch": batch, "m": m, "n": n, "k": k, "chunk_product": round(product, 1),
              "peak_partial_sum": round(product * peak_terms, 1), "seed": seed}
    return _case(config, a, a_codes, a_scales, codes, zero_points, b_scales, bias, params)
