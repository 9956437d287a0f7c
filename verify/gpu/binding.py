"""What a run binds, independent of the WebGPU implementation that runs it.

Every WebGPU implementation (wgpu, Dawn, another package's) lays out a module's bind group and
turns the caller's resources into buffer bytes here, so poison, guards and minimum sizes are
identical by construction: a difference between two implementations' outputs is then theirs, never
ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np

from verify.errors import UsageError
from verify.gpu import buffers
from verify.wgsl import Binding, Interface

#: A binding must hold one element of its array (WebGPU minBindingSize), even for an empty input
#: such as the pages of a batch of empty contexts; vec4<f32> is the widest element kernels bind.
MIN_INPUT_BYTES = 16

#: (address space, access) -> WebGPU's GPUBufferBindingType, which wgpu-py accepts as is.
_BUFFER_TYPES = {
    ("storage", "read"): "read-only-storage",
    ("storage", "read_write"): "storage",
    ("uniform", "read"): "uniform",
}


def entry_point_of(interface: Interface, requested: str | None) -> str:
    """The entry point to compile: `requested`, or the module's only @compute function."""
    if requested is not None:
        return requested
    if len(interface.entry_points) != 1:
        found = [e.name for e in interface.entry_points] or "none"
        raise UsageError(f"the WGSL must have exactly one @compute entry point (found {found})")
    return interface.entry_points[0].name


def buffer_binding_type(binding: Binding) -> str:
    """WebGPU's binding type for a declared buffer; only @group(0) buffers are supported."""
    if binding.group != 0:
        raise UsageError("only @group(0) bindings are supported")
    kind = _BUFFER_TYPES.get((binding.address_space, binding.access))
    if kind is None:
        raise UsageError(f"binding {binding.name!r}: unsupported resource "
                         f"var<{binding.address_space}, {binding.access}>")
    return kind


@dataclass(frozen=True)
class Readback:
    """How to turn a writable buffer's bytes back into the caller's array."""

    dtype: np.dtype
    shape: tuple
    nbytes: int


@dataclass(frozen=True)
class BoundBuffer:
    """One binding's initial bytes, and how to read it back if the kernel may write it."""

    binding: Binding
    #: bytes, or a view of the caller's array (verify.gpu.buffers.array_bytes): valid while the
    #: run that bound it lasts; whatever keeps it longer copies it (verify.export.recording)
    data: bytes | memoryview
    readback: Readback | None

    @property
    def name(self) -> str:
        return self.binding.name


def bind_resources(interface: Interface, resources: dict) -> list[BoundBuffer]:
    """Bytes for every binding of `interface`, in binding order.

    ndarrays and bytes are read-only inputs (bytes for uniforms, padded to 16); Output buffers
    start as poison and InOut buffers as their array, each followed by the guard canary.
    """
    names = set(interface.names)
    if set(resources) != names:
        raise UsageError(
            f"bindings mismatch: the WGSL declares {sorted(names)}, the contract supplies {sorted(resources)}"
        )
    bound = []
    for b in interface.bindings:
        value = resources[b.name]
        readback = None
        if isinstance(value, buffers.Output):
            data = buffers.output_bytes(value.dtype, value.nbytes)
            readback = Readback(np.dtype(value.dtype), tuple(value.shape), value.nbytes)
        elif isinstance(value, buffers.InOut):
            arr = value.array
            data = buffers.with_guard(buffers.array_bytes(arr), arr.dtype)
            readback = Readback(arr.dtype, arr.shape, arr.nbytes)
        elif isinstance(value, (bytes, bytearray)):
            data = bytes(value) + bytes(-len(value) % 16)
        else:
            data = buffers.array_bytes(np.asarray(value), min_bytes=MIN_INPUT_BYTES)
        bound.append(BoundBuffer(b, data, readback))
    return bound


def unpack_readbacks(bound: list[BoundBuffer], raw: dict[str, bytes | memoryview]) -> tuple[dict, dict]:
    """(outputs, guard_intact) by name from the bytes read back for each writable buffer."""
    outputs, guards = {}, {}
    for buffer in bound:
        spec = buffer.readback
        if spec is None:
            continue
        payload, guards[buffer.name] = buffers.split_guard(raw[buffer.name], spec.nbytes, spec.dtype)
        outputs[buffer.name] = buffers.to_array(payload, spec.dtype, spec.shape)
    return outputs, guards


def grid(workgroups) -> tuple[int, int, int]:
    """(x, y, z) workgroup counts from an int or a 1-3 element sequence."""
    counts = tuple(int(x) for x in (workgroups if isinstance(workgroups, (tuple, list)) else (workgroups,)))
    return cast("tuple[int, int, int]", (counts + (1, 1))[:3])  # 1-3 counts padded to three
