"""Parse WGSL into a lark tree that keeps every node's source position: verify's one WGSL front end.

WGSL's grammar is LALR(1) once the lexer knows which '<' and '>' delimit template lists
(`array<f32, 4>`) and which compare (`a < b`). The specification settles that before parsing,
by its template-list discovery algorithm (WGSL §3.9), which this module runs on the source text:
each '<' / '>' it marks becomes a private-use character the grammar (wgsl.lark) knows as
TEMPLATE_START / TEMPLATE_END. Comments are blanked the same way (every character but line
breaks becomes a space). Both substitutions keep the text's length, so every position lark
reports is a position in the original source, and the rewriters (sanitize, subgroups) splice
their edits into the original text.

A module's interface (bindings, structs, entry points) and its resources (verify.gpu.limits) need
only its module-scope declarations. `parse_declarations` parses those alone: every function body
is blanked (length preserved) before parsing, which makes it 10 to 30 times cheaper than a full
parse (benchmarks/bench_wgsl_parse.py). WGSL has no string literals, so once comments are blank
every brace is structural and a body ends at its matching brace.

Public surface: `parse(source) -> Module`, `parse_declarations(source) -> Module`, `Module`,
`WgslSyntaxError`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from verify.errors import UsageError

TEMPLATE_START = "\ue000"
TEMPLATE_END = "\ue001"

_IDENT = re.compile(r"[^\W\d]\w+|[^\W\d_]")
# Literals are skipped whole by template discovery, so `1e-3` or `0x1p-3f` hide no operator.
_LITERAL = re.compile(
    r"0[xX][0-9a-fA-F]*\.[0-9a-fA-F]+(?:[pP][+-]?[0-9]+[fh]?)?"
    r"|0[xX][0-9a-fA-F]+\.[0-9a-fA-F]*(?:[pP][+-]?[0-9]+[fh]?)?"
    r"|0[xX][0-9a-fA-F]+[pP][+-]?[0-9]+[fh]?"
    r"|0[xX][0-9a-fA-F]+[iu]?"
    r"|[0-9]*\.[0-9]+(?:[eE][+-]?[0-9]+)?[fh]?"
    r"|[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?[fh]?"
    r"|[0-9]+[eE][+-]?[0-9]+[fh]?"
    r"|[0-9]+[iufh]?"
)


class WgslSyntaxError(UsageError):
    """WGSL that does not parse: where (1-based line and column), the line itself, and what was expected."""

    def __init__(self, message: str, line: int, column: int, source_line: str):
        self.reason = message
        self.line = line
        self.column = column
        self.source_line = source_line
        caret = " " * (column - 1) + "^"
        super().__init__(f"WGSL syntax error at line {line}, column {column}: {message}\n  {source_line}\n  {caret}")


@dataclass(frozen=True)
class Module:
    """A parsed WGSL module: its source and its tree (lark, positions propagated).

    Every `Tree` node has `meta.start_pos` / `meta.end_pos` (character offsets into `source`),
    `meta.line` and `meta.column` (1-based); every `Token` has the same as attributes.
    """

    source: str
    tree: Tree

    def text(self, node) -> str:
        """The source text of a node or token."""
        start, end = span(node)
        return self.source[start:end]

    def line(self, number: int) -> str:
        """Source line `number` (1-based), without its line break."""
        lines = self.source.splitlines()
        return lines[number - 1] if 0 < number <= len(lines) else ""


def span(node) -> tuple[int, int]:
    """(start, end) character offsets of a Tree or Token."""
    if isinstance(node, Token):
        # lark types a Token's position Optional; every token of a parse (positions propagated) has one
        assert node.start_pos is not None and node.end_pos is not None
        return node.start_pos, node.end_pos
    return node.meta.start_pos, node.meta.end_pos


def line_of(node) -> int:
    if isinstance(node, Token):
        assert node.line is not None  # as in span: a parsed token has its position
        return node.line
    return node.meta.line


def token_text(node: Tree | Token) -> str:
    """The text of `node`, a Token where the grammar (wgsl.lark) puts one (a name, an attribute's
    name, an operator): lark types every child as Tree | Token, and this says which it is."""
    assert isinstance(node, Token), f"expected a token, got {node!r}"
    return node.value


def parse(source: str) -> Module:
    """Parse a WGSL module; raise WgslSyntaxError (line, column, the line) if it does not parse."""
    if not isinstance(source, str):
        raise TypeError(f"parse() takes WGSL text (str), got {type(source).__name__}")
    masked = mark_template_lists(blank_comments(source))
    try:
        tree = _parser().parse(masked)
    except UnexpectedInput as exc:
        raise _syntax_error(source, exc) from None
    return Module(source, tree)


def parse_declarations(source: str) -> Module:
    """The module with every function body blanked: its declarations, attributes and function
    signatures at their true positions, for reading its interface. WgslSyntaxError if those do
    not parse (a syntax error inside a body is left to the full parse and the compilers)."""
    if not isinstance(source, str):
        raise TypeError(f"parse_declarations() takes WGSL text (str), got {type(source).__name__}")
    masked = mark_template_lists(blank_bodies(blank_comments(source)))
    try:
        tree = _parser().parse(masked)
    except UnexpectedInput as exc:
        raise _syntax_error(source, exc) from None
    return Module(source, tree)


@cache
def _parser() -> Lark:
    """The LALR parser of wgsl.lark. Building its tables takes about 0.3 s, in every process that
    reads WGSL (the gate's parent and each worker); `cache=True` keeps them in a file of the
    temporary folder named by the sha256 of the grammar, these options and lark's version (lark
    builds them again where the file is missing, unreadable or for another grammar): 0.02 s."""
    grammar = resources.files(__package__).joinpath("wgsl.lark").read_text()
    return Lark(grammar, parser="lalr", lexer="contextual", propagate_positions=True, maybe_placeholders=False,
                cache=True)


def _syntax_error(source: str, exc: UnexpectedInput) -> WgslSyntaxError:
    line, column = exc.line, exc.column
    if line is None or line < 1:  # lark reports end of input without a position
        line = source.count("\n") + 1
        column = len(source.rsplit("\n", 1)[-1]) + 1
    text = source.splitlines()[line - 1] if source.splitlines()[line - 1:line] else ""
    if isinstance(exc, UnexpectedToken):
        found = "end of input" if exc.token.type == "$END" else repr(_original(source, exc.token))
        expected = sorted(_describe(t) for t in exc.expected)
        shown = ", ".join(expected[:8]) + (", ..." if len(expected) > 8 else "")
        message = f"unexpected {found}; expected {shown}"
    elif isinstance(exc, UnexpectedCharacters):
        # lark declares pos_in_stream = None on UnexpectedInput; UnexpectedCharacters sets the int offset
        message = f"unexpected character {source[exc.pos_in_stream]!r}"  # type: ignore[index]
    else:
        message = "unexpected end of input"
    return WgslSyntaxError(message, line, column, text)


def _original(source: str, token: Token) -> str:
    return source[token.start_pos:token.end_pos] if token.start_pos is not None else str(token)


_TERMINAL_NAMES = {"_TEMPLATE_START": "'<' (template list)", "_TEMPLATE_END": "'>' (template list)",
                   "IDENT": "an identifier", "INT_LITERAL": "an integer", "FLOAT_LITERAL": "a float"}


def _describe(terminal: str) -> str:
    if terminal in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[terminal]
    for term in _parser().terminals:
        if term.name == terminal and term.pattern.type == "str":
            return repr(term.pattern.value)
    return terminal.lower()


# -- lexical preprocessing (length-preserving) -------------------------------------------------
def blank_comments(source: str) -> str:
    """`source` with every comment character except line breaks replaced by a space.

    Line comments end at a line break; block comments nest (WGSL §3.1). An unterminated block
    comment is a syntax error.
    """
    out = list(source)
    i, n = 0, len(source)
    while i < n:
        pair = source[i:i + 2]
        if pair == "//":
            while i < n and source[i] not in "\n\r":
                out[i] = " "
                i += 1
        elif pair == "/*":
            start, depth = i, 0
            while i < n:
                pair = source[i:i + 2]
                if pair == "/*":
                    depth += 1
                    out[i] = out[i + 1] = " "
                    i += 2
                elif pair == "*/":
                    depth -= 1
                    out[i] = out[i + 1] = " "
                    i += 2
                    if depth == 0:
                        break
                else:
                    if source[i] not in "\n\r":
                        out[i] = " "
                    i += 1
            if depth:
                line = source.count("\n", 0, start) + 1
                column = start - (source.rfind("\n", 0, start) + 1) + 1
                raise WgslSyntaxError("unterminated block comment", line, column, source.splitlines()[line - 1])
        elif source[i] == '"':  # WGSL has no strings; let the parser report it
            i += 1
        else:
            i += 1
    return "".join(out)


_FN = re.compile(r"(?<![\w])fn(?![\w])")


def blank_bodies(text: str) -> str:
    """`text` (comments blanked) with the inside of every function body replaced by spaces,
    line breaks kept: the braces stay, so the module still parses and positions are unchanged.
    An unbalanced body is left as it is, for the parser to report."""
    out, position = [], 0
    for match in _FN.finditer(text):
        if match.start() < position:
            continue
        opening = text.find("{", match.end())
        if opening < 0:
            break
        depth, end = 0, opening
        while end < len(text):
            if text[end] == "{":
                depth += 1
            elif text[end] == "}":
                depth -= 1
                if depth == 0:
                    break
            end += 1
        if depth:
            break
        out.append(text[position:opening + 1])
        out.append(_BLANK.sub(" ", text[opening + 1:end]))
        position = end
    out.append(text[position:])
    return "".join(out)


_BLANK = re.compile(r"[^\n\r]")


def mark_template_lists(text: str) -> str:
    """Replace the '<' and '>' that delimit template lists by TEMPLATE_START / TEMPLATE_END.

    The WGSL specification's template-list discovery (§3.9.1), on comment-free text: a '<'
    right after an identifier opens a candidate; a '>' at the candidate's nesting depth closes
    it; '(' and '[' nest; ')' and ']' drop candidates opened inside; '=', ';', '{' and ':' end
    every candidate (expressions in template lists contain none of them); '&&' and '||' end
    the candidates at the current depth; '<<' and '<=' after an identifier are operators.
    """
    out = list(text)
    pending: list[tuple[int, int]] = []  # (position of '<', nesting depth)
    depth, i, n = 0, 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        literal = _LITERAL.match(text, i) if c.isdigit() or (c == "." and text[i + 1:i + 2].isdigit()) else None
        if literal:
            i = literal.end()
            continue
        ident = _IDENT.match(text, i)
        if ident:
            i = ident.end()
            while i < n and text[i].isspace():
                i += 1
            if text.startswith("<", i):
                pending.append((i, depth))
                i += 1
                if text.startswith(("<", "="), i):
                    pending.pop()
                    i += 1
            continue
        if c == ">":
            if pending and pending[-1][1] == depth:
                start, _ = pending.pop()
                out[start], out[i] = TEMPLATE_START, TEMPLATE_END
                i += 1
            else:
                i += 2 if text.startswith("=", i + 1) else 1
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            while pending and pending[-1][1] >= depth:
                pending.pop()
            depth = max(0, depth - 1)
        elif c == "!":
            i += 2 if text.startswith("=", i + 1) else 1
            continue
        elif c == "=":
            if text.startswith("=", i + 1):
                i += 2
                continue
            depth, pending = 0, []
        elif c in ";{:":
            depth, pending = 0, []
        elif text.startswith(("&&", "||"), i):
            while pending and pending[-1][1] >= depth:
                pending.pop()
            i += 2
            continue
        i += 1
    return "".join(out)
