"""What a saved case runs under: its kernel, config and check, resolved and checked against the
case file as `verify replay` and `verify export` both need them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verify.checks import get_check
from verify.errors import UsageError
from verify.kernels.registry import load_kernel, spec_of
from verify.kernels.specialize import check_recorded_config

if TYPE_CHECKING:
    from verify.checks.base import Check
    from verify.kernels.contract import Kernel
    from verify.results.casefile import SavedCase


def resolved(saved: SavedCase, where: str) -> tuple[Kernel, dict, Check]:
    """(kernel, config, check) of a saved case: the kernel by its recorded import path (else its
    name), which must still be the kernel the case was saved for; the config as that kernel reads
    it, which the saved WGSL's header must record. UsageError naming `where` otherwise."""
    kernel = load_kernel(saved.kernel_ref or spec_of(saved.kernel).ref)
    if kernel.name != saved.kernel:
        raise UsageError(f"{where}: recorded for kernel {saved.kernel!r}, but {saved.kernel_ref} is {kernel.name!r}")
    config = kernel.config(saved.config)
    check_recorded_config(saved.wgsl, config, f"{where}: the saved WGSL")
    return kernel, config, get_check(saved.check)
