"""ggml-webgpu's WGSL preprocessor, re-implemented: the same text out for the same template and defines.

ggml-webgpu instantiates its shaders in two steps, and this module does both as they are written
in the pinned release (verify.sources.llamacpp.source.VERSION):

1. At build time, `wgsl-shaders/embed_wgsl.py` (`expand_includes`) replaces every line
   `#include "file"` by that file's text, recursively, and embeds each `*.wgsl` as a C string
   (`wgsl_<name>`). No other directive is touched then: `expand_includes` here.
2. At run time, `pre_wgsl::Preprocessor::preprocess(text, defines)` (`pre_wgsl.hpp`) runs the
   C-like directives over that string with the defines the shader library chose for a tensor
   shape (verify.sources.llamacpp.selection): `Preprocessor.preprocess` here.

The run-time semantics, each from `pre_wgsl.hpp` (line numbers of the pinned file):

- A line whose trimmed text starts with `#` is a directive; a directive line ending in `\\`
  continues on the next line (L615-628). Any other line is kept, in an active region only, with
  every macro name in it replaced (L633-642).
- Expansion (L67-130) cuts the line into runs of `[A-Za-z0-9_]` and single other characters;
  a run that names a macro becomes the macro's value, itself expanded (an empty value expands to
  nothing); a macro met again while it is being expanded is an error ("Recursive macro").
  There are no function-like macros, and comments and string-like text are expanded too.
- `#define NAME VALUE` (L646-658): NAME is the next whitespace-separated word, VALUE the trimmed
  rest of the line. A name given by the caller's defines ("predefined") is never redefined nor
  undefined by the text (L693, L708): the template's own defaults (`#define WG_SIZE 64`) give
  way to the shader library's choices.
- `#ifdef`, `#ifndef`, `#if EXPR`, `#elif EXPR`, `#else`, `#endif` (L715-797) keep a stack of
  (parent active, active, taken); an `#if`/`#elif` inside an inactive region is not evaluated.
- Expressions (L135-440): integers (decimal digits only), `defined(NAME)` and `defined NAME`
  (1 if NAME is a macro, even an empty one), other identifiers (0 if undefined, 1 if empty,
  else their value evaluated as an expression), `! - +` unary, `* / %` (by 0 gives 0),
  `+ -`, `<< >>`, `< > <= >=`, `== !=`, `&&`, `||`, parentheses, on C `int`s. A character
  the lexer does not know ends the expression (L196-198).
- An unknown directive, `#elif`/`#else`/`#endif` without `#if`, and an unclosed `#if` are errors
  (L802, L750, L776, L795, L647).

Errors are `PreprocessError` with the message the C++ throws. The output is each kept line
followed by a newline, as the C++ writes it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass


class PreprocessError(ValueError):
    """What pre_wgsl's Preprocessor throws (std::runtime_error), with its message."""


# -- step 1: build time ------------------------------------------------------------------------------
_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"\s*$', re.MULTILINE)


def expand_includes(text: str, read: Callable[[str], str]) -> str:
    """`text` with every `#include "file"` line replaced by `read(file)`, itself expanded: what
    embed_wgsl.py's `expand_includes` (L6-23) embeds as `wgsl_<name>`. `read` raises
    FileNotFoundError for a file that is not there, as embed_wgsl.py does."""
    return _INCLUDE.sub(lambda match: expand_includes(read(match.group(1)), read), text)


# -- step 2: run time ------------------------------------------------------------------------------
def _is_space(char: str) -> bool:
    # std::isspace in the "C" locale
    return char in " \t\n\v\f\r"


def _trim(text: str) -> str:
    start, end = 0, len(text)
    while start < end and _is_space(text[start]):
        start += 1
    while end > start and _is_space(text[end - 1]):
        end -= 1
    return text[start:end]


def _is_ident_char(char: str) -> bool:
    return char.isascii() and (char.isalnum() or char == "_")


def _int32(value: int) -> int:
    """C int arithmetic wraps (in practice) modulo 2^32."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def _c_div(a: int, b: int) -> int:
    if b == 0:
        return 0
    quotient = abs(a) // abs(b)
    return _int32(quotient if (a >= 0) == (b >= 0) else -quotient)


def _c_mod(a: int, b: int) -> int:
    if b == 0:
        return 0
    return _int32(a - _c_div(a, b) * b)


def _macro_pair(definition: str) -> tuple[str, str]:
    """`NAME=VALUE` or `NAME` as the shader library passes defines (buildMacros, L527-552)."""
    if "=" in definition:
        name, value = definition.split("=", 1)
        return _trim(name), _trim(value)
    return _trim(definition), ""


def expand_macros(line: str, macros: dict[str, str]) -> str:
    """One line with its macro names replaced, recursively (expandMacrosRecursive, L67-130)."""
    return _expand(line, macros, set())


def _expand(line: str, macros: dict[str, str], visiting: set[str]) -> str:
    out, i, n = [], 0, len(line)
    while i < n:
        if _is_ident_char(line[i]):
            start = i
            while i < n and _is_ident_char(line[i]):
                i += 1
            token = line[start:i]
            out.append(_expand_value(token, macros, visiting) if token in macros else token)
        else:
            out.append(line[i])
            i += 1
    return "".join(out)


def _expand_value(name: str, macros: dict[str, str], visiting: set[str]) -> str:
    if name in visiting:
        raise PreprocessError(f"Recursive macro: {name}")
    value = macros[name]
    if not value:
        return ""
    visiting.add(name)
    try:
        return _expand(value, macros, visiting)
    finally:
        visiting.discard(name)


@dataclass(frozen=True)
class _Token:
    kind: str  # END, IDENT, NUMBER, OP, LPAREN, RPAREN
    text: str


_TWO_CHAR_OPS = ("==", "!=", "<=", ">=", "&&", "||", "<<", ">>")


def _tokens(expression: str) -> list[_Token]:
    """ExprLexer (L135-210): a character it does not know ends the expression."""
    found, pos, n = [], 0, len(expression)
    while True:
        while pos < n and _is_space(expression[pos]):
            pos += 1
        if pos >= n:
            found.append(_Token("END", ""))
            return found
        char = expression[pos]
        if char.isascii() and char.isdigit():
            start = pos
            while pos < n and expression[pos].isascii() and expression[pos].isdigit():
                pos += 1
            found.append(_Token("NUMBER", expression[start:pos]))
        elif char.isascii() and (char.isalpha() or char == "_"):
            start = pos
            while pos < n and _is_ident_char(expression[pos]):
                pos += 1
            found.append(_Token("IDENT", expression[start:pos]))
        elif char in "()":
            pos += 1
            found.append(_Token("LPAREN" if char == "(" else "RPAREN", char))
        elif expression[pos:pos + 2] in _TWO_CHAR_OPS:
            found.append(_Token("OP", expression[pos:pos + 2]))
            pos += 2
        elif char in "+-*/%<>!":
            pos += 1
            found.append(_Token("OP", char))
        else:
            found.append(_Token("END", ""))
            return found


class _Expression:
    """ExprParser (L215-440): recursive descent over C ints, evaluating as it parses."""

    _LEVELS = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("<<", ">>"), ("+", "-"), ("*", "/", "%"))

    def __init__(self, text: str, macros: dict[str, str], visiting: set[str]):
        self.tokens, self.at = _tokens(text), 0
        self.macros, self.visiting = macros, visiting

    @property
    def token(self) -> _Token:
        return self.tokens[min(self.at, len(self.tokens) - 1)]

    def advance(self) -> None:
        if self.token.kind != "END":
            self.at += 1

    def accept_op(self, op: str) -> bool:
        if self.token.kind == "OP" and self.token.text == op:
            self.advance()
            return True
        return False

    def accept(self, kind: str) -> bool:
        if self.token.kind == kind:
            self.advance()
            return True
        return False

    def parse(self, level: int = 0) -> int:
        if level == len(self._LEVELS):
            return self.unary()
        value = self.parse(level + 1)
        while True:
            op = next((op for op in self._LEVELS[level] if self.accept_op(op)), None)
            if op is None:
                return value
            value = self.apply(op, value, self.parse(level + 1))

    @staticmethod
    def apply(op: str, a: int, b: int) -> int:
        if op == "||":
            return int(bool(a) or bool(b))
        if op == "&&":
            return int(bool(a) and bool(b))
        comparisons = {"==": a == b, "!=": a != b, "<": a < b, ">": a > b, "<=": a <= b, ">=": a >= b}
        if op in comparisons:
            return int(comparisons[op])
        if op == "<<":
            return _int32(a << (b & 31))
        if op == ">>":
            return a >> (b & 31)
        if op == "+":
            return _int32(a + b)
        if op == "-":
            return _int32(a - b)
        if op == "*":
            return _int32(a * b)
        return _c_div(a, b) if op == "/" else _c_mod(a, b)

    def unary(self) -> int:
        if self.accept_op("!"):
            return int(not self.unary())
        if self.accept_op("-"):
            return _int32(-self.unary())
        if self.accept_op("+"):
            return self.unary()
        return self.primary()

    def primary(self) -> int:
        if self.accept("LPAREN"):
            value = self.parse()
            if not self.accept("RPAREN"):
                raise PreprocessError("missing ')'")
            return value
        token = self.token
        if token.kind == "NUMBER":
            self.advance()
            return _int32(int(token.text))
        if token.kind == "IDENT" and token.text == "defined":
            self.advance()
            if self.accept("LPAREN"):
                if self.token.kind != "IDENT":
                    raise PreprocessError("expected identifier in defined()")
                name = self.token.text
                self.advance()
                if not self.accept("RPAREN"):
                    raise PreprocessError("missing ) in defined()")
                return int(name in self.macros)
            if self.token.kind != "IDENT":
                raise PreprocessError("expected identifier in defined NAME")
            name = self.token.text
            self.advance()
            return int(name in self.macros)
        if token.kind == "IDENT":
            self.advance()
            if token.text not in self.macros:
                return 0
            body = self.macros[token.text]
            if not body:
                return 1
            if token.text in self.visiting:
                raise PreprocessError(f"Recursive macro: {token.text}")
            self.visiting.add(token.text)
            try:
                return _Expression(body, self.macros, self.visiting).parse()
            finally:
                self.visiting.discard(token.text)
        return 0


def evaluate(expression: str, macros: dict[str, str]) -> int:
    """The value of an `#if` expression under `macros` (ExprParser::parse)."""
    return _Expression(expression, macros, set()).parse()


@dataclass
class _Condition:
    parent_active: bool
    active: bool
    taken: bool


def _lines(text: str) -> list[str]:
    """The lines std::getline reads: a final newline ends the last line, it starts no new one."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


class Preprocessor:
    """pre_wgsl::Preprocessor with default Options (no global macros), as ggml-webgpu's shader
    library constructs it; `include` resolves `#include "file"` where a text still has one (the
    embedded shaders do not: embed_wgsl.py expanded them)."""

    def __init__(self, include: Callable[[str], str] | None = None):
        self.include = include

    def preprocess(self, text: str, defines: Iterable[str] = ()) -> str:
        """`text` instantiated with `defines` (["NAME", "NAME=VALUE", ...]): Preprocessor::preprocess."""
        macros: dict[str, str] = {}
        predefined: set[str] = set()
        for definition in defines:
            name, value = _macro_pair(definition)
            macros[name] = value
            predefined.add(name)
        return self._process(text, macros, frozenset(predefined), set())

    def _process(self, text: str, macros: dict, predefined: frozenset, including: set) -> str:
        conditions: list[_Condition] = []
        out: list[str] = []
        lines = iter(_lines(text))
        for line in lines:
            logical = line
            if _trim(logical).startswith("#"):
                while _continues(logical):
                    logical = _strip_continuation(logical)
                    following = next(lines, None)
                    if following is None:
                        break
                    logical += "\n" + following
            stripped = _trim(logical)
            if stripped.startswith("#"):
                self._directive(stripped, out, macros, predefined, conditions, including)
            elif not conditions or conditions[-1].active:
                out.append(expand_macros(logical, macros) + "\n")
        if conditions:
            raise PreprocessError("Unclosed #if directive")
        return "".join(out)

    def _directive(self, directive: str, out: list, macros: dict, predefined: frozenset,
                   conditions: list[_Condition], including: set) -> None:
        body = directive[1:]
        words = body.split(None, 1)
        command = words[0] if words else ""
        rest = words[1] if len(words) > 1 else ""
        active = not conditions or conditions[-1].active
        if command == "include":
            if not active:
                return
            name = rest.split(None, 1)[0] if rest.split() else ""
            if len(name) >= 2 and name[0] == '"' and name[-1] == '"':
                name = name[1:-1]
            if name in including:
                raise PreprocessError(f"Recursive include: {name}")
            if self.include is None:
                raise PreprocessError(f"Could not open file: {name}")
            including.add(name)
            out.append(self._process(self.include(name), macros, predefined, including))
            including.discard(name)
            return
        if command in ("define", "undef"):
            if not active:
                return
            parts = rest.split(None, 1)
            name = parts[0] if parts else ""
            if name in predefined:
                return
            if command == "define":
                macros[name] = _trim(parts[1]) if len(parts) > 1 else ""
            else:
                macros.pop(name, None)
            return
        if command in ("ifdef", "ifndef"):
            parts = rest.split(None, 1)
            defined = (parts[0] if parts else "") in macros
            value = defined if command == "ifdef" else not defined
            conditions.append(_Condition(active, active and value, active and value))
            return
        if command == "if":
            value = active and evaluate(_trim(rest), macros) != 0
            conditions.append(_Condition(active, value, value))
            return
        if command == "elif":
            if not conditions:
                raise PreprocessError("#elif without #if")
            condition = conditions[-1]
            if not condition.parent_active or condition.taken:
                condition.active = False
                return
            condition.active = evaluate(_trim(rest), macros) != 0
            condition.taken = condition.taken or condition.active
            return
        if command == "else":
            if not conditions:
                raise PreprocessError("#else without #if")
            condition = conditions[-1]
            if not condition.parent_active:
                condition.active = False
            else:
                condition.active, condition.taken = not condition.taken, True
            return
        if command == "endif":
            if not conditions:
                raise PreprocessError("#endif without #if")
            conditions.pop()
            return
        raise PreprocessError(f"Unknown directive: #{command}")


def _continues(line: str) -> bool:
    return line.rstrip(" \t\n\v\f\r").endswith("\\")


def _strip_continuation(line: str) -> str:
    stripped = line.rstrip(" \t\n\v\f\r")
    return stripped[:-1] if stripped.endswith("\\") else line


_DEFINE_READ = re.compile(r"#\s*(?:ifdef|ifndef)\s+(\w+)|defined\s*\(?\s*(\w+)")


def defines_read(text: str) -> set[str]:
    """Every name a template tests with `#ifdef`, `#ifndef` or `defined(...)`: what the test of
    every rule's defines compares with (a template that reads a define no rule sets, or a rule
    that sets one no template reads, is a port that drifted from the C++)."""
    return {a or b for a, b in _DEFINE_READ.findall(text)}
