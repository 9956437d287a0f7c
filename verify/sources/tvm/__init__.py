"""Apache TVM's WebGPU kernels (docs/tvm.md).

What every family of TVM's kernels shares lives here: `build` (TVM's own factories build the
WGSL, cached with its provenance and shipped as data), `layout` (how TVM's web runtime binds small
arrays as views of one buffer) and `findings` (the findings in TVM's kernels, as data). Each
family is a subpackage (docs/architecture.md §2.6): `attention` (paged decode, merge, prefill,
ragged, token-tree and sequence prefill).
"""
