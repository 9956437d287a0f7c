"""Render results documents into one self-contained HTML file (no network needed to view).

The page is a Jinja2 template (templates/report.html.j2) with its CSS inlined and its plots as
inline SVG drawn by matplotlib (plots.py), so the file can be mailed, attached to a CI run or
opened from disk. Size is kept in check the way pytest-html users asked for (docs/architecture.md §8:
reports of 100 MB crash browsers): full plots only for failing records; passing records are
table rows, with one err/budget scatter per kernel and adapter. Known findings are failures a
kernel is documented to have: they get the failing records' cards, in a section of their own,
each linked to the finding's standalone reproduction where a findings folder (written by
`verify findings export`) lies beside the report or is named.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, PackageLoader, Undefined, select_autoescape
from markupsafe import Markup

from verify._version import __version__
from verify.report import plots
from verify.report.kept import kept_svg
from verify.report.model import (
    CARDS,
    VERDICTS,
    AdapterColumn,
    RecordView,
    build_report,
    number,
    scatter_feature,
    scatter_points,
)
from verify.results.atomic import write_atomic
from verify.results.store import ResultsDocument

#: The index `verify findings export` writes beside the findings' folders.
FINDINGS_INDEX = "index.json"


def finding_entries(folder: Path, report_dir: Path) -> list[dict]:
    """The findings of `folder`'s index whose reproduction page exists, each with `href` relative
    to the report's folder; [] where there is no readable index (a report never fails on it)."""
    try:
        index = json.loads((folder / FINDINGS_INDEX).read_text())
        listed = [e for e in index.get("findings", []) if isinstance(e, dict)]
    except (OSError, ValueError, AttributeError):
        return []
    entries = []
    for entry in listed:
        page = folder / str(entry.get("name", "")) / "repro.html"
        if entry.get("name") and page.is_file():
            href = os.path.relpath(page.absolute(), Path(report_dir).absolute()).replace(os.sep, "/")
            entries.append(dict(entry, href=href))
    return entries


def _shape(headline: str) -> str:
    """A headline with its numbers blanked: a finding's headline names its config's heads or sizes."""
    return re.sub(r"\d+", "#", headline)


def reproductions_of(record, entries: list[dict]) -> list[tuple[str, str]]:
    """[(name, href)] of the reproductions of a known record's finding: same kernel and check, and
    the same headline (numbers aside), or the only one of that kernel and check."""
    same = [e for e in entries if e.get("kernel") == record.kernel and e.get("check") == record.check]
    headline = _shape(record.finding_headline)
    matching = [e for e in same if headline and headline in {_shape(h) for h in e.get("headlines", [])}]
    chosen = matching or (same if len(same) == 1 else [])
    return [(e["name"], e["href"]) for e in chosen]


@dataclass
class Plot:
    svg: Markup
    caption: str


@dataclass
class PassGroup:
    """The passing records of one kernel on one adapter, with one scatter of all their examples."""

    kernel: str
    adapter: AdapterColumn
    records: list = field(default_factory=list)
    plot: Plot | None = None


_SCATTER_CAPTION = ("Each drawn example's largest err/budget against {feature}; points above the dashed "
                    "line at 1 exceed the derived budget.")


def _format_number(value, digits: int = 3) -> str:
    """Numbers as a reader scans them: integers whole, others to `digits` significant digits."""
    if value is None or value == "" or isinstance(value, Undefined):
        return "–"
    x = number(value)
    if x is None:
        return str(value)
    if x != x or abs(x) == float("inf"):
        return str(x)
    if x == int(x) and abs(x) < 1e7:
        return str(int(x))
    return f"{x:.{digits}g}"


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("verify.report", "templates"), autoescape=select_autoescape(["html", "j2"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters["num"] = _format_number
    return env


def _scatter(samples: list[dict], salt: str, marks_from: dict | None = None) -> Plot | None:
    feature = scatter_feature(samples or [dict(r.features) for r in (marks_from or {}).values()])
    points = scatter_points(samples, feature)
    marks = {}
    for label, summary in (marks_from or {}).items():
        x = number(summary.features.get(feature)) if feature else None
        y = number(summary.score)
        if x is not None and y is not None and x == x and abs(x) != float("inf"):
            marks[label] = (x, y)
    if not points and not marks:
        return None
    name = feature or "example #"
    return _drawn(plots.err_budget_scatter, salt, _SCATTER_CAPTION.format(feature=name), points=points, feature=name,
                  marks=marks)


def _drawn(draw, salt: str, caption: str, **data) -> Plot:
    """`draw(**data)` as a plot (kept.py draws each distinct plot once), or where drawing it fails,
    a note saying so: a plot never takes the report down."""
    try:
        return Plot(Markup(kept_svg(draw, salt, **data)), caption)
    except Exception as exc:
        return Plot(Markup(""), f"This plot could not be drawn ({type(exc).__name__}: {exc}); the record's numbers "
                                "above are complete.")


def _failure_plots(view: RecordView) -> list[Plot]:
    """Scatter of the drawn examples (worst and shrunk marked), then per output of the worst
    case its err/budget histogram and heatmap; bitwise checks have no err/budget to plot."""
    record = view.record
    if not view.has_metrics:
        return []
    marks = {label: getattr(record, label) for label in ("worst", "shrunk") if getattr(record, label)}
    if view.same_case:
        marks.pop("shrunk", None)
    found = [_scatter(record.samples, f"{view.anchor}-scatter", marks)]
    for output, detail in (record.worst.detail if record.worst else {}).items():
        histogram, heatmap = detail.get("histogram"), detail.get("heatmap")
        if histogram and sum(histogram.get("counts", [])) > 1:
            found.append(_drawn(plots.err_budget_histogram, f"{view.anchor}-hist-{output}",
                                f"{output}: elements of the worst case by log10(err/budget); red bars exceed the "
                                "budget, zeros sit in the first bin, inf/NaN in the last.", output=output,
                                histogram=histogram))
        values = (heatmap or {}).get("values") or []
        if sum(len(row) for row in values) > 1:
            found.append(_drawn(plots.err_budget_heatmap, f"{view.anchor}-heat-{output}",
                                f"{output}: the worst case's err/budget per cell (max over blocks and leading axes); "
                                "red exceeds the budget.", output=output, heatmap=heatmap))
    return [p for p in found if p is not None]


def _pass_groups(passes: list[RecordView]) -> list[PassGroup]:
    groups: dict[tuple, PassGroup] = {}
    for view in passes:
        key = (view.record.kernel, view.adapter.key)
        groups.setdefault(key, PassGroup(key[0], view.adapter)).records.append(view)
    for i, group in enumerate(groups.values()):
        samples = [s for v in group.records if v.has_metrics for s in v.record.samples]
        group.plot = _scatter(samples, f"pass{i}") if samples else None
    return list(groups.values())


def render_report(documents: list[ResultsDocument], path: Path, findings_dir: Path | None = None) -> None:
    """Write the HTML report of `documents` (results documents, merged) to `path`; known findings
    link to their reproductions in `findings_dir` (default: a `findings` folder beside `path`)."""
    report = build_report(documents)
    for view in report.section(*CARDS):
        view.plots = _failure_plots(view)
    entries = finding_entries(Path(findings_dir) if findings_dir else Path(path).parent / "findings", Path(path).parent)
    for view in report.section("known"):
        view.reproductions = reproductions_of(view.record, entries)
    html = _environment().get_template("report.html.j2").render(
        report=report,
        verdicts=VERDICTS,
        failures=report.section("fail", "divergence", "error"),
        knowns=report.section("known"),
        skips=report.section("skip"),
        pass_groups=_pass_groups(report.section("pass")),
        verify_version=__version__,
    )
    write_atomic(Path(path), html)
