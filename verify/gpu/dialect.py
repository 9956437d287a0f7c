"""The one place WGSL is adapted to a compiler, with each adaptation recorded, never silent.

WGSL requires `enable subgroups;` before a module uses subgroup built-ins (WGSL spec §4.1.1,
"subgroups" extension). Tint (Dawn) enforces it: without the directive it reports "cannot call
built-in function 'subgroupAdd' without extension 'subgroups'". Naga (wgpu 0.32) rejects the
directive itself ("the `subgroups` enable-extension is not yet supported") and accepts the
built-ins without it. So no one text compiles on both; the kernels here are written for Naga,
and the Dawn backend adds the directive. It is added at the start of the first line, so line
numbers in Tint's messages still match the source under test. WGSL written for Tint (ONNX
Runtime's) carries the directive, and the wgpu implementation turns it into a comment on its own line
for Naga: the same dialect gap, bridged the other way, never a divergence of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verify.wgsl.parser import blank_comments

_SUBGROUP_USE = re.compile(
    r"\bsubgroup(?:Add|ExclusiveAdd|InclusiveAdd|Mul|ExclusiveMul|InclusiveMul|And|Or|Xor|Min|Max|"
    r"All|Any|Ballot|Elect|Broadcast|BroadcastFirst|Shuffle|ShuffleXor|ShuffleUp|ShuffleDown)\s*\("
    r"|@builtin\(\s*subgroup_(?:size|invocation_id)\s*\)"
    r"|\bquad(?:Broadcast|SwapX|SwapY|SwapDiagonal)\s*\("
)
_ENABLES_SUBGROUPS = re.compile(r"\benable\b[^;]*\bsubgroups\b[^;]*;")
#: The directive as a statement of its own (`enable f16, subgroups;` is left to Naga to refuse).
_ENABLE_SUBGROUPS_ALONE = re.compile(r"^[ \t]*enable[ \t]+subgroups[ \t]*;", re.M)


@dataclass(frozen=True)
class Adaptation:
    """One change made to the WGSL under test so that a compiler accepts it, and why."""

    change: str
    reason: str


ENABLE_SUBGROUPS = Adaptation(
    "added `enable subgroups;`",
    "the module uses subgroup built-ins; WGSL (and Tint) require the directive, Naga rejects it",
)


def for_tint(wgsl: str) -> tuple[str, tuple[Adaptation, ...]]:
    """(the text Tint compiles, the adaptations made): `enable subgroups;` when the module uses
    subgroup built-ins without it."""
    code = blank_comments(wgsl)
    if _SUBGROUP_USE.search(code) and not _ENABLES_SUBGROUPS.search(code):
        return "enable subgroups;" + wgsl, (ENABLE_SUBGROUPS,)
    return wgsl, ()


DROP_ENABLE_SUBGROUPS = Adaptation(
    "`enable subgroups;` made a comment",
    "Naga (wgpu 0.32) rejects the directive WGSL requires and provides subgroup built-ins without it",
)


def for_naga(wgsl: str) -> tuple[str, tuple[Adaptation, ...]]:
    """(the text Naga compiles, the adaptations made): a line `enable subgroups;` becomes a
    comment (same line, so line numbers in Naga's messages match the source under test)."""
    adapted, count = _ENABLE_SUBGROUPS_ALONE.subn(lambda m: "// " + m[0].strip() + " (for Tint; Naga: built in)", wgsl)
    return (adapted, (DROP_ENABLE_SUBGROUPS,)) if count else (wgsl, ())
