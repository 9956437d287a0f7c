"""verify: prove WebGPU LLM kernels correct against float64 references with derived budgets.

The public surface (everything else is internal and may change):

- ``verify.check(kernel, config, ...)`` runs a kernel's property checks on this machine's
  WebGPU adapter and returns ``CheckResults`` (one ``CheckResult`` per check, each with a
  ``Verdict``); ``.raise_for_verdict()`` turns a failure into an AssertionError that carries
  the shrunk case and its replay command.
- The kernel contract, to bring your own kernel: ``Kernel``, ``ConfigKey``, ``Expected``,
  ``Case``, ``Launched``, and the buffers a launch binds, ``Output`` and ``InOut``.
- ``verify.strategies``: Hypothesis building blocks for your own ``@given`` tests.
- ``verify.testing``: ``assert_within_budget`` and friends, in the manner of numpy.testing.
- ``verify.budgets``: the error budgets, callable on plain arrays.
- ``Profile`` / ``get_profile``, and the errors ``UsageError``, ``SetupError``, ``KernelError``.
- A pytest plugin (``verify.pytest_plugin``) registered under the ``pytest11`` entry point.

The import package and the command are ``verify``; the distribution is ``webgpu-verify``
(``pip install webgpu-verify``), since "verify" on PyPI is an unrelated project.
"""

from verify._version import DISTRIBUTION, __version__
from verify.api import check
from verify.budgets.expected import Expected
from verify.cases.case import Case
from verify.errors import KernelError, SetupError, UsageError
from verify.gpu.buffers import InOut, Output
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.profiles import Profile, get_profile
from verify.results.record import (
    CheckResult,
    CheckResults,
    Verdict,
    VerificationFailure,
)

__all__ = [
    "__version__",
    "Case",
    "CheckResult",
    "CheckResults",
    "ConfigKey",
    "DISTRIBUTION",
    "Expected",
    "InOut",
    "Kernel",
    "KernelError",
    "Launched",
    "Output",
    "Profile",
    "SetupError",
    "UsageError",
    "Verdict",
    "VerificationFailure",
    "check",
    "get_profile",
]
