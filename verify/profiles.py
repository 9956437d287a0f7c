"""Profiles: how hard `verify gate` and `verify check` look, in one object.

quick: a smoke test in well under a minute. ci: the per-change gate, sized for two CPU cores
running a software Vulkan driver. nightly: many more examples and long contexts, meant for a
GPU machine or a night on a CPU.

A Profile holds generic knobs only: examples per check, the time limit, the emulated subgroup
widths, a row count for row-wise kernels, and its `scale` ("quick" | "ci" | "nightly"). How big
one family's cases get at each scale is the family's own declaration (`FamilySizes`, in its
folder, e.g. verify.kernels.attention.sizes); a Profile may replace a family's sizes through its
`sizes` mapping, keyed by family name. A kernel from another package sizes its cases from
`max_tokens`, its own FamilySizes, or `scale`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from verify.errors import UsageError

#: The scales a profile can have; a family declares its case sizes at each.
SCALES = ("quick", "ci", "nightly")

Sizes = TypeVar("Sizes")


@dataclass(frozen=True)
class Profile:
    """How many examples each check draws and how big its cases get."""

    name: str
    #: Examples per (kernel, check) in the gate, shared among the kernel's gate configs; the
    #: default of `verify.check`.
    examples: int
    #: Seconds one check of one config may run before it is failed as a hang.
    time_limit: float
    doc: str
    #: Rows of row-wise kernels (merge states, rotary tokens, normalised rows).
    max_tokens: int
    #: The size class of the cases: one of SCALES (each family declares its sizes per scale).
    scale: str = "ci"
    #: Subgroup widths the gate runs every subgroup-using kernel at, emulated (docs/instrumentation.md).
    subgroup_widths: tuple = ()
    #: Whether the gate runs every check on each further WebGPU implementation; False: only the
    #: checks that say they run on every implementation (Check.on_every_implementation), the first
    #: implementation running them all.
    every_check_on_every_implementation: bool = False
    #: Family name -> sizes replacing that family's own at this profile's scale.
    sizes: dict = field(default_factory=dict)
    #: A check drawing more examples than this is split into slices of about this many, each run
    #: by any worker with a seed stream of its own (verify.plan.sliced); None: never split.
    slice_examples: int | None = None
    #: Seconds the checks are given by default (`--budget`): every check's corners run, then random
    #: examples until the budget is spent (verify.plan.budgeted); None: every planned example runs.
    budget: float | None = None

    def __post_init__(self):
        if self.scale not in SCALES:
            raise UsageError(f"profile {self.name!r}: scale {self.scale!r} is not one of {', '.join(SCALES)}")

    def __str__(self) -> str:
        return self.name


PROFILES = {
    "quick": Profile("quick", 24, 300.0, "smoke test: few examples, short contexts", 4, "quick"),
    # ci's budget: on two CPU cores with lavapipe the gate then takes under 3 minutes warm, every
    # check runs its corners and at least one part of 10 random examples (corners and one part
    # catch 67 of the 68 mutants, two parts all; docs/ci.md §8); a GPU machine runs all 200.
    "ci": Profile("ci", 200, 900.0, "per-change gate: every corner, then up to 200 examples per check in 165 s, "
                  "contexts up to ~1k", 16, "ci", (4, 16, 32, 64, 128), budget=165.0),
    "nightly": Profile("nightly", 1000, 3600.0, "long contexts (>= 4096), many examples", 64, "nightly",
                       (4, 8, 16, 32, 64, 128), True, slice_examples=50),
}


@dataclass(frozen=True)
class FamilySizes(Generic[Sizes]):
    """How big one kernel family's cases get at each scale, declared in the family's folder.

    `sizes(profile)` is the family's sizes at the profile's scale, unless the profile replaces
    them (`Profile.sizes[family]`).
    """

    family: str
    quick: Sizes
    ci: Sizes
    nightly: Sizes

    def __call__(self, profile: str | Profile) -> Sizes:
        chosen = get_profile(profile)
        return chosen.sizes.get(self.family) or getattr(self, chosen.scale)


def get_profile(profile: str | Profile) -> Profile:
    """The Profile named `profile` (a Profile is returned as it is); UsageError listing the valid ones."""
    if isinstance(profile, Profile):
        return profile
    if profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r}; valid profiles: {', '.join(PROFILES)}")
    return PROFILES[profile]


def encode_profile(profile: Profile) -> str | None:
    """A profile as a job carries it to the worker, as JSON: None for one of verify's own (its
    name suffices), else every field, and each family's sizes as the dataclass they are (its import
    path and fields) or as plain JSON values. No pickle: a job is data anyone can read."""
    import json
    from dataclasses import asdict, fields, is_dataclass

    if PROFILES.get(profile.name) is profile:
        return None
    data = {f.name: getattr(profile, f.name) for f in fields(profile) if f.name != "sizes"}
    data["subgroup_widths"] = list(profile.subgroup_widths)
    sizes = {}
    for family, value in profile.sizes.items():
        if is_dataclass(value) and not isinstance(value, type):
            kind = type(value)
            sizes[family] = {"type": f"{kind.__module__}:{kind.__qualname__}", "fields": asdict(value)}
        else:
            sizes[family] = {"value": value}
    data["sizes"] = sizes
    try:
        return json.dumps(data, sort_keys=True)
    except TypeError as exc:
        raise UsageError(f"profile {profile.name!r}: its sizes must be dataclasses or plain JSON values to travel "
                         f"to the worker ({exc})") from None


def job_profile(name: str, data: str | None) -> Profile:
    """The profile a job names or carries (encode_profile)."""
    import json
    from importlib import import_module

    if data is None:
        return get_profile(name)
    try:
        fields_ = json.loads(data)
        sizes = {}
        for family, entry in fields_.pop("sizes", {}).items():
            if "type" in entry:
                module, _, qualname = entry["type"].partition(":")
                kind: Any = import_module(module)  # then the class named by qualname within it
                for part in qualname.split("."):
                    kind = getattr(kind, part)
                sizes[family] = kind(**entry["fields"])
            else:
                sizes[family] = entry["value"]
        fields_["subgroup_widths"] = tuple(fields_.get("subgroup_widths") or ())
        return Profile(**fields_, sizes=sizes)
    except (ValueError, TypeError, KeyError, AttributeError, ImportError) as exc:
        raise UsageError(f"the job's profile cannot be read back: {type(exc).__name__}: {exc}") from None
