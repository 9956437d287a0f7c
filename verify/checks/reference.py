"""The kernel against its float64 reference, within the derived budget."""

from verify.checks.base import Check


class ReferenceCheck(Check):
    name = "reference"
    doc = "outputs within the derived error budget of the float64 reference; no NaN, no write past the end"
    on_every_implementation = True
    at_every_subgroup_width = True

    def run_example(self, ctx, case):
        return ctx.judge(case, ctx.launch(case))
