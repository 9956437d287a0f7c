"""The report's plots, drawn with matplotlib and returned as inline SVG text.

Three views answer the questions a kernel author asks first (docs/architecture.md §8):
- `err_budget_scatter`: err/budget of every drawn example against a case feature (context
  length for decode), log axes, the budget line at 1. Shows whether errors grow with the
  reduction length (a budget or accumulation problem) or jump at a boundary (an indexing bug).
- `err_budget_histogram`: the distribution of log10(err/budget) over one output's elements
  (verify/results/detail.py bins it); a bug puts a second mode above 0, a too-tight budget a tail.
- `err_budget_heatmap`: the worst err/budget over the output's last two axes (e.g. heads x
  dims): a missing barrier or a wrong stride shows as stripes or blocks.

SVG text is kept small: fonts stay text (`svg.fonttype: none`), dense markers and the heatmap
are embedded as small PNG rasters by matplotlib itself. Every figure gets its own hash salt so
the ids inside several inline SVGs of one HTML page never collide, and the output is the same
on every run. The `Figure` API is used instead of pyplot: no global figure state, no GUI backend.

matplotlib is imported by the first drawing, not with this module: importing it costs about 0.8 s
of CPU, which every `verify` command paid for its report even when every plot it shows was kept
from an earlier run (verify/report/kept.py), as when the same checks run again.
"""

from __future__ import annotations

import io
import math
import re
from functools import cache
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np

from verify.results.detail import axis_names

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: Where err/budget values of 0 and of inf/NaN are drawn on a log axis (and the heatmap's
#: colour range): the histogram bins of verify/results/detail.py span the same decades.
LOG_FLOOR, LOG_CEILING = 1e-8, 1e4
#: Above this many points the scatter's markers are rasterized (an SVG marker costs ~60 bytes).
RASTER_POINTS = 300

_STYLE = {
    "svg.fonttype": "none",
    "font.size": 8,
    "axes.titlesize": 8,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "savefig.dpi": 110,
}
_METADATA = re.compile(r"<metadata>.*?</metadata>", re.S)
_GROUP_ID = re.compile(r'<g id="[\w.]+_\d+"')
_BETWEEN_TAGS = re.compile(r">\s+<")
_INDENT = re.compile(r"\s*\n\s*")
_PASS, _FAIL, _BUDGET = "#4c72b0", "#c0392b", "#555555"


@cache
def _matplotlib() -> SimpleNamespace:
    """The parts of matplotlib the plots use, imported on the first call (see the module docstring)."""
    from matplotlib import rc_context
    from matplotlib.colors import TwoSlopeNorm
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator, NullLocator

    return SimpleNamespace(rc_context=rc_context, TwoSlopeNorm=TwoSlopeNorm, Figure=Figure,
                           FuncFormatter=FuncFormatter, MaxNLocator=MaxNLocator, NullLocator=NullLocator)


def _svg(figure: Figure, salt: str) -> str:
    """The figure as an <svg> element for inline use: no XML prolog, no RDF metadata block, no
    indentation (whitespace between SVG elements and inside path data is not rendered), and none
    of the group ids matplotlib numbers per figure ("patch_1", "axes_1"): nothing refers to them,
    and in a page of many figures they would repeat. The ids that are referred to (clip paths,
    markers) are hashes salted per figure, so they stay unique."""
    buffer = io.StringIO()
    with _matplotlib().rc_context(dict(_STYLE, **{"svg.hashsalt": salt})):
        figure.savefig(buffer, format="svg", metadata={"Date": None})
    text = buffer.getvalue()
    text = _GROUP_ID.sub("<g", _METADATA.sub("", text[text.index("<svg"):]))
    return _INDENT.sub(" ", _BETWEEN_TAGS.sub("><", text)).strip()


def _figure(width: float, height: float, right: float = 0.12) -> tuple[Figure, Axes]:
    """A figure with one axes placed by fixed margins in inches: constrained layout would
    measure every label first and doubles the drawing time of these small plots."""
    with _matplotlib().rc_context(_STYLE):
        figure = _matplotlib().Figure(figsize=(width, height))
        left, bottom, top = 0.62, 0.4, 0.22
        ax = figure.add_axes((left / width, bottom / height, 1 - (left + right) / width, 1 - (bottom + top) / height))
    return figure, ax


def _log_ticks(axis) -> None:
    """Decade ticks labelled as plain numbers ("1e-06", "0.01", "100") and no minor ticks:
    matplotlib's default 10^k labels go through mathtext, and its eight minor ticks per decade
    are a hundred tick objects on a 12-decade axis; together most of a figure's drawing time
    and SVG bytes."""
    axis.set_major_formatter(_matplotlib().FuncFormatter(lambda value, _: f"{value:g}"))
    axis.set_minor_locator(_matplotlib().NullLocator())


def _on_log_axis(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(values clipped into [LOG_FLOOR, LOG_CEILING], mask of those that were inf/NaN)."""
    off_scale = ~np.isfinite(values)
    return np.clip(np.where(off_scale, LOG_CEILING, values), LOG_FLOOR, LOG_CEILING), off_scale


def _x_scale(ax, x: np.ndarray) -> None:
    """Log x when the feature spans a decade or more of positive values; symlog when it also
    holds zeros; linear otherwise (a constant or narrow feature)."""
    positive = x[x > 0]
    if positive.size and positive.max() >= 10 * positive.min():
        if (x <= 0).any():
            ax.set_xscale("symlog", linthresh=max(float(positive.min()), 1e-12))
            if (x >= 0).all():
                ax.set_xlim(left=0)
        else:
            ax.set_xscale("log")
        _log_ticks(ax.xaxis)


def err_budget_scatter(points: list[tuple[float, float, bool]], feature: str, salt: str,
                       marks: dict[str, tuple[float, float]] | None = None) -> str:
    """err/budget (y) per example against `feature` (x); `marks` labels chosen examples
    (e.g. {"worst": (x, y), "shrunk": (x, y)})."""
    data = np.array([(x, y) for x, y, _ in points], dtype=np.float64).reshape(-1, 2)
    passed = np.array([p for _, _, p in points], dtype=bool)
    y, off_scale = _on_log_axis(data[:, 1])
    x = data[:, 0]
    figure, ax = _figure(4.1, 2.2, right=0.95)
    with _matplotlib().rc_context(_STYLE):
        dense = len(points) > RASTER_POINTS
        for mask, colour, label in ((passed, _PASS, "pass"), (~passed, _FAIL, "fail")):
            finite = mask & ~off_scale
            if finite.any():
                ax.scatter(x[finite], y[finite], s=9, c=colour, alpha=0.6, linewidths=0, label=label, rasterized=dense)
            if (mask & off_scale).any():
                ax.scatter(x[mask & off_scale], y[mask & off_scale], s=22, marker="^", c=colour,
                           label=f"{label}, inf/NaN", rasterized=dense)
        for (name, (mx, my)), marker in zip((marks or {}).items(), ("*", "D")):
            ax.scatter([mx], _on_log_axis(np.array([my]))[0], s=70 if marker == "*" else 28, marker=marker,
                       facecolors="none", edgecolors="black", linewidths=0.9, label=f"{name} case")
        ax.axhline(1.0, color=_BUDGET, linestyle="--", linewidth=0.8, label="budget")
        ax.set_yscale("log")
        _log_ticks(ax.yaxis)
        _x_scale(ax, np.concatenate([x, [m[0] for m in (marks or {}).values()]]))
        top = max(float(y.max(initial=1.0)), *(m[1] for m in (marks or {}).values() if m[1] == m[1]), 1.0)
        ax.set_ylim(min(float(y.min(initial=1.0)), 1e-3) / 2, min(top, LOG_CEILING) * 4)
        ax.set_xlabel(feature)
        ax.set_ylabel("err / budget")
        count = f"{len(points)} example" + ("s" if len(points) != 1 else "")
        ax.set_title(f"{count} (err/budget 0 drawn at {LOG_FLOOR:g})", loc="left")
        ax.legend(fontsize=6.5, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    return _svg(figure, salt)


def err_budget_histogram(output: str, histogram: dict, salt: str) -> str:
    """The elements of one output by log10(err/budget); the line at 0 is the budget. Zeros sit
    in the first bin and inf/NaN in the last (verify/results/detail.py clips them there)."""
    edges = np.asarray(histogram["log10_edges"], dtype=np.float64)
    counts = np.asarray(histogram["counts"], dtype=np.float64)
    figure, ax = _figure(3.4, 2.0)
    with _matplotlib().rc_context(_STYLE):
        under = edges[1:] <= 0
        ax.stairs(np.where(under, counts, 0), edges, fill=True, color=_PASS, alpha=0.8)
        ax.stairs(np.where(under, 0, counts), edges, fill=True, color=_FAIL, alpha=0.8)
        ax.axvline(0.0, color=_BUDGET, linestyle="--", linewidth=0.8)
        if counts.max(initial=0) >= 100:
            ax.set_yscale("symlog", linthresh=1)
            _log_ticks(ax.yaxis)
        ax.set_xlabel("log10(err/budget)")
        ax.set_ylabel("elements")
        total = int(counts.sum())
        ax.set_title(f"{output}: {histogram.get('over_budget', 0)} of {total} over budget", loc="left")
    return _svg(figure, salt)


def err_budget_heatmap(output: str, heatmap: dict, salt: str) -> str:
    """Worst err/budget per cell over the heatmap's two axes, red above the budget and blue
    below. Axis ticks count elements of the output, also when a cell is the max of a block."""
    grid = np.asarray(heatmap["values"], dtype=np.float64)
    logs = np.log10(_on_log_axis(grid)[0])
    rows, cols = grid.shape
    shape = list(heatmap.get("shape", grid.shape))
    names = axis_names(heatmap.get("axes"), len(shape))
    extent_rows = shape[-2] if len(shape) > 1 else 1
    row_step, col_step = -(-extent_rows // rows), -(-shape[-1] // cols)
    width = 3.8
    height = min(3.2, max(1.2, 0.7 + 2.4 * rows / max(cols, 1)))
    figure, ax = _figure(width, height, right=0.9)
    with _matplotlib().rc_context(_STYLE):
        norm = _matplotlib().TwoSlopeNorm(vmin=math.log10(LOG_FLOOR), vcenter=0.0, vmax=math.log10(LOG_CEILING))
        image = ax.imshow(logs, cmap="RdBu_r", norm=norm, aspect="auto", interpolation="none",
                          extent=(0, cols * col_step, rows * row_step, 0))
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_locator(_matplotlib().MaxNLocator(nbins=6, integer=True))
        box = ax.get_position()
        colorbar = figure.colorbar(image, cax=figure.add_axes((box.x1 + 0.03, box.y0, 0.03, box.height)))
        colorbar.set_label("log10(err/budget)", fontsize=7)
        ax.set_xlabel(names[1] + (f" (blocks of {col_step})" if col_step > 1 else ""))
        ax.set_ylabel((names[0] + (f" (blocks of {row_step})" if row_step > 1 else "")).strip())
        ax.set_title(f"{output} {shape}" + (", max over leading axes" if len(shape) > 2 else ""), loc="left")
    return _svg(figure, salt)
