"""Every kernel the toolkit knows, by name; modules are imported only when asked for."""

from __future__ import annotations

from importlib import import_module

from verify.errors import UsageError

_KERNELS = {
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
}


def _available(name: str) -> bool:
    module = _KERNELS[name].split(":")[0]
    try:
        import_module(module)
    except ModuleNotFoundError as exc:
        # A kernel whose module is absent is not offered; a missing *dependency* of a present
        # module (e.g. apache-tvm) still is, and says so when used.
        return not (module == exc.name or module.startswith(f"{exc.name}."))
    return True


def kernel_names() -> list[str]:
    return [name for name in _KERNELS if _available(name)]


def get_kernel(name: str):
    if name not in _KERNELS or not _available(name):
        raise UsageError(f"unknown kernel {name!r}; valid kernels: {', '.join(kernel_names())}")
    module, cls = _KERNELS[name].split(":")
    return getattr(import_module(module), cls)()
