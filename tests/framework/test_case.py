"""A case prints as its summary, not its arrays, wherever it is printed."""

from __future__ import annotations

import numpy as np
from hypothesis.vendor.pretty import pretty

from verify.cases import Case


def test_a_case_prints_its_summary_in_repr_and_in_hypothesiss_pretty_printer():
    """Hypothesis pretty-prints every explicit example (each corner) as it runs it; a dataclass
    it prints field by field, so a case of megabytes of arrays cost milliseconds each."""
    case = Case({"q": np.arange(100_000, dtype=np.float32).reshape(10, 10_000)}, {"seed": 3, "rows": 10})
    assert repr(case) == "Case(seed=3 rows=10 | q[10, 10000])"
    assert pretty(case) == repr(case)
    assert " ".join(pretty([case, {"case": case}]).split()) == f"[{case!r}, {{'case': {case!r}}}]"
