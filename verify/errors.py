"""The kinds of expected failure, and the exit code each maps to (docs/architecture.md §5).

Anything raised as a UsageError or a KernelError is reported as a one-line message, never a
traceback. `FailureKind` names what kind of failure a failing record is; it is set where the
failure is known (a check's outcome, the worker's preflight, the session's time limit) and read by
the report and the console, never recovered from the wording of a message.
"""

from __future__ import annotations

import enum
import sys


class FailureKind(str, enum.Enum):
    """What kind of failure a record is (the report's defect classes, as Allure's categories)."""

    OVER_BUDGET = "over budget"
    NAN = "NaN"
    NOT_BIT_EXACT = "not bit-exact"
    WRITE_OUT_OF_BOUNDS = "write out of bounds"
    UNBOUNDED_LOOP = "never terminates"
    NONDETERMINISTIC = "nondeterministic"
    RELATION_BROKEN = "relation broken"
    SANITIZER = "sanitizer finding"
    COMPILE_ERROR = "compile error"
    COMPILE_DIVERGENCE = "compile divergence"
    OVER_LIMIT = "over a device limit"
    TIME_LIMIT = "time limit"
    VERIFY_LIMIT = "verify's limit"
    CRASH = "crash or device lost"
    KERNEL_CODE = "error in the kernel's code"
    INTERNAL = "internal error"
    FAILED = "failed"

    def __str__(self) -> str:
        return self.value


class UsageError(Exception):
    """Bad arguments, bad input files, or a machine that cannot run the check: exit 2."""

    exit_code = 2


class SetupError(UsageError):
    """The machine lacks something the toolkit needs (no WebGPU adapter, no apache-tvm): exit 2."""


class FeatureMissing(SetupError):
    """One config needs a WebGPU feature that the adapter a kernel's own runtime runs on does not
    offer (onnxruntime-web's f16 programs where Dawn offers no shader-f16): that config is a SKIP
    saying so, while the kernel's other configs still run."""


class InfrastructureError(Exception):
    """What runs the kernel broke, not the kernel: the process of a WebGPU implementation died or
    stopped answering. The check's record is an ERROR naming it (`kind`), never a FAIL of the
    kernel; the next check starts that process again."""

    kind = FailureKind.CRASH


class VerifyLimit(Exception):
    """The check reached a limit of verify's own, not of the kernel (the sanitizer's access log
    cannot hold even one workgroup of a dispatch): the check cannot be carried out here, so its
    record is an ERROR naming the limit, never a FAIL of the kernel nor "an internal error"."""

    kind = FailureKind.VERIFY_LIMIT


class ContractError(Exception):
    """A kernel's Python side breaks the contract (docs/writing-a-kernel.md): `expected()` names
    an output `launch()` did not return, or gives it another shape, returns no outputs, or a
    budget that bounds nothing. The check's record is an ERROR of the kernel's code."""

    kind = FailureKind.KERNEL_CODE


class KernelError(Exception):
    """The kernel under test is broken in a way that stops it running (compile error,
    device lost, time limit): a verification failure, exit 1. `kind` says which."""

    exit_code = 1
    kind = FailureKind.FAILED


#: The release in which the deprecated names still accepted today are removed.
REMOVED_IN = "0.3"
_warned: set[str] = set()


def deprecated(old: str, new: str) -> None:
    """Say once per process, on stderr, that `old` is a deprecated name of `new`. A renamed option,
    environment variable or file field keeps working for a release (docs/cli.md §12), so the
    scripts and CI files that use it keep running while their authors are told."""
    if old in _warned:
        return
    _warned.add(old)
    print(f"verify: warning: {old} is deprecated and will be removed in verify {REMOVED_IN}; use {new}",
          file=sys.stderr)
