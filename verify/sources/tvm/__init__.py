"""Apache TVM's WebGPU kernels: built by TVM's own factories (build), bound and launched as TVM's
web runtime does (layout, kernels), under the attention family's contracts (docs/tvm.md)."""
