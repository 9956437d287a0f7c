"""Profiles: how hard `verify gate` and `verify check` look, in one object.

quick: a smoke test in well under a minute. ci: the per-change gate, sized for two CPU cores
running a software Vulkan driver. nightly: many more examples and long contexts, meant for a
GPU machine or a night on a CPU.

A Profile carries both how many examples a check draws and how big the drawn cases get, so the
case strategies of every family read their sizes from here rather than from tables of their
own. A kernel from another package sizes its cases from the nearest of these fields (or from
`name`).
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.errors import UsageError


@dataclass(frozen=True)
class DecodeSizes:
    """Paged decode cases: sequences per batch and attended context length."""

    max_batch: int
    max_context: int


@dataclass(frozen=True)
class QuantizeSizes:
    """Activation quantization cases: rows, K (values per row) and leading batch."""

    max_rows: int
    max_k: int
    max_batch: int


@dataclass(frozen=True)
class MatmulSizes:
    """Matmul cases: M, N, K, batch, and a cap on batch·M·N·K unless a config pins the shape."""

    max_m: int
    max_n: int
    max_k: int
    max_batch: int
    max_macs: int


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
    decode: DecodeSizes
    #: Rows of row-wise kernels (merge states, rotary tokens).
    max_tokens: int
    quantize: QuantizeSizes
    matmul: MatmulSizes
    #: Subgroup widths the gate runs every subgroup-using kernel at, emulated (docs/instrumentation.md).
    subgroup_widths: tuple = ()
    #: The checks the gate runs on its second WebGPU implementation (None: all of them); the
    #: first runs every check, and `implementations` compares the two on the same cases.
    other_backend_checks: tuple | None = ("reference",)

    def __str__(self) -> str:
        return self.name


PROFILES = {
    "quick": Profile("quick", 24, 300.0, "smoke test: few examples, short contexts",
                     DecodeSizes(2, 70), 4, QuantizeSizes(64, 1024, 2), MatmulSizes(70, 96, 512, 2, 1 << 20)),
    "ci": Profile("ci", 200, 900.0, "per-change gate: >= 200 examples per check, contexts up to ~1k",
                  DecodeSizes(4, 520), 16, QuantizeSizes(300, 4096, 3), MatmulSizes(300, 288, 4096, 3, 1 << 23),
                  (4, 16, 32, 64, 128)),
    "nightly": Profile("nightly", 1000, 3600.0, "long contexts (>= 4096), many examples",
                       DecodeSizes(8, 8192), 64, QuantizeSizes(1024, 8192, 4), MatmulSizes(300, 1024, 4096, 3, 1 << 26),
                       (4, 8, 16, 32, 64, 128), None),
}


def get_profile(profile: "str | Profile") -> Profile:
    """The Profile named `profile` (a Profile is returned as it is); UsageError listing the valid ones."""
    if isinstance(profile, Profile):
        return profile
    if profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r}; valid profiles: {', '.join(PROFILES)}")
    return PROFILES[profile]
