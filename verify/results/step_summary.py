"""A gate's JUnit XML as Markdown for a CI job's summary page (GitHub's $GITHUB_STEP_SUMMARY).

The reusable action (action.yml, docs/ci.md §5) appends this to the job summary, so a failing
gate says what failed on the run's page without downloading the report: the totals, one row per
kernel, and each failure's headline (the report and results.json, uploaded beside it, have the
rest). It reads the JUnit verify writes (verify.results.junit): a known finding is a <skipped>
testcase whose message begins "known finding:", counted apart from real skips.

    python -m verify.results.step_summary reports/junit.xml [--title TEXT] >> "$GITHUB_STEP_SUMMARY"
"""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

#: Failures listed by name; past this the table and the report carry them.
MAX_LISTED = 50
KNOWN_PREFIX = "known finding:"


@dataclass
class Suite:
    """One testsuite (a kernel): its testcases by outcome."""

    name: str
    passed: int = 0
    failed: list = field(default_factory=list)
    errors: list = field(default_factory=list)
    skipped: int = 0
    known: int = 0

    @property
    def tests(self) -> int:
        return self.passed + len(self.failed) + len(self.errors) + self.skipped + self.known


def read_junit(path: Path) -> list[Suite]:
    """The suites of a JUnit file; ValueError naming the file when it is not one."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise ValueError(f"{path}: not a readable JUnit file ({exc})") from None
    suites = []
    for element in root.iter("testsuite"):
        suite = Suite(element.get("name", "?"))
        for case in element.iter("testcase"):
            name = case.get("name", "?")
            failure, error, skipped = case.find("failure"), case.find("error"), case.find("skipped")
            if failure is not None:
                suite.failed.append((name, failure.get("message", "")))
            elif error is not None:
                suite.errors.append((name, error.get("message", "")))
            elif skipped is not None and skipped.get("message", "").startswith(KNOWN_PREFIX):
                suite.known += 1
            elif skipped is not None:
                suite.skipped += 1
            else:
                suite.passed += 1
        suites.append(suite)
    return suites


def _cell(text: str) -> str:
    """Text safe in a Markdown table cell: one line, no pipe."""
    return " ".join(text.split()).replace("|", "\\|")


def markdown(suites: list[Suite], title: str = "verify gate") -> str:
    """The summary: a headline, a table of kernels, and the failures and errors by name."""
    failed = sum(len(s.failed) for s in suites)
    errors = sum(len(s.errors) for s in suites)
    skipped = sum(s.skipped for s in suites)
    known = sum(s.known for s in suites)
    total = sum(s.tests for s in suites)
    if failed or errors:
        head = f"❌ {failed + errors} of {total} checks did not hold"
    elif skipped:
        head = f"⚠️ {skipped} of {total} checks were skipped (a skip verified nothing)"
    else:
        head = f"✅ all {total - known} checks held" + (f"; {known} known findings reproduced" if known else "")
    lines = [f"## {title}", "", head, "", "| kernel | pass | fail | error | known | skip |",
             "|---|---:|---:|---:|---:|---:|"]
    for s in suites:
        lines.append(f"| {_cell(s.name)} | {s.passed} | {len(s.failed)} | {len(s.errors)} | {s.known} | {s.skipped} |")
    bad = [(s.name, kind, name, message) for s in suites for kind, listed in (("FAIL", s.failed), ("ERROR", s.errors))
           for name, message in listed]
    if bad:
        lines += ["", "| verdict | kernel | check [config] | reason |", "|---|---|---|---|"]
        for kernel, kind, name, message in bad[:MAX_LISTED]:
            lines.append(f"| {kind} | {_cell(kernel)} | {_cell(name)} | {_cell(message)[:300]} |")
        if len(bad) > MAX_LISTED:
            lines.append(f"\n…and {len(bad) - MAX_LISTED} more: see the report.")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m verify.results.step_summary",
                                     description="a verify JUnit file as Markdown for a CI job summary")
    parser.add_argument("junit", type=Path)
    parser.add_argument("--title", default="verify gate")
    args = parser.parse_args(argv)
    try:
        suites = read_junit(args.junit)
    except ValueError as exc:
        print(f"verify: error: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(markdown(suites, args.title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
