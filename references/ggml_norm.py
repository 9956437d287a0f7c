"""ggml's RMS_NORM followed by MUL (the fusion ggml-webgpu runs as one program), in float64.

For each row x of length n (ggml's ne0) and the weight w the MUL broadcasts over rows:

    y_j = x_j / sqrt(mean_k(x_k²) + eps) · w_j

as ggml's CPU backend computes RMS_NORM (`ggml_compute_forward_rms_norm_f32`: the sum of squares
in double, `scale = 1/sqrtf(mean + eps)`) and then MUL. An all-zero row gives y = 0 (mean 0, eps
> 0). Shapes: x [..., n], w [n] (the norm weight of one layer: ggml's mul_src ne0 = n, its other
dims 1); the result has x's shape.
"""

from __future__ import annotations

import numpy as np


def rms_scale(x, eps: float) -> np.ndarray:
    """1 / sqrt(mean(x²) + eps) per row [...], float64."""
    x = np.asarray(x, np.float64)
    return 1.0 / np.sqrt(np.mean(x * x, axis=-1) + float(eps))


def rms_norm_mul(x, w, eps: float) -> np.ndarray:
    """y [..., n] = x · rms_scale(x, eps) · w, float64."""
    x = np.asarray(x, np.float64)
    return x * rms_scale(x, eps)[..., None] * np.asarray(w, np.float64)
