"""Assertions for kernel tests, in the manner of numpy.testing.

``assert_within_budget(actual, expected)`` is the comparison every verify check makes, as a
one-line assertion for your own tests: ``expected`` is a ``verify.Expected`` (reference values,
or a legal interval, and a per-element error budget), typically from a kernel's ``expected()``
or from the helpers in ``verify.budgets`` (``decode_expected``, ``merge_expected``,
``rope_expected``). A failure says how many elements are over budget, the worst one, where it
is, its err/budget, and how many are NaN or not bit-exact where they must be.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.metrics import OutputMetrics, compare

__all__ = ["assert_bitwise_equal", "assert_outputs_within_budget", "assert_within_budget"]


def assert_within_budget(actual, expected: Expected, err_msg: str = "") -> OutputMetrics:
    """Assert every element of `actual` lies within `expected`'s budget of its reference (or
    legal interval), with no NaN where the reference has none and bit-exact agreement where
    `expected.exact` says so. Returns the metrics (max err/budget, max ulp, rel L2, ...)."""
    __tracebackhide__ = True
    if not isinstance(expected, Expected):
        raise TypeError(f"expected must be a verify.Expected, not {type(expected).__name__} "
                        "(build one with verify.Expected.around(name, reference, budget, dtype))")
    actual = np.asarray(actual)
    if actual.shape != expected.lo.shape:
        raise AssertionError(_message(f"{expected.name}: shape {actual.shape} != expected {expected.lo.shape}",
                                      err_msg))
    metrics = compare(actual, expected)
    if not metrics.passed:
        raise AssertionError(_message(metrics.message(), err_msg))
    return metrics


def assert_outputs_within_budget(outputs: dict, expected: list[Expected], err_msg: str = "") -> list[OutputMetrics]:
    """assert_within_budget for every Expected in `expected`, reading `outputs[e.name]`; all
    failing outputs are reported together."""
    __tracebackhide__ = True
    missing = [e.name for e in expected if e.name not in outputs]
    if missing:
        raise AssertionError(_message(f"no output named {', '.join(missing)} (have {', '.join(outputs)})", err_msg))
    metrics = [compare(np.asarray(outputs[e.name]), e) for e in expected]
    failing = [m.message() for m in metrics if not m.passed]
    if failing:
        raise AssertionError(_message("\n".join(failing), err_msg))
    return metrics


def assert_bitwise_equal(actual, desired, err_msg: str = "") -> None:
    """Assert two arrays are identical bit for bit (NaN payloads and signed zeros included):
    what two runs of a deterministic kernel on the same input must give."""
    __tracebackhide__ = True
    a, b = np.ascontiguousarray(actual), np.ascontiguousarray(desired)
    if a.shape != b.shape or a.dtype != b.dtype:
        raise AssertionError(_message(f"{a.dtype}{list(a.shape)} vs {b.dtype}{list(b.shape)}", err_msg))
    if a.size == 0:
        return
    differ = np.any(a.view(np.uint8).reshape(a.size, -1) != b.view(np.uint8).reshape(b.size, -1), axis=-1)
    if differ.any():
        first = np.unravel_index(int(np.argmax(differ)), a.shape)
        raise AssertionError(_message(f"{int(differ.sum())}/{a.size} elements differ bit for bit; first at "
                                      f"{tuple(int(i) for i in first)}: {a[first]!r} vs {b[first]!r}", err_msg))


def _message(text: str, err_msg: str) -> str:
    return f"{err_msg}\n{text}" if err_msg else text
