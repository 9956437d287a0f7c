"""Kernels that come from elsewhere than our own WGSL: Apache TVM's generated kernels
(tvm_build builds and caches their WGSL, tvm_kernels holds their contracts)."""
