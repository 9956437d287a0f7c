"""Kernels whose WGSL comes from elsewhere than verify's own files, under a family's contract:
Apache TVM's generated kernels (`tvm`: built by TVM's factories, launched as its web runtime
launches them) and ONNX Runtime Web's programs (`ort`: captured from ORT's WebGPU provider on Dawn)."""
