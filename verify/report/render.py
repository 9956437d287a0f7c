"""Render results documents into one self-contained HTML file (no network needed to view)."""

from __future__ import annotations

from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape

from verify.results.atomic import write_atomic

_VERDICT_ORDER = {"fail": 0, "error": 1, "skip": 2, "pass": 3}


def _environment() -> Environment:
    return Environment(loader=PackageLoader("verify.report", "templates"), autoescape=select_autoescape(["html", "j2"]))


def render_report(documents: list[dict], path: Path) -> None:
    records = [dict(r, _run=i) for i, doc in enumerate(documents) for r in doc.get("records", [])]
    records.sort(key=lambda r: (_VERDICT_ORDER.get(r.get("verdict"), 9), r.get("kernel", ""), r.get("check", "")))
    html = _environment().get_template("report.html.j2").render(documents=documents, records=records)
    write_atomic(Path(path), html)
