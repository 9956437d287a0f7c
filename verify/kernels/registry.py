"""Finding kernels: those packages register (verify's own among them), and any import path.

A kernel is named in one of three ways, accepted wherever a kernel is (`verify check`, `show`,
`gate --kernels`, `replay`, case files, `verify.check`):

- a name a package registers under the entry-point group `verify.kernels`
  (`rmsnorm = "my_kernels.rmsnorm:RmsNorm"` in its pyproject.toml); verify's own kernels are
  registered the same way, in verify's pyproject.toml, and are listed first ("built in");
- an import path `"pkg.module:Class"`;
- (from Python) a Kernel subclass or instance.

Every kernel resolves to an import path (`KernelSpec.ref`), which is what the worker process
imports: so a kernel from anywhere runs with the same isolation and time limit as ours. Modules
are imported only when a kernel is asked for.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import lru_cache
from importlib import import_module, metadata
from typing import Any

from verify._version import DISTRIBUTION, __version__
from verify.errors import SetupError, UsageError

#: Entry-point group kernels are registered under (verify's own included).
ENTRY_POINT_GROUP = "verify.kernels"


@dataclass(frozen=True)
class KernelSpec:
    """Where a kernel comes from: its name, import path, and the distribution that ships it."""

    name: str
    ref: str
    #: "built in" (registered by verify itself), "entry point" (by another package) or "import path".
    origin: str
    distribution: str = ""
    version: str = ""

    @property
    def provenance(self) -> str:
        """e.g. "webgpu-verify 0.2.0 (built in)" or "my-kernels 1.0 (entry point)"."""
        package = f"{self.distribution} {self.version}".strip() or "unknown package"
        return f"{package} ({self.origin})"


@lru_cache(maxsize=1)
def _registered() -> dict[str, KernelSpec]:
    """Every registered kernel by name: verify's own first (in the order it registers them), then
    other packages' by name; a name verify registers cannot be taken over by another package."""
    own: dict[str, KernelSpec] = {}
    others: dict[str, KernelSpec] = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = getattr(ep, "dist", None)
        name, version = (dist.name, dist.version) if dist is not None else ("", "")
        if name == DISTRIBUTION:
            own[ep.name] = KernelSpec(ep.name, ep.value, "built in", name, version)
        else:
            others.setdefault(ep.name, KernelSpec(ep.name, ep.value, "entry point", name, version))
    if not own:
        raise SetupError(f"verify's own kernels are not registered: {DISTRIBUTION} is not installed here "
                         "(`pip install .` or `pip install -e .` in a clone of it)")
    others = {name: spec for name, spec in sorted(others.items()) if name not in own}
    return {**own, **others}


def _module_exists(ref: str) -> bool:
    module = ref.split(":")[0]
    try:
        import_module(module)
    except ModuleNotFoundError as exc:
        # A kernel whose module is absent is not offered; a missing *dependency* of a present
        # module (e.g. apache-tvm) still is, and says so when used.
        return not (module == exc.name or module.startswith(f"{exc.name}."))
    except Exception:
        return True  # a module that raises is offered, and says what it raised when loaded
    return True


#: verify's own kernel modules that moved, by their former import path: a case file, results file
#: or script naming the old path keeps working for a release, with a warning (docs/cli.md §12).
#: The vendors' kernels moved into one subpackage per family (docs/architecture.md §2.6).
MOVED_MODULES = {
    "verify.sources.ort.kernels": "verify.sources.ort.dp4a.matmul_nbits",
    "verify.sources.ort.dp4a_kernels": "verify.sources.ort.dp4a.programs",
    "verify.sources.ort.attention_kernels": "verify.sources.ort.attention.sessions",
    "verify.sources.ort.attention_mha": "verify.sources.ort.attention.mha",
    "verify.sources.ort.attention_programs": "verify.sources.ort.attention.programs",
    "verify.sources.ort.attention_copy": "verify.sources.ort.attention.copy_kv_cache",
    "verify.sources.ort.attention_paged_programs": "verify.sources.ort.attention.paged_programs",
    "verify.sources.ort.attention_paged_prefill": "verify.sources.ort.attention.paged_prefill",
    "verify.sources.tvm.kernels": "verify.sources.tvm.attention.decode",
    "verify.sources.tvm.prefill": "verify.sources.tvm.attention.prefill",
}


def current_ref(ref: str) -> str:
    """`ref` ("pkg.module:Class") with a moved module of verify's replaced by where it lives now,
    said once as a deprecated name; any other ref as it is."""
    from verify.errors import deprecated

    module, colon, qualname = ref.partition(":")
    if module in MOVED_MODULES:
        deprecated(f"the kernel path {module}:...", f"{MOVED_MODULES[module]}:...")
        return f"{MOVED_MODULES[module]}{colon}{qualname}"
    return ref


def kernel_specs() -> list[KernelSpec]:
    """Every kernel `verify list` and `verify gate` know by name: verify's own, then registered."""
    return [spec for spec in _registered().values() if _module_exists(spec.ref)]


def kernel_names() -> list[str]:
    return [spec.name for spec in kernel_specs()]


def spec_of(kernel) -> KernelSpec:
    """The KernelSpec of a name, an import path, a Kernel subclass or a Kernel instance."""
    from verify.kernels.contract import Kernel

    if isinstance(kernel, Kernel):
        kernel = type(kernel)
    if inspect.isclass(kernel):
        if not issubclass(kernel, Kernel):
            raise UsageError(f"{kernel.__qualname__} is not a verify.Kernel subclass")
        ref = f"{kernel.__module__}:{kernel.__qualname__}"
        return _path_spec(kernel.name or kernel.__qualname__, ref)
    if not isinstance(kernel, str) or not kernel:
        raise UsageError(f"a kernel is a name, a 'pkg.module:Class' path or a Kernel class, not {kernel!r}")
    registered = _registered()
    if kernel in registered and _module_exists(registered[kernel].ref):
        return registered[kernel]
    if ":" in kernel:
        return _path_spec("", current_ref(kernel))
    raise UsageError(f"unknown kernel {kernel!r}; valid kernels: {', '.join(kernel_names())} "
                     "(or a 'pkg.module:Class' import path)")


def _path_spec(name: str, ref: str) -> KernelSpec:
    module = ref.split(":")[0]
    top = module.split(".")[0]
    for spec in _registered().values():
        if spec.ref == ref:
            return spec
    if top == "verify":
        return KernelSpec(name, ref, "import path", DISTRIBUTION, __version__)
    dists = metadata.packages_distributions().get(top, [])
    version = ""
    if dists:
        try:
            version = metadata.version(dists[0])
        except metadata.PackageNotFoundError:
            pass
    return KernelSpec(name, ref, "import path", dists[0] if dists else "", version)


class KernelLoadError(UsageError):
    """A kernel's package cannot be imported, or its class cannot be made: one line naming the
    package and what it raised (a broken package must not take verify down)."""


def _package_of(ref: str) -> str:
    top = ref.split(":")[0].split(".")[0]
    dists = metadata.packages_distributions().get(top, [])
    return f"package {dists[0]}" if dists else f"module {ref.split(':')[0]}"


def load_kernel(ref: str):
    """Import "pkg.module:Class" and instantiate it; UsageError saying what is wrong with the path,
    KernelLoadError naming the package when its own code raises."""
    from verify.kernels.contract import Kernel

    ref = current_ref(ref)
    module_name, _, qualname = ref.partition(":")
    if not module_name or not qualname:
        raise UsageError(f"{ref!r}: a kernel path is 'pkg.module:Class'")
    try:
        module = import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(f"{exc.name}.")):
            raise UsageError(f"{ref!r}: no module named {module_name!r} "
                             "(is its package installed, or on PYTHONPATH?)") from None
        raise KernelLoadError(f"kernel {ref!r} cannot be loaded: {_package_of(ref)} needs the missing module "
                              f"{exc.name!r}") from None
    except Exception as exc:
        raise KernelLoadError(f"kernel {ref!r} cannot be loaded: importing {_package_of(ref)} raised "
                              f"{type(exc).__name__}: {exc}") from None
    target: Any = module  # then the attribute qualname names within it
    for part in qualname.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise UsageError(f"{ref!r}: module {module_name!r} has no {qualname!r}")
    if not (inspect.isclass(target) and issubclass(target, Kernel)):
        raise UsageError(f"{ref!r} is not a verify.Kernel subclass")
    if inspect.isabstract(target):
        missing = ", ".join(sorted(target.__abstractmethods__))
        raise UsageError(f"{ref!r} does not implement {missing}")
    try:
        kernel = target()
    except Exception as exc:
        raise KernelLoadError(f"kernel {ref!r} cannot be made: {qualname}() in {_package_of(ref)} raised "
                              f"{type(exc).__name__}: {exc}") from None
    if not kernel.name:
        raise UsageError(f"{ref!r} has no `name`; give the Kernel subclass a name attribute")
    return kernel


def get_kernel(kernel):
    """The Kernel a name, import path, class or instance stands for (an instance is returned as is)."""
    from verify.kernels.contract import Kernel

    if isinstance(kernel, Kernel):
        return kernel
    spec = spec_of(kernel)
    loaded = load_kernel(spec.ref)
    if spec.origin == "entry point" and loaded.name != spec.name:
        raise UsageError(f"entry point {spec.name!r} ({spec.distribution}) points at a kernel named {loaded.name!r}; "
                         "the names must match")
    return loaded
