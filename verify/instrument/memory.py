"""Memory references in WGSL: which expressions name workgroup or storage memory, and where.

A reference is a module-scope variable followed by a path of steps: array, vector or matrix
indices (dynamic, checked against a length), struct members and vector components (static). The
path fixes the type of what is accessed, the scalars it spans, and its position in the
variable's logical layout (scalars in declaration order), which is what the shadow log records.
"""

from __future__ import annotations

from dataclasses import dataclass

from lark import Token, Tree

from verify.instrument.infer import is_swizzle, swizzle_components
from verify.wgsl.parser import token_text
from verify.wgsl.types import (
    Array,
    Matrix,
    ModuleVar,
    StoreType,
    Struct,
    UnsupportedWgsl,
    Vector,
)

#: Address spaces the sanitizer follows; uniform and private memory cannot race (uniform is
#: read-only, private belongs to one invocation).
TRACKED_SPACES = ("workgroup", "storage")


@dataclass(frozen=True)
class Index:
    """`[i]` into an array, vector or matrix: `argument` is the index expression (a node, or WGSL
    text for an index captured earlier), `length` the bound (an int, or None: arrayLength)."""

    argument: Tree | str
    length: int | None
    stride: int  # scalars per element


@dataclass(frozen=True)
class Member:
    """`.name` of a struct, or one component of a vector (`.x`): a static offset."""

    name: str
    offset: int


@dataclass(frozen=True)
class Swizzle:
    """`.xz` of a vector (read only): the components it reads."""

    name: str
    components: tuple[int, ...]


@dataclass(frozen=True)
class Reference:
    variable: ModuleVar
    steps: tuple
    type: StoreType  # the store type the reference names

    @property
    def indices(self) -> list[Index]:
        return [s for s in self.steps if isinstance(s, Index)]

    @property
    def span(self) -> tuple[int, int]:
        """(first scalar relative to the static part, scalars touched) of the final step."""
        last = self.steps[-1] if self.steps else None
        if isinstance(last, Swizzle):
            return min(last.components), max(last.components) - min(last.components) + 1
        return 0, _scalars(self.type)

    def extend(self, postfix: Tree, module) -> Reference:
        """This reference with one more postfix (`[i]` or `.name`)."""
        current = self.type
        if isinstance(self.steps[-1:][0] if self.steps else None, Swizzle):
            raise UnsupportedWgsl(f"line {postfix.meta.line}: a swizzle must end a memory reference")
        if postfix.data == "index":
            argument = postfix.children[0]
            if isinstance(current, Array):
                return self._step(Index(argument, current.length, _scalars(current.element)), current.element)
            if isinstance(current, Vector):
                return self._step(Index(argument, current.size, 1), current.element)
            if isinstance(current, Matrix):
                return self._step(Index(argument, current.columns, current.rows), current.column)
        else:
            name = token_text(postfix.children[0])
            if isinstance(current, Struct):
                return self._step(Member(name, current.offset(name)), current.member(name))
            if isinstance(current, Vector) and is_swizzle(name):
                components = tuple(swizzle_components(name))
                if len(components) == 1:
                    return self._step(Member(name, components[0]), current.element)
                return self._step(Swizzle(name, components), Vector(len(components), current.element))
        raise UnsupportedWgsl(f"line {postfix.meta.line}: {module.text(postfix)!r} does not apply to "
                              f"{current.wgsl} in a memory reference")

    def _step(self, step, type_) -> Reference:
        return Reference(self.variable, self.steps + (step,), type_)


def _scalars(type_) -> int:
    return type_.scalars


def reference_root(node, scope, variables: dict, aliases: dict) -> Reference | None:
    """The tracked reference `node` denotes (a variable, an access chain on one, or the target of
    a pointer alias), or None for anything else (locals, values, untracked variables)."""
    if isinstance(node, Token):
        return None
    kind = node.data
    if kind == "name" and len(node.children) == 1:
        name = node.children[0].value
        if scope.local(name) is not None:
            return None
        var = variables.get(name)
        if var is None or var.space not in TRACKED_SPACES:
            return None
        return Reference(var, (), var.type)
    if kind == "paren":
        return reference_root(node.children[0], scope, variables, aliases)
    if kind == "deref":
        inner = node.children[0]
        if inner.data == "name" and len(inner.children) == 1 and inner.children[0].value in aliases:
            return aliases[inner.children[0].value]
        return None
    if kind == "access":
        base_node = node.children[0]
        base = reference_root(base_node, scope, variables, aliases)
        if base is None and base_node.data == "name" and len(base_node.children) == 1 \
                and base_node.children[0].value in aliases:
            base = aliases[base_node.children[0].value]  # p.x / p[i] select through a pointer
        if base is None:
            return None
        for postfix in node.children[1:]:
            base = base.extend(postfix, scope.declarations.module)
        return base
    return None


def alias_target(node, scope, variables: dict, aliases: dict) -> Reference | None:
    """For `&reference` or a pointer alias name: the tracked reference it points at, else None."""
    if isinstance(node, Tree) and node.data == "address_of":
        return reference_root(node.children[0], scope, variables, aliases)
    if isinstance(node, Tree) and node.data == "name" and len(node.children) == 1 \
            and token_text(node.children[0]) in aliases:
        return aliases[token_text(node.children[0])]
    return None
