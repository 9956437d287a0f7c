"""What one example of a check produced, and the timers that say where its time went."""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass, field

from verify.cases import Case
from verify.errors import FailureKind


@dataclass
class Outcome:
    """One example: pass/fail, the score Hypothesis climbs (max err/budget), why, and what kind
    of failure it is (`kind`; for a failure judged by outputs alone it is read from the metrics)."""

    passed: bool
    score: float
    outputs: list = field(default_factory=list)  # OutputMetrics
    reasons: list = field(default_factory=list)
    features: dict = field(default_factory=dict)
    case: Case | None = None
    kind: FailureKind | None = None

    @property
    def failure_kind(self) -> FailureKind | None:
        """None for a pass; else `kind`, or the worst the output metrics show (NaN, then values
        that must be bit-exact, then over budget)."""
        if self.passed:
            return None
        if self.kind is not None:
            return self.kind
        if any(m.nan_count for m in self.outputs):
            return FailureKind.NAN
        if any(m.exact_mismatches for m in self.outputs):
            return FailureKind.NOT_BIT_EXACT
        if any(m.failing for m in self.outputs):
            return FailureKind.OVER_BUDGET
        return FailureKind.FAILED

    def message(self) -> str:
        lines = list(self.reasons) + [m.message() for m in self.outputs if not m.passed]
        return "; ".join(lines) if lines else "ok"


class StageTimer:
    """Seconds spent per stage over a check: the float64 reference and budget, upload, dispatch,
    readback, compare, and generation (Hypothesis drawing cases, targeting and shrinking: the
    time outside the examples)."""

    STAGES = ("reference", "upload", "dispatch", "readback", "compare", "generation")

    def __init__(self):
        self.seconds = dict.fromkeys(self.STAGES, 0.0)
        self.gpu_ns: list[float] = []
        self.cases = 0
        #: Called with a stage's name when the check enters it (the worker reports it to the parent).
        self.on_stage = None
        self._current = ""

    def entering(self, name: str) -> None:
        """Say what the check is doing now (verify.protocol.Stage), if anyone listens."""
        if self.on_stage is not None and name != self._current:
            self._current = name
            self.on_stage(name)

    @contextmanager
    def stage(self, name: str):
        self.entering(name)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] += time.perf_counter() - start

    def add_launch(self, timing) -> None:
        if timing is None:
            return
        self.seconds["upload"] += timing.upload
        self.seconds["dispatch"] += timing.dispatch
        self.seconds["readback"] += timing.readback
        if timing.gpu_ns is not None:
            self.gpu_ns.append(timing.gpu_ns)

    def as_record(self) -> dict:
        per_case = {k: (v / self.cases * 1e3 if self.cases else 0.0) for k, v in self.seconds.items()}
        return {
            "cases": self.cases,
            "total_s": {k: round(v, 4) for k, v in self.seconds.items()},
            "per_case_ms": {k: round(v, 3) for k, v in per_case.items()},
            "gpu_ms_median": round(sorted(self.gpu_ns)[len(self.gpu_ns) // 2] / 1e6, 4) if self.gpu_ns else None,
        }
