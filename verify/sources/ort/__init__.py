"""ONNX Runtime Web as a kernel source: ORT's own WebGPU kernels, run in Node on Dawn.

What every family of ORT's programs shares lives here; each family is a subpackage
(docs/architecture.md §2.6): `dp4a` (MatMulNBits and its DP4A programs) and `attention`
(GroupQueryAttention, PagedAttention, MultiHeadAttention and their programs).

- `runtime`: ORT's WebGPU execution provider in a Node process (runner.mjs), runs with capture.
- `capture`: what a run dispatched: programs (labelled WGSL), workgroups, bound buffers.
- `cache`: the ORT WGSL cache: each capture with its provenance, checked on every read.
- `launch`: how ORT's host code binds, fills uniforms and dispatches, for verify's launches.
- `findings`: the findings in ORT's programs, as data (verify.findings).
"""
