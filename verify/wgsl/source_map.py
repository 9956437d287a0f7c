"""Where a line of a specialised module comes from: the kernel's own .wgsl file, and its line there.

A kernel's module is a header (its config as constants and aliases) followed by one or more body
files (verify.kernels.specialize.body). Each body starts with a marker line,
`// source: verify_rmsnorm/rmsnorm.wgsl`, so a message about line 36 of the module can also name
the line of the file the kernel author edits. The marker is a comment: compilers ignore it, and a
module printed by `verify show`, edited and checked with `--wgsl` keeps it.
"""

from __future__ import annotations

import re

#: The marker a body file starts with in a module.
MARKER = "// source: "
_MARKER = re.compile(r"^// source: (\S+)$")


def marker(path: str) -> str:
    """The marker line of a body file shipped at `path` (package folders and file name)."""
    return f"{MARKER}{path}"


def source_location(text: str, line: int) -> str | None:
    """"FILE:LINE" of module line `line` (1-based) in the body file it comes from, or None where
    the line is not inside a marked body (the header, or a module with no markers)."""
    lines = text.splitlines()
    for number in range(min(line, len(lines)), 0, -1):
        found = _MARKER.match(lines[number - 1])
        if found:
            return f"{found[1]}:{line - number}" if line > number else None
    return None
