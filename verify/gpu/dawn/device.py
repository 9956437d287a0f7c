"""A WebGPU device on Dawn (Chromium's implementation, WGSL compiled by Tint), through Node.

The same interface as verify.gpu.Device (pipeline, run, missing, features, limits, info,
subgroup_size, zeroes_workgroup_memory), so every kernel runs on either implementation
unchanged. Dawn lives in a Node process (worker.mjs, npm `webgpu`); this class owns it.
Bindings, poison and guards come from verify.gpu.binding, as for wgpu.
"""

from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass, replace

from verify.errors import KernelError, SetupError
from verify.gpu.binding import (
    BoundBuffer,
    bind_resources,
    buffer_binding_type,
    entry_point_of,
    grid,
    unpack_readbacks,
)
from verify.gpu.compiling import compiling
from verify.gpu.dawn import environment
from verify.gpu.dawn.process import ANSWER_S, NodeProcess, NodeProcessDied
from verify.gpu.device import (
    OPTIONAL_FEATURES,
    WANTED_LIMITS,
    AdapterInfo,
    Launched,
    ShaderCompileError,
    Timing,
)
from verify.gpu.dialect import Adaptation, for_tint
from verify.gpu.implementations import ADAPTER_ENVIRONMENT, Implementation
from verify.gpu.probes import AdapterProbes
from verify.wgsl import Interface, read_interface, sha256

#: Our feature names (wgpu's) -> Dawn's, where they differ.
_DAWN_FEATURE = {"subgroup": "subgroups"}
_OUR_FEATURE = {v: k for k, v in _DAWN_FEATURE.items()}


def _camel(kebab: str) -> str:
    head, *rest = kebab.split("-")
    return head + "".join(word.title() for word in rest)


def _kebab(camel: str) -> str:
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in camel)


@dataclass(frozen=True)
class Dispatch:
    """One compute pass of a submission: a compiled pipeline, its buffers (binding -> index
    into the submission's buffers) and its grid."""

    pipeline: DawnPipeline
    bindings: tuple[tuple[int, int], ...]
    workgroups: tuple[int, int, int]


@dataclass
class DawnPipeline:
    """A compiled compute pipeline; `compiled_wgsl` is what Tint was given (the WGSL under test
    plus `adaptations`, see verify.gpu.dialect)."""

    wgsl: str
    sha256: str
    entry_point: str
    interface: Interface
    handle: int
    compiled_wgsl: str
    adaptations: tuple[Adaptation, ...]


def _adapter_info(raw: dict) -> AdapterInfo:
    return AdapterInfo(
        name=raw["name"],
        vendor=raw.get("vendor") or "",
        backend=raw["backend"].title() if raw["backend"] != "opengles" else "OpenGLES",
        # JavaScript's adapter info has no adapter type; Dawn marks CPU adapters as fallback ones.
        adapter_type="CPU" if raw.get("fallback") else "GPU",
        driver=raw.get("description") or "",
        features=tuple(sorted(_OUR_FEATURE.get(f, f) for f in raw["features"])),
        limits={_kebab(k): v for k, v in raw["limits"].items()},
        implementation="dawn",
        # Only the pinned npm webgpu (dawn.node) runs (environment.find_webgpu_module).
        implementation_version=f"npm webgpu {environment.pinned_webgpu_version()} (dawn.node)",
    )


def _start(driver: environment.VulkanDriver, toggles: tuple[str, ...] = ()) -> NodeProcess:
    env = dict(driver.env, VERIFY_WEBGPU_MODULE=str(environment.find_webgpu_module()))
    if toggles:  # dawn.node's instance flag, which it passes on to every device (worker.mjs: VERIFY_DAWN_FLAGS)
        flags = [f for f in os.environ.get("VERIFY_DAWN_FLAGS", "").split(";") if f]
        env["VERIFY_DAWN_FLAGS"] = ";".join([*flags, f"enable-dawn-features={','.join(toggles)}"])
    return NodeProcess(environment.find_node(), str(environment.WORKER), env)


def list_dawn_adapters() -> list[AdapterInfo]:
    """Every adapter Dawn offers under each Vulkan driver present (see environment), deduplicated."""
    found: dict[tuple, AdapterInfo] = {}
    for driver in environment.vulkan_drivers():
        process = _start(driver)
        try:
            reply, _ = process.request({"op": "adapters"}, timeout=ANSWER_S)
        except NodeProcessDied as exc:
            raise SetupError(f"Dawn could not start on the {driver.name} Vulkan driver: {exc}") from None
        finally:
            process.close()
        for raw in reply.get("adapters", []):
            info = _adapter_info(raw)
            found.setdefault((info.name, info.driver), info)
    return list(found.values())


#: Buffer sizes asked for as large as the adapter allows (the worker takes the smaller of the two):
#: wgpu-py gives a device every limit it does not name at the adapter's value, and TVM's and ORT's web
#: runtimes ask for the adapter's maxBufferSize and maxStorageBufferBindingSize. At WebGPU's default
#: (128 MiB a binding) a case of the nightly's larger configs was refused by Dawn alone, a FAIL that
#: was verify's request, not the kernel.
ADAPTER_BUFFER_LIMITS = {"max-storage-buffer-binding-size": 2**53, "max-buffer-size": 2**53}


class DawnDevice(AdapterProbes):
    """One Dawn device; `limits` overrides WANTED_LIMITS, as for verify.gpu.Device.

    `adapter_name` picks the first adapter whose name, vendor, backend or driver contains it
    (default: $VERIFY_ADAPTER, else the first driver with an adapter; see environment).
    """

    def __init__(self, adapter_name: str | None = None, limits: dict | None = None, toggles: tuple[str, ...] = ()):
        adapter_name = adapter_name if adapter_name is not None else os.environ.get(ADAPTER_ENVIRONMENT)
        wanted = {_camel(k): v for k, v in {**WANTED_LIMITS, **ADAPTER_BUFFER_LIMITS, **(limits or {})}.items()}
        request = {"op": "open", "adapter": adapter_name or None,
                   "features": [_DAWN_FEATURE.get(f, f) for f in OPTIONAL_FEATURES], "limits": wanted}
        refusals = []
        for driver in environment.vulkan_drivers():
            process = _start(driver, tuple(toggles))
            try:
                reply, _ = process.request(request, timeout=ANSWER_S)
            except NodeProcessDied as exc:
                raise SetupError(f"Dawn could not start on the {driver.name} Vulkan driver: {exc}") from None
            if "error" not in reply:
                break
            process.close()
            refusals.append(f"{driver.name}: {reply['error']['message'].splitlines()[0]}")
        else:
            raise SetupError(f"no Dawn adapter{f' matching {adapter_name!r}' if adapter_name else ''} "
                             f"({'; '.join(refusals)}); {environment.SETUP_HINT}")
        self._process = process
        self.driver = driver
        self.info = _adapter_info(reply["adapter"])
        #: Dawn device toggles enabled (e.g. "disable_workgroup_init"): such a device runs WGSL
        #: otherwise than the specification says, for verify.checks.toggles; `info` names them.
        self.toggles = tuple(toggles)
        if self.toggles:
            self.info = replace(self.info, implementation_version=f"{self.info.implementation_version}, "
                                f"toggles {','.join(self.toggles)}")
        self.features = frozenset(_OUR_FEATURE.get(f, f) for f in reply["features"])
        self.limits = {_kebab(k): v for k, v in reply["limits"].items()}
        self._pipelines: dict = {}
        self._handles = itertools.count(1)

    @property
    def alive(self) -> bool:
        """Whether its Node process still runs (a dead one is replaced by verify.worker's device cache)."""
        return self._process.alive

    @property
    def pid(self) -> int:
        """The Node process's id (tests check it dies with us)."""
        return self._process.pid

    def missing(self, features) -> list[str]:
        """The features in `features` this device lacks."""
        return sorted(set(features) - self.features)

    def close(self) -> None:
        self._process.close()

    # -- pipelines -----------------------------------------------------------------------
    def pipeline(self, wgsl: str, entry_point: str | None = None) -> DawnPipeline:
        """Compile (or fetch from the cache keyed by the WGSL's sha256) a compute pipeline;
        the bind group layout comes from the module's declared bindings, as on wgpu."""
        key = (sha256(wgsl), entry_point)
        if key not in self._pipelines:
            with compiling(f"dawn {key[0]}"):
                self._pipelines[key] = self._compile(wgsl, key[0], entry_point)
        return self._pipelines[key]

    def _compile(self, wgsl: str, digest: str, entry_point: str | None) -> DawnPipeline:
        interface = read_interface(wgsl)
        entry_point = entry_point_of(interface, entry_point)
        bindings = [{"binding": b.binding, "type": buffer_binding_type(b)} for b in interface.bindings]
        compiled, adaptations = for_tint(wgsl)
        handle = next(self._handles)
        reply, _ = self._process.request(
            {"op": "compile", "id": handle, "wgsl": compiled, "entry_point": entry_point, "bindings": bindings})
        if "error" in reply:
            raise ShaderCompileError(_error_text(reply["error"]), compiler=Dawn.compiler)
        return DawnPipeline(wgsl, digest, entry_point, interface, handle, compiled, adaptations)

    # -- runs ----------------------------------------------------------------------------
    def run(self, pipeline: DawnPipeline, resources: dict, workgroups, *, timestamps: bool = False) -> Launched:
        """Bind `resources` (name -> ndarray | bytes | Output | InOut) and dispatch once, as
        verify.gpu.Device.run: one submission carries the dispatch, the readback copies and the
        timestamps."""
        start = time.perf_counter()
        plan = bind_resources(pipeline.interface, resources)
        dispatch = Dispatch(pipeline, tuple((b.binding.binding, i) for i, b in enumerate(plan)), grid(workgroups))
        raw, timing = self._submit(plan, [dispatch], timestamps, start)
        outputs, guards = unpack_readbacks(plan, raw)
        timing.readback += time.perf_counter() - start - (timing.upload + timing.dispatch + timing.readback)
        return Launched(outputs, guards, timing)

    def _submit(self, plan: list[BoundBuffer], dispatches: list[Dispatch], timestamps: bool,
                start: float) -> tuple[dict[str, bytes], Timing]:
        """One submission of any number of dispatches over the buffers of `plan`; the bytes of
        every buffer with a readback, by name, and the timing since `start`.

        Upload is our encoding and sending plus Dawn's buffer creation; dispatch is Dawn's
        submit-to-done; readback is the rest (mapping, the reply's transfer, unpacking).
        """
        timestamps = timestamps and "timestamp-query" in self.features
        header = {
            "op": "run", "timestamps": timestamps,
            "buffers": [{"size": len(b.data), "usage": buffer_binding_type(b.binding),
                         "readback": b.readback is not None}
                        for b in plan],
            "dispatches": [{"pipeline": d.pipeline.handle, "bindings": d.bindings, "workgroups": d.workgroups}
                           for d in dispatches],
        }
        sent = time.perf_counter()
        reply, blobs = self._process.request(header, [b.data for b in plan])
        received = time.perf_counter()
        if "error" in reply:
            raise KernelError(f"Dawn refused the dispatch: {_error_text(reply['error'])}")
        node = reply["timing"]
        upload, dispatch = node["upload"] / 1e3, node["dispatch"] / 1e3
        timing = Timing(upload=sent - start + upload, dispatch=dispatch, readback=received - sent - upload - dispatch)
        if reply.get("gpu_ns") is not None:
            timing.gpu_ns = float(sum(reply["gpu_ns"]))
        names = [b.name for b in plan if b.readback is not None]
        return dict(zip(names, blobs, strict=True)), timing


class DawnWorkerError(RuntimeError):
    """worker.mjs failed in a way that is a bug of verify, not of the kernel under test."""


def _error_text(error: dict) -> str:
    """The message of a refusal by Dawn or Tint (kernel errors); a worker bug raises instead."""
    if error.get("kind") == "internal":
        raise DawnWorkerError(f"the Dawn worker failed: {error['message']}")
    return error["message"]


class Dawn(Implementation):
    """Dawn, Chromium's implementation, in a Node child process (npm `webgpu`); WGSL compiled by Tint."""

    name = "dawn"
    compiler = "Tint"
    summary = "Dawn (Chromium's WebGPU) through Node and npm `webgpu`; WGSL compiled by Tint (as in Chrome)"
    preference = 1
    other = "wgpu"

    def open(self, adapter=None, limits=None) -> DawnDevice:
        return DawnDevice(adapter, limits)

    def adapters(self) -> list[AdapterInfo]:
        return list_dawn_adapters()

    def require_adapter(self, found, adapter=None) -> None:
        """Dawn needs Node, the pinned npm package and a Vulkan driver it accepts, which only asking
        it tells (`adapters()`, which raises when it cannot ask)."""
        wanted = adapter if adapter is not None else os.environ.get(ADAPTER_ENVIRONMENT) or ""
        if not any(info.matches(wanted) for info in found):
            which = f" matching {wanted!r}" if wanted else ""
            names = ", ".join(info.name for info in found) or "none"
            raise SetupError(f"no Dawn adapter{which} (found: {names}); {environment.SETUP_HINT}")
