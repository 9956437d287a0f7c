"""The default check set: the checks every kernel runs besides those it names.

They ask nothing of a kernel beyond its contract (two launches of one case agree bit for bit; no
access outside a binding or a workgroup array), so a check of that kind is added here once instead
of to every kernel's `checks`. The kernel contract (verify.kernels.contract.Kernel) completes each
kernel's list with them unless the kernel leaves one out with the reason why (`Kernel.leaves_out`).
"""

from __future__ import annotations

DEFAULT_CHECKS: tuple[str, ...] = ("determinism", "sanitize")
