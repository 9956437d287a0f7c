"""A case: the data one run of a kernel consumes, as named arrays plus scalar parameters.

One plain container for every kernel family, so saving, replaying and reporting stay
generic; each family's strategies and contracts give the names their meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Case:
    arrays: dict[str, np.ndarray]
    params: dict = field(default_factory=dict)

    def __getitem__(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def __repr__(self) -> str:
        """The summary, not the arrays: Hypothesis prints a case it reports, and a case's arrays
        run to megabytes (the saved case file holds them)."""
        return f"Case({self.summary()})"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """Hypothesis's pretty printer (IPython's protocol) prints the summary too. Without this it
        prints a dataclass field by field, every array in full, and it does so for every explicit
        example (each corner and finding case) whether or not it reports one: 2-5 ms a case."""
        printer.text(repr(self))

    def replace(self, arrays: dict | None = None, **params) -> Case:
        """A copy with some arrays and parameters replaced (arrays are shared, not copied)."""
        return Case({**self.arrays, **(arrays or {})}, {**self.params, **params})

    def summary(self) -> str:
        """One line a reader can recognise the case by: parameters, then array shapes."""
        shown = {k: v for k, v in self.params.items() if not isinstance(v, (list, tuple)) or len(v) <= 8}
        params = " ".join(f"{k}={v}" for k, v in shown.items())
        shapes = " ".join(f"{k}{list(v.shape)}" for k, v in self.arrays.items())
        return f"{params} | {shapes}".strip(" |")
