"""What a kernel promises: its config space, WGSL, launch rule, reference and error budget.

A `Kernel` is everything the checks need to run one kernel and judge its outputs; it knows no
CLI and no report. Families (attention, dp4a) subclass it; sources other than our own WGSL
(TVM, a user's file) reuse a family's contract with different WGSL.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from verify.budgets.expected import Expected
from verify.cases import Case
from verify.errors import UsageError
from verify.gpu.device import Launched
from verify.kernels.default_checks import DEFAULT_CHECKS
from verify.profiles import Profile, get_profile


@dataclass(frozen=True)
class ConfigKey:
    """One thing the WGSL is specialised on: a name, its default, the values it may take
    (`choices`, or for numbers an inclusive `bounds` range), and what it means."""

    name: str
    default: object
    choices: tuple = ()
    doc: str = ""
    #: Inclusive (lowest, highest) of a numeric key without `choices`: a value outside is a
    #: usage error, not a case too big to allocate.
    bounds: tuple | None = None

    def parse(self, text: str):
        kind: type[Any] = type(self.default)
        try:
            value = kind(text) if kind is not bool else text.lower() in ("1", "true", "yes")
        except ValueError:
            raise UsageError(f"config {self.name}={text!r}: expected {kind.__name__}") from None
        return self.check(value)

    def check(self, value):
        """`value`, or UsageError saying which values the key takes."""
        if self.choices and value not in self.choices:
            raise UsageError(f"config {self.name}={value}: expected one of {', '.join(map(str, self.choices))}")
        if self.bounds is not None and not (self.bounds[0] <= value <= self.bounds[1]):
            raise UsageError(f"config {self.name}={value}: expected {self.bounds[0]} to {self.bounds[1]}")
        return value


@dataclass(frozen=True)
class Upstream:
    """Where a kernel's WGSL comes from outside this package, as its maintainers name it: the
    project and its version, the code that generates the kernel (a factory call, a program and its
    template), and the files to look in. An exported reproduction (verify.export) heads its issue
    text with it, so a report lands where the kernel is made."""

    project: str
    version: str
    origin: str
    files: tuple = ()


class Kernel(ABC):
    """A kernel under test: its config space, WGSL, cases, launch rule, reference and budget.

    Subclass it to bring your own kernel (docs/writing-a-kernel.md): give it a `name`, its
    `config_keys` and `checks`, and implement `wgsl`, `cases`, `launch` and `expected`. The
    worker process creates it with no arguments from its import path.
    """

    name: str = ""
    family: str = ""
    source: str = "own"
    summary: str = ""
    #: Dotted name of the float64 reference the outputs are compared with.
    reference: str = ""
    #: Device features the WGSL needs; a device without them skips the check, with the reason.
    requires: frozenset = frozenset()
    #: Device limits to hold the kernel to (overrides verify.gpu.device.WANTED_LIMITS).
    limits: dict = {}
    config_keys: tuple[ConfigKey, ...] = ()
    #: Names of the checks (verify.checks) that apply to this kernel, in the order they run, e.g.
    #: ("reference", "implementations"). A subclass names its own; read back, the tuple also holds
    #: each of DEFAULT_CHECKS the kernel does not leave out, placed when the class is made after
    #: the first it names (its judgement against the reference, as a rule) and before the rest. A
    #: kernel that names none verifies nothing and is refused (a contract error).
    checks: tuple = ()
    #: The default checks (DEFAULT_CHECKS) this kernel does not run, each with why, e.g.
    #: {"sanitize": "ONNX Runtime's session dispatches the programs; each is sanitized as ort.attention.*"}:
    #: `verify list` shows the reasons, so a check left out is a decision on record, not an omission.
    leaves_out: Mapping[str, str] = {}
    #: Names of each output's last two axes, for the report's heatmaps, e.g. {"output": ("head", "dim")}.
    output_axes: dict = {}
    #: Kernel the "differential" check compares with (same contract and config keys).
    differential_partner: str = ""
    #: The WebGPU implementations the kernel is meant for (names in verify.gpu.implementations,
    #: e.g. ("dawn",)); empty: any. The gate runs it on the first when the run's implementation is
    #: not among them, and a check that names no implementation does too
    #: (verify.plan.kernel_implementation); `verify check --implementation` still chooses.
    implementations: tuple = ()
    #: Checks that run on another WebGPU implementation than the kernel's own when the run has it:
    #: check name -> implementation name (verify.plan.check_implementation). Meant for a check
    #: whose verdict does not depend on the compiler, such as `sanitize` (it judges the
    #: instrumented program's access log, not the arithmetic), where the kernel's own
    #: implementation compiles that check's program too slowly to be of use. An implementation the
    #: user chose (`--implementation`, $VERIFY_IMPLEMENTATION) still runs every check.
    check_implementations: dict = {}
    #: The implementation the gate runs this kernel's emulated subgroup widths on where the run
    #: has it (default "": the kernel's own): for a kernel whose emulated programs the own
    #: implementation's compiler takes minutes to compile on a software driver, where the
    #: width-bound code they check is the same under either compiler.
    emulated_implementation: str = ""

    def __init_subclass__(cls, **kwargs):
        """Complete the class's `checks` with the default ones it does not leave out. A reason for
        a check the kernel names, or for one that is not a default, is a contract error: either
        would say a check is left out that runs, or one is left out that never would."""
        super().__init_subclass__(**kwargs)
        unknown = [c for c in cls.leaves_out if c not in DEFAULT_CHECKS]
        if unknown:
            raise TypeError(f"{cls.__qualname__}.leaves_out names {', '.join(unknown)}, not a default check "
                            f"(verify.kernels.default_checks.DEFAULT_CHECKS: {', '.join(DEFAULT_CHECKS)})")
        named = tuple(cls.__dict__.get("checks", ()))
        both = [c for c in named if c in cls.leaves_out]
        if both:
            raise TypeError(f"{cls.__qualname__} names {', '.join(both)} in checks and leaves it out")
        declared = tuple(c for c in cls.checks if c not in cls.leaves_out)
        if declared:  # a class that names none (an abstract base) is refused when planned, not completed
            defaults = tuple(c for c in DEFAULT_CHECKS if c not in cls.leaves_out)
            cls.checks = tuple(dict.fromkeys(declared[:1] + defaults + declared[1:]))

    # -- config ------------------------------------------------------------------------
    def config(self, overrides: dict | None = None) -> dict:
        """The full config: defaults, then `overrides` (strings from the CLI are parsed)."""
        keys = {k.name: k for k in self.config_keys}
        config = {k.name: k.default for k in self.config_keys}
        for name, value in (overrides or {}).items():
            if name not in keys:
                valid = ", ".join(keys) or "none"
                raise UsageError(f"{self.name} has no config key {name!r}; valid keys: {valid}")
            config[name] = keys[name].parse(value) if isinstance(value, str) else keys[name].check(value)
        self.validate(config)
        return config

    def validate(self, config: dict) -> None:  # noqa: B027 (optional: most kernels accept every combination)
        """Raise UsageError saying why a combination of keys cannot be built."""

    def requirements(self, config: dict) -> frozenset:
        """Device features this config's WGSL needs (e.g. shader-f16 only for f16 storage)."""
        return frozenset(self.requires)

    def gate_configs(self, profile: Profile) -> list[dict]:
        """The configs `verify gate` runs for a profile (default: just the defaults)."""
        return [self.config()]

    def gate_examples(self, profile: Profile) -> int:
        """Examples the gate gives each of this kernel's checks under `profile`, shared among its
        gate configs (default: the profile's). A kernel whose one case holds the work of hundreds
        of another's (a prefill batch of thousands of query rows) declares fewer, and says why."""
        return get_profile(profile).examples

    def gate_subgroup_widths(self, profile: Profile) -> tuple[int, ...]:
        """The emulated subgroup widths the gate runs this kernel's width checks at
        (Check.at_every_subgroup_width), for a config whose WGSL reads its subgroups (default: the
        profile's). A kernel whose every emulated program is a first compile of minutes names the
        widths its bugs need (and says why)."""
        return tuple(get_profile(profile).subgroup_widths)

    def known_finding(self, check: str, config: dict):
        """The evidence of a documented failure of this kernel's own WGSL under `check` and
        `config`, or None (the default: every failure is news).

        For kernels from elsewhere (TVM's generated WGSL) whose bugs our checks find: the check
        still runs, unchanged; a failure is recorded as verdict "known" with this text, which
        does not fail the run, and a pass is recorded with it and `finding_reproduced: False`,
        so an upstream fix, or an adapter where the bug does not show, is seen (verify.worker).
        The first line is the headline the console and JUnit show; the rest cites the evidence.
        Return a verify.results.record.KnownFinding (or several) to give the finding's signature
        (outputs, failure kinds, text of the reason, implementations): a failure of another
        signature is then reported as the failure it is, never hidden behind the finding.
        """
        return None

    def finding_examples(self, check: str, config: dict) -> list[Case]:
        """Cases that show a documented finding under `check` (default: none), run first on every
        seed as explicit examples, so a finding never depends on what a seed happens to draw (a
        finding not reproduced is then news, not luck)."""
        return []

    def corners(self, config: dict) -> list[Case]:
        """The cases that matter most for this config, run first by every check that draws the
        kernel's own cases, on every seed and in every profile, before any drawn at random (default:
        none): the family's tails and boundaries (a context of one row, one past a page, a shard
        or split boundary, empty states, the GQA group's edges). A budgeted gate always runs them
        all (verify.plan.budgeted); a check whose corners did not complete is never a PASS."""
        return []

    def upstream(self, config: dict, wgsl: str) -> Upstream | None:
        """Where this config's WGSL (`wgsl`, the text that ran) comes from upstream, or None (the
        default: a kernel of this package, or a user's file, whose author is the reader)."""
        return None

    # -- the kernel ----------------------------------------------------------------------
    @abstractmethod
    def wgsl(self, config: dict) -> str:
        """The exact WGSL `check` runs for this config."""

    @abstractmethod
    def cases(self, config: dict, profile: Profile):
        """A Hypothesis strategy of Case for this config."""

    @abstractmethod
    def launch(self, device, wgsl: str, config: dict, case: Case) -> Launched:
        """Bind the case's arrays and dispatch (`device.pipeline(wgsl)` is cached by hash)."""

    def modules(self, wgsl: str) -> list[str]:
        """The separately compiled WGSL modules in `wgsl` (one, unless a kernel switches between several)."""
        return [wgsl]

    @abstractmethod
    def expected(self, config: dict, case: Case) -> list[Expected]:
        """Reference values and budgets for every output that is judged."""

    def features(self, case: Case) -> dict:
        """Scalars describing a case for plots (e.g. context length); default: none."""
        return {}

    def launch_paths(self, config: dict, case: Case) -> tuple[str, ...]:
        """The host-side branches `launch` takes for this case (e.g. "sharded", "grid wrapped
        into y"), so a run can say which of them its cases exercised; default: none."""
        return ()

    #: The function that derives this kernel's budgets; its docstring is the derivation.
    budget_function: Callable[..., Any] | None = None

    def budget_doc(self) -> str:
        import inspect

        doc = inspect.getdoc(self.budget_function) if self.budget_function else None
        return doc or "no derivation recorded"

    def describe(self) -> dict:
        return {
            "name": self.name,
            "family": self.family,
            "source": self.source,
            "summary": self.summary,
            "reference": self.reference,
            "requires": sorted(self.requires),
            "config_keys": {k.name: {"default": k.default, "choices": list(k.choices), "doc": k.doc}
                            for k in self.config_keys},
            "checks": list(self.checks),
            "leaves_out": dict(self.leaves_out),
        }
