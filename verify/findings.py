"""Documented findings as data: each declared once, beside the kernels or implementations it
concerns, with the layer to blame and the conditions it shows under.

A finding sent to the wrong project is worse than none, so each says which layer is at fault:

- `kernel`: the kernel's source (TVM's generator, ONNX Runtime's program, verify's own design);
- `implementation`: a WebGPU implementation (wgpu-native and its Naga, Dawn and its Tint), where
  the kernel is valid WGSL that the implementation runs otherwise than the specification says;
- `driver`: the driver under the implementation (Mesa's lavapipe);
- `specification`: WGSL leaves the behaviour open, and kernels differ in what they assume.

A finding of the `implementation` or `driver` layer names the WGSL semantics probes
(verify.gpu.semantics) whose deviation it rests on: it shows only where one of them deviates, so
a failure on an adapter where they conform is news, never the documented finding. Kernels attach
findings to checks through `Kernel.known_finding` (a `KnownFinding` with the finding's `finding_id`
and its signature); results records carry the id, and the report, the reproductions (`verify
findings export`) and docs/findings.md (tested against this data) read the same declaration.

Findings are registered under the entry-point group `verify.findings` (a module attribute holding
a tuple of `Finding`), verify's own like any package's.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata

from verify.errors import UsageError

#: Entry-point group findings are registered under.
ENTRY_POINT_GROUP = "verify.findings"


class Layer(str, enum.Enum):
    """Whose bug a finding is."""

    KERNEL = "kernel"
    IMPLEMENTATION = "implementation"
    DRIVER = "driver"
    SPECIFICATION = "specification"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Finding:
    """One documented finding.

    `id` names it everywhere (records' `finding_id`, the reproduction folder, the report's link);
    `title` is its headline; `section` the section of docs/findings.md that tells it in full;
    `layer` whose bug it is and `project` where to report it (the issue tracker's project), with
    `where` the upstream file and line; `deviation` the semantics probes of which at least one
    deviates wherever it shows (an implementation's or driver's finding); `note` what the
    kernel's authors can do meanwhile (an implementation's finding that a kernel meets: the kernel
    is valid WGSL, and the note is a robustness remark, not a bug report).
    """

    id: str
    title: str
    section: str
    layer: Layer
    project: str
    where: str = ""
    deviation: tuple[str, ...] = ()
    note: str = ""

    def __post_init__(self):
        if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", self.id):
            raise UsageError(f"finding id {self.id!r}: lowercase words joined by '-' (it names a folder)")
        if not re.fullmatch(r"§\d+(?:\.\d+)?", self.section):
            raise UsageError(f"finding {self.id}: section {self.section!r} is not of the form §N or §N.M")

    @property
    def blame(self) -> str:
        """Whose bug, in words: "implementation (wgpu-native)"."""
        return f"{self.layer} ({self.project})"

    def shows_with(self, semantics: dict | None) -> bool:
        """Whether the finding can show on an adapter whose probes answered `semantics` ({probe:
        verdict}): always for a kernel's finding; for an implementation's or driver's, only where
        one of its probes deviates (and, where the record has no probe answers, as before)."""
        if not self.deviation or not semantics:
            return True
        return any(semantics.get(probe) == "deviates" for probe in self.deviation)


def all_findings() -> dict[str, Finding]:
    """Every registered finding by id (verify's own first)."""
    return dict(_registered())


def get_finding(finding_id: str) -> Finding:
    found = _registered()
    if finding_id not in found:
        raise UsageError(f"no documented finding {finding_id!r}; known: {', '.join(sorted(found))}")
    return found[finding_id]


@lru_cache(maxsize=1)
def _registered() -> dict[str, Finding]:
    from verify._version import DISTRIBUTION

    points = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP),
                    key=lambda ep: getattr(ep.dist, "name", "") != DISTRIBUTION)
    found: dict[str, Finding] = {}
    for ep in points:
        try:
            declared = ep.load()
        except Exception as exc:  # a broken third-party package must not take the toolkit down
            raise UsageError(f"findings {ep.name!r} ({ep.value}) cannot be loaded: "
                             f"{type(exc).__name__}: {exc}") from None
        for finding in declared:
            if not isinstance(finding, Finding):
                raise UsageError(f"findings {ep.name!r} ({ep.value}) holds {type(finding).__name__}, not a Finding")
            if finding.id in found and found[finding.id] != finding:
                raise UsageError(f"finding id {finding.id!r} is declared twice ({ep.value})")
            found[finding.id] = finding
    return found
