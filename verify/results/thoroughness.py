"""How thoroughly a record's check judged the kernel, so a PASS never reads as more than was done.

A `reference` PASS compared every output with the float64 reference under a derived budget; a
`determinism` PASS only found two runs equal (both could be equally wrong); a `sanitize` PASS only
found no race or stray access. The report and SARIF show which, per record and per cell, from the
record's `thoroughness` (an optional field of `verify.results/2`, docs/architecture.md §6).

Each check declares the level it judges at (`Check.thoroughness`); `judged` turns that into the
record's, lowering it where the record did less: a check that drew no case (the WGSL did not
compile, exceeds a limit, or a preflight decided) judged the module's structure only, and a SKIP
or an ERROR reached no verdict on the kernel at all.
"""

from __future__ import annotations

import enum


class Thoroughness(str, enum.Enum):
    """What a verdict rests on, most to least.

    NUMERIC: outputs compared with the float64 reference under an error budget. RELATION: outputs
    compared with another run (another case, implementation or launch: metamorphic, differential,
    determinism), which a bug shared by both runs passes. STRUCTURAL: the module itself (the
    sanitizer's access log, compiling, device limits), no output judged. NOT_RUN: no verdict on
    the kernel (a skip, or an error of what runs it)."""

    NUMERIC = "numeric"
    RELATION = "relation"
    STRUCTURAL = "structural"
    NOT_RUN = "not run"

    def __str__(self) -> str:
        return self.value

    @property
    def description(self) -> str:
        return _DESCRIPTIONS[self]


_DESCRIPTIONS = {
    Thoroughness.NUMERIC: "compared with the float64 reference under a derived error budget",
    Thoroughness.RELATION: "compared with another run (metamorphic, differential, determinism): a bug both runs "
                           "share passes",
    Thoroughness.STRUCTURAL: "the module only (sanitizer, compile, device limits): no output judged",
    Thoroughness.NOT_RUN: "no verdict on the kernel (skipped, or what runs it failed)",
}

#: Most thorough first: the order of the report's legend and counts.
LEVELS = tuple(Thoroughness)


def judged(record, level: Thoroughness | None):
    """`record` (a CheckResult) with its thoroughness: `level` (its check's), lowered to
    STRUCTURAL where no case was drawn and to NOT_RUN for a SKIP or an ERROR. A record that has one
    already (copied by --reuse) keeps it."""
    from dataclasses import replace

    if record.thoroughness is not None:
        return record
    value = of(record.verdict.value, record.examples, level)
    return replace(record, thoroughness=value) if value is not None else record


def of(verdict: str, examples: int, level: Thoroughness | None) -> Thoroughness | None:
    """The thoroughness of a record of `verdict` that drew `examples` cases, under a check of `level`."""
    if verdict in ("skip", "error"):
        return Thoroughness.NOT_RUN
    if level is None:
        return None
    if examples == 0:
        return Thoroughness.STRUCTURAL
    return level


def parse(value, where: str) -> Thoroughness | None:
    """A record's thoroughness from JSON: None where absent, or a level this verify does not know
    (a newer writer's): it is then not claimed, never read as more than it was."""
    if value is None:
        return None
    if not isinstance(value, str):
        from verify.errors import UsageError

        raise UsageError(f"{where}: expected str or None, got {type(value).__name__}")
    try:
        return Thoroughness(value)
    except ValueError:
        return None
