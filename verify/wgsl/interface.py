"""A WGSL module's interface: its resource bindings, the structs it declares, its compute entry points.

What a device needs to lay out a bind group for any module handed to it (ours, TVM's, ORT's, a
user's file) without a separate manifest, read from the module's declarations by the one WGSL
front end (verify.wgsl.parser, verify.wgsl.declarations): attributes and constants are evaluated
as WGSL defines them (`@binding(BASE + 1u)`, `@workgroup_size(WG_X, 4)`), and struct types come
with their byte layout (verify.wgsl.types, WGSL §14.4), which uniform packing reads.

Reading an interface parses declarations only (verify.wgsl.parser.parse_declarations) and is
cached by the module's text, so a pipeline cache miss costs a few milliseconds at most.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import cast

from lark import Token, Tree

from verify.wgsl.declarations import Declarations
from verify.wgsl.parser import Module, parse_declarations
from verify.wgsl.types import Struct, UnsupportedWgsl


@dataclass(frozen=True)
class Binding:
    """One resource variable: `@group(g) @binding(b) var<address_space, access> name: type`."""

    group: int
    binding: int
    name: str
    address_space: str  # "storage" | "uniform" | "handle" (textures, samplers)
    access: str  # "read" | "read_write" (uniforms: "read")
    #: The store type as written, e.g. "array<vec4<f32>>" or "DecodeParams".
    type: str
    #: The store type as a value (verify.wgsl.types), None where verify does not model it.
    store: object = None

    @property
    def writable(self) -> bool:
        return self.address_space == "storage" and self.access == "read_write"


@dataclass(frozen=True)
class EntryPoint:
    """A `@compute` function and its workgroup size (None where it cannot be evaluated)."""

    name: str
    #: The @workgroup_size arguments as written, e.g. "64" or "BDX, BDY".
    workgroup_size_text: str
    workgroup_size: tuple[int, int, int] | None = None
    #: Why the size could not be evaluated ("" when it could).
    unknown_size: str = ""


@dataclass(frozen=True)
class Interface:
    bindings: tuple[Binding, ...]
    #: Every struct the module declares, by name, with its members and byte layout.
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

    def struct_of(self, binding: Binding) -> Struct | None:
        """The struct a binding's store type is, or None (an array, a scalar, an unknown type)."""
        return binding.store if isinstance(binding.store, Struct) else self.structs.get(binding.type)


def read_interface(source: str) -> Interface:
    """Bindings sorted by (group, binding), structs by name, compute entry points in order.

    WgslSyntaxError (a UsageError naming the line) if the module's declarations do not parse.
    """
    return _read(source)


@lru_cache(maxsize=256)
def _read(source: str) -> Interface:
    return interface_of(*declared(source))


@lru_cache(maxsize=256)
def declared(source: str) -> tuple[Module, Declarations]:
    """The module's declarations (parsed once per text): what its interface and its resources
    (verify.gpu.limits) are read from."""
    module = parse_declarations(source)
    return module, Declarations(module)


def interface_of(module: Module, declarations: Declarations) -> Interface:
    """The interface of an already parsed module (full or declarations only)."""
    bindings = []
    for var in declarations.variables.values():
        numbers = _numbers(var.node.children[0], declarations)
        if "group" not in numbers or "binding" not in numbers:
            continue
        type_node = _type_node(var.node)
        bindings.append(Binding(numbers["group"], numbers["binding"], var.name, var.space, var.access,
                                " ".join(module.text(type_node).split()) if type_node is not None else "", var.type))
    structs = {}
    for name in declarations.struct_names:
        try:
            structs[name] = declarations.resolve_struct(name)
        except UnsupportedWgsl:
            continue  # a struct verify cannot lay out (e.g. of a type it does not model) is not bindable data
    entries = [_entry_point(node, module, declarations) for node in declarations.functions.values()
               if _is_compute(node)]
    bindings = _without_unnamed_aliases(bindings, module.source)
    return Interface(tuple(sorted(bindings, key=lambda b: (b.group, b.binding))), structs, tuple(entries))


def _without_unnamed_aliases(bindings: list[Binding], source: str) -> list[Binding]:
    """Bindings less those that share their (group, binding) with another and whose name the module
    never uses outside its own declaration. WGSL forbids two resource variables at one slot only
    where one entry point statically uses both (llama.cpp's soft_max.wgsl declares `dst` and, with
    INPLACE, `params` at the same binding and reads `dst` only without INPLACE), and a pipeline
    layout holds the used one; a variable named nowhere else is used by no entry point. Where
    every sharer is named the module keeps them all and the device reports the conflict."""
    import re
    from collections import Counter

    slots = Counter((b.group, b.binding) for b in bindings)
    if all(count == 1 for count in slots.values()):
        return bindings

    code = re.sub(r"//[^\n]*|/\*.*?\*/", " ", source, flags=re.S)  # a name in a comment is no use

    def named_elsewhere(b: Binding) -> bool:
        return len(re.findall(rf"(?<![\w.]){re.escape(b.name)}(?!\w)", code)) > 1

    return [b for b in bindings if slots[(b.group, b.binding)] == 1 or named_elsewhere(b)]


def _attributes(attributes: Tree) -> dict[str, Tree]:
    return {a.children[0].value: a for a in attributes.children
            if isinstance(a, Tree) and a.data == "attribute" and isinstance(a.children[0], Token)}


def _arguments(attribute: Tree) -> list:
    return list(attribute.children[1].children) if len(attribute.children) > 1 else []


def _numbers(attributes: Tree, declarations: Declarations) -> dict[str, int]:
    """@group / @binding values of a variable, evaluated (they may be constant expressions)."""
    found = {}
    for name, attribute in _attributes(attributes).items():
        if name in ("group", "binding") and _arguments(attribute):
            try:
                found[name] = int(declarations.evaluate(_arguments(attribute)[0]))
            except UnsupportedWgsl:
                continue
    return found


def _type_node(global_var: Tree):
    decl = next(c for c in global_var.children if isinstance(c, Tree) and c.data == "variable_decl")
    return next((c for c in decl.children if isinstance(c, Tree) and c.data == "type_spec"), None)


def _is_compute(function: Tree) -> bool:
    return "compute" in _attributes(function.children[0])


def _entry_point(function: Tree, module: Module, declarations: Declarations) -> EntryPoint:
    name = next(c for c in function.children if isinstance(c, Token)).value
    attribute = _attributes(function.children[0]).get("workgroup_size")
    if attribute is None:
        return EntryPoint(name, "", None, "no @workgroup_size")
    arguments = _arguments(attribute)
    text = ", ".join(module.text(a) for a in arguments)
    try:
        dims = [int(declarations.evaluate(a)) for a in arguments]
    except UnsupportedWgsl as exc:
        return EntryPoint(name, text, None, str(exc))
    return EntryPoint(name, text, cast("tuple[int, int, int]", tuple((dims + [1, 1])[:3])))  # 1-3 sizes, padded
