"""mpmath twins of references.rope at 50 digits: one element at a time, straight from the formulas.

The frequencies are recomputed from rope_theta (and the Llama 3 parameters) in mpmath, so the
float64 power, scaling and angle products are all checked. Results are numpy object arrays of mpf.
"""

from __future__ import annotations

import mpmath
import numpy as np

from ..rope import Llama3Scaling
from .softmax import DPS, to_mpf


def _llama3(f, llama3: Llama3Scaling):
    factor = to_mpf(llama3.factor)
    lo, hi = to_mpf(llama3.low_freq_factor), to_mpf(llama3.high_freq_factor)
    original = to_mpf(llama3.original_max_position_embeddings)
    if hi == lo:
        return f / factor if 2 * mpmath.pi / f > original / lo else f
    smooth = min(max(original / (2 * mpmath.pi) / (hi - lo) * f - lo / (hi - lo), 0), 1)
    return (1 - smooth) * f / factor + smooth * f


def rope_frequencies(head_dim: int, rope_theta=1e4, llama3: Llama3Scaling | None = None,
                     pairing: str = "neox") -> np.ndarray:
    """f_d = rope_theta**(-e_d) (then Llama 3 scaling), e_d = ((2d) mod D)/D (neox) or 2(d//2)/D (gptj)."""
    if head_dim <= 0 or head_dim % 2:
        raise ValueError(f"head_dim must be a positive even integer, got {head_dim!r}")
    if pairing not in ("neox", "gptj"):
        raise ValueError(f"pairing must be 'neox' or 'gptj', got {pairing!r}")
    out = np.empty(head_dim, dtype=object)
    with mpmath.workdps(DPS):
        for d in range(head_dim):
            numerator = (2 * d) % head_dim if pairing == "neox" else 2 * (d // 2)
            f = mpmath.power(to_mpf(rope_theta), -mpmath.mpf(numerator) / head_dim)
            out[d] = f if llama3 is None else _llama3(f, llama3)
    return out


def _rotate(x, positions, rope_theta, rope_scale, llama3, pairing: str) -> np.ndarray:
    x = np.asarray(x, dtype=object)
    dim = x.shape[-1]
    freq = rope_frequencies(dim, rope_theta, llama3, pairing)
    positions = np.broadcast_to(np.asarray(positions), x.shape[:-1])
    out = np.empty(x.shape, dtype=object)
    with mpmath.workdps(DPS):
        for index in np.ndindex(x.shape[:-1]):
            row = [to_mpf(value) for value in x[index]]
            position = mpmath.mpf(int(positions[index])) * to_mpf(rope_scale)
            for d in range(dim):
                if pairing == "neox":
                    partner = -row[d + dim // 2] if d < dim // 2 else row[d - dim // 2]
                else:
                    partner = -row[d + 1] if d % 2 == 0 else row[d - 1]
                angle = position * freq[d]
                out[index + (d,)] = mpmath.cos(angle) * row[d] + mpmath.sin(angle) * partner
    return out


def rotate_neox(x, positions, rope_theta=1e4, rope_scale=1.0, llama3: Llama3Scaling | None = None) -> np.ndarray:
    """out[d] = cos t_d x[d] + sin t_d (d < D/2 ? -x[d + D/2] : x[d - D/2]), t_d = pos*scale*f_d."""
    return _rotate(x, positions, rope_theta, rope_scale, llama3, "neox")


def rotate_gptj(x, positions, rope_theta=1e4, rope_scale=1.0, llama3: Llama3Scaling | None = None) -> np.ndarray:
    """out[d] = cos t_d x[d] + sin t_d (d even ? -x[d+1] : x[d-1]), t_d = pos*scale*f_d."""
    return _rotate(x, positions, rope_theta, rope_scale, llama3, "gptj")
