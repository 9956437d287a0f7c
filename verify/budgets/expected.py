"""`Expected`: one output's acceptable values and error budget, the value every budget builds
and every comparison (verify.budgets.metrics.compare) reads."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Expected:
    """One output's acceptable values and error budget, as float64 arrays of its shape.

    The kernel's value v passes where lo - budget <= v <= hi + budget. Most outputs have
    lo == hi == the reference; quantized codes have a legal range. `dtype` is the stored
    format of the output, for ulps and rounding floors. `exact` marks elements that must
    match bit for bit (e.g. the -inf LSE of an empty context), whatever the budget says.
    `convention` marks elements whose value is the kernel's own convention rather than the
    math (TVM's LSE of about -5e4 for an empty context): checks that compare two runs hold
    them to this Expected, not to the other run (`keeping_conventions`).
    """

    name: str
    lo: np.ndarray
    hi: np.ndarray
    budget: np.ndarray
    dtype: str
    exact: np.ndarray | None = None
    convention: np.ndarray | None = None

    @classmethod
    def around(cls, name, reference, budget, dtype, exact=None) -> Expected:
        reference = np.asarray(reference, dtype=np.float64)
        return cls(name, reference, reference, np.asarray(budget, dtype=np.float64), dtype, exact)

    def keeping_conventions(self, joint: Expected) -> Expected:
        """`joint` (a comparison with another run), but this Expected wherever `convention` is set."""
        if self.convention is None:
            return joint
        mask = np.broadcast_to(self.convention, joint.lo.shape)
        exact = None if joint.exact is None else np.broadcast_to(joint.exact, mask.shape) & ~mask
        budget = np.where(mask, np.broadcast_to(self.budget, mask.shape), np.broadcast_to(joint.budget, mask.shape))
        return Expected(joint.name, np.where(mask, self.lo, joint.lo), np.where(mask, self.hi, joint.hi), budget,
                        joint.dtype, exact)

    @property
    def reference(self) -> np.ndarray:
        """The middle of the acceptable interval (the reference itself for point intervals)."""
        return (self.lo + self.hi) / 2
