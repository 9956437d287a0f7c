"""Rotary position embedding (RoPE), as TVM's attention kernels define it (docs/tvm.md §4).

Su et al. 2021, "RoFormer": each pair of dims (a, b) of a head is rotated by the angle
t = position * rope_scale * f, so q(m).k(n) depends on m - n only. Two pairings are in use:

- NeoX / half rotation (TVM `_kernel_common._rope`, HF `rotate_half`): dim d pairs with d + D/2,
  f_d = rope_theta**(-((2d) mod D) / D), so d and d + D/2 share a frequency.
- GPT-J / interleaved (TVM `llama_rope` with rope_type "gptj"): dims (2i, 2i+1) pair,
  f_d = rope_theta**(-2*(d//2) / D).

TVM's decode kernel always uses the NeoX pairing; its "gptj" rope_type only changes the frequency
there (the interleaved pairing exists only in the standalone fused-rope op). The frequencies of
`rope_frequencies(pairing="gptj", llama3=...)` are TVM's "llama4" ones.
TVM computes the angle in f32 as (pos*scale) / theta**e; this is the exact-math float64 version.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Llama3Scaling:
    """Llama 3 frequency scaling (TVM `rope_freq_llama3`, position_embedding.py; HF `_compute_llama3_parameters`).

    Long wavelengths (low frequencies) are divided by `factor`, short ones are kept, and the band
    between is interpolated: smooth = clamp(alpha*f - beta, 0, 1), f' = (1-smooth)*f/factor + smooth*f
    with alpha = original_max_position_embeddings / (2 pi) / (high - low), beta = low / (high - low).
    When high == low TVM uses a step instead: f/factor where 2 pi / f > original_max / low, else f.
    """

    factor: float
    low_freq_factor: float
    high_freq_factor: float
    original_max_position_embeddings: float

    def __post_init__(self):
        for name in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"Llama3Scaling.{name} must be finite and > 0, got {value!r}")
        if self.high_freq_factor < self.low_freq_factor:
            raise ValueError(
                f"Llama3Scaling.high_freq_factor={self.high_freq_factor} must be >= "
                f"low_freq_factor={self.low_freq_factor}"
            )

    def apply(self, freq) -> np.ndarray:
        """The scaled angular frequencies f' of the unscaled frequencies f."""
        f = np.asarray(freq, np.float64)
        lo, hi = self.low_freq_factor, self.high_freq_factor
        if hi == lo:
            wavelength = 2 * math.pi / f
            return np.where(wavelength > self.original_max_position_embeddings / lo, f / self.factor, f)
        alpha = self.original_max_position_embeddings / (2 * math.pi) / (hi - lo)
        beta = lo / (hi - lo)
        smooth = np.clip(alpha * f - beta, 0.0, 1.0)
        return (1.0 - smooth) * f / self.factor + smooth * f


def _check_head_dim(head_dim: int) -> int:
    if int(head_dim) != head_dim or head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim must be a positive even integer, got {head_dim!r}")
    return int(head_dim)


def rope_frequencies(head_dim: int, rope_theta: float = 1e4, llama3: Llama3Scaling | None = None,
                     pairing: str = "neox") -> np.ndarray:
    """Angular frequency f_d of every dim d < head_dim, float64 [head_dim] (radians per position)."""
    dim = _check_head_dim(head_dim)
    if not (math.isfinite(rope_theta) and rope_theta > 0):
        raise ValueError(f"rope_theta must be finite and > 0, got {rope_theta!r}")
    d = np.arange(dim)
    if pairing == "neox":
        exponent = (2 * d % dim) / dim
    elif pairing == "gptj":
        exponent = 2 * (d // 2) / dim
    else:
        raise ValueError(f"pairing must be 'neox' or 'gptj', got {pairing!r}")
    freq = np.power(float(rope_theta), -exponent)
    return freq if llama3 is None else llama3.apply(freq)


def _as_vectors(x) -> np.ndarray:
    x = np.asarray(x, np.float64)
    if x.ndim == 0:
        raise ValueError("x must have a trailing head dimension, got a scalar")
    _check_head_dim(x.shape[-1])
    return x


def _angles(x: np.ndarray, positions, rope_scale: float, freq: np.ndarray) -> np.ndarray:
    """t = positions * rope_scale * f, shaped to broadcast against x (not materialised to x.shape)."""
    pos = np.asarray(positions)
    if not np.issubdtype(pos.dtype, np.integer):
        raise ValueError(f"positions must be an integer array, got dtype {pos.dtype}")
    try:
        shape = np.broadcast_shapes(pos.shape, x.shape[:-1])
    except ValueError:
        shape = None
    if shape != x.shape[:-1]:
        raise ValueError(f"positions of shape {pos.shape} do not broadcast to x.shape[:-1]={x.shape[:-1]}")
    if not math.isfinite(rope_scale):
        raise ValueError(f"rope_scale must be finite, got {rope_scale!r}")
    return (pos.astype(np.float64) * rope_scale)[..., None] * freq


def rotate_neox(x, positions, rope_theta: float = 1e4, rope_scale: float = 1.0,
                llama3: Llama3Scaling | None = None) -> np.ndarray:
    """NeoX rotation of x [..., D] at integer positions (broadcastable to x.shape[:-1]); float64.

    out[d] = cos t_d * x[d] + sin t_d * (d < D/2 ? -x[d + D/2] : x[d - D/2])  (TVM `_rope`).
    """
    x = _as_vectors(x)
    half = x.shape[-1] // 2
    freq = rope_frequencies(x.shape[-1], rope_theta, llama3, "neox")[:half]  # d and d + D/2 share f_d
    t = _angles(x, positions, rope_scale, freq)
    cos, sin = np.cos(t), np.sin(t)
    lower, upper = x[..., :half], x[..., half:]
    # Written in place on the half-width slices: on long contexts this is most of decode's time.
    out = np.empty(x.shape, np.float64)
    out_lower, out_upper = out[..., :half], out[..., half:]
    scratch = sin * upper
    np.subtract(np.multiply(cos, lower, out=out_lower), scratch, out=out_lower)
    np.multiply(sin, lower, out=scratch)
    np.add(np.multiply(cos, upper, out=out_upper), scratch, out=out_upper)
    return out


def rotate_gptj(x, positions, rope_theta: float = 1e4, rope_scale: float = 1.0,
                llama3: Llama3Scaling | None = None) -> np.ndarray:
    """GPT-J (interleaved) rotation of x [..., D] at integer positions; float64.

    out[2i] = cos t * x[2i] - sin t * x[2i+1],  out[2i+1] = sin t * x[2i] + cos t * x[2i+1].
    """
    x = _as_vectors(x)
    t = _angles(x, positions, rope_scale, rope_frequencies(x.shape[-1], rope_theta, llama3, "gptj"))[..., 0::2]
    cos, sin = np.cos(t), np.sin(t)
    even, odd = x[..., 0::2], x[..., 1::2]
    out = np.empty(x.shape, np.float64)
    out[..., 0::2] = cos * even - sin * odd
    out[..., 1::2] = sin * even + cos * odd
    return out
