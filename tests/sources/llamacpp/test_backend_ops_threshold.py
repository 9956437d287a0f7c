"""Planted bugs in ggml-webgpu's Q8 mat-vec path that llama.cpp's own test-backend-ops threshold passes
and verify's contracts catch (docs/llamacpp.md §6).

test-backend-ops compares each op's output with the CPU backend's by the normalised mean squared
error Σ(a - b)² / Σa² and passes MUL_MAT below 5e-4 (tests/test-backend-ops.cpp L302-315, L4986-4988
of the pinned sdist). Here the comparison is even kinder than theirs: against the exact product
of the same q8_1 activations (theirs adds the CPU's own quantization noise to the difference).
Each mutant is one textual change of the program ggml-webgpu instantiates.
"""

from __future__ import annotations

import numpy as np
import pytest

from verify.budgets.metrics import compare
from verify.cases import Case
from verify.kernels.registry import get_kernel
from verify.references import ggml_quants as gq

pytestmark = pytest.mark.webgpu(requires=("subgroup",))

#: test-backend-ops' threshold for MUL_MAT (test_mul_mat::max_nmse_err).
MUL_MAT_NMSE = 5e-4


def nmse(reference: np.ndarray, output: np.ndarray) -> float:
    """test-backend-ops' nmse(a, b) with a the reference (L302-315)."""
    reference, output = np.asarray(reference, np.float64), np.asarray(output, np.float64)
    return float(((reference - output) ** 2).sum() / (reference ** 2).sum())


#: (name, program text replaced, replacement): each a bug a port or an optimisation could bring.
QUANTIZE_MUTANTS = [
    ("codes truncated instead of rounded", "round(q4 * id)", "trunc(q4 * id)"),
    ("the reciprocal of the scale in f16", "let id = select(0.0, 1.0 / d, d > 0.0);",
     "let id = select(0.0, f32(f16(1.0 / d)), d > 0.0);"),
]


@pytest.mark.parametrize("name, old, new", QUANTIZE_MUTANTS, ids=[m[0] for m in QUANTIZE_MUTANTS])
def test_a_quantize_mutant_the_mat_mul_threshold_passes_is_outside_the_legal_codes(webgpu_device, name, old, new):
    """The quantizer has no test of its own in test-backend-ops: only the mat-mul's NMSE sees it."""
    quantize = get_kernel("llamacpp.quant.quantize_q8")
    matvec = get_kernel("llamacpp.quant.mul_mat_vec_q")
    qconfig = quantize.config({"weight": "q4_0", "subgroup_min": 8, "subgroup_max": 8})
    mconfig = matvec.config({"weight": "q4_0", "subgroup_min": 8, "subgroup_max": 8})
    original = quantize.wgsl(qconfig)
    assert old in original
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2048)).astype(np.float32)
    launched = quantize.launch(webgpu_device, original.replace(old, new), qconfig,
                               Case({"x": x}, {"rows": 1, "k": 2048}))
    verdicts = [compare(launched.outputs[e.name], e).passed for e in quantize.expected(qconfig, Case({"x": x}))]
    assert not all(verdicts)  # verify fails it
    # the mutant's activations through the (right) mat-vec, against the product with the f32 activations
    blocks = np.zeros((1, 64, 36), np.uint8)
    blocks[..., 0:2] = np.asarray(launched.outputs["d"], np.float16).astype("<f2")[..., None].view(np.uint8)
    blocks[..., 2:4] = np.asarray(launched.outputs["s"], np.float16).astype("<f2")[..., None].view(np.uint8)
    blocks[..., 4:] = launched.outputs["codes"].astype(np.int8).view(np.uint8)
    weights = gq.quantize("q4_0", rng.standard_normal((8, 2048)).astype(np.float32))
    case = Case({"weights": weights, "activations": blocks}, {"m": 8, "k": 2048, "cols": 1})
    y = matvec.launch(webgpu_device, matvec.wgsl(mconfig), mconfig, case).outputs["y"]
    exact = gq.dequantize_row("q4_0", weights) @ x[0].astype(np.float64)
    assert nmse(exact, y[0]) < MUL_MAT_NMSE  # test-backend-ops passes it
