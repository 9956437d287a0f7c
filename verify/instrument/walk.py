"""Functions of a module: their statements with the names in scope at each, and the built-in
inputs of entry points.

A rewrite asks, for an expression, what a name means there: a module-scope variable, or a local
that shadows it, and of which type. `statement_scopes` answers it once per function: each
statement gets the scope it runs in (its own declaration is visible only to later statements).
Both rewrites also need an entry point's invocation ids: `add_entry_inputs` finds them among the
parameters (or members of an input struct) and adds the missing ones.
"""

from __future__ import annotations

from lark import Token, Tree

from verify.instrument.infer import Scope, abstract_default, type_of
from verify.wgsl.declarations import Declarations
from verify.wgsl.parser import token_text

#: Nodes that are statements (the rest are expressions, clauses or declarations' parts).
STATEMENTS = frozenset((
    "compound_statement", "return_statement", "if_statement", "switch_statement", "loop_statement",
    "for_statement", "while_statement", "call_statement", "var_statement", "let_statement",
    "const_statement", "break_statement", "continue_statement", "discard_statement", "assignment",
    "compound_assignment", "phony_assignment", "increment", "decrement", "empty_statement", "const_assert",
    "break_if_statement",
))
_DECLARATIONS = frozenset(("var_statement", "let_statement", "const_statement"))
#: Statements that repeat their body until something exits it (`loop`, `for`, `while`).
LOOPS = frozenset(("loop_statement", "for_statement", "while_statement"))


def functions(module) -> list[Tree]:
    return [n for n in module.tree.children if isinstance(n, Tree) and n.data == "function_decl"]


def function_name(function: Tree) -> str:
    return next(c for c in function.children if isinstance(c, Token)).value


def parameters(function: Tree) -> list[Tree]:
    params = next((c for c in function.children if isinstance(c, Tree) and c.data == "param_list"), None)
    return list(params.children) if params is not None else []


def body(function: Tree) -> Tree:
    return function.children[-1]


def loop_body_start(loop: Tree, code: str) -> int:
    """The offset just past the `{` that opens the body of `loop` (a LOOPS statement), in `code`:
    the module's source with its comments blanked (verify.wgsl.blank_comments). Nothing between a
    loop's start and its body's brace can hold a brace (attributes, a `for` header and a `while`
    condition are expressions), so the first brace after the start is the body's."""
    return code.index("{", loop.meta.start_pos) + 1


def is_entry_point(function: Tree) -> bool:
    attributes = function.children[0]
    return any(isinstance(a, Tree) and a.data == "attribute" and token_text(a.children[0]) == "compute"
               for a in attributes.children)


def statement_scopes(function: Tree, declarations: Declarations) -> dict[int, Scope]:
    """id(statement node) -> the Scope it runs in, for every statement of `function`."""
    scope = Scope(declarations)
    for param in parameters(function):
        name, type_node = param.children[1], param.children[2]
        scope = scope.child()
        scope.declare(token_text(name), declarations.resolve(type_node))
    scopes: dict[int, Scope] = {}
    _block(body(function), scope, scopes)
    return scopes


def declared(statement: Tree, scope: Scope) -> tuple[str, object]:
    """(name, type) a let/var/const statement declares."""
    if statement.data == "var_statement":
        decl = statement.children[0]
        name = next(c for c in decl.children if isinstance(c, Token)).value
        type_node = next((c for c in decl.children if isinstance(c, Tree) and c.data == "type_spec"), None)
        initializer = statement.children[1] if len(statement.children) > 1 else None
    else:
        name = token_text(statement.children[0])
        type_node = next((c for c in statement.children[1:-1] if isinstance(c, Tree) and c.data == "type_spec"), None)
        initializer = statement.children[-1]
    if type_node is not None:
        return name, scope.declarations.resolve(type_node)
    return name, abstract_default(type_of(initializer, scope))


def _block(block: Tree, scope: Scope, scopes: dict) -> None:
    scopes[id(block)] = scope
    inner = scope.child()
    for child in block.children:
        if isinstance(child, Tree) and child.data in STATEMENTS | {"continuing_statement"}:
            inner = _statement(child, inner, scopes)


def _statement(node: Tree, scope: Scope, scopes: dict) -> Scope:
    """Record `node` and everything in it; the scope after it (with its declaration, if any)."""
    scopes[id(node)] = scope
    kind = node.data
    if kind in _DECLARATIONS:
        name, type_ = declared(node, scope)
        after = scope.child()
        after.declare(name, type_)
        return after
    if kind == "for_statement":
        inner = scope.child()
        for child in node.children:
            if isinstance(child, Tree) and child.data == "for_init":
                inner = _statement(child.children[0], inner, scopes)
            elif isinstance(child, Tree) and child.data == "for_update":
                _statement(child.children[0], inner, scopes)
            elif isinstance(child, Tree) and child.data == "compound_statement":
                _block(child, inner, scopes)
        return scope
    if kind == "loop_statement":
        # The continuing block sees the loop body's declarations (WGSL §9.4.5).
        inner = scope.child()
        for child in node.children:
            if isinstance(child, Tree) and child.data in STATEMENTS:
                inner = _statement(child, inner, scopes)
            elif isinstance(child, Tree) and child.data == "continuing_statement":
                scopes[id(child)] = inner
                _block(child, inner, scopes)
        return scope
    for child in node.children:
        if isinstance(child, Tree):
            _nested(child, scope, scopes)
    return scope


def _nested(node: Tree, scope: Scope, scopes: dict) -> None:
    if node.data == "compound_statement":
        _block(node, scope, scopes)
    elif node.data in ("else_if_clause", "else_clause", "case_clause", "default_clause"):
        for child in node.children:
            if isinstance(child, Tree) and child.data == "compound_statement":
                _block(child, scope, scopes)


#: The built-in inputs an instrumented entry point needs, with their types.
_IDENTITY_BUILTINS = {"local_invocation_index": "u32", "workgroup_id": "vec3<u32>", "num_workgroups": "vec3<u32>"}


def builtin_of(attributes: Tree) -> str | None:
    """The name in a `@builtin(name)` attribute among `attributes`, if any."""
    for attribute in attributes.children:
        if attribute.data == "attribute" and token_text(attribute.children[0]) == "builtin":
            return token_text(attribute.children[1].children[0].children[0])
    return None


def entry_inputs(function: Tree, module) -> dict[str, str]:
    """builtin name -> the WGSL expression reading it in an entry point (`lanes.local` when a
    struct parameter carries it)."""
    structs = {token_text(n.children[0]): n for n in module.tree.children
               if isinstance(n, Tree) and n.data == "struct_decl"}
    found = {}
    for param in parameters(function):
        attributes, name, type_node = param.children
        builtin = builtin_of(attributes)
        if builtin is not None:
            found[builtin] = token_text(name)
        elif token_text(type_node.children[0]) in structs:
            for member in structs[token_text(type_node.children[0])].children[1:]:
                builtin = builtin_of(member.children[0])
                if builtin is not None:
                    found[builtin] = f"{token_text(name)}.{token_text(member.children[1])}"
    return found


def add_entry_inputs(function: Tree, module, rewriter, wanted: dict[str, str], prefix: str) -> dict[str, str]:
    """Make the built-ins in `wanted` (name -> type) readable in entry point `function`, adding
    parameters `<prefix><name>` for those it does not declare; name -> expression."""
    found = entry_inputs(function, module)
    missing = [b for b in wanted if b not in found]
    if missing:
        text = ", ".join(f"@builtin({b}) {prefix}{b}: {wanted[b]}" for b in missing)
        params = next((c for c in function.children if isinstance(c, Tree) and c.data == "param_list"), None)
        if params is not None:
            rewriter.insert(params.meta.end_pos, ", " + text)
        else:
            name = next(c for c in function.children if isinstance(c, Token))
            rewriter.insert(module.source.index("(", name.end_pos) + 1, text)
        found.update({b: f"{prefix}{b}" for b in missing})
    return found


def entry_builtins(function: Tree, module, rewriter, prefix: str) -> tuple[str, str, str] | None:
    """(lane, workgroup id, workgroup count) expressions of a compute entry point, or None."""
    if not is_entry_point(function):
        return None
    found = add_entry_inputs(function, module, rewriter, _IDENTITY_BUILTINS, prefix)
    return found["local_invocation_index"], found["workgroup_id"], found["num_workgroups"]
