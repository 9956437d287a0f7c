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
#: The quick gate of these kernels has 90 checks (on wgpu and Dawn); kill well before the last.
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
    # Between the start-up probe of Dawn (a Node process that exits) and the first worker there is
    # a moment with no child at all: wait it out rather than calling the kill point missed.
    victims = children(run.proc.pid)
    while not victims and run.proc.poll() is None:
        time.sleep(0.02)
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
    # A victim is a kernel worker (its check runs again in a fresh worker, and holds: a worker
    # killed from outside is no verdict on the kernel) or, during start-up, the Node process
    # probing Dawn (the Dawn implementation is then a loud skip).
    died = [r for r in document.records if "the Node process running Dawn died" in r.reason]
    again = [r for r in document.records if any("ran again in a fresh process" in note for note in r.notes)]
    assert len(died) + len(again) <= len(victims) and code == (1 if died else 0)
    assert all("killed by SIGKILL" in note for r in again for note in r.notes if "ran again" in note)
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


def _node_processes(pid: int) -> list[int]:
    """Node processes below `pid` (Dawn's, started by a worker)."""
    found, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            todo.append(child)
            try:
                if Path(f"/proc/{child}/comm").read_text().strip() == "node":
                    found.append(child)
            except FileNotFoundError:
                pass
    return found


def test_a_dead_dawn_process_costs_one_check_as_an_infrastructure_error(tmp_path):
    """Dawn's Node process killed mid-run: the check it was running is an ERROR naming Dawn's
    process (not a FAIL of the kernel), the next checks open Dawn again and hold, nothing is left."""
    from verify.gpu.implementations import implementation

    try:
        implementation("dawn").available()
    except Exception as exc:  # noqa: BLE001 - any reason Dawn cannot run here
        pytest.skip(f"Dawn cannot run here: {exc}")
    # Node processes this test process already has (another test's ORT runtime, kept for the
    # life of the process) are not this run's.
    earlier = set(_node_processes(os.getpid()))
    out = tmp_path / "o"
    proc = subprocess.Popen([sys.executable, "-m", "verify", "check", "merge_state", "rope", "--implementation", "dawn",
                             "--checks", "reference,determinism", "--examples", "200", "--jobs", "1",
                             "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    def lasting() -> list[int]:
        """Node processes that live on (the worker's device), not the short probes of start-up."""
        first = set(_node_processes(proc.pid))
        time.sleep(1.0)
        return sorted(first & set(_node_processes(proc.pid)))

    victims: list[int] = []
    assert wait_for(lambda: victims.extend(lasting()) or victims or proc.poll() is not None, 600)
    if not victims:
        pytest.fail("the run finished before Dawn started")
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _, stderr = proc.communicate(timeout=1800)
    records = load_results(out / "results.json").records
    errors = [r for r in records if r.verdict.value == "error"]
    assert len(errors) <= 1 and proc.returncode == (1 if errors else 0), stderr[-3000:]
    for record in errors:
        assert "Node process running Dawn died" in record.reason and "not the kernel" in record.reason
        assert record.failure_kind.value == "crash or device lost"
    assert all(r.verdict.value == "pass" for r in records if r not in errors)
    assert len(records) == 4
    assert wait_for(lambda: not any(alive(p) for p in victims + sorted(set(_node_processes(os.getpid())) - earlier)), 15)


def test_a_shard_killed_mid_run_fails_the_strict_merge(tmp_path):
    shard = ["gate", "--profile", "quick", "--kernels", "merge_state,rope", "--implementation", "wgpu", "--jobs", "1"]
    first = subprocess.run([sys.executable, "-m", "verify", *shard, "--shard", "1/2", "--out", str(tmp_path / "a")],
                           capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr
    run = subprocess.Popen([sys.executable, "-m", "verify", *shard, "--shard", "2/2", "--out", str(tmp_path / "b")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in run.stderr:
        lines.append(line)
        if line.startswith("PASS"):
            run.send_signal(signal.SIGKILL)
            break
    run.wait(timeout=60)
    merged = subprocess.run([sys.executable, "-m", "verify", "report", str(tmp_path / "a" / "results.json"),
                             str(tmp_path / "b" / "results.json"), "-o", str(tmp_path / "r.html"), "--strict"],
                            capture_output=True, text=True, timeout=300)
    assert merged.returncode == 1, merged.stderr
    assert "did not finish" in merged.stderr or "have no record" in merged.stderr
