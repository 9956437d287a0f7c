"""Kill the worker or `verify` itself at random points of a small gate: results.json must parse,
hold every record finished before the kill, and no process may be left behind."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.framework.test_reliability import alive, children, wait_for
from verify.results.store import load_results

pytestmark = pytest.mark.webgpu

GATE = ["gate", "--profile", "quick", "--kernels", "merge_state,rope,dp4a.quantize", "--jobs", "2"]
#: Seeds of the kill points; each draws how many records to wait for (0: during start-up) and a
#: delay after the last of them, so kills land in start-up, mid-check and between checks.
SEEDS = (1, 2, 3)
#: The quick gate of these kernels has 16 checks; kill before the last.
WAIT_FOR_AT_MOST = 12


class Run:
    """`verify gate` in a subprocess whose stderr lines are collected as they come."""

    def __init__(self, out: Path):
        self.proc = subprocess.Popen([sys.executable, "-m", "verify", *GATE, "--out", str(out)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        self.workers: set[int] = set()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def finished_records(self) -> int:
        return sum(line.split(" ", 1)[0] in ("PASS", "FAIL", "KNOWN", "SKIP", "ERROR") for line in list(self.lines))

    def run_until(self, seed: int, need_worker: bool = False):
        """Until the seed's kill point: a number of finished records (and a running worker, if
        asked), then a short delay."""
        rng = random.Random(seed)
        records, delay = rng.randint(0, WAIT_FOR_AT_MOST), rng.uniform(0.0, 0.6)
        while (self.finished_records() < records or (need_worker and not children(self.proc.pid))) \
                and self.proc.poll() is None:
            self.workers.update(children(self.proc.pid))
            time.sleep(0.02)
        end = time.monotonic() + delay
        while time.monotonic() < end and self.proc.poll() is None:
            self.workers.update(children(self.proc.pid))
            time.sleep(0.02)
        self.workers.update(children(self.proc.pid))


@pytest.mark.parametrize("seed", SEEDS)
def test_killing_verify_keeps_every_printed_record_and_leaves_no_worker(tmp_path, seed):
    run = Run(tmp_path / "o")
    run.run_until(seed)
    printed = run.finished_records()
    run.proc.send_signal(signal.SIGKILL)
    run.proc.wait(timeout=60)
    results = tmp_path / "o" / "results.json"
    if printed or results.exists():  # killed before it wrote anything: nothing to lose
        assert len(load_results(results).records) >= printed
    assert wait_for(lambda: not any(alive(w) for w in run.workers), 15), f"workers {run.workers} outlived verify"


@pytest.mark.parametrize("seed", SEEDS)
def test_killing_the_workers_costs_at_most_the_checks_they_ran(tmp_path, seed):
    run = Run(tmp_path / "o")
    run.run_until(seed, need_worker=True)
    victims = children(run.proc.pid)
    if not victims:
        pytest.fail("the gate finished before the kill: lower the delays")
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    code = run.proc.wait(timeout=600)
    run._reader.join(timeout=10)
    document = load_results(tmp_path / "o" / "results.json")
    assert document.complete
    # A victim is a kernel worker (its check is lost) or, during start-up, the Node process probing
    # Dawn (the Dawn implementation is then a loud skip); each costs at most one record.
    died = [r for r in document.records
            if "the process running the kernel died" in r.reason or "the Node process running Dawn died" in r.reason]
    assert len(died) <= len(victims) and code == (1 if died else 0)
    others = [r for r in document.records if r not in died]
    assert all(r.verdict.value == "pass" for r in others)
    dawn_lost = any(r.verdict.value == "skip" for r in died)
    expected = subprocess.run([sys.executable, "-c", (
        "from verify.plan import gate_implementations, gate_jobs; from verify.profiles import get_profile;"
        f"chosen = gate_implementations({'wgpu' if dawn_lost else None!r}, None);"
        "jobs, unbuilt = gate_jobs(['merge_state','rope','dp4a.quantize'], profile=get_profile('quick'), seed=0,"
        " out_dir=None, time_limit=None, implementations=list(chosen.run_on));"
        "print(len(jobs) + len(unbuilt) + len(chosen.skips()))")], capture_output=True, text=True).stdout
    assert len(document.records) == int(expected) + dawn_lost
