"""The `verify` command: list, adapters, show, check, gate, replay, report, setup, export, findings, sources.

Exit codes (docs/architecture.md §5): 0 every check held; 1 a kernel failed verification; 2 usage
or setup error; 130 interrupted (Ctrl-C or SIGTERM: results so far are kept, the report is
written). Expected failures print one line, never a traceback. A failure the kernel is
documented to have (verdict "known", Kernel.known_finding) is reported but does not fail the run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import sys
from pathlib import Path

from verify._version import DISTRIBUTION, __version__
from verify.errors import FailureKind, InfrastructureError, KernelError, UsageError, deprecated

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
  verify findings status                         ORT's findings on each onnxruntime-web version (1.30.0, 1.31.1)
  verify report reports/lavapipe.json reports/h200.json -o reports/both.html
  verify setup --dawn                            install what Dawn needs (Node packages, Mesa 25 lavapipe)
  verify setup --llamacpp                        obtain llama.cpp's pinned ggml-webgpu sources into the cache

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
        for check, why in d["leaves_out"].items():
            print(f"    without:   {check} ({why})")
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
def _outputs(args):
    """The output folder, and the --junit and --sarif files, checked before anything is planned: a
    path that cannot be written fails in the first second, not after the plan's builds and the run."""
    from verify.run import Outputs

    return Outputs.checked(args.out, junit=args.junit, sarif=args.sarif)


def _schedule(args, profile_budget: bool = True):
    """How the run is scheduled. `profile_budget` False: without --budget every planned example
    runs (`verify check` asks for --examples per check, and gets them), where the gate takes the
    profile's budget (ci's 165 s)."""
    from verify.run import Schedule

    budget = args.budget if args.budget is not None or profile_budget else 0
    return Schedule(workers=args.jobs, reuse=None if args.reuse is None else [Path(p) for p in args.reuse],
                    slice_examples=args.slice_examples, budget=budget)


def _execute(plan, outputs, args, profile_budget: bool = True) -> int:
    """Run the plan (verify.run.Run) and say what its skips cost; the exit code of the run."""
    from verify.run import Run

    outcome = Run(plan, outputs, _schedule(args, profile_budget), argv=sys.argv[1:]).execute()
    if outcome.skips and not args.allow_skip and not outcome.interrupted:
        from verify.display import skip_summary

        print(skip_summary(outcome.skips, len(outcome.records)), file=sys.stderr)
    return outcome.exit_code(allow_skip=args.allow_skip)


def cmd_check(args) -> int:
    from verify.plan import named_list, read_wgsl
    from verify.profiles import get_profile
    from verify.run import plan_check

    profile = get_profile(args.profile)
    outputs = _outputs(args)
    if args.wgsl and len(args.kernel) != 1:
        raise UsageError("--wgsl checks one file under one kernel's contract; name exactly one kernel")
    checks = named_list(args.checks, "--checks", "check") if args.checks is not None else None
    plan = plan_check(args.kernel, _parse_config(args.config), profile=profile, examples=args.examples,
                      seed=args.seed, out_dir=Path(args.out), checks=checks, subgroup_width=args.subgroup_width,
                      time_limit=args.time_limit, adapter=args.adapter, implementation=args.implementation,
                      wgsl=read_wgsl(args.wgsl) if args.wgsl else None,
                      wgsl_origin=os.path.abspath(args.wgsl) if args.wgsl else "")
    return _execute(plan, outputs, args, profile_budget=False)


def cmd_gate(args) -> int:
    from verify.plan import named_list
    from verify.profiles import get_profile
    from verify.run import plan_gate

    profile = get_profile(args.profile)
    outputs = _outputs(args)
    names = named_list(args.kernels, "--kernels", "kernel") if args.kernels is not None else None
    plan = plan_gate(names, profile=profile, seed=args.seed, out_dir=Path(args.out), time_limit=args.time_limit,
                     adapter=args.adapter, implementation=args.implementation, workers=args.jobs, shard=args.shard)
    if plan.unplanned:
        print(f"verify: not planned, as they run only on implementations this gate does not run on "
              f"(--implementation {args.implementation}): "
              + ", ".join(f"{name} ({' or '.join(only)})" for name, only in plan.unplanned), file=sys.stderr)
    return _execute(plan, outputs, args)


# -- replay / report -------------------------------------------------------------------------------
#: Replays of a case saved by a nondeterminism failure, when --repeat is not given: a race shows in
#: some runs only, so one passing replay would say nothing.
NONDETERMINISTIC_REPLAYS = 10


def cmd_replay(args) -> int:
    from verify.protocol import ReplayJob
    from verify.results.casefile import load_case
    from verify.session import Session

    _, saved = load_case(args.case)  # a bad file is a usage error here, before a worker starts
    if args.repeat is None:
        args.repeat = NONDETERMINISTIC_REPLAYS if saved.failure_kind == FailureKind.NONDETERMINISTIC.value else 1
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
    from verify.run import refuse_results_file, sarif_file, write_sarif

    documents = [load_results(path) for path in args.results]
    problems = run_problems(documents, allow_skip=args.allow_skip)
    output = Path(args.output)
    if output.is_dir():
        raise UsageError(f"-o {args.output}: is a folder; name the HTML file to write (e.g. {output / 'report.html'})")
    if output.resolve() in {Path(path).resolve() for path in args.results}:
        raise UsageError(f"-o {args.output}: is one of the results files to render; name the HTML file to write")
    refuse_results_file(output, "-o")
    sarif = sarif_file(args.sarif)
    if sarif is not None and sarif.resolve() in {Path(path).resolve() for path in args.results} | {output.resolve()}:
        raise UsageError(f"--sarif {args.sarif}: is one of the files read or written; name another file")
    try:
        render_report(documents, output, findings_dir=args.findings_dir, processes=os.cpu_count() or 1)
    except OSError as exc:
        raise UsageError(f"-o {args.output}: cannot write ({exc.strerror or exc})") from None
    print(f"report: {args.output}", file=sys.stderr)
    if sarif is not None:  # the WGSL it points at goes beside it: the results' folders are only read
        write_sarif(sarif, [(d.records, Path(d.path)) for d in documents], sarif.parent / "wgsl", rebuild=False,
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


def cmd_findings_status(args) -> int:
    """Each ORT finding's reproduction on each onnxruntime-web version; 0 once all ran (the table is
    the result, not a verdict), 2 for a version or finding verify does not know."""
    from verify.sources.ort.status import finding_status, table, to_json

    only = [name.strip() for name in args.only.split(",") if name.strip()] if args.only else None
    statuses = finding_status(args.ort_version, only, say=lambda line: print(line, file=sys.stderr))
    print(to_json(statuses) if args.json else "\n".join(table(statuses)))
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
    """TVM's, ORT's and llama.cpp's WGSL shipped with verify, made again (docs/tvm.md §8): each
    file that differs on stdout; --check writes nothing and exits 1 when any does."""
    from verify.plan import named_list
    from verify.sources.refresh import refresh_command

    kernels = named_list(args.kernels, "--kernels", "kernel") if args.kernels is not None else None
    sources = named_list(args.sources, "--sources", "source") if args.sources is not None else None
    return refresh_command(kernels, check=args.check, say=lambda line: print(line, file=sys.stderr, flush=True),
                           tell=print, sources=sources)


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
        outcome = run_setup(dawn=args.dawn, check_only=args.check, say=lambda line: print(line, flush=True),
                            llamacpp=args.llamacpp)
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

    def ort_version_option(p):
        p.add_argument("--ort-version", metavar="VERSION",
                       help="the onnxruntime-web version whose kernels the ort.* kernels check: one verify installs "
                       "side by side (1.30.0, 1.31.1; a release line such as 1.31 names its one), default "
                       "$VERIFY_ORT_VERSION, else 1.30.0 (docs/ort-dp4a.md §10.3)")

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
                       help="the time the checks are given (e.g. 90s, 3m; default for the gate: the profile's, 165s "
                       "for ci, none for quick and nightly; `verify check` runs its --examples unless given one): "
                       "every check first runs its corner cases, all of them, then random examples "
                       "in rounds of 10 until the budget is spent (a check without corners runs its first "
                       "whatever the budget); "
                       "each record says how many of its planned examples ran, and a check whose corners did not "
                       "complete is never a pass (0: no budget)")
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
        ort_version_option(p)

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
    ort_version_option(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("check", help="property-test kernels against their references on this machine",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("kernel", nargs="+", help="kernel names or 'pkg.module:Class' import paths")
    p.add_argument("--config", action="append", metavar="K=V", help=config_help)
    p.add_argument("--wgsl", metavar="FILE", help="check this WGSL file under the kernel's contract instead of ours")
    p.add_argument("--examples", type=_count, default=100, help="Hypothesis examples per check (default 100)")
    p.add_argument("--seed", type=int, default=0,
                   help="Hypothesis seed; the same seed draws the same cases (default 0)")
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
    ort_version_option(p)
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
    ort_version_option(q)
    q.set_defaults(func=cmd_findings_export)
    q = findings.add_parser("status", help="every finding of ONNX Runtime Web's programs on every onnxruntime-web "
                            "version verify installs: reproduces, fixed or changed (docs/findings.md §20)")
    q.add_argument("--ort-version", action="append", metavar="VERSION",
                   help="only this version (repeatable; default: every one verify installs, the first the one the "
                   "others' programs are compared with)")
    q.add_argument("--only", metavar="NAMES", help="comma-separated subset of findings")
    q.add_argument("--json", action="store_true", help="machine-readable output (schema verify.findings-status/1)")
    q.set_defaults(func=cmd_findings_status)

    p = sub.add_parser("sources", help="the WGSL of TVM's, ORT's and llama.cpp's kernels shipped with verify "
                       "(docs/tvm.md §8)")
    sources = p.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=_Parser)
    q = sources.add_parser("refresh", help="build TVM's, capture ORT's and instantiate llama.cpp's WGSL for every "
                           "gate config again (needs apache-tvm, Node with Dawn, and llama.cpp's sources: verify setup "
                           "--llamacpp) and rewrite the shipped copies that differ")
    q.add_argument("--check", action="store_true",
                   help="write nothing: list each shipped file that differs and exit 1 if any does")
    q.add_argument("--kernels", help="comma-separated subset of the TVM, ORT and llama.cpp kernels (default: all; "
                   "with a subset, shipped files no longer needed are not looked for)")
    q.add_argument("--sources", help="comma-separated subset of the sources: tvm, ort, llamacpp (default: all); "
                   "each one's shipped folder is compared whole")
    q.set_defaults(func=cmd_sources_refresh)

    p = sub.add_parser("setup", help="check what the WebGPU implementations need here; with --dawn install what "
                       "Dawn needs into the user cache (Node packages, Mesa 25 lavapipe)",
                       description="Check that wgpu has an adapter with shader-f16 and subgroups (a system driver "
                       "that needs root is said as the command to run, not installed); with --dawn, install the "
                       "pinned Node packages (npm ci) and, on Debian 12, Mesa 25 lavapipe into $VERIFY_CACHE "
                       "(default ~/.cache/verify), then ask Dawn for its adapter. Idempotent. Exit 0 when all is in "
                       "place, 2 with one line naming what is missing.")
    p.add_argument("--dawn", action="store_true", help="also set up Dawn, the second implementation")
    p.add_argument("--llamacpp", action="store_true",
                   help="also obtain llama.cpp's ggml-webgpu sources (the pinned llama-cpp-python 0.3.36 sdist, "
                   "downloaded by pip, sha256-checked, extracted into the cache): needed for llamacpp.* configs "
                   "beyond the gate's, whose programs ship with verify, and for `verify sources refresh`")
    p.add_argument("--check", action="store_true", help="only report what is in place; install nothing")
    p.set_defaults(func=cmd_setup)
    return parser


#: The environment variables that name folders verify keeps what it makes in.
CACHE_SETTINGS = ("VERIFY_CACHE", "VERIFY_TVM_CACHE", "VERIFY_ORT_CACHE")


def _check_cache_settings() -> None:
    """A cache variable naming something that is not a folder is the user's setting to fix, said
    in one line before anything runs (a folder that cannot be written is said where it is written,
    verify._files.made_once)."""
    for name in CACHE_SETTINGS:
        value = os.environ.get(name)
        if value and os.path.exists(value) and not os.path.isdir(value):
            raise UsageError(f"{name}={value}: is a file, not a folder; point it at a folder verify may write")


def _select_ort_version(given: str | None) -> None:
    """--ort-version, resolved to a pinned version and put in $VERIFY_ORT_VERSION (which the
    workers inherit); a $VERIFY_ORT_VERSION that names no pinned version is the one-line usage error."""
    if given is None and not os.environ.get("VERIFY_ORT_VERSION"):
        return
    from verify.sources.ort.runtime import VERSION_ENV, resolve_version, selected_version

    if given is not None:
        os.environ[VERSION_ENV] = resolve_version(given)
    else:
        os.environ[VERSION_ENV] = selected_version()


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
        if not isinstance(getattr(args, "ort_version", None), list):  # findings status takes several
            _select_ort_version(getattr(args, "ort_version", None))
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
