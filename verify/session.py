"""Run check jobs in a worker process with a per-check time limit.

A kernel that never finishes (a broken loop bound) blocks the thread waiting on the GPU and
cannot be interrupted from Python, and a driver crash takes its process down. So checks run
in a child (verify.worker); the parent enforces each job's time limit, records a failure
with the reason, restarts the worker and carries on with the remaining jobs.

The clock of a job starts when the worker says it has started the check (kernel imported,
device open, WGSL compiled), so a slow start-up is never mistaken for a hang; start-up has an
allowance of its own, and so has every pipeline compile (the worker reports them: compiling is
not running the kernel, and a busy machine with a cold shader cache compiles for minutes). A
`Session` keeps one worker for many jobs (`verify.check` and the pytest plugin reuse it across
calls); the worker dies with the process that started it.

A verdict must be true both ways, so what the session sees is not a verdict on the kernel unless
it is evidence: a time limit is verify's limit (an ERROR that names what the check was doing: the
sanitizer, which bounds every loop, is what proves a kernel never terminates), and a worker that
died runs its check again in a fresh one. Only a second death at the same point of the same cases,
while the kernel ran on the GPU, is the kernel's (a FAIL: it crashes the driver or loses the
device); a worker killed from outside (SIGKILL: the out-of-memory killer or a person), or dying at
different points, is an ERROR naming the process.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from verify._cache import cache_dir
from verify.errors import FailureKind, UsageError
from verify.gpu.compiling import COMPILING
from verify.protocol import (
    Finished,
    Job,
    Progress,
    Refused,
    Replayed,
    ReplayJob,
    Stage,
    Started,
    decode_event,
    encode_job,
)
from verify.results.record import CheckResult, Verdict
from verify.results.slices import merge_slices

#: Seconds a worker may take to import a kernel and open the device before the check's own time
#: limit starts (compiles not counted).
STARTUP_ALLOWANCE_S = 180.0
#: Seconds one compile of a pipeline may take (VERIFY_COMPILE_TIME_LIMIT), counted apart from the
#: check's time limit: TVM's prefill pipelines compile in up to 100 s on lavapipe with a cold
#: shader cache, their sanitized programs several times that, and a busy machine slows both.
COMPILE_ALLOWANCE_S = float(os.environ.get("VERIFY_COMPILE_TIME_LIMIT", "1800"))
#: Signals that come from outside the worker: a kernel cannot send them (the out-of-memory killer,
#: a person, a CI runner stopping a job).
_OUTSIDE_SIGNALS = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}


#: Process settings for workers, each taken only where the environment does not set it. The
#: float64 references and budgets are many small matrix products and short-lived arrays of a few
#: MB: one BLAS thread per worker (the gate already runs one worker per core; OpenBLAS's own
#: threads spin against each other and the software driver's), and glibc malloc keeping freed
#: arrays of up to 32 MiB for reuse (up to 256 MiB kept) instead of returning every one to the
#: system and faulting its pages in again for the next case. benchmarks/bench_reference.py and
#: docs/fastpath.md give the measurements.
_WORKER_TUNING = {"OPENBLAS_NUM_THREADS": "1", "MALLOC_MMAP_THRESHOLD_": str(32 << 20),
                  "MALLOC_TRIM_THRESHOLD_": str(256 << 20)}


class _Worker:
    def __init__(self, log_path: Path | None):
        self.log = open(log_path, "a") if log_path else subprocess.DEVNULL
        env = dict(os.environ, PYTHONUNBUFFERED="1", VERIFY_PARENT_PID=str(os.getpid()))
        # The worker imports kernels by path: it must see the modules this process sees
        # (a test module's folder that pytest put on sys.path, a package added by path).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        # Hypothesis keeps its files in .hypothesis/ of the working directory unless told otherwise.
        env.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(cache_dir() / "hypothesis"))
        for name, value in _WORKER_TUNING.items():
            env.setdefault(name, value)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "verify.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.log, text=True, env=env,
        )
        self.selector = selectors.DefaultSelector()
        assert self.proc.stdout is not None  # stdout=PIPE
        self.selector.register(self.proc.stdout, selectors.EVENT_READ)
        self.pending = b""

    def send(self, job: Job | ReplayJob) -> None:
        assert self.proc.stdin is not None  # the worker is started with stdin and stdout piped
        self.proc.stdin.write(encode_job(job) + "\n")
        self.proc.stdin.flush()

    def next_event(self, deadline: float):
        """The next event, None at the deadline; raises EOFError if the worker died.

        Reads the pipe's bytes itself: readline() would read ahead into a buffer select()
        cannot see, and a record already received would then wait there until the deadline.
        """
        assert self.proc.stdout is not None  # piped (see __init__)
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
        return decode_event(line)

    def stop(self, kill: bool = False) -> None:
        if self.proc.poll() is None:
            if kill:
                self.proc.kill()
            else:
                assert self.proc.stdin is not None  # piped (see __init__)
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.selector.close()
        if not isinstance(self.log, int):  # a file, not subprocess.DEVNULL
            self.log.close()


class Session:
    """One worker process for a sequence of jobs, restarted after a hang or a crash."""

    def __init__(self, log_path: Path | None = None):
        self.log_path = log_path
        self._worker: _Worker | None = None
        #: Set by stop(): the run is ending, so a worker that dies was killed by it, not by a crash.
        self._stopping = False

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc) -> None:
        self.close(kill=exc[0] is not None)

    def close(self, kill: bool = False) -> None:
        if self._worker is not None:
            self._worker.stop(kill=kill)
            self._worker = None

    def stop(self) -> None:
        """Kill the worker because the run is ending (an interrupt, another worker's usage error):
        the job it was running gets no second attempt."""
        self._stopping = True
        self.close(kill=True)

    def _started_worker(self) -> _Worker:
        if self._worker is None:
            self._worker = _Worker(self.log_path)
        return self._worker

    def run(self, jobs, *, on_record, on_progress=None, on_start=None) -> None:
        """Run `jobs` in order, calling on_record(CheckResult) as each finishes (also for
        time limits and crashes). A usage error the worker reports stops the run (UsageError)."""
        for job in jobs:
            if on_start:
                on_start(job)
            on_record(self._run_one(job, on_progress))

    def _send(self, job: Job | ReplayJob) -> _Worker:
        """Send a job; a worker that died while idle (nothing of it is lost) is replaced once."""
        worker = self._started_worker()
        try:
            worker.send(job)
        except (BrokenPipeError, OSError):
            self.close(kill=True)
            worker = self._started_worker()
            worker.send(job)
        return worker

    def _died(self, worker: _Worker) -> int:
        """The dead worker's exit code (negative: the signal); the worker is gone and the next job
        starts another."""
        code = worker.proc.wait()
        self.close()
        return code

    def _run_one(self, job: Job, on_progress) -> CheckResult:
        """The job's record; a worker that dies runs it once more in a fresh one (module docstring)."""
        first = self._attempt(job, on_progress)
        if not isinstance(first, _Death):
            return first
        if self._stopping:
            return job.unfinished(FailureKind.CRASH, "the run stopped while this check ran; no verdict on the kernel",
                                  0.0, first.done, verdict=Verdict.ERROR)
        second = self._attempt(job, on_progress)
        if not isinstance(second, _Death):
            return replace(second, notes=[*second.notes, f"{first.describe()}; the check ran again in a fresh process"])
        return _death_record(job, first, second, _log_hint(self.log_path))

    def _attempt(self, job: Job, on_progress) -> CheckResult | _Death:
        worker = self._send(job)
        sent = time.monotonic()
        clock = _Clock(job.time_limit, sent)
        done, last_progress, stage, current = 0, None, None, None
        while True:
            try:
                event = worker.next_event(clock.due)
            except EOFError:
                return _Death(self._died(worker), current, done, clock.started is not None)
            if event is None:
                self.close(kill=True)
                return job.unfinished(FailureKind.TIME_LIMIT,
                                      _time_limit_reason(job, clock, done, last_progress, stage),
                                      time.monotonic() - sent, done, verdict=Verdict.ERROR)
            now = time.monotonic()
            if isinstance(event, Started):
                clock.start(now)
            elif isinstance(event, Progress):
                done, last_progress = event.done, now
                if on_progress:
                    on_progress(job, event.done, event.total)
            elif isinstance(event, Stage):
                clock.stage(event.name, now)
                current = event.name
                if event.name != COMPILING:
                    stage = (event.name, now)
            elif isinstance(event, Refused):
                raise UsageError(event.message)
            elif isinstance(event, Finished):
                return event.record

    def replay(self, job: ReplayJob) -> Replayed:
        """The replay's lines; `held` is None when it could not be carried out (a time limit, a
        dead worker): that says nothing of the case either way."""
        worker = self._send(job)
        clock = _Clock(job.time_limit * job.repeat, time.monotonic())
        while True:
            try:
                event = worker.next_event(clock.due)
            except EOFError:
                death = _Death(self._died(worker), None, 0, clock.started is not None)
                return Replayed(None, (f"ERROR {death.describe()}, so the case was not replayed" +
                                       _log_hint(self.log_path),))
            if event is None:
                self.close(kill=True)
                return Replayed(None, (f"ERROR the replay did not finish within {clock.what_ran_out()}: "
                                       "too slow for this machine, or a kernel that does not return; verify did not "
                                       "prove which (the sanitize check bounds every loop)",))
            if isinstance(event, Started):
                clock.start(time.monotonic())
            elif isinstance(event, Stage):
                clock.stage(event.name, time.monotonic())
            elif isinstance(event, Refused):
                raise UsageError(event.message)
            elif isinstance(event, Replayed):
                return event


class _Clock:
    """When one job's time runs out: STARTUP_ALLOWANCE_S until the worker says the check started,
    then the job's time limit; while a pipeline compiles, COMPILE_ALLOWANCE_S for that compile,
    and the compile's seconds are added back to the other allowances, so only the kernel's own
    work, and the Python that judges it, counts against the time limit."""

    def __init__(self, time_limit: float, now: float):
        self.time_limit = time_limit
        self.deadline = now + STARTUP_ALLOWANCE_S
        self.started: float | None = None
        self.compiling_since: float | None = None

    @property
    def due(self) -> float:
        if self.compiling_since is not None:
            return self.compiling_since + COMPILE_ALLOWANCE_S
        return self.deadline

    def start(self, now: float) -> None:
        self.stage("", now)
        self.started, self.deadline = now, now + self.time_limit

    def stage(self, name: str, now: float) -> None:
        if name == COMPILING:
            if self.compiling_since is None:
                self.compiling_since = now
        elif self.compiling_since is not None:
            self.deadline += now - self.compiling_since
            self.compiling_since = None

    def what_ran_out(self) -> str:
        """The allowance that ran out, in words."""
        if self.compiling_since is not None:
            return f"the {COMPILE_ALLOWANCE_S:g} s allowed for one compile"
        if self.started is None:
            return f"the {STARTUP_ALLOWANCE_S:g} s allowed for start-up"
        return f"the {self.time_limit:g} s time limit"


@dataclass(frozen=True)
class _Death:
    """A worker that died during a job: its exit code (negative: the signal that ended it), what
    the check was doing (the last stage it reported), and how many examples had passed."""

    code: int
    stage: str | None
    done: int
    started: bool

    @property
    def signal(self) -> signal.Signals | None:
        try:
            return signal.Signals(-self.code) if self.code < 0 else None
        except ValueError:
            return None

    @property
    def from_outside(self) -> bool:
        return self.signal in _OUTSIDE_SIGNALS

    def describe(self) -> str:
        how = f"killed by {self.signal.name}" if self.signal else f"exited with code {self.code}"
        if self.from_outside:
            how += " (sent from outside: the out-of-memory killer, a person or a CI runner)"
        where = f"while {_STAGES.get(self.stage, self.stage)}" if self.stage else \
            ("before the check started" if not self.started else "")
        return f"the process running the check was {how}" + (f" {where}" if where else "") + \
            f", after {self.done} examples"

    def same_point(self, other: _Death) -> bool:
        return (self.stage, self.done, self.code) == (other.stage, other.done, other.code)


def _death_record(job: Job, first: _Death, second: _Death, hint: str) -> CheckResult:
    """The record of a job whose worker died twice: the kernel's failure only where the deaths are
    evidence against it (the same crash at the same point of the same cases, during its dispatch)."""
    if second.same_point(first) and first.stage == "GPU" and not first.from_outside:
        return job.unfinished(FailureKind.CRASH,
                              f"{second.describe()}, twice at the same point of the same cases: the kernel crashes "
                              "the driver or loses the device" + hint, 0.0, second.done)
    return job.unfinished(FailureKind.CRASH,
                          f"{first.describe()}; run again, "
                          f"{second.describe().replace('the process running the check ', '', 1)}"
                          ": what runs the kernel broke, not shown to be the kernel, so no verdict on it" + hint,
                          0.0, second.done, verdict=Verdict.ERROR)


def run_jobs(jobs, *, on_record, on_progress=None, on_start=None, on_batch=None, log_path: Path | None = None,
             workers: int = 1, deadline: float | None = None) -> None:
    """Run `jobs` in `workers` worker processes (see Session.run), each job on one of them.

    Every job is independent (its own seed, its own cases), so the records are the same
    whichever worker runs a job and in whatever order the jobs finish; only the order in which
    on_record sees them changes. The slices of one check (Job.slice) are merged into its one
    record when the last arrives (verify.results.slices). The callbacks are called one at a time,
    on_record always from the calling thread. `on_batch` is called after the records that arrived
    together have been passed to on_record (after each one when they come one at a time): the
    place for work done once per batch, such as writing the results file.

    `deadline` (time.monotonic()) is a budgeted gate's (verify.plan.budgeted): past it no further
    random part starts but the first of a check whose corners ran no example (corners always run,
    and no check passes on no example); the parts that ran of each check are merged into its
    record, which says what was planned.
    """
    from verify.checks.shared_cases import mark_shared_cases

    jobs = mark_shared_cases(list(jobs))
    merger = _SliceMerger(jobs, on_record)
    workers = max(1, min(int(workers), len(jobs) or 1))
    try:
        if workers == 1:
            with Session(log_path) as session:
                for job in jobs:
                    if _past(deadline, job, merger.drawn):
                        continue
                    if on_start:
                        on_start(job)
                    merger(job, session._run_one(job, on_progress))
                    if on_batch:
                        on_batch()
        else:
            _run_parallel(jobs, workers, merger, on_progress, on_start, on_batch, log_path, deadline, merger.drawn)
    except BaseException:
        merger.flush()  # the parts that finished are results: an interrupted run keeps them
        raise
    if merger.flush() and on_batch:
        on_batch()


def _past(deadline: float | None, job, drawn: set | frozenset = frozenset()) -> bool:
    """Whether `job` is a random part of a budgeted check that must not start any more, the budget
    being spent. A check's first part still runs unless its corners part ran an example (`drawn`:
    the ids of those checks): a check of a kernel without corner cases would otherwise pass having
    run no example at all."""
    if deadline is None or job.part != "random" or time.monotonic() < deadline:
        return False
    return job.slice[0] > 1 or job.id in drawn


class _SliceMerger:
    """Passes records on as they come, except a slice's, which waits for its check's others."""

    def __init__(self, jobs, on_record):
        self.expected = Counter(job.id for job in jobs if job.slice is not None)
        #: A budgeted check's parts (verify.plan.budgeted), run or not: job id -> {k: examples}.
        self.planned: dict[int, dict] = {}
        for job in jobs:
            if job.part:
                self.planned.setdefault(job.id, {})[job.slice[0]] = job.examples
        self.waiting: dict[int, list] = {}
        self.on_record = on_record
        #: The checks whose corners part ran at least one example (verify.session._past).
        self.drawn: set[int] = set()

    def __call__(self, job, record) -> None:
        if job.slice is None:
            self.on_record(record)
            return
        if job.part == "corners" and record.examples:
            self.drawn.add(job.id)
        parts = self.waiting.setdefault(job.id, [])
        parts.append((job.slice, record))
        if len(parts) == self.expected[job.id]:
            del self.waiting[job.id]
            self._merge(job.id, parts)

    def _merge(self, job_id: int, parts: list) -> None:
        self.on_record(merge_slices([r for _, r in parts], [k for k, _ in parts], self.planned.get(job_id)))

    def flush(self) -> bool:
        """Merge the checks some of whose parts never ran (a budget spent, an interrupted run: what
        ran is kept, and the record says what did not); whether there were any."""
        left = sorted(self.waiting.items())
        self.waiting.clear()
        for job_id, parts in left:
            self._merge(job_id, parts)
        return bool(left)


def _run_parallel(jobs, workers: int, on_record, on_progress, on_start, on_batch, log_path: Path | None,
                  deadline: float | None = None, drawn: set | frozenset = frozenset()) -> None:
    """Each worker's thread sends it the next job as soon as it hands over a record; the calling
    thread records them. A worker never waits while the results file is written: with 16 workers
    that wait (a rewrite of the whole file per record, under the lock every worker reports
    through) kept them idle for a quarter of a gate on the GPU machine. Jobs go out in plan order,
    save that two checks of one config do not compile its pipelines at once (_JobPicker)."""
    import queue
    import threading

    pending = _JobPicker(jobs, deadline, drawn, workers)
    finished: queue.Queue = queue.Queue()  # (job, record) from the workers' threads
    lock = threading.Lock()
    failures: list[BaseException] = []
    sessions = [Session(_numbered(log_path, i)) for i in range(workers)]
    stop = threading.Event()

    def serialised(callback):
        if callback is None:
            return None

        def call(*args):
            with lock:
                if not stop.is_set():
                    callback(*args)
        return call

    progress, started = serialised(on_progress), serialised(on_start)

    def drain(session: Session, worker: int) -> None:
        try:
            while not stop.is_set():
                job = pending.take(worker)
                if job is None:
                    # Nothing left for this worker: it exits now, beside the others' last jobs,
                    # instead of one after another once all are done.
                    session.close()
                    return
                if started:
                    started(job)
                finished.put((job, session._run_one(job, pending.progressed(progress))))
                pending.compiled(job)
        except BaseException as exc:  # a usage error (or worse) stops every worker
            failures.append(exc)
            stop.set()

    def record_batch(block: bool) -> None:
        batch = [finished.get(timeout=0.2)] if block else []
        while True:
            try:
                batch.append(finished.get_nowait())
            except queue.Empty:
                break
        if not batch:
            return
        with lock:
            if stop.is_set():
                return
            for job, result in batch:
                on_record(job, result)
        if on_batch:
            on_batch()

    threads = [threading.Thread(target=drain, args=(session, i), daemon=True) for i, session in enumerate(sessions)]
    for thread in threads:
        thread.start()
    try:
        while any(thread.is_alive() for thread in threads):
            try:
                record_batch(block=True)
            except queue.Empty:
                pass
        record_batch(block=False)
    except BaseException:
        stop.set()
        for session in sessions:
            session.stop()
        raise
    finally:
        for session in sessions:
            session.close(kill=stop.is_set())
    if failures:
        raise failures[0]


class _JobPicker:
    """Hands the jobs out in plan order, with three exceptions, none of which makes a worker wait
    for a job (when every job left is held back, the first goes):

    - a job waits while another job of its compile group (verify.plan.compile_group: the same
      kernel, config and subgroup width) has started and not yet finished an example, if a job of
      another group can go instead. On a cold shader cache lavapipe compiles one of TVM's prefill
      pipelines in up to 100 s; two workers starting two checks of one config at once both
      compiled it, where the second now finds it in the driver's cache. Warm, the first example
      comes within about a second, so the order barely changes;
    - a check whose worker opens something costly that stays open (Check.worker_state: the toggles
      check's Dawn devices) goes to a worker that has it open, or to one of at most
      `workers // 4` (at least one) that may open it, while another job can go instead. On a
      16-core NVIDIA machine every worker opened the toggles check's three Dawn devices, 2-3 s
      each: a sixth of a gate's worker time, and three Node processes a worker on the GPU;
    - the jobs that draw the same cases (Job.shares_cases: a check of a config at each subgroup
      width and on each implementation) go to the worker that took the first of them, each as
      soon as it asks for its next job, so that it computes their references once
      (verify.checks.shared_cases). The nightly's six width runs of `flash_attn_tile`'s largest
      config took 73-80 s each, most of it the same float64 references.

    Within the next `workers` jobs it may take, a worker takes first one of a config it has run
    (its WGSL parsed, its pipelines compiled in that process), else one whose device it has open
    (a device per implementation and limits: plain, sanitized, held to 16 or 32 KiB of workgroup
    memory); else the next. Opening a wgpu device on NVIDIA takes about a second, and with 16
    workers each had opened four. Random parts under a budget keep their order (a faster machine
    runs a longer prefix of the same sequence), so only corners and unbudgeted jobs move."""

    def __init__(self, jobs, deadline: float | None = None, drawn: set | frozenset = frozenset(), workers: int = 1):
        import threading

        from verify.checks import get_check
        from verify.checks.shared_cases import family
        from verify.plan import compile_group

        self._jobs = list(jobs)
        self._deadline = deadline
        self._drawn = drawn
        self._groups = {id(job): compile_group(job) for job in self._jobs}
        self._families = {id(job): family(job) for job in self._jobs if job.shares_cases}
        self._owners: dict = {}  # family -> the worker that runs its jobs
        self._states = {id(job): get_check(job.check).worker_state for job in self._jobs}
        self._holders: dict = {}  # worker state -> the workers that have it open
        self._holders_at_most = max(1, workers // 4)
        self._compiling: Counter = Counter()  # group -> its jobs started and not past their first example
        self._open: set = set()  # id() of those jobs
        self._window = max(1, workers)
        self._ran: dict = {}  # worker -> the compile groups it has run
        self._devices: dict = {}  # worker -> the devices (job_device) it has opened
        self._lock = threading.Lock()

    def take(self, worker: int = 0):
        """The next job for worker number `worker` to run, or None when none is left."""
        with self._lock:
            self._jobs = [job for job in self._jobs if not _past(self._deadline, job, self._drawn)]
            if not self._jobs:
                return None
            free = [i for i, job in enumerate(self._jobs) if not self._compiling[self._groups[id(job)]]
                    and self._owner_or_none(worker, job)]
            allowed = [i for i in free if self._may_open(worker, self._jobs[i])]
            index = self._sibling(worker, allowed)
            if index is None:
                index = self._nearest(worker, allowed) if allowed else (free[0] if free else 0)
            job = self._jobs.pop(index)
            if job.shares_cases and self._families[id(job)] not in self._owners and self._movable(job):
                self._owners[self._families[id(job)]] = worker
            state = self._states[id(job)]
            if state is not None:
                self._holders.setdefault(state, set()).add(worker)
            self._ran.setdefault(worker, set()).add(self._groups[id(job)])
            self._devices.setdefault(worker, set()).add(job_device(job))
            self._compiling[self._groups[id(job)]] += 1
            self._open.add(id(job))
            return job

    def _nearest(self, worker: int, allowed: list[int]) -> int:
        """Of the jobs at `allowed` (indices, in order), the one `worker` runs with least set-up."""
        window: list[int] = []
        for i in allowed[:self._window]:
            if window and self._deadline is not None and self._jobs[i].part == "random":
                break  # a budget's random parts keep their order
            window.append(i)
        ran, opened = self._ran.get(worker, set()), self._devices.get(worker, set())
        return next((i for i in window if self._groups[id(self._jobs[i])] in ran),
                    next((i for i in window if job_device(self._jobs[i]) in opened), window[0]))

    def _movable(self, job) -> bool:
        """Whether the picker may take `job` out of plan order: a budget's random parts keep it."""
        return not (self._deadline is not None and job.part == "random")

    def _owner_or_none(self, worker: int, job) -> bool:
        """Whether `job` may go to `worker` as far as its family goes (Job.shares_cases): a
        family's jobs go to the worker that took its first, which keeps their references."""
        if not job.shares_cases or not self._movable(job):
            return True
        return self._owners.get(self._families[id(job)], worker) == worker

    def _sibling(self, worker: int, allowed: list[int]) -> int | None:
        """The first job at `allowed` of a family whose jobs `worker` runs: the next of them goes
        as soon as that worker asks, while the references of the cases they share are in its
        memory (verify.checks.shared_cases)."""
        for i in allowed:
            job = self._jobs[i]
            if job.shares_cases and self._movable(job) and self._owners.get(self._families[id(job)]) == worker:
                return i
        return None

    def _may_open(self, worker: int, job) -> bool:
        """Whether `worker` runs `job` without opening a costly state more workers than allowed."""
        state = self._states[id(job)]
        holders = self._holders.get(state, set())
        return state is None or worker in holders or len(holders) < self._holders_at_most

    def compiled(self, job) -> None:
        """`job` has run an example (its pipelines are compiled and in the driver's cache) or ended."""
        with self._lock:
            if id(job) in self._open:
                self._open.discard(id(job))
                self._compiling[self._groups[id(job)]] -= 1

    def progressed(self, on_progress):
        """on_progress, also telling the picker that the job's first example has run."""
        def progress(job, done, total):
            self.compiled(job)
            if on_progress:
                on_progress(job, done, total)
        return progress


@lru_cache(maxsize=4096)
def _device_of(kernel_ref: str, config: str, check: str, implementation: str) -> tuple:
    from verify.checks import get_check
    from verify.kernels.registry import load_kernel

    try:
        kernel = load_kernel(kernel_ref)
        limits = get_check(check).opened_limits(kernel, kernel.config(json.loads(config)))
    except Exception:  # noqa: BLE001 - the order only: the job reports what fails
        return (implementation, None)
    return (implementation, json.dumps(limits, sort_keys=True))


def job_device(job) -> tuple:
    """The device a worker opens for `job` (verify.worker.DeviceCache's key, less the adapter,
    which is the gate's): its implementation and Check.opened_limits."""
    from verify.gpu.implementations import default_implementation

    return _device_of(job.kernel_ref, json.dumps(job.config, sort_keys=True, default=str), job.check,
                      job.implementation or default_implementation())


def _numbered(log_path: Path | None, index: int) -> Path | None:
    if log_path is None or index == 0:
        return log_path
    return Path(log_path).with_name(f"{Path(log_path).stem}-{index + 1}{Path(log_path).suffix}")


#: What a check was doing when its time ran out, by the stage it last reported (verify.protocol.Stage).
_STAGES = {
    "GPU": "waiting on the kernel's dispatch on the GPU",
    "reference": "computing the float64 reference and budget (the kernel's `expected`, Python): a slow reference, "
                 "not a hung kernel",
    "compare": "comparing outputs with the reference",
    "drawing cases": "drawing cases (Hypothesis and the kernel's `cases`, Python), not running the kernel",
    COMPILING: "compiling the kernel's pipelines (the implementation's compiler, not the kernel)",
    "starting": "starting the check (importing the kernel, opening the device)",
}
#: Said of every time limit: it is verify's limit, not a verdict.
_NO_VERDICT = "no verdict on the kernel"


def _time_limit_reason(job: Job, clock: _Clock, done: int, last_progress: float | None,
                       stage: tuple | None = None) -> str:
    """Why a job ran out of time, naming what it was doing and the machine's part in it: a time
    limit is verify's own limit (the record is an ERROR), so the reason says how to give the check
    the time it needs, and where the kernel may be at fault, how verify would prove it."""
    if clock.compiling_since is not None:
        return (f"one compile of the kernel's pipelines took more than {COMPILE_ALLOWANCE_S:g} s "
                "(VERIFY_COMPILE_TIME_LIMIT): a slow or overloaded machine, or a compiler that does not return; "
                f"{_NO_VERDICT}")
    if clock.started is None:
        return (f"did not start within {STARTUP_ALLOWANCE_S:g} s (importing the kernel and opening the device; "
                f"compiles not counted): a slow or overloaded machine; {_NO_VERDICT}")
    now = time.monotonic()
    passed = f"{done} of {job.examples} examples passed"
    if done and last_progress is not None and now - last_progress < job.time_limit / 4:
        return (f"did not finish within the {job.time_limit:g} s time limit: {passed}, the last "
                f"{now - last_progress:.0f} s before the limit (too slow for this machine, not hung: raise "
                f"--time-limit or draw fewer --examples); {_NO_VERDICT}")
    if stage is not None and stage[0] != "GPU":
        return (f"did not finish within the {job.time_limit:g} s time limit: {passed}; for the last "
                f"{now - stage[1]:.0f} s it was {_STAGES.get(stage[0], stage[0])} (raise --time-limit or draw "
                f"smaller cases); {_NO_VERDICT}")
    since = f", none in the last {now - last_progress:.0f} s" if last_progress is not None else ""
    machine = " (a slow or overloaded machine?)" if not done else ""
    return (f"did not finish within the {job.time_limit:g} s time limit: {passed}{since}, and the kernel's "
            f"dispatch had not returned{machine}. Too slow for this machine, or a kernel that never terminates: "
            "verify did not prove which (the sanitize check bounds every loop and names one that never ends); "
            f"{_NO_VERDICT}")


def _log_hint(log_path: Path | None) -> str:
    if not log_path or not Path(log_path).exists():
        return ""
    tail = Path(log_path).read_text(errors="replace").strip().splitlines()[-3:]
    return ("; last worker output: " + " | ".join(tail)) if tail else ""
