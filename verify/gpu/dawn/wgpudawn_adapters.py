"""Dawn in this process (PyPI `wgpudawn`): loading it with a Vulkan driver it accepts, and its adapters.

wgpudawn is wgpu-py's API on a statically linked Dawn; it installs only the module `wgpudawn`, so
it lives beside wgpu-py (and wgpu-native) in one process. Its one Dawn instance is made on the
first adapter request, and the Vulkan loader reads which drivers to load at that moment, from
the environment. Debian 12's Mesa 22.3 lavapipe gives Dawn no adapter (it lacks
`shaderUniformBufferArrayDynamicIndexing`), so the instance is made with the drivers the Node
route is tried on (verify.gpu.dawn.environment: Mesa 25's lavapipe unpacked by `verify setup
--dawn`, Chromium's SwiftShader) *added* to the system's (VK_ADD_DRIVER_FILES: a real GPU's driver
stays in the list), and the environment is restored at once: wgpu, in the same process, keeps the
system's Mesa. The Mesa 25 lavapipe links only libraries Debian 12 has (LD_LIBRARY_PATH, which a
running process cannot change, is not needed for it).

Dawn prints its refusals (the system lavapipe's missing features) on stderr as the instance is
made; they are kept and shown only when no adapter is left, as the Node route keeps its worker's
stderr for a death. Everything here happens once per process, under a lock.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from importlib import metadata

from verify.errors import SetupError
from verify.gpu.dawn import environment
from verify.gpu.device import OPTIONAL_FEATURES, AdapterInfo
from verify.gpu.environment import quiet_environment

#: The pip extra that brings wgpudawn (and Node, for the Node route and ORT's sessions).
INSTALL_HINT = "pip install 'webgpu-verify[dawn]' (PyPI wgpudawn: Dawn in this process)"
#: Our feature names (wgpu's) -> Dawn's, where they differ.
DAWN_FEATURE = {"subgroup": "subgroups"}
OUR_FEATURE = {v: k for k, v in DAWN_FEATURE.items()}
#: The Vulkan loader's variables the instance is made under, restored afterwards.
_VULKAN_VARIABLES = ("VK_ADD_DRIVER_FILES",)

_lock = threading.Lock()
_loaded: Loaded | None = None


class Loaded:
    """wgpudawn, imported, with its Dawn instance made; what Dawn said while making it."""

    def __init__(self, module, said: str):
        self.module = module
        self.said = said

    @property
    def extras(self):
        from wgpudawn.backends.dawn import extras

        return extras


def load_wgpudawn() -> Loaded:
    """wgpudawn with its instance made over the drivers Dawn accepts here; SetupError (one line)
    when it is not installed or cannot load."""
    global _loaded
    with _lock:
        if _loaded is None:
            try:
                import wgpudawn
            except ImportError:
                raise SetupError(f"dawn-inprocess needs the Python package wgpudawn: {INSTALL_HINT}") from None
            except Exception as exc:  # a wheel for another platform, a missing system library
                raise SetupError(f"wgpudawn cannot be loaded here ({type(exc).__name__}: {exc})") from None
            quiet_environment()
            with _extra_drivers(), _kept_stderr() as said:
                wgpudawn.gpu.enumerate_adapters_sync()  # makes the instance: the loader reads its drivers now
            _loaded = Loaded(wgpudawn, said.text)
        return _loaded


def extra_driver_files() -> list[str]:
    """The ICD files added to the system's for Dawn's instance: Mesa 25's lavapipe and SwiftShader,
    where present (the Node route's fallbacks, in its order)."""
    return [d.env["VK_DRIVER_FILES"] for d in environment.vulkan_drivers() if "VK_DRIVER_FILES" in d.env]


@contextlib.contextmanager
def _extra_drivers():
    saved = {name: os.environ.get(name) for name in _VULKAN_VARIABLES}
    added = [f for f in (os.environ.get("VK_ADD_DRIVER_FILES") or "").split(os.pathsep) if f] + extra_driver_files()
    os.environ["VK_ADD_DRIVER_FILES"] = os.pathsep.join(dict.fromkeys(added))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class _Said:
    text = ""


@contextlib.contextmanager
def _kept_stderr():
    """What C code writes on file descriptor 2 meanwhile, kept instead of shown."""
    said = _Said()
    try:
        saved = os.dup(2)
    except OSError:  # no stderr to redirect
        yield said
        return
    with tempfile.TemporaryFile() as kept:
        os.dup2(kept.fileno(), 2)
        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            kept.seek(0)
            said.text = kept.read().decode(errors="replace")


def wgpudawn_version(module=None) -> str:
    """wgpudawn's version and the Dawn release it is built from (what a finding against this Dawn
    is about, and what the semantics probes' answers are kept by)."""
    try:
        version = metadata.version("wgpudawn")
    except metadata.PackageNotFoundError:
        version = getattr(module, "__version__", "?")
    try:
        from wgpudawn import _lib

        dawn = _lib.dawn_version
    except Exception:  # a build without the attribute
        dawn = "?"
    return f"wgpudawn {version} (Dawn {dawn})"


def enumerate_adapters() -> list:
    """wgpudawn's adapters on a Vulkan, Metal or D3D backend, best first: a GPU before a CPU
    adapter, then the one with more of the features kernels ask for (Mesa 25's lavapipe, with
    shader-f16, before SwiftShader, without)."""
    loaded = load_wgpudawn()
    adapters = list(loaded.module.gpu.enumerate_adapters_sync())

    def rank(adapter) -> tuple:
        features = set(adapter.features)
        wanted = sum(DAWN_FEATURE.get(f, f) in features for f in OPTIONAL_FEATURES)
        return (adapter.info.get("adapter_type") == "CPU", -wanted)

    return sorted(adapters, key=rank)


def describe(adapter, toggles: tuple[str, ...] = ()) -> AdapterInfo:
    """An adapter as verify names it. Its `subgroup_min_size`/`subgroup_max_size` are not read:
    wgpudawn 0.32 reports them wrongly, and verify measures the subgroup size (verify.gpu.probes)."""
    info = adapter.info
    version = wgpudawn_version()
    if toggles:
        version += f", toggles {','.join(toggles)}"
    return AdapterInfo(
        name=info.get("device", "") or info.get("vendor", "unknown"),
        vendor=info.get("vendor", ""),
        backend=info.get("backend_type", ""),
        adapter_type=info.get("adapter_type", ""),
        driver=info.get("description", ""),
        features=tuple(sorted(OUR_FEATURE.get(f, f) for f in adapter.features)),
        limits=dict(adapter.limits),
        implementation="dawn-inprocess",
        implementation_version=version,
    )


def list_adapters() -> list[AdapterInfo]:
    """Every adapter Dawn offers in this process; SetupError when wgpudawn is missing or gives none."""
    found = [describe(a) for a in enumerate_adapters()]
    if not found:
        raise SetupError(no_adapter_reason())
    return found


def no_adapter_reason(wanted: str = "") -> str:
    """Why Dawn has no adapter (matching `wanted`) here, with what it said, in one line."""
    said = " ".join(line.strip() for line in load_wgpudawn().said.splitlines()
                    if line.strip() and not line.strip().startswith(("-", "at ")))
    which = f" matching {wanted!r}" if wanted else ""
    return (f"no Dawn adapter{which} in this process ({said[:300] or 'Dawn said nothing'}); "
            f"{environment.SETUP_HINT}")


def choose_adapter(wanted: str | None):
    """(the wgpudawn adapter, its AdapterInfo): the best one, or the first whose name, vendor,
    backend or driver contains `wanted`. Each device needs an adapter of its own (WebGPU
    consumes an adapter when a device is made from it), so this enumerates again each time."""
    for adapter in enumerate_adapters():
        info = describe(adapter)
        if not wanted or info.matches(wanted):
            return adapter, info
    raise SetupError(no_adapter_reason(wanted or ""))
