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
(installed from a clone: ``pip install .``), since "verify" on PyPI is an unrelated project.
"""

from importlib import import_module as _import_module

from verify._version import DISTRIBUTION, __version__

#: Where each public name lives. They are imported when first used, so `import verify` (and the
#: `verify` command, which must answer signals from its first moment) costs almost nothing.
_PUBLIC = {
    "check": "verify.api",
    "Expected": "verify.budgets.expected",
    "Case": "verify.cases.case",
    "KernelError": "verify.errors",
    "SetupError": "verify.errors",
    "UsageError": "verify.errors",
    "InOut": "verify.gpu.buffers",
    "Output": "verify.gpu.buffers",
    "ConfigKey": "verify.kernels.contract",
    "Kernel": "verify.kernels.contract",
    "Launched": "verify.kernels.contract",
    "Profile": "verify.profiles",
    "get_profile": "verify.profiles",
    "CheckResult": "verify.results.record",
    "CheckResults": "verify.results.record",
    "Verdict": "verify.results.record",
    "VerificationFailure": "verify.results.record",
}

__all__ = [
    "Case", "CheckResult", "CheckResults", "ConfigKey", "DISTRIBUTION", "Expected", "InOut", "Kernel", "KernelError",
    "Launched", "Output", "Profile", "SetupError", "UsageError", "Verdict", "VerificationFailure", "__version__",
    "check", "get_profile",
]


def __getattr__(name: str):
    if name in _PUBLIC:
        value = getattr(_import_module(_PUBLIC[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'verify' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_PUBLIC))
