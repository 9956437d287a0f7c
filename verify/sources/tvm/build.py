"""Apache TVM's WebGPU kernels as WGSL text, built once per config and kept on disk.

TVM generates its paged-KV attention kernels from Python factories under
`tvm/relax/frontend/nn/llm/`: decode and merge in `_decode_kernels.py` (`_attention_decode`,
`_merge_state_inplace`), prefill in `_prefill_kernels.py` (`_attention_prefill`,
`_attention_prefill_ragged`, `_attention_sequence_prefill`) and tree attention in `tree_attn.py`
(`tree_attn`, `tree_attn_with_paged_kv_cache`). `tvm.build(..., target="webgpu")` lowers one to a
host module whose single import is the WebGPU device module, and that module's
`inspect_source()` is the WGSL TVM's web runtime compiles (docs/tvm.md §7; the cache:
docs/tvm.md §8).

Importing TVM takes ~2 s and a build ~0.1-0.5 s, so the text is cached under
`$VERIFY_TVM_CACHE` (else `$XDG_CACHE_HOME/verify/tvm`, else `~/.cache/verify/tvm`) in one
folder per TVM version, one file per factory call; the first line of each file says which
call made it. apache-tvm is imported only to build: its version comes from pip's metadata,
and a machine without apache-tvm still uses WGSL found in the cache (e.g. a folder exported
from a machine that has it), newest supported version first.

verify ships the WGSL of every gate config (and of what their checks launch beside them) for the
supported release in `shipped/` beside this file, in the cache's layout (verify.sources.shipped):
a build missing from the cache is read from there when its first line names the same TVM version
and factory call, so a fresh machine plans in seconds and one without apache-tvm plans at all.
The cache is never filled from it, and it is never written but by `verify sources refresh`.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from verify._files import made_once
from verify.errors import SetupError, UsageError
from verify.sources.shipped import Shipped

#: The TVM releases whose kernels and launch rules these contracts describe.
REQUIREMENT = "apache-tvm>=0.27,<0.28"
SUPPORTED = (0, 27)
INSTALL = "pip install 'apache-tvm>=0.27,<0.28'  (the tvm extra of webgpu-verify: pip install '.[tvm]' in a clone)"
CACHE_ENV = "VERIFY_TVM_CACHE"
#: The WGSL shipped with verify, in the cache's layout (<tvm version>/<file>), read-only.
SHIPPED = Shipped(Path(__file__).resolve().parent / "shipped", "TVM's WGSL")


@dataclass(frozen=True)
class TvmBuild:
    """One call of a kernel factory of TVM's `relax.frontend.nn.llm` package, built for WebGPU."""

    factory: str
    arguments: tuple  # (name, value) pairs: the factory's keyword arguments besides `target`

    def describe(self) -> str:
        return f"{self.factory}({', '.join(f'{k}={v!r}' for k, v in self.arguments)})"

    @property
    def filename(self) -> str:
        digest = hashlib.sha256(self.describe().encode()).hexdigest()[:16]
        return f"{self.factory.strip('_')}-{digest}.wgsl"


def decode_build(*, kv_heads: int, qo_heads: int, head_dim: int, dtype: str, sliding_window: bool,
                 page_size: int, rope_scaling: dict | None = None) -> TvmBuild:
    """`_attention_decode` with `rope_scaling` as TVM takes it (position_embedding.py
    `switch_rope_freq_func`): {} (no "rope_type") picks `rope_freq_default`, theta^(-(2d mod D)/D);
    {"rope_type": "llama3", "factor", "low_freq_factor", "high_freq_factor",
    "original_max_position_embeddings"} picks `rope_freq_llama3`. It is part of the build's
    description, so each scaling has its own cache file."""
    return TvmBuild("_attention_decode", (
        ("num_kv_heads", kv_heads), ("num_qo_heads", qo_heads), ("head_dim", head_dim),
        ("qkv_dtype", _TVM_DTYPE[dtype]), ("sliding_window", bool(sliding_window)),
        ("rope_scaling", dict(rope_scaling or {})), ("page_size", page_size)))


def merge_build(*, heads: int, head_dim: int, dtype: str) -> TvmBuild:
    return TvmBuild("_merge_state_inplace", (("num_heads", heads), ("head_dim", head_dim),
                                             ("v_dtype", _TVM_DTYPE[dtype])))


#: TVM's default window of the sliding-window prefill kernel (`_attention_prefill`'s
#: sliding_window_size and `TIRPagedKVCache`'s layer_sliding_window_size, kv_cache.py L589).
DEFAULT_SLIDING_WINDOW_SIZE = 1024


def prefill_build(*, kv_heads: int, qo_heads: int, head_dim: int, dtype: str, sliding_window: bool,
                  page_size: int = 16, rope_scaling: dict | None = None,
                  sliding_window_size: int = DEFAULT_SLIDING_WINDOW_SIZE) -> TvmBuild:
    """`_attention_prefill` (`batch_prefill_paged_kv[_sliding_window]`), called as `TIRPagedKVCache`
    calls it for a non-CPU target (kv_cache.py L701, L703): heads, head dim, dtype, sliding_window,
    rope_scaling, and for the sliding-window kernel the layer window `sliding_window_size`, a
    compile-time constant of its causal mask (`_causal_or_sliding_cross_mask`). The kernel without
    a window ignores that argument, so it is left out of its description (and cache file name)."""
    arguments = [("h_kv", kv_heads), ("h_q", qo_heads), ("d", head_dim), ("dtype", _TVM_DTYPE[dtype]),
                 ("sliding_window", bool(sliding_window)), ("rope_scaling", dict(rope_scaling or {})),
                 ("page_size", page_size)]
    if sliding_window:
        arguments.append(("sliding_window_size", int(sliding_window_size)))
    return TvmBuild("_attention_prefill", tuple(arguments))


def ragged_prefill_build(*, kv_heads: int, qo_heads: int, head_dim: int, dtype: str, v_head_dim: int | None = None,
                         rope_scaling: dict | None = None) -> TvmBuild:
    """`_attention_prefill_ragged` (`batch_prefill_ragged_kv`), as kv_cache.py L698 calls it for MHA:
    one head dim for q and k (d_qk) and one for v (d_v, the same unless given)."""
    return TvmBuild("_attention_prefill_ragged", (
        ("h_kv", kv_heads), ("h_q", qo_heads), ("d_qk", head_dim),
        ("d_v", head_dim if v_head_dim is None else v_head_dim), ("dtype", _TVM_DTYPE[dtype]),
        ("rope_scaling", dict(rope_scaling or {}))))


def sequence_prefill_build(*, kv_heads: int, qo_heads: int, head_dim: int, dtype: str, causal: bool,
                           sm_scale: float) -> TvmBuild:
    """`_attention_sequence_prefill` (`batch_sequence_prefill_kv`): dense [B, L, H, D] batches with
    causal and sm_scale fixed at build time. The paged KV cache does not use it (kv_cache.py only
    re-exports it); it is here for completeness."""
    return TvmBuild("_attention_sequence_prefill", (
        ("h_kv", kv_heads), ("h_q", qo_heads), ("d", head_dim), ("dtype", _TVM_DTYPE[dtype]),
        ("causal", int(bool(causal))), ("sm_scale", float(sm_scale))))


def tree_build(*, kv_heads: int, qo_heads: int, head_dim: int, dtype: str, paged: bool,
               rope_scaling: dict | None = None) -> TvmBuild:
    """`tree_attn` (`batch_tree_attn`, ragged) or `tree_attn_with_paged_kv_cache`
    (`tree_attn_paged_kv`), as kv_cache.py L705-706 calls them."""
    return TvmBuild("tree_attn_with_paged_kv_cache" if paged else "tree_attn", (
        ("h_kv", kv_heads), ("h_q", qo_heads), ("d", head_dim), ("dtype", _TVM_DTYPE[dtype]),
        ("rope_scaling", dict(rope_scaling or {}))))


_TVM_DTYPE = {"f16": "float16", "f32": "float32"}
#: The module of `tvm.relax.frontend.nn.llm` that defines each factory. (The package's
#: `__init__` imports the function `tree_attn` over the module of that name, so modules are
#: imported by their full name.)
FACTORY_MODULES = {
    "_attention_decode": "_decode_kernels",
    "_merge_state_inplace": "_decode_kernels",
    "_attention_prefill": "_prefill_kernels",
    "_attention_prefill_ragged": "_prefill_kernels",
    "_attention_sequence_prefill": "_prefill_kernels",
    "tree_attn": "tree_attn",
    "tree_attn_with_paged_kv_cache": "tree_attn",
}


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "verify" / "tvm"


def installed_version() -> str | None:
    """apache-tvm's version from pip's metadata (no 2 s import), else from an importable `tvm`
    (a source build); None when neither exists."""
    try:
        return metadata.version("apache-tvm")
    except metadata.PackageNotFoundError:
        pass
    try:
        import tvm
    except ImportError:
        return None
    return str(tvm.__version__)


def _release(version: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", version)
    return (int(match[1]), int(match[2])) if match else None


def _require_supported(version: str) -> None:
    if _release(version) != SUPPORTED:
        raise SetupError(f"apache-tvm {version} is installed, but verify's TVM kernels are written for "
                         f"{REQUIREMENT}; install it with: {INSTALL}")


def load(build: TvmBuild, root: Path | None = None) -> str:
    """The WGSL of `build` (a provenance comment line, then TVM's text): cached, or built now."""
    root = cache_root() if root is None else root
    version = installed_version()
    if version is None:
        cached = _cached_without_tvm(root, build)
        if cached is not None:
            return cached.read_text()
        shipped = shipped_wgsl(build)
        if shipped is None:
            # The same words for every config (the record names the kernel and config): a gate
            # without apache-tvm says it once, not once per build.
            raise SetupError(f"TVM kernels need {REQUIREMENT}, which is not installed, and their WGSL is not in the "
                             f"cache {root} nor shipped with verify; install it with: {INSTALL}")
        return shipped
    _require_supported(version)
    path = root / version / build.filename
    if not path.is_file():
        shipped = shipped_wgsl(build, version)
        if shipped is not None:
            return shipped
    # Two processes wanting one build (a planning pool, two workers): one builds, the other waits.
    return made_once(path, lambda: provenance_line(version, build) + "\n" + build_wgsl(build))


def provenance_line(version: str, build: TvmBuild) -> str:
    """The first line of every text `load` gives: the TVM version and the factory call."""
    return f"// apache-tvm {version}, target webgpu: {build.describe()}"


def shipped_wgsl(build: TvmBuild, version: str | None = None) -> str | None:
    """The WGSL of `build` shipped with verify for apache-tvm `version` (None: the newest supported
    release shipped), when its first line names that version and this call; else None."""
    versions = [version] if version is not None else sorted(
        (v for v in SHIPPED.folders() if _release(v) == SUPPORTED),
        key=lambda v: tuple(int(x) for x in re.findall(r"\d+", v)), reverse=True)
    for release in versions:
        path = SHIPPED.path(f"{release}/{build.filename}")
        if path is not None:
            text = path.read_text()
            if text.split("\n", 1)[0] == provenance_line(release, build):
                return text
    return None


#: The first line `load` gives every cached text: the TVM version and the factory call.
_PROVENANCE = re.compile(r"^// apache-tvm (\S+), target webgpu: ((\w+)\(.*\))$", re.M)


def provenance(wgsl: str) -> tuple[str, str, str] | None:
    """(TVM version, factory call, the factory's module file in apache/tvm) from the line `load`
    writes, or None for a text without it (an edited file)."""
    match = _PROVENANCE.search(wgsl)
    if match is None:
        return None
    version, call, factory = match.groups()
    module = FACTORY_MODULES.get(factory)
    path = f"python/tvm/relax/frontend/nn/llm/{module}.py" if module else "python/tvm/relax/frontend/nn/llm/"
    return version, call, path


def _cached_without_tvm(root: Path, build: TvmBuild) -> Path | None:
    """The newest supported version's copy of `build` in the cache, if any."""
    found = [folder / build.filename for folder in root.glob("*")
             if _release(folder.name) == SUPPORTED and (folder / build.filename).is_file()]
    return max(found, key=lambda path: tuple(int(x) for x in re.findall(r"\d+", path.parent.name)), default=None)


def _import_tvm():
    try:
        import tvm
    except ImportError as exc:
        raise SetupError(f"TVM kernels need {REQUIREMENT}, which cannot be imported ({exc}); "
                         f"install it with: {INSTALL}") from None
    _require_supported(str(tvm.__version__))
    return tvm


def build_wgsl(build: TvmBuild) -> str:
    """Call TVM's factory and `tvm.build` for WebGPU; the device module's WGSL.

    A config TVM rejects (its factories assert on thread limits) is a UsageError carrying
    TVM's message on one line.
    """
    tvm = _import_tvm()
    module = importlib.import_module(f"tvm.relax.frontend.nn.llm.{FACTORY_MODULES[build.factory]}")
    factory = getattr(module, build.factory)
    target = tvm.target.Target("webgpu")
    try:
        func = factory(**dict(build.arguments), target=target)
        module = tvm.build(tvm.IRModule({"main": func}), target=target)
    except Exception as exc:  # TVM raises assertions and its own error classes alike
        raise UsageError(f"apache-tvm cannot build {build.describe()} for webgpu: {_one_line(exc)}") from None
    devices = [m for m in module.imports if m.kind == "webgpu"]
    if len(devices) != 1:
        raise SetupError(f"tvm.build for webgpu returned device modules {[m.kind for m in module.imports]}, "
                         "expected one webgpu module")
    return str(devices[0].inspect_source())


def _one_line(exc: Exception) -> str:
    """TVM's messages end with the useful line after a C++ backtrace; keep that line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__
