"""Discover the WebGPU adapters wgpu can see and pick the one to run kernels on."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from enum import StrEnum

from verify.errors import SetupError

#: Backends that run compute shaders with the features LLM kernels need. wgpu's OpenGL
#: fallback on llvmpipe has neither shader-f16 nor subgroups, so it is only a last resort.
_BACKEND_PREFERENCE = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 2}

NO_ADAPTER_HELP = (
    "no WebGPU adapter with compute support was found; on Debian/Ubuntu install a software "
    "Vulkan driver with `sudo apt-get install mesa-vulkan-drivers` (Mesa lavapipe), or run on "
    "a machine with a GPU"
)


class Implementation(StrEnum):
    """The WebGPU implementation that compiles and runs a kernel (chosen with --backend).

    An adapter (the driver and device) and an implementation (the WGSL compiler and the
    WebGPU validation on top of it) fail independently, so results name both.
    """

    WGPU = "wgpu"  # wgpu-native through wgpu-py; WGSL compiled by Naga
    DAWN = "dawn"  # Dawn, Chromium's implementation, through Node; WGSL compiled by Tint

    @property
    def compiler(self) -> str:
        return {"wgpu": "Naga", "dawn": "Tint"}[self.value]


@dataclass(frozen=True)
class AdapterInfo:
    """What a user needs to know to interpret a result: which implementation ran the kernel.

    `backend` is the native graphics API under the implementation (Vulkan, Metal, ...);
    `implementation` is the WebGPU implementation itself. (`label` is the pair as one name, the
    report's column for a run.)
    """

    name: str
    vendor: str
    backend: str
    adapter_type: str
    driver: str
    features: tuple[str, ...] = field(default=())
    limits: dict = field(default_factory=dict, compare=False, hash=False)
    implementation: Implementation = Implementation.WGPU

    @property
    def label(self) -> str:
        """Adapter and implementation as one name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits) [Vulkan, dawn]"."""
        return f"{self.name} [{self.backend}, {self.implementation}]"

    def as_record(self) -> dict:
        return {
            "name": self.name,
            "vendor": self.vendor,
            "backend": self.backend,
            "type": self.adapter_type,
            "driver": self.driver,
            "implementation": str(self.implementation),
        }


def _describe(adapter) -> AdapterInfo:
    info = adapter.info
    return AdapterInfo(
        name=info.get("device", "") or info.get("vendor", "unknown"),
        vendor=info.get("vendor", ""),
        backend=info.get("backend_type", ""),
        adapter_type=info.get("adapter_type", ""),
        driver=info.get("description", ""),
        features=tuple(sorted(adapter.features)),
        limits=dict(adapter.limits),
    )


def quiet_environment() -> None:
    """Mesa warns on every start without XDG_RUNTIME_DIR; give it (and child processes) a private one."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        path = f"/tmp/verify-xdg-{os.getuid()}"
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = path


def enumerate_adapters() -> list:
    """All wgpu adapters, best first (native backends before the OpenGL fallback)."""
    quiet_environment()
    import wgpu

    adapters = list(wgpu.gpu.enumerate_adapters_sync())
    return sorted(adapters, key=lambda a: _BACKEND_PREFERENCE.get(a.info.get("backend_type"), 1))


def list_adapters() -> list[AdapterInfo]:
    return [_describe(a) for a in enumerate_adapters()]


def choose_adapter(name: str | None = None):
    """The adapter to run on: the best one, or the first whose name/backend contains `name`.

    `name` defaults to the VERIFY_ADAPTER environment variable.
    """
    name = name if name is not None else os.environ.get("VERIFY_ADAPTER")
    adapters = enumerate_adapters()
    if not adapters:
        raise SetupError(NO_ADAPTER_HELP)
    if not name:
        return adapters[0], _describe(adapters[0])
    for adapter in adapters:
        info = _describe(adapter)
        if name.lower() in f"{info.name} {info.vendor} {info.backend} {info.driver}".lower():
            return adapter, info
    found = ", ".join(f"{i.name} ({i.backend})" for i in map(_describe, adapters))
    raise SetupError(f"no adapter matches {name!r}; found: {found}")
