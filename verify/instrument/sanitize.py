"""`sanitize`: rewrite a kernel so that it checks and logs its own memory accesses.

The WGSL counterpart of compute-sanitizer's racecheck, memcheck and initcheck. Every access to
`var<workgroup>` and `var<storage>` memory becomes a call of a helper function generated for
that access site, which
  - checks each index against its array's length (the declared size; arrayLength for a
    runtime-sized array), vector width or matrix column count;
  - logs the access into a shadow buffer (verify.instrument.shadow reads it back): site, lane,
    workgroup, barrier epochs and the scalar offset, or, out of bounds, the failing dimension,
    index and length;
  - performs the access only in bounds: a write out of bounds is dropped, a read gives zero.
Reads of read-only storage cannot race and are never uninitialised, so they are logged only when
out of bounds. Atomic built-ins are logged as atomic accesses (never races). Barriers count epochs.

Every loop (`loop`, `for`, `while`) counts its trips in a variable of its own, set to zero where
the loop starts: a loop that starts its trip LOOP_BOUND + 1 is left, and logged just after it
(the loop's number, the invocation). A kernel that never terminates then ends, and says which loop
did not: on a plain run a driver ends such a loop silently (lavapipe after 65535 trips of an
invocation) or, where the loop has no side effect, the compiler may remove it. The log call on the
way out is a side effect that depends on the counter, so neither the counter nor the loop can be
optimised away.

Everything else of the kernel is kept as written, on the same lines; the helpers and the log's
declarations are appended after it.

Public surface: `sanitize(wgsl) -> Sanitized`, `Sanitized`, `Site`, `LoopSite`, `AccessKind`,
`LOOP_BOUND`; the device wrapper is verify.instrument.devices.SanitizingDevice.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from importlib import resources
from string import Template

import numpy as np
from lark import Token, Tree

from verify.instrument.access_helpers import (
    LENGTHS_NAME,
    PREFIX,
    Helper,
    bits_function,
    call_text,
    function_text,
    operand_type,
    wgsl_type,
)
from verify.instrument.infer import abstract_default, compare_exchange_result
from verify.instrument.memory import (
    TRACKED_SPACES,
    Index,
    Reference,
    alias_target,
    reference_root,
)
from verify.instrument.rewrite import Rewriter
from verify.instrument.walk import (
    LOOPS,
    STATEMENTS,
    entry_builtins,
    functions,
    loop_body_start,
    statement_scopes,
)
from verify.wgsl.declarations import Declarations, arguments, callee
from verify.wgsl.interface import interface_of
from verify.wgsl.parser import Module, blank_comments, parse, token_text
from verify.wgsl.source_map import source_location
from verify.wgsl.types import Atomic, UnsupportedWgsl

LOG_NAME = "_san_log"
#: Sites fit in the low 20 bits of a record's first word (lane above, the out-of-bounds flag on top).
MAX_SITES = 1 << 20
#: Trips one execution of a loop may make before the sanitizer ends it as unbounded (UnboundedLoop).
#: The most a loop of verify's own, TVM's or ONNX Runtime's kernels makes at the gate's sizes (ci
#: and nightly profiles) is LARGEST_MEASURED_TRIPS: TVM's decode over 8192 rows, four per trip
#: (benchmarks/loop_trips.py, benchmarks/results/loop_trips.json, docs/instrumentation.md §2). The
#: bound is 8 times that, and below Mesa 22.3 lavapipe's 65535 trips per invocation
#: (docs/findings.md §9), past which lavapipe ends a loop itself and the counter never sees it run on.
LOOP_BOUND = 1 << 14
LARGEST_MEASURED_TRIPS = 2048
#: Trip counters: one function-scope variable per loop, this prefix and the loop's number.
TRIPS_PREFIX = f"{PREFIX}trips_"
_BARRIER_EPOCHS = {
    "workgroupBarrier": f" {PREFIX}epoch += 1u; {PREFIX}workgroup_epoch += 1u;",
    "storageBarrier": f" {PREFIX}epoch += 1u; {PREFIX}storage_epoch += 1u;",
    "textureBarrier": f" {PREFIX}epoch += 1u;",
}
_ATOMIC_KINDS = {"atomicLoad": "ATOMIC_LOAD", "atomicStore": "ATOMIC_STORE"}
_ATOMIC_RMW = ("atomicAdd", "atomicSub", "atomicMax", "atomicMin", "atomicAnd", "atomicOr", "atomicXor",
               "atomicExchange")
_NOT_EXPRESSIONS = STATEMENTS | {"compound_statement", "attributes", "else_if_clause", "else_clause", "case_clause",
                                 "default_clause", "for_init", "for_update", "continuing_statement", "type_spec",
                                 "variable_decl", "default_selector"}


class AccessKind(enum.IntEnum):
    READ = 0
    WRITE = 1
    ATOMIC_LOAD = 2
    ATOMIC_STORE = 3
    ATOMIC_RMW = 4

    @property
    def reads(self) -> bool:
        return self in (AccessKind.READ, AccessKind.ATOMIC_LOAD, AccessKind.ATOMIC_RMW)

    @property
    def writes(self) -> bool:
        return self in (AccessKind.WRITE, AccessKind.ATOMIC_STORE, AccessKind.ATOMIC_RMW)

    @property
    def atomic(self) -> bool:
        return self >= AccessKind.ATOMIC_LOAD

    @property
    def verb(self) -> str:
        return {0: "read", 1: "write", 2: "atomic load", 3: "atomic store", 4: "atomic update"}[int(self)]


@dataclass(frozen=True)
class Site:
    """One access in the source: what it touches and where it is written."""

    id: int
    variable: str
    space: str  # "workgroup" | "storage"
    kind: AccessKind
    scalars: int  # scalars one execution touches
    line: int
    column: int
    source_line: str
    expression: str
    logged: bool  # False: only logged out of bounds (reads of read-only storage)
    value_logged: bool = False  # a write whose stored value (bits, or a hash of them) is logged
    #: "FILE:LINE" of the line in the kernel's own .wgsl file (verify.wgsl.source_map), if marked.
    origin: str | None = None

    @property
    def where(self) -> str:
        """`line 36`, or `line 36 (verify_rmsnorm/rmsnorm.wgsl:28)` where the body file is known."""
        return f"line {self.line}" + (f" ({self.origin})" if self.origin else "")


@dataclass(frozen=True)
class LoopSite:
    """One loop statement in the source (`loop`, `for` or `while`), numbered apart from the
    access sites: the record of a loop that ran past LOOP_BOUND trips names it."""

    id: int
    kind: str  # "loop" | "for" | "while"
    line: int
    column: int
    source_line: str
    #: "FILE:LINE" of the line in the kernel's own .wgsl file (verify.wgsl.source_map), if marked.
    origin: str | None = None

    @property
    def where(self) -> str:
        return f"line {self.line}" + (f" ({self.origin})" if self.origin else "")


@dataclass(frozen=True)
class RuntimeArray:
    """A runtime-sized array in a storage binding: its bound is the length of the array the
    host meant to bind (the bytes of the array it passed, from `offset`, in `stride`s), not
    arrayLength, which also counts the poison padding and guard bytes after it."""

    variable: str
    offset: int  # bytes before the array in its binding (a struct's last member)
    stride: int  # bytes per element

    def length(self, nbytes: int) -> int:
        return max(0, nbytes - self.offset) // self.stride


@dataclass(frozen=True)
class Sanitized:
    """An instrumented module: its WGSL, the access sites, and the bindings it added: the log,
    and (when the kernel has runtime-sized arrays) a uniform of their lengths, one per
    `runtime_arrays` entry, that the host fills in for each dispatch."""

    wgsl: str
    original: str
    sites: tuple[Site, ...]
    variables: dict  # name -> verify.wgsl.types.ModuleVar, for naming addresses
    log_binding: int
    runtime_arrays: tuple[RuntimeArray, ...] = ()
    log_name: str = LOG_NAME
    lengths_name: str = LENGTHS_NAME
    loops: tuple[LoopSite, ...] = ()
    #: Only out-of-bounds accesses and unbounded loops are logged (see `sanitize`).
    bounds_only: bool = False

    def lengths(self, nbytes: dict) -> bytes:
        """The lengths uniform for bindings of `nbytes[variable]` bytes of array data."""
        words = np.zeros(-(-len(self.runtime_arrays) // 4) * 4, dtype="<u4")
        for k, array in enumerate(self.runtime_arrays):
            words[k] = array.length(nbytes[array.variable])
        return words.tobytes()


def sanitize(wgsl: str, *, bounds_only: bool = False) -> Sanitized:
    """Instrument `wgsl` (see the module docstring). Raises WgslSyntaxError for WGSL that does not
    parse and UnsupportedWgsl (naming the line) for constructs the rewrite cannot keep faithful.

    `bounds_only`: log an access only when it is out of bounds (and loops that run past the bound),
    as for reads of read-only storage. Every access is still checked and kept in bounds, but the
    log holds no in-bounds access, so races and uninitialised reads cannot be found from it: the
    cheap pass for what a plain run cannot see at all (a write the driver drops far past a
    buffer, a loop that never ends), at the cost of a few records instead of one per access."""
    return _Instrumenter(parse(wgsl), bounds_only).run()


class _Instrumenter:
    def __init__(self, module: Module, bounds_only: bool = False):
        self.module = module
        self.bounds_only = bounds_only
        self.code = blank_comments(module.source)  # braces found here are never inside a comment
        self.loops: list[LoopSite] = []
        self.declarations = Declarations(module)
        self.variables = dict(self.declarations.variables)
        self.rewriter = Rewriter(module)
        self.sites: list[Site] = []
        self.helpers: dict[str, str] = {}  # body -> name: sites of one shape share a helper
        self.runtime_arrays: dict[str, RuntimeArray] = {}  # by the WGSL naming the array
        for token in module.tree.scan_values(lambda v: isinstance(v, Token) and v.type == "IDENT"):
            if token.value.startswith(PREFIX):
                raise UnsupportedWgsl(f"line {token.line}: identifier {token.value!r} uses the prefix "
                                      f"{PREFIX!r} the instrumentation reserves")

    def run(self) -> Sanitized:
        for function in functions(self.module):
            self._instrument(function)
        binding = 1 + max((b for b in self._group0_bindings()), default=-1)
        runtime = resources.files(__package__).joinpath("sanitize_log.wgsl").read_text()
        text = (self.rewriter.text().rstrip("\n") + "\n"
                + Template(runtime).substitute(binding=binding, loop_bound=LOOP_BOUND))
        if self.runtime_arrays:
            vectors = -(-len(self.runtime_arrays) // 4)
            text += (f"\n// Lengths of the runtime-sized arrays the host bound (arrayLength counts padding too).\n"
                     f"@group(0) @binding({binding + 1}) var<uniform> {LENGTHS_NAME}: array<vec4<u32>, {vectors}>;\n")
        text += "\n" + "\n".join(body.replace("{name}", name) for body, name in self.helpers.items())
        return Sanitized(text, self.module.source, tuple(self.sites), self.variables, binding,
                         tuple(self.runtime_arrays.values()), loops=tuple(self.loops), bounds_only=self.bounds_only)

    def runtime_length(self, prefix: str, variable: str, offset: int, stride: int) -> str:
        """WGSL for the bound of the runtime-sized array `prefix` (see RuntimeArray)."""
        if prefix not in self.runtime_arrays:
            self.runtime_arrays[prefix] = RuntimeArray(variable, offset, stride)
        k = list(self.runtime_arrays).index(prefix)
        return f"min(arrayLength(&{prefix}), {LENGTHS_NAME}[{k // 4}].{'xyzw'[k % 4]})"

    def _group0_bindings(self):
        return (b.binding for b in interface_of(self.module, self.declarations).bindings if b.group == 0)

    # -- functions and statements -------------------------------------------------------------
    def _instrument(self, function: Tree) -> None:
        scopes = statement_scopes(function, self.declarations)
        self.aliases: dict[str, Reference] = {}
        for node in function.iter_subtrees_topdown():
            if id(node) in scopes and node.data in STATEMENTS:
                self._statement(node, scopes[id(node)])
            if node.data in LOOPS:
                self._bound_loop(node)
        builtins = entry_builtins(function, self.module, self.rewriter, PREFIX)
        if builtins is not None:
            lane, group, groups = builtins
            body = function.children[-1]
            self.rewriter.insert(self._brace(body) + 1,
                                 f" {PREFIX}lane = {lane}; {PREFIX}group = {group}.x + {groups}.x * "
                                 f"({group}.y + {groups}.y * {group}.z); {PREFIX}step = select(0u, 1u, "
                                 f"{PREFIX}group - {LOG_NAME}.first_group < {LOG_NAME}.groups);")

    def _bound_loop(self, node: Tree) -> None:
        """Count the loop's trips in a variable set to zero just before it (on the loop's own
        line, so lines keep their numbers), leave it at trip LOOP_BOUND + 1, and log that just
        after it. The counter starts each trip, so `continue` (and a `for` update) cannot skip it;
        only the bound's own exit leaves the counter past the bound, so the check after the loop
        logs exactly those exits. The log call sits after the loop, not at the `break`: Mesa
        25.0's llvmpipe (under Dawn) crashes compiling a loop whose constant trip count it can
        prove reaches a `break` that calls the log (docs/instrumentation.md §2)."""
        if len(self.loops) >= MAX_SITES:
            raise UnsupportedWgsl(f"more than {MAX_SITES} loops")
        line = node.meta.line
        loop = LoopSite(len(self.loops), node.data.removesuffix("_statement"), line, node.meta.column,
                        self.module.line(line), source_location(self.module.source, line))
        self.loops.append(loop)
        counter = f"{TRIPS_PREFIX}{loop.id}"
        self.rewriter.insert(node.meta.start_pos, f"var {counter}: u32 = 0u; ")
        past = f"{counter} > {PREFIX}loop_bound"
        self.rewriter.insert(loop_body_start(node, self.code), f" {counter} += 1u; if ({past}) {{ break; }}")
        self.rewriter.insert(node.meta.end_pos, f" if ({past}) {{ {PREFIX}unbounded({loop.id}u); }}")

    def _brace(self, body: Tree) -> int:
        attributes = body.children[0]
        start = attributes.meta.end_pos if not attributes.meta.empty else body.meta.start_pos
        return self.module.source.index("{", start)

    def _statement(self, node: Tree, scope) -> None:
        kind = node.data
        if kind == "assignment":
            lhs, rhs = node.children
            ref = self._reference(lhs, scope)
            if ref is not None:
                return self._write(node, lhs, ref, rhs, scope)
        elif kind in ("compound_assignment", "increment", "decrement"):
            lhs = node.children[0]
            ref = self._reference(lhs, scope)
            if ref is not None:
                return self._update(node, lhs, ref, scope)
        elif kind == "let_statement" and alias_target(node.children[-1], scope, self.variables, self.aliases):
            return self._alias(node, scope)
        elif kind == "call_statement" and callee(node.children[0]) in _BARRIER_EPOCHS:
            self.rewriter.insert(node.meta.end_pos, _BARRIER_EPOCHS[callee(node.children[0])])
            return
        for child in self._expressions(node):
            self._visit(child, scope)

    def _expressions(self, node: Tree):
        for child in node.children:
            if not isinstance(child, Tree):
                continue
            if child.data in ("else_if_clause", "case_clause"):
                yield from self._expressions(child)
            elif child.data not in _NOT_EXPRESSIONS:
                yield child

    # -- expressions ------------------------------------------------------------------------
    def _reference(self, node, scope) -> Reference | None:
        return reference_root(node, scope, self.variables, self.aliases)

    def _visit(self, node, scope) -> None:
        """Instrument every access in expression `node` (read context)."""
        if isinstance(node, Token):
            return
        ref = self._reference(node, scope)
        if ref is not None:
            return self._read(node, ref, scope)
        if node.data == "call":
            return self._call(node, scope)
        pointed = self._reference(node.children[0], scope) if node.data == "address_of" else None
        if pointed is not None:
            raise UnsupportedWgsl(f"line {node.meta.line}: a pointer to {pointed.variable.space} memory is passed on "
                                  f"({self.module.text(node)!r}); the sanitizer follows pointers only into "
                                  "atomic built-ins, arrayLength and `let p = &...`")
        for child in node.children:
            if isinstance(child, Tree) and child.data not in ("template_list",):
                self._visit(child, scope)

    def _call(self, node: Tree, scope) -> None:
        name = callee(node)
        args = arguments(node)
        if name == "arrayLength":
            return
        target = alias_target(args[0], scope, self.variables, self.aliases) if args else None
        if target is not None and name in _ATOMIC_RMW + tuple(_ATOMIC_KINDS) + ("atomicCompareExchangeWeak",):
            return self._atomic(node, name, target, args[1:], scope)
        if target is not None and name == "workgroupUniformLoad":
            return self._uniform_load(node, target, scope)
        for arg in args:
            self._visit(arg, scope)

    # -- the rewrites -----------------------------------------------------------------------
    def _indices(self, ref: Reference, scope) -> None:
        for index in ref.indices:
            if isinstance(index.argument, Tree):
                self._visit(index.argument, scope)

    def _index_arguments(self, ref: Reference, rewriter: Rewriter) -> list[str]:
        return [f"u32({rewriter.emit(i.argument)})" if isinstance(i.argument, Tree) else i.argument
                for i in ref.indices]

    def _read(self, node, ref: Reference, scope) -> None:
        self._indices(ref, scope)
        site = self._site(node, ref, AccessKind.READ)
        helper = Helper(ref, self)
        params = helper.index_params()
        body = [*helper.check(), helper.log(site), *helper.read_body()]
        name = self._helper(params, wgsl_type(ref.type), body)
        self.rewriter.replace(node, lambda rw: call_text(name, site, self._index_arguments(ref, rw)))

    def _write(self, node, lhs, ref: Reference, rhs, scope) -> None:
        self._indices(ref, scope)
        self._visit(rhs, scope)
        site = self._site(lhs, ref, AccessKind.WRITE)
        helper = Helper(ref, self)
        params = helper.index_params() + [f"value: {wgsl_type(ref.type)}"]
        body = [*helper.check(), helper.log(site, value=self._bits(ref.type, "value")),
                f"if (bad == 0u) {{ {helper.access()} = value; }}"]
        name = self._helper(params, None, body)
        self.rewriter.replace(node, lambda rw: call_text(name, site, self._index_arguments(ref, rw) + [rw.emit(rhs)]))

    def _update(self, node, lhs, ref: Reference, scope) -> None:
        """`r op= x`, `r++`, `r--`: a read and a write of r, the index evaluated once."""
        self._indices(ref, scope)
        read = self._site(lhs, ref, AccessKind.READ)
        write = self._site(lhs, ref, AccessKind.WRITE)
        helper = Helper(ref, self)
        params = helper.index_params()
        if node.data == "compound_assignment":
            operator, operand = node.children[1].children[0].value, node.children[2]
            self._visit(operand, scope)
            params.append(f"operand: {wgsl_type(operand_type(operator, operand, ref.type, scope))}")
            updated = f"{helper.access()} {operator[:-1]} operand"
        else:
            operand = None
            updated = f"{helper.access()} {'+' if node.data == 'increment' else '-'} 1"
        body = [*helper.check(), f"let updated: {wgsl_type(ref.type)} = {updated};", helper.log(read),
                helper.log(write, "site + 1u", self._bits(ref.type, "updated")),
                f"if (bad == 0u) {{ {helper.access()} = updated; }}"]
        name = self._helper(params, None, body)
        operands = [operand] if operand is not None else []
        self.rewriter.replace(node, lambda rw: call_text(name, read, self._index_arguments(ref, rw)
                                                     + [rw.emit(o) for o in operands]))

    def _atomic(self, node, name: str, ref: Reference, values: list, scope) -> None:
        if not isinstance(ref.type, Atomic):
            raise UnsupportedWgsl(f"line {node.meta.line}: {name} on a non-atomic {ref.type.wgsl}")
        self._indices(ref, scope)
        for value in values:
            self._visit(value, scope)
        kind = AccessKind[_ATOMIC_KINDS.get(name, "ATOMIC_RMW")]
        site = self._site(node, ref, kind)
        helper = Helper(ref, self)
        element = wgsl_type(ref.type.element)
        params = helper.index_params() + [f"v{k}: {element}" for k in range(len(values))]
        call = f"{name}(&{helper.access()}{''.join(f', v{k}' for k in range(len(values)))})"
        if name == "atomicStore":
            body = [*helper.check(), helper.log(site), f"if (bad == 0u) {{ {call}; }}"]
            returns = None
        elif name == "atomicCompareExchangeWeak":
            # Its result type has no name in WGSL: the helper returns a struct of the same members
            # (infer.compare_exchange_result), declared once with the helpers. An access the
            # sanitizer stops reports `exchanged`, so a compare-exchange loop around it ends.
            result = compare_exchange_result(ref.type.element)
            members = ", ".join(f"{member}: {type_.wgsl}" for member, type_ in result.members)
            self.helpers.setdefault(f"struct {result.name} {{ {members} }}", "")
            body = [*helper.check(), helper.log(site), f"var result = {result.name}({element}(), true);",
                    f"if (bad == 0u) {{ let exchanged = {call}; "
                    f"result = {result.name}(exchanged.old_value, exchanged.exchanged); }}", "return result;"]
            returns = result.name
        else:
            body = [*helper.check(), helper.log(site), f"var result: {element};",
                    f"if (bad == 0u) {{ result = {call}; }}", "return result;"]
            returns = element
        name = self._helper(params, returns, body)
        self.rewriter.replace(node, lambda rw: call_text(name, site, self._index_arguments(ref, rw)
                                                     + [rw.emit(v) for v in values]))

    def _uniform_load(self, node, ref: Reference, scope) -> None:
        """workgroupUniformLoad(&r): a barrier, then a read of r by every invocation."""
        self._indices(ref, scope)
        site = self._site(node, ref, AccessKind.READ)
        helper = Helper(ref, self)
        body = [f"let loaded = workgroupUniformLoad(&{helper.access()});", _BARRIER_EPOCHS["workgroupBarrier"].strip(),
                *helper.check(), helper.log(site), f"return {helper.select('loaded')};"]
        name = self._helper(helper.index_params(), wgsl_type(ref.type), body)
        self.rewriter.replace(node, lambda rw: call_text(name, site, self._index_arguments(ref, rw)))

    def _alias(self, node: Tree, scope) -> None:
        """`let p = &r[i]`: p is followed as r with its indices captured here, in new lets."""
        name = token_text(node.children[0])
        ref = alias_target(node.children[-1], scope, self.variables, self.aliases)
        assert ref is not None  # _statement calls this only for a let whose alias_target is a reference
        self._indices(ref, scope)
        captured: list[tuple[str, Tree]] = []
        steps = []
        for step in ref.steps:
            if isinstance(step, Index) and isinstance(step.argument, Tree):
                holder = f"{PREFIX}{name}_{len(captured)}"
                captured.append((holder, step.argument))
                step = Index(holder, step.length, step.stride)
            steps.append(step)
        self.aliases[name] = Reference(ref.variable, tuple(steps), ref.type)
        if captured:
            self.rewriter.replace(node, lambda rw: "; ".join(f"let {holder} = u32({rw.emit(arg)})"
                                                             for holder, arg in captured))
        else:
            self.rewriter.replace(node, f"let {PREFIX}{name}_unused = 0u")

    def _bits(self, type_, value: str) -> str:
        """WGSL for a u32 that is equal for equal values of `type_` (0u where not known)."""
        function = bits_function(abstract_default(type_))
        if function is None:
            return "0u"
        if function not in self.helpers:
            self.helpers[function] = f"{PREFIX}h{len(self.helpers)}"
        return f"{self.helpers[function]}({value})"

    def _helper(self, params: list[str], returns, body: list[str]) -> str:
        """The name of a helper with this signature and body (taking the site as its first
        argument), declared once however many sites share it."""
        text = function_text("{name}", ["site: u32", *params], returns, body)
        if text not in self.helpers:
            self.helpers[text] = f"{PREFIX}h{len(self.helpers)}"
        return self.helpers[text]

    def _site(self, node, ref: Reference, kind: AccessKind) -> Site:
        if len(self.sites) >= MAX_SITES:
            raise UnsupportedWgsl(f"more than {MAX_SITES} memory access sites")
        var = ref.variable
        line, column = node.meta.line, node.meta.column
        logged = not self.bounds_only and not (var.space == "storage" and var.access == "read" and not kind.atomic)
        value_logged = kind == AccessKind.WRITE and bits_function(abstract_default(ref.type)) is not None
        site = Site(len(self.sites), var.name, var.space, kind, ref.span[1], line, column, self.module.line(line),
                    self.module.text(node), logged, value_logged, source_location(self.module.source, line))
        self.sites.append(site)
        return site


__all__ = ["AccessKind", "LOOP_BOUND", "LoopSite", "Sanitized", "Site", "sanitize", "TRACKED_SPACES"]
