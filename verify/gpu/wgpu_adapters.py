"""The WebGPU adapters wgpu can see, and the one to run kernels on."""

from __future__ import annotations

import os
import threading

from verify.errors import SetupError
from verify.gpu.device import AdapterInfo
from verify.gpu.implementations import ADAPTER_ENVIRONMENT
from verify.gpu.wgpu_types import load_wgpu

#: Backends that run compute shaders with the features LLM kernels need. wgpu's OpenGL
#: fallback on llvmpipe has neither shader-f16 nor subgroups, so it is only a last resort.
_BACKEND_PREFERENCE = {"Vulkan": 0, "Metal": 0, "D3D12": 0, "OpenGL": 2}

NO_ADAPTER_HELP = (
    "no WebGPU adapter with compute support was found; on Debian/Ubuntu install a software "
    "Vulkan driver with `sudo apt-get install mesa-vulkan-drivers` (Mesa lavapipe), or run on "
    "a machine with a GPU"
)


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
        implementation="wgpu",
        implementation_version=wgpu_version(),
    )


def wgpu_version() -> str:
    """wgpu-py's version and the wgpu-native it wraps (whose Naga compiles the WGSL, and whose
    pipeline creation decides what WGSL's zero-initialisation becomes)."""
    wgpu = load_wgpu()
    native = getattr(getattr(getattr(wgpu, "backends", None), "wgpu_native", None), "__version__", "?")
    return f"wgpu-py {wgpu.__version__}, wgpu-native {native}"


#: The adapters enumerated in this process, kept (enumerate_adapters); guarded by _lock.
_enumerated: list | None = None
_lock = threading.Lock()


def enumerate_adapters() -> list:
    """All wgpu adapters, best first (native backends before the OpenGL fallback).

    Enumerated once per process and kept: an enumeration opens every backend wgpu-native has
    (Vulkan's instance and OpenGL's EGL display among them), which on an NVIDIA machine costs more
    than opening a device, and a gate's worker opens a device for each set of limits its kernels
    are held to. wgpu-native makes any number of devices from one adapter; should a later release
    refuse that (WebGPU's adapters are spent by their first device), `forget_adapters` and
    enumerating again recover it (WgpuDevice does).
    """
    global _enumerated
    with _lock:
        if _enumerated is None:
            wgpu = load_wgpu()
            adapters = list(wgpu.gpu.enumerate_adapters_sync())
            _enumerated = sorted(adapters, key=lambda a: _BACKEND_PREFERENCE.get(a.info.get("backend_type"), 1))
        return list(_enumerated)


def forget_adapters() -> None:
    """Drop the kept adapters: the next enumerate_adapters enumerates again."""
    global _enumerated
    with _lock:
        _enumerated = None


def list_adapters() -> list[AdapterInfo]:
    return [_describe(a) for a in enumerate_adapters()]


def choose_adapter(name: str | None = None):
    """The adapter to run on: the best one, or the first whose name/backend contains `name`.

    `name` defaults to the VERIFY_ADAPTER environment variable.
    """
    name = name if name is not None else os.environ.get(ADAPTER_ENVIRONMENT)
    adapters = enumerate_adapters()
    described = [_describe(adapter) for adapter in adapters]
    require_match(described, name)
    for adapter, info in zip(adapters, described):
        if not name or info.matches(name):
            return adapter, info
    raise AssertionError("require_match let an unmatched name through")  # pragma: no cover


def require_match(found, name: str | None) -> None:
    """SetupError unless `found` (AdapterInfo) holds an adapter, and one whose name, vendor, backend
    or driver contains `name` when given: choose_adapter's refusals, also for adapters listed once
    and kept (the gate's)."""
    if not found:
        raise SetupError(NO_ADAPTER_HELP)
    if name and not any(info.matches(name) for info in found):
        raise SetupError(f"no adapter matches {name!r}; found: "
                         + ", ".join(f"{info.name} ({info.backend})" for info in found))
