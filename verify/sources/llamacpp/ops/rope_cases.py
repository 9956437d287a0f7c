"""Cases of ggml-webgpu's ROPE: x [batch, tokens, heads, ne0] (ggml's ne3, ne2, ne1, ne0), i32
positions [tokens], and with FF_FUNC the frequency factors [n_dims / 2].

What the program's indexing and arithmetic depend on, and so what a case draws:
- the mode: normal (pairs 2k, 2k + 1) or NeoX (k, k + n_dims/2), the one program for both;
- the rotated window: n_dims the whole head (llama, NeoX models), part of it (partial rotary:
  phi-2's 32 of 80, stablelm's 20 of 80) and moved by n_offs (`ggml_rope_set_offset`, DeepSeek's
  rope on the last channels), the channels outside it copied;
- head dims of llama.cpp's models (64, 80, 128, 256) and small odd multiples of 2 (10, 18: the
  invocation index crosses rows mid-workgroup); heads and tokens so the element count falls
  below, at and past a workgroup (WG_SIZE elements: every second invocation returns);
- positions up to the context (the angle's error grows with p), 0 (the identity);
- YaRN: freq_scale 1, 1/4 (linear scaling), 1/1.4245 (test-backend-ops'), ext_factor 0, 0.7465
  or 1, attn_factor 1 or 1.4245, n_ctx_orig of llama.cpp's models with beta_fast 32 and
  beta_slow 1 (the ramp falls inside the pairs), freq_base 10000, 500000 (llama 3), 1e6;
- frequency factors: test-backend-ops' U(0.9, 1.1), and llama 3's rope_freqs (1 for high
  frequencies, up to 8 for low ones, a ramp between);
- values: verify's value kinds (f16 rows scaled to at most 2^13, so the rotated values, at most
  2 mscale |x|, stay inside f16's range as ggml's own f16 cache must).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.cases import Case
from verify.cases.values import VALUE_KINDS, make_values
from verify.profiles import FamilySizes

NORMAL, NEOX = 0, 2
MODES = {"normal": NORMAL, "neox": NEOX}


@dataclass(frozen=True)
class RopeSizes:
    """Most tokens, heads and batches a case draws, and the largest position."""

    max_tokens: int
    max_heads: int
    max_batch: int
    max_position: int


SIZES = FamilySizes("llamacpp.rope", quick=RopeSizes(3, 4, 1, 4096), ci=RopeSizes(6, 8, 2, 32768),
                    nightly=RopeSizes(16, 32, 3, 131072))
#: (ne0, n_dims, n_offs): whole heads, partial rotary windows, windows moved by n_offs.
WINDOWS = ((64, 64, 0), (128, 128, 0), (80, 32, 0), (80, 20, 0), (256, 64, 0), (10, 10, 0), (18, 8, 0),
           (128, 32, 96), (128, 32, 32), (24, 8, 4), (256, 128, 128))
FREQ_BASES = (10000.0, 500000.0, 1e6)
FREQ_SCALES = (1.0, 0.25, 1.0 / 1.4245)
EXT_FACTORS = (0.0, 0.7465, 1.0)
ATTN_FACTORS = (1.0, 1.4245)
N_CTX_ORIG = (2048, 4096, 8192, 32768)
FREQ_FACTOR_KINDS = ("near_one", "llama3")
F16_MAX_INPUT = 2.0**13


def freq_factors(rng: np.random.Generator, kind: str, pairs: int) -> np.ndarray:
    """f32 frequency factors: U(0.9, 1.1) (test-backend-ops) or llama 3's shape (1, then a ramp
    to 8 over the low frequencies)."""
    if kind == "near_one":
        return rng.uniform(0.9, 1.1, pairs).astype(np.float32)
    edge = np.sort(rng.integers(0, pairs + 1, 2))
    ramp = np.ones(pairs)
    ramp[edge[0]:edge[1]] = np.linspace(1.0, 8.0, edge[1] - edge[0] + 2)[1:-1]
    ramp[edge[1]:] = 8.0
    return ramp.astype(np.float32)


def make_case(dtype: str, with_ff: bool, window: tuple[int, int, int], mode: str, shape: tuple[int, int, int],
              kind: str, seed: int, *, max_position: int = 4096, freq_base: float = 10000.0, freq_scale: float = 1.0,
              ext_factor: float = 0.0, attn_factor: float = 1.0, n_ctx_orig: int = 4096,
              ff_kind: str = "near_one") -> Case:
    """One case: `shape` is (batch, tokens, heads), `window` (ne0, n_dims, n_offs)."""
    rng = np.random.default_rng(seed)
    ne0, n_dims, n_offs = window
    batch, tokens, heads = shape
    x = make_values(rng, kind, (batch, tokens, heads, ne0), dtype)
    if dtype == "f16":
        peak = float(np.max(np.abs(x.astype(np.float64)))) if x.size else 0.0
        if peak > F16_MAX_INPUT:
            x = (x.astype(np.float64) * 2.0 ** -np.ceil(np.log2(peak / F16_MAX_INPUT))).astype(np.float16)
    positions = rng.integers(0, max_position, tokens).astype(np.int32)
    positions[0] = 0 if tokens > 1 else positions[0]  # position 0 (the identity) beside others
    arrays = {"x": x, "positions": positions}
    if with_ff:
        arrays["freq_factors"] = freq_factors(rng, ff_kind, n_dims // 2)
    return Case(arrays, {"ne0": ne0, "n_dims": n_dims, "n_offs": n_offs, "mode": mode, "batch": batch,
                         "tokens": tokens, "heads": heads, "values": kind, "freq_base": freq_base,
                         "freq_scale": freq_scale, "ext_factor": ext_factor, "attn_factor": attn_factor,
                         "n_ctx_orig": n_ctx_orig, "beta_fast": 32.0, "beta_slow": 1.0,
                         "ff": ff_kind if with_ff else None, "seed": seed})


@st.composite
def rope_cases(draw, config: dict, profile) -> Case:
    sizes = SIZES(profile)
    return make_case(config["dtype"], config["freq_factors"], draw(st.sampled_from(WINDOWS)),
                     draw(st.sampled_from(tuple(MODES))),
                     (draw(st.integers(1, sizes.max_batch)), draw(st.integers(1, sizes.max_tokens)),
                      draw(st.integers(1, sizes.max_heads))),
                     draw(st.sampled_from(VALUE_KINDS)), draw(st.integers(0, 2**32 - 1)),
                     max_position=draw(st.sampled_from((1, 512, sizes.max_position))),
                     freq_base=draw(st.sampled_from(FREQ_BASES)), freq_scale=draw(st.sampled_from(FREQ_SCALES)),
                     ext_factor=draw(st.sampled_from(EXT_FACTORS)), attn_factor=draw(st.sampled_from(ATTN_FACTORS)),
                     n_ctx_orig=draw(st.sampled_from(N_CTX_ORIG)), ff_kind=draw(st.sampled_from(FREQ_FACTOR_KINDS)))
