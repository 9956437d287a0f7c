"""A device that runs nothing and remembers everything a kernel's `launch` asked of it.

A standalone reproduction must bind exactly what verify binds (poison in outputs, guard bytes past
their ends, uniforms packed by the WGSL's layout, the dispatch grid the host code computes), and
the simplest faithful way to know that is to let the kernel's own `launch` run against a device
that records it: the pipelines' WGSL, every binding's bytes (made by verify.gpu.binding, as on
every real device), which buffers are read back, and the grid of every `run`. Replaying those
calls elsewhere (verify.export.write) is then the kernel's launch, not a re-implementation of it.

The outputs it hands back to `launch` are marker bytes, different for every buffer, so the
contract's outputs can be traced to the buffer they were read from (verify.export.capture) even
where `launch` renames them or reinterprets their bytes (ORT's packed int8 codes).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from verify.gpu import buffers
from verify.gpu.binding import BoundBuffer, bind_resources, entry_point_of, grid, unpack_readbacks
from verify.gpu.device import AdapterInfo, Launched
from verify.wgsl import Interface, read_interface, sha256


@dataclass
class RecordedPipeline:
    """A pipeline as `launch` asked for it; `index` is its place among the recording's pipelines."""

    wgsl: str
    sha256: str
    entry_point: str
    interface: Interface
    index: int


@dataclass
class RecordedRun:
    """One `Device.run`: the pipeline, every binding's bytes in binding order, the grid, and the
    marker bytes handed back for each buffer that is read back (by binding name)."""

    pipeline: RecordedPipeline
    buffers: list[BoundBuffer]
    workgroups: tuple[int, int, int]
    markers: dict = field(default_factory=dict)
    #: The numpy dtype of each array the launch bound (by binding name): an ndarray, an InOut's
    #: array, an Output's element type; bytes (a packed uniform) have none.
    dtypes: dict = field(default_factory=dict)


class RecordingDevice:
    """The Device protocol (verify.gpu.device), recording instead of running.

    `features` and `limits` are what the kernel is told it has (the features its config needs,
    the limits its check holds it to); `subgroup_size` is what a launch that asks is told.
    """

    def __init__(self, features=(), limits: dict | None = None, subgroup_size: int | None = None):
        self.features = frozenset(features)
        self.limits = dict(limits or {})
        self.info = AdapterInfo("recording", "", "", "", "", tuple(sorted(self.features)), self.limits, "recording")
        self._subgroup_size = subgroup_size
        self.pipelines: list[RecordedPipeline] = []
        self.runs: list[RecordedRun] = []

    @property
    def subgroup_size(self) -> int | None:
        return self._subgroup_size

    @property
    def zeroes_workgroup_memory(self) -> bool:
        return True

    def missing(self, features) -> list[str]:
        return sorted(set(features) - self.features)

    def pipeline(self, wgsl: str, entry_point: str | None = None) -> RecordedPipeline:
        digest = sha256(wgsl)
        for known in self.pipelines:
            if known.sha256 == digest and (entry_point is None or known.entry_point == entry_point):
                return known
        interface = read_interface(wgsl)
        recorded = RecordedPipeline(wgsl, digest, entry_point_of(interface, entry_point), interface,
                                    len(self.pipelines))
        self.pipelines.append(recorded)
        return recorded

    def run(self, pipeline, resources: dict, workgroups, *, timestamps: bool = False) -> Launched:
        """Record the run; hand back, for every buffer read back, marker bytes with its guard intact."""
        # The bytes as they are now: a binding may view the caller's array (verify.gpu.binding.BoundBuffer)
        bound = [dataclasses.replace(b, data=bytes(b.data)) for b in bind_resources(pipeline.interface, resources)]
        markers, raw = {}, {}
        for buffer in bound:
            if buffer.readback is None:
                continue
            payload = marker_bytes(len(self.runs), buffer.binding.binding, buffer.readback.nbytes)
            markers[buffer.name] = payload
            raw[buffer.name] = payload + buffer.data[len(payload):]  # its padding and guard as uploaded
        self.runs.append(RecordedRun(pipeline, bound, grid(workgroups), markers, _dtypes(resources)))
        outputs, guards = unpack_readbacks(bound, raw)
        return Launched(outputs, guards)


def _dtypes(resources: dict) -> dict:
    found = {}
    for name, value in resources.items():
        if isinstance(value, buffers.Output):
            found[name] = np.dtype(value.dtype)
        elif isinstance(value, buffers.InOut):
            found[name] = value.array.dtype
        elif not isinstance(value, (bytes, bytearray)):
            found[name] = np.asarray(value).dtype  # as verify.gpu.binding turns it into bytes
    return found


def marker_bytes(run: int, binding: int, nbytes: int) -> bytes:
    """Bytes no other buffer of the recording holds (a seeded stream per run and binding): a
    contract output equal to a prefix of them was read from that buffer."""
    return np.random.default_rng([0x7E57, run, binding]).integers(0, 256, nbytes, dtype=np.uint8).tobytes()


def guard_offset(nbytes: int) -> int:
    """Where a writable buffer's guard starts: its payload rounded up to 4 bytes (verify.gpu.buffers)."""
    return max(4, (nbytes + 3) // 4 * 4)


GUARD_BYTES = buffers.GUARD_BYTES
