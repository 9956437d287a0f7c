"""The WGSL of the helper functions `sanitize` calls in place of memory accesses.

One helper per access shape (variable, path, kind), shared by every site of that shape (the site
id is its first argument): it checks each index against its bound, logs the access (with the
bits of a written value, so unordered writes of one value can be told from a race that loses
data) and performs it only in bounds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from verify.instrument.infer import abstract_default, type_of
from verify.instrument.memory import Index, Member, Reference
from verify.wgsl.types import (
    Array,
    Scalar,
    Struct,
    Vector,
    array_stride,
    member_offsets,
)

if TYPE_CHECKING:
    from verify.instrument.sanitize import Site

PREFIX = "_san_"
LENGTHS_NAME = "_san_lengths"


def operand_type(operator: str, operand, target, scope):
    """The type of `x` in `r op= x`: its own, unless abstract (then r's element, or u32 for a shift)."""
    if operator in ("<<=", ">>="):
        declared = type_of(operand, scope)
        return Scalar("u32") if declared.abstract else declared
    declared = type_of(operand, scope)
    if not declared.abstract:
        return declared
    element = target.element if isinstance(target, Vector) else target
    return Vector(declared.size, element) if isinstance(declared, Vector) else element


def call_text(helper: str, site: Site, args: list[str]) -> str:
    return f"{helper}({', '.join([f'{site.id}u', *args])})"


_HASH = ("", " * 0x9E3779B1u", " * 0x85EBCA77u", " * 0xC2B2AE3Du")


def bits_function(type_) -> str | None:
    """A helper `{name}(v) -> u32` giving the bits of a scalar (a hash of them for a vector), or None.
    f16 bits come from pack2x16float (exact for every f16; Naga has no f16-to-u32 bitcast)."""
    if isinstance(type_, Scalar):
        bits = {"f32": "bitcast<u32>(v)", "i32": "bitcast<u32>(v)", "u32": "v", "bool": "select(0u, 1u, v)",
                "f16": "pack2x16float(vec2<f32>(f32(v), 0.0))"}[type_.name]
        return function_text("{name}", [f"v: {type_.wgsl}"], "u32", [f"return {bits};"])
    if not isinstance(type_, Vector):
        return None
    element, size = type_.element.name, type_.size
    if element == "f16":
        pairs = [f"v.{'xyzw'[k]}{'xyzw'[k + 1] if k + 1 < size else ''}" for k in range(0, size, 2)]
        words = [f"pack2x16float(vec2<f32>({p}{', 0.0' if len(p) == 3 else ''}))" for p in pairs]
    elif element == "bool":
        words = [f"select(0u, 1u, v.{'xyzw'[k]})" for k in range(size)]
    else:
        words = [f"bitcast<u32>(v.{'xyzw'[k]})" for k in range(size)]
    bits = " ^ ".join(f"({w}{_HASH[k]})" for k, w in enumerate(words))
    return function_text("{name}", [f"v: {type_.wgsl}"], "u32", [f"return {bits};"])


def wgsl_type(type_) -> str:
    return abstract_default(type_).wgsl


def function_text(name: str, params: list[str], returns, body: list[str]) -> str:
    arrow = f" -> {returns}" if returns else ""
    lines = "\n".join(f"  {line}" for line in body)
    return f"fn {name}({', '.join(params)}){arrow} {{\n{lines}\n}}\n"


class Helper:
    """The WGSL of one site's helper: bounds check, log call and the access itself."""

    def __init__(self, ref: Reference, instrumenter):
        self.ref = ref
        self.lengths = []
        prefix, type_, offset = ref.variable.name, ref.variable.type, 0
        for step in ref.steps:
            if isinstance(step, Index):
                if step.length is None:
                    assert isinstance(type_, Array)  # only a runtime-sized array's index has no length
                    stride = array_stride(type_.element)
                    self.lengths.append(instrumenter.runtime_length(prefix, ref.variable.name, offset, stride))
                else:
                    self.lengths.append(f"{step.length}u")
                prefix += f"[{self._clamped(len(self.lengths) - 1)}]"
                type_ = type_.element if isinstance(type_, Array) else None
            else:
                if isinstance(type_, Struct):
                    offset += member_offsets(type_)[[n for n, _ in type_.members].index(step.name)]
                    type_ = type_.member(step.name)
                prefix += f".{step.name}"

    def index_params(self) -> list[str]:
        return [f"i{k}: u32" for k in range(len(self.lengths))]

    def _clamped(self, k: int) -> str:
        return f"min(i{k}, {self.lengths[k]} - 1u)"

    def access(self) -> str:
        text, k = self.ref.variable.name, 0
        for step in self.ref.steps:
            if isinstance(step, Index):
                text += f"[{self._clamped(k)}]"
                k += 1
            else:
                text += f".{step.name}"
        return text

    def check(self) -> list[str]:
        """`bad` (0, or the 1-based first dimension out of bounds), `index` and `length` there."""
        bad, index, length = "0u", "0u", "0u"
        for k in reversed(range(len(self.lengths))):
            out = f"i{k} >= {self.lengths[k]}"
            bad = f"select({bad}, {k + 1}u, {out})"
            index = f"select({index}, i{k}, bad == {k + 1}u)"
            length = f"select({length}, {self.lengths[k]}, bad == {k + 1}u)"
        return [f"let bad = {bad};", f"let index = {index};", f"let length = {length};"]

    def offset(self) -> str:
        terms, k = [], 0
        static = self.ref.span[0]
        for step in self.ref.steps:
            if isinstance(step, Index):
                terms.append(f"i{k} * {step.stride}u")
                k += 1
            elif isinstance(step, Member):
                static += step.offset
        return " + ".join(terms + [f"{static}u"])

    def log(self, site: Site, which: str = "site", value: str = "0u") -> str:
        """The log call of `site` (`which`: the WGSL naming its id in the helper; `value`: the
        bits of the value written)."""
        epoch = f"{PREFIX}{'workgroup' if site.space == 'workgroup' else 'storage'}_epoch"
        call = f"{PREFIX}note({which}, {self.offset()}, bad, index, length, {epoch}, {value});"
        return call if site.logged else f"if (bad != 0u) {{ {call} }}"

    def select(self, value: str) -> str:
        """`value` in bounds, zero out of bounds (scalars and vectors; see read_body for the rest)."""
        return f"select({wgsl_type(self.ref.type)}(), {value}, bad == 0u)"

    def read_body(self) -> list[str]:
        """Return the value read, or zero out of bounds. select() keeps a read of uniform memory
        at a uniform index uniform; composites (arrays, structs) take a branch instead."""
        if isinstance(self.ref.type, (Scalar, Vector)):
            return [f"return {self.select(self.access())};"]
        return [f"var value: {wgsl_type(self.ref.type)};", f"if (bad == 0u) {{ value = {self.access()}; }}",
                "return value;"]
