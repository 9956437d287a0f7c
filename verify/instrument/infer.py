"""The type of a WGSL expression, from the declarations in scope where it stands.

Enough of WGSL's typing rules (WGSL §6, §8, §17) for what the rewriters declare: the value a
memory access reads or writes, the operand of a compound assignment, the argument of a subgroup
built-in. References are typed by their store type; untyped literals stay abstract until a `let`
or `var` makes them concrete (i32 / f32), as in WGSL.
"""

from __future__ import annotations

from lark import Token, Tree

from verify.wgsl.declarations import (
    Declarations,
    arguments,
    callee,
    literal_type,
    template_args,
)
from verify.wgsl.parser import token_text
from verify.wgsl.types import (
    ABSTRACT_FLOAT,
    ABSTRACT_INT,
    Array,
    Atomic,
    Matrix,
    Pointer,
    Scalar,
    Struct,
    UnsupportedWgsl,
    Vector,
)

BOOL = Scalar("bool")
U32 = Scalar("u32")
I32 = Scalar("i32")
F32 = Scalar("f32")

#: Built-ins whose result has the type of their (first concrete) argument.
_SAME_AS_ARGUMENT = frozenset("""
abs acos acosh asin asinh atan atan2 atanh ceil clamp cos cosh degrees exp exp2 floor fma fract inverseSqrt
log log2 max min mix normalize pow radians reflect refract round saturate sign sin sinh smoothstep sqrt step
tan tanh trunc countLeadingZeros countOneBits countTrailingZeros extractBits insertBits firstLeadingBit
firstTrailingBit reverseBits quantizeToF16 select dpdx dpdy fwidth
subgroupAdd subgroupMul subgroupMax subgroupMin subgroupAnd subgroupOr subgroupXor subgroupExclusiveAdd
subgroupInclusiveAdd subgroupExclusiveMul subgroupInclusiveMul subgroupShuffle subgroupShuffleXor
subgroupShuffleUp subgroupShuffleDown subgroupBroadcast subgroupBroadcastFirst quadBroadcast quadSwapX
quadSwapY quadSwapDiagonal
""".split())
_SCALAR_OF_ARGUMENT = frozenset("dot length distance determinant".split())
_FIXED = {
    "all": BOOL, "any": BOOL, "arrayLength": U32, "dot4I8Packed": I32, "dot4U8Packed": U32,
    "pack4x8snorm": U32, "pack4x8unorm": U32, "pack2x16snorm": U32, "pack2x16unorm": U32, "pack2x16float": U32,
    "pack4xI8": U32, "pack4xU8": U32, "pack4xI8Clamp": U32, "pack4xU8Clamp": U32,
    "unpack4x8snorm": Vector(4, F32), "unpack4x8unorm": Vector(4, F32), "unpack2x16snorm": Vector(2, F32),
    "unpack2x16unorm": Vector(2, F32), "unpack2x16float": Vector(2, F32), "unpack4xI8": Vector(4, I32),
    "unpack4xU8": Vector(4, U32), "subgroupBallot": Vector(4, U32), "subgroupElect": BOOL,
    "subgroupAll": BOOL, "subgroupAny": BOOL,
}
_ATOMICS = frozenset("atomicLoad atomicAdd atomicSub atomicMax atomicMin atomicAnd atomicOr atomicXor "
                     "atomicExchange".split())
_COMPARISONS = frozenset(("==", "!=", "<", "<=", ">", ">="))
#: atomicCompareExchangeWeak's result, __atomic_compare_exchange_result<T>, has no name a module can
#: spell; the instrumentation types it as a struct of the same members that it declares itself
#: (verify.instrument.sanitize declares it where its helper returns one), named with this prefix.
COMPARE_EXCHANGE_PREFIX = "_san_compare_exchange_"


def compare_exchange_result(element) -> Struct:
    """The struct standing for atomicCompareExchangeWeak's result on an atomic of `element`:
    members old_value (the element) and exchanged (bool), as the built-in's."""
    return Struct(f"{COMPARE_EXCHANGE_PREFIX}{element.wgsl}", (("old_value", element), ("exchanged", BOOL)))


class Scope:
    """Names visible at a point of a function: parameters, lets, vars, consts, and the module's."""

    def __init__(self, declarations: Declarations, parent: Scope | None = None):
        self.declarations = declarations
        self.parent = parent
        self.names: dict[str, object] = {}

    def child(self) -> Scope:
        return Scope(self.declarations, self)

    def declare(self, name: str, type_) -> None:
        self.names[name] = type_

    def local(self, name: str):
        """The type of a function-scope name, or None where it is not one (a module-scope name)."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def lookup(self, name: str, line: int):
        local = self.local(name)
        if local is not None:
            return local
        decls = self.declarations
        if name in decls.variables:
            return decls.variables[name].type
        if decls.is_constant(name):
            return decls.constant_type(name)
        raise UnsupportedWgsl(f"line {line}: the type of {name!r} is unknown here")


def type_of(node, scope: Scope):
    """The type of expression `node` (store type for references)."""
    if isinstance(node, Token):
        raise UnsupportedWgsl(f"line {node.line}: unexpected token {node.value!r}")
    kind = node.data
    if kind in ("int_literal", "float_literal", "true_literal", "false_literal"):
        return literal_type(node)
    if kind == "paren":
        return type_of(node.children[0], scope)
    if kind == "name":
        if len(node.children) > 1:  # a type written as an expression
            return scope.declarations.resolve(node)
        return scope.lookup(node.children[0].value, node.meta.line)
    if kind == "access":
        current = type_of(node.children[0], scope)
        for postfix in node.children[1:]:
            current = component_type(current, postfix, scope.declarations.module)
        return current
    if kind in ("negate", "bit_not", "logical_not"):
        return type_of(node.children[0], scope)
    if kind == "address_of":
        inner = type_of(node.children[0], scope)
        return Pointer("function", inner)
    if kind == "deref":
        pointer = type_of(node.children[0], scope)
        return pointer.store if isinstance(pointer, Pointer) else pointer
    if kind in ("logical_and", "logical_or"):
        return BOOL
    if kind == "binary":
        return _binary_type(node, scope)
    if kind == "call":
        return _call_type(node, scope)
    raise UnsupportedWgsl(f"line {node.meta.line}: cannot type {scope.declarations.module.text(node)!r}")


def component_type(current, postfix: Tree, module):
    """The type one postfix (`[i]` or `.name`) selects from `current`."""
    if isinstance(current, Pointer):  # p.x and p[i] on a pointer select through it
        current = current.store
    if postfix.data == "index":
        if isinstance(current, Array):
            return current.element
        if isinstance(current, Vector):
            return current.element
        if isinstance(current, Matrix):
            return current.column
    else:
        member = token_text(postfix.children[0])
        if isinstance(current, Struct):
            return current.member(member)
        if isinstance(current, Vector) and is_swizzle(member):
            return current.element if len(member) == 1 else Vector(len(member), current.element)
    raise UnsupportedWgsl(f"line {postfix.meta.line}: {module.text(postfix)!r} does not apply to {current.wgsl}")


def is_swizzle(name: str) -> bool:
    return 1 <= len(name) <= 4 and (set(name) <= set("xyzw") or set(name) <= set("rgba"))


def swizzle_components(name: str) -> list[int]:
    order = "xyzw" if set(name) <= set("xyzw") else "rgba"
    return [order.index(c) for c in name]


def concrete(type_):
    return type_.concrete()


def _element(type_):
    if isinstance(type_, Scalar):
        return type_
    if isinstance(type_, (Vector, Matrix)):
        return type_.element
    return None


def _unify(types: list):
    """The first concrete type among `types` (WGSL converts abstract operands to it), shaped as
    the widest (a vector wins over a scalar)."""
    shaped = next((t for t in types if isinstance(t, (Vector, Matrix))), types[0])
    concrete_element = next((_element(t) for t in types if _element(t) is not None and not _element(t).abstract), None)
    if concrete_element is None:
        return shaped
    if isinstance(shaped, Vector):
        return Vector(shaped.size, concrete_element)
    if isinstance(shaped, Scalar):
        return concrete_element
    return shaped


def _binary_type(node: Tree, scope: Scope):
    left, op, right = node.children
    operator = token_text(op.children[0])
    a, b = type_of(left, scope), type_of(right, scope)
    if operator in _COMPARISONS:
        size = a.size if isinstance(a, Vector) else b.size if isinstance(b, Vector) else None
        return BOOL if size is None else Vector(size, BOOL)
    if operator in ("<<", ">>"):
        return a if not a.abstract or not isinstance(a, Scalar) else a
    if operator == "*" and isinstance(a, Matrix) and isinstance(b, Vector):
        return Vector(a.rows, a.element)
    if operator == "*" and isinstance(a, Vector) and isinstance(b, Matrix):
        return Vector(b.columns, b.element)
    if operator == "*" and isinstance(a, Matrix) and isinstance(b, Matrix):
        return Matrix(b.columns, a.rows, a.element)
    return _unify([a, b])


def _call_type(node: Tree, scope: Scope):
    decls = scope.declarations
    name = callee(node)
    args = arguments(node)
    template = template_args(node)
    if name in decls.functions:
        function = decls.functions[name]
        returns = next((c for c in function.children if isinstance(c, Tree) and c.data == "return_type"), None)
        if returns is None:
            raise UnsupportedWgsl(f"line {node.meta.line}: {name}() returns nothing")
        return decls.resolve(returns.children[-1])
    if name == "bitcast":
        return decls.resolve(template[0])
    if name in _FIXED:
        return _FIXED[name]
    if name in _ATOMICS:
        pointer = type_of(args[0], scope)
        store = pointer.store if isinstance(pointer, Pointer) else pointer
        return store.element if isinstance(store, Atomic) else store
    if name == "workgroupUniformLoad":
        return type_of(args[0], scope).store
    if name == "atomicCompareExchangeWeak":
        pointer = type_of(args[0], scope)
        store = pointer.store if isinstance(pointer, Pointer) else pointer
        return compare_exchange_result(store.element if isinstance(store, Atomic) else store)
    arg_types = [type_of(a, scope) for a in args]
    if name in _SAME_AS_ARGUMENT:
        if name == "select":
            return _unify(arg_types[:2])
        if name in ("subgroupShuffle", "subgroupShuffleXor", "subgroupShuffleUp", "subgroupShuffleDown",
                    "subgroupBroadcast", "quadBroadcast"):
            return arg_types[0]
        return _unify(arg_types)
    if name in _SCALAR_OF_ARGUMENT:
        return _element(arg_types[0])
    if name == "cross":
        return arg_types[0]
    if name == "transpose":
        m = arg_types[0]
        return Matrix(m.rows, m.columns, m.element)
    # Constructors and conversions: a type, possibly with its template inferred from the arguments.
    if name == "array" and not template:
        return Array(concrete(arg_types[0]), len(args))
    if name.startswith("vec") and len(name) == 4 and not template:
        element = _unify(arg_types) if arg_types else Scalar(ABSTRACT_INT)
        element = _element(element) or element
        return Vector(int(name[3]), element)
    if name.startswith("mat") and len(name) == 6 and not template:
        element = _element(_unify(arg_types)) if arg_types else Scalar(ABSTRACT_FLOAT)
        if element.abstract:
            element = F32
        return Matrix(int(name[3]), int(name[5]), element)
    try:
        return decls.resolve(Tree("type_spec", node.children[:-1]))
    except (UnsupportedWgsl, AttributeError):
        raise UnsupportedWgsl(f"line {node.meta.line}: the result type of {name}() is unknown to the "
                              "instrumentation") from None


def abstract_default(type_):
    """The concrete type a `let`/`var` without a type gives an abstract value (i32, f32)."""
    if isinstance(type_, Scalar) and type_.name == ABSTRACT_INT:
        return I32
    if isinstance(type_, Scalar) and type_.name == ABSTRACT_FLOAT:
        return F32
    return type_.concrete()
