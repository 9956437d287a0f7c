"""Dawn devices with device toggles, opened once per process: what verify.checks.toggles runs a
kernel on.

Dawn's toggles switch off guarantees WGSL makes, for speed, in native deployments: ONNX Runtime's
native WebGPU provider has enabled `disable_robustness`, and some versions `disable_workgroup_init`
(docs/findings.md §13.3, §13.4). A kernel whose outputs change under one relies on the guarantee.

Dawn in this process (PyPI wgpudawn; verify.gpu.dawn.wgpudawn_device) is used where it runs, since
toggles are a device option there; else Dawn in Node (verify.gpu.dawn.device), where they are the
instance flag dawn.node passes on to its devices. Both of one route are compared with each other,
never across routes (two Dawn releases). A toggled device and its untoggled baseline are kept per
(adapter, limits, toggles) for the life of the process, as the worker keeps its devices: each
compiles a kernel's WGSL once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from verify.errors import SetupError

#: WGSL zero-initialises workgroup memory (§7.3); Dawn's toggle skips it.
WORKGROUP_INIT = "disable_workgroup_init"
#: WebGPU keeps out-of-bounds accesses inside the buffer (WGSL §14.5.2); Dawn's toggle drops that.
ROBUSTNESS = "disable_robustness"

#: Which route opened the devices (the first that ran here), and the devices by key.
_route: list[str] = []
_open: dict = {}


@dataclass(frozen=True)
class Route:
    """How Dawn is reached: `name` ("in process" or "Node") and how to open a device on it."""

    name: str

    def open(self, adapter: str | None, limits: dict, toggles: tuple[str, ...]):
        if self.name == IN_PROCESS:
            from verify.gpu.dawn.wgpudawn_device import DawnInProcessDevice

            return DawnInProcessDevice(adapter, limits, toggles)
        from verify.gpu.dawn.device import DawnDevice

        return DawnDevice(adapter, limits, toggles)


IN_PROCESS = "in process"
NODE = "Node"


def dawn_device(adapter: str | None, limits: dict, toggles: tuple[str, ...] = ()):
    """A Dawn device with `toggles` enabled (none: the baseline), on the adapter whose name
    contains `adapter` when Dawn has one, else on Dawn's best; kept for the process. SetupError (one
    line, both routes' reasons) where Dawn runs neither in process nor in Node."""
    key = (adapter, json.dumps(limits, sort_keys=True), tuple(toggles))
    if key not in _open or not getattr(_open[key], "alive", True):
        _open[key] = _opened(adapter, limits, tuple(toggles))
    return _open[key]


def _opened(adapter: str | None, limits: dict, toggles: tuple[str, ...]):
    routes = [Route(_route[0])] if _route else [Route(IN_PROCESS), Route(NODE)]
    refusals = []
    for route in routes:
        for wanted in dict.fromkeys([adapter, None]):
            try:
                device = route.open(wanted, limits, toggles)
            except SetupError as exc:
                refusals.append(f"{route.name}: {str(exc).splitlines()[0]}")
                continue
            if not _route:
                _route.append(route.name)
            return device
    raise SetupError(f"Dawn runs neither in this process nor in Node here ({'; '.join(dict.fromkeys(refusals))})")


def route_name() -> str:
    """The route the devices of this process were opened on ("" before the first)."""
    return _route[0] if _route else ""
