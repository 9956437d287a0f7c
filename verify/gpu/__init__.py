"""WebGPU through wgpu: adapters, devices, buffers, pipelines and dispatch; no kernel knowledge."""

from verify.gpu.adapters import AdapterInfo, choose_adapter, list_adapters
from verify.gpu.buffers import InOut, Output
from verify.gpu.device import Device, Pipeline, RunResult, ShaderCompileError, Timing

__all__ = [
    "AdapterInfo",
    "Device",
    "InOut",
    "Output",
    "Pipeline",
    "RunResult",
    "ShaderCompileError",
    "Timing",
    "choose_adapter",
    "list_adapters",
]
