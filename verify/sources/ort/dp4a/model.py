"""One `com.microsoft.MatMulNBits` node as an ONNX model, built with the `onnx` package.

ONNX Runtime runs models, not kernels, so verify builds the smallest model that reaches the
kernels under test: a graph with one MatMulNBits node (docs/ort-dp4a.md §2). A [batch, M, K]
has symbolic batch and M, so one session serves every M; the weights, scales, zero points and
bias are graph inputs rather than initializers, so one session serves every case of a shape
(ORT's WebGPU provider reads them from its inputs either way; nothing is prepacked on the DP4A
path). With `accuracy_level` 4 ORT may quantize A to int8 and take its DP4A programs; 0 keeps
A in floating point (the control).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from verify.errors import SetupError

#: The `onnx` releases the model builder is written for (pyproject's [ort] extra).
ONNX_REQUIREMENT = "onnx>=1.16,<2"
INSTALL = "pip install 'onnx>=1.16,<2'  (the ort extra of webgpu-verify: pip install '.[ort]' in a clone)"
#: Opsets of the model: ai.onnx 21 and com.microsoft 1 (MatMulNBits' domain).
OPSET, MS_OPSET, IR_VERSION = 21, 1, 10
#: Tensor element types by numpy dtype, as onnx and onnxruntime-web name them.
ONNX_TYPES = {"float32": ("FLOAT", "float32"), "float16": ("FLOAT16", "float16"), "uint8": ("UINT8", "uint8")}


@dataclass(frozen=True)
class MatMulNBitsModel:
    """What the model is specialised on: MatMulNBits' attributes and which optional inputs it has."""

    dtype: str  # "f16" | "f32": A, scales, bias and Y
    bits: int
    block_size: int
    k: int
    n: int
    accuracy_level: int = 4
    has_zero_points: bool = False
    has_bias: bool = False
    #: The session option ep.webgpuexecutionprovider.enableMatmulFp32Accumulation (onnxruntime-web
    #: 1.31.1 and later): its matmul programs accumulate in f32 (`alias acc_element_t = f32;`).
    fp32_accumulation: bool = False

    @property
    def k_blocks(self) -> int:
        return -(-self.k // self.block_size)

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(np.float16 if self.dtype == "f16" else np.float32)

    def describe(self) -> str:
        return (f"MatMulNBits(dtype={self.dtype}, bits={self.bits}, block_size={self.block_size}, K={self.k}, "
                f"N={self.n}, accuracy_level={self.accuracy_level}, zero_points={int(self.has_zero_points)}, "
                f"bias={int(self.has_bias)}" + (", fp32_accumulation=1" if self.fp32_accumulation else "") + ")")

    @property
    def ep_options(self) -> dict:
        """The WebGPU execution provider's options the session is created with (none by default)."""
        return {"enableMatmulFp32Accumulation": True} if self.fp32_accumulation else {}

    @cached_property
    def onnx_bytes(self) -> bytes:
        """The serialized model (deterministic for a given onnx release)."""
        return _build(self)

    @cached_property
    def digest(self) -> str:
        return hashlib.sha256(self.describe().encode()).hexdigest()[:16]

    def feeds(self, a, b, scales, zero_points=None, bias=None) -> dict[str, np.ndarray]:
        """The session's inputs by name, in MatMulNBits' layouts: A [batch, M, K] in T, B uint8
        [N, k_blocks, block_size·bits/8], scales T [N, k_blocks], zero points uint8 packed
        [N, ceil(k_blocks·bits/8)], bias T [N]."""
        t = self.numpy_dtype
        feeds = {"A": np.ascontiguousarray(a, dtype=t), "B": np.ascontiguousarray(b, dtype=np.uint8),
                 "scales": np.ascontiguousarray(np.asarray(scales).reshape(self.n, self.k_blocks), dtype=t)}
        if self.has_zero_points:
            feeds["zero_points"] = np.ascontiguousarray(zero_points, dtype=np.uint8)
        if self.has_bias:
            feeds["bias"] = np.ascontiguousarray(bias, dtype=t)
        return feeds


def _import_onnx():
    try:
        import onnx
        from onnx import helper
    except ImportError as exc:
        raise SetupError(f"ORT kernels build their models with {ONNX_REQUIREMENT}, which cannot be imported "
                         f"({exc}); install it with: {INSTALL}") from None
    return onnx, helper


def _build(model: MatMulNBitsModel) -> bytes:
    onnx, helper = _import_onnx()
    element = getattr(onnx.TensorProto, ONNX_TYPES[model.numpy_dtype.name][0])
    uint8 = onnx.TensorProto.UINT8
    blob = model.block_size * model.bits // 8
    inputs = [helper.make_tensor_value_info("A", element, ["batch", "M", model.k]),
              helper.make_tensor_value_info("B", uint8, [model.n, model.k_blocks, blob]),
              helper.make_tensor_value_info("scales", element, [model.n, model.k_blocks])]
    # MatMulNBits' inputs by position: A, B, scales, zero_points, g_idx, bias ("" = absent).
    names = ["A", "B", "scales", "", "", ""]
    if model.has_zero_points:
        names[3] = "zero_points"
        inputs.append(helper.make_tensor_value_info(
            "zero_points", uint8, [model.n, -(-model.k_blocks * model.bits // 8)]))
    if model.has_bias:
        names[5] = "bias"
        inputs.append(helper.make_tensor_value_info("bias", element, [model.n]))
    while names[-1] == "":
        names.pop()
    node = helper.make_node("MatMulNBits", names, ["Y"], domain="com.microsoft", K=model.k, N=model.n,
                            bits=model.bits, block_size=model.block_size, accuracy_level=model.accuracy_level)
    output = helper.make_tensor_value_info("Y", element, ["batch", "M", model.n])
    graph = helper.make_graph([node], "matmul_nbits", inputs, [output])
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid("com.microsoft", MS_OPSET)])
    proto.ir_version = IR_VERSION
    return proto.SerializeToString()
