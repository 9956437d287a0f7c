"""Everything a check needs to run one kernel config on one device."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from verify.budgets.metrics import compare
from verify.checks.outcome import Outcome, StageTimer
from verify.errors import ContractError, FailureKind
from verify.profiles import Profile, get_profile

if TYPE_CHECKING:
    from verify.checks.shared_cases import ReferenceMemo
    from verify.gpu.device import Device
    from verify.kernels.contract import Kernel


@dataclass
class CheckContext:
    kernel: Kernel
    config: dict
    device: Device
    wgsl: str
    profile: Profile = field(default_factory=lambda: get_profile("ci"))
    timer: StageTimer = field(default_factory=StageTimer)
    #: Opens a device of the other WebGPU implementation on the same adapter and limits (set by
    #: the worker; the `implementations` check runs the kernel on both).
    open_other: Callable[[], Device] | None = None
    #: The WGSL is a user's file run under the kernel's contract (`verify check --wgsl`,
    #: verify.check(wgsl=...)), not the kernel's own: the worker sets it from the job. A check may
    #: then look harder (the reference check adds the sanitizer's bounds pass), as nothing vouches
    #: for such WGSL but the checks themselves.
    user_wgsl: bool = False
    #: Facts a check found that do not change its verdict; the runner adds them to the record's notes.
    notes: list = field(default_factory=list)
    #: The worker's references of cases other jobs draw too (verify.checks.shared_cases), set for
    #: a job the plan marks; None: each case's reference is computed here.
    shared: ReferenceMemo | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    def note(self, text: str) -> None:
        """Leave `text` in the record's notes (once, however many examples say it)."""
        if text not in self.notes:
            self.notes.append(text)

    def launch(self, case, kernel=None, wgsl=None, device=None):
        """Run a kernel (this one by default) on a case, timing the stages; `device` replaces
        the check's device (e.g. an instrumented wrapper of it)."""
        kernel = kernel or self.kernel
        self.timer.entering("GPU")
        launched = kernel.launch(device or self.device, wgsl or self.wgsl, self.config, case)
        self.timer.add_launch(launched.timing)
        return launched

    def other_implementation(self):
        """A device of the other WebGPU implementation (Dawn for wgpu, wgpu for Dawn)."""
        if self.open_other is None:
            from verify.errors import SetupError

            raise SetupError("this run has no second WebGPU implementation to compare with")
        return self.open_other()

    def cached(self, key: str, make):
        """A value made once per check (a wrapped device, a compiled partner kernel)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def judge(self, case, launched, kernel=None, unbounded: bool = False) -> Outcome:
        """Compare a launch's outputs with the kernel's reference and budget; `unbounded` says
        the check accepts budgets infinite on every element (see `check_contract`)."""
        kernel = kernel or self.kernel
        with self.timer.stage("reference"):
            if self.shared is not None and kernel is self.kernel:
                expected = self.shared.expected(kernel, self.config, case)
            else:
                expected = kernel.expected(self.config, case)
        check_contract(kernel, expected, launched, unbounded)
        with self.timer.stage("compare"):
            metrics = [compare(launched.outputs[e.name], e) for e in expected]
        reasons = [f"{name}: wrote past the end of the buffer"
                   for name, intact in launched.guard_intact.items() if not intact]
        score = max((m.max_err_over_budget for m in metrics), default=0.0)
        passed = not reasons and all(m.passed for m in metrics)
        return Outcome(passed, score, metrics, reasons, kernel.features(case), case,
                       FailureKind.WRITE_OUT_OF_BOUNDS if reasons else None)


def check_contract(kernel, expected: list, launched, unbounded: bool = False) -> None:
    """ContractError unless `expected` judges something: at least one output, each one `launch`
    returned, of the shape it returned, with a budget that bounds at least one element.

    `unbounded` lets every budget be infinite: a check whose cases may lie beyond any a-priori
    bound (sums past a format's range) and that judges such outputs itself says so.
    """
    if not expected:
        raise ContractError(f"{kernel.name}: expected() returned no outputs, so nothing would be compared")
    returned = sorted(launched.outputs)
    for item in expected:
        if item.name not in launched.outputs:
            raise ContractError(f"{kernel.name}: expected() names output {item.name!r}, which launch() did not return "
                                f"(it returned {', '.join(returned) or 'nothing'})")
        got = np.shape(launched.outputs[item.name])
        if np.shape(item.lo) != got:
            raise ContractError(f"{kernel.name}: expected() gives output {item.name!r} the shape "
                                f"{tuple(np.shape(item.lo))}, launch() returned {tuple(got)}")
        budget = np.broadcast_to(np.asarray(item.budget, np.float64), got)
        exact = np.zeros(got, bool) if item.exact is None else np.broadcast_to(item.exact, got)
        if not unbounded and budget.size and not (np.isfinite(budget) | exact).any():
            raise ContractError(f"{kernel.name}: the budget of output {item.name!r} is infinite (or NaN) on every "
                                "element, so no value could fail; derive a finite one (verify.budgets)")
