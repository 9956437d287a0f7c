"""One dispatch through wgpu-py's API, which wgpu-native (verify.gpu.wgpu_device) and Dawn in
process (verify.gpu.dawn.wgpudawn_device) both speak.

The two devices differ in how they compile, catch errors, wait for the queue and map a buffer;
what they bind, encode and read back is the same, and lives here once: every binding a buffer of
its own, every writable buffer copied into one mappable staging buffer at its own offset (one map
per run, whatever the number of outputs), the dispatch, the copies and the timestamps in one
submission.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from verify.gpu.binding import grid, unpack_readbacks

#: Bytes of the two resolved timestamps at the end of the staging buffer.
STAMP_BYTES = 16


@dataclass
class Bound:
    """A run's buffers: (binding, buffer) pairs, the bind group, and where each writable buffer's
    copy sits in the staging buffer (`size` bytes before the timestamps)."""

    buffers: list
    group: object
    offsets: dict
    size: int

    def by_name(self) -> dict:
        return {b.name: buf for b, buf in self.buffers}


def upload(wgpu, device, layout, plan) -> Bound:
    """A buffer per planned binding (verify.gpu.binding.bind_resources), holding its data, and the
    bind group over them."""
    buffers = []
    for buffer in plan:
        b = buffer.binding
        usage = wgpu.BufferUsage.UNIFORM if b.address_space == "uniform" else wgpu.BufferUsage.STORAGE
        if b.writable:
            usage |= wgpu.BufferUsage.COPY_SRC
        buffers.append((b, device.create_buffer_with_data(data=buffer.data, usage=usage)))
    entries = [{"binding": b.binding, "resource": {"buffer": buf}} for b, buf in buffers]
    group = device.create_bind_group(layout=layout, entries=entries)
    by_name = {b.name: buf for b, buf in buffers}
    offsets, size = {}, 0
    for buffer in plan:
        if buffer.readback:
            offsets[buffer.name] = size
            size += by_name[buffer.name].size
    return Bound(buffers, group, offsets, size)


def encode(wgpu, device, compute, bound: Bound, workgroups, *, timestamps: bool,
           staging: Callable[[int], object]):
    """The command buffer of one run: the dispatch (timed where `timestamps`), then the copies of
    the writable buffers and the timestamps into a staging buffer `staging(size)` makes; with the
    staging buffer (None where nothing is read back) and whether timestamps were taken."""
    encoder = device.create_command_encoder()
    query = _timestamp_pass_args(wgpu, device) if timestamps else None
    compute_pass = encoder.begin_compute_pass(**({"timestamp_writes": query[0]} if query else {}))
    compute_pass.set_pipeline(compute)
    compute_pass.set_bind_group(0, bound.group)
    compute_pass.dispatch_workgroups(*grid(workgroups))
    compute_pass.end()
    target = staging(bound.size + (STAMP_BYTES if query else 0)) if bound.offsets or query else None
    by_name = bound.by_name()
    for name, offset in bound.offsets.items():
        encoder.copy_buffer_to_buffer(by_name[name], 0, target, offset, by_name[name].size)
    if query:
        encoder.resolve_query_set(query[1], 0, 2, query[2], 0)
        encoder.copy_buffer_to_buffer(query[2], 0, target, bound.size, STAMP_BYTES)
    return encoder.finish(), target, query is not None


def unpack(plan, bound: Bound, data: bytes | memoryview, timed: bool):
    """The outputs and guards of a run from the staging buffer's bytes, and the GPU time of the
    dispatch in ns (None without timestamps)."""
    by_name = bound.by_name()
    outputs, guards = unpack_readbacks(plan, {name: data[offset:offset + by_name[name].size]
                                              for name, offset in bound.offsets.items()})
    gpu_ns = None
    if timed:
        stamps = np.frombuffer(data[bound.size:bound.size + STAMP_BYTES], dtype="<u8")
        gpu_ns = float(stamps[1] - stamps[0])
    return outputs, guards, gpu_ns


def _timestamp_pass_args(wgpu, device):
    query_set = device.create_query_set(type=wgpu.QueryType.timestamp, count=2)
    resolved = device.create_buffer(size=STAMP_BYTES, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
    writes = {"query_set": query_set, "beginning_of_pass_write_index": 0, "end_of_pass_write_index": 1}
    return writes, query_set, resolved
