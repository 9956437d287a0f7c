"""Cases of ggml-webgpu's SOFT_MAX: logits x [B, H, R, n] (f32), a mask [M3, M2, R', n] (f32 or
f16) broadcast as llama.cpp builds them, and per-head sinks.

soft_max.wgsl runs one workgroup of WG_SIZE lanes per row, lane l taking columns l, l + WG_SIZE,
...; lanes 0-15 keep their first column in a private cache (CACHE_SIZE 16), the others re-read
and write through dst: row lengths around 16 and around multiples of WG_SIZE. Masks as llama.cpp
makes them: its KQ mask is one per stream, [n_kv, n_tokens padded, 1, n_stream] (M2 = 1 broadcast
over heads, M3 = the batch's streams, rows past R padding), causal (-inf past the diagonal, the
row's position counted from the end of the KV), ALiBi's -|i - j| distances with the causal -inf,
test-backend-ops' uniform values, all zero, and rows hidden entirely (every value -inf: zeros with
a sink; without one ggml's op defines no value, see references.ggml_softmax). Per-head masks (M2 =
H or a divisor) are drawn too, which ggml's op allows. Logits: N(0, σ²) for σ = 1 and 10, ties
(a constant row), spikes, and large logits up to ±2^15 whose exps mostly underflow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.cases import Case
from verify.profiles import FamilySizes

#: soft_max.wgsl's private cache of the first 16 columns (CACHE_SIZE).
CACHE_SIZE = 16


@dataclass(frozen=True)
class SoftMaxSizes:
    """Largest row count (B·H·R) and row length a case draws."""

    max_rows: int
    max_n: int


SIZES = FamilySizes("llamacpp.ops.soft_max", quick=SoftMaxSizes(24, 600), ci=SoftMaxSizes(64, 2100),
                    nightly=SoftMaxSizes(128, 8300))
LOGIT_KINDS = ("normal", "wide", "tied", "spiky", "large")
MASK_KINDS = ("causal", "alibi", "uniform", "zero", "hidden_rows")
#: The op's scales: 1 (a plain softmax) and attention's 1/sqrt(D) for D = 64 and 128, in f32.
SCALES = (1.0, float(np.float32(0.125)), float(np.float32(1 / np.sqrt(128))))
HEADS = (1, 2, 3, 4, 5, 8, 12)
MAX_BIASES = (0.0, 8.0)


def logit_values(rng: np.random.Generator, kind: str, shape: tuple[int, ...]) -> np.ndarray:
    """f32 logits of `kind`: N(0, 1); `wide` N(0, 10²); `tied` one value per row; `spiky` N(0, 0.05²)
    with 1% of N(0, 30²); `large` N(0, 1) times 2^8..2^15 (differences far past exp's range);
    `below_floor` (not drawn) -(1 + U(0, 1)) 2^101, every logit below soft_max.wgsl's initial max of
    -1e30 (docs/findings.md §19.7)."""
    if kind == "normal":
        x = rng.standard_normal(shape)
    elif kind == "wide":
        x = 10 * rng.standard_normal(shape)
    elif kind == "tied":
        x = np.broadcast_to(rng.standard_normal(shape[:-1] + (1,)), shape)
    elif kind == "spiky":
        x = 0.05 * rng.standard_normal(shape)
        spikes = rng.random(shape) < 0.01
        x[spikes] = 30 * rng.standard_normal(int(spikes.sum()))
    elif kind == "large":
        x = np.ldexp(rng.standard_normal(shape), rng.integers(8, 16, shape))
    elif kind == "below_floor":
        x = -(1 + rng.random(shape)) * 2.0**101  # all below the program's -1e30 floor (a corner, never drawn)
    else:
        raise ValueError(f"unknown logit kind {kind!r}; one of {LOGIT_KINDS}")
    return np.ascontiguousarray(x, np.float32)


def mask_values(rng: np.random.Generator, kind: str, shape: tuple[int, int, int, int], rows: int,
                dtype: str) -> np.ndarray:
    """A mask [M3, M2, R', n] of `kind` in `dtype` (f32 or f16): row i's position is n - rows + i
    (the last `rows` tokens of a KV of n), so `causal` hides the columns past it; `alibi` is -|pos -
    c| where visible; `uniform` U(-1, 1) as test-backend-ops draws; `zero`; `hidden_rows` causal with
    a random third of the rows (at least one) all -inf."""
    m3, m2, padded, n = shape
    position = (n - rows + np.arange(padded))[:, None]
    column = np.arange(n)[None, :]
    causal = np.where(column > position, -np.inf, 0.0)
    if kind == "causal":
        m = np.broadcast_to(causal, shape)
    elif kind == "alibi":
        m = np.broadcast_to(np.where(column > position, -np.inf, -np.abs(position - column).astype(np.float64)), shape)
    elif kind == "uniform":
        m = rng.uniform(-1.0, 1.0, shape)
    elif kind == "zero":
        m = np.zeros(shape)
    elif kind == "hidden_rows":
        m = np.array(np.broadcast_to(causal, shape))
        hidden = rng.random((m3, m2, padded)) < 1 / 3
        hidden[..., rng.integers(0, rows)] = True
        m[hidden] = -np.inf
    else:
        raise ValueError(f"unknown mask kind {kind!r}; one of {MASK_KINDS}")
    return np.ascontiguousarray(m, np.float16 if dtype == "f16" else np.float32)


def make_case(mask_type: str, sinks: bool, *, batch: int, heads: int, rows: int, n: int, logits: str = "normal",
              mask_kind: str = "causal", mask_heads: int = 1, mask_batch: int | None = None, pad: int = 0,
              scale: float = 1.0, max_bias: float = 0.0, seed: int = 0) -> Case:
    """A case for a config with `mask_type` ("none", "f32", "f16") and `sinks`: x [batch, heads,
    rows, n]; the mask [mask_batch (default batch), mask_heads, rows + pad, n]; sinks N(0, 2²)."""
    rng = np.random.default_rng(seed)
    arrays = {"x": logit_values(rng, logits, (batch, heads, rows, n))}
    params = {"batch": batch, "heads": heads, "rows": rows, "n": n, "logits": logits, "scale": scale,
              "max_bias": max_bias, "seed": seed}
    if mask_type != "none":
        mask_batch = batch if mask_batch is None else mask_batch
        arrays["mask"] = mask_values(rng, mask_kind, (mask_batch, mask_heads, rows + pad, n), rows, mask_type)
        params.update(mask=mask_kind, mask_heads=mask_heads, mask_batch=mask_batch, pad=pad)
    if sinks:
        arrays["sinks"] = (2 * rng.standard_normal(heads)).astype(np.float32)
    return Case(arrays, params)


def row_lengths(sizes: SoftMaxSizes, lanes: int):
    """n at the cache's edge (15-17) and one workgroup's tails: 1, below, at and past multiples of
    `lanes`, or any length."""
    corners = sorted({n for n in (1, 2, CACHE_SIZE - 1, CACHE_SIZE, CACHE_SIZE + 1, lanes - 1, lanes, lanes + 1,
                                  2 * lanes - 1, 2 * lanes + 1, 4 * lanes + 3, 8 * lanes) if n <= sizes.max_n})
    return st.one_of(st.sampled_from(corners), st.integers(1, sizes.max_n))


@st.composite
def soft_max_cases(draw, config, profile) -> Case:
    sizes = SIZES(profile)
    heads = draw(st.sampled_from([h for h in HEADS if h <= sizes.max_rows]))
    batch = draw(st.integers(1, max(1, min(2, sizes.max_rows // heads))))
    rows = draw(st.integers(1, max(1, min(4, sizes.max_rows // (heads * batch)))))
    mask_type = config["mask"]
    more = {}
    if mask_type != "none":
        divisors = [d for d in range(1, heads + 1) if heads % d == 0]
        more = {"mask_kind": draw(st.sampled_from(MASK_KINDS)),
                "mask_heads": draw(st.one_of(st.just(1), st.sampled_from(divisors))),
                "mask_batch": draw(st.sampled_from(sorted({1, batch}))), "pad": draw(st.integers(0, 3)),
                "max_bias": draw(st.sampled_from(MAX_BIASES))}
    return make_case(mask_type, config["sinks"], batch=batch, heads=heads, rows=rows,
                     n=draw(row_lengths(sizes, config["wg_size"])), logits=draw(st.sampled_from(LOGIT_KINDS)),
                     scale=draw(st.sampled_from(SCALES)), seed=draw(st.integers(0, 2**32 - 1)), **more)
