"""The WebGPU implementations verify runs kernels on, found by name in a small registry.

A WebGPU implementation is a whole stack: its WGSL compiler, its validation, and the native API it
drives (Vulkan, Metal, D3D12). Browsers ship several (wgpu with Naga in Firefox, Dawn with Tint in
Chrome), a kernel must run on each, and they fail independently of the adapter, so verify runs
kernels on every implementation it finds and compares them (the `implementations` check).

Each implementation is an `Implementation` registered under the entry-point group
`verify.implementations` (verify's own, wgpu and dawn, the same way as any package's):

    [project.entry-points."verify.implementations"]
    mine = "my_package.webgpu:Mine"

Nothing outside an implementation names one: the runtime asks the registry for the default
(`default_implementation`), for all of them in order (`implementation_names`), and for the one a
divergence or the `implementations` check compares with (`Implementation.other`).
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata

from verify.errors import SetupError, UsageError, deprecated
from verify.gpu.device import AdapterInfo, Device

#: Entry-point group other packages register implementations under.
ENTRY_POINT_GROUP = "verify.implementations"
#: Environment variable naming the implementation to run on (as --implementation does).
ENVIRONMENT = "VERIFY_IMPLEMENTATION"
#: The former name of ENVIRONMENT, read with a deprecation warning until verify.errors.REMOVED_IN.
RENAMED_ENVIRONMENT = "VERIFY_BACKEND"
#: Environment variable naming the adapter to run on (as --adapter does).
ADAPTER_ENVIRONMENT = "VERIFY_ADAPTER"


class Implementation(ABC):
    """One WebGPU implementation: how to open a device on it and list its adapters here."""

    #: The name users choose it by (`--implementation NAME`), recorded with every result.
    name: str = ""
    #: The WGSL compiler it uses, named in compile-divergence verdicts (e.g. "Naga").
    compiler: str = ""
    #: One line for `verify adapters` and the docs.
    summary: str = ""
    #: The order among implementations: the lowest is the default, and runs every check of a gate.
    preference: int = 100
    #: The implementation this one is compared with (the `implementations` check, and a compile
    #: divergence when this one's compiler refuses a module).
    other: str = ""
    #: Another registered implementation this one is a second route to (the same stack run another
    #: way, e.g. Dawn in this process rather than in Node): chosen by name only, never added to a
    #: gate that runs that one already. Empty: an implementation of its own.
    route_of: str = ""

    @abstractmethod
    def open(self, adapter: str | None = None, limits: dict | None = None) -> Device:
        """A device on the adapter whose name contains `adapter` (default: $VERIFY_ADAPTER, else the
        best one), holding kernels to `limits` (verify.gpu.device.WANTED_LIMITS by default).
        SetupError (one line) when it cannot."""

    @abstractmethod
    def adapters(self) -> list[AdapterInfo]:
        """The adapters this implementation offers here; SetupError (one line saying what to set up)
        when it cannot run here at all."""

    def available(self, adapter: str | None = None) -> None:
        """SetupError (one line) unless an adapter matching `adapter` (default: $VERIFY_ADAPTER) is here."""
        self.require_adapter(self.adapters(), adapter)

    def require_adapter(self, found: list[AdapterInfo] | tuple[AdapterInfo, ...], adapter: str | None = None) -> None:
        """SetupError (one line) unless `found` (what `adapters()` listed) has an adapter matching
        `adapter` (default: $VERIFY_ADAPTER). Apart from the listing so a caller that has listed
        the adapters already (the gate, which names them in every job's inputs) need not list them
        again: listing Dawn's starts a Node process."""
        wanted = adapter if adapter is not None else os.environ.get(ADAPTER_ENVIRONMENT) or ""
        if not found:
            raise SetupError(f"{self.name}: no WebGPU adapter here")
        if not any(info.matches(wanted) for info in found):
            names = ", ".join(f"{info.name} ({info.backend})" for info in found)
            raise SetupError(f"{self.name}: no adapter matches {wanted!r}; found: {names}")

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ImplementationAdapters:
    """The adapters one implementation offers here, or why it offers none."""

    implementation: Implementation
    adapters: tuple[AdapterInfo, ...]
    unavailable: str | None = None


@lru_cache(maxsize=1)
def _registered() -> dict[str, Implementation]:
    found: dict[str, Implementation] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        try:
            target = ep.load()
            instance = target() if isinstance(target, type) else target
        except Exception as exc:  # a broken package must not take the toolkit down
            raise UsageError(f"implementation {ep.name!r} ({ep.value}) cannot be loaded: "
                             f"{type(exc).__name__}: {exc}") from None
        if not isinstance(instance, Implementation):
            raise UsageError(f"entry point {ep.name!r} ({ep.value}) is not a verify.gpu.implementations.Implementation")
        if instance.name != ep.name:
            raise UsageError(f"entry point {ep.name!r} ({ep.value}) names an implementation called {instance.name!r}")
        found.setdefault(ep.name, instance)
    if not found:
        raise SetupError("no WebGPU implementation is registered: verify's own entry points are missing; "
                         "install verify (`pip install .` or `pip install -e .` in a clone of it)")
    return dict(sorted(found.items(), key=lambda item: (item[1].preference, item[0])))


def implementation_names() -> list[str]:
    """Every registered implementation, default first, but a second route to one of them
    (Implementation.route_of), which is chosen by name only."""
    return [name for name, found in _registered().items() if not found.route_of]


def implementation(name: str | Implementation) -> Implementation:
    """The implementation called `name`; UsageError listing the choices otherwise."""
    if isinstance(name, Implementation):
        return name
    registered = _registered()
    chosen = registered.get(str(name).lower())
    if chosen is None:
        raise UsageError(f"unknown implementation {name!r}; choose one of {', '.join(registered)}")
    return chosen


def default_implementation() -> str:
    """$VERIFY_IMPLEMENTATION, else the registry's first (verify's: wgpu)."""
    return chosen_implementation(None) or implementation_names()[0]


def chosen_implementation(name: str | None) -> str | None:
    """The implementation `name` or $VERIFY_IMPLEMENTATION chooses (checked), or None when neither
    does: then each kernel runs on the implementation it prefers (Kernel.implementations), else on
    the default. $VERIFY_BACKEND, its former name, is still read (with a warning)."""
    chosen = name or os.environ.get(ENVIRONMENT)
    if not chosen and os.environ.get(RENAMED_ENVIRONMENT):
        deprecated(RENAMED_ENVIRONMENT, ENVIRONMENT)
        chosen = os.environ[RENAMED_ENVIRONMENT]
    return implementation(chosen).name if chosen else None


def open_device(name: str | None = None, adapter: str | None = None, limits: dict | None = None) -> Device:
    """A device on implementation `name` (default: default_implementation())."""
    return implementation(name or default_implementation()).open(adapter, limits)


def other_implementation(name: str) -> Implementation:
    """The implementation `name` is compared with (Implementation.other); SetupError if it has none
    registered here."""
    mine = implementation(name)
    if not mine.other or mine.other not in _registered():
        raise SetupError(f"{mine.name} names no second WebGPU implementation to compare with")
    return implementation(mine.other)


def list_implementation_adapters() -> list[ImplementationAdapters]:
    """Every implementation's adapters; one that cannot run here is reported, not raised."""
    found = []
    for chosen in _registered().values():
        try:
            found.append(ImplementationAdapters(chosen, tuple(chosen.adapters())))
        except SetupError as exc:
            found.append(ImplementationAdapters(chosen, (), str(exc)))
    return found
