"""What a WGSL module asks of a device, computed from its text, against the limits it may use.

A driver does not always enforce the limits a device was opened with (lavapipe compiles a module
declaring 64 KiB of workgroup memory on a device opened with 32 KiB), and a browser that grants
only WebGPU's default limits refuses a kernel that needs more. So verify computes the resources
a module declares — workgroup memory by WGSL's layout rules (spec §14.4: AlignOf/SizeOf),
invocations and size per workgroup, storage and uniform buffers — and holds the kernel to the
limits the toolkit opens devices with (a FAIL naming the limit), and reports which of WebGPU's
*default* limits it exceeds (a note: the kernel runs here, but not everywhere).

Constant expressions (`const N: u32 = HEAD_DIM / 4u;`, array sizes, `@workgroup_size(BDX, BDY)`)
are evaluated with a small integer evaluator; a size that depends on something it cannot
evaluate (an `override`) is reported as unknown rather than guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from verify.gpu.wgsl import parse_interface, strip_comments

#: WebGPU's default limits (WebGPU spec §3.6.2 "Limits"), the ones a compute kernel meets.
WEBGPU_DEFAULTS = {
    "max-compute-workgroup-storage-size": 16384,
    "max-compute-invocations-per-workgroup": 256,
    "max-compute-workgroup-size-x": 256,
    "max-compute-workgroup-size-y": 256,
    "max-compute-workgroup-size-z": 64,
    "max-storage-buffers-per-shader-stage": 8,
    "max-uniform-buffers-per-shader-stage": 12,
}

_SCALARS = {"f32": (4, 4), "i32": (4, 4), "u32": (4, 4), "f16": (2, 2), "bool": (4, 4)}


class UnknownSize(Exception):
    """A size or constant the evaluator cannot compute (e.g. it depends on an override)."""


@dataclass(frozen=True)
class Resources:
    """What one entry point of a module asks of a device."""

    workgroup_storage: int | None
    #: Bytes per workgroup array, for messages.
    workgroup_arrays: dict = field(default_factory=dict)
    workgroup_size: tuple | None = None
    storage_buffers: int = 0
    uniform_buffers: int = 0
    unknown: tuple = ()

    @property
    def invocations(self) -> int | None:
        if self.workgroup_size is None:
            return None
        x, y, z = self.workgroup_size
        return x * y * z

    def demands(self) -> dict:
        """{limit name: what the module needs} for every limit it could be computed for."""
        found = {"max-storage-buffers-per-shader-stage": self.storage_buffers,
                 "max-uniform-buffers-per-shader-stage": self.uniform_buffers}
        if self.workgroup_storage is not None:
            found["max-compute-workgroup-storage-size"] = self.workgroup_storage
        if self.workgroup_size is not None:
            x, y, z = self.workgroup_size
            found.update({"max-compute-invocations-per-workgroup": x * y * z, "max-compute-workgroup-size-x": x,
                          "max-compute-workgroup-size-y": y, "max-compute-workgroup-size-z": z})
        return found


def resources(wgsl: str) -> Resources:
    """The resources `wgsl` (one module) declares."""
    code = strip_comments(wgsl)
    scope = _Scope(code)
    arrays, unknown = {}, []
    for name, type_text in re.findall(r"var\s*<\s*workgroup\s*>\s*(\w+)\s*:\s*([^;]+);", code):
        try:
            arrays[name] = scope.size_of(type_text)
        except UnknownSize as exc:
            unknown.append(f"workgroup array {name}: {exc}")
    total = None if unknown else sum(arrays.values())
    interface = parse_interface(wgsl)
    size = None
    if interface.entry_points:
        try:
            dims = [scope.evaluate(part) for part in _split_args(interface.entry_points[0].workgroup_size)] or [1]
            size = tuple((dims + [1, 1])[:3])
        except UnknownSize as exc:
            unknown.append(f"@workgroup_size: {exc}")
    storage = sum(1 for b in interface.bindings if b.address_space == "storage")
    uniform = sum(1 for b in interface.bindings if b.address_space == "uniform")
    return Resources(total, arrays, size, storage, uniform, tuple(unknown))


@dataclass(frozen=True)
class LimitReport:
    """A module's demands against the limits verify holds it to and WebGPU's defaults."""

    over_limits: tuple  # messages: the kernel must not pass
    over_defaults: tuple  # notes: runs here, not on a browser that grants only the defaults


def check_limits(modules: list[str], granted: dict) -> LimitReport:
    """Every module of a kernel against `granted` (the limits its device was opened with,
    WebGPU's defaults for the rest) and against WebGPU's defaults."""
    held = dict(WEBGPU_DEFAULTS, **granted)
    over, notes = [], []
    for wgsl in modules:
        found = resources(wgsl)
        for limit, need in found.demands().items():
            allowed = held.get(limit)
            if allowed is not None and need > allowed:
                over.append(f"needs {need} for {limit} ({_detail(limit, found)}); the device verify opens grants "
                            f"{allowed}")
            elif need > WEBGPU_DEFAULTS.get(limit, need):
                notes.append(f"exceeds WebGPU's default {limit} ({need} > {WEBGPU_DEFAULTS[limit]}): a browser "
                             "granting only the default limits refuses this kernel")
        notes += [f"could not compute {what}" for what in found.unknown]
    return LimitReport(tuple(dict.fromkeys(over)), tuple(dict.fromkeys(notes)))


def _detail(limit: str, found: Resources) -> str:
    if limit == "max-compute-workgroup-storage-size":
        return ", ".join(f"{name} {size} B" for name, size in found.workgroup_arrays.items())
    if limit.startswith("max-compute-"):
        return f"@workgroup_size{found.workgroup_size}"
    return "bindings"


def _split_args(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += ch in "(<"
        depth -= ch in ")>"
        current += ch
    if current.strip():
        parts.append(current)
    return [p.strip() for p in parts if p.strip()]


class _Scope:
    """Module-scope constants, aliases and structs, evaluated on demand."""

    def __init__(self, code: str):
        self.consts = dict(re.findall(r"\bconst\s+(\w+)\s*(?::\s*[\w<>]+)?\s*=\s*([^;]+);", code))
        self.aliases = dict(re.findall(r"\balias\s+(\w+)\s*=\s*([^;]+);", code))
        self.structs = {name: body for name, body in re.findall(r"\bstruct\s+(\w+)\s*\{([^}]*)\}", code)}
        self._values: dict = {}

    # -- integer constant expressions ---------------------------------------------------------
    def evaluate(self, text: str) -> int:
        parser = _Expression(text.strip(), self)
        value = parser.parse()
        return int(value)

    def constant(self, name: str) -> int:
        if name not in self._values:
            if name not in self.consts:
                raise UnknownSize(f"{name} is not a module-scope constant")
            self._values[name] = None  # a cycle raises below instead of recursing forever
            self._values[name] = self.evaluate(self.consts[name])
        if self._values[name] is None:
            raise UnknownSize(f"{name} is defined in terms of itself")
        return self._values[name]

    # -- layout (WGSL §14.4) ------------------------------------------------------------------------
    def layout(self, type_text: str) -> tuple[int, int]:
        """(size, alignment) of a type."""
        t = type_text.strip()
        while t in self.aliases:
            t = self.aliases[t].strip()
        if t.startswith("atomic<"):
            return self.layout(t[len("atomic<"):-1])
        if t in _SCALARS:
            return _SCALARS[t]
        vec = re.fullmatch(r"vec([234])\s*<\s*(\w+)\s*>", t) or re.fullmatch(r"vec([234])([fhiu])", t)
        if vec:
            n = int(vec[1])
            scalar = {"f": "f32", "h": "f16", "i": "i32", "u": "u32"}.get(vec[2], vec[2])
            size, align = self.layout(scalar)
            return n * size, (2 if n == 2 else 4) * align
        mat = re.fullmatch(r"mat([234])x([234])\s*<\s*(\w+)\s*>", t)
        if mat:
            columns, rows = int(mat[1]), int(mat[2])
            size, align = self.layout(f"vec{rows}<{mat[3]}>")
            stride = -(-size // align) * align
            return columns * stride, align
        if t.startswith("array"):
            inner = t[t.index("<") + 1 : t.rindex(">")]
            parts = _split_args(inner)
            if len(parts) != 2:
                raise UnknownSize(f"{t} has no fixed element count")
            size, align = self.layout(parts[0])
            stride = -(-size // align) * align
            return self.evaluate(parts[1]) * stride, align
        if t in self.structs:
            offset, largest = 0, 1
            for member in filter(None, (m.strip() for m in self.structs[t].split(","))):
                member = re.sub(r"@\w+(\([^)]*\))?\s*", "", member)
                _, member_type = member.split(":", 1)
                size, align = self.layout(member_type)
                offset = -(-offset // align) * align + size
                largest = max(largest, align)
            return -(-offset // largest) * largest, largest
        raise UnknownSize(f"type {t!r} is not one verify lays out")

    def size_of(self, type_text: str) -> int:
        return self.layout(type_text)[0]


class _Expression:
    """A recursive-descent evaluator of WGSL integer constant expressions."""

    _TOKEN = re.compile(r"\s*(0[xX][0-9a-fA-F]+[iu]?|\d+[iu]?|[A-Za-z_]\w*|<<|>>|[-+*/%()&|^,])")
    _LEVELS = (("|",), ("^",), ("&",), ("<<", ">>"), ("+", "-"), ("*", "/", "%"))

    def __init__(self, text: str, scope: _Scope):
        self.tokens, position = [], 0
        while position < len(text):
            match = self._TOKEN.match(text, position)
            if not match:
                if text[position:].strip():
                    raise UnknownSize(f"cannot evaluate {text!r}")
                break
            self.tokens.append(match[1])
            position = match.end()
        self.scope, self.position, self.text = scope, 0, text

    def parse(self) -> int:
        value = self._binary(0)
        if self.position != len(self.tokens):
            raise UnknownSize(f"cannot evaluate {self.text!r}")
        return value

    def _peek(self):
        return self.tokens[self.position] if self.position < len(self.tokens) else None

    def _take(self):
        token = self._peek()
        self.position += 1
        return token

    def _binary(self, level: int) -> int:
        if level == len(self._LEVELS):
            return self._unary()
        value = self._binary(level + 1)
        while self._peek() in self._LEVELS[level]:
            op = self._take()
            right = self._binary(level + 1)
            value = {"|": lambda a, b: a | b, "^": lambda a, b: a ^ b, "&": lambda a, b: a & b,
                     "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b, "+": lambda a, b: a + b,
                     "-": lambda a, b: a - b, "*": lambda a, b: a * b,
                     "/": lambda a, b: int(a / b) if b else _zero(), "%": lambda a, b: a % b if b else _zero()}[op](
                value, right)
        return value

    def _unary(self) -> int:
        token = self._take()
        if token is None:
            raise UnknownSize(f"cannot evaluate {self.text!r}")
        if token == "-":
            return -self._unary()
        if token == "(":
            value = self._binary(0)
            if self._take() != ")":
                raise UnknownSize(f"cannot evaluate {self.text!r}")
            return value
        if token[0].isdigit():
            return int(token.rstrip("iu"), 0)
        if token in ("true", "false"):
            return int(token == "true")
        if self._peek() == "(":  # u32(x), i32(x), min(a, b), max(a, b)
            self._take()
            args = [self._binary(0)]
            while self._peek() == ",":
                self._take()
                args.append(self._binary(0))
            if self._take() != ")":
                raise UnknownSize(f"cannot evaluate {self.text!r}")
            functions = {"u32": lambda a: a, "i32": lambda a: a, "min": min, "max": max}
            if token not in functions:
                raise UnknownSize(f"{token}(...) in {self.text!r}")
            return functions[token](*args)
        return self.scope.constant(token)


def _zero():
    raise UnknownSize("division by zero in a constant expression")
