"""Device wrappers that run any kernel, through its own contract's launch, instrumented.

A kernel's `launch(device, wgsl, config, case)` calls `device.pipeline(wgsl)` and
`device.run(pipeline, resources, grid)` with resources named after the WGSL's bindings. The
wrappers compile a rewritten module instead, but hand the contract a pipeline whose interface is
the original's, so the contract binds exactly what it always binds; `run` adds what the rewrite
needs (the sanitizer's log) and takes it back out of the results. Everything else (features,
limits, adapter facts) is the wrapped device's.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from verify.errors import SetupError
from verify.gpu.binding import grid
from verify.gpu.buffers import GUARD_BYTES, InOut, Output
from verify.gpu.device import Launched, Pipeline, Timing
from verify.instrument.findings import SanitizerReport
from verify.instrument.passes import run_in_passes
from verify.instrument.sanitize import Sanitized, sanitize
from verify.instrument.shadow import ALL_GROUPS, HEADER_WORDS, RECORD_WORDS, analyze, new_log
from verify.instrument.subgroups import WIDTHS, emulate_subgroups
from verify.wgsl import Interface, read_interface, sha256

#: Records a pipeline's log holds at first (1.5 MiB). A dispatch that logs more is run again
#: with room for all of them (and a quarter more), up to the device's largest storage binding,
#: and past that in passes (verify.instrument.passes); the pipeline's next run starts with room
#: for what this one logged, as the log is uploaded and read back whole every run.
DEFAULT_CAPACITY = 1 << 16
#: For tests only: caps the records a sanitizer's log holds (as SanitizingDevice's `max_records`),
#: so that a small dispatch overflows it as a large one overflows the device's largest binding.
LOG_ROOM_VARIABLE = "VERIFY_SANITIZER_LOG_ROOM"
_STORAGE_LIMIT = "max-storage-buffers-per-shader-stage"
_BINDING_SIZE = "max-storage-buffer-binding-size"
#: WebGPU's default maxStorageBufferBindingSize, where the device does not say.
_DEFAULT_BINDING_SIZE = 128 << 20


@dataclass
class InstrumentedPipeline:
    """What the contract sees (the original module's `wgsl`, `sha256` and `interface`) and the
    compiled rewrite it actually runs (`instrumented`)."""

    wgsl: str
    interface: Interface
    instrumented: Pipeline
    sanitized: Sanitized | None = None

    @property
    def sha256(self) -> str:
        return sha256(self.wgsl)

    @property
    def entry_point(self) -> str:
        return self.instrumented.entry_point


def with_one_more_storage_binding(limits: dict) -> dict:
    """`limits` with one storage binding per shader stage more than a device of them grants
    (verify.gpu.device.WANTED_LIMITS where they say nothing): the room an instrumentation's own
    buffer takes (the sanitizer's log, the loop trips' counts)."""
    from verify.gpu.device import WANTED_LIMITS

    return dict(limits, **{_STORAGE_LIMIT: max(limits.get(_STORAGE_LIMIT, 0), WANTED_LIMITS[_STORAGE_LIMIT]) + 1})


def require_one_more_storage_binding(device, interface: Interface, what: str) -> None:
    """SetupError unless `device` allows one storage binding more than the module's `interface`
    uses, for the buffer `what` (an instrumentation) adds."""
    storage = sum(1 for b in interface.bindings if b.address_space == "storage")
    limit = device.limits.get(_STORAGE_LIMIT, 8)
    if storage + 1 > limit:
        raise SetupError(f"{what} needs one more storage buffer than the kernel's {storage}, but this device "
                         f"allows {limit} per shader stage ({_STORAGE_LIMIT})")


class _Wrapper:
    """Delegates every attribute it does not define to the wrapped device."""

    def __init__(self, device):
        self._device = device

    def __getattr__(self, name):
        return getattr(self._device, name)

    @property
    def wrapped(self):
        return self._device


class SanitizingDevice(_Wrapper):
    """A device on which every kernel runs sanitized (verify.instrument.sanitize).

    Use it in place of a Device: `kernel.launch(SanitizingDevice(device), wgsl, config, case)`,
    then `take_report()` for the findings of the dispatches since the last call. Outputs are the
    kernel's own (its accesses are performed as written, except those out of bounds, and loops
    end at the sanitizer's bound).

    `bounds_only`: the bounds pass (sanitize(..., bounds_only=True)): only out-of-bounds accesses
    and unbounded loops are logged and found, at little more than a plain run's cost.

    `max_records` (for tests; else the environment's VERIFY_SANITIZER_LOG_ROOM): the most records
    a log may hold, below what the device's largest storage binding allows, so that a small
    dispatch is run in passes as a large one is. A dispatch one of whose workgroups alone logs
    more raises SanitizerLogLimit (verify's limit, not a finding).
    """

    def __init__(self, device, capacity: int = DEFAULT_CAPACITY, *, bounds_only: bool = False,
                 max_records: int | None = None):
        super().__init__(device)
        self.capacity = capacity
        self.bounds_only = bounds_only
        if max_records is None and os.environ.get(LOG_ROOM_VARIABLE):
            max_records = int(os.environ[LOG_ROOM_VARIABLE])
        self.max_records = max_records
        self._capacities: dict[int, int] = {}  # id(pipeline) -> records its log has room for
        self._sanitized: dict[tuple, InstrumentedPipeline] = {}
        self._report = SanitizerReport()

    def pipeline(self, wgsl: str, entry_point: str | None = None) -> InstrumentedPipeline:
        key = (wgsl, entry_point)
        if key not in self._sanitized:
            interface = read_interface(wgsl)
            sanitized = sanitize(wgsl, bounds_only=self.bounds_only)
            self._check_limits(interface)
            instrumented = self._device.pipeline(sanitized.wgsl, entry_point)
            self._sanitized[key] = InstrumentedPipeline(wgsl, interface, instrumented, sanitized)
        return self._sanitized[key]

    def _check_limits(self, interface: Interface) -> None:
        require_one_more_storage_binding(self._device, interface, "sanitize")

    def run(self, pipeline, resources: dict, workgroups, *, timestamps: bool = False) -> Launched:
        if not isinstance(pipeline, InstrumentedPipeline):
            return self._device.run(pipeline, resources, workgroups, timestamps=timestamps)
        sanitized = pipeline.sanitized
        assert sanitized is not None  # this device's own pipelines (self.pipeline) are all sanitized
        added = {}
        if sanitized.runtime_arrays:
            added[sanitized.lengths_name] = sanitized.lengths({name: _nbytes(v) for name, v in resources.items()})
        largest = self._max_capacity()
        capacity = min(self._capacities.get(id(pipeline), self.capacity), largest)

        def dispatch(capacity: int, first: int = 0, groups: int = ALL_GROUPS):
            log = {sanitized.log_name: InOut(new_log(capacity, first, groups))}
            run = self._device.run(pipeline.instrumented, {**resources, **added, **log}, workgroups,
                                   timestamps=timestamps)
            run.guard_intact.pop(sanitized.log_name, None)
            return run.outputs.pop(sanitized.log_name), run

        while True:
            words, run = dispatch(capacity)
            attempted = int(words[0])
            if attempted <= capacity or capacity >= largest:
                break
            capacity = min(attempted + attempted // 4, largest)
        # The next run of this pipeline starts with room for this one's records and a quarter more:
        # a case far smaller than the last does not pay for uploading and reading back a huge log.
        self._capacities[id(pipeline)] = min(max(self.capacity, attempted + attempted // 4), largest)
        if attempted <= capacity:
            analyze(words, sanitized, self._report)
            return run
        # More than the largest log holds: the dispatch again, in passes of whole workgroups. The
        # outputs are this run's (every access was performed; only the log was short).
        del words

        def in_pass(first: int, count: int):
            words, again = dispatch(capacity, first, count)
            return words, again.timing  # its outputs are the first run's again

        x, y, z = grid(workgroups)
        timings = run_in_passes(in_pass, x * y * z, attempted, capacity, sanitized, self._report, self._room())
        return Launched(run.outputs, run.guard_intact, _total([run.timing, *timings]))

    def _max_capacity(self) -> int:
        """The most records a log may hold: what the device's largest storage binding holds, or
        max_records where that is less (at least 2: a pass needs one slot besides the last)."""
        largest = self._binding_capacity()
        return largest if self.max_records is None else max(2, min(largest, self.max_records))

    def _binding_capacity(self) -> int:
        return (self._binding_size() - GUARD_BYTES - 4 * HEADER_WORDS) // (4 * RECORD_WORDS)

    def _binding_size(self) -> int:
        return self._device.limits.get(_BINDING_SIZE, _DEFAULT_BINDING_SIZE)

    def _room(self) -> str:
        """What bounds the log, in words (for SanitizerLogLimit's message)."""
        if self._max_capacity() < self._binding_capacity():
            return f"capped at {self._max_capacity():,} records for testing: {LOG_ROOM_VARIABLE} or max_records"
        return f"a log is one storage binding, and this device's {_BINDING_SIZE} is {self._binding_size():,} bytes"

    def take_report(self) -> SanitizerReport:
        """The findings since the last call (or since the device was wrapped), and a fresh start."""
        report, self._report = self._report, SanitizerReport()
        return report


def _total(timings: list[Timing]) -> Timing:
    """The time of several runs of one dispatch, stage by stage."""
    stamps = [t.gpu_ns for t in timings]
    return Timing(sum(t.upload for t in timings), sum(t.dispatch for t in timings),
                  sum(t.readback for t in timings),
                  None if None in stamps else sum(s for s in stamps if s is not None))


def _nbytes(resource) -> int:
    """Bytes of the data a contract binds (what the kernel may read; not the padding or guard)."""
    if isinstance(resource, Output):
        return resource.nbytes
    if isinstance(resource, InOut):
        return resource.array.nbytes
    if isinstance(resource, (bytes, bytearray)):
        return len(resource)
    return np.asarray(resource).nbytes


class EmulatingDevice(_Wrapper):
    """A device whose subgroups are `width` lanes wide, whatever the adapter's
    (verify.instrument.subgroups): every kernel's WGSL is compiled with its subgroup built-ins
    emulated. It reports `subgroup_size` = width and has the "subgroup" feature, as kernels that
    use subgroups ask for it (the adapter itself need not have it)."""

    def __init__(self, device, width: int):
        if width not in WIDTHS:
            raise ValueError(f"width={width}: WebGPU subgroups have 4 to 128 lanes, a power of two ({WIDTHS})")
        super().__init__(device)
        self.width = width
        self._emulated: dict[tuple, InstrumentedPipeline] = {}

    @property
    def features(self) -> frozenset:
        return frozenset(self._device.features) | {"subgroup"}

    @property
    def subgroup_size(self) -> int:
        return self.width

    def missing(self, features) -> list[str]:
        return sorted(set(features) - self.features)

    def pipeline(self, wgsl: str, entry_point: str | None = None) -> InstrumentedPipeline:
        key = (wgsl, entry_point)
        if key not in self._emulated:
            emulated = emulate_subgroups(wgsl, self.width)
            instrumented = self._device.pipeline(emulated, entry_point)
            self._emulated[key] = InstrumentedPipeline(wgsl, read_interface(wgsl), instrumented)
        return self._emulated[key]

    def run(self, pipeline, resources: dict, workgroups, *, timestamps: bool = False) -> Launched:
        if isinstance(pipeline, InstrumentedPipeline) and pipeline.sanitized is None:
            pipeline = pipeline.instrumented
        return self._device.run(pipeline, resources, workgroups, timestamps=timestamps)
