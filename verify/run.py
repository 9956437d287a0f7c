"""One run of verify: plan → execute → record → report.

`verify gate`, `verify check`, the pytest plugin (`pytest --verify-gate`) and the Python API all
plan with the same functions here, and the two commands run through the same `Run`:

    plan = plan_gate(None, profile=get_profile("ci"), out_dir=Path("reports"))
    outcome = Run(plan, Outputs.checked("reports", junit="reports/junit.xml")).execute()
    sys.exit(outcome.exit_code(allow_skip=False))

- planning (`plan_gate`, `plan_check`) turns names into jobs: the records known before any job
  runs (kernels that could not be planned, implementations that are not here) ride with the plan
  as `Plan.prior`, so a report names every kernel, run or not;
- `Run` decides what of the plan runs now (`Schedule`: --reuse takes unchanged passes, slices and
  budgets order the rest) and runs it in worker processes, writing results.json after every batch
  of records, printing each record once it is in the file, refreshing report.html now and then,
  and writing the report, JUnit and SARIF at the end; a signal stops it with what finished kept;
- `Outcome` is what the run ends with: its records, whether it was interrupted, and its exit code
  (docs/architecture.md §5).

Every line this module prints goes to standard error through `say` (the commands' and the
pytest plugin's own output stays theirs).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TypedDict

from verify.errors import UsageError
from verify.profiles import Profile
from verify.protocol import Job
from verify.results.record import CheckResult, Verdict
from verify.results.store import PlanIdentity

#: The files a run writes into its output folder.
RUN_FILES = ("results.json", "report.html", ".verify.lock")
#: Seconds between refreshes of report.html during a run (at least).
REPORT_REFRESH_S = 60.0
#: At most this share of a run's time goes to refreshing report.html before its end.
REPORT_REFRESH_SHARE = 0.05


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


# -- where a run writes ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Outputs:
    """Where a run writes: its folder (results.json, report.html, cases) and the optional JUnit and
    SARIF files. Made by `Outputs.checked`, which refuses, in the first second and with one line
    naming the option, a destination that cannot be written or that would overwrite results."""

    folder: Path
    junit: Path | None = None
    sarif: Path | None = None

    @classmethod
    def checked(cls, out: str | os.PathLike, *, junit: str | os.PathLike | None = None,
                sarif: str | os.PathLike | None = None) -> Outputs:
        folder = run_folder(out)
        return cls(folder, junit_file(junit, folder), sarif_file(sarif, folder))


def run_folder(path: str | os.PathLike) -> Path:
    """--out as a folder a run can write into (made if missing), its run files not folders."""
    from verify.results.destination import output_folder

    out = output_folder(path, "--out")
    for name in RUN_FILES:
        if (out / name).is_dir():
            raise UsageError(f"--out {os.fspath(path)}: {out / name} is a folder; a run writes a file there")
    return out


def junit_file(junit: str | os.PathLike | None, out_dir: Path | None = None) -> Path | None:
    """The --junit file, checked before the run: a path that cannot be written fails now, not
    after an hour of checks, and a path that would overwrite the run's own results (results.json,
    report.html, the lock) or any results file is refused."""
    return _extra_file(junit, "--junit", out_dir, "junit.xml")


def sarif_file(sarif: str | os.PathLike | None, out_dir: Path | None = None) -> Path | None:
    """The --sarif file, checked before the run as --junit is."""
    return _extra_file(sarif, "--sarif", out_dir, "verify.sarif")


def _extra_file(path: str | os.PathLike | None, option: str, out_dir: Path | None, example: str) -> Path | None:
    from verify.results.destination import output_file

    if path is None:
        return None
    text = os.fspath(path)
    if out_dir is not None and Path(text).resolve() in {(out_dir / name).resolve() for name in RUN_FILES}:
        raise UsageError(f"{option} {text}: is one of the run's own files in {out_dir}; name another file "
                         f"(e.g. {out_dir / example})")
    refuse_results_file(Path(text), option)
    return output_file(text, option)


def refuse_results_file(path: Path, option: str) -> None:
    """UsageError if `path` holds a verify results file: writing there would destroy results."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return
    if b'"verify.results/' in head:
        raise UsageError(f"{option} {path}: holds verify results; writing there would destroy them")


def write_sarif(path: Path, documents: list, wgsl_dir: Path, *, rebuild: bool, complete: bool,
                say: Callable[[str], None] = _stderr) -> None:
    """SARIF of the records (verify.report.sarif); the WGSL a result points at without a file of
    its own goes to `wgsl_dir`. A write the disk refuses is one line, the rest being written."""
    from verify.report.sarif import write_sarif as write

    try:
        count = write(Path(path), documents, wgsl_dir=wgsl_dir, rebuild=rebuild, complete=complete)
    except OSError as exc:
        raise UsageError(f"--sarif {path}: cannot write ({exc.strerror or exc})") from None
    say(f"sarif: {path} ({count} result{'' if count == 1 else 's'})")


def write_report(document, out_dir: Path, processes: int = 1, say: Callable[[str], None] = _stderr) -> None:
    """The run's report.html; a report that cannot be written is a warning, never the end of the
    run (results.json holds every record whatever happens here). Refreshes during the run draw
    in this process, beside the workers; the last render uses `processes`."""
    from verify.report import render_report

    try:
        render_report([document], out_dir / "report.html", processes=processes)
    except Exception as exc:
        say(f"verify: warning: {out_dir / 'report.html'} was not written ({type(exc).__name__}: {exc}); "
            f"{out_dir / 'results.json'} is complete, and `verify report` renders it again")


# -- planning --------------------------------------------------------------------------------------
@dataclass
class Plan:
    """What a run is asked to verify: the jobs to run, and the records known before any job runs
    (`prior`: kernels that could not be planned, implementations that are not here).

    `identity` names every planned kernel, run or not, for the report; `planned` counts the
    jobs and records of the whole plan (of every shard); `adapters` is the adapters listing the
    plan was made with, reused to digest each job's inputs."""

    command: str
    profile: Profile
    seed: int
    jobs: list[Job]
    prior: list[CheckResult] = field(default_factory=list)
    identity: PlanIdentity | None = None
    planned: int = 0
    shard: str = ""
    adapter: str | None = None
    adapters: dict | None = None
    #: (kernel, the implementations it runs on) of kernels left out because the gate was asked for
    #: an implementation they do not run on.
    unplanned: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)


def plan_gate(kernels: Sequence[str] | None, *, profile: Profile, seed: int = 0, out_dir: Path | None = None,
              time_limit: float | None = None, adapter: str | None = None, implementation: str | None = None,
              workers: int = 1, shard: tuple[int, int] | None = None) -> Plan:
    """Every (kernel, config, check) of the gate: `kernels` (names or import paths; None: every
    registered kernel) on every implementation installed, or only on `implementation` when one is
    named (kernels that run only elsewhere are then in `Plan.unplanned`). `shard` (K, N) keeps the
    K-th of N deterministic shares of the jobs; the kernels that could not be planned go with the
    first. UsageError when `kernels` names kernels that offer nothing in this profile."""
    from verify.plan import gate_implementations, gate_jobs, plan_identity, select_shard

    names = list(kernels) if kernels is not None else None
    chosen = gate_implementations(implementation, adapter)
    unplanned: list | None = [] if implementation else None
    jobs, skipped = gate_jobs(names, profile=profile, seed=seed, out_dir=out_dir, time_limit=time_limit,
                              adapter=adapter, implementations=list(chosen.run_on),
                              unavailable=tuple(chosen.unavailable), unplanned=unplanned, workers=workers)
    skipped += chosen.skips()
    if names and not jobs and not skipped and not unplanned:
        raise UsageError(f"nothing to verify: {', '.join(names)} offer{'s' if len(names) == 1 else ''} no configs in "
                         f"the {profile.name} profile (`verify list` shows each kernel's; "
                         f"`verify check KERNEL` runs one directly)")
    planned = len(jobs) + len(skipped)
    identity = plan_identity(jobs, skipped, profile, seed).laid_out(jobs)  # the report names the kernels not run
    shard_text = ""
    if shard:
        index, count = shard
        jobs, skipped = select_shard(jobs, index, count), (skipped if index == 1 else [])
        shard_text = f"{index}/{count}"
    chosen.require_adapter(chosen.run_on[0], adapter)  # a typo in --adapter: one line before anything is written
    return Plan("gate", profile, seed, jobs, skipped, identity, planned, shard_text, adapter, chosen.adapters,
                list(unplanned or []))


class _CheckOptions(TypedDict):
    """What plan_check passes on to each kernel's check_jobs and width_jobs."""

    profile: Profile
    examples: int
    seed: int
    out_dir: Path | None
    time_limit: float | None
    adapter: str | None
    wgsl: str | None
    wgsl_origin: str
    implementation: str | None


def plan_check(kernels: Sequence[str | type], overrides: dict | None = None, *, profile: Profile, examples: int,
               seed: int = 0, out_dir: Path | None = None, checks: Sequence[str] | None = None,
               subgroup_width: int | str | None = "profile", time_limit: float | None = None,
               adapter: str | None = None, implementation: str | None = None, wgsl: str | None = None,
               wgsl_origin: str = "", require_adapters: bool = True) -> Plan:
    """The checks of `kernels` at one config each (`overrides` over the defaults): `examples`
    per check, `checks` a subset of each kernel's. `subgroup_width`: an emulated width, "native"
    (the adapter's own only) or "profile" (the adapter's own, and the checks that say so again at
    each of the profile's widths, as the gate does). `wgsl` checks that text under the one kernel's
    contract instead of its own WGSL. `require_adapters` says a missing adapter now, before any
    job (the API leaves that to the worker, so its caller's process never loads a WebGPU library)."""
    from verify.plan import check_jobs, numbered, plan_identity, width_jobs

    if wgsl is not None and len(kernels) != 1:
        raise UsageError("--wgsl checks one file under one kernel's contract; name exactly one kernel")
    width = subgroup_width if isinstance(subgroup_width, int) else None
    options = _CheckOptions(profile=profile, examples=examples, seed=seed, out_dir=out_dir, time_limit=time_limit,
                            adapter=adapter, wgsl=wgsl, wgsl_origin=wgsl_origin, implementation=implementation)
    jobs: list[Job] = []
    for name in kernels:
        planned = check_jobs(name, overrides, checks=list(checks) if checks is not None else None,
                             subgroup_width=width, **options)
        jobs += planned
        if subgroup_width == "profile":  # a kernel on subgroups also at the widths real GPUs have
            jobs += width_jobs(name, overrides, planned, **options)
    jobs = numbered(jobs)
    for runs_on in sorted({job.implementation for job in jobs}, key=str) if require_adapters else ():
        require_adapter(adapter, runs_on)  # each implementation the jobs run on (a kernel may prefer its own)
    identity = plan_identity(jobs, [], profile, seed).laid_out(jobs)  # the report names the kernels not run
    return Plan("check", profile, seed, jobs, [], identity, len(jobs), "", adapter, None)


def require_adapter(adapter: str | None, implementation: str | None) -> None:
    """A typo in --adapter (or $VERIFY_ADAPTER), or an implementation this machine cannot run, is a
    usage error before anything is written."""
    from verify.gpu.implementations import default_implementation
    from verify.gpu.implementations import implementation as named

    named(implementation or default_implementation()).available(adapter)


# -- how the plan runs ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Schedule:
    """How a plan's jobs run.

    workers:        worker processes running checks at once.
    reuse:          None: run every job. A list of results files (empty: the output folder's
                    results.json): a job whose inputs are unchanged since it passed there, in a
                    record verify made on this machine, takes that record instead of running.
    slice_examples: split checks drawing more examples than this into slices any worker runs
                    (None: the profile's; 0: never).
    budget:         seconds the checks are given: corners first, then rounds of random examples
                    until it is spent (None: the profile's; 0: no budget).
    """

    workers: int = 1
    reuse: Sequence[Path] | None = None
    slice_examples: int | None = None
    budget: float | None = None

    def budget_s(self, profile: Profile) -> float | None:
        """The run's time budget in seconds, or None: every planned example runs."""
        if self.budget is None:
            return profile.budget
        return self.budget or None

    def reuse_files(self, out_dir: Path) -> list[Path]:
        """The results files --reuse reads: the ones named, else the output folder's if it has one."""
        if self.reuse is None:
            return []
        return list(self.reuse) or [path for path in [out_dir / "results.json"] if os.path.lexists(path)]

    def ordered(self, jobs: list[Job], profile: Profile, out_dir: Path) -> list[Job]:
        """The jobs as they run: sliced where a check draws many examples, longest first by the
        durations of earlier runs: the output folder's results.json, and the results files given
        to --reuse (a re-gate into a new folder then orders the checks it runs again by what they
        took there); under a budget, corners first and then rounds (verify.plan.budgeted)."""
        from verify.plan import budgeted, job_key, longest_first, sliced

        history = {}
        for earlier in [*(self.reuse or []), out_dir / "results.json"]:  # the output folder's last: it wins
            if not Path(earlier).exists():
                continue
            try:
                history.update({job_key(r): r.duration_s for r in earlier_results(earlier).records if r.duration_s})
            except UsageError:
                pass  # an unreadable earlier file only costs the order
        if self.budget_s(profile) is not None:
            return budgeted(jobs, history)
        size = profile.slice_examples if self.slice_examples is None else (self.slice_examples or None)
        return longest_first(sliced(jobs, size), history)


def earlier_results(path):
    """An earlier run's results file, parsed once while it is unchanged: --reuse and the plan's
    order both read it, and a whole gate's is ten megabytes of JSON. (realpath, not resolve: a link
    loop is the loader's one-line error, not a RuntimeError here.)"""
    path = Path(os.path.realpath(path))
    try:
        stat = path.stat()
    except OSError:
        stat = None
    return _parsed_results(path, stat and (stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=8)
def _parsed_results(path: Path, version):
    from verify.results.store import load_results

    return load_results(path)


# -- the run --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """What a run ended with: every record (the prior ones and the reused ones included), and
    whether a signal stopped it."""

    records: list[CheckResult]
    interrupted: bool

    @property
    def skips(self) -> list[CheckResult]:
        return [r for r in self.records if r.verdict is Verdict.SKIP]

    def exit_code(self, allow_skip: bool = False) -> int:
        """0 every check held (or failed only as a documented known finding: only news fails the
        run); 1 a check failed or errored, or was skipped without `allow_skip` (a skip verified
        nothing); 130 interrupted."""
        if self.interrupted:
            return 130
        if any(r.verdict.fails_run for r in self.records) or (self.skips and not allow_skip):
            return 1
        return 0


class _Stopper:
    """SIGINT, SIGTERM and SIGHUP stop the run as Ctrl-C does (a CI timeout included); a second
    signal while it stops is ignored, so finishing the results and the report cannot itself be
    interrupted. Installed only from the main thread (the only one Python lets handle signals)."""

    STOPS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self):
        self.stopping = False
        self.previous: dict = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            self.previous = {s: signal.signal(s, self._stop) for s in self.STOPS}
        return self

    def _stop(self, signum, frame):
        if self.stopping:
            return
        self.stopping = True
        raise KeyboardInterrupt

    def finishing(self) -> None:
        """From here on signals are ignored: what follows is what keeps the results."""
        for s in self.previous:
            signal.signal(s, signal.SIG_IGN)

    def __exit__(self, *exc):
        for s, handler in self.previous.items():
            signal.signal(s, handler)
        return False


class Run:
    """One run of a `Plan` into `Outputs`, scheduled by `Schedule`; `execute()` once.

    The output folder is locked for the run (a second run into it stops before writing), and
    nothing is written there until every argument has been checked and a job has a record.
    Ctrl-C, SIGTERM or SIGHUP stop the run; what finished is kept, the report is written, and a
    second signal while that happens is ignored rather than losing it. A usage or setup error in
    the middle of the run (a worker refusing a job, a full disk) stops it with one line: what
    finished is written as an aborted run, never as complete (the UsageError is raised again
    after it is written)."""

    def __init__(self, plan: Plan, outputs: Outputs, schedule: Schedule = Schedule(), *,
                 argv: Sequence[str] = (), say: Callable[[str], None] = _stderr):
        self.plan = plan
        self.outputs = outputs
        self.schedule = schedule
        self.argv = list(argv)
        self.say = say

    # -- before the first job
    def _reused(self, jobs: list[Job]) -> tuple[list[Job], list[CheckResult]]:
        """(jobs to run, records reused). Every run digests its jobs' inputs, --reuse or not, so
        each record carries them (CheckResult.inputs_sha256) and any later --reuse can take it: a
        first plain `verify gate` followed by `verify gate --reuse` after an edit re-runs only what
        the edit touched."""
        from verify.plan import with_inputs

        jobs = with_inputs(jobs, self.plan.adapter, self.plan.adapters)
        if self.schedule.reuse is None:
            return jobs, []
        from verify.results.reuse import reusable, reused

        files = self.schedule.reuse_files(self.outputs.folder)
        earlier = reusable([earlier_results(path) for path in files], {job.inputs for job in jobs})
        for refusal in earlier.refusals:  # records that would have been reused, but are not verify's own here
            self.say(f"verify: {refusal}")
        found = earlier.records
        kept = [reused(*found[job.inputs], job.id) for job in jobs if job.inputs in found]
        self.say(f"verify: reusing {len(kept)} of {len(jobs)} checks whose inputs are unchanged since they passed "
                 f"({', '.join(map(str, files)) or 'no earlier results'})")
        return [job for job in jobs if job.inputs not in found], kept

    def execute(self) -> Outcome:
        """Run what is not reused, write results.json after every batch, then the report, JUnit
        and SARIF. Returns the Outcome; a UsageError that ends the run early is raised after what
        finished is written."""
        from verify.results.lock import OutputLock

        jobs, reused = self._reused(self.plan.jobs)
        jobs = self.schedule.ordered(jobs, self.plan.profile, self.outputs.folder)
        with OutputLock(self.outputs.folder):
            records, interrupted = self._run(jobs, [*self.plan.prior, *reused])
        outcome = Outcome(records, interrupted)
        if self.outputs.junit is not None:
            from verify.results.junit import write_junit

            try:
                write_junit(records, self.outputs.junit)
            except OSError as exc:
                raise UsageError(f"--junit {self.outputs.junit}: cannot write ({exc.strerror or exc}); results and "
                                 "report are written") from None
        if self.outputs.sarif is not None:
            write_sarif(self.outputs.sarif, [(records, self.outputs.folder / "results.json")],
                        self.outputs.folder / "wgsl", rebuild=True, complete=not interrupted, say=self.say)
        return outcome

    def _run(self, jobs: list[Job], prior: list[CheckResult]) -> tuple[list[CheckResult], bool]:
        from verify.display import Display, summary
        from verify.results.signing import signed
        from verify.results.store import ResultsWriter
        from verify.session import run_jobs

        out_dir = self.outputs.folder
        plan = self.plan
        writer = ResultsWriter(out_dir / "results.json", command=plan.command, argv=self.argv,
                               profile=plan.profile.name, shard=plan.shard, planned=plan.planned, plan=plan.identity)
        # The report's modules (Jinja2 and its own: about 0.2 s) load while the workers start, not
        # after the last check; matplotlib loads only if a plot must be drawn (verify/report/plots.py).
        threading.Thread(target=importlib.import_module, args=("verify.report",), daemon=True).start()
        budget = self.schedule.budget_s(plan.profile)
        deadline = None if budget is None else time.monotonic() + budget
        display = Display(len({job.id for job in jobs}), deadline=deadline)
        refresh = _ReportRefresh(lambda: write_report(writer.document, out_dir, say=self.say))
        # Records known before any job (kernels that could not be planned) are written, and printed,
        # with the first job's record: a run that ends before it leaves an earlier results file alone,
        # and nothing printed is missing from the file.
        held = list(prior)
        for record in held:
            writer.add(record, write=False)
        # Records are printed only once they are in the file (a run killed after a line is printed
        # still has that record). The file is rewritten whole, so once per batch of records that
        # arrived together, while the workers go on; printing then runs beside the workers' progress.
        fresh: list[CheckResult] = []
        printing = threading.Lock()

        def show(waiting: list[CheckResult]) -> None:
            while waiting:  # each record printed once, however a signal cuts this short
                display.record(waiting.pop(0))

        def on_record(record):
            record = signed(record)  # verify's own record: a later --reuse on this machine may take it
            writer.add(record, write=False)
            fresh.append(record)

        def on_progress(*args):
            with printing:
                display.progress(*args)

        def on_start(job):
            with printing:
                display.start(job)

        def on_batch():
            writer.flush()
            with printing:
                show(held)
                show(fresh)
            refresh.maybe()  # a killed run still leaves a report

        interrupted, aborted, written = False, None, False
        with _Stopper() as stopper:
            try:
                run_jobs(jobs, on_record=on_record, on_progress=on_progress, on_start=on_start, on_batch=on_batch,
                         log_path=out_dir / "worker.log", workers=self.schedule.workers, deadline=deadline)
            except KeyboardInterrupt:
                interrupted = True
            except UsageError as exc:
                aborted = exc
            finally:
                stopper.finishing()
                written = self._finish(writer, interrupted, aborted)
                if written:  # with the records of a batch cut short, now in the file too
                    show(held)
                    show(fresh)
                display.close()
                if written:  # the workers are done: every core draws the plots not kept yet
                    write_report(writer.document, out_dir, processes=os.cpu_count() or 1, say=self.say)
        if aborted is not None:
            if written:
                self.say(f"verify: {out_dir / 'results.json'} keeps the {len(writer.records)} checks that finished, "
                         "marked as an aborted run")
            raise aborted
        self.say(summary(writer.records) + (" (interrupted)" if interrupted else ""))
        if written:
            self.say(f"results: {out_dir / 'results.json'}   report: {out_dir / 'report.html'}")
        return writer.records, interrupted

    def _finish(self, writer, interrupted: bool, aborted) -> bool:
        """Write the run's end; a write the disk refuses ends the run with its one line, not a second
        error (and not the same line twice, when the run was aborted by that very write)."""
        try:
            return writer.finish(interrupted=interrupted, aborted=str(aborted or ""), order=_plan_order)
        except UsageError as exc:
            if str(exc) != str(aborted or ""):
                self.say(f"verify: error: {exc}")
            return False


def _plan_order(record: CheckResult) -> int:
    return record.job_id if record.job_id is not None else -1


class _ReportRefresh:
    """report.html redrawn during a run, at most every REPORT_REFRESH_S and never more than
    REPORT_REFRESH_SHARE of the run's time: records wait to be written and printed while the
    report renders (seconds, for hundreds of records)."""

    def __init__(self, render: Callable[[], None]):
        self.render = render
        self.last = time.monotonic()
        self.after = REPORT_REFRESH_S

    def maybe(self) -> None:
        if time.monotonic() - self.last <= self.after:
            return
        began = time.monotonic()
        self.render()
        self.last = time.monotonic()
        self.after = max(REPORT_REFRESH_S, (self.last - began) / REPORT_REFRESH_SHARE)
