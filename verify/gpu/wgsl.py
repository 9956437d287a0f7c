"""Read a WGSL module's interface: its resource bindings, uniform structs and entry points.

Enough of WGSL's grammar to lay out bind groups for any kernel handed to us (our own, TVM's,
a user's file) without a separate manifest. Comments are stripped first so commented-out
declarations never count.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_BINDING = re.compile(
    r"@group\(\s*(\d+)\s*\)\s*@binding\(\s*(\d+)\s*\)\s*"
    r"var\s*(?:<\s*(\w+)\s*(?:,\s*(\w+)\s*)?>)?\s*(\w+)\s*:\s*([^;]+);"
)
_BINDING_REVERSED = re.compile(r"@binding\(\s*(\d+)\s*\)\s*@group\(\s*(\d+)\s*\)")
_STRUCT = re.compile(r"struct\s+(\w+)\s*\{([^}]*)\}", re.S)
_FIELD = re.compile(r"(?:@\w+(?:\([^)]*\))?\s*)*(\w+)\s*:\s*([\w<>, ]+?)\s*(?:,|$)", re.M)
_ENTRY = re.compile(
    r"@compute\s*(?:@workgroup_size\(([^)]*)\)\s*)?(?:@\w+(?:\([^)]*\))?\s*)*fn\s+(\w+)"
    r"|@workgroup_size\(([^)]*)\)\s*@compute\s*fn\s+(\w+)"
)


@dataclass(frozen=True)
class Binding:
    group: int
    binding: int
    name: str
    address_space: str  # "storage" | "uniform"
    access: str  # "read" | "read_write" (uniforms: "read")
    type: str

    @property
    def writable(self) -> bool:
        return self.address_space == "storage" and self.access == "read_write"


@dataclass(frozen=True)
class EntryPoint:
    name: str
    workgroup_size: str  # as written, e.g. "64" or "32, 4, 2" or "WG_X, WG_Y"


@dataclass(frozen=True)
class Interface:
    bindings: tuple[Binding, ...]
    structs: dict
    entry_points: tuple[EntryPoint, ...]

    def binding(self, name: str) -> Binding:
        for b in self.bindings:
            if b.name == name:
                return b
        raise KeyError(name)

    @property
    def names(self) -> list[str]:
        return [b.name for b in self.bindings]


def strip_comments(source: str) -> str:
    return _COMMENT.sub("", source)


def sha256(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()


def parse_interface(source: str) -> Interface:
    """Bindings sorted by (group, binding), struct field lists, and compute entry points."""
    code = _BINDING_REVERSED.sub(lambda m: f"@group({m[2]}) @binding({m[1]})", strip_comments(source))
    bindings = []
    for group, index, space, access, name, type_ in _BINDING.findall(code):
        space = space or "handle"
        access = access or "read"  # WGSL's default access mode for storage is read
        bindings.append(Binding(int(group), int(index), name, space, access, " ".join(type_.split())))
    structs = {
        name: [(f, " ".join(t.split())) for f, t in _FIELD.findall(body)]
        for name, body in _STRUCT.findall(code)
    }
    entries = []
    for size_a, name_a, size_b, name_b in _ENTRY.findall(code):
        entries.append(EntryPoint(name_a or name_b, (size_a or size_b).strip()))
    return Interface(tuple(sorted(bindings, key=lambda b: (b.group, b.binding))), structs, tuple(entries))
