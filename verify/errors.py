"""The two kinds of expected failure, and the exit code each maps to (docs/architecture.md §5).

Anything raised as one of these is reported as a one-line message, never a traceback.
"""


class UsageError(Exception):
    """Bad arguments, bad input files, or a machine that cannot run the check: exit 2."""

    exit_code = 2


class SetupError(UsageError):
    """The machine lacks something the toolkit needs (no WebGPU adapter, no apache-tvm): exit 2."""


class KernelError(Exception):
    """The kernel under test is broken in a way that stops it running (compile error,
    device lost, time limit): a verification failure, exit 1."""

    exit_code = 1
