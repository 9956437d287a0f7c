"""WebGPU through any registered implementation: devices, buffers, pipelines and dispatch; no kernel knowledge.

- `open_device(implementation, adapter, limits)`: a `Device` on a registered implementation
  ("wgpu" with Naga, "dawn" with Tint, or another package's; verify.gpu.implementations).
- `Device`: the interface every device offers (pipeline, run, missing, info, features, limits,
  subgroup_size, zeroes_workgroup_memory); `Launched` is what one run returns.
- `Output` / `InOut`: buffers a run reads back (poisoned before the dispatch, guarded past the end).
"""

from verify.gpu.buffers import InOut, Output
from verify.gpu.device import (
    AdapterInfo,
    Device,
    Launched,
    Pipeline,
    ShaderCompileError,
    Timing,
)
from verify.gpu.implementations import (
    Implementation,
    implementation,
    implementation_names,
    open_device,
)

__all__ = [
    "AdapterInfo",
    "Device",
    "Implementation",
    "InOut",
    "Launched",
    "Output",
    "Pipeline",
    "ShaderCompileError",
    "Timing",
    "implementation",
    "implementation_names",
    "open_device",
]
