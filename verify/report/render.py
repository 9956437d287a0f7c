"""Render results documents into one self-contained HTML file (no network needed to view).

The page is a Jinja2 template (templates/report.html.j2) with its CSS inlined and its plots as
inline SVG drawn by matplotlib (plots.py), so the file can be mailed, attached to a CI run or
opened from disk. Size is kept in check the way pytest-html users asked for (docs/architecture.md §8:
reports of 100 MB crash browsers): full plots only for failing records; passing records are
table rows, with one err/budget scatter per kernel and adapter. Known findings are failures a
kernel is documented to have: they get the failing records' cards, in a section of their own,
each linked to the finding's standalone reproduction where a findings folder (written by
`verify findings export`) lies beside the report or its folder, or is named.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from jinja2 import Environment, PackageLoader, Undefined, select_autoescape
from markupsafe import Markup

from verify._files import write_atomic
from verify._version import __version__
from verify.report import plots
from verify.report.kept import PlotRequest, kept_svgs
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
from verify.results.store import ResultsDocument
from verify.results.thoroughness import LEVELS

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


def _sections(text: str) -> set[str]:
    """The sections of docs/findings.md a finding's text cites ("docs/findings.md §14.1" -> §14.1)."""
    return {m.rstrip(".") for m in re.findall(r"docs/findings\.md (§[\d.]*\d)", text or "")}


def reproductions_of(record, entries: list[dict]) -> list[tuple[str, str]]:
    """[(name, href)] of the reproductions of a known record's finding: the folders its
    `finding_id`s name (verify.findings); for a record without one (written before findings had
    ids, or a package's finding stated as text), as follows.

    A finding is its headline (numbers aside), not the check it was exported under: TVM's merge race
    is reported under `reference` and under `sanitize`, ORT's zero-initialised partials under
    `reference`, `determinism`, `implementations` and `sanitize`, and a bug of one program under
    every kernel that runs it (FlashAttention's carried scores under ort.gqa), while its folder
    names one kernel and check. So the folders listing the record's headline are its reproductions,
    those of the record's own kernel first, and of those the folders that reproduce the fewest other
    findings: a folder exported where its kernel states several findings lists them all (ORT's
    softcap folder also lists the zero-initialised partials, which have a folder of their own).
    Where no folder lists the headline, the folders of the section of docs/findings.md the finding
    cites (TVM's tree race under `determinism` is §14.1's extra warp); where the text cites none
    of theirs either, the only folder of the record's kernel and check (an index exported before
    a headline was reworded)."""
    ids = [i for i in (getattr(record, "finding_id", None) or "").split(",") if i]
    if ids:  # the findings' own ids (verify.findings) name their folders: nothing to guess, and a
        # finding without a folder yet has none (another finding's folder of the kernel is not it)
        return [(e["name"], e["href"]) for e in entries if e.get("name") in ids]
    headline = _shape(record.finding_headline)
    listing = [e for e in entries if headline and headline in {_shape(h) for h in e.get("headlines") or []}]
    if not listing:
        cited = _sections(record.finding or "")
        listing = [e for e in entries if cited & set(re.findall(r"§[\d.]*\d", str(e.get("section", ""))))]
    if listing:
        own = [e for e in listing if e.get("kernel") == record.kernel] or listing
        fewest = min(len(e.get("headlines") or []) for e in own)
        chosen = [e for e in own if len(e.get("headlines") or []) == fewest]
    else:
        same = [e for e in entries if e.get("kernel") == record.kernel and e.get("check") == record.check]
        chosen = same if len(same) == 1 else []
    return [(e["name"], e["href"]) for e in chosen]


def findings_folder(report: Path, named: Path | None = None) -> Path:
    """Where the report's known findings look for their reproductions: the folder named, else a
    `findings` folder beside the report, else one beside the report's folder (a run's report in
    reports/check/ finds the committed reports/findings/)."""
    if named:
        return Path(named)
    beside = Path(report).parent / "findings"
    above = Path(report).parent.parent / "findings"
    return beside if (beside / FINDINGS_INDEX).is_file() or not (above / FINDINGS_INDEX).is_file() else above


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


#: A plot asked for, and its caption.
_Asked = tuple[PlotRequest, str]

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


def _scatter(samples: list[dict], salt: str, marks_from: dict | None = None) -> _Asked | None:
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
    return (PlotRequest(plots.err_budget_scatter, salt, dict(points=points, feature=name, marks=marks)),
            _SCATTER_CAPTION.format(feature=name))


def _drawn(asked: list[_Asked], processes: int) -> list[Plot]:
    """The plots asked for, drawn together (kept.py draws each distinct plot once, by up to
    `processes` processes); one whose drawing fails becomes a note saying so: a plot never takes
    the report down."""
    svgs = kept_svgs([request for request, _ in asked], processes)
    return [Plot(Markup(svg), caption) if isinstance(svg, str)
            else Plot(Markup(""), f"This plot could not be drawn ({type(svg).__name__}: {svg}); the record's numbers "
                                  "above are complete.")
            for svg, (_, caption) in zip(svgs, asked)]


def _failure_plots(view: RecordView) -> list[_Asked]:
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
            found.append((PlotRequest(plots.err_budget_histogram, f"{view.anchor}-hist-{output}",
                                      dict(output=output, histogram=histogram)),
                          f"{output}: elements of the worst case by log10(err/budget); red bars exceed the "
                          "budget, zeros sit in the first bin, inf/NaN in the last."))
        values = (heatmap or {}).get("values") or []
        if sum(len(row) for row in values) > 1:
            found.append((PlotRequest(plots.err_budget_heatmap, f"{view.anchor}-heat-{output}",
                                      dict(output=output, heatmap=heatmap)),
                          f"{output}: the worst case's err/budget per cell (max over blocks and leading axes); "
                          "red exceeds the budget."))
    return [p for p in found if p is not None]


def _pass_groups(passes: list[RecordView]) -> list[PassGroup]:
    groups: dict[tuple, PassGroup] = {}
    for view in passes:
        key = (view.record.kernel, view.adapter.key)
        groups.setdefault(key, PassGroup(key[0], view.adapter)).records.append(view)
    return list(groups.values())


def _plot_all(cards: list[RecordView], groups: list[PassGroup], processes: int) -> None:
    """Every plot of the page, asked for first and then drawn in one go (so that the plots not
    kept yet can be drawn in parallel): the cards' failure plots and each pass group's scatter."""
    asked = {id(view): _failure_plots(view) for view in cards}
    for i, group in enumerate(groups):
        samples = [s for v in group.records if v.has_metrics for s in v.record.samples]
        asked[id(group)] = [scatter] if samples and (scatter := _scatter(samples, f"pass{i}")) else []
    drawn = iter(_drawn([pair for pairs in asked.values() for pair in pairs], processes))
    for view in cards:
        view.plots = [next(drawn) for _ in asked[id(view)]]
    for group in groups:
        group.plot = next(drawn) if asked[id(group)] else None


def render_report(documents: list[ResultsDocument], path: Path, findings_dir: Path | None = None,
                  processes: int = 1) -> None:
    """Write the HTML report of `documents` (results documents, merged) to `path`; known findings
    link to their reproductions in `findings_dir` (default: a `findings` folder beside `path`, or
    beside its folder).
    Plots not kept from an earlier render are drawn by up to `processes` processes."""
    report = build_report(documents)
    pass_groups = _pass_groups(report.section("pass"))
    _plot_all(report.section(*CARDS), pass_groups, processes)
    entries = finding_entries(findings_folder(Path(path), findings_dir), Path(path).parent)
    for view in report.section("known"):
        view.reproductions = reproductions_of(view.record, entries)
    html = _environment().get_template("report.html.j2").render(
        report=report,
        verdicts=VERDICTS,
        levels=[(level.value, level.description) for level in LEVELS],
        failures=report.section("fail", "divergence", "error"),
        knowns=report.section("known"),
        skips=report.section("skip"),
        pass_groups=pass_groups,
        verify_version=__version__,
    )
    write_atomic(Path(path), html)
