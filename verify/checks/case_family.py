"""The reference check over a family of cases drawn apart from the kernel's own."""

from __future__ import annotations

from collections.abc import Callable

from verify.checks.base import Check


class CaseFamilyCheck(Check):
    """The reference check, over cases a kernel draws apart: inputs outside its own conventions
    (logits below TVM's floor, packed grids, -inf empty states, all-zero blocks), judged by the
    same reference and budget.

    `cases(kernel, config, profile)` returns the Hypothesis strategy of those cases; a kernel the
    check applies to provides whatever the callable asks of it.
    """

    def __init__(self, name: str, doc: str, cases: Callable):
        self.name, self.doc, self._cases = name, doc, cases

    def code_modules(self):
        return (type(self).__module__, self._cases.__module__)

    def strategy(self, ctx):
        return self._cases(ctx.kernel, ctx.config, ctx.profile)

    def run_example(self, ctx, case):
        return ctx.judge(case, ctx.launch(case))
