"""Finding kernels: the built-in ones, those other packages register, and any import path.

A kernel is named in one of four ways, accepted wherever a kernel is (`verify check`, `show`,
`gate --kernels`, `replay`, case files, `verify.check`):

- a built-in name (`decode.tiled`);
- a name another package registers under the entry-point group `verify.kernels`
  (`rmsnorm = "my_kernels.rmsnorm:RmsNorm"` in its pyproject.toml);
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

from verify.errors import UsageError

#: Entry-point group other packages register kernels under.
ENTRY_POINT_GROUP = "verify.kernels"

_BUILT_IN = {
    "decode.tiled": "verify.kernels.attention.decode_tiled:DecodeTiled",
    "decode.sharded": "verify.kernels.attention.decode_sharded:DecodeSharded",
    "decode": "verify.kernels.attention.decode_switch:DecodeSwitch",
    "merge_state": "verify.kernels.attention.merge_state:MergeState",
    "rope": "verify.kernels.attention.rope:Rope",
    "dp4a.quantize": "verify.kernels.dp4a.quantize:Quantize",
    "dp4a.matmul": "verify.kernels.dp4a.matmul:Matmul",
    "tvm.decode": "verify.sources.tvm_kernels:TvmDecode",
    "tvm.decode_sliding_window": "verify.sources.tvm_kernels:TvmDecodeSlidingWindow",
    "tvm.merge_state": "verify.sources.tvm_kernels:TvmMergeState",
    "ort.matmul_nbits": "verify.sources.ort.kernels:OrtMatmulNBits",
    "ort.dp4a.quantize": "verify.sources.ort.dp4a_kernels:OrtQuantize",
    "ort.dp4a.matmul": "verify.sources.ort.dp4a_kernels:OrtMatmul",
    "ort.dp4a.matmul_small_m": "verify.sources.ort.dp4a_kernels:OrtMatmulSmallM",
}


@dataclass(frozen=True)
class KernelSpec:
    """Where a kernel comes from: its name, import path, and the distribution that ships it."""

    name: str
    ref: str
    #: "built in", "entry point" or "import path".
    origin: str
    distribution: str = ""
    version: str = ""

    @property
    def provenance(self) -> str:
        """e.g. "webgpu-verify 0.2.0 (built in)" or "my-kernels 1.0 (entry point)"."""
        package = f"{self.distribution} {self.version}".strip() or "unknown package"
        return f"{package} ({self.origin})"


def _own_distribution() -> tuple[str, str]:
    from verify._version import DISTRIBUTION, __version__

    return DISTRIBUTION, __version__


@lru_cache(maxsize=1)
def _entry_points() -> dict[str, KernelSpec]:
    found = {}
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _BUILT_IN:
            continue  # a built-in name cannot be taken over by another package
        dist = getattr(ep, "dist", None)
        found[ep.name] = KernelSpec(ep.name, ep.value, "entry point", dist.name if dist else "",
                                    dist.version if dist else "")
    return found


def _module_exists(ref: str) -> bool:
    module = ref.split(":")[0]
    try:
        import_module(module)
    except ModuleNotFoundError as exc:
        # A kernel whose module is absent is not offered; a missing *dependency* of a present
        # module (e.g. apache-tvm) still is, and says so when used.
        return not (module == exc.name or module.startswith(f"{exc.name}."))
    return True


def kernel_specs() -> list[KernelSpec]:
    """Every kernel `verify list` and `verify gate` know by name: built-in, then registered."""
    dist, version = _own_distribution()
    specs = [KernelSpec(name, ref, "built in", dist, version) for name, ref in _BUILT_IN.items()
             if _module_exists(ref)]
    return specs + sorted(_entry_points().values(), key=lambda s: s.name)


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
    dist, version = _own_distribution()
    if kernel in _BUILT_IN and _module_exists(_BUILT_IN[kernel]):
        return KernelSpec(kernel, _BUILT_IN[kernel], "built in", dist, version)
    if kernel in _entry_points():
        return _entry_points()[kernel]
    if ":" in kernel:
        return _path_spec("", kernel)
    raise UsageError(f"unknown kernel {kernel!r}; valid kernels: {', '.join(kernel_names())} "
                     "(or a 'pkg.module:Class' import path)")


def _path_spec(name: str, ref: str) -> KernelSpec:
    module = ref.split(":")[0]
    top = module.split(".")[0]
    if top == "verify" or ref in _BUILT_IN.values():
        dist, version = _own_distribution()
        for built_in, built_ref in _BUILT_IN.items():
            if built_ref == ref:
                return KernelSpec(built_in, ref, "built in", dist, version)
        return KernelSpec(name, ref, "import path", dist, version)
    dists = metadata.packages_distributions().get(top, [])
    version = ""
    if dists:
        try:
            version = metadata.version(dists[0])
        except metadata.PackageNotFoundError:
            pass
    return KernelSpec(name, ref, "import path", dists[0] if dists else "", version)


def load_kernel(ref: str):
    """Import "pkg.module:Class" and instantiate it; UsageError saying what is wrong with the path."""
    from verify.kernels.contract import Kernel

    module_name, _, qualname = ref.partition(":")
    if not module_name or not qualname:
        raise UsageError(f"{ref!r}: a kernel path is 'pkg.module:Class'")
    try:
        module = import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(f"{exc.name}.")):
            raise UsageError(f"{ref!r}: no module named {module_name!r} (is its package installed, or on PYTHONPATH?)") from None
        raise
    target = module
    for part in qualname.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise UsageError(f"{ref!r}: module {module_name!r} has no {qualname!r}")
    if not (inspect.isclass(target) and issubclass(target, Kernel)):
        raise UsageError(f"{ref!r} is not a verify.Kernel subclass")
    if inspect.isabstract(target):
        missing = ", ".join(sorted(target.__abstractmethods__))
        raise UsageError(f"{ref!r} does not implement {missing}")
    kernel = target()
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
