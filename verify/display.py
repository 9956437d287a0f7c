"""What a run prints: a live progress bar on a terminal, plain lines otherwise (CI logs)."""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import replace

from verify.errors import FailureKind
from verify.results.record import CheckResult, Verdict


def _config_text(config: dict) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(config.items()))


def _minutes(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def record_line(record: CheckResult) -> str:
    """One line per finished check: verdict, what, how many examples, worst err/budget, time;
    then the reason, the known finding, and the replay commands where they help."""
    verdict = record.verdict
    label = verdict.value.upper()
    if verdict in (Verdict.PASS, Verdict.FAIL, Verdict.KNOWN) and record.examples:
        worst = record.worst.score if record.worst is not None else None
        worst_text = f", max err/budget {worst:.3g}" if worst is not None else ""
        detail = f"{record.examples} examples{worst_text}, {record.duration_s:.1f} s"
    else:
        detail = f"{record.duration_s:.1f} s" if record.duration_s else ""
    line = f"{label:5} {record.title} {detail}".rstrip()
    if record.reused_from:
        line += f" (reused: {record.reused_from})"
    if verdict is Verdict.KNOWN:
        line += f"\n      known finding: {record.finding_headline or '?'}"
    elif verdict is not Verdict.PASS and record.reason:
        reason = record.reason.strip().splitlines()
        line += "\n      " + "\n      ".join(reason[:12])
        if record.failure_kind is FailureKind.KERNEL_CODE and record.traceback:
            # The kernel author's own mistake: their traceback, where they will look first.
            line += "\n      " + "\n      ".join(record.traceback.strip().splitlines())
    elif record.finding:
        line += f"\n      known finding did not reproduce: {record.finding_headline}"
    for note in record.notes:
        line += f"\n      note: {note}"
    if verdict in (Verdict.FAIL, Verdict.KNOWN):
        for role, summary in (("shrunk", record.shrunk), ("worst", record.worst)):
            if summary is not None and summary.replay:
                line += f"\n      {role} case: {summary.replay}"
    return line


class Display:
    """Progress for a sequence of checks; `rich` on a terminal, plain text elsewhere. A check run
    in parts (slices, a budget's rounds) counts once; the lines say how many checks are done of
    those planned and, once a few are, about how long the rest will take (or how much of a
    budget is left)."""

    def __init__(self, total_jobs: int, stream=None, deadline: float | None = None):
        import time

        self.stream = stream or sys.stderr
        self.total = total_jobs
        self.done = 0
        self._started = time.monotonic()
        self._deadline = deadline
        self._noted: set = set()
        self._progress = None
        if self.stream.isatty():
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._console = Console(file=self.stream)
            self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                      TimeElapsedColumn(), TimeRemainingColumn(), console=self._console,
                                      transient=True)
            self._overall = self._progress.add_task("checks", total=total_jobs)
            self._current = self._progress.add_task("", total=1)
            self._progress.start()

    def start(self, job) -> None:
        if self._progress:
            self._progress.update(self._current, description=f"{job.kernel} {job.check}", completed=0,
                                  total=job.examples)
        else:
            part = f" part {job.slice[0]}" if getattr(job, "part", "") == "random" else ""
            print(f"...   {job.kernel} {job.check}{part} [{_config_text(job.config)}] ({self.done}/{self.total} checks "
                  f"done{self.eta()})", file=self.stream, flush=True)

    def eta(self) -> str:
        """", about N min left" once the rate is known (a budget: what is left of it), else ""."""
        import time

        now = time.monotonic()
        if self._deadline is not None:
            left = self._deadline - now
            return (f", {_minutes(left)} of the budget left" if left > 0
                    else ", budget spent: finishing the parts running")
        if self.done < 3 or self.done >= self.total:
            return ""
        return f", about {_minutes((now - self._started) / self.done * (self.total - self.done))} left"

    def progress(self, job, done: int, total: int) -> None:
        if self._progress:
            self._progress.update(self._current, completed=done, total=total)

    def record(self, record: CheckResult) -> None:
        self.done += 1
        # A note about a config (a default limit it exceeds) is printed once, not per check.
        fresh = [n for n in record.notes if (record.kernel, record.config_text, n) not in self._noted]
        self._noted.update((record.kernel, record.config_text, n) for n in fresh)
        line = record_line(replace(record, notes=fresh))
        if self._progress:
            self._progress.update(self._overall, completed=self.done)
            self._console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self._progress:
            self._progress.stop()


def summary(records: list[CheckResult]) -> str:
    """The run's last line: its checks by verdict, and the pipelines its workers compiled (where
    its records say: verify.results.store.pipelines_compiled)."""
    from verify.results.store import pipelines_compiled

    counts = Counter(r.verdict for r in records)
    parts = [f"{counts[v]} {v.value}" for v in sorted(Verdict, key=lambda v: v.rank) if counts[v]]
    compiled = pipelines_compiled(records)
    return f"{len(records)} checks: " + ", ".join(parts) + ("" if compiled is None else
                                                           f"; {compiled} pipelines compiled")


#: The most distinct skip reasons the run's last lines spell out; the rest are counted (every one
#: is in results.json and the report).
SKIP_REASONS_SHOWN = 5


def skip_summary(skips: list[CheckResult], total: int) -> str:
    """One paragraph for the checks a run skipped: each distinct reason once, with how many checks
    and which kernels it cost, most frequent first. A reason repeated per record (one per config
    of every TVM kernel when apache-tvm is missing) is a wall of the same hint otherwise."""
    by_reason: dict[str, list[CheckResult]] = {}
    for record in skips:
        by_reason.setdefault(record.reason, []).append(record)
    ranked = sorted(by_reason.items(), key=lambda item: -len(item[1]))
    lines = [f"verify: {len(skips)} of {total} checks were SKIPPED (not verified):"]
    for reason, records in ranked[:SKIP_REASONS_SHOWN]:
        kernels = sorted({r.kernel for r in records})
        named = ", ".join(kernels[:4]) + (f" and {len(kernels) - 4} more" if len(kernels) > 4 else "")
        lines.append(f"  {len(records)} ({named}): {reason}")
    if len(ranked) > SKIP_REASONS_SHOWN:
        rest = sum(len(records) for _, records in ranked[SKIP_REASONS_SHOWN:])
        lines.append(f"  {rest} more for {len(ranked) - SKIP_REASONS_SHOWN} other reasons (results.json has each)")
    lines.append("A skip is not a pass: run where the adapter can, or pass --allow-skip.")
    return "\n".join(lines)
