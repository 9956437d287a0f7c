"""WebGPU through wgpu or Dawn: adapters, devices, buffers, pipelines and dispatch; no kernel knowledge.

`open_device(backend, adapter, limits)` picks the implementation by name ("wgpu" | "dawn").
"""

from verify.gpu.adapters import (
    AdapterInfo,
    Implementation,
    choose_adapter,
    list_adapters,
)
from verify.gpu.backends import open_device
from verify.gpu.buffers import InOut, Output
from verify.gpu.device import Device, Launched, Pipeline, ShaderCompileError, Timing

__all__ = [
    "AdapterInfo",
    "Device",
    "Implementation",
    "InOut",
    "Output",
    "Pipeline",
    "Launched",
    "ShaderCompileError",
    "Timing",
    "choose_adapter",
    "list_adapters",
    "open_device",
]
