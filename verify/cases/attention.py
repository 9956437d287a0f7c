"""Strategies for attention kernels: merge states, rotary inputs, paged decode cases."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from verify.cases.case import Case
from verify.cases.values import make_values, seeds, value_kinds

#: How two states' LSEs relate: close (weights comparable), far (one dominates, up to 2^-200),
#: offset (both large in magnitude, as after long contexts), empty (-inf on one or both sides).
LSE_KINDS = ("close", "far", "offset", "empty")


def _lse_pair(rng: np.random.Generator, kind: str, shape) -> tuple[np.ndarray, np.ndarray]:
    base = rng.standard_normal(shape) * 4.0
    if kind == "close":
        other = base + rng.standard_normal(shape)
    elif kind == "far":
        other = base + rng.choice([-1.0, 1.0], shape) * rng.uniform(20.0, 200.0, shape)
    elif kind == "offset":
        shift = rng.uniform(-3e4, 3e4)
        base, other = base + shift, base + shift + rng.standard_normal(shape) * 8.0
    elif kind == "empty":
        other = base + rng.standard_normal(shape)
        which = rng.integers(0, 4, shape)  # 0: none, 1: self, 2: other, 3: both empty
        base = np.where((which == 1) | (which == 3), -np.inf, base)
        other = np.where((which == 2) | (which == 3), -np.inf, other)
    else:
        raise ValueError(f"unknown LSE kind {kind!r}")
    return base.astype(np.float32), other.astype(np.float32)


@st.composite
def merge_cases(draw, head_dim: int, dtype: str, max_tokens: int = 16, max_heads: int = 32):
    """Two states per (token, head): v, v_other [N, H, D] in `dtype`, s, s_other [N, H] f32."""
    tokens = draw(st.integers(1, max_tokens))
    heads = draw(st.integers(1, max_heads))
    lse_kind = draw(st.sampled_from(LSE_KINDS))
    values = draw(value_kinds)
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    shape = (tokens, heads, head_dim)
    s, s_other = _lse_pair(rng, lse_kind, shape[:2])
    v = make_values(rng, values, shape, dtype)
    v_other = make_values(rng, values, shape, dtype)
    v = np.where(np.isinf(s)[..., None], 0, v).astype(v.dtype)  # an empty state's output is 0
    v_other = np.where(np.isinf(s_other)[..., None], 0, v_other).astype(v.dtype)
    params = {"tokens": tokens, "heads": heads, "lse_kind": lse_kind, "values": values, "seed": seed}
    return Case({"v": v, "s": s, "v_other": v_other, "s_other": s_other}, params)
