"""ggml's MUL_MAT for a few activation columns (the mat-vec), in float64.

`ggml_mul_mat(W, x)` with W [M, K] and activation columns x [N, K] is dst[n, m] = Σ_k W[m, k] x[n, k].
W is f32, f16 (widened exactly) or a block type, dequantized exactly as ggml's
`dequantize_row_*` defines its values (references.ggml_quants.dequantize_row). The sum is numpy's
float64 product: every W x product is exact in float64 (f32 x f32 needs 48 bits, f16 or a
dequantized block value x f32 at most 24 + 24), and the summation's float64 error,
gamma_{K+1}(u_64) Σ|W x|, is counted by the budgets that compare against this.
"""

from __future__ import annotations

import numpy as np

from . import ggml_quants

FLOAT_TYPES = ("f32", "f16")


def weight_values(weight_kind: str, weights) -> np.ndarray:
    """W [M, K] as float64: f32 or f16 rows [M, K] as they are; block rows [M, K / values, bytes]
    dequantized exactly."""
    if weight_kind in FLOAT_TYPES:
        return np.asarray(weights, np.float64)
    return ggml_quants.dequantize_row(weight_kind, weights)


def mul_mat_vec(weight_kind: str, weights, x) -> np.ndarray:
    """dst [N, M] = Σ_k W[m, k] x[n, k] for weights of `weight_kind` and activation columns x [N, K]."""
    w = weight_values(weight_kind, weights)
    x = np.asarray(x, np.float64)
    if x.shape[-1] != w.shape[-1]:
        raise ValueError(f"activations of {x.shape[-1]} values against weight rows of {w.shape[-1]}")
    return x @ w.T
