"""llama.cpp's WebGPU backend (ggml-webgpu) as a kernel source, from one pinned release.

- `source`: the pinned llama-cpp-python sdist, downloaded and extracted into the cache (`source.obtain()`).
- `preprocess`: ggml-webgpu's WGSL preprocessor (pre_wgsl.hpp) and build-time include expansion, in Python.
- `selection`: the shader library's and backend's selection rules (defines, workgroup sizes, dispatch), ported.
- `programs`: each program's WGSL, instantiated once, cached, and shipped for the gate configs.
- `findings`: what verify found in ggml-webgpu's programs, as data (verify.findings).
- `attention/`, `quant/`: the `llamacpp.*` kernels, one subpackage per family of programs.
"""
