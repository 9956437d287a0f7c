"""What `verify version --verbose` (and `verify --version --verbose`) prints: every version a
verdict depends on, found here, so a bug report or a CI log says which stack gave the result.

verify and Python; wgpu-py and the wgpu-native library it loads; Node and the npm packages Dawn
and ONNX Runtime Web run from (`webgpu`, `onnxruntime-web`, in the first folder Dawn searches that
has them); apache-tvm and onnx (pip's metadata, never imported: importing TVM takes seconds); and
each WebGPU implementation's adapters with their driver text, which names Mesa's or the GPU
driver's version. Nothing here installs or changes anything; what is missing says so.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from importlib import metadata

from verify._version import DISTRIBUTION, __version__


@dataclass(frozen=True)
class Found:
    """One line of the listing: what, and its version (or why there is none)."""

    name: str
    version: str

    def line(self) -> str:
        return f"{self.name}: {self.version}"


def _distribution(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def packages() -> list[Found]:
    """Versions of verify's Python and Node stack (no adapter opened)."""
    from verify.gpu.dawn.install import installed_versions, node_modules_candidates, pinned_packages
    from verify.results.reuse import _node_version, stack_versions

    wgpu = stack_versions("wgpu")
    found = [Found("verify", f"{__version__} ({DISTRIBUTION})"),
             Found("Python", f"{platform.python_implementation()} {platform.python_version()}"),
             Found("wgpu-py", wgpu.get("wgpu") or "not installed"),
             Found("wgpu-native", wgpu.get("wgpu-native") or "not loaded"),
             Found("Node.js", _node_version() or "not found (VERIFY_NODE, else node on PATH, else the dawn extra's)"),
             Found("wgpudawn", _distribution("wgpudawn"))]
    pins = pinned_packages()
    folder = next((f for f in node_modules_candidates() if any(installed_versions(f).values())), None)
    installed = installed_versions(folder) if folder is not None else {}
    for name, pin in pins.items():
        version = installed.get(name)
        found.append(Found(f"npm {name}", f"{version} (in {folder}; pinned {pin})" if version else
                           f"not installed (pinned {pin}; `verify setup --dawn` installs it)"))
    found += [Found("apache-tvm", _distribution("apache-tvm")), Found("onnx", _distribution("onnx"))]
    return found


def adapters() -> list[Found]:
    """Each implementation's adapters: name, native API, driver text and implementation version;
    an implementation that cannot run here says why."""
    from verify.gpu.implementations import list_implementation_adapters

    found = []
    for listed in list_implementation_adapters():
        name = listed.implementation.name
        if not listed.adapters:
            found.append(Found(f"adapter [{name}]", f"none ({listed.unavailable or 'no adapter found'})"))
        for info in listed.adapters:
            found.append(Found(f"adapter [{name}]", f"{info.name} ({info.backend}); driver {info.driver or '?'}; "
                               f"{info.implementation_version or 'implementation version not reported'}"))
    return found


def listing(verbose: bool) -> list[str]:
    """The lines `verify version` prints: the version alone, or with `verbose` everything above."""
    if not verbose:
        return [f"verify {__version__} ({DISTRIBUTION} {__version__})"]
    return [found.line() for found in packages() + adapters()]
