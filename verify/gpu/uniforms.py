"""Pack a WGSL uniform struct from Python values, by WGSL's host-shareable layout.

The layout is the one front end's (verify.wgsl.types: AlignOf, SizeOf and member offsets of
WGSL §14.4, @align and @size included), so what is packed here is exactly what the kernel reads.
A uniform buffer is padded to a multiple of 16 bytes.
"""

from __future__ import annotations

import numpy as np

from verify.wgsl.types import Scalar, Struct, Vector, byte_size, member_offsets

_SCALAR = {"i32": "<i4", "u32": "<u4", "f32": "<f4", "f16": "<f2"}


def pack_struct(struct: Struct, values: dict) -> bytes:
    """Bytes of `struct` (e.g. `pipeline.interface.structs["Params"]`), each member from `values`.

    Members are scalars or vectors of i32, u32, f32 or f16; a vector takes a sequence of its length.
    ValueError names a member without a value or of a type that cannot be packed.
    """
    if not isinstance(struct, Struct):
        raise TypeError(f"pack_struct() takes a struct of the module's interface (verify.wgsl.types.Struct), "
                        f"got {type(struct).__name__}")
    missing = [name for name, _ in struct.members if name not in values]
    if missing:
        raise ValueError(f"no value for uniform field(s) {', '.join(missing)}")
    out = bytearray(byte_size(struct))
    for (name, type_), offset in zip(struct.members, member_offsets(struct)):
        dtype, count = _element(type_, name)
        data = np.asarray(values[name], dtype=dtype).reshape(count).tobytes()
        out[offset:offset + len(data)] = data
    out += bytes(-len(out) % 16)
    return bytes(out)


def _element(type_, name: str) -> tuple[str, int]:
    """(numpy dtype, count) of a scalar or vector member."""
    if isinstance(type_, Scalar) and type_.name in _SCALAR:
        return _SCALAR[type_.name], 1
    if isinstance(type_, Vector) and type_.element.name in _SCALAR:
        return _SCALAR[type_.element.name], type_.size
    wgsl = getattr(type_, "wgsl", type_)
    raise ValueError(f"uniform field {name}: type {wgsl} is not supported (scalars and vectors of i32, u32, "
                     "f32, f16)")
