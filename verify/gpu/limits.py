"""What a WGSL module asks of a device, computed from its text, against the limits it may use.

A driver does not always enforce the limits a device was opened with (lavapipe compiles a module
declaring 64 KiB of workgroup memory on a device opened with 32 KiB), and a browser that grants
only WebGPU's default limits refuses a kernel that needs more. So verify computes the resources
a module declares — workgroup memory by WGSL's layout rules (spec §14.4: AlignOf/SizeOf),
invocations and size per workgroup, storage and uniform buffers — and holds the kernel to the
limits the toolkit opens devices with (a FAIL naming the limit), and reports which of WebGPU's
*default* limits it exceeds (a note: the kernel runs here, but not everywhere).

Constant expressions (`const N: u32 = HEAD_DIM / 4u;`, array sizes, `@workgroup_size(BDX, BDY)`)
are evaluated by the one WGSL front end (verify.wgsl), overrides at their defaults (verify passes
no pipeline constants); a size it cannot evaluate is reported as unknown rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from verify.wgsl.interface import declared, interface_of
from verify.wgsl.types import UnsupportedWgsl, byte_size

#: WebGPU's default limits (WebGPU spec §3.6.2 "Limits"), the ones a compute kernel meets.
WEBGPU_DEFAULTS = {
    "max-compute-workgroup-storage-size": 16384,
    "max-compute-invocations-per-workgroup": 256,
    "max-compute-workgroup-size-x": 256,
    "max-compute-workgroup-size-y": 256,
    "max-compute-workgroup-size-z": 64,
    "max-storage-buffers-per-shader-stage": 8,
    "max-uniform-buffers-per-shader-stage": 12,
}

@dataclass(frozen=True)
class Resources:
    """What one entry point of a module asks of a device."""

    workgroup_storage: int | None
    #: Bytes per workgroup array, for messages.
    workgroup_arrays: dict = field(default_factory=dict)
    workgroup_size: tuple | None = None
    storage_buffers: int = 0
    uniform_buffers: int = 0
    unknown: tuple = ()

    @property
    def invocations(self) -> int | None:
        if self.workgroup_size is None:
            return None
        x, y, z = self.workgroup_size
        return x * y * z

    def demands(self) -> dict:
        """{limit name: what the module needs} for every limit it could be computed for."""
        found = {"max-storage-buffers-per-shader-stage": self.storage_buffers,
                 "max-uniform-buffers-per-shader-stage": self.uniform_buffers}
        if self.workgroup_storage is not None:
            found["max-compute-workgroup-storage-size"] = self.workgroup_storage
        if self.workgroup_size is not None:
            x, y, z = self.workgroup_size
            found.update({"max-compute-invocations-per-workgroup": x * y * z, "max-compute-workgroup-size-x": x,
                          "max-compute-workgroup-size-y": y, "max-compute-workgroup-size-z": z})
        return found


def resources(wgsl: str) -> Resources:
    """The resources `wgsl` (one module) declares; sizes it cannot compute are listed in `unknown`."""
    return _resources(wgsl)


@lru_cache(maxsize=256)
def _resources(wgsl: str) -> Resources:
    module, declarations = declared(wgsl)
    interface = interface_of(module, declarations)
    arrays, unknown = {}, []
    for var in declarations.variables.values():
        if var.space != "workgroup":
            continue
        try:
            arrays[var.name] = byte_size(var.type)
        except UnsupportedWgsl as exc:
            unknown.append(f"workgroup array {var.name}: {exc}")
    total = None if unknown else sum(arrays.values())
    size = None
    if interface.entry_points:
        entry = interface.entry_points[0]
        size = entry.workgroup_size
        if size is None:
            unknown.append(f"@workgroup_size: {entry.unknown_size}")
    storage = sum(1 for b in interface.bindings if b.address_space == "storage")
    uniform = sum(1 for b in interface.bindings if b.address_space == "uniform")
    return Resources(total, arrays, size, storage, uniform, tuple(unknown))


@dataclass(frozen=True)
class LimitReport:
    """A module's demands against the limits verify holds it to and WebGPU's defaults."""

    over_limits: tuple  # messages: the kernel must not pass
    over_defaults: tuple  # notes: runs here, not on a browser that grants only the defaults


def check_limits(modules: list[str], granted: dict) -> LimitReport:
    """Every module of a kernel against `granted` (the limits its device was opened with,
    WebGPU's defaults for the rest) and against WebGPU's defaults."""
    held = dict(WEBGPU_DEFAULTS, **granted)
    over, notes = [], []
    for wgsl in modules:
        found = resources(wgsl)
        for limit, need in found.demands().items():
            allowed = held.get(limit)
            if allowed is not None and need > allowed:
                over.append(f"needs {need} for {limit} ({_detail(limit, found)}); the device verify opens grants "
                            f"{allowed}")
            elif need > WEBGPU_DEFAULTS.get(limit, need):
                notes.append(f"exceeds WebGPU's default {limit} ({need} > {WEBGPU_DEFAULTS[limit]}): a browser "
                             "granting only the default limits refuses this kernel")
        notes += [f"could not compute {what}" for what in found.unknown]
    return LimitReport(tuple(dict.fromkeys(over)), tuple(dict.fromkeys(notes)))


def _detail(limit: str, found: Resources) -> str:
    if limit == "max-compute-workgroup-storage-size":
        return ", ".join(f"{name} {size} B" for name, size in found.workgroup_arrays.items())
    if limit.startswith("max-compute-"):
        return f"@workgroup_size{found.workgroup_size}"
    return "bindings"
