"""references.ggml_mul_mat: the mat-vec is the exact dot product of the weights as ggml decodes them."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from references import ggml_mul_mat, ggml_quants


@pytest.mark.parametrize("kind", ("f32", "f16", "q4_0", "q4_1", "q8_0"))
def test_each_output_is_the_correctly_rounded_dot_product_within_the_float64_sum(kind):
    """Against exact rational sums of the same decoded values (ggml_quants' decoding is checked bit
    for bit against ggml's own bytes in test_ggml_quants): within gamma_{K+1}(u_64) Σ|w x|."""
    rng = np.random.default_rng(5)
    k = 96
    x = rng.standard_normal((2, k)).astype(np.float32)
    if kind in ("f32", "f16"):
        weights = rng.standard_normal((3, k)).astype(np.float32 if kind == "f32" else np.float16)
        w = weights.astype(np.float64)
    else:
        weights = ggml_quants.quantize(kind, rng.standard_normal((3, k)).astype(np.float32))
        w = ggml_quants.dequantize_row(kind, weights)
    got = ggml_mul_mat.mul_mat_vec(kind, weights, x)
    assert got.shape == (2, 3)
    u = 2.0**-53
    for n in range(2):
        for m in range(3):
            exact = sum(Fraction(float(a)) * Fraction(float(b)) for a, b in zip(x[n], w[m], strict=True))
            mag = math.fsum(abs(float(a) * float(b)) for a, b in zip(x[n], w[m], strict=True))
            assert abs(Fraction(float(got[n, m])) - exact) <= (k + 1) * u / (1 - (k + 1) * u) * mag


def test_a_length_mismatch_is_refused():
    with pytest.raises(ValueError, match="activations of 4 values"):
        ggml_mul_mat.mul_mat_vec("f32", np.zeros((2, 8), np.float32), np.zeros((1, 4), np.float32))
