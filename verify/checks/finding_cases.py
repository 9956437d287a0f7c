"""The first case a check draws, built without a device: a documented finding's own case
(Kernel.finding_examples) where that case is the one every seed of the unbudgeted gate meets first.

Hypothesis draws the simplest case of a strategy first (every choice at its simplest: the fewest
tokens, seed 0, the first of each sampled list), before any at random, so a finding that shows on
that case shows on every seed of the unbudgeted gate. A budgeted gate's first part runs the
explicit cases alone (verify.plan.budgeted), never that first draw: a kernel returns it from
`finding_examples` so the finding reproduces under any budget too. `simplest` builds it as
Hypothesis does (`find` with a condition every case meets ends on that first draw), so the case is
the same bytes on every run and machine.
"""

from __future__ import annotations

import warnings
from types import SimpleNamespace
from typing import cast

from verify.cases import Case
from verify.profiles import get_profile


def simplest(strategy, condition=None) -> Case:
    """The simplest case of `strategy` (the first Hypothesis draws), or where `condition` is given,
    the simplest that meets it (Hypothesis's shrinking toward the first draw). Derandomized, so
    a strategy whose first draw is filtered out, or a condition, gives the same case on every run."""
    from hypothesis import HealthCheck, Phase, find, settings
    from hypothesis.errors import HypothesisWarning

    # No explain phase: it replays the case a hundred times to say which parts of it matter.
    chosen = settings(database=None, max_examples=200, deadline=None, derandomize=True,
                      phases=(Phase.generate, Phase.shrink), suppress_health_check=list(HealthCheck))
    with warnings.catch_warnings():  # the repr of a large case, which nothing here prints
        warnings.simplefilter("ignore", HypothesisWarning)
        return find(strategy, condition or (lambda case: True), settings=chosen)


def first_drawn(kernel, check: str, config: dict, condition=None, profile: str = "ci") -> Case:
    """The simplest case `check`'s own strategy draws for `kernel` and `config` under `profile`
    (that meets `condition`, where given): the kernel's cases for a check that draws them, the
    check's family (below_floor's logits, accumulator_range's chunk products, ...) for one that
    draws its own, so the case is of the kind the check's strategy draws."""
    from verify.checks import get_check
    from verify.checks.context import CheckContext

    # What a check's strategy reads of its context (no device: nothing is launched here).
    ctx = cast(CheckContext, SimpleNamespace(kernel=kernel, config=config, profile=get_profile(profile)))
    return simplest(get_check(check).strategy(ctx), condition)
