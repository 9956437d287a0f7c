"""Conformance kernels: the smallest programs that show a WebGPU implementation's deviation from
WGSL, each judged against what the specification requires (docs/findings.md §8, §18.2)."""
