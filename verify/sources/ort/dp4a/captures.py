"""ORT's programs as WGSL text, captured once per model config and kept on disk.

ONNX Runtime generates each program's WGSL when a session first dispatches it, specialised on
the model (A's dtype, bits, block size, zero points, bias, accuracy level), on M only through
which programs run (the DP4A tile program for M >= 4, the small-M one below), and on the
adapter (its vendor: Intel, Qualcomm and Apple get other tiles or paths; its features), but not
on the values of M, N or K, which travel in the uniforms (tests/sources/ort/test_ort.py checks this).
So verify runs one small MatMulNBits model per config through ORT (verify.sources.ort.runtime)
and caches every labelled program it dispatched in the ORT WGSL cache (verify.sources.ort.cache:
one folder per onnxruntime-web version and adapter vendor, one JSON file per capture config,
with the provenance a read checks). A capture takes about 1-2 s (a new ORT process about 0.8 s
more); a cached read well under a millisecond.

A machine without onnxruntime-web (or without a Dawn adapter) still uses programs found in the
cache for the pinned version (e.g. a folder copied from a machine that has it), when their
provenance is this config's.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verify.errors import SetupError
from verify.sources.ort.cache import (  # noqa: F401  (CACHE_ENV and cache_root: this module's API before cache.py)
    CACHE_ENV,
    Capture,
    Provenance,
    cache_root,
    cached_capture,
    cached_elsewhere,
    vendor_folder,
    with_run,
)
from verify.sources.ort.dp4a.model import MatMulNBitsModel

#: N of a capture run (DP4A needs N % 16 == 0).
CAPTURE_N = 32

#: The programs one capture run dispatched: WGSL by label, in order, and where they came from.
CapturedPrograms = Capture


@dataclass(frozen=True)
class CaptureConfig:
    """One ORT run that dispatches the programs wanted: the model's config, and M."""

    dtype: str
    bits: int = 4
    block_size: int = 32
    has_zero_points: bool = False
    has_bias: bool = False
    accuracy_level: int = 4
    m: int = 4
    fp32_accumulation: bool = False

    @property
    def model(self) -> MatMulNBitsModel:
        """The model of the run: K a multiple of 128 and of the block size, N = CAPTURE_N."""
        return MatMulNBitsModel(self.dtype, self.bits, self.block_size, k=max(256, self.block_size), n=CAPTURE_N,
                                accuracy_level=self.accuracy_level, has_zero_points=self.has_zero_points,
                                has_bias=self.has_bias, fp32_accumulation=self.fp32_accumulation)

    def describe(self) -> str:
        return f"{self.model.describe()} at M={self.m}"

    @property
    def filename(self) -> str:
        return f"capture-{hashlib.sha256(self.describe().encode()).hexdigest()[:16]}.json"


#: The provenance line `captured_programs` writes: the onnxruntime-web version and the model run.
_PROVENANCE = re.compile(r"^// onnxruntime-web (\S+) on .*: (MatMulNBits\(.*\) at M=\d+)$", re.M)


def provenance(wgsl: str) -> tuple[str, str] | None:
    """(onnxruntime-web version, the model and M of the run that generated `wgsl`) from its
    provenance line, or None for a text without it (an edited file)."""
    match = _PROVENANCE.search(wgsl)
    return (match[1], match[2]) if match else None


def capture_feeds(model: MatMulNBitsModel, m: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs of a capture run: any values do; these are small and finite."""
    rng = np.random.default_rng(seed)
    zero_point_bytes = -(-model.k_blocks * model.bits // 8)
    return model.feeds(rng.uniform(-1, 1, (1, m, model.k)),
                       rng.integers(0, 256, (model.n, model.k_blocks, model.block_size * model.bits // 8)),
                       rng.uniform(2.0**-8, 2.0**-5, (model.n, model.k_blocks)),
                       rng.integers(0, 256, (model.n, zero_point_bytes)), rng.uniform(-1, 1, model.n))


def wanted(config: CaptureConfig, ort_version: str) -> Provenance:
    """What a capture of `config` by onnxruntime-web `ort_version` must record: the config, the
    model, and the shapes of the feeds its run takes (capture_feeds)."""
    return Provenance.wanted(config.describe(), config.model, ort_version, capture_feeds(config.model, config.m))


def captured_programs(config: CaptureConfig, root: Path | None = None) -> CapturedPrograms:
    """The programs ORT dispatches for `config`: cached (when the file's provenance is this
    config's), or captured now."""
    from verify.sources.ort import runtime as ort_runtime

    root = cache_root() if root is None else root
    try:
        runtime = ort_runtime.shared_runtime()
    except SetupError as missing:
        version = ort_runtime.pinned_version()
        return cached_elsewhere(root, version, config.filename, wanted(config, version), missing)
    want = wanted(config, runtime.version)
    path = root / runtime.version / vendor_folder(runtime.adapter) / config.filename

    def capture() -> Capture:
        model = config.model
        ort_runtime.require_features(runtime, config.dtype, config.describe())
        feeds = capture_feeds(model, config.m)
        run = runtime.run(model, feeds)
        adapter = (f"{runtime.adapter.get('description') or '?'} "
                   f"(vendor {runtime.adapter.get('vendor') or '?'})")
        return Capture(with_run(want, feeds, adapter, config.describe()),
                       {d.program.label: d.program.wgsl for d in run.dispatches})

    # Two processes wanting one config: one captures, the other waits and reads.
    return cached_capture(path, want, capture)
