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
#: Workgroups per probe dispatch, and dispatches: many more workgroups than a GPU runs at once,
#: twice. A discrete GPU may hand every workgroup of a first, small dispatch memory no workgroup
#: has used yet, which reads as zero whether or not anything zeroes it (an NVIDIA H200 through
#: wgpu answered "zeroed" to one dispatch of 64 workgroups, then showed the first dispatch's markers
#: to most workgroups of the next); the second dispatch finds what the first left wherever
#: nothing zeroes it.
ZERO_INIT_GROUPS = 1024
ZERO_INIT_DISPATCHES = 2


def zero_init_reads(device) -> np.ndarray:
    """What each lane of each workgroup read from its workgroup memory before writing it, for
    each probe dispatch: [ZERO_INIT_DISPATCHES, ZERO_INIT_GROUPS, 64]. All zero where the
    adapter and implementation zero workgroup memory as WGSL requires; elsewhere the reads show
    markers (0xA5A50000 + workgroup id) the probe's workgroups left."""
    pipeline = device.pipeline(ZERO_INIT_PROBE)
    return np.stack([device.run(pipeline, {"seen": buffers.Output(np.uint32, (ZERO_INIT_GROUPS * 64,))},
                                ZERO_INIT_GROUPS).outputs["seen"].reshape(ZERO_INIT_GROUPS, 64)
                     for _ in range(ZERO_INIT_DISPATCHES)])


class AdapterProbes:
    """`subgroup_size` and `zeroes_workgroup_memory`, each measured once per device.

    Mixed into a device class that has `pipeline`, `run` and `features`.
    """

    _subgroup_size: int | None = None
    _zeroes_workgroup_memory: bool | None = None

    @property
    def zeroes_workgroup_memory(self) -> bool:
        """Whether workgroup memory starts at zero as WGSL requires (Mesa 22.3's lavapipe and an
        NVIDIA H200 through wgpu leave earlier workgroups' values there: a kernel relying on
        zero-init breaks on them; docs/findings.md §8)."""
        if self._zeroes_workgroup_memory is None:
            self._zeroes_workgroup_memory = bool(np.all(zero_init_reads(self) == 0))
        return self._zeroes_workgroup_memory

    @property
    def subgroup_size(self) -> int | None:
        """The subgroup size this device actually runs a 64-wide workgroup with (None: no subgroups)."""
        if self._subgroup_size is None and "subgroup" in self.features:
            result = self.run(self.pipeline(SUBGROUP_PROBE), {"size_out": buffers.Output(np.uint32, (1,))}, 1)
            self._subgroup_size = int(result.outputs["size_out"][0])
        return self._subgroup_size
