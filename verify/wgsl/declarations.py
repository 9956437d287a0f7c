"""The module-scope declarations of a parsed module, and the constant arithmetic array sizes need.

The rewriters need to know, for a memory access, the type of what it reads or writes (to declare
the helper function that performs it), the lengths of the arrays on its path (to check indices)
and how many scalars each element spans (to name the address in the shadow log). All of that
comes from declarations: aliases, structs, `const` and `override` values (overrides at their
default: our device passes no pipeline constants).
"""

from __future__ import annotations

from lark import Token, Tree

from verify.wgsl.parser import Module, line_of, token_text
from verify.wgsl.types import (
    ABSTRACT_FLOAT,
    ABSTRACT_INT,
    SCALARS,
    Array,
    Atomic,
    Matrix,
    ModuleVar,
    Pointer,
    Scalar,
    Struct,
    UnsupportedWgsl,
    Vector,
)

# WGSL's predeclared aliases (vec4f, mat4x4h, ...).
_SUFFIX = {"f": "f32", "h": "f16", "i": "i32", "u": "u32"}
_BINARY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
           "/": lambda a, b: _divide(a, b), "%": lambda a, b: _remainder(a, b),
           "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "&": lambda a, b: a & b,
           "|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "==": lambda a, b: a == b,
           "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
           ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _divide(a, b):
    return a / b if isinstance(a, float) or isinstance(b, float) else int(a / b)


def _remainder(a, b):
    return a - b * _divide(a, b) if not isinstance(a, float) else a % b


def literal_value(text: str):
    """The value of a WGSL numeric literal (suffixes dropped)."""
    body = text.rstrip("iufh") if not text.lower().startswith("0x") else text.rstrip("iu")
    if text.lower().startswith("0x") and ("." in text or "p" in text.lower()):
        return float.fromhex(text.rstrip("fh"))
    if text.lower().startswith("0x"):
        return int(body, 16)
    if any(c in body for c in ".eE") or text.endswith(("f", "h")):
        return float(body)
    return int(body)


def literal_type(node: Tree) -> Scalar:
    if node.data in ("true_literal", "false_literal"):
        return Scalar("bool")
    text = token_text(node.children[0])
    if node.data == "int_literal":
        return Scalar({"i": "i32", "u": "u32"}.get(text[-1], ABSTRACT_INT))
    if node.data == "float_literal":
        return Scalar({"f": "f32", "h": "f16"}.get(text[-1], ABSTRACT_FLOAT) if not text.lower().startswith("0x")
                      or "p" in text.lower() else ABSTRACT_FLOAT)
    return Scalar("bool")


class Declarations:
    """The module-scope names of a module: aliases, structs, constants, overrides, variables,
    functions, each with its type (and value, for constants)."""

    def __init__(self, module: Module):
        self.module = module
        self.aliases: dict[str, Tree] = {}
        self.structs: dict[str, Struct] = {}
        self.constants: dict[str, object] = {}  # name -> value (int | float | bool)
        self.variables: dict[str, ModuleVar] = {}
        self.functions: dict[str, Tree] = {}
        self._struct_nodes: dict[str, Tree] = {}
        self._value_nodes: dict[str, Tree] = {}
        for node in module.tree.children:
            if not isinstance(node, Tree):
                continue
            if node.data == "type_alias_decl":
                self.aliases[token_text(node.children[0])] = node.children[1]
            elif node.data == "struct_decl":
                self._struct_nodes[token_text(node.children[0])] = node
            elif node.data in ("const_decl", "override_decl"):
                self._value_nodes[_declared_name(node).value] = node
            elif node.data == "function_decl":
                self.functions[_declared_name(node).value] = node
        for node in module.tree.children:
            if isinstance(node, Tree) and node.data == "global_variable_decl":
                var = self._module_var(node)
                self.variables[var.name] = var

    # -- constants ---------------------------------------------------------------------------
    def is_constant(self, name: str) -> bool:
        """Whether `name` is a module-scope `const` or `override`."""
        return name in self._value_nodes

    def constant_type(self, name: str):
        """The type of a module-scope constant (abstract for an untyped literal initialiser)."""
        node = self._value_nodes[name]
        declared = next((c for c in node.children if isinstance(c, Tree) and c.data == "type_spec"), None)
        if declared is not None:
            return self.resolve(declared)
        value = self._constant(name)
        if isinstance(value, bool):
            return Scalar("bool")
        return Scalar(ABSTRACT_FLOAT if isinstance(value, float) else ABSTRACT_INT)

    def _constant(self, name: str):
        if name in self.constants:
            return self.constants[name]
        node = self._value_nodes[name]
        parts = [c for c in node.children if isinstance(c, Tree) and c.data not in ("attributes",)]
        value_node = next((c for c in parts if c.data != "type_spec"), None)
        if value_node is None:
            raise UnsupportedWgsl(f"line {line_of(node)}: override {name} has no default value")
        self.constants[name] = None  # cycle guard
        value = self.evaluate(value_node)
        self.constants[name] = value
        return value

    def evaluate(self, node):
        """The value of a constant expression (ints, floats, bools), or UnsupportedWgsl."""
        if isinstance(node, Token):
            raise UnsupportedWgsl(f"line {node.line}: {node.value!r} is not a constant expression")
        kind = node.data
        if kind in ("int_literal", "float_literal"):
            return literal_value(node.children[0].value)
        if kind in ("true_literal", "false_literal"):
            return kind == "true_literal"
        if kind == "paren":
            return self.evaluate(node.children[0])
        if kind == "name" and len(node.children) == 1 and node.children[0].value in self._value_nodes:
            value = self._constant(node.children[0].value)
            if value is None:
                raise UnsupportedWgsl(f"line {node.meta.line}: constant {node.children[0].value} depends on itself")
            return value
        if kind == "binary":
            left, op, right = node.children
            return _BINARY[op.children[0].value](self.evaluate(left), self.evaluate(right))
        if kind == "negate":
            return -self.evaluate(node.children[0])
        if kind == "logical_not":
            return not self.evaluate(node.children[0])
        if kind in ("logical_and", "logical_or"):
            left, right = (self.evaluate(c) for c in node.children)
            return (left and right) if kind == "logical_and" else (left or right)
        if kind == "call":
            callee = node.children[0].value
            args = [self.evaluate(a) for a in _arguments(node)]
            if callee in self.aliases:  # a conversion through an alias of a scalar (ORT's q_element_t)
                target = self.resolve(self.aliases[callee])
                callee = target.name if isinstance(target, Scalar) else callee
            if callee in ("u32", "i32") and len(args) == 1:
                return int(args[0]) & 0xFFFFFFFF if callee == "u32" else int(args[0])
            if callee in ("f32", "f16") and len(args) == 1:
                return float(args[0])
            if callee in ("min", "max") and len(args) == 2:
                return (min if callee == "min" else max)(args)
        raise UnsupportedWgsl(f"line {node.meta.line}: {self.module.text(node)!r} is not a constant expression "
                              "verify can evaluate")

    # -- types ------------------------------------------------------------------------------
    def resolve(self, node):
        """The type a type_spec (or a type written as an expression, `name` with a template list) denotes."""
        if isinstance(node, Token):
            name, template = node.value, []
        else:
            name = node.children[0].value
            template = list(node.children[1].children) if len(node.children) > 1 else []
        if name in self.aliases and not template:
            return self.resolve(self.aliases[name])
        if name in self._struct_nodes and not template:
            return self._struct(name)
        if name in SCALARS:
            return Scalar(name)
        if name.startswith("vec") and name[3:4] in "234" and name[3:4]:
            size = int(name[3])
            if len(name) == 5 and name[4] in _SUFFIX:
                return Vector(size, Scalar(_SUFFIX[name[4]]))
            if len(name) == 4 and template:
                return Vector(size, self.resolve(template[0]))
        if name.startswith("mat") and len(name) >= 6 and name[3] in "234" and name[5] in "234":
            columns, rows = int(name[3]), int(name[5])
            if len(name) == 7 and name[6] in _SUFFIX:
                return Matrix(columns, rows, Scalar(_SUFFIX[name[6]]))
            if len(name) == 6 and template:
                return Matrix(columns, rows, self.resolve(template[0]))
        if name == "atomic" and template:
            return Atomic(self.resolve(template[0]))
        if name == "array" and template:
            element = self.resolve(template[0])
            length = int(self.evaluate(template[1])) if len(template) > 1 else None
            return Array(element, length)
        if name == "ptr" and template:
            space = template[0].children[0].value
            access = template[2].children[0].value if len(template) > 2 else (
                "read" if space in ("storage", "uniform") else "read_write")
            return Pointer(space, self.resolve(template[1]), access)
        line = line_of(node)
        raise UnsupportedWgsl(f"line {line}: type {self.module.text(node)!r} is not one verify models")

    @property
    def struct_names(self) -> list[str]:
        """The names of the structs the module declares, in order."""
        return list(self._struct_nodes)

    def resolve_struct(self, name: str) -> Struct:
        """The struct declared as `name`, with its members' types and layout attributes."""
        return self._struct(name)

    def _struct(self, name: str) -> Struct:
        if name not in self.structs:
            node = self._struct_nodes[name]
            members, aligns, sizes = [], [], []
            for member in node.children[1:]:
                members.append((token_text(member.children[1]), self.resolve(member.children[2])))
                attributes = {token_text(a.children[0]): a for a in member.children[0].children
                              if a.data == "attribute"}
                aligns.append(self._attribute_value(attributes.get("align")))
                sizes.append(self._attribute_value(attributes.get("size")))
            self.structs[name] = Struct(name, tuple(members), tuple(aligns), tuple(sizes))
        return self.structs[name]

    def _attribute_value(self, attribute):
        return None if attribute is None else int(self.evaluate(attribute.children[1].children[0]))

    def _module_var(self, node: Tree) -> ModuleVar:
        decl = next(c for c in node.children if isinstance(c, Tree) and c.data == "variable_decl")
        template = next((c for c in decl.children if isinstance(c, Tree) and c.data == "template_list"), None)
        name = next(c for c in decl.children if isinstance(c, Token)).value
        type_node = next((c for c in decl.children if isinstance(c, Tree) and c.data == "type_spec"), None)
        space, access = "handle", "read"
        if template is not None:
            words = [self.module.text(c) for c in template.children]
            space = words[0]
            access = words[1] if len(words) > 1 else ("read" if space in ("storage", "uniform") else "read_write")
        try:
            type_ = self.resolve(type_node) if type_node is not None else None
        except UnsupportedWgsl:
            if space != "handle":
                raise
            type_ = None  # a texture or sampler: bound, never read as memory
        return ModuleVar(name, space, access, type_, node)


def _declared_name(node: Tree) -> Token:
    return next(c for c in node.children if isinstance(c, Token))


def _arguments(call: Tree) -> list:
    """The argument expressions of a `call` node."""
    arguments = call.children[-1]
    return list(arguments.children)


def arguments(call: Tree) -> list:
    return _arguments(call)


def callee(call: Tree) -> str:
    return token_text(call.children[0])


def template_args(call: Tree) -> list:
    """The template list of a call or name node (`bitcast<u32>(x)` -> [u32 node])."""
    for child in call.children[1:]:
        if isinstance(child, Tree) and child.data == "template_list":
            return list(child.children)
    return []
