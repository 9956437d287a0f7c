"""WGSL types as values: scalars, vectors, matrices, atomics, arrays, structs, pointers, and
their byte layout.

Layout here is of two kinds: logical, in scalars (`.scalars`: two accesses conflict when they
touch a common scalar, which is what the sanitizer's log records), and bytes (WGSL §14.4): what a
workgroup array costs against the device's limit (verify.gpu.limits), where each member of a
uniform struct goes (verify.gpu.uniforms), and how many elements of a runtime-sized array the host
actually bound.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from lark import Tree

SCALARS = ("f32", "f16", "i32", "u32", "bool")
ABSTRACT_INT = "abstract-int"
ABSTRACT_FLOAT = "abstract-float"


class UnsupportedWgsl(ValueError):
    """WGSL verify cannot model faithfully (a type it does not lay out, an expression it cannot
    evaluate, a construct the instrumentation cannot rewrite); the message names the line."""


class WgslType(Protocol):
    """What every type here has: its WGSL spelling."""

    @property
    def wgsl(self) -> str: ...


class StoreType(WgslType, Protocol):
    """A type memory can hold (every type here but a pointer): it also has a size in scalars."""

    @property
    def scalars(self) -> int: ...


@dataclass(frozen=True)
class Scalar:
    name: str  # f32 f16 i32 u32 bool, or abstract-int / abstract-float (untyped literals)

    @property
    def wgsl(self) -> str:
        return {ABSTRACT_INT: "i32", ABSTRACT_FLOAT: "f32"}.get(self.name, self.name)

    @property
    def scalars(self) -> int:
        return 1

    @property
    def abstract(self) -> bool:
        return self.name in (ABSTRACT_INT, ABSTRACT_FLOAT)

    def concrete(self) -> Scalar:
        return Scalar(self.wgsl)


@dataclass(frozen=True)
class Vector:
    size: int
    element: Scalar

    @property
    def wgsl(self) -> str:
        return f"vec{self.size}<{self.element.wgsl}>"

    @property
    def scalars(self) -> int:
        return self.size

    @property
    def abstract(self) -> bool:
        return self.element.abstract

    def concrete(self) -> Vector:
        return Vector(self.size, self.element.concrete())


@dataclass(frozen=True)
class Matrix:
    columns: int
    rows: int
    element: Scalar

    @property
    def wgsl(self) -> str:
        return f"mat{self.columns}x{self.rows}<{self.element.wgsl}>"

    @property
    def scalars(self) -> int:
        return self.columns * self.rows

    @property
    def column(self) -> Vector:
        return Vector(self.rows, self.element)

    abstract = False

    def concrete(self) -> Matrix:
        return Matrix(self.columns, self.rows, self.element.concrete())


@dataclass(frozen=True)
class Atomic:
    element: Scalar

    @property
    def wgsl(self) -> str:
        return f"atomic<{self.element.wgsl}>"

    scalars = 1
    abstract = False

    def concrete(self):
        return self


@dataclass(frozen=True)
class Array:
    element: StoreType
    length: int | None  # None: runtime-sized

    @property
    def wgsl(self) -> str:
        if self.length is None:
            return f"array<{self.element.wgsl}>"
        return f"array<{self.element.wgsl}, {self.length}>"

    @property
    def scalars(self) -> int:
        if self.length is None:
            raise UnsupportedWgsl("a runtime-sized array has no fixed size")
        return self.length * self.element.scalars

    abstract = False

    def concrete(self):
        return self


@dataclass(frozen=True)
class Struct:
    name: str
    members: tuple  # ((name, type), ...)
    #: Per member, its @align(n) and @size(n) (None where absent), for the byte layout.
    aligns: tuple = ()
    sizes: tuple = ()

    @property
    def wgsl(self) -> str:
        return self.name

    @property
    def scalars(self) -> int:
        return sum(t.scalars for _, t in self.members)

    @property
    def fields(self) -> list[tuple[str, str]]:
        """(member name, type as WGSL text) in order, e.g. [("n", "u32"), ("scale", "f32")]."""
        return [(name, type_.wgsl) for name, type_ in self.members]

    def member(self, name: str):
        for member, type_ in self.members:
            if member == name:
                return type_
        raise KeyError(name)

    def offset(self, name: str) -> int:
        """Scalars before member `name`."""
        total = 0
        for member, type_ in self.members:
            if member == name:
                return total
            total += type_.scalars
        raise KeyError(name)

    abstract = False

    def concrete(self):
        return self


@dataclass(frozen=True)
class Pointer:
    space: str
    store: StoreType
    access: str = "read_write"

    @property
    def wgsl(self) -> str:
        return f"ptr<{self.space}, {self.store.wgsl}, {self.access}>"

    abstract = False

    def concrete(self):
        return self


@dataclass(frozen=True)
class ModuleVar:
    """A module-scope `var`: its address space ('workgroup', 'storage', 'uniform', 'private',
    'handle'), access mode and store type."""

    name: str
    space: str
    access: str
    type: StoreType | None  # None: a texture or sampler ('handle'), bound but never read as memory
    node: Tree


# -- byte layout (WGSL §14.4, memory layout of host-shareable types) -----------------------------
def _round_up(k: int, n: int) -> int:
    return (n + k - 1) // k * k


def byte_align(type_) -> int:
    if isinstance(type_, Scalar):
        return 2 if type_.name == "f16" else 4
    if isinstance(type_, Atomic):
        return 4
    if isinstance(type_, Vector):
        return (2 if type_.size == 2 else 4) * byte_align(type_.element)
    if isinstance(type_, Matrix):
        return byte_align(type_.column)
    if isinstance(type_, Array):
        return byte_align(type_.element)
    if isinstance(type_, Struct):
        aligns = type_.aligns or (None,) * len(type_.members)
        return max(a or byte_align(t) for (_, t), a in zip(type_.members, aligns))
    raise UnsupportedWgsl(f"{type_.wgsl} is not host-shareable")


def byte_size(type_) -> int:
    if isinstance(type_, Scalar):
        return 2 if type_.name == "f16" else 4
    if isinstance(type_, Atomic):
        return 4
    if isinstance(type_, Vector):
        return type_.size * byte_size(type_.element)
    if isinstance(type_, Matrix):
        return type_.columns * array_stride(type_.column)
    if isinstance(type_, Array):
        if type_.length is None:
            raise UnsupportedWgsl(f"{type_.wgsl} has no fixed size")
        return type_.length * array_stride(type_.element)
    if isinstance(type_, Struct):
        end = member_offsets(type_)[-1] + _member_size(type_, len(type_.members) - 1)
        return _round_up(byte_align(type_), end)
    raise UnsupportedWgsl(f"{type_.wgsl} is not host-shareable")


def array_stride(element) -> int:
    return _round_up(byte_align(element), byte_size(element))


def _member_size(struct: Struct, k: int) -> int:
    explicit = struct.sizes[k] if struct.sizes else None
    member = struct.members[k][1]
    if explicit is not None:
        return explicit
    return 0 if isinstance(member, Array) and member.length is None else byte_size(member)


def member_offsets(struct: Struct) -> list[int]:
    """Byte offset of each member of a host-shareable struct."""
    offsets, end = [], 0
    for k, (_, member) in enumerate(struct.members):
        align = (struct.aligns[k] if struct.aligns and struct.aligns[k] else None) or byte_align(member)
        offset = _round_up(align, end)
        offsets.append(offset)
        end = offset + _member_size(struct, k)
    return offsets
