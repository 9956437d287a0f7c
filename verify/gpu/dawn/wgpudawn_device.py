"""The dawn-inprocess implementation: Dawn (Chromium's WebGPU, WGSL compiled by Tint) in this
process, through PyPI `wgpudawn`.

The same stack as the `dawn` implementation (Dawn in a Node process, verify.gpu.dawn.device), at
wgpudawn's Dawn release instead of npm webgpu's, without the Node hop: no process to start, no
frames to copy, and Dawn's device toggles within reach (`toggles`: what Dawn can be told to skip,
such as WGSL's workgroup zeroing; verify.checks.toggles). It is another route to Dawn, so the
gate does not run it beside `dawn` (Implementation.route_of); `--implementation dawn-inprocess`
chooses it, and `verify adapters` lists it.

Bindings, poison and guards come from verify.gpu.binding, as for every implementation. Compile
errors are Tint's, taken from Dawn's error scopes: wgpudawn raises a validation error at the call
only where no scope is open, and a failed pipeline creation may not raise at all.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from verify.errors import KernelError, SetupError
from verify.gpu import wgpu_api
from verify.gpu.binding import bind_resources, buffer_binding_type, entry_point_of
from verify.gpu.compiling import compiling
from verify.gpu.dawn.wgpudawn_adapters import (
    DAWN_FEATURE,
    OUR_FEATURE,
    choose_adapter,
    describe,
    list_adapters,
    load_wgpudawn,
)
from verify.gpu.device import OPTIONAL_FEATURES, WANTED_LIMITS, AdapterInfo, Launched, ShaderCompileError, Timing
from verify.gpu.dialect import Adaptation, for_tint
from verify.gpu.implementations import ADAPTER_ENVIRONMENT, Implementation
from verify.gpu.probes import AdapterProbes
from verify.wgsl import Interface, read_interface, sha256

#: Dawn's error scopes opened around a compile and a run; each is popped and read.
_SCOPES = ("validation", "internal", "out-of-memory")


@dataclass
class DawnInProcessPipeline:
    """A compiled compute pipeline; `compiled_wgsl` is what Tint was given (the WGSL under test
    plus `adaptations`, verify.gpu.dialect)."""

    wgsl: str
    sha256: str
    entry_point: str
    interface: Interface
    layout: object
    compute: object
    compiled_wgsl: str
    adaptations: tuple[Adaptation, ...]


class DawnInProcessDevice(AdapterProbes):
    """One Dawn device in this process; `limits` overrides WANTED_LIMITS, as for verify.gpu.Device.

    `toggles` are Dawn device toggles to enable (e.g. "disable_workgroup_init"): they make Dawn
    run WGSL otherwise than the specification says, so such a device is for measuring what a kernel
    relies on (verify.checks.toggles), never for a verdict of its own; its `info` names them.
    """

    def __init__(self, adapter_name: str | None = None, limits: dict | None = None, toggles: tuple[str, ...] = ()):
        loaded = load_wgpudawn()
        self._wgpu = loaded.module
        adapter_name = adapter_name if adapter_name is not None else os.environ.get(ADAPTER_ENVIRONMENT)
        adapter, _ = choose_adapter(adapter_name)
        self.toggles = tuple(toggles)
        self.info: AdapterInfo = describe(adapter, self.toggles)
        offered = set(adapter.features)
        requested = [DAWN_FEATURE.get(f, f) for f in OPTIONAL_FEATURES if DAWN_FEATURE.get(f, f) in offered]
        wanted = dict(WANTED_LIMITS, **(limits or {}))
        self.limits = {k: min(v, adapter.limits.get(k, v)) for k, v in wanted.items()}
        try:
            self._device = loaded.extras.request_device_sync(adapter, required_features=requested,
                                                             required_limits=self.limits,
                                                             enable_toggles=list(self.toggles))
        except Exception as exc:  # wgpudawn raises RuntimeError (or ValueError for an unknown toggle)
            raise SetupError(f"could not open a Dawn device on {self.info.name}: {str(exc).splitlines()[0]}") from exc
        enabled = set(loaded.extras.get_toggles(self._device))
        ignored = [t for t in self.toggles if t not in enabled]
        if ignored:
            raise SetupError(f"Dawn did not enable the toggles {', '.join(ignored)} on {self.info.name}")
        self.features = frozenset(OUR_FEATURE.get(f, f) for f in self._device.features if OUR_FEATURE.get(f, f)
                                  in OPTIONAL_FEATURES)
        self._pipelines: dict = {}

    def missing(self, features) -> list[str]:
        """The features in `features` this device lacks."""
        return sorted(set(features) - self.features)

    # -- pipelines -----------------------------------------------------------------------
    def pipeline(self, wgsl: str, entry_point: str | None = None) -> DawnInProcessPipeline:
        """Compile (or fetch from the cache keyed by the WGSL's sha256) a compute pipeline; the bind
        group layout comes from the module's declared bindings, as on every implementation."""
        key = (sha256(wgsl), entry_point)
        if key not in self._pipelines:
            with compiling(f"dawn-inprocess {key[0]}"):
                self._pipelines[key] = self._compile(wgsl, key[0], entry_point)
        return self._pipelines[key]

    def _compile(self, wgsl: str, digest: str, entry_point: str | None) -> DawnInProcessPipeline:
        wgpu = self._wgpu
        interface = read_interface(wgsl)
        entry_point = entry_point_of(interface, entry_point)
        entries = [{"binding": b.binding, "visibility": wgpu.ShaderStage.COMPUTE,
                    "buffer": {"type": buffer_binding_type(b)}} for b in interface.bindings]
        code, adaptations = for_tint(wgsl)
        dev = self._device
        with _ErrorScopes(dev) as scopes:
            module = dev.create_shader_module(code=code)
            layout = dev.create_bind_group_layout(entries=entries)
            compute = dev.create_compute_pipeline(layout=dev.create_pipeline_layout(bind_group_layouts=[layout]),
                                                  compute={"module": module, "entry_point": entry_point})
        if scopes.errors:
            raise ShaderCompileError("\n".join(_tint_text(e) for e in scopes.errors), DawnInProcess.compiler)
        return DawnInProcessPipeline(wgsl, digest, entry_point, interface, layout, compute, code, adaptations)

    # -- runs ----------------------------------------------------------------------------
    def run(self, pipeline: DawnInProcessPipeline, resources: dict, workgroups, *,
            timestamps: bool = False) -> Launched:
        """Bind `resources` (name -> ndarray | bytes | Output | InOut) and dispatch once, as
        verify.gpu.Device.run: one submission carries the dispatch, the copies of every writable
        buffer into one staging buffer and the timestamps; one map reads them back."""
        wgpu = self._wgpu
        dev = self._device
        timing = Timing()
        start = time.perf_counter()
        plan = bind_resources(pipeline.interface, resources)
        with _ErrorScopes(dev) as scopes:
            bound = wgpu_api.upload(wgpu, dev, pipeline.layout, plan)
            timing.upload = time.perf_counter() - start

            start = time.perf_counter()
            commands, staging, timed = wgpu_api.encode(
                wgpu, dev, pipeline.compute, bound, workgroups,
                timestamps=timestamps and "timestamp-query" in self.features,
                staging=lambda size: dev.create_buffer(size=size,
                                                       usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST))
            dev.queue.submit([commands])
            dev.queue.on_submitted_work_done_sync()
            timing.dispatch = time.perf_counter() - start
        if scopes.errors:
            raise KernelError(f"Dawn refused the dispatch: {'; '.join(scopes.errors)}")

        start = time.perf_counter()
        data: bytes | memoryview = b""
        if staging is not None:
            staging.map_sync("READ")
            try:
                data = staging.read_mapped()  # wgpudawn's own copy, writable: the outputs are views of it
            finally:
                staging.unmap()
                staging.destroy()
        outputs, guards, timing.gpu_ns = wgpu_api.unpack(plan, bound, data, timed)
        for _, buf in bound.buffers:
            buf.destroy()
        timing.readback = time.perf_counter() - start
        return Launched(outputs, guards, timing)


class _ErrorScopes:
    """Dawn's error scopes around a block: `errors` holds each scope's message afterwards. An error
    wgpudawn raises at the call (outside any scope it would have gone to) is taken the same way."""

    def __init__(self, device):
        self._device = device
        self.errors: list[str] = []

    def __enter__(self):
        for scope in _SCOPES:
            self._device.push_error_scope(scope)
        return self

    def __exit__(self, kind, value, traceback):
        for _ in _SCOPES:
            error = self._device.pop_error_scope_async().sync_wait()
            if error is not None:
                self.errors.append(getattr(error, "message", None) or str(error))
        if value is not None and isinstance(value, load_wgpudawn().module.GPUError):
            self.errors.append(str(value))
            return True
        return False


def _tint_text(message: str) -> str:
    """Tint's own diagnostic (line, column, the source line, a caret), without Dawn's preamble and
    its call-site trailer, as the Node route reports it."""
    text = message.removeprefix("Error while parsing WGSL: ")
    cut = text.find("\n - While ")
    return (text[:cut] if cut >= 0 else text).strip()


class DawnInProcess(Implementation):
    """Dawn, Chromium's implementation, in this process (PyPI wgpudawn); WGSL compiled by Tint."""

    name = "dawn-inprocess"
    compiler = "Tint"
    summary = "Dawn (Chromium's WebGPU) in this process through PyPI wgpudawn; WGSL compiled by Tint (as in Chrome)"
    preference = 2
    other = "wgpu"
    route_of = "dawn"

    def open(self, adapter=None, limits=None) -> DawnInProcessDevice:
        return DawnInProcessDevice(adapter, limits)

    def adapters(self) -> list[AdapterInfo]:
        return list_adapters()
