"""Which calls run in workgroup-uniform control flow: a conservative form of WGSL's uniformity
analysis (WGSL §15.2), for the calls a rewrite turns into barriers.

A subgroup built-in may run where only some invocations of a workgroup arrive; its emulation in
workgroup memory synchronises the whole workgroup with workgroupBarrier, which needs every
invocation there (uniform control flow). Naga does not check barrier uniformity, so a bad call
would hang or read stale slots instead of failing to compile: the check is done here.

Values are non-uniform when they come from local_invocation_id/index, global_invocation_id,
subgroup_invocation_id/subgroup_id, workgroup memory, read_write storage, private variables,
atomics or subgroup results, or from anything computed from those; function-scope variables are
non-uniform if any assignment gives them such a value or happens in non-uniform control flow.
Control flow is non-uniform inside a branch or loop on a non-uniform value, and after a
`return`, `break` or `continue` taken in non-uniform control flow, to the end of what it leaves:
a branch whose only exits are into a loop nested in it, and a loop no invocation returns from,
end as uniform as they began. Function parameters are
non-uniform if any call passes a non-uniform argument; the analysis iterates to a fixed point.
It errs on the side of "non-uniform", like the specification's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from lark import Token, Tree

from verify.instrument.walk import (
    builtin_of,
    function_name,
    functions,
    is_entry_point,
    parameters,
)
from verify.wgsl.declarations import Declarations, arguments, callee
from verify.wgsl.parser import token_text

#: Built-in inputs that differ between the invocations of a workgroup.
NON_UNIFORM_BUILTINS = frozenset(("local_invocation_id", "local_invocation_index", "global_invocation_id",
                                  "subgroup_invocation_id", "subgroup_id"))
#: Built-in functions whose result differs between invocations whatever their arguments.
_NON_UNIFORM_RESULTS = ("atomic", "subgroup", "quad")


@dataclass(frozen=True)
class NonUniformCall:
    """A call of a built-in that needs uniform control flow, reached in control flow that is not."""

    builtin: str
    line: int  # the built-in call's line
    through: tuple[tuple[str, int], ...] = ()  # (function, line of the call into it), outermost first

    def message(self) -> str:
        if self.through:
            name, line = self.through[0]
            path = " -> ".join(f"{n}()" for n, _ in self.through)
            where = f"line {line}: the call of {name}() reaches {self.builtin} (line {self.line}, via {path})"
        else:
            where = f"line {self.line}: {self.builtin}"
        return (f"{where} in control flow that is not uniform across the workgroup; its emulation synchronises "
                "the whole workgroup (workgroupBarrier), so every invocation must reach it together")


@dataclass
class _Function:
    node: Tree
    name: str
    params: list[str]
    param_state: dict = field(default_factory=dict)  # name -> bool or {member: bool}
    returns_non_uniform: bool = False
    needs_uniform: list = field(default_factory=list)  # NonUniformCall chains that would fail if CF is not uniform


def non_uniform_calls(module, targets: frozenset) -> list[NonUniformCall]:
    """Calls of the built-ins `targets` that are (or may be) reached in non-uniform control flow."""
    return _Analysis(module, targets).run()



_LOOPS = ("loop_statement", "for_statement", "while_statement")


def _leaves(node: Tree, loop: bool = False, switch: bool = False) -> bool:
    """Whether a statement may leave the branch it is in: a `return` or `discard` anywhere, a
    `break`, `break if` or `continue` that belongs to no loop inside the branch (and a `break` to
    no switch inside it). A loop nested in the branch takes its own breaks and continues, so the
    branch still ends where it began (WGSL §15.2: the `if` then has behaviour {Next} and control
    flow after it is as uniform as before it)."""
    for child in node.children:
        if not isinstance(child, Tree):
            continue
        kind = child.data
        if kind in ("return_statement", "discard_statement"):
            return True
        if kind in ("break_statement", "break_if_statement") and not (loop or switch):
            return True
        if kind == "continue_statement" and not loop:
            return True
        if _leaves(child, loop or kind in _LOOPS, (switch or kind == "switch_statement") and kind not in _LOOPS):
            return True
    return False

class _Analysis:
    def __init__(self, module, targets):
        self.module = module
        self.declarations = Declarations(module)
        self.targets = targets
        self.structs = {n.children[0].value: n for n in module.tree.children
                        if isinstance(n, Tree) and n.data == "struct_decl"}
        self.functions = {}
        for node in functions(module):
            params = [p.children[1].value for p in parameters(node)]
            self.functions[function_name(node)] = _Function(node, function_name(node), params)
        for fn in self.functions.values():
            if is_entry_point(fn.node):
                for param in parameters(fn.node):
                    fn.param_state[param.children[1].value] = self._entry_input(param)

    def _entry_input(self, param: Tree):
        attributes, _, type_node = param.children
        builtin = builtin_of(attributes)
        if builtin is not None:
            return builtin in NON_UNIFORM_BUILTINS
        struct = self.structs.get(token_text(type_node.children[0]))
        if struct is None:
            return True
        return {m.children[1].value: builtin_of(m.children[0]) in NON_UNIFORM_BUILTINS for m in struct.children[1:]}

    def run(self) -> list[NonUniformCall]:
        for _ in range(50):
            before = self._snapshot()
            self.violations: list[NonUniformCall] = []
            for fn in self.functions.values():
                _FunctionAnalysis(self, fn).run()
            if self._snapshot() == before:
                break
        unique = {(v.builtin, v.line, v.through): v for v in self.violations}
        return sorted(unique.values(), key=lambda v: (v.line, v.through))

    def _snapshot(self):
        return tuple((f.name, repr(sorted(f.param_state.items(), key=str)), f.returns_non_uniform,
                      tuple((c.builtin, c.line, c.through) for c in f.needs_uniform))
                     for f in self.functions.values())


def _join(a, b):
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: a.get(k, False) or b.get(k, False) for k in a.keys() | b.keys()}
    if isinstance(a, dict):
        return _join(a, {k: b for k in a})
    if isinstance(b, dict):
        return _join({k: a for k in b}, b)
    return a or b


def _any(state) -> bool:
    return any(state.values()) if isinstance(state, dict) else bool(state)


class _FunctionAnalysis:
    def __init__(self, analysis: _Analysis, fn: _Function):
        self.analysis = analysis
        self.fn = fn
        self.values: dict[str, object] = {name: fn.param_state.get(name, False) for name in fn.params}
        self.needs: list[NonUniformCall] = []

    def run(self) -> None:
        for _ in range(50):  # variables' states only grow: iterate to the fixed point
            before = repr(sorted(self.values.items(), key=str))
            self.returns = False
            self.needs = []
            self._block(self.fn.node.children[-1], False)
            if repr(sorted(self.values.items(), key=str)) == before:
                break
        self.fn.returns_non_uniform = self.returns
        self.fn.needs_uniform = self.needs

    # -- statements: each returns whether control flow after it is non-uniform ---------------
    def _block(self, block: Tree, cf: bool) -> bool:
        for child in block.children:
            if isinstance(child, Tree) and child.data != "attributes":
                cf = self._statement(child, cf)
        return cf

    def _statement(self, node: Tree, cf: bool) -> bool:
        kind = node.data
        if kind in ("let_statement", "const_statement"):
            self._assign(token_text(node.children[0]), self._expr(node.children[-1], cf) or cf)
        elif kind == "var_statement":
            name = next(c for c in node.children[0].children if isinstance(c, Token)).value
            value = self._expr(node.children[1], cf) if len(node.children) > 1 else False
            self._assign(name, value or cf)
        elif kind in ("assignment", "compound_assignment"):
            self._store(node.children[0], self._expr(node.children[-1], cf) or cf, cf)
        elif kind in ("increment", "decrement"):
            self._store(node.children[0], cf, cf)
        elif kind == "phony_assignment":
            self._expr(node.children[0], cf)
        elif kind == "call_statement":
            self._expr(node.children[0], cf)
        elif kind == "return_statement":
            if node.children:
                self.returns |= _any(self._expr(node.children[0], cf)) or cf
            return True if cf else cf
        elif kind in ("break_statement", "continue_statement"):
            return cf
        elif kind == "break_if_statement":
            return cf or _any(self._expr(node.children[0], cf))
        elif kind == "compound_statement":
            return self._block(node, cf)
        elif kind == "if_statement":
            return self._if(node, cf)
        elif kind == "switch_statement":
            selector = cf or _any(self._expr(node.children[1], cf))
            after = cf
            for clause in node.children[3:]:
                if isinstance(clause, Tree) and clause.data in ("case_clause", "default_clause"):
                    after |= self._block(clause.children[-1], selector) and selector
            return after
        elif kind in ("loop_statement", "for_statement", "while_statement"):
            return self._loop(node, cf)
        return cf

    def _if(self, node: Tree, cf: bool) -> bool:
        branch = cf or _any(self._expr(node.children[1], cf))
        exits = self._exits_non_uniformly(node.children[2], branch)
        for clause in node.children[3:]:
            if clause.data == "else_if_clause":
                branch = branch or _any(self._expr(clause.children[0], branch))
                exits |= self._exits_non_uniformly(clause.children[1], branch)
            elif clause.data == "else_clause":
                exits |= self._exits_non_uniformly(clause.children[0], branch)
        return cf or exits

    def _exits_non_uniformly(self, block: Tree, branch: bool) -> bool:
        """Analyse a branch; True if it may leave (return/break/continue) in non-uniform control flow."""
        self._block(block, branch)
        return branch and _leaves(block)

    def _loop(self, node: Tree, cf: bool) -> bool:
        body_cf = cf
        for child in node.children:
            if not isinstance(child, Tree):
                continue
            if child.data == "for_init":
                self._statement(child.children[0], cf)
            elif child.data not in ("attributes", "compound_statement", "for_update", "continuing_statement") \
                    and child.data not in _STATEMENT_KINDS:
                body_cf = body_cf or _any(self._expr(child, cf))  # the loop condition
        # A break or continue taken in non-uniform control flow makes the rest of the loop (and
        # what follows it) non-uniform: analyse the body twice so the second pass sees that.
        for _ in range(2):
            inner = body_cf
            for child in node.children:
                if not isinstance(child, Tree):
                    continue
                if child.data == "compound_statement":
                    inner = self._block(child, inner)
                elif child.data in _STATEMENT_KINDS:
                    inner = self._statement(child, inner)
                elif child.data == "continuing_statement":
                    inner = self._block(child, inner)
                elif child.data == "for_update":
                    self._statement(child.children[0], inner)
            body_cf = body_cf or inner
        # Every invocation that leaves the loop goes on from the statement after it, whatever its
        # trip count: control flow there is as uniform as before the loop (WGSL §15.2; a cooperative
        # load `for (i = lane; i < n; i += WG)` followed by a barrier is the common case), unless an
        # invocation may have returned inside it in non-uniform control flow.
        returns = any(isinstance(n, Tree) and n.data in ("return_statement", "discard_statement")
                      for n in node.iter_subtrees())
        return cf or (body_cf and returns)

    # -- stores -----------------------------------------------------------------------------
    def _assign(self, name: str, state) -> None:
        self.values[name] = _join(self.values.get(name, False), state)

    def _store(self, lhs: Tree, value, cf: bool) -> None:
        root = lhs
        while isinstance(root, Tree) and root.data in ("access", "paren", "deref"):
            if root.data == "access":
                for postfix in root.children[1:]:
                    if postfix.data == "index":
                        value = _any(value) or _any(self._expr(postfix.children[0], cf))
            root = root.children[0]
        if isinstance(root, Tree) and root.data == "name" and token_text(root.children[0]) in self.values:
            self._assign(token_text(root.children[0]), _any(value) or cf)

    # -- expressions: bool, or {member: bool} for a struct of built-ins ------------------------
    def _expr(self, node, cf: bool):
        if isinstance(node, Token):
            return False
        kind = node.data
        if kind in ("int_literal", "float_literal", "true_literal", "false_literal"):
            return False
        if kind == "name":
            return self._name(node.children[0].value) if len(node.children) == 1 else False
        if kind == "access":
            base = self._expr(node.children[0], cf)
            state = base
            for postfix in node.children[1:]:
                if postfix.data == "member" and isinstance(state, dict):
                    state = state.get(postfix.children[0].value, True)
                elif postfix.data == "index":
                    state = _any(state) or _any(self._expr(postfix.children[0], cf))
            return state
        if kind == "call":
            return self._call(node, cf)
        if kind == "template_list":
            return False
        states = [self._expr(c, cf) for c in node.children if isinstance(c, Tree)]
        return any(_any(s) for s in states)

    def _name(self, name: str):
        if name in self.values:
            return self.values[name]
        decls = self.analysis.declarations
        var = decls.variables.get(name)
        if var is None:
            return False  # constants, overrides, types
        if var.space == "uniform" or (var.space == "storage" and var.access == "read"):
            return False
        return True  # workgroup, read_write storage, private

    def _call(self, node: Tree, cf: bool):
        name = callee(node)
        args = [self._expr(a, cf) for a in arguments(node)]
        if name in self.analysis.targets:
            if cf:
                self.analysis.violations.append(NonUniformCall(name, node.meta.line))
            self.needs.append(NonUniformCall(name, node.meta.line))
            return True
        if name in self.analysis.functions:
            target = self.analysis.functions[name]
            for param, state in zip(target.params, args):
                target.param_state[param] = _join(target.param_state.get(param, False), state)
            for need in target.needs_uniform:
                chained = NonUniformCall(need.builtin, need.line, ((name, node.meta.line),) + need.through)
                if cf:
                    self.analysis.violations.append(chained)
                self.needs.append(chained)
            return target.returns_non_uniform
        if name == "workgroupUniformLoad":
            return False
        if name.startswith(_NON_UNIFORM_RESULTS):
            return True
        return any(_any(a) for a in args)


_STATEMENT_KINDS = frozenset((
    "return_statement", "if_statement", "switch_statement", "loop_statement", "for_statement", "while_statement",
    "call_statement", "var_statement", "let_statement", "const_statement", "break_statement", "continue_statement",
    "discard_statement", "assignment", "compound_assignment", "phony_assignment", "increment", "decrement",
    "empty_statement", "const_assert", "break_if_statement",
))
