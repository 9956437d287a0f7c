"""Small summaries of one case's per-element err/budget, for the report's plots.

Kept small on purpose (a nightly report stays a few MB): a log-binned histogram per output and
a heatmap of the worst err/budget over the output's last two axes (for attention: heads x
dims), reduced by max over leading axes and block-max down to at most HEATMAP_MAX per side.
"""

from __future__ import annotations

import numpy as np

#: Histogram bins of log10(err/budget); zeros go to the first bin, inf to the last.
LOG_BINS = np.linspace(-8.0, 4.0, 49)
HEATMAP_MAX = 64


def histogram(ratio: np.ndarray) -> dict:
    r = np.asarray(ratio, dtype=np.float64).ravel()
    with np.errstate(divide="ignore"):
        logs = np.log10(np.where(np.isnan(r), np.inf, r))
    logs = np.clip(logs, LOG_BINS[0], LOG_BINS[-1])
    counts, _ = np.histogram(logs, bins=LOG_BINS)
    return {"log10_edges": LOG_BINS.round(3).tolist(), "counts": counts.tolist(), "over_budget": int((r > 1).sum())}


def _block_max(grid: np.ndarray, limit: int) -> np.ndarray:
    for axis in (0, 1):
        size = grid.shape[axis]
        if size > limit:
            step = -(-size // limit)
            blocks = -(-size // step)
            pad = [(0, 0), (0, 0)]
            pad[axis] = (0, step * blocks - size)
            grid = np.pad(grid, pad, constant_values=0.0)
            shape = list(grid.shape)
            shape[axis : axis + 1] = [blocks, step]
            grid = grid.reshape(shape).max(axis=axis + 1)
    return grid


def heatmap(ratio: np.ndarray, axes) -> dict:
    """The worst err/budget over the output's last two axes (a 1-D output is one row), with the
    names of those two axes: the kernel's `output_axes` names, however many it declares."""
    r = np.asarray(ratio, dtype=np.float64)
    r = np.where(np.isnan(r), np.inf, r)
    grid = r.reshape(1, -1) if r.ndim < 2 else r.reshape(-1, *r.shape[-2:]).max(axis=0)
    grid = _block_max(grid, HEATMAP_MAX)
    finite = np.where(np.isfinite(grid), grid, 1e30)
    return {"axes": axis_names(axes, r.ndim), "shape": list(r.shape),
            "values": [[float(f"{v:.3g}") for v in row] for row in finite]}


def axis_names(axes, ndim: int) -> list[str]:
    """Two names for a heatmap's (rows, columns): the last two of the declared names; a 1-D
    output's rows are unnamed (one row), a missing name is the axis's position."""
    names = [str(a) for a in (axes or ())][-2:]
    if ndim < 2:
        return ["", names[-1] if names else "axis -1"]
    defaults = ["axis -2", "axis -1"]
    return defaults[:2 - len(names)] + names


def error_detail(outputs, axes_by_output: dict | None = None, with_heatmap: bool = True) -> dict:
    """{output name: {histogram[, heatmap]}} for the OutputMetrics of one case.

    Heatmaps are the bulk of a results file; the report draws them only for failing cases.
    """
    detail = {}
    for m in outputs:
        if m.ratio is None or m.ratio.size == 0:
            continue
        axes = (axes_by_output or {}).get(m.name, ())
        detail[m.name] = {"histogram": histogram(m.ratio)}
        if with_heatmap:
            detail[m.name]["heatmap"] = heatmap(m.ratio, axes)
    return detail
