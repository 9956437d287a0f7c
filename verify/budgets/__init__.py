"""The error model: every tolerance the toolkit applies is derived here.

Notation follows Higham, *Accuracy and Stability of Numerical Algorithms* (2002), §2-3:
``u`` is the unit roundoff of a format (2**-p for p significand bits, implicit bit included),
``gamma(n, u) = n*u / (1 - n*u)`` bounds the relative error of n chained roundings.

Public, on plain numpy arrays (docs/budgets.md §10 lists each with its signature):

- rounding: ``unit_roundoff``, ``smallest_normal``, ``gamma``, ``ulp``,
  ``faithful_rounding_bound``, ``rounding_floor``, ``rounding_rel``;
- the WGSL built-ins' accuracy (WGSL spec §15.7.4): ``exp2_rel``, ``exp_rel``, ``log2_abs``,
  ``log_abs``, ``division_rel``, ``inverse_sqrt_rel``, ``trig_abs``, ``literal_rel``;
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
    smallest_normal,
    ulp,
    unit_roundoff,
)
from verify.budgets.wgsl_accuracy import (
    division_rel,
    exp2_rel,
    exp_rel,
    inverse_sqrt_rel,
    literal_rel,
    log2_abs,
    log_abs,
    rounding_rel,
    trig_abs,
)

__all__ = [
    "decode_expected", "division_rel", "exp2_rel", "exp_rel", "faithful_rounding_bound", "gamma", "inverse_sqrt_rel",
    "literal_rel", "log2_abs", "log_abs", "merge_expected", "rope_expected", "rounding_floor", "rounding_rel",
    "smallest_normal", "trig_abs", "ulp", "unit_roundoff",
]
