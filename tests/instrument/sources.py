"""Every WGSL module the toolkit runs, by a readable name: our kernels in each gate config, TVM's
cached builds, the mutant fixtures and the test fixtures."""

from __future__ import annotations

from pathlib import Path

from verify.errors import SetupError
from verify.kernels.registry import get_kernel, kernel_names

ROOT = Path(__file__).resolve().parents[2]
TVM_CACHES = (Path.home() / ".cache" / "verify" / "tvm", ROOT / "benchmarks" / "tvm_wgsl")


def kernel_modules() -> dict[str, str]:
    """Each gate config's modules of every kernel whose WGSL can be built here."""
    modules = {}
    for name in kernel_names():
        kernel = get_kernel(name)
        for config in kernel.gate_configs("ci"):
            try:
                wgsl = kernel.wgsl(config)
            except SetupError:  # TVM's kernels without apache-tvm or its cache: their files are below
                break
            for index, module in enumerate(kernel.modules(wgsl)):
                label = " ".join(f"{k}={v}" for k, v in sorted(config.items()))
                modules[f"{name}[{label}]#{index}"] = module
    return modules


def file_modules() -> dict[str, str]:
    """TVM's cached builds and every .wgsl fixture of the tests."""
    paths = [p for cache in TVM_CACHES for p in sorted(cache.glob("**/*.wgsl"))]
    paths += sorted((ROOT / "tests").glob("**/*.wgsl"))
    return {str(p.relative_to(ROOT) if p.is_relative_to(ROOT) else p): p.read_text() for p in paths}
