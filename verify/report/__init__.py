"""The self-contained HTML report."""

from verify.report.render import render_report

__all__ = ["render_report"]
