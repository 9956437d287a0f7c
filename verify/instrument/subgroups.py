"""Subgroups of any width: rewrite WGSL's subgroup built-ins into an emulation in workgroup memory.

`emulate_subgroups(wgsl, width)` gives a module that needs no subgroup feature and behaves as if
the adapter ran subgroups of `width` lanes (4..128, a power of two as WebGPU's are): emulated
subgroup s is invocations [s W, (s + 1) W) by local_invocation_index. Each built-in call becomes a
call of a helper (subgroups_emulation.wgsl) that exchanges values through a workgroup array
between two barriers; `subgroup_size` and `subgroup_invocation_id` (parameters or members of an
entry point's input struct) become W and local_invocation_index % W. `enable subgroups;` is
dropped. A workgroup smaller than W is one partial subgroup: its missing lanes take no part
(reductions skip them, ballots leave their bits clear, shuffles from them return the caller's own
value, which WGSL leaves indeterminate).

Because the helpers synchronise the whole workgroup, every built-in must be called in
workgroup-uniform control flow; verify.instrument.uniformity checks that, and a call that may not
be raises UnsupportedWgsl naming its line.
"""

from __future__ import annotations

import re
from importlib import resources
from string import Template

from lark import Token, Tree

from verify.gpu.device import SUBGROUP_WIDTHS
from verify.instrument.infer import abstract_default, type_of
from verify.instrument.rewrite import Rewriter
from verify.instrument.uniformity import non_uniform_calls
from verify.instrument.walk import (
    STATEMENTS,
    add_entry_inputs,
    builtin_of,
    functions,
    is_entry_point,
    parameters,
    statement_scopes,
)
from verify.wgsl.declarations import Declarations, arguments, callee
from verify.wgsl.parser import Module, parse, token_text
from verify.wgsl.types import Scalar, UnsupportedWgsl, Vector

#: The widths subgroups can be emulated at: every width WebGPU allows.
WIDTHS = SUBGROUP_WIDTHS
PREFIX = "_sg_"
#: built-in -> (template section, combine expression or None)
_REDUCE = {"subgroupAdd": "result + other", "subgroupMul": "result * other", "subgroupMin": "min(result, other)",
           "subgroupMax": "max(result, other)", "subgroupAnd": "result & other", "subgroupOr": "result | other",
           "subgroupXor": "result ^ other"}
#: built-in -> (combine, comparison of slot k with this lane's id, identity)
_SCAN = {"subgroupExclusiveAdd": ("result + other", "<", "0"), "subgroupInclusiveAdd": ("result + other", "<=", "0"),
         "subgroupExclusiveMul": ("result * other", "<", "1"), "subgroupInclusiveMul": ("result * other", "<=", "1")}
#: built-in -> the source lane (in the subgroup) as WGSL, {0} the second argument
_SHUFFLE = {"subgroupShuffle": "u32({0})", "subgroupShuffleXor": "(_sg_lane % {w}u) ^ u32({0})",
            "subgroupShuffleUp": "(_sg_lane % {w}u) - u32({0})", "subgroupShuffleDown": "(_sg_lane % {w}u) + u32({0})",
            "subgroupBroadcast": "u32({0})", "subgroupBroadcastFirst": "0u"}
_VOTES = {"subgroupBallot": "_sg_ballot", "subgroupAll": "_sg_all", "subgroupAny": "_sg_any",
          "subgroupElect": "_sg_elect"}
BUILTINS = frozenset(_REDUCE) | frozenset(_SCAN) | frozenset(_SHUFFLE) | frozenset(_VOTES)
#: Built-in inputs of the subgroup feature -> their emulated value ({w} the width, {n} the invocations).
_INPUTS = {"subgroup_size": "{w}u", "subgroup_invocation_id": "(_sg_lane % {w}u)",
           "subgroup_id": "(_sg_lane / {w}u)", "num_subgroups": "(({n}u + {w}u - 1u) / {w}u)"}
_ENABLES = ("subgroups", "subgroups_f16")


def reads_subgroups(wgsl: str) -> bool:
    """Whether `wgsl` can depend on its subgroups' width: it calls a subgroup built-in, or names a
    subgroup built-in input (`subgroup_size`, `subgroup_invocation_id`, `subgroup_id`,
    `num_subgroups`) anywhere but where it declares it. A program that enables subgroups and
    declares those inputs but never reads them (ORT's split decode programs) computes the same at
    every width, so emulating other widths only compiles it again. Conservative: a name used again
    for something else (a local of the same name) counts as a read."""
    text = re.sub(r"/\*.*?\*/", " ", re.sub(r"//[^\n]*", " ", wgsl), flags=re.S)
    if re.search(r"\b(?:" + "|".join(sorted(BUILTINS)) + r")\s*\(", text):
        return True
    inputs = re.finditer(r"@builtin\(\s*(?:" + "|".join(_INPUTS) + r")\s*\)\s*([A-Za-z_]\w*)", text)
    return any(len(re.findall(rf"\b{re.escape(m[1])}\b", text)) > 1 for m in inputs)


def emulate_subgroups(wgsl: str, width: int) -> str:
    """`wgsl` with its subgroup built-ins emulated at `width` lanes (see the module docstring)."""
    if width not in WIDTHS:
        raise ValueError(f"width={width}: WebGPU subgroups have 4 to 128 lanes, a power of two ({WIDTHS})")
    return _Emulation(parse(wgsl), width).run()


class _Emulation:
    def __init__(self, module: Module, width: int):
        self.module = module
        self.width = width
        self.declarations = Declarations(module)
        self.rewriter = Rewriter(module)
        self.sections = _sections()
        self.instances: dict[str, str] = {}  # function text -> name
        self.exchanges: dict[str, str] = {}  # element type -> workgroup array name
        self.invocations = max((self._invocations(f) for f in functions(module) if is_entry_point(f)), default=1)
        self.removed_members: dict[tuple[str, str], str] = {}  # (struct, member) -> builtin
        for token in module.tree.scan_values(lambda v: isinstance(v, Token) and v.type == "IDENT"):
            if token.value.startswith(PREFIX):
                raise UnsupportedWgsl(f"line {token.line}: identifier {token.value!r} uses the prefix {PREFIX!r} "
                                      "the emulation reserves")

    def run(self) -> str:
        bad = non_uniform_calls(self.module, BUILTINS)
        if bad:
            raise UnsupportedWgsl("subgroup emulation: " + "; ".join(v.message() for v in bad))
        self._enables()
        self._structs()
        for function in functions(self.module):
            self._function(function)
        if not self.instances and not self.removed_members and not self._uses_inputs():
            return self.module.source
        header = self.sections["header"].substitute(W=self.width)
        arrays = "".join(f"var<workgroup> {name}: array<{type_}, {self.invocations}>;\n"
                         for type_, name in self.exchanges.items())
        functions_text = "\n".join(text.replace("{name}", name) for text, name in self.instances.items())
        return self.rewriter.text().rstrip("\n") + "\n" + header + "\n" + arrays + "\n" + functions_text

    def _uses_inputs(self) -> bool:
        return any(builtin_of(p.children[0]) in _INPUTS for f in functions(self.module) for p in parameters(f))

    # -- declarations -----------------------------------------------------------------------
    def _invocations(self, entry: Tree) -> int:
        for attribute in entry.children[0].children:
            if attribute.data == "attribute" and token_text(attribute.children[0]) == "workgroup_size":
                sizes = [int(self.declarations.evaluate(a)) for a in attribute.children[1].children]
                total = 1
                for size in sizes:
                    total *= size
                return total
        raise UnsupportedWgsl(f"line {entry.meta.line}: a compute entry point without @workgroup_size")

    def _enables(self) -> None:
        for node in self.module.tree.children:
            if isinstance(node, Tree) and node.data == "enable_directive":
                names = [token_text(t) for t in node.children]
                kept = [n for n in names if n not in _ENABLES]
                if kept != names:
                    self.rewriter.replace(node, f"enable {', '.join(kept)};" if kept else "")

    def _structs(self) -> None:
        """Drop subgroup built-in members of entry-point input structs (accesses become values)."""
        for node in self.module.tree.children:
            if not (isinstance(node, Tree) and node.data == "struct_decl"):
                continue
            members = node.children[1:]
            removed = frozenset(k for k, m in enumerate(members) if builtin_of(m.children[0]) in _INPUTS)
            for k, member in enumerate(members):
                builtin = builtin_of(member.children[0])
                if builtin in _INPUTS:
                    self.removed_members[(token_text(node.children[0]), token_text(member.children[1]))] = builtin
                    self._remove_listed(member, members, k, removed)

    def _remove_listed(self, item: Tree, items: list, k: int, removed: frozenset = frozenset()) -> None:
        """Remove item k of a comma-separated list (struct members, parameters) with one comma.
        `removed`: the indices of every item removed from the list; the last item (without a
        trailing comma) takes the comma after the last item kept, since the one before it is the
        comma a removed predecessor already took (flash_attn_tile's last four parameters)."""
        self.rewriter.replace(item, "")
        source = self.module.source
        comma: int | None
        if k + 1 < len(items):
            comma = source.index(",", item.meta.end_pos)
        else:
            after = source[item.meta.end_pos:].lstrip()
            kept = [j for j in range(k) if j not in removed]
            comma = item.meta.end_pos + source[item.meta.end_pos:].index(",") if after.startswith(",") else \
                source.index(",", items[kept[-1]].meta.end_pos) if kept else None
        if comma is not None:
            self.rewriter.erase(comma)

    # -- functions --------------------------------------------------------------------------
    def _function(self, function: Tree) -> None:
        scopes = statement_scopes(function, self.declarations)
        lets = []
        params = parameters(function)
        removed = frozenset(k for k, p in enumerate(params) if builtin_of(p.children[0]) in _INPUTS)
        for k, param in enumerate(params):
            builtin = builtin_of(param.children[0])
            if builtin in _INPUTS:
                self._remove_listed(param, params, k, removed)
                lets.append(f"let {token_text(param.children[1])} = {self._input(builtin)};")
        for node in function.iter_subtrees_topdown():
            if id(node) in scopes:
                self._statement(node, scopes[id(node)])
        if is_entry_point(function):
            found = add_entry_inputs(function, self.module, self.rewriter, {"local_invocation_index": "u32"}, PREFIX)
            prologue = [f"{PREFIX}lane = {found['local_invocation_index']};",
                        f"{PREFIX}invocations = {self._invocations(function)}u;"] + lets
        else:
            prologue = lets
        if prologue:
            body = function.children[-1]
            attributes = body.children[0]
            start = attributes.meta.end_pos if not attributes.meta.empty else body.meta.start_pos
            self.rewriter.insert(self.module.source.index("{", start) + 1, " " + " ".join(prologue))

    def _input(self, builtin: str) -> str:
        return _INPUTS[builtin].format(w=self.width, n=self.invocations)

    def _statement(self, statement: Tree, scope) -> None:
        """Rewrite the built-in calls and struct-member reads among this statement's own expressions."""
        for node in _own_nodes(statement):
            if node.data == "call" and callee(node) in BUILTINS:
                self._call(node, scope)
            elif node.data == "access" and len(node.children) >= 2 and node.children[1].data == "member":
                self._member(node, scope)

    def _member(self, node: Tree, scope) -> None:
        try:
            base = type_of(node.children[0], scope)
        except UnsupportedWgsl:
            return
        key = (getattr(base, "name", None), token_text(node.children[1].children[0]))
        if key in self.removed_members:
            if len(node.children) > 2:
                raise UnsupportedWgsl(f"line {node.meta.line}: {self.module.text(node)!r} selects into a subgroup "
                                      "built-in input")
            self.rewriter.replace(node, self._input(self.removed_members[key]))

    def _call(self, node: Tree, scope) -> None:
        name = callee(node)
        args = arguments(node)
        if name in _VOTES:
            function = _VOTES[name]
            self._instance("ballot", {}, "ballot", "u32")
            if name != "subgroupBallot":
                self._instance("votes", {}, None, None)
            self.rewriter.replace(node, lambda rw: f"{function}({', '.join(rw.emit(a) for a in args)})")
            return
        type_ = abstract_default(type_of(args[0], scope))
        if not (isinstance(type_, (Scalar, Vector)) and _element(type_) in ("f32", "f16", "i32", "u32")):
            raise UnsupportedWgsl(f"line {node.meta.line}: {name} of {type_.wgsl}: the emulation handles scalars and "
                                  "vectors of f32, f16, i32 and u32")
        key = re.sub(r"\W", "", type_.wgsl)
        if name in _REDUCE:
            helper = self._instance("reduce", {"combine": _REDUCE[name]}, f"{name[8:].lower()}_{key}", type_.wgsl)
            self.rewriter.replace(node, lambda rw: f"{helper}({rw.emit(args[0])})")
        elif name in _SCAN:
            combine, below, identity = _SCAN[name]
            helper = self._instance("scan", {"combine": combine, "below": below, "identity": identity},
                                    f"{name[8:].lower()}_{key}", type_.wgsl)
            self.rewriter.replace(node, lambda rw: f"{helper}({rw.emit(args[0])})")
        else:
            helper = self._instance("shuffle", {}, f"shuffle_{key}", type_.wgsl)
            source = _SHUFFLE[name]

            def call(rw, source=source):
                lane = source.format(rw.emit(args[1]) if len(args) > 1 else "", w=self.width)
                return f"{helper}({rw.emit(args[0])}, {lane})"
            self.rewriter.replace(node, call)

    def _instance(self, section: str, values: dict, name: str | None, type_: str | None) -> str:
        """Instantiate a template section for an element type; the helper's name."""
        exchange = None
        if type_ is not None:
            exchange = self.exchanges.setdefault(type_, f"{PREFIX}exchange_{re.sub(r'[^0-9a-z]', '', type_)}")
        text = self.sections[section].substitute(W=self.width, T=type_ or "", exchange=exchange or "",
                                                 last=f"{self.invocations - 1}u", name=name or "", **values)
        if text not in self.instances:
            self.instances[text] = f"{PREFIX}{name}" if name else ""
        return f"{PREFIX}{name}" if name else ""


def _element(type_) -> str:
    return type_.element.name if isinstance(type_, Vector) else type_.name


def _own_nodes(statement: Tree):
    """Expression nodes of a statement, not of the statements nested in it."""
    stack = [c for c in statement.children if isinstance(c, Tree)]
    while stack:
        node = stack.pop()
        if node.data in STATEMENTS or node.data in ("compound_statement", "continuing_statement", "for_init",
                                                    "for_update"):
            continue
        yield node
        stack.extend(c for c in node.children if isinstance(c, Tree))


def _sections() -> dict[str, Template]:
    """The template file's sections: `header`, then one per `//@ name:` line."""
    text = resources.files(__package__).joinpath("subgroups_emulation.wgsl").read_text()
    parts = re.split(r"^//@ (\w+):.*$", text, flags=re.M)
    sections = {"header": Template(parts[0])}
    for name, body in zip(parts[1::2], parts[2::2]):
        sections[name] = Template(body.strip("\n") + "\n")
    return sections
