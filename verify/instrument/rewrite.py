"""Rewrite a parsed module by replacing nodes and inserting text, keeping everything else as written.

A rewrite never prints the module from its tree: it copies the source, and where a node has a
replacement it emits the replacement instead, which may itself splice in the rewritten text of
the node's children (an access inside the index of another access). Comments, layout and line
numbers of untouched code stay exactly as they were; inserted text that must not move lines
(entry-point prologues) is written on the line it is inserted at, and new declarations go at
the end of the module, so a line of the rewritten module is the same line of the original.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable

from lark import Token, Tree

from verify.wgsl.parser import Module, span


class Rewriter:
    """Edits to one module: `replace(node, make)` and `insert(position, text)`, then `text()`."""

    def __init__(self, module: Module):
        self.module = module
        self._replacements: dict[int, Callable[[Rewriter], str]] = {}
        self._insertions: dict[int, list[str]] = {}
        self._erased: set[int] = set()
        self._appended: list[str] = []
        self._edits: list[int] | None = None  # positions of insertions and erasures, sorted (None: to sort)

    def replace(self, node, make: Callable[[Rewriter], str] | str) -> None:
        """Emit `make(self)` (or the string `make`) in place of `node`."""
        if callable(make):
            self._replacements[id(node)] = make
        else:
            text = make
            self._replacements[id(node)] = lambda _rewriter: text

    def insert(self, position: int, text: str) -> None:
        """Emit `text` just before source offset `position` (after earlier insertions there)."""
        self._insertions.setdefault(position, []).append(text)
        self._edits = None

    def erase(self, position: int) -> None:
        """Drop the source character at `position` (punctuation between nodes, e.g. a list's comma)."""
        self._erased.add(position)
        self._edits = None

    def append(self, text: str) -> None:
        """Emit `text` after the end of the module."""
        self._appended.append(text)

    def emit(self, node) -> str:
        """The rewritten text of `node` (a Tree or Token)."""
        if id(node) in self._replacements:
            return self._replacements[id(node)](self)
        if isinstance(node, Token):
            return self.module.source[node.start_pos:node.end_pos]
        start, end = span(node)
        return self._splice(node, start, end)

    def original(self, node) -> str:
        return self.module.text(node)

    def text(self) -> str:
        """The whole rewritten module."""
        tree = self.module.tree
        body = self._splice(tree, 0, len(self.module.source))
        tail = "".join(self._insertions.get(len(self.module.source), []))
        return body + tail + "".join(self._appended)

    def _splice(self, node: Tree, start: int, end: int) -> str:
        pieces, position = [], start
        for child in node.children:
            if not _positioned(child):
                continue
            child_start, child_end = span(child)
            pieces.append(self._raw(position, child_start))
            pieces.append(self.emit(child))
            position = child_end
        pieces.append(self._raw(position, end))
        return "".join(pieces)

    def _raw(self, start: int, end: int) -> str:
        """Source text [start, end) with the insertions and erasures that fall in it."""
        if self._edits is None:
            self._edits = sorted(self._insertions.keys() | self._erased)
        edits = self._edits[bisect_left(self._edits, start):bisect_left(self._edits, end)]
        if not edits:
            return self.module.source[start:end]
        pieces, position = [], start
        for at in edits:
            pieces.append(self.module.source[position:at])
            pieces.extend(self._insertions.get(at, []))
            position = at + 1 if at in self._erased else at
            if at in self._erased:
                continue
        pieces.append(self.module.source[position:end])
        return "".join(pieces)


def _positioned(node) -> bool:
    if isinstance(node, Token):
        return node.start_pos is not None
    return not node.meta.empty
