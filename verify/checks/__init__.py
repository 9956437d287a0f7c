"""The property checks `verify check` and `verify gate` run, by name.

Built-in checks register themselves when their module is imported; other packages add checks
under the entry-point group `verify.checks` (`name = "pkg.module:Class"`, a Check subclass), and
a kernel's own module may call `register(...)` at import (the worker imports the kernel's
module, so such a check is found wherever the kernel runs).
"""

from __future__ import annotations

from importlib import import_module, metadata

from verify.checks.base import Check
from verify.checks.determinism import DeterminismCheck
from verify.checks.reference import ReferenceCheck
from verify.errors import UsageError

#: Entry-point group other packages register checks under.
ENTRY_POINT_GROUP = "verify.checks"
_CHECKS: dict[str, Check] = {c.name: c for c in (ReferenceCheck(), DeterminismCheck())}
_FAMILY_MODULES = ("verify.checks.metamorphic", "verify.checks.differential", "verify.checks.dp4a",
                   "verify.checks.sanitize", "verify.checks.implementations")
_loaded = False


def register(check: Check) -> Check:
    """Make `check` available by its name (a later registration of the same name replaces it)."""
    if not check.name:
        raise UsageError(f"{type(check).__qualname__} has no name")
    _CHECKS[check.name] = check
    return check


def get_check(name: str) -> Check:
    _load()
    if name not in _CHECKS:
        raise UsageError(f"unknown check {name!r}; valid checks: {', '.join(sorted(_CHECKS))}")
    return _CHECKS[name]


def all_checks() -> dict[str, Check]:
    _load()
    return dict(_CHECKS)


def _load() -> None:
    """Family-specific checks (metamorphic, differential, dp4a) and entry points, once."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for module in _FAMILY_MODULES:
        try:
            import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _CHECKS:
            continue
        try:
            target = ep.load()
        except Exception as exc:  # a broken third-party package must not take the toolkit down
            raise UsageError(f"check {ep.name!r} ({ep.value}) cannot be loaded: {type(exc).__name__}: {exc}") from None
        check = target() if isinstance(target, type) else target
        if not isinstance(check, Check):
            raise UsageError(f"entry point {ep.name!r} ({ep.value}) is not a verify Check")
        if check.name != ep.name:
            raise UsageError(f"entry point {ep.name!r} ({ep.value}) names a check called {check.name!r}")
        register(check)
