"""The `verify` command: list, adapters, show, check, gate, replay, report, setup, export, findings, sources.

Exit codes (docs/architecture.md §5): 0 every check held; 1 a kernel failed verification; 2 usage
or setup error; 130 interrupted (Ctrl-C or SIGTERM: results so far are kept, the report is
written). Expected failures print one line, never a traceback. A failure the kernel is
documented to have (verdict "known", Kernel.known_finding) is reported but does not fail the run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import re
import signal
import sys
import threading
import time
from functools import lru_cache
from pathlib import Path

from verify._version import DISTRIBUTION, __version__
from verify.errors import FailureKind, InfrastructureError, KernelError, UsageError, deprecated
from verify.results.record import Verdict

EPILOG = """\
examples:
  verify list                                    kernels, their references and checks
  verify check decode.tiled --examples 300       property-test one kernel on this machine's adapter
  verify show decode.tiled --config head_dim=64 > mine.wgsl
  verify check decode.tiled --config head_dim=64 --wgsl mine.wgsl
                                                 check an edited kernel under the same contract
  verify gate --profile ci --junit reports/junit.xml
                                                 every kernel; exit 1 on any failure
  verify replay reports/cases/decode.tiled-reference-...-shrunk.npz
  verify export reports/cases/decode.tiled-reference-...-shrunk.npz -o repro
                                                 the case as repro.html, repro.py, repro.mjs, ISSUE.md
  verify findings export                         every documented finding's reproduction (reports/findings)
  verify report reports/lavapipe.json reports/h200.json -o reports/both.html
  verify setup --dawn                            install what Dawn needs (Node packages, Mesa 25 lavapipe)

kernels: a built-in name, a name another package registers (entry point group
         "verify.kernels"), or an import path "pkg.module:Class".

exit codes: 0 all checks held (or failed only as documented known findings),
            1 a kernel failed verification, 2 usage or setup error,
            130 interrupted (results so far are kept and the report is written).
"""


def _parse_config(items: list[str] | None) -> dict:
    config = {}
    for item in items or []:
        for pair in item.split(","):
            if "=" not in pair:
                raise UsageError(f"--config expects KEY=VALUE, got {pair!r}")
            key, value = pair.split("=", 1)
            config[key.strip()] = value.strip()
    return config


# -- list / adapters / show ----------------------------------------------------------------------
def cmd_list(args) -> int:
    from verify.checks import all_checks
    from verify.kernels.registry import get_kernel, kernel_specs

    described, broken = [], []
    for spec in kernel_specs():
        try:
            kernel = get_kernel(spec.name)
        except UsageError as exc:  # a broken package is named, and the others are still listed
            broken.append(str(exc))
            continue
        entry = dict(kernel.describe(), ref=spec.ref, origin=spec.origin,
                     package=spec.distribution, package_version=spec.version)
        described.append(entry)
    for problem in broken:
        print(f"verify: error: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps(described, indent=1))
        return 2 if broken else 0
    checks = all_checks()
    for d in described:
        keys = ", ".join(f"{k}={v['default']}" + (f" ({'|'.join(map(str, v['choices']))})" if v["choices"] else "")
                         for k, v in d["config_keys"].items())
        print(f"{d['name']}  [{d['source']}]  {d['summary']}")
        print(f"    from:      {d['package']} {d['package_version']} ({d['origin']}: {d['ref']})")
        print(f"    reference: {d['reference']}")
        print(f"    config:    {keys or '-'}")
        print(f"    checks:    {', '.join(d['checks'])}")
    print("\nchecks:")
    for name, check in sorted(checks.items()):
        print(f"  {name:18} {check.doc}")
    return 2 if broken else 0


def cmd_adapters(args) -> int:
    from verify.gpu.implementations import list_implementation_adapters, open_device
    from verify.gpu.semantics import describe

    listed = list_implementation_adapters()
    if not any(found.adapters for found in listed):
        raise UsageError("no WebGPU adapter was found by any implementation: "
                         + "; ".join(f"{found.implementation}: {found.unavailable}" for found in listed))
    chosen = open_device(args.implementation, args.adapter)
    # Each implementation's WGSL semantics on the adapter it would run on here: the probes say where
    # it deviates from the specification (verify.gpu.semantics; kept per machine after the first).
    opened = {chosen.info.implementation: chosen}
    for found in listed:
        name = found.implementation.name
        if found.adapters and name not in opened and (args.implementation in (None, name)):
            try:
                opened[name] = open_device(name, args.adapter)
            except UsageError:
                pass
    rows = []
    for found in listed:
        for info in found.adapters:
            row = dict(info.as_record(), features=list(info.features))
            device = opened.get(info.implementation)
            if device is not None and info == device.info:
                row.update(subgroup_size=device.subgroup_size, zeroes_workgroup_memory=device.zeroes_workgroup_memory,
                           semantics=device.semantics.as_record(), granted_features=sorted(device.features),
                           granted_limits=device.limits)
            if info == chosen.info:
                row.update(selected=True)
            rows.append(row)
    unavailable = {found.implementation.name: found.unavailable for found in listed if found.unavailable}
    if args.json:
        print(json.dumps(rows + [{"implementation": k, "unavailable": v} for k, v in unavailable.items()], indent=1))
        return 0
    from verify.gpu.semantics import Semantics

    for row in rows:
        mark = "*" if row.get("selected") else " "
        print(f"{mark} [{row['implementation']}] {row['name']}  backend={row['backend']} type={row['type']} "
              f"vendor={row['vendor']}")
        print(f"    implementation: {row['implementation_version'] or '?'}")
        print(f"    driver:   {row['driver']}")
        wanted = [f for f in ("shader-f16", "subgroup", "timestamp-query") if f in row["features"]]
        print(f"    features: {', '.join(wanted) or 'none of shader-f16, subgroup, timestamp-query'}")
        if "semantics" in row:
            print(f"    subgroup size (measured): {row['subgroup_size']}")
            print("    WGSL semantics (what the specification requires, probed here):")
            for line in describe(Semantics.from_record(row["semantics"])):
                print(f"      {line}")
    for name, reason in unavailable.items():
        print(f"  [{name}] unavailable: {reason}")
    print(f"\n* = the adapter checks run on ({chosen.info.implementation}; choose the WebGPU implementation with "
          "--implementation or VERIFY_IMPLEMENTATION, and the adapter with --adapter or VERIFY_ADAPTER)")
    return 0


def cmd_version(args) -> int:
    """verify's version; with --verbose every version a verdict depends on (verify.versions)."""
    from verify.versions import listing

    print("\n".join(listing(args.verbose)))
    return 0


def cmd_show(args) -> int:
    from verify.kernels.registry import get_kernel

    kernel = get_kernel(args.kernel)
    sys.stdout.write(kernel.wgsl(kernel.config(_parse_config(args.config))))
    return 0


# -- check / gate --------------------------------------------------------------------------------
def _execute(jobs, out_dir: Path, *, command: str, profile: str, junit: str | None, allow_skip: bool,
             prior: list | None = None, workers: int = 1, shard: str = "", planned: int = 0, plan=None,
             sarif: str | None = None, budget: float | None = None) -> int:
    """Run `jobs`, writing results.json after every record, then the report and JUnit.

    The output folder is locked for the run (a second run into it stops before writing), and
    nothing is written there until every argument has been checked and a job has a record.
    Ctrl-C, SIGTERM or SIGHUP stop the run; what finished is kept, the report is written, and a
    second signal while that happens is ignored rather than losing it. A usage or setup error in
    the middle of the run (a worker refusing a job, a full disk) stops it with one line: what
    finished is written as an aborted run, never as complete.
    """
    from verify.results.lock import OutputLock

    junit_path = _junit_path(junit, out_dir)
    with OutputLock(out_dir):
        records, interrupted = _run(jobs, out_dir, command=command, profile=profile, prior=prior, workers=workers,
                                    shard=shard, planned=planned, plan=plan, budget=budget)
    if junit_path is not None:
        from verify.results.junit import write_junit

        try:
            write_junit(records, junit_path)
        except OSError as exc:
            raise UsageError(f"--junit {junit}: cannot write ({exc.strerror or exc}); results and report are written") from None
    if sarif is not None:
        _write_sarif(sarif, [(records, out_dir / "results.json")], out_dir / "wgsl", rebuild=True,
                     complete=not interrupted)
    if interrupted:
        return 130
    skips = [r for r in records if r.verdict is Verdict.SKIP]
    if skips and not allow_skip:
        from verify.display import skip_summary

        print(skip_summary(skips, len(records)), file=sys.stderr)
    # "known" (a documented finding reproduced) is reported, not failed: only news fails the run.
    if any(r.verdict.fails_run for r in records) or (skips and not allow_skip):
        return 1
    return 0


def _run(jobs, out_dir: Path, *, command: str, profile: str, prior: list | None, workers: int, shard: str,
         planned: int, plan=None, budget: float | None = None) -> tuple[list, bool]:
    global _stopping
    from verify.display import Display, summary
    from verify.results.signing import signed
    from verify.results.store import ResultsWriter
    from verify.session import run_jobs

    writer = ResultsWriter(out_dir / "results.json", command=command, argv=sys.argv[1:], profile=profile, shard=shard,
                           planned=planned, plan=plan)
    # The report's modules (Jinja2 and its own: about 0.2 s) load while the workers start, not
    # after the last check; matplotlib loads only if a plot must be drawn (verify/report/plots.py).
    threading.Thread(target=importlib.import_module, args=("verify.report",), daemon=True).start()

    def plan_order(record):
        return record.job_id if record.job_id is not None else -1

    deadline = None if budget is None else time.monotonic() + budget
    display = Display(len({job.id for job in jobs}), deadline=deadline)
    # Records known before any job (kernels that could not be planned) are written, and printed,
    # with the first job's record: a run that ends before it leaves an earlier results file alone,
    # and nothing printed is missing from the file.
    held = list(prior or [])
    for record in held:
        writer.add(record, write=False)
    last_render = [time.monotonic()]
    refresh_after = [REPORT_REFRESH_S]

    def show_held():
        while held:
            display.record(held.pop(0))

    # Records are printed only once they are in the file (a run killed after a line is printed
    # still has that record). The file is rewritten whole, so once per batch of records that
    # arrived together, while the workers go on; printing then runs beside the workers' progress.
    fresh: list = []
    printing = threading.Lock()

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

    def show_fresh():
        while fresh:  # each record printed once, however a signal cuts this short
            display.record(fresh.pop(0))

    def on_batch():
        writer.flush()
        with printing:
            show_held()
            show_fresh()
        if time.monotonic() - last_render[0] > refresh_after[0]:  # a killed run still leaves a report
            began = time.monotonic()
            _write_report(writer.document, out_dir)
            last_render[0] = time.monotonic()
            # Records wait to be written and printed while the report renders (seconds, for hundreds
            # of records): refresh no more often than REPORT_REFRESH_SHARE of the run's time allows.
            refresh_after[0] = max(REPORT_REFRESH_S, (last_render[0] - began) / REPORT_REFRESH_SHARE)

    interrupted, aborted, written = False, None, False
    stops = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    _stopping = False
    previous = {s: signal.signal(s, _terminate) for s in stops}  # a CI timeout stops the run like Ctrl-C
    try:
        run_jobs(jobs, on_record=on_record, on_progress=on_progress, on_start=on_start, on_batch=on_batch,
                 log_path=out_dir / "worker.log", workers=workers, deadline=deadline)
    except KeyboardInterrupt:
        interrupted = True
    except UsageError as exc:
        aborted = exc
    finally:
        for s in stops:  # finishing must not be interrupted: it is what keeps the results
            signal.signal(s, signal.SIG_IGN)
        try:
            written = _finish(writer, interrupted, aborted, plan_order)
            if written:  # with the records of a batch cut short, now in the file too
                show_held()
                show_fresh()
            display.close()
            if written:  # the workers are done: every core draws the plots not kept yet
                _write_report(writer.document, out_dir, processes=os.cpu_count() or 1)
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
    if aborted is not None:
        if written:
            print(f"verify: {out_dir / 'results.json'} keeps the {len(writer.records)} checks that finished, "
                  "marked as an aborted run", file=sys.stderr)
        raise aborted
    print(summary(writer.records) + (" (interrupted)" if interrupted else ""), file=sys.stderr)
    if written:
        print(f"results: {out_dir / 'results.json'}   report: {out_dir / 'report.html'}", file=sys.stderr)
    return writer.records, interrupted


def _finish(writer, interrupted: bool, aborted, order) -> bool:
    """Write the run's end; a write the disk refuses ends the run with its one line, not a second
    error (and not the same line twice, when the run was aborted by that very write)."""
    try:
        return writer.finish(interrupted=interrupted, aborted=str(aborted or ""), order=order)
    except UsageError as exc:
        if str(exc) != str(aborted or ""):
            print(f"verify: error: {exc}", file=sys.stderr)
        return False


def _junit_path(junit: str | None, out_dir: Path | None = None) -> Path | None:
    """The --junit file, checked before the run: a path that cannot be written fails now, not
    after an hour of checks, and a path that would overwrite the run's own results (results.json,
    report.html, the lock) or any results file is refused."""
    from verify.results.destination import output_file

    if junit is None:
        return None
    path = Path(junit)
    if out_dir is not None and path.resolve() in {(out_dir / name).resolve() for name in RUN_FILES}:
        raise UsageError(f"--junit {junit}: is one of the run's own files in {out_dir}; name another file "
                         f"(e.g. {out_dir / 'junit.xml'})")
    _refuse_results_file(path, "--junit")
    return output_file(junit, "--junit")


def _sarif_path(sarif: str | None, out_dir: Path | None = None) -> Path | None:
    """The --sarif file, checked before the run as --junit is."""
    from verify.results.destination import output_file

    if sarif is None:
        return None
    if out_dir is not None and Path(sarif).resolve() in {(out_dir / name).resolve() for name in RUN_FILES}:
        raise UsageError(f"--sarif {sarif}: is one of the run's own files in {out_dir}; name another file "
                         f"(e.g. {out_dir / 'verify.sarif'})")
    _refuse_results_file(Path(sarif), "--sarif")
    return output_file(sarif, "--sarif")


def _write_sarif(sarif: str, documents: list, wgsl_dir: Path, *, rebuild: bool, complete: bool) -> None:
    """SARIF of the records (verify.results.sarif); the WGSL a result points at without a file of
    its own goes to `wgsl_dir`. A write the disk refuses is one line, the rest being written."""
    from verify.results.sarif import write_sarif

    try:
        count = write_sarif(Path(sarif), documents, wgsl_dir=wgsl_dir, rebuild=rebuild, complete=complete)
    except OSError as exc:
        raise UsageError(f"--sarif {sarif}: cannot write ({exc.strerror or exc})") from None
    print(f"sarif: {sarif} ({count} result{'' if count == 1 else 's'})", file=sys.stderr)


#: The files a run writes into its output folder.
RUN_FILES = ("results.json", "report.html", ".verify.lock")


def _refuse_results_file(path: Path, option: str) -> None:
    """UsageError if `path` holds a verify results file: writing there would destroy results."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return
    if b'"verify.results/' in head:
        raise UsageError(f"{option} {path}: holds verify results; writing there would destroy them")


#: Seconds between refreshes of report.html during a run (at least).
REPORT_REFRESH_S = 60.0
#: At most this share of a run's time goes to refreshing report.html before its end.
REPORT_REFRESH_SHARE = 0.05


_stopping = False


def _terminate(signum, frame):
    """Stop the run as Ctrl-C does; a second signal while it stops is ignored, so finishing the
    results and the report cannot itself be interrupted."""
    global _stopping
    if _stopping:
        return
    _stopping = True
    raise KeyboardInterrupt


def _write_report(document, out_dir: Path, processes: int = 1) -> None:
    """The run's report.html; a report that cannot be written is a warning, never the end of the
    run (results.json holds every record whatever happens here). Refreshes during the run draw
    in this process, beside the workers; the last render uses `processes`."""
    from verify.report import render_report

    try:
        render_report([document], out_dir / "report.html", processes=processes)
    except Exception as exc:
        print(f"verify: warning: {out_dir / 'report.html'} was not written ({type(exc).__name__}: {exc}); "
              f"{out_dir / 'results.json'} is complete, and `verify report` renders it again", file=sys.stderr)


def _out_dir(path: str) -> Path:
    from verify.results.destination import output_folder

    out = output_folder(path, "--out")
    for name in RUN_FILES:
        if (out / name).is_dir():
            raise UsageError(f"--out {path}: {out / name} is a folder; a run writes a file there")
    return out


def _destinations(args) -> Path:
    """The output folder, and the --junit file, checked before anything is planned: a path that
    cannot be written fails in the first second, not after the plan's builds and the run."""
    out = _out_dir(args.out)
    _junit_path(args.junit, out)
    _sarif_path(args.sarif, out)
    return out


def cmd_check(args) -> int:
    from verify.plan import check_jobs, named_list, numbered, plan_identity, read_wgsl, width_jobs
    from verify.profiles import get_profile

    profile = get_profile(args.profile)
    out = _destinations(args)
    overrides = _parse_config(args.config)
    if args.wgsl and len(args.kernel) != 1:
        raise UsageError("--wgsl checks one file under one kernel's contract; name exactly one kernel")
    checks = named_list(args.checks, "--checks", "check") if args.checks is not None else None
    wgsl = read_wgsl(args.wgsl) if args.wgsl else None
    jobs = []
    width = args.subgroup_width if isinstance(args.subgroup_width, int) else None
    for name in args.kernel:
        options = dict(profile=profile, examples=args.examples, seed=args.seed, out_dir=Path(args.out),
                       time_limit=args.time_limit, adapter=args.adapter, wgsl=wgsl,
                       wgsl_origin=os.path.abspath(args.wgsl) if args.wgsl else "", implementation=args.implementation)
        planned = check_jobs(name, overrides, checks=checks, subgroup_width=width, **options)
        jobs += planned
        if args.subgroup_width == "profile":  # a kernel on subgroups also at the widths real GPUs have
            jobs += width_jobs(name, overrides, planned, **options)
    jobs = numbered(jobs)
    for name in sorted({job.implementation for job in jobs}, key=str):  # a kernel may prefer its own
        _check_adapter(args.adapter, name)
    plan = plan_identity(jobs, [], profile, args.seed).laid_out(jobs)  # the report names the kernels not run
    jobs, reused = _reuse(args, jobs)
    jobs = _scheduled(args, jobs, profile)
    return _execute(jobs, out, command="check", profile=profile.name, junit=args.junit,
                    allow_skip=args.allow_skip, workers=args.jobs, plan=plan, prior=reused, sarif=args.sarif,
                    budget=_budget(args, profile))


def cmd_gate(args) -> int:
    from verify.plan import gate_implementations, gate_jobs, named_list, plan_identity, select_shard
    from verify.profiles import get_profile

    profile = get_profile(args.profile)
    out = _destinations(args)
    names = named_list(args.kernels, "--kernels", "kernel") if args.kernels is not None else None
    chosen = gate_implementations(args.implementation, args.adapter)
    unplanned: list | None = [] if args.implementation else None
    jobs, skipped = gate_jobs(names, profile=profile, seed=args.seed, out_dir=Path(args.out),
                              time_limit=args.time_limit, adapter=args.adapter, implementations=list(chosen.run_on),
                              unavailable=tuple(chosen.unavailable), unplanned=unplanned, workers=args.jobs)
    if unplanned:
        print(f"verify: not planned, as they run only on implementations this gate does not run on "
              f"(--implementation {args.implementation}): "
              + ", ".join(f"{name} ({' or '.join(only)})" for name, only in unplanned), file=sys.stderr)
    skipped += chosen.skips()
    if names and not jobs and not skipped and not unplanned:
        raise UsageError(f"nothing to verify: {', '.join(names)} offer{'s' if len(names) == 1 else ''} no configs in "
                         f"the {profile.name} profile (`verify list` shows each kernel's; "
                         f"`verify check KERNEL` runs one directly)")
    planned = len(jobs) + len(skipped)
    plan = plan_identity(jobs, skipped, profile, args.seed).laid_out(jobs)  # the report names the kernels not run
    shard = ""
    if args.shard:
        index, count = args.shard
        jobs, skipped = select_shard(jobs, index, count), (skipped if index == 1 else [])
        shard = f"{index}/{count}"
    chosen.require_adapter(chosen.run_on[0], args.adapter)  # a typo in --adapter: one line before anything is written
    jobs, reused = _reuse(args, jobs, chosen.adapters)
    skipped += reused
    jobs = _scheduled(args, jobs, profile)
    return _execute(jobs, out, command="gate", profile=profile.name, junit=args.junit,
                    allow_skip=args.allow_skip, prior=skipped, workers=args.jobs, shard=shard, planned=planned,
                    plan=plan, sarif=args.sarif, budget=_budget(args, profile))


def _reuse(args, jobs: list, listed: dict | None = None) -> tuple[list, list]:
    """(jobs to run, records reused): with --reuse, a job whose inputs are unchanged since a PASS in
    the given results files (default: the output folder's results.json) takes that record, if
    verify made it on this machine (its tag verifies: verify.results.signing); the run says, once
    per file, why records matching a job were not taken.

    Every run digests its jobs' inputs, --reuse or not, so each record carries them
    (CheckResult.inputs_sha256) and any later `--reuse` can take it: a first plain `verify gate`
    followed by `verify gate --reuse` after an edit re-runs only what the edit touched."""
    from verify.plan import with_inputs

    jobs = with_inputs(jobs, args.adapter, listed)
    if args.reuse is None:
        return jobs, []
    from verify.results.reuse import reusable, reused

    files = args.reuse or [path for path in [Path(args.out) / "results.json"] if os.path.lexists(path)]
    earlier = reusable([_earlier_results(path) for path in files], {job.inputs for job in jobs})
    for refusal in earlier.refusals:  # records that would have been reused, but are not verify's own here
        print(f"verify: {refusal}", file=sys.stderr)
    found = earlier.records
    kept = [reused(*found[job.inputs], job.id) for job in jobs if job.inputs in found]
    print(f"verify: reusing {len(kept)} of {len(jobs)} checks whose inputs are unchanged since they passed "
          f"({', '.join(map(str, files)) or 'no earlier results'})", file=sys.stderr)
    return [job for job in jobs if job.inputs not in found], kept


def _earlier_results(path):
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


def _scheduled(args, jobs: list, profile) -> list:
    """The jobs as they run: sliced where a check draws many examples (--slice-examples, else the
    profile's), longest first by the durations of earlier runs: the output folder's results.json,
    and the results files given to --reuse (a re-gate into a new folder then orders the checks it
    runs again by what they took there)."""
    from verify.plan import job_key, longest_first, sliced

    history = {}
    for earlier in [*(args.reuse or []), Path(args.out) / "results.json"]:  # the output folder's last: it wins
        if not Path(earlier).exists():
            continue
        try:
            history.update({job_key(r): r.duration_s for r in _earlier_results(earlier).records if r.duration_s})
        except UsageError:
            pass  # an unreadable earlier file only costs the order
    if _budget(args, profile) is not None:
        from verify.plan import budgeted

        return budgeted(jobs, history)
    size = profile.slice_examples if args.slice_examples is None else (args.slice_examples or None)
    return longest_first(sliced(jobs, size), history)


def _budget(args, profile) -> float | None:
    """The run's time budget in seconds (--budget, else the profile's), or None: no budget (every
    planned example runs). `--budget 0` turns a profile's default off."""
    chosen = getattr(args, "budget", None)
    if chosen is None:
        return profile.budget
    return chosen or None


def _check_adapter(name: str | None, implementation: str | None) -> None:
    """A typo in --adapter (or $VERIFY_ADAPTER), or an implementation this machine cannot run, is a
    usage error before anything is written."""
    from verify.gpu.implementations import default_implementation
    from verify.gpu.implementations import implementation as named

    named(implementation or default_implementation()).available(name)


# -- replay / report -------------------------------------------------------------------------------
#: Replays of a case saved by a nondeterminism failure, when --repeat is not given: a race shows in
#: some runs only, so one passing replay would say nothing.
NONDETERMINISTIC_REPLAYS = 10


def cmd_replay(args) -> int:
    from verify.protocol import ReplayJob
    from verify.results.casefile import load_case
    from verify.session import Session

    _, meta = load_case(args.case)  # a bad file is a usage error here, before a worker starts
    if args.repeat is None:
        args.repeat = NONDETERMINISTIC_REPLAYS if meta.get("failure_kind") == FailureKind.NONDETERMINISTIC.value else 1
    with Session() as session:
        replayed = session.replay(ReplayJob(os.path.abspath(args.case), args.adapter, args.implementation,
                                            time_limit=args.time_limit or 600.0, repeat=args.repeat))
    # 0 only when the case held: a failure, a race that did not show again, or a replay that could
    # not be carried out (a time limit, a dead worker) says nothing good of the kernel.
    args._exit_code = 0 if replayed.passed is True else 1  # kept if the reader closes the pipe early
    for line in replayed.lines:
        print(line)
    sys.stdout.flush()
    return args._exit_code


def cmd_report(args) -> int:
    from verify.report import render_report
    from verify.results.merge import run_problems
    from verify.results.store import load_results

    documents = [load_results(path) for path in args.results]
    problems = run_problems(documents, allow_skip=args.allow_skip)
    output = Path(args.output)
    if output.is_dir():
        raise UsageError(f"-o {args.output}: is a folder; name the HTML file to write (e.g. {output / 'report.html'})")
    if output.resolve() in {Path(path).resolve() for path in args.results}:
        raise UsageError(f"-o {args.output}: is one of the results files to render; name the HTML file to write")
    _refuse_results_file(output, "-o")
    sarif = _sarif_path(args.sarif)
    if sarif is not None and sarif.resolve() in {Path(path).resolve() for path in args.results} | {output.resolve()}:
        raise UsageError(f"--sarif {args.sarif}: is one of the files read or written; name another file")
    try:
        render_report(documents, output, findings_dir=args.findings_dir, processes=os.cpu_count() or 1)
    except OSError as exc:
        raise UsageError(f"-o {args.output}: cannot write ({exc.strerror or exc})") from None
    print(f"report: {args.output}", file=sys.stderr)
    if sarif is not None:  # the WGSL it points at goes beside it: the results' folders are only read
        _write_sarif(args.sarif, [(d.records, Path(d.path)) for d in documents], sarif.parent / "wgsl", rebuild=False,
                     complete=all(d.complete for d in documents))
    for problem in problems:
        print(f"verify: {problem}", file=sys.stderr)
    return 1 if args.strict and problems else 0


# -- export / findings ----------------------------------------------------------------------------------
def cmd_export(args) -> int:
    """A saved case as a folder that reproduces it without verify (docs/cli.md)."""
    from verify.export.export import export_case

    out = export_case(args.case, args.output)
    print(f"reproduction: {out}", file=sys.stderr)
    return 0


def cmd_findings_export(args) -> int:
    """Every documented upstream finding's reproduction, regenerated from its own case."""
    from verify.export.findings import export_findings
    from verify.plan import named_list

    only = ",".join(named_list(args.only, "--only", "finding")) if args.only is not None else None
    written = export_findings(Path(args.output), only=only, say=lambda line: print(line, file=sys.stderr))
    print(f"findings: {len(written)} reproductions in {args.output}", file=sys.stderr)
    return 0


# -- sources -------------------------------------------------------------------------------------------
def cmd_sources_refresh(args) -> int:
    """TVM's and ORT's WGSL shipped with verify, made again (docs/tvm.md §8): each file that
    differs on stdout; --check writes nothing and exits 1 when any does."""
    from verify.plan import named_list
    from verify.sources.refresh import refresh_command

    kernels = named_list(args.kernels, "--kernels", "kernel") if args.kernels is not None else None
    return refresh_command(kernels, check=args.check, say=lambda line: print(line, file=sys.stderr, flush=True),
                           tell=print)


# -- setup ---------------------------------------------------------------------------------------------
def cmd_setup(args) -> int:
    """What the implementations need, one line per step on stdout; what cannot be done (a missing
    prerequisite, a system package only root may install) is one error line and exit 2. SIGTERM
    and SIGHUP stop it as Ctrl-C does, so the download it was running is killed with it."""
    from verify.setup import run_setup

    def interrupt(signum, frame):
        raise KeyboardInterrupt

    stops = (signal.SIGTERM, signal.SIGHUP)
    previous = {s: signal.signal(s, interrupt) for s in stops}
    try:
        outcome = run_setup(dawn=args.dawn, check_only=args.check, say=lambda line: print(line, flush=True))
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if outcome.problems:
        raise UsageError("; ".join(outcome.problems))
    return 0


# -- parser ----------------------------------------------------------------------------------------
def _duration(text: str) -> float:
    """A duration (argparse type): seconds, or a number with s, m or h ("90", "90s", "3m", "1h");
    0 turns a budget off."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text or "")
    if match is None:
        raise argparse.ArgumentTypeError(f"expected a duration such as 90s, 3m or 1h, got {text!r}")
    return float(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[match[2]]


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _results_file(text: str) -> Path:
    """A results file to read (argparse type): a path that cannot be one (a folder, a link loop, a
    FIFO or device whose read would block or never end, a file past the size bound) is refused
    before anything is planned, from its metadata alone."""
    from verify.results.store import results_file_problem

    problem = results_file_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(f"{text}: {problem}")
    return Path(text)


def _count(text: str) -> int:
    """A positive number of examples (argparse type)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected at least 1, got {value}")
    return value


def _width(text: str):
    """A subgroup width: lanes (an int), "native" or "profile" (argparse type)."""
    if text in ("native", "profile"):
        return text
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a width (4..128), native or profile, got {text!r}") from None


def _shard(text: str) -> tuple[int, int]:
    """K/N with 1 <= K <= N <= MAX_SHARDS (argparse type)."""
    from verify.results.store import shard_of

    try:
        return shard_of(text, "--shard")
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--shard: ")) from None


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is the one line and exit 2 every other error gets."""

    def error(self, message: str):
        self.exit(2, f"verify: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="verify", description="Prove WebGPU LLM kernels correct: float64 references, real GPU runs, "
        "Hypothesis property tests, error budgets derived from the arithmetic.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"verify {__version__} ({DISTRIBUTION} {__version__})")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    def adapter_option(p, default: str = "the kernel's own (e.g. dawn for ort.*), else the first registered, wgpu"):
        p.add_argument("--adapter", help="run on the adapter whose name, vendor, backend or driver contains this text "
                       "(default: $VERIFY_ADAPTER, else the best one)")
        p.add_argument("--implementation", metavar="NAME",
                       help="the WebGPU implementation to run on, e.g. wgpu (wgpu-native, Naga) or dawn (Dawn through "
                       f"Node, Tint); `verify adapters` lists them (default: $VERIFY_IMPLEMENTATION, else {default})")
        # The option's former name: accepted, with a warning, until verify.errors.REMOVED_IN.
        p.add_argument("--backend", dest="renamed_backend", metavar="NAME", help=argparse.SUPPRESS)

    def run_options(p, out_default: str, **implementation_default):
        p.add_argument("--profile", default="ci", help="quick | ci | nightly: examples and case sizes (default ci)")
        p.add_argument("--out", default=out_default,
                       help=f"folder for results.json, report.html, case files (default {out_default})")
        p.add_argument("--junit", metavar="FILE", help="also write JUnit XML")
        p.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 for code scanning (docs/ci.md)")
        p.add_argument("--time-limit", type=_seconds, metavar="S",
                       help="seconds one check may run before it fails as a hang (default: the profile's)")
        p.add_argument("--allow-skip", action="store_true",
                       help="exit 0 even if checks were skipped (e.g. the adapter lacks shader-f16); "
                       "by default a skip fails the run, since it verified nothing")
        p.add_argument("--budget", type=_duration, metavar="DURATION",
                       help="the time the checks are given (e.g. 90s, 3m; default: the profile's, none for quick "
                       "and nightly): every check first runs its corner cases, all of them, then random examples "
                       "in rounds of 10 until the budget is spent; each record says how many of its planned "
                       "examples ran, and a check whose corners did not complete is never a pass (0: no budget)")
        p.add_argument("--slice-examples", type=int, metavar="N",
                       help="split a check drawing more than N examples into slices of about N, each its own seed "
                       "stream, run by any worker and merged into one record, so every core stays busy to the end "
                       "(default: the profile's, e.g. 50 for nightly and none for ci; 0: never split)")
        p.add_argument("--reuse", nargs="*", metavar="RESULTS.json", type=_results_file,
                       help="take the record of a check whose inputs (WGSL, all the code its kernel and check "
                       "import, verify's data files, the versions of wgpu, Dawn's and ORT's Node packages, TVM and "
                       "Python, profile, seed, adapter and driver) are unchanged since it passed in these results "
                       "files (default: the output folder's results.json), instead of running it again; only "
                       "records verify made on this machine are taken (docs/cli.md §6); the report says which "
                       "records were reused and from when")
        p.add_argument("--jobs", "-j", type=_count, default=os.cpu_count() or 1, metavar="N",
                       help="checks run in N worker processes at once (default: the number of cores); the "
                       "records are the same as a serial run's")
        adapter_option(p, **implementation_default)

    p = sub.add_parser("version", help="verify's version; --verbose: Python, wgpu, Dawn's and ONNX Runtime Web's npm "
                       "packages, apache-tvm and each adapter's driver")
    p.add_argument("--verbose", "-v", action="store_true", help="every version a verdict depends on, found here")
    p.set_defaults(func=cmd_version)

    p = sub.add_parser("list", help="every kernel with its source, reference, config keys and checks")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("adapters", help="the WebGPU adapters found, their features and subgroup size")
    p.add_argument("--json", action="store_true")
    adapter_option(p)
    p.set_defaults(func=cmd_adapters)

    config_help = "KEY=VALUE the WGSL is specialised on (repeatable or comma-separated; see `verify list`)"
    p = sub.add_parser("show", help="print the exact WGSL `check` runs for a config")
    p.add_argument("kernel", help="a kernel name or 'pkg.module:Class'")
    p.add_argument("--config", action="append", metavar="K=V", help=config_help)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("check", help="property-test kernels against their references on this machine",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("kernel", nargs="+", help="kernel names or 'pkg.module:Class' import paths")
    p.add_argument("--config", action="append", metavar="K=V", help=config_help)
    p.add_argument("--wgsl", metavar="FILE", help="check this WGSL file under the kernel's contract instead of ours")
    p.add_argument("--examples", type=_count, default=100, help="Hypothesis examples per check (default 100)")
    p.add_argument("--seed", type=int, default=0, help="Hypothesis seed; the same seed draws the same cases (default 0)")
    p.add_argument("--checks", help="comma-separated subset of the kernel's checks")
    p.add_argument("--subgroup-width", type=_width, default="profile", metavar="W",
                   help="subgroup width to run a kernel built on subgroups at, emulated in workgroup memory: W lanes "
                   "(4..128), `native` (the adapter's own only), or `profile` (default: the adapter's own, and "
                   "the checks that say so again at each of the profile's widths, as the gate does)")
    run_options(p, "reports/check")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("gate", help="every kernel's checks; the CI gate")
    p.add_argument("--seed", type=int, default=0, help="Hypothesis seed (default 0)")
    p.add_argument("--shard", type=_shard, metavar="K/N",
                   help="run only shard K of the gate split N ways (deterministic), e.g. one per CI machine; "
                   "merge the shards' results.json with `verify report --strict`")
    p.add_argument("--kernels", help="comma-separated subset of kernels (names or import paths)")
    run_options(p, "reports", default="every one installed: the first runs every check, the others the checks "
                "that run on every implementation (reference), a kernel that names its own on that one")
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("replay", help="re-run one saved case on this machine and print the comparison")
    p.add_argument("case", help="a case file (.npz, with its .json beside it)")
    p.add_argument("--time-limit", type=_seconds, metavar="S", help="seconds before the replay fails as a hang")
    p.add_argument("--repeat", type=_count, default=None, metavar="N",
                   help="replay N times and say how many failed (default: 1, or 10 for a case of a check that "
                   "failed as nondeterministic, whose failure may show in some runs only)")
    adapter_option(p, "the one the case was saved on, else the kernel's own, else the first registered")
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("report", help="render one HTML report from one or more results files (e.g. the shards "
                       "of a gate)")
    p.add_argument("results", nargs="+", metavar="RESULTS.json")
    p.add_argument("-o", "--output", default="reports/report.html")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 if any check failed or errored, was skipped (unless --allow-skip), a run did not "
                   "finish, or a shard of a split gate is missing: the merge step of a sharded CI gate")
    p.add_argument("--allow-skip", action="store_true", help="with --strict: skipped checks do not fail")
    p.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 for code scanning (docs/ci.md)")
    p.add_argument("--findings-dir", metavar="DIR", help="link each known finding to its reproduction in DIR "
                   "(`verify findings export`'s folder; default: a `findings` folder beside the report)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("export", help="write a saved case as a reproduction that needs nothing of verify: repro.html "
                       "(a browser), repro.py (wgpu), repro.mjs (Dawn in Node) and ISSUE.md")
    p.add_argument("case", help="a case file (.npz, with its .json beside it): shrunk, worst, or any saved case")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="a new (or empty) folder to write")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("findings", help="the documented upstream findings (docs/findings.md)")
    findings = p.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=_Parser)
    q = findings.add_parser("export", help="regenerate every finding's reproduction from its own case, one folder "
                            "each, and run each case here once for ISSUE.md's expected-vs-got table")
    q.add_argument("-o", "--output", default="reports/findings", metavar="DIR",
                   help="the findings folder (default reports/findings); the folders of the findings are replaced")
    q.add_argument("--only", metavar="NAMES", help="comma-separated subset of findings (folder names)")
    q.set_defaults(func=cmd_findings_export)

    p = sub.add_parser("sources", help="the WGSL of TVM's and ORT's kernels shipped with verify (docs/tvm.md §8)")
    sources = p.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=_Parser)
    q = sources.add_parser("refresh", help="build TVM's and capture ORT's WGSL for every gate config again (needs "
                           "apache-tvm, and Node with Dawn) and rewrite the shipped copies that differ")
    q.add_argument("--check", action="store_true",
                   help="write nothing: list each shipped file that differs and exit 1 if any does")
    q.add_argument("--kernels", help="comma-separated subset of the TVM and ORT kernels (default: all; with a "
                   "subset, shipped files no longer needed are not looked for)")
    q.set_defaults(func=cmd_sources_refresh)

    p = sub.add_parser("setup", help="check what the WebGPU implementations need here; with --dawn install what "
                       "Dawn needs into the user cache (Node packages, Mesa 25 lavapipe)",
                       description="Check that wgpu has an adapter with shader-f16 and subgroups (a system driver "
                       "that needs root is said as the command to run, not installed); with --dawn, install the "
                       "pinned Node packages (npm ci) and, on Debian 12, Mesa 25 lavapipe into $VERIFY_CACHE "
                       "(default ~/.cache/verify), then ask Dawn for its adapter. Idempotent. Exit 0 when all is in "
                       "place, 2 with one line naming what is missing.")
    p.add_argument("--dawn", action="store_true", help="also set up Dawn, the second implementation")
    p.add_argument("--check", action="store_true", help="only report what is in place; install nothing")
    p.set_defaults(func=cmd_setup)
    return parser


#: The environment variables that name folders verify keeps what it makes in.
CACHE_SETTINGS = ("VERIFY_CACHE", "VERIFY_TVM_CACHE", "VERIFY_ORT_CACHE")


def _check_cache_settings() -> None:
    """A cache variable naming something that is not a folder is the user's setting to fix, said
    in one line before anything runs (a folder that cannot be written is said where it is written,
    verify.results.atomic.made_once)."""
    for name in CACHE_SETTINGS:
        value = os.environ.get(name)
        if value and os.path.exists(value) and not os.path.isdir(value):
            raise UsageError(f"{name}={value}: is a file, not a folder; point it at a folder verify may write")


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a terminal that cannot show a character gets an escape
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    parser = build_parser()
    given = sys.argv[1:] if argv is None else list(argv)
    if "--version" in given and {"--verbose", "-v"} & set(given):  # argparse's version action takes no option
        given = ["version", "--verbose"]
    args = parser.parse_args(given)
    try:
        _check_cache_settings()
        if getattr(args, "renamed_backend", None):
            if args.implementation and args.implementation != args.renamed_backend:
                raise UsageError(f"--backend {args.renamed_backend} and --implementation {args.implementation} "
                                 "disagree (--backend is the deprecated name of --implementation)")
            deprecated("--backend", "--implementation (the WebGPU implementation: wgpu, dawn, ...; `backend` now "
                       "names the native API under it: Vulkan, Metal, D3D12)")
            args.implementation = args.renamed_backend
        if hasattr(args, "implementation"):  # resolved once here ($VERIFY_IMPLEMENTATION included), checked early
            from verify.gpu.implementations import chosen_implementation

            args.implementation = chosen_implementation(args.implementation)
        return args.func(args)
    except UsageError as exc:
        print(f"verify: error: {exc}", file=sys.stderr)
        return 2
    except KernelError as exc:
        print(f"verify: kernel failed: {exc}", file=sys.stderr)
        return 1
    except InfrastructureError as exc:  # e.g. ORT's Node died while a capture was made for the plan
        print(f"verify: error: {exc} (what runs the kernel broke, not the kernel: no verdict; run it again)",
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("verify: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`verify replay CASE | head -1`): the exit code still says what
        # happened; stdout is closed quietly so Python does not complain at exit.
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return getattr(args, "_exit_code", 0)


if __name__ == "__main__":
    sys.exit(main())
