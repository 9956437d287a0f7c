"""The property checks `verify check` and `verify gate` run, by name."""

from __future__ import annotations

from verify.checks.determinism import DeterminismCheck
from verify.checks.reference import ReferenceCheck
from verify.errors import UsageError

_CHECKS = {c.name: c for c in (ReferenceCheck(), DeterminismCheck())}


def register(check) -> None:
    _CHECKS[check.name] = check


def get_check(name: str):
    _load_family_checks()
    if name not in _CHECKS:
        raise UsageError(f"unknown check {name!r}; valid checks: {', '.join(sorted(_CHECKS))}")
    return _CHECKS[name]


def all_checks() -> dict:
    _load_family_checks()
    return dict(_CHECKS)


def _load_family_checks() -> None:
    """Family-specific checks (metamorphic, differential) register themselves on import."""
    from importlib import import_module

    for module in ("verify.checks.metamorphic", "verify.checks.differential", "verify.checks.dp4a"):
        try:
            import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
