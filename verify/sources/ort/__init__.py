"""ONNX Runtime Web as a kernel source: ORT's own WebGPU kernels, run in Node on Dawn.

- `model`: one com.microsoft.MatMulNBits node as an ONNX model (the `onnx` package).
- `runtime`: ORT's WebGPU execution provider in a Node process (runner.mjs), runs with capture.
- `capture`: what a run dispatched: programs (labelled WGSL), workgroups, bound buffers.
- `programs`: ORT's WGSL per program and config, captured once and cached on disk.
- `cache`: the ORT WGSL cache: each capture with its provenance, checked on every read.
- `launch`: how ORT's host code binds, fills uniforms and dispatches, for verify's launches.
- `kernels`, `dp4a_kernels`: the `ort.*` kernels (end to end, and kernel by kernel).
"""
