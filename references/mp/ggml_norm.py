"""mpmath twin of references.ggml_norm at 50 digits: ggml's RMS_NORM then MUL, one row and one
element at a time (the sum of squares exact, the square root and quotient at 50 digits)."""

from __future__ import annotations

import mpmath
import numpy as np

from .softmax import DPS, to_mpf


def rms_norm_mul(x, w, eps: float) -> np.ndarray:
    """y (object array of mpf, x's shape) = x_j / sqrt(Σ x_k² / n + eps) · w_j per row."""
    x = np.asarray(x)
    rows = x.reshape(-1, x.shape[-1])
    out = np.empty(rows.shape, dtype=object)
    with mpmath.workdps(DPS):
        for r, row in enumerate(rows):
            values = [to_mpf(v) for v in row]
            mean = mpmath.fsum(v * v for v in values) / len(values)
            scale = 1 / mpmath.sqrt(mean + to_mpf(eps))
            for j, v in enumerate(values):
                out[r, j] = v * scale * to_mpf(w[j])
    return out.reshape(x.shape)
