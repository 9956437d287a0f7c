"""Gate profiles: how hard `verify gate` looks.

quick: a smoke test in well under a minute. ci: the per-change gate, sized for two CPU cores
running a software Vulkan driver. nightly: many more examples and long contexts, meant for a
GPU machine or a night on a CPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.errors import UsageError


@dataclass(frozen=True)
class Profile:
    name: str
    #: Examples per (kernel, check), shared among the kernel's gate configs.
    examples: int
    #: Seconds one check of one config may take before it is failed as a hang.
    time_limit: float
    doc: str


PROFILES = {
    "quick": Profile("quick", 24, 300.0, "smoke test: few examples, short contexts"),
    "ci": Profile("ci", 200, 900.0, "per-change gate: >= 200 examples per check, contexts up to ~1k"),
    "nightly": Profile("nightly", 1000, 3600.0, "long contexts (>= 4096), many examples"),
}


def get_profile(name: str) -> Profile:
    if name not in PROFILES:
        raise UsageError(f"unknown profile {name!r}; valid profiles: {', '.join(PROFILES)}")
    return PROFILES[name]
