"""ORT's programs as WGSL text, captured once per model config and kept on disk.

ONNX Runtime generates each program's WGSL when a session first dispatches it, specialised on
the model (A's dtype, bits, block size, zero points, bias, accuracy level), on M only through
which programs run (the DP4A tile program for M >= 4, the small-M one below), and on the
adapter (its vendor: Intel, Qualcomm and Apple get other tiles or paths; its features), but not
on the values of M, N or K, which travel in the uniforms (tests/sources/test_ort.py checks this).
So verify runs one small MatMulNBits model per config through ORT (verify.sources.ort.runtime)
and caches every labelled program it dispatched under `$VERIFY_ORT_CACHE` (else
`$XDG_CACHE_HOME/verify/ort`, else `~/.cache/verify/ort`): one folder per onnxruntime-web
version and adapter vendor, one JSON file per capture config, which says where it came from.
A capture takes about 1-2 s (a new ORT process about 0.8 s more); a cached read well under a
millisecond.

A machine without onnxruntime-web (or without a Dawn adapter) still uses programs found in the
cache for the pinned version (e.g. a folder copied from a machine that has it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from verify.errors import SetupError
from verify.results.atomic import made_once
from verify.sources.ort.model import MatMulNBitsModel

CACHE_ENV = "VERIFY_ORT_CACHE"
#: N of a capture run (DP4A needs N % 16 == 0).
CAPTURE_N = 32


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

    @property
    def model(self) -> MatMulNBitsModel:
        """The model of the run: K a multiple of 128 and of the block size, N = CAPTURE_N."""
        return MatMulNBitsModel(self.dtype, self.bits, self.block_size, k=max(256, self.block_size), n=CAPTURE_N,
                                accuracy_level=self.accuracy_level, has_zero_points=self.has_zero_points,
                                has_bias=self.has_bias)

    def describe(self) -> str:
        return f"{self.model.describe()} at M={self.m}"

    @property
    def filename(self) -> str:
        return f"capture-{hashlib.sha256(self.describe().encode()).hexdigest()[:16]}.json"


@dataclass(frozen=True)
class CapturedPrograms:
    """The programs one capture run dispatched: WGSL by label, in order, and where they came from."""

    provenance: str
    programs: dict

    def wgsl(self, label: str) -> str:
        """The program's WGSL, after a comment line of provenance; SetupError if it did not run."""
        if label not in self.programs:
            raise SetupError(f"{self.provenance.removeprefix('// ')} dispatched {', '.join(self.programs) or 'nothing'}, "
                             f"not {label}")
        return f"{self.provenance}\n{self.programs[label]}"


#: The provenance line `captured_programs` writes: the onnxruntime-web version and the model run.
_PROVENANCE = re.compile(r"^// onnxruntime-web (\S+) on .*: (MatMulNBits\(.*\) at M=\d+)$", re.M)


def provenance(wgsl: str) -> tuple[str, str] | None:
    """(onnxruntime-web version, the model and M of the run that generated `wgsl`) from its
    provenance line, or None for a text without it (an edited file)."""
    match = _PROVENANCE.search(wgsl)
    return (match[1], match[2]) if match else None


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "verify" / "ort"


def capture_feeds(model: MatMulNBitsModel, m: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Inputs of a capture run: any values do; these are small and finite."""
    rng = np.random.default_rng(seed)
    zero_point_bytes = -(-model.k_blocks * model.bits // 8)
    return model.feeds(rng.uniform(-1, 1, (1, m, model.k)),
                       rng.integers(0, 256, (model.n, model.k_blocks, model.block_size * model.bits // 8)),
                       rng.uniform(2.0**-8, 2.0**-5, (model.n, model.k_blocks)),
                       rng.integers(0, 256, (model.n, zero_point_bytes)), rng.uniform(-1, 1, model.n))


def _vendor_folder(adapter: dict) -> str:
    vendor = "".join(c if c.isalnum() else "-" for c in (adapter.get("vendor") or "").lower())
    return vendor or "unknown"


def _read(path: Path) -> CapturedPrograms:
    data = json.loads(path.read_text())
    return CapturedPrograms(data["provenance"], data["programs"])


def captured_programs(config: CaptureConfig, root: Path | None = None) -> CapturedPrograms:
    """The programs ORT dispatches for `config`: cached, or captured now."""
    from verify.sources.ort.runtime import pinned_version, shared_runtime

    root = cache_root() if root is None else root
    try:
        runtime = shared_runtime()
    except SetupError as missing:
        cached = sorted((root / pinned_version()).glob(f"*/{config.filename}"))
        if not cached:
            raise SetupError(f"{missing} ({config.describe()} is not in the ORT WGSL cache {root})") from None
        return _read(cached[0])
    path = root / runtime.version / _vendor_folder(runtime.adapter) / config.filename

    def capture() -> str:
        model = config.model
        run = runtime.run(model, capture_feeds(model, config.m))
        adapter = runtime.adapter.get("description") or "?"
        provenance = (f"// onnxruntime-web {runtime.version} on {adapter} (vendor {runtime.adapter.get('vendor') or '?'}"
                      f"): {config.describe()}")
        return json.dumps({"provenance": provenance, "programs": {d.program.label: d.program.wgsl
                                                                 for d in run.dispatches}}, indent=1)

    # Two processes wanting one config: one captures, the other waits and reads.
    data = json.loads(made_once(path, capture))
    return CapturedPrograms(data["provenance"], data["programs"])
