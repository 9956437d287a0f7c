"""ggml's ROPE (rotary position embedding) in float64, as ggml's CPU op defines it.

ggml lays a rope input out as [ne3, ne2, ne1, ne0] = [batch, tokens, heads, head dim]; position p
of token i2 comes from an i32 tensor of ne2 entries. The op rotates the window of `n_dims`
channels starting at `n_offs` (0 unless `ggml_rope_set_offset` moved it) and copies every other
channel. Pair k (0 <= k < n_dims/2) of a row is

- normal (mode 0): channels (n_offs + 2k, n_offs + 2k + 1);
- NeoX (mode 2, GGML_ROPE_TYPE_NEOX): channels (n_offs + k, n_offs + k + n_dims/2);

and is rotated by the angle theta_k with magnitude mscale:

    y_a = (x_a cos theta_k - x_b sin theta_k) mscale,   y_b = (x_a sin theta_k + x_b cos theta_k) mscale.

The angle (ggml-cpu ops.cpp `ggml_rope_cache_init`, `rope_yarn`):

    theta_extrap = p theta_scale^k / ff_k                 (ff: the optional frequency factors)
    theta        = freq_scale theta_extrap                (ext_factor == 0)
    theta        = freq_scale theta_extrap (1 - m) + theta_extrap m,  m = ramp_k ext_factor
    ramp_k       = 1 - clamp((k - corr_low) / max(0.001, corr_high - corr_low), 0, 1)
    mscale       = attn_factor, times 1 + 0.1 ln(1 / freq_scale) when ext_factor != 0

with theta_scale = freq_base^(-2/n_dims) and (corr_low, corr_high) from `yarn_corr_dims` (ggml.c
`ggml_rope_yarn_corr_dims`), both computed once per op. ggml's CPU op forms theta_scale^k by a
running product in f32; here it is the exact power. `rope` takes theta_scale and the correction
dims as the op holds them (a caller judging a backend passes the f32 values its host computed);
`theta_scale` and `yarn_corr_dims` compute them in float64.
"""

from __future__ import annotations

import math

import numpy as np

#: ggml.h's rope modes this module implements.
ROPE_TYPE_NORMAL = 0
ROPE_TYPE_NEOX = 2


def theta_scale(freq_base: float, n_dims: int) -> float:
    """freq_base^(-2/n_dims): the ratio of consecutive pairs' frequencies."""
    return float(freq_base) ** (-2.0 / n_dims)


def yarn_corr_dim(n_dims: int, n_ctx_orig: int, n_rot: float, freq_base: float) -> float:
    """The (fractional) pair index whose wavelength fits n_rot turns into n_ctx_orig positions:
    n_dims ln(n_ctx_orig / (2 pi n_rot)) / (2 ln freq_base) (ggml.c `ggml_rope_yarn_corr_dim`)."""
    return n_dims * math.log(n_ctx_orig / (n_rot * 2 * math.pi)) / (2 * math.log(freq_base))


def yarn_corr_dims(n_dims: int, n_ctx_orig: int, freq_base: float, beta_fast: float,
                   beta_slow: float) -> tuple[float, float]:
    """YaRN's ramp ends (ggml.c `ggml_rope_yarn_corr_dims`): max(0, floor(corr_dim(beta_fast)))
    and min(n_dims - 1, ceil(corr_dim(beta_slow)))."""
    start = math.floor(yarn_corr_dim(n_dims, n_ctx_orig, beta_fast, freq_base))
    end = math.ceil(yarn_corr_dim(n_dims, n_ctx_orig, beta_slow, freq_base))
    return float(max(0, start)), float(min(n_dims - 1, end))


def yarn_ramp(corr_dims, n_pairs: int) -> np.ndarray:
    """ramp_k = 1 - clamp((k - low) / max(0.001, high - low), 0, 1) for k < n_pairs."""
    low, high = float(corr_dims[0]), float(corr_dims[1])
    y = (np.arange(n_pairs, dtype=np.float64) - low) / max(0.001, high - low)
    return 1.0 - np.clip(y, 0.0, 1.0)


def yarn_mscale(freq_scale: float, ext_factor: float, attn_factor: float) -> float:
    """attn_factor, times 1 + 0.1 ln(1/freq_scale) where YaRN extrapolates (ext_factor != 0)."""
    if ext_factor != 0.0:
        return float(attn_factor) * (1.0 + 0.1 * math.log(1.0 / float(freq_scale)))
    return float(attn_factor)


def rope_angles(positions, n_dims: int, theta_scale: float, freq_scale: float = 1.0, ext_factor: float = 0.0,
                corr_dims=(0.0, 0.0), freq_factors=None) -> np.ndarray:
    """theta [tokens, n_dims/2]: each position's angle for each pair (see the module doc)."""
    k = np.arange(n_dims // 2, dtype=np.float64)
    extrap = np.asarray(positions, np.float64)[:, None] * float(theta_scale) ** k
    if freq_factors is not None:
        extrap = extrap / np.asarray(freq_factors, np.float64)[: n_dims // 2]
    theta = float(freq_scale) * extrap
    if ext_factor != 0.0:
        mix = yarn_ramp(corr_dims, n_dims // 2) * float(ext_factor)
        theta = theta * (1.0 - mix) + extrap * mix
    return theta


def pair_channels(n_dims: int, mode: int, n_offs: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The channels (a_k, b_k) of each pair k: adjacent (normal) or n_dims/2 apart (NeoX)."""
    k = np.arange(n_dims // 2)
    if mode == ROPE_TYPE_NEOX:
        return n_offs + k, n_offs + k + n_dims // 2
    if mode == ROPE_TYPE_NORMAL:
        return n_offs + 2 * k, n_offs + 2 * k + 1
    raise ValueError(f"rope mode {mode}: this reference implements normal (0) and NeoX (2)")


def rope(x, positions, n_dims: int, mode: int, *, theta_scale: float, freq_scale: float = 1.0,
         ext_factor: float = 0.0, attn_factor: float = 1.0, corr_dims=(0.0, 0.0), freq_factors=None,
         n_offs: int = 0) -> np.ndarray:
    """y [..., tokens, heads, ne0] = ggml's ROPE of x (same shape) at positions [tokens], float64."""
    x = np.asarray(x, np.float64)
    if n_dims % 2 or n_offs % 2 or n_offs + n_dims > x.shape[-1]:
        raise ValueError(f"n_dims={n_dims}, n_offs={n_offs}: even, and the window within ne0={x.shape[-1]}")
    theta = rope_angles(positions, n_dims, theta_scale, freq_scale, ext_factor, corr_dims, freq_factors)
    mscale = yarn_mscale(freq_scale, ext_factor, attn_factor)
    cos = (np.cos(theta) * mscale)[:, None, :]  # [tokens, 1 (heads), pairs]
    sin = (np.sin(theta) * mscale)[:, None, :]
    a, b = pair_channels(n_dims, mode, n_offs)
    y = x.copy()
    y[..., a] = x[..., a] * cos - x[..., b] * sin
    y[..., b] = x[..., a] * sin + x[..., b] * cos
    return y
