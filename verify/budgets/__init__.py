"""The error model: every tolerance the toolkit applies is derived here.

Notation follows Higham, *Accuracy and Stability of Numerical Algorithms* (2002), §2-3:
``u`` is the unit roundoff of a format (2**-p for p significand bits, implicit bit included),
``gamma(n, u) = n*u / (1 - n*u)`` bounds the relative error of n chained roundings.

Public, on plain numpy arrays:

- rounding primitives: ``unit_roundoff``, ``gamma``, ``ulp``, ``faithful_rounding_bound``,
  ``rounding_floor``;
- reference + budget pairs as ``verify.Expected`` values, for ``verify.testing``:
  ``decode_expected`` (decode attention from dense q, k, v), ``merge_expected`` (merging two
  base-2 attention states), ``rope_expected`` (NeoX rotary embedding).

Each derivation is in its function's docstring (and in verify.budgets.attention / dp4a).
"""

from verify.budgets.from_arrays import decode_expected, merge_expected, rope_expected
from verify.budgets.roundoff import (
           faithful_rounding_bound,
           gamma,
           rounding_floor,
           ulp,
           unit_roundoff,
)

__all__ = ["decode_expected", "faithful_rounding_bound", "gamma", "merge_expected", "rope_expected",
           "rounding_floor", "ulp", "unit_roundoff"]
