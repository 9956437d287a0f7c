"""ONNX Runtime Web's DP4A quantized matmul (docs/ort-dp4a.md).

- `matmul_nbits`: `ort.matmul_nbits`, MatMulNBits end to end from float A to Y.
- `programs`: `ort.dp4a.quantize`, `ort.dp4a.matmul` and `ort.dp4a.matmul_small_m`, ORT's programs
  under the contracts of verify's own dp4a kernels.
- `captures`: the DP4A programs' WGSL per model config, captured once through ORT and cached.
- `model`: the one-node MatMulNBits model; `checks`: `zero_blocks`.
"""
