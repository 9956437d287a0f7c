"""The property checks `verify check` and `verify gate` run, found by name.

Every check is registered under the entry-point group `verify.checks` as a `Check` subclass or
instance (`name = "pkg.module:Thing"`); verify's own are registered the same way (its
pyproject.toml), so nothing here names one. A kernel's module may also `register(check)` at import
(the worker imports the kernel's module, so such a check is found wherever the kernel runs).

This package holds the generic checks (reference, determinism, differential, implementations,
sanitize, CaseFamilyCheck) and the machinery every check runs on (base, context, outcome, runner);
a family's own checks live in its folder (e.g. verify.kernels.attention.checks).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import metadata

from verify._version import DISTRIBUTION
from verify.checks.base import Check, Preflight
from verify.checks.case_family import CaseFamilyCheck
from verify.checks.context import CheckContext
from verify.checks.outcome import Outcome
from verify.errors import UsageError

#: Entry-point group checks are registered under.
ENTRY_POINT_GROUP = "verify.checks"
#: Checks registered in this process by `register` (they replace an entry point's of the same name).
_REGISTERED: dict[str, Check] = {}

__all__ = ["CaseFamilyCheck", "Check", "CheckContext", "Outcome", "Preflight", "all_checks", "get_check", "register"]


def register(check: Check) -> Check:
    """Make `check` available by its name (a later registration of the same name replaces it)."""
    if not isinstance(check, Check):
        raise UsageError(f"register() takes a verify Check, not {type(check).__name__}")
    if not check.name:
        raise UsageError(f"{type(check).__qualname__} has no name")
    _REGISTERED[check.name] = check
    return check


def get_check(name: str) -> Check:
    checks = all_checks()
    if name not in checks:
        raise UsageError(f"unknown check {name!r}; valid checks: {', '.join(sorted(checks))}")
    return checks[name]


def all_checks() -> dict[str, Check]:
    """Every check by name: entry points (verify's own first), then those `register`ed here."""
    return {**_entry_point_checks(), **_REGISTERED}


@lru_cache(maxsize=1)
def _entry_point_checks() -> dict[str, Check]:
    points = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP),
                    key=lambda ep: getattr(ep.dist, "name", "") != DISTRIBUTION)
    found: dict[str, Check] = {}
    for ep in points:
        if ep.name in found:
            continue  # a name verify (or an earlier package) registered is not taken over
        try:
            target = ep.load()
            check = target() if isinstance(target, type) else target
        except Exception as exc:  # a broken third-party package must not take the toolkit down
            raise UsageError(f"check {ep.name!r} ({ep.value}) cannot be loaded: {type(exc).__name__}: {exc}") from None
        if not isinstance(check, Check):
            raise UsageError(f"entry point {ep.name!r} ({ep.value}) is not a verify Check")
        if check.name != ep.name:
            raise UsageError(f"entry point {ep.name!r} ({ep.value}) names a check called {check.name!r}")
        found[ep.name] = check
    return found
