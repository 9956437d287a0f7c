"""wgpu-py, imported with the C types a run uses parsed in one pass.

wgpu-py reaches wgpu-native through cffi in ABI mode, naming each C type by a string
(`ffi.new("WGPUBufferDescriptor *")`). cffi parses such a string the first time a process uses
it, and each parse hands pycparser the type text after one `typedef int NAME;` line for every
typedef in wgpu-native's header, some 450 of them: about 35 ms a type. A process that lists
the adapters, opens a device and runs one kernel uses some 45 types, so every worker spent about
1.4 s of its first check (one core of a two-core machine) in the C parser, and so did the gate's
parent listing adapters.

`load_wgpu()` parses the types in `RUN_TYPES` together, behind one copy of those typedef lines,
and files each result where cffi's own first use would have put it (`ffi._parsed_types`), made
by cffi's own conversion from pycparser's tree to a C type: the same objects as a lazy parse
gives, in about 35 ms for all of them. A type missing from the list is parsed on first use, as
before; if cffi's internals differ from what this expects (another cffi), nothing is filed and
every type is parsed on first use, as before. tests/framework/test_wgpu_types.py holds the list
to what a check uses and the results to cffi's own.

Before any of that, importing wgpu-py's backend hands cffi wgpu-native's whole header (about
100 kB of C), which pycparser parses in about 0.35 s, again in every process. The tree pycparser
makes of a text depends on nothing but that text and the two libraries' versions, so
`load_wgpu()` keeps it, pickled, in verify's cache folder (`<cache>/cffi`, named by the sha256 of
the text and those versions) and later processes read it back in about 0.08 s; cffi then builds
its declarations from the tree exactly as it would from a fresh parse. A file that is missing,
unreadable or damaged is parsed and written again; a cache folder that cannot be written costs
only the parse.
"""

from __future__ import annotations

import hashlib
import pickle
import sys
import threading
from contextlib import contextmanager
from pathlib import Path

from verify._cache import cache_dir
from verify._files import write_atomic
from verify.gpu.environment import quiet_environment

#: The C type strings wgpu-py 0.32 parses while verify lists adapters, opens a device, compiles
#: a pipeline and runs it (read back by one map), exactly as wgpu-py spells them (the key is the
#: string). Timestamp queries and adapter requests by options add a few, parsed on first use.
RUN_TYPES = (
    "WGPUInstanceDescriptor *", "WGPUAdapter[]", "WGPUAdapterInfo *", "WGPUChainedStruct *",
    "WGPUChainedStruct * ", "WGPUNativeLimits *", "WGPULimits *", "char []", "intptr_t", "uint32_t []",
    "WGPUStringView *", "WGPUQueueDescriptor *", "WGPUDeviceExtras *", "WGPUFeatureName[]",
    "WGPUDeviceDescriptor *", "WGPUDeviceLostCallbackInfo *", "WGPUUncapturedErrorCallbackInfo *",
    "WGPURequestDeviceCallbackInfo *", "WGPUShaderSourceWGSL *", "WGPUShaderModuleDescriptor *",
    "WGPUBufferBindingLayout *", "WGPUBindGroupLayoutEntry *", "WGPUBindGroupLayoutEntry[]",
    "WGPUBindGroupLayoutDescriptor *", "WGPUBindGroupLayout[]", "WGPUPipelineLayoutDescriptor *",
    "WGPUComputeState *", "WGPUComputePipelineDescriptor *", "WGPUBufferDescriptor *",
    "WGPUBindGroupEntry *", "WGPUBindGroupEntry[]", "WGPUBindGroupDescriptor *",
    "WGPUCommandEncoderDescriptor *", "WGPUComputePassDescriptor *", "WGPUCommandBufferDescriptor *",
    "WGPUCommandBuffer[]", "WGPUBufferMapCallbackInfo *",
    "void(WGPUDevice const *, WGPUDeviceLostReason, WGPUStringView, void *, void *)",
    "void(WGPUDevice const *, WGPUErrorType, WGPUStringView, void *, void *)",
    "void(WGPULogLevel, WGPUStringView, void *)",
    "void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)",
    "void(WGPURequestDeviceStatus, WGPUDevice, WGPUStringView, void *, void *)",
)

_loaded = False
_lock = threading.Lock()


def load_wgpu():
    """The wgpu module, its run's C types parsed (once per process)."""
    global _loaded
    quiet_environment()
    import wgpu

    with _lock:
        if not _loaded:
            _loaded = True
            with trees_kept(cache_dir() / "cffi"):
                try:
                    from wgpu.backends.wgpu_native import _ffi
                except ImportError:  # another wgpu-py layout: every type is parsed on its first use
                    return wgpu
                _parse_together(_ffi.ffi, RUN_TYPES)
    return wgpu


@contextmanager
def trees_kept(folder: Path):
    """While inside, every C text cffi hands pycparser is read from `folder` when a run before
    parsed the same text with the same cffi, pycparser and Python, else parsed and kept there.
    With a cffi that has no `cparser._get_parser`, nothing changes."""
    try:
        from cffi import cparser

        real = cparser._get_parser
    except (ImportError, AttributeError):
        yield
        return
    cparser._get_parser = lambda: _KeptParser(real(), folder)
    try:
        yield
    finally:
        cparser._get_parser = real


class _KeptParser:
    """pycparser's parser for cffi, its trees kept in a folder (see trees_kept)."""

    def __init__(self, parser, folder: Path):
        self._parser, self._folder = parser, folder

    def parse(self, text: str, *args, **kwargs):
        path = self._folder / f"{_key(text)}.pickle"
        try:
            with open(path, "rb") as kept:
                return pickle.load(kept)
        except Exception:  # missing, unreadable or damaged: parse it again
            pass
        tree = self._parser.parse(text, *args, **kwargs)
        try:  # whole or not at all, whatever other processes do
            write_atomic(path, pickle.dumps(tree, protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, pickle.PicklingError, RecursionError):
            pass
        return tree


def _key(text: str) -> str:
    """The sha256 naming the tree of `text`: the text and what makes a tree of it."""
    import cffi
    import pycparser

    made_by = f"cffi {cffi.__version__}, pycparser {pycparser.__version__}, Python {sys.version}"
    return hashlib.sha256(f"{made_by}\0{text}".encode()).hexdigest()


def _parse_together(ffi, cdecls) -> int:
    """File the C types named by `cdecls` in cffi's cache, parsed in one pycparser run; the
    number filed. cffi's FFI.typeof does, per string: parse `void __dummy(<cdecl>);`, convert
    the parameter's declaration (`Parser._get_type_and_quals`), turn a raw function type into a
    function pointer, build or fetch the backend type (`FFI._get_cached_btype`), and cache
    `(btype, is_raw_function)` by the string. Here the same steps run on one source declaring
    one function per string."""
    try:
        parser, cache, build = ffi._parser, ffi._parsed_types, ffi._get_cached_btype
        todo = [c for c in cdecls if c not in cache]
        if not todo:
            return 0
        source = "\n".join(f"void __verify_type_{i}(\n{c}\n);" for i, c in enumerate(todo))
        with ffi._lock:
            tree, macros, _ = parser._parse(source)
            if macros or len(tree.ext) < len(todo):
                return 0
            filed = 0
            for cdecl, declaration in zip(todo, tree.ext[-len(todo):]):
                node = declaration.type.args.params[0]
                if not hasattr(node, "type"):  # an identifier, not a type: cffi's own error on use
                    continue
                ctype, _quals = parser._get_type_and_quals(node.type)
                is_function = ctype.is_raw_function
                if is_function:
                    ctype = ctype.as_function_pointer()
                cache.setdefault(cdecl, (build(ctype), is_function))
                filed += 1
            return filed
    except Exception:  # another cffi: every type is parsed on its first use, as without this
        return 0
