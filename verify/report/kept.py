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

Plots not kept yet can be drawn by several processes at once (`processes`): the last render of
a gate, when its workers are done, and `verify report` use every core, so the known findings of
a first run cost seconds rather than a minute. Those processes are spawned, not forked (the gate
has threads running), and end with the render.

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
from collections.abc import Callable, Sequence
from concurrent.futures import BrokenExecutor, ProcessPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import version
from multiprocessing import get_context
from pathlib import Path

from verify._cache import cache_dir
from verify.report import plots

#: Plots kept on disk at most; beyond this the least recently used go (a few 10 kB each).
KEPT_FILES = 4096
#: Plots kept in memory at most (one process renders one run's report, again and again).
KEPT_IN_MEMORY = 2048

#: Below this many plots to draw, one process draws them (starting one costs about a second).
PARALLEL_FROM = 16
#: Plots per drawing process at least, so each process's start is paid for.
PLOTS_PER_PROCESS = 8

_memory: OrderedDict[str, str] = OrderedDict()
_pruned = False
_ID = re.compile(r'\bid="([^"]+)"')


@dataclass(frozen=True)
class PlotRequest:
    """One plot of a page: `draw` (a function of plots.py) called with `data` and a salt;
    `salt` makes its ids unique in the page."""

    draw: Callable[..., str]
    salt: str
    data: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        return _name(self.draw.__name__, self.data)


def kept_svg(draw: Callable[..., str], salt: str, **data) -> str:
    """`draw(**data, salt=...)` as inline SVG whose ids are salted by `salt`, drawn only when no
    plot of the same name is kept; an exception of `draw` is raised."""
    (svg,) = kept_svgs([PlotRequest(draw, salt, data)])
    if isinstance(svg, Exception):
        raise svg
    return svg


def kept_svgs(requests: Sequence[PlotRequest], processes: int = 1) -> list[str | Exception]:
    """The SVG of each request (or the exception drawing it raised), each distinct plot drawn at
    most once, those not kept drawn by up to `processes` processes."""
    names = [request.name for request in requests]
    found: dict[str, str | Exception] = {}
    missing: dict[str, PlotRequest] = {}
    for name, request in zip(names, requests):
        svg: str | Exception | None = _memory.get(name) or _read(name)
        if svg is None:
            missing.setdefault(name, request)
        else:
            found[name] = svg
    found.update(_draw_all(missing, processes))
    for name in dict.fromkeys(names):
        svg = found[name]
        if isinstance(svg, str):
            if name in missing:
                _write(name, svg)
            _memory[name] = svg
            _memory.move_to_end(name)
    while len(_memory) > KEPT_IN_MEMORY:
        _memory.popitem(last=False)
    return [drawn if isinstance(drawn := found[name], Exception) else _salted(drawn, request.salt)
            for name, request in zip(names, requests)]


def _ignore_interrupts() -> None:
    """Runs first in each drawing process: Ctrl-C reaches every process of the terminal's group,
    and the run that draws (finishing its results and report, which it does not let a signal
    interrupt) decides what happens, not a drawing process printing a traceback."""
    import signal

    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)


def _draw_all(missing: dict[str, PlotRequest], processes: int) -> dict[str, str | Exception]:
    drawn: dict[str, str | Exception] = {}
    count = min(processes, len(missing) // PLOTS_PER_PROCESS)
    if count > 1 and len(missing) >= PARALLEL_FROM:
        try:
            with ProcessPoolExecutor(max_workers=count, mp_context=get_context("spawn"),
                                     initializer=_ignore_interrupts) as pool:
                futures = {name: pool.submit(_draw, request.draw.__name__, request.data, name)
                           for name, request in missing.items()}
                for name, future in futures.items():
                    try:
                        drawn[name] = future.result()
                    except BrokenExecutor:
                        raise
                    except Exception as exc:  # the plot's own failure: a note in the page
                        drawn[name] = exc
        except Exception:  # the pool itself failed (a process killed): draw the rest here
            drawn = {name: svg for name, svg in drawn.items() if isinstance(svg, str)}
    for name, request in missing.items():
        if name not in drawn:
            try:
                drawn[name] = request.draw(**request.data, salt=name)
            except Exception as exc:
                drawn[name] = exc
    return drawn


def _draw(plot: str, data: dict, salt: str) -> str:
    """Runs in a drawing process: plots.py's `plot`."""
    return getattr(plots, plot)(**data, salt=salt)


def forget() -> None:
    """Empty the in-memory store (the files stay)."""
    _memory.clear()


def folder() -> Path:
    """Where plots are kept between runs: $VERIFY_CACHE/plots, else $XDG_CACHE_HOME/verify/plots."""
    return cache_dir() / "plots"


@lru_cache(maxsize=1)
def _drawing_code() -> str:
    # matplotlib's version from its installed metadata: importing it only to read the version
    # would cost the 0.8 s verify.report.plots saves where nothing is drawn.
    return hashlib.sha256(Path(plots.__file__).read_bytes()).hexdigest() + version("matplotlib")


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
