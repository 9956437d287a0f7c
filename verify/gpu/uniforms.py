"""Pack a WGSL uniform struct from Python values, following WGSL's host-shareable layout.

Scalars are 4-byte aligned, vec2 8-byte, vec3/vec4 16-byte; the struct's size rounds up to
its largest alignment, and uniform buffers to 16 bytes (WGSL spec §14.4.1).
"""

from __future__ import annotations

import re

import numpy as np

_SCALAR = {"i32": "<i4", "u32": "<u4", "f32": "<f4"}
_VECTOR = re.compile(r"vec([234])\s*<\s*(\w+)\s*>")


def _layout(wgsl_type: str) -> tuple[str, int, int]:
    """(numpy scalar dtype, element count, alignment in bytes) of a field type."""
    if wgsl_type in _SCALAR:
        return _SCALAR[wgsl_type], 1, 4
    match = _VECTOR.fullmatch(wgsl_type.replace(" ", ""))
    if match and match[2] in _SCALAR:
        n = int(match[1])
        return _SCALAR[match[2]], n, 8 if n == 2 else 16
    raise ValueError(f"uniform field type {wgsl_type!r} is not supported (scalars and vectors of i32/u32/f32)")


def pack_struct(fields: list[tuple[str, str]], values: dict) -> bytes:
    """Bytes of a struct with `fields` [(name, wgsl_type)], taking each field from `values`."""
    missing = [name for name, _ in fields if name not in values]
    if missing:
        raise ValueError(f"no value for uniform field(s) {', '.join(missing)}")
    out = bytearray()
    largest = 4
    for name, wgsl_type in fields:
        dtype, count, align = _layout(wgsl_type)
        largest = max(largest, align)
        out += bytes(-len(out) % align)
        out += np.asarray(values[name], dtype=dtype).reshape(count).tobytes()
    out += bytes(-len(out) % max(largest, 16))
    return bytes(out)
