"""The report's plots, kept by what they are drawn from, so that each is drawn once.

A run's report is rendered many times: refreshed while the run goes on, rendered whole at its
end, and again by the next run, whose known findings mostly draw the same examples again.
matplotlib takes 0.1-0.15 s a figure, and a ci gate's 84 known findings draw 352 figures: most
of a `--reuse` run that re-checks one kernel was spent drawing them again. Reading a kept SVG
back takes well under a millisecond.

A plot is named by the sha256 of what it is drawn from: which plot, its data (as JSON),
matplotlib's version and the source of plots.py, so that a change to the data or to how plots
are drawn draws it again. Its SVG is kept in memory for the process and as a file in
$VERIFY_CACHE/plots (else ~/.cache/verify/plots) for later runs; the files are a cache and
nothing more: one that cannot be read or written is drawn again, and the oldest go when there
are more than `KEPT_FILES`.

matplotlib names the clip paths and markers inside an SVG by a salted hash, and several SVGs
inline in one page must not share a name. A kept plot is drawn with its own name as the salt,
and its ids get a suffix from the page's salt each time it is placed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import OrderedDict
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import matplotlib

from verify.report import plots

#: Plots kept on disk at most; beyond this the least recently used go (a few 10 kB each).
KEPT_FILES = 4096
#: Plots kept in memory at most (one process renders one run's report, again and again).
KEPT_IN_MEMORY = 2048

_memory: OrderedDict[str, str] = OrderedDict()
_pruned = False
_ID = re.compile(r'\bid="([^"]+)"')


def kept_svg(draw: Callable[..., str], salt: str, **data) -> str:
    """`draw(**data, salt=...)` as inline SVG whose ids are salted by `salt`, drawn only when no
    plot of the same name is kept."""
    name = _name(draw.__name__, data)
    svg = _memory.get(name)
    if svg is None:
        svg = _read(name)
        if svg is None:
            svg = draw(**data, salt=name)
            _write(name, svg)
        _memory[name] = svg
        if len(_memory) > KEPT_IN_MEMORY:
            _memory.popitem(last=False)
    else:
        _memory.move_to_end(name)
    return _salted(svg, salt)


def forget() -> None:
    """Empty the in-memory store (the files stay)."""
    _memory.clear()


def folder() -> Path:
    """Where plots are kept between runs: $VERIFY_CACHE/plots, else $XDG_CACHE_HOME/verify/plots."""
    base = os.environ.get("VERIFY_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "verify"
    return Path(base) / "plots"


@lru_cache(maxsize=1)
def _drawing_code() -> str:
    return hashlib.sha256(Path(plots.__file__).read_bytes()).hexdigest() + matplotlib.__version__


def _name(plot: str, data: dict) -> str:
    text = json.dumps({"plot": plot, "data": data, "code": _drawing_code()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _salted(svg: str, salt: str) -> str:
    """`svg` with every id (and every reference to one) suffixed by a hash of `salt`."""
    ids = sorted(set(_ID.findall(svg)), key=len, reverse=True)
    if not ids:
        return svg
    suffix = "-" + hashlib.sha256(salt.encode()).hexdigest()[:8]
    return re.sub("|".join(map(re.escape, ids)), lambda match: match.group(0) + suffix, svg)


def _read(name: str) -> str | None:
    path = folder() / f"{name}.svg"
    try:
        svg = path.read_text()
        os.utime(path)  # recently used: the last to go
    except (OSError, UnicodeDecodeError):
        return None
    return svg if svg.startswith("<svg") and svg.endswith("</svg>") else None


def _write(name: str, svg: str) -> None:
    """Keep `svg` as a file (written then renamed: a reader never sees half of one); a folder
    that cannot be written only means plots are drawn again next time."""
    global _pruned
    where = folder()
    try:
        where.mkdir(parents=True, exist_ok=True)
        partial = where / f".{name}.{os.getpid()}.tmp"
        partial.write_text(svg)
        os.replace(partial, where / f"{name}.svg")
        if not _pruned:
            _pruned = True
            _prune(where)
    except OSError:
        pass


def _prune(where: Path) -> None:
    files = []
    for entry in os.scandir(where):
        try:
            files.append((entry.stat().st_mtime, entry.path))
        except OSError:
            continue
    for _, path in sorted(files)[: max(0, len(files) - KEPT_FILES)]:
        try:
            os.unlink(path)
        except OSError:
            pass
