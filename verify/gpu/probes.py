"""Facts about an adapter that only a dispatch can tell, measured the same way on every backend.

The probes run through the device's own `pipeline`/`run`, so a wgpu device and a Dawn device
answer the same question with the same WGSL.
"""

from __future__ import annotations

import numpy as np

from verify.gpu import buffers

SUBGROUP_PROBE = """
@group(0) @binding(0) var<storage, read_write> size_out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32, @builtin(subgroup_size) n: u32) {
  if (i == 0u) { size_out[0] = n; }
}
"""

#: Each workgroup reads its workgroup memory before writing it: WGSL zero-initialises workgroup
#: memory (spec §6.4.3), so every value read must be 0, even after other workgroups wrote theirs.
ZERO_INIT_PROBE = """
var<workgroup> scratch: array<u32, 64>;
@group(0) @binding(0) var<storage, read_write> seen: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) i: u32) {
  seen[group.x * 64u + i] = scratch[i];
  workgroupBarrier();
  scratch[i] = 0xA5A50000u + group.x;
}
"""
ZERO_INIT_GROUPS = 64


class AdapterProbes:
    """`subgroup_size` and `zeroes_workgroup_memory`, each measured once per device.

    Mixed into a device class that has `pipeline`, `run` and `features`.
    """

    _subgroup_size: int | None = None
    _zeroes_workgroup_memory: bool | None = None

    @property
    def zeroes_workgroup_memory(self) -> bool:
        """Whether workgroup memory starts at zero as WGSL requires (Mesa 22.3's lavapipe leaves
        the previous workgroup's values there: a kernel relying on zero-init breaks on it)."""
        if self._zeroes_workgroup_memory is None:
            shape = (ZERO_INIT_GROUPS * 64,)
            seen = self.run(self.pipeline(ZERO_INIT_PROBE), {"seen": buffers.Output(np.uint32, shape)},
                            ZERO_INIT_GROUPS).outputs["seen"]
            self._zeroes_workgroup_memory = bool(np.all(seen == 0))
        return self._zeroes_workgroup_memory

    @property
    def subgroup_size(self) -> int | None:
        """The subgroup size this device actually runs a 64-wide workgroup with (None: no subgroups)."""
        if self._subgroup_size is None and "subgroup" in self.features:
            result = self.run(self.pipeline(SUBGROUP_PROBE), {"size_out": buffers.Output(np.uint32, (1,))}, 1)
            self._subgroup_size = int(result.outputs["size_out"][0])
        return self._subgroup_size
