"""The wgpu implementation: wgpu-native through wgpu-py, WGSL compiled by Naga (as in Firefox).

A device with what LLM kernels need, a pipeline cache, and one-dispatch runs. Thin on purpose: it
binds numpy arrays to a WGSL module's bindings by name, dispatches once, and reads the writable
buffers back, timing each stage. It knows no kernel.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from verify.errors import SetupError
from verify.gpu import wgpu_api
from verify.gpu.binding import (
    bind_resources,
    buffer_binding_type,
    entry_point_of,
)
from verify.gpu.compiling import compiling
from verify.gpu.device import OPTIONAL_FEATURES, WANTED_LIMITS, AdapterInfo, Launched, ShaderCompileError, Timing
from verify.gpu.dialect import for_naga
from verify.gpu.implementations import ADAPTER_ENVIRONMENT, Implementation
from verify.gpu.probes import AdapterProbes
from verify.gpu.wgpu_adapters import NO_ADAPTER_HELP, choose_adapter, forget_adapters, list_adapters, require_match
from verify.gpu.wgpu_types import load_wgpu
from verify.wgsl import Interface, read_interface, sha256


@dataclass
class WgpuPipeline:
    wgsl: str
    sha256: str
    entry_point: str
    interface: Interface
    layout: object
    compute: object
    #: Changes made so Naga accepts the WGSL (verify.gpu.dialect.for_naga).
    adaptations: tuple = ()


class WgpuDevice(AdapterProbes):
    """One wgpu device; `limits` overrides WANTED_LIMITS (e.g. to hold a kernel to 16 KiB)."""

    def __init__(self, adapter_name: str | None = None, limits: dict | None = None):
        self._wgpu = load_wgpu()
        try:
            self._device = self._request(adapter_name, limits)
        except SetupError:
            raise
        except Exception:  # wgpu raises plain RuntimeErrors for device requests
            # The adapter is kept from an earlier enumeration (wgpu_adapters.enumerate_adapters):
            # should it be spent, a fresh enumeration gives one that is not.
            forget_adapters()
            try:
                self._device = self._request(adapter_name, limits)
            except SetupError:
                raise
            except Exception as exc:  # noqa: BLE001 - wgpu's own errors, said in one line
                raise SetupError(f"could not open a device on {self.info.name}: {exc}") from exc
        self._pipelines: dict = {}

    def _request(self, adapter_name: str | None, limits: dict | None):
        """A wgpu device on the chosen adapter, with every optional feature it has and `limits`
        (over WANTED_LIMITS), each no higher than the adapter's."""
        adapter, self.info = choose_adapter(adapter_name)
        self.features = frozenset(f for f in OPTIONAL_FEATURES if f in adapter.features)
        wanted = dict(WANTED_LIMITS, **(limits or {}))
        self.limits = {k: min(v, adapter.limits.get(k, v)) for k, v in wanted.items()}
        return adapter.request_device_sync(required_features=sorted(self.features), required_limits=self.limits)

    @property
    def wgpu_device(self):
        """The wgpu device itself, for tools that record their own dispatches (benchmarks)."""
        return self._device

    def missing(self, features) -> list[str]:
        """The features in `features` this device lacks."""
        return sorted(set(features) - self.features)

    # -- pipelines -----------------------------------------------------------------------
    def pipeline(self, wgsl: str, entry_point: str | None = None) -> WgpuPipeline:
        """Compile (or fetch from the cache keyed by the WGSL's sha256) a compute pipeline.

        The bind group layout comes from the module's declared bindings, so read-only storage
        stays read-only and unused bindings still occupy their slot.
        """
        digest = sha256(wgsl)
        key = (digest, entry_point)
        if key not in self._pipelines:
            with compiling(f"wgpu {digest}"):
                self._pipelines[key] = self._compile(wgsl, digest, entry_point)
        return self._pipelines[key]

    def _compile(self, wgsl: str, digest: str, entry_point: str | None) -> WgpuPipeline:
        wgpu = self._wgpu
        interface = read_interface(wgsl)
        entry_point = entry_point_of(interface, entry_point)
        entries = [{"binding": b.binding, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": buffer_binding_type(b)}}
                   for b in interface.bindings]
        dev = self._device
        code, adaptations = for_naga(wgsl)
        try:
            module = dev.create_shader_module(code=code)
            layout = dev.create_bind_group_layout(entries=entries)
            compute = dev.create_compute_pipeline(
                layout=dev.create_pipeline_layout(bind_group_layouts=[layout]),
                compute={"module": module, "entry_point": entry_point},
            )
        except wgpu.GPUError as exc:
            raise ShaderCompileError(_compiler_message(str(exc)), Wgpu.compiler) from exc
        return WgpuPipeline(wgsl, digest, entry_point, interface, layout, compute, adaptations)

    # -- runs ----------------------------------------------------------------------------
    def run(self, pipeline: WgpuPipeline, resources: dict, workgroups, *, timestamps: bool = False) -> Launched:
        """Bind `resources` (name -> ndarray | bytes | Output | InOut) and dispatch once.

        ndarrays and bytes are read-only inputs (bytes for uniforms); Output and InOut
        buffers are read back and returned as arrays, with whether their guards survived.
        """
        dev = self._device
        timing = Timing()
        start = time.perf_counter()
        plan = bind_resources(pipeline.interface, resources)
        bound = wgpu_api.upload(self._wgpu, dev, pipeline.layout, plan)
        timing.upload = time.perf_counter() - start

        start = time.perf_counter()
        commands, staging, timed = wgpu_api.encode(
            self._wgpu, dev, pipeline.compute, bound, workgroups,
            timestamps=timestamps and "timestamp-query" in self.features, staging=self._staging)
        dev.queue.submit([commands])
        dev._poll_wait()  # wgpu-py 0.32: on_submitted_work_done_sync is broken; a blocking poll waits
        timing.dispatch = time.perf_counter() - start

        start = time.perf_counter()
        data = _read(dev, staging) if staging is not None else b""
        outputs, guards, timing.gpu_ns = wgpu_api.unpack(plan, bound, data, timed)
        timing.readback = time.perf_counter() - start
        return Launched(outputs, guards, timing)

    def _staging(self, size: int):
        usage = self._wgpu.BufferUsage.MAP_READ | self._wgpu.BufferUsage.COPY_DST
        return self._device.create_buffer(size=size, usage=usage)


def _read(device, staging) -> memoryview:
    """The contents of a mappable buffer whose copy has completed (the dispatch's blocking poll).

    Not wgpu-py's map_sync: it first submits an empty command buffer (for a buffer no submission
    wrote yet, wgpu-native issue 305; this one's copy has run) and then waits for wgpu-py's
    polling thread to see the map done, two more hand-offs between threads, which cost a
    millisecond a run on lavapipe beside a busy worker. Here one blocking poll on this thread
    completes the map."""
    promise = staging.map_async("READ_NOSYNC")  # wgpu-py 0.32's map without that submission
    device._poll_wait()
    promise.sync_wait()
    try:
        return staging.read_mapped()  # wgpu-py's own copy, writable: the outputs are views of it
    finally:
        staging.unmap()
        staging.destroy()


def _compiler_message(text: str) -> str:
    """The compiler's own lines (error, location, caret), without wgpu's wrapper preamble."""
    lines = [line for line in text.splitlines() if line.strip()]
    keep = [line for line in lines if not line.startswith(("Validation Error", "Caused by:", "  In wgpu"))]
    return "\n".join(keep) or text


class Wgpu(Implementation):
    """wgpu-native (through wgpu-py) in this process; WGSL compiled by Naga, as Firefox does."""

    name = "wgpu"
    compiler = "Naga"
    summary = "wgpu-native through wgpu-py, in-process; WGSL compiled by Naga (as in Firefox)"
    preference = 0
    other = "dawn"

    def open(self, adapter=None, limits=None) -> WgpuDevice:
        return WgpuDevice(adapter, limits)

    def adapters(self) -> list[AdapterInfo]:
        found = list_adapters()
        if not found:
            raise SetupError(NO_ADAPTER_HELP)
        return found

    def require_adapter(self, found, adapter=None) -> None:
        """choose_adapter's refusals, for adapters listed already."""
        require_match(found, adapter if adapter is not None else os.environ.get(ADAPTER_ENVIRONMENT))
