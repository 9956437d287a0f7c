"""A check: a property of a kernel, tested over the cases its strategy draws."""

from __future__ import annotations

from verify.checks.context import CheckContext
from verify.checks.outcome import Outcome


class Check:
    name: str = ""
    #: One line for `verify list` and the report.
    doc: str = ""
    #: At most this many examples per config, whatever the run asks for (None: no cap), for a
    #: check whose examples are costly and small cases suffice.
    max_examples: int | None = None

    def applies(self, kernel) -> bool:
        return self.name in kernel.checks

    def strategy(self, ctx: CheckContext):
        return ctx.kernel.cases(ctx.config, ctx.profile)

    def run_example(self, ctx: CheckContext, case) -> Outcome:
        raise NotImplementedError


def bitwise_differences(a: dict, b: dict) -> list[str]:
    """Names and counts of outputs that differ bit for bit between two launches."""
    import numpy as np

    reasons = []
    for name in a:
        x, y = np.ascontiguousarray(a[name]), np.ascontiguousarray(b[name])
        if x.shape != y.shape:
            reasons.append(f"{name}: shape {x.shape} vs {y.shape}")
            continue
        raw_x = x.view(np.uint8).reshape(x.size, -1) if x.size else x
        raw_y = y.view(np.uint8).reshape(y.size, -1) if y.size else y
        differ = int(np.any(raw_x != raw_y, axis=-1).sum()) if x.size else 0
        if differ:
            reasons.append(f"{name}: {differ}/{x.size} elements differ bit for bit")
    return reasons
