"""Facts about an adapter that only a dispatch can tell, measured the same way on every backend:
the subgroup size here, the WGSL semantics probes in verify.gpu.semantics.

The probes run through the device's own `pipeline`/`run`, so a wgpu device and a Dawn device
answer the same question with the same WGSL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from verify.gpu import buffers

if TYPE_CHECKING:
    from verify.gpu.device import Launched, Pipeline

SUBGROUP_PROBE = """
@group(0) @binding(0) var<storage, read_write> size_out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(subgroup_size) n: u32) {
  if (i == 0u) { size_out[0] = n; }
}
"""

class AdapterProbes:
    """`subgroup_size`, `semantics` and `zeroes_workgroup_memory`, each measured once per device
    (the semantics once per machine: verify.gpu.semantics keeps them on disk).

    Mixed into a device class that has `info`, `pipeline`, `run`, `missing` and `features`.
    """

    _subgroup_size: int | None = None
    _semantics = None

    # What the device class this is mixed into has (verify.gpu.device.Device), for the type checker.
    features: frozenset
    if TYPE_CHECKING:
        def pipeline(self, wgsl: str, entry_point: str | None = None) -> Pipeline: ...

        def run(self, pipeline, resources: dict, workgroups, *, timestamps: bool = False) -> Launched: ...

    @property
    def semantics(self):
        """The WGSL semantics probes' answers for this implementation and adapter."""
        if self._semantics is None:
            from verify.gpu.semantics import measured_semantics

            self._semantics = measured_semantics(self)
        return self._semantics

    @property
    def zeroes_workgroup_memory(self) -> bool:
        """Whether workgroup memory starts at zero as WGSL requires, in every shape and after
        other kernels left theirs there (the `workgroup-zero-init` probe). wgpu-native creates
        its pipelines without WGSL's zeroing, so through wgpu it is whatever the driver leaves:
        stale on lavapipe, and on NVIDIA once another kernel used the memory (docs/findings.md §8)."""
        return not self.semantics.deviates("workgroup-zero-init")

    @property
    def subgroup_size(self) -> int | None:
        """The subgroup size this device actually runs a 64-wide workgroup with (None: no subgroups)."""
        if self._subgroup_size is None and "subgroup" in self.features:
            result = self.run(self.pipeline(SUBGROUP_PROBE), {"size_out": buffers.Output(np.uint32, (1,))}, 1)
            self._subgroup_size = int(result.outputs["size_out"][0])
        return self._subgroup_size
