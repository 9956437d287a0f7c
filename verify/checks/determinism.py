"""Two runs of the same case must agree bit for bit: a race detector."""

from verify.checks.base import Check, bitwise_differences
from verify.checks.outcome import Outcome
from verify.errors import FailureKind
from verify.results.thoroughness import Thoroughness


class DeterminismCheck(Check):
    name = "determinism"
    #: two runs of one case compared with each other: a bug both runs share passes (verify.results.thoroughness).
    thoroughness = Thoroughness.RELATION
    doc = "two runs of the same case give bitwise-identical outputs (a missing barrier shows up here)"

    def run_example(self, ctx, case):
        first = ctx.launch(case).outputs
        second = ctx.launch(case).outputs
        reasons = [f"nondeterministic {r}" for r in bitwise_differences(first, second)]
        return Outcome(not reasons, float(len(reasons)), [], reasons, ctx.kernel.features(case), case,
                       FailureKind.NONDETERMINISTIC)
