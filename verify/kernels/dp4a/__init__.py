"""DP4A kernels (ONNX Runtime's WebGPU MatMulNBits path): activation quantization and the
int8-dot-product matmul with N-bit weights."""
