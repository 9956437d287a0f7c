"""Compare a kernel's output with its Expected values: the error metrics and the verdict.

An element's error is its distance from the acceptable interval [lo, hi] (a point for most
outputs). The verdict is err <= budget everywhere, no NaN where the reference has none, and
bit-exact agreement where `exact` says so. Messages follow numpy.testing's habit: how many
elements fail, the worst, and where.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from verify.budgets.roundoff import ulp_and_rounding_floor

_FLOAT_FORMATS = ("f16", "f32", "f64")


@dataclass(frozen=True)
class OutputMetrics:
    name: str
    elements: int
    failing: int
    nan_count: int
    exact_mismatches: int
    max_abs: float
    max_ulp: float
    rel_l2: float
    max_err_over_budget: float
    max_err_over_floor: float | None
    worst_index: list
    worst_value: float
    worst_expected: float
    worst_budget: float
    #: err/budget per element (not serialised; the runner summarises it for the report).
    ratio: np.ndarray | None = field(default=None, repr=False, compare=False)

    @property
    def passed(self) -> bool:
        return self.failing == 0 and self.nan_count == 0 and self.exact_mismatches == 0

    def message(self) -> str:
        if self.passed:
            return f"{self.name}: ok (max err/budget {self.max_err_over_budget:.3g})"
        parts = []
        if self.failing:
            parts.append(f"{self.failing}/{self.elements} elements over budget")
        if self.nan_count:
            parts.append(f"{self.nan_count} NaN")
        if self.exact_mismatches:
            parts.append(f"{self.exact_mismatches} not bit-exact where required")
        parts.append(
            f"worst at {tuple(self.worst_index)}: got {self.worst_value:.9g}, expected "
            f"{self.worst_expected:.9g} ± {self.worst_budget:.3g} (err/budget {self.max_err_over_budget:.3g})"
        )
        return f"{self.name}: " + "; ".join(parts)

    def as_record(self) -> dict:
        record = {k: v for k, v in asdict(self).items() if k != "ratio"}
        record["passed"] = self.passed
        return {k: _jsonable(v) for k, v in record.items()}


def _jsonable(value):
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)  # JSON has no inf/nan; the loader turns these back into floats
    return value


def element_errors(actual: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Distance of each element from [lo, hi]; inf for NaN or a wrong infinity."""
    a = np.asarray(actual, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        err = np.maximum(np.maximum(lo - a, a - hi), 0.0)
    same_infinity = np.isinf(a) & ((a == lo) | (a == hi))
    err = np.where(same_infinity, 0.0, err)
    return np.where(np.isnan(err), np.inf, err)


#: Half the largest float64: below it lo + lo is exact, so (lo + lo) / 2 is lo.
_HALF_MAX = 2.0**1023


def _point_errors(actual: np.ndarray, point: np.ndarray) -> np.ndarray:
    """element_errors(actual, point, point) in two passes: max(lo - a, a - lo) is |a - lo| (the two
    differences are each other's negation, bit for bit), never negative, NaN where either is."""
    err = np.abs(actual - point)
    infinite = np.isinf(actual)
    if infinite.any():
        err[infinite & (actual == point)] = 0.0
    err[np.isnan(err)] = np.inf
    return err


def compare(actual: np.ndarray, expected) -> OutputMetrics:
    """Metrics of one output against its `Expected` (verify.kernels.contract.Expected)."""
    # np.where evaluates both branches; inf - inf and x/0 there are masked out by design.
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        return _compare(actual, expected)


def _compare(actual: np.ndarray, expected) -> OutputMetrics:
    a = np.asarray(actual, dtype=np.float64)
    if a.shape != expected.lo.shape:
        raise ValueError(f"{expected.name}: kernel output shape {a.shape} != expected {expected.lo.shape}")
    lo, hi, budget = expected.lo, expected.hi, np.broadcast_to(expected.budget, a.shape)
    # Most outputs are a point (lo is hi, Expected.around): then the middle is lo itself wherever
    # lo + lo does not overflow, and the distance |a - lo|, the same numbers in fewer passes.
    point = lo is hi and a.size > 0 and bool(lo.max() < _HALF_MAX) and bool(lo.min() > -_HALF_MAX)
    reference = lo if point else (lo + hi) / 2
    err = _point_errors(a, lo) if point else element_errors(a, lo, hi)
    nan = np.isnan(a) & ~np.isnan(reference)
    # A NaN budget is a defect of the error model, never a licence, and an infinite error is
    # never within an infinite budget (inf/inf): such elements count as failing.
    ratio = err / budget
    ratio[err == 0] = 0.0
    bad = np.isnan(ratio)
    bad |= np.isnan(budget)
    ratio[bad] = np.inf
    exact_bad = 0
    if expected.exact is not None:
        exact = np.broadcast_to(expected.exact, a.shape)
        bad = exact & ~((a == reference) | (np.isnan(a) & np.isnan(reference)))
        exact_bad = int(bad.sum())
        ratio = np.where(exact, np.where(bad, np.inf, 0.0), ratio)
    failing = int(np.count_nonzero(ratio > 1.0))
    finite = np.isfinite(reference) & np.isfinite(a)
    every = bool(finite.all())
    is_float = expected.dtype in _FLOAT_FORMATS
    if is_float:  # the floor of the finite elements only (its largest is reported)
        spacing, floor = ulp_and_rounding_floor(reference, expected.dtype)
        floor = floor if every else floor[finite]
    else:
        spacing, floor = np.ones_like(reference), np.zeros(0)
    diff = a - reference if every else np.where(finite, a - reference, 0.0)
    ref_norm = np.sqrt(np.sum((np.ascontiguousarray(reference) if every else np.where(finite, reference, 0.0)) ** 2))
    worst = np.unravel_index(int(np.argmax(ratio)), a.shape) if a.size else ()
    max_err = float(err.max()) if a.size else 0.0
    max_floor = float(floor.max()) if floor.size else 0.0
    per_ulp = err / spacing if every else np.where(finite, err / spacing, 0.0)
    return OutputMetrics(
        name=expected.name,
        elements=int(a.size),
        failing=failing,
        nan_count=int(nan.sum()),
        exact_mismatches=exact_bad,
        max_abs=max_err,
        max_ulp=float(np.max(per_ulp)) if a.size else 0.0,
        rel_l2=float(np.sqrt(np.sum(diff**2)) / ref_norm) if ref_norm > 0 else float(np.sqrt(np.sum(diff**2))),
        max_err_over_budget=float(ratio.max()) if a.size else 0.0,
        max_err_over_floor=(max_err / max_floor) if max_floor > 0 else None,
        worst_index=[int(i) for i in worst],
        worst_value=float(a[worst]) if a.size else 0.0,
        worst_expected=float(reference[worst]) if a.size else 0.0,
        worst_budget=float(budget[worst]) if a.size else 0.0,
        ratio=ratio,
    )
