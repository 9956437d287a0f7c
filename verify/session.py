"""Run check jobs in a worker process with a per-check time limit.

A kernel that never finishes (a broken loop bound) blocks the thread waiting on the GPU and
cannot be interrupted from Python, and a driver crash takes its process down. So checks run
in a child (verify.worker); the parent enforces each job's time limit, records a failure
with the reason, restarts the worker and carries on with the remaining jobs.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from verify.errors import UsageError


@dataclass
class Job:
    kernel: str
    config: dict
    check: str
    examples: int
    seed: int
    profile: str = "ci"
    wgsl: str | None = None
    origin: str = ""
    origin_kind: str = ""
    out_dir: str | None = None
    adapter: str | None = None
    backend: str | None = None  # WebGPU implementation, verify.gpu.backends ("wgpu" | "dawn")
    time_limit: float = 600.0
    extra: dict = field(default_factory=dict)

    def payload(self) -> dict:
        data = {k: v for k, v in self.__dict__.items() if k not in ("time_limit", "extra") and v not in (None, "")}
        return {**data, **self.extra}

    def identity(self) -> dict:
        return {"kernel": self.kernel, "config": self.config, "check": self.check, "seed": self.seed,
                "profile": self.profile, "source": {"kind": self.origin_kind or "own", "origin": self.origin}}


class _Worker:
    def __init__(self, log_path: Path | None):
        self.log = open(log_path, "a") if log_path else subprocess.DEVNULL
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "verify.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True, env=env,
        )
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.pending = b""

    def send(self, job: Job) -> None:
        self.proc.stdin.write(json.dumps(job.payload()) + "\n")
        self.proc.stdin.flush()

    def next_event(self, deadline: float) -> dict | None:
        """The next event, None at the deadline; raises EOFError if the worker died.

        Reads the pipe's bytes itself: readline() would read ahead into a buffer select()
        cannot see, and a record already received would then wait there until the deadline.
        """
        while b"\n" not in self.pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if self.selector.select(timeout=min(remaining, 1.0)):
                chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
                if not chunk:
                    raise EOFError
                self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return json.loads(line)

    def stop(self, kill: bool = False) -> None:
        if self.proc.poll() is None:
            if kill:
                self.proc.kill()
            else:
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.log is not subprocess.DEVNULL:
            self.log.close()


def run_jobs(jobs: list[Job], *, on_record, on_progress=None, on_start=None, log_path: Path | None = None) -> None:
    """Run `jobs` in order, calling on_record(record) as each finishes (also for timeouts)."""
    pending = deque(jobs)
    worker = None
    try:
        while pending:
            job = pending.popleft()
            if worker is None:
                worker = _Worker(log_path)
            if on_start:
                on_start(job)
            worker.send(job)
            deadline = time.monotonic() + job.time_limit
            started = time.monotonic()
            while True:
                try:
                    event = worker.next_event(deadline)
                except EOFError:
                    code = worker.proc.wait()
                    worker.stop()
                    worker = None
                    on_record(dict(job.identity(), verdict="fail", examples=0, duration_s=round(time.monotonic() - started, 3),
                                   reason=f"the process running the kernel died (exit code {code}): a crash "
                                          "or a lost device" + _log_hint(log_path)))
                    break
                if event is None:
                    worker.stop(kill=True)
                    worker = None
                    on_record(dict(job.identity(), verdict="fail", examples=0, duration_s=round(time.monotonic() - started, 3),
                                   reason=f"did not finish within the {job.time_limit:g} s time limit "
                                          "(a kernel that never terminates?)"))
                    break
                if event["event"] == "progress":
                    if on_progress:
                        on_progress(job, event["done"], event["total"])
                elif event["event"] == "usage_error":
                    raise UsageError(event["message"])
                elif event["event"] == "record":
                    on_record(event["record"])
                    break
    finally:
        if worker is not None:
            worker.stop(kill=bool(pending))


def _log_hint(log_path: Path | None) -> str:
    if not log_path or not Path(log_path).exists():
        return ""
    tail = Path(log_path).read_text(errors="replace").strip().splitlines()[-3:]
    return ("; last worker output: " + " | ".join(tail)) if tail else ""
