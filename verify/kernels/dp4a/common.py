"""Config keys and shape rules the DP4A kernels share (docs/ort-dp4a.md §3)."""

from __future__ import annotations

from verify.errors import UsageError
from verify.kernels.contract import ConfigKey

DTYPE = ConfigKey("dtype", "f16", ("f16", "f32"), "type of A, the scales, bias and the output")
BITS = ConfigKey("bits", 4, (4, 8), "weight bits")
BLOCK_SIZE = ConfigKey("block_size", 32, (), "weights per quantization block along K: a power of two >= 32")
#: Activation quantization blocks are always 128 values, whatever the weights' block size.
A_BLOCK = 128


def check_block_size(block_size: int) -> None:
    if block_size < 32 or block_size & (block_size - 1):
        raise UsageError(f"block_size={block_size}: DP4A needs a power of two >= 32 "
                         "(each 32-value dot4 chunk must lie inside one weight block)")


def check_pinned_shape(config: dict) -> None:
    """A matmul config's block size and pinned m, n, k (0: drawn per case) under the DP4A rules."""
    check_block_size(config["block_size"])
    for key in ("m", "n", "k"):
        if config[key] < 0:
            raise UsageError(f"{key}={config[key]}: must be >= 0 (0 draws it per case)")
    check_shape(m=config["m"] or None, n=config["n"] or None, k=config["k"] or None, block_size=config["block_size"])


def check_shape(m: int | None = None, n: int | None = None, k: int | None = None,
                block_size: int | None = None) -> None:
    """The DP4A path's shape rules, each broken rule named (CanApplyDP4AMatrixMatMulNBits)."""
    if k is not None and k % A_BLOCK:
        raise UsageError(f"K={k}: DP4A needs K % 128 == 0 (activation quantization blocks are 128 values)")
    if k is not None and block_size and k % block_size:
        raise UsageError(f"K={k}: must be a multiple of block_size={block_size}")
    if n is not None and n % 16:
        raise UsageError(f"N={n}: DP4A needs N % 16 == 0 (outputs are stored 16 columns at a time)")
    if m is not None and m < 1:
        raise UsageError(f"M={m}: must be >= 1")
