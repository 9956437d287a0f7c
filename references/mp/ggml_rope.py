"""mpmath twin of references.ggml_rope at 50 digits: ggml's ROPE one element at a time, the
angle built by the op's running product theta_scale^k (exact at 50 digits), the correction dims
from ggml.c's formula."""

from __future__ import annotations

import mpmath
import numpy as np

from .softmax import DPS, to_mpf


def yarn_corr_dims(n_dims: int, n_ctx_orig: int, freq_base: float, beta_fast: float, beta_slow: float):
    """(max(0, floor(c(beta_fast))), min(n_dims - 1, ceil(c(beta_slow)))) with
    c(n_rot) = n_dims ln(n_ctx_orig / (2 pi n_rot)) / (2 ln freq_base)."""
    with mpmath.workdps(DPS):
        def corr(n_rot):
            turns = n_ctx_orig / (to_mpf(n_rot) * 2 * mpmath.pi)
            return n_dims * mpmath.log(turns) / (2 * mpmath.log(to_mpf(freq_base)))

        return float(max(0, mpmath.floor(corr(beta_fast)))), float(min(n_dims - 1, mpmath.ceil(corr(beta_slow))))


def rope(x, positions, n_dims: int, mode: int, *, theta_scale: float, freq_scale: float = 1.0,
         ext_factor: float = 0.0, attn_factor: float = 1.0, corr_dims=(0.0, 0.0), freq_factors=None,
         n_offs: int = 0) -> np.ndarray:
    """y (object array of mpf, x's shape [..., tokens, heads, ne0])."""
    x = np.asarray(x)
    tokens, heads, ne0 = x.shape[-3:]
    rows = x.reshape(-1, tokens, heads, ne0)
    out = np.empty(rows.shape, dtype=object)
    with mpmath.workdps(DPS):
        fs, ef = to_mpf(freq_scale), to_mpf(ext_factor)
        low, high = to_mpf(corr_dims[0]), to_mpf(corr_dims[1])
        mscale = to_mpf(attn_factor)
        if ef != 0:
            mscale *= 1 + mpmath.mpf("0.1") * mpmath.log(1 / fs)
        for b in range(rows.shape[0]):
            for t in range(tokens):
                rotation = []
                power = mpmath.mpf(1)  # theta_scale^k, the op's running product
                for k in range(n_dims // 2):
                    extrap = to_mpf(positions[t]) * power
                    if freq_factors is not None:
                        extrap /= to_mpf(freq_factors[k])
                    theta = fs * extrap
                    if ef != 0:
                        y = (k - low) / max(mpmath.mpf("0.001"), high - low)
                        mix = (1 - min(1, max(0, y))) * ef
                        theta = theta * (1 - mix) + extrap * mix
                    rotation.append((mpmath.cos(theta) * mscale, mpmath.sin(theta) * mscale))
                    power *= to_mpf(theta_scale)
                for h in range(heads):
                    row = [to_mpf(v) for v in rows[b, t, h]]
                    result = list(row)
                    for k, (c, s) in enumerate(rotation):
                        if mode == 2:
                            i, j = n_offs + k, n_offs + k + n_dims // 2
                        else:
                            i, j = n_offs + 2 * k, n_offs + 2 * k + 1
                        result[i] = row[i] * c - row[j] * s
                        result[j] = row[i] * s + row[j] * c
                    out[b, t, h] = result
    return out.reshape(x.shape)
