"""Choose the WebGPU implementation by name: `open_device("dawn", adapter, limits)`.

"wgpu" (wgpu-native, Naga; the default) runs in this process; "dawn" (Dawn, Tint) runs in a
Node child process. Both devices have the same interface, so callers never branch on it.
The default comes from $VERIFY_BACKEND.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from verify.errors import SetupError, UsageError
from verify.gpu.adapters import AdapterInfo, Implementation

BACKEND_ENV = "VERIFY_BACKEND"


def backend_named(name: str | None) -> Implementation:
    """The implementation called `name` (default: $VERIFY_BACKEND, else wgpu); a UsageError
    listing the choices otherwise."""
    name = name or os.environ.get(BACKEND_ENV) or Implementation.WGPU.value
    try:
        return Implementation(name.lower())
    except ValueError:
        choices = ", ".join(i.value for i in Implementation)
        raise UsageError(f"unknown backend {name!r}; choose one of {choices}") from None


def chosen_backend(name: str | None) -> str | None:
    """The backend `name` or $VERIFY_BACKEND chooses, checked ("wgpu" | "dawn"), or None when
    neither does: then each kernel runs on its own preferred backend (Kernel.backends, see
    verify.plan.kernel_backend), else on wgpu."""
    if not (name or os.environ.get(BACKEND_ENV)):
        return None
    return backend_named(name).value


def open_device(backend: str | None = None, adapter: str | None = None, limits: dict | None = None):
    """A device on `backend` ("wgpu" | "dawn"), on the adapter matching `adapter`, holding the
    kernel to `limits` (see verify.gpu.device.WANTED_LIMITS)."""
    if backend_named(backend) is Implementation.DAWN:
        from verify.gpu.dawn import DawnDevice

        return DawnDevice(adapter, limits)
    from verify.gpu.device import Device

    return Device(adapter, limits)


def ensure_available(backend: str | None, adapter: str | None = None) -> None:
    """Raise one SetupError line now if `backend` has no adapter matching `adapter` here
    (before any job starts). Dawn needs Node, the pinned npm package and a Vulkan driver it
    accepts, which only asking it tells."""
    if backend_named(backend) is not Implementation.DAWN:
        from verify.gpu.adapters import choose_adapter

        choose_adapter(adapter)
        return
    from verify.gpu.dawn import environment, list_dawn_adapters

    adapters = list_dawn_adapters()
    wanted = (adapter if adapter is not None else os.environ.get("VERIFY_ADAPTER") or "").lower()
    if not any(wanted in f"{a.name} {a.vendor} {a.backend} {a.driver}".lower() for a in adapters):
        found = ", ".join(a.name for a in adapters) or "none"
        which = f" matching {adapter!r}" if wanted else ""
        raise SetupError(f"no Dawn adapter{which} (found: {found}); {environment.SETUP_HINT}")


@dataclass(frozen=True)
class BackendAdapters:
    """The adapters one implementation offers here, or why it offers none."""

    implementation: Implementation
    adapters: tuple[AdapterInfo, ...]
    unavailable: str | None = None


def list_backend_adapters() -> list[BackendAdapters]:
    """Every implementation's adapters; a missing implementation is reported, not raised."""
    from verify.gpu.adapters import list_adapters
    from verify.gpu.dawn import list_dawn_adapters

    found = []
    for implementation, lister in ((Implementation.WGPU, list_adapters), (Implementation.DAWN, list_dawn_adapters)):
        try:
            found.append(BackendAdapters(implementation, tuple(lister())))
        except SetupError as exc:
            found.append(BackendAdapters(implementation, (), str(exc)))
    return found
