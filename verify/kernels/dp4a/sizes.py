"""How big the DP4A family's cases get at each profile scale (verify.profiles.FamilySizes)."""

from __future__ import annotations

from dataclasses import dataclass

from verify.profiles import FamilySizes


@dataclass(frozen=True)
class QuantizeSizes:
    """Activation quantization cases: rows, K (values per row) and leading batch."""

    max_rows: int
    max_k: int
    max_batch: int


@dataclass(frozen=True)
class MatmulSizes:
    """Matmul cases: M, N, K, batch, and a cap on batch·M·N·K unless a config pins the shape."""

    max_m: int
    max_n: int
    max_k: int
    max_batch: int
    max_macs: int


@dataclass(frozen=True)
class Dp4aSizes:
    quantize: QuantizeSizes
    matmul: MatmulSizes


SIZES = FamilySizes(
    "dp4a",
    quick=Dp4aSizes(QuantizeSizes(64, 1024, 2), MatmulSizes(70, 96, 512, 2, 1 << 20)),
    ci=Dp4aSizes(QuantizeSizes(300, 4096, 3), MatmulSizes(300, 288, 4096, 3, 1 << 23)),
    nightly=Dp4aSizes(QuantizeSizes(1024, 8192, 4), MatmulSizes(300, 1024, 4096, 3, 1 << 26)),
)
