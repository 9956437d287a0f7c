"""What a run prints: a live progress bar on a terminal, plain lines otherwise (CI logs)."""

from __future__ import annotations

import sys


def _config_text(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(config.items()))


def record_line(record: dict) -> str:
    """One line per finished check: verdict, what, how many examples, worst err/budget, time."""
    verdict = record.get("verdict", "?").upper()
    what = f"{record.get('kernel')} {record.get('check')} [{_config_text(record.get('config') or {})}]"
    if verdict in ("PASS", "FAIL", "KNOWN") and record.get("examples"):
        worst = (record.get("worst") or {}).get("score")
        worst_text = f", max err/budget {float(worst):.3g}" if worst not in (None, "") else ""
        detail = f"{record['examples']} examples{worst_text}, {record.get('duration_s', 0):.1f} s"
    else:
        detail = f"{record.get('duration_s', 0):.1f} s" if record.get("duration_s") else ""
    line = f"{verdict:5} {what} {detail}".rstrip()
    finding = (record.get("finding") or "").strip().splitlines()[:1]
    if verdict == "KNOWN":
        line += f"\n      known finding: {finding[0] if finding else '?'}"
    elif verdict != "PASS" and record.get("reason"):
        reason = record["reason"].strip().splitlines()
        line += "\n      " + "\n      ".join(reason[:12])
    elif finding:
        line += f"\n      known finding did not reproduce: {finding[0]}"
    for role in ("shrunk", "worst"):
        path = (record.get(role) or {}).get("case_file")
        if path and verdict in ("FAIL", "KNOWN"):
            line += f"\n      {role} case: verify replay {path}"
    return line


class Display:
    """Progress for a sequence of jobs; `rich` on a terminal, plain text elsewhere."""

    def __init__(self, total_jobs: int, stream=None):
        self.stream = stream or sys.stderr
        self.total = total_jobs
        self.done = 0
        self._progress = None
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self._console = Console(file=self.stream)
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), console=self._console, transient=True)
            self._overall = self._progress.add_task("checks", total=total_jobs)
            self._current = self._progress.add_task("", total=1)
            self._progress.start()

    def start(self, job) -> None:
        if self._progress:
            self._progress.update(self._current, description=f"{job.kernel} {job.check}", completed=0, total=job.examples)
        else:
            print(f"...   {job.kernel} {job.check} [{_config_text(job.config)}] ({self.done + 1}/{self.total})",
                  file=self.stream, flush=True)

    def progress(self, job, done: int, total: int) -> None:
        if self._progress:
            self._progress.update(self._current, completed=done, total=total)

    def record(self, record: dict) -> None:
        self.done += 1
        line = record_line(record)
        if self._progress:
            self._progress.update(self._overall, completed=self.done)
            self._console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self._progress:
            self._progress.stop()


def summary(records: list[dict]) -> str:
    counts: dict = {}
    for r in records:
        counts[r.get("verdict", "?")] = counts.get(r.get("verdict", "?"), 0) + 1
    order = ("pass", "known", "fail", "error", "skip")
    parts = [f"{counts[k]} {k}" for k in order if counts.get(k)]
    return f"{len(records)} checks: " + ", ".join(parts)
