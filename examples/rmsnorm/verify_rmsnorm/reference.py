"""RMSNorm in float64: plain math a reviewer can check against the definition.

Zhang & Sennrich, "Root Mean Square Layer Normalization" (NeurIPS 2019), eq. 4:
    y_i = x_i / RMS(x) * g_i,   RMS(x) = sqrt(1/n * sum_j x_j^2 + eps)
(eps inside the root, as Llama's RMSNorm and ONNX's SimplifiedLayerNormalization place it).
"""

from __future__ import annotations

import numpy as np


def rms_norm(x, weight, eps: float) -> np.ndarray:
    """y [..., n] for x [..., n] and weight [n], in float64."""
    x = np.asarray(x, np.float64)
    weight = np.asarray(weight, np.float64)
    if x.shape[-1] != weight.shape[-1]:
        raise ValueError(f"x [..., {x.shape[-1]}] and weight [{weight.shape[-1]}] differ in size")
    mean_square = np.mean(x * x, axis=-1, keepdims=True)
    return x / np.sqrt(mean_square + eps) * weight
