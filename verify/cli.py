"""The `verify` command: list, adapters, show, check, gate, replay, report.

Exit codes (docs/architecture.md §5): 0 every check held; 1 a kernel failed verification; 2 usage
or setup error. Expected failures print one line, never a traceback. A failure the kernel is
documented to have (verdict "known", Kernel.known_finding) is reported but does not fail the run.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from pathlib import Path

from verify import __version__
from verify.errors import KernelError, UsageError

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
  verify report reports/lavapipe.json reports/h200.json -o reports/both.html

exit codes: 0 all checks held (or failed only as documented known findings),
            1 a kernel failed verification, 2 usage or setup error.
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


def _read_wgsl(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read WGSL ({exc.strerror or exc})") from None


# -- list / adapters / show ----------------------------------------------------------------------
def cmd_list(args) -> int:
    from verify.checks import all_checks
    from verify.kernels.registry import get_kernel, kernel_names

    described = [get_kernel(name).describe() for name in kernel_names()]
    if args.json:
        print(json.dumps(described, indent=1))
        return 0
    checks = all_checks()
    for d in described:
        keys = ", ".join(f"{k}={v['default']}" + (f" ({'|'.join(map(str, v['choices']))})" if v["choices"] else "")
                         for k, v in d["config_keys"].items())
        print(f"{d['name']}  [{d['source']}]  {d['summary']}")
        print(f"    reference: {d['reference']}")
        print(f"    config:    {keys or '-'}")
        print(f"    checks:    {', '.join(d['checks'])}")
    print("\nchecks:")
    for name, check in sorted(checks.items()):
        print(f"  {name:18} {check.doc}")
    return 0


def cmd_adapters(args) -> int:
    from verify.gpu import Device, list_adapters
    from verify.gpu.adapters import NO_ADAPTER_HELP

    adapters = list_adapters()
    if not adapters:
        raise UsageError(NO_ADAPTER_HELP)
    chosen = Device(args.adapter)
    rows = []
    for info in adapters:
        row = dict(info.as_record(), features=list(info.features))
        if info == chosen.info:
            row.update(selected=True, subgroup_size=chosen.subgroup_size,
                       zeroes_workgroup_memory=chosen.zeroes_workgroup_memory,
                       granted_features=sorted(chosen.features), granted_limits=chosen.limits)
        rows.append(row)
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for row in rows:
        mark = "*" if row.get("selected") else " "
        print(f"{mark} {row['name']}  backend={row['backend']} type={row['type']} vendor={row['vendor']}")
        print(f"    driver:   {row['driver']}")
        wanted = [f for f in ("shader-f16", "subgroup", "timestamp-query") if f in row["features"]]
        print(f"    features: {', '.join(wanted) or 'none of shader-f16, subgroup, timestamp-query'}")
        if row.get("selected"):
            print(f"    subgroup size (measured): {row['subgroup_size']}")
            zeroed = row["zeroes_workgroup_memory"]
            print(f"    workgroup memory zero-initialised: {'yes' if zeroed else 'NO (WGSL requires it; kernels relying on it break here)'}")
    print("\n* = the adapter checks run on (set VERIFY_ADAPTER or --adapter to choose another)")
    return 0


def cmd_show(args) -> int:
    from verify.kernels.registry import get_kernel

    kernel = get_kernel(args.kernel)
    sys.stdout.write(kernel.wgsl(kernel.config(_parse_config(args.config))))
    return 0


# -- check / gate --------------------------------------------------------------------------------
def _jobs_for(kernel, config: dict, *, examples: int, seed: int, profile: str, out_dir: Path, time_limit: float,
              adapter, checks=None, wgsl=None, origin=""):
    from verify.session import Job

    selected = [c for c in checks if c in kernel.checks] if checks else list(kernel.checks)
    return [Job(kernel.name, config, check, examples, seed, profile, wgsl=wgsl, origin=origin or kernel.source,
                origin_kind="file" if wgsl else kernel.source, out_dir=str(out_dir), adapter=adapter,
                time_limit=time_limit) for check in selected]


def _file_config(kernel, path: str, overrides: dict) -> dict:
    """A file printed by `verify show` records its config: use it unless --config says otherwise
    (a contradiction is reported by _validate_user_wgsl)."""
    from verify.kernels.specialize import recorded_config

    keys = {k.name for k in kernel.config_keys}
    recorded = {k: v for k, v in (recorded_config(_read_wgsl(path)) or {}).items() if k in keys}
    return {**recorded, **overrides}


def _validate_user_wgsl(kernel, config: dict, path: str) -> str:
    from verify.gpu.wgsl import parse_interface
    from verify.kernels.specialize import check_recorded_config

    text = _read_wgsl(path)
    check_recorded_config(text, config, path)
    want = parse_interface(kernel.wgsl(config)).names
    have = parse_interface(text).names
    if sorted(want) != sorted(have):
        raise UsageError(f"{path}: bindings {sorted(have)} do not match {kernel.name}'s contract {sorted(want)}")
    return text


def _execute(jobs, out_dir: Path, meta: dict, junit: str | None) -> int:
    from verify.display import Display, summary
    from verify.results.store import ResultsWriter
    from verify.session import run_jobs

    out_dir.mkdir(parents=True, exist_ok=True)
    writer = ResultsWriter(out_dir / "results.json", meta)
    display = Display(len(jobs))
    last_render = [time.monotonic()]

    def on_record(record):
        writer.add(record)
        display.record(record)
        if time.monotonic() - last_render[0] > REPORT_REFRESH_S:  # a killed run still leaves a report
            _write_outputs(writer.document, out_dir, None)
            last_render[0] = time.monotonic()

    interrupted = False
    previous = signal.signal(signal.SIGTERM, _terminate)  # a CI timeout stops the run like Ctrl-C
    try:
        run_jobs(jobs, on_record=on_record, on_progress=display.progress, on_start=display.start,
                 log_path=out_dir / "worker.log")
    except KeyboardInterrupt:
        interrupted = True
    finally:
        signal.signal(signal.SIGTERM, previous)
        display.close()
        if interrupted:
            writer.document["interrupted"] = True
            writer.flush()
        else:
            writer.finish(interrupted=False)
        _write_outputs(writer.document, out_dir, junit)
    records = writer.records
    print(summary(records) + (" (interrupted)" if interrupted else ""), file=sys.stderr)
    print(f"results: {out_dir / 'results.json'}   report: {out_dir / 'report.html'}", file=sys.stderr)
    if interrupted:
        return 130
    # "known" (a documented finding reproduced) is reported, not failed: only news fails the run.
    return 1 if any(r.get("verdict") in ("fail", "error") for r in records) else 0


#: Seconds between refreshes of report.html during a run.
REPORT_REFRESH_S = 60.0


def _terminate(signum, frame):
    raise KeyboardInterrupt


def _write_outputs(document: dict, out_dir: Path, junit: str | None) -> None:
    from verify.report import render_report
    from verify.results.junit import write_junit

    if junit:
        write_junit(document, Path(junit))
    render_report([document], out_dir / "report.html")


def cmd_check(args) -> int:
    from verify.kernels.registry import get_kernel
    from verify.profiles import get_profile

    profile = get_profile(args.profile)
    overrides = _parse_config(args.config)
    if args.wgsl and len(args.kernel) != 1:
        raise UsageError("--wgsl checks one file under one kernel's contract; name exactly one kernel")
    checks = args.checks.split(",") if args.checks else None
    jobs = []
    for name in args.kernel:
        kernel = get_kernel(name)
        config = kernel.config(_file_config(kernel, args.wgsl, overrides) if args.wgsl else overrides)
        if checks:
            unknown = [c for c in checks if c not in kernel.checks]
            if unknown:
                raise UsageError(f"{name} has no check {', '.join(unknown)}; its checks: {', '.join(kernel.checks)}")
        wgsl = _validate_user_wgsl(kernel, config, args.wgsl) if args.wgsl else None
        jobs += _jobs_for(kernel, config, examples=args.examples, seed=args.seed, profile=profile.name,
                          out_dir=Path(args.out), time_limit=args.time_limit or profile.time_limit,
                          adapter=args.adapter, checks=checks, wgsl=wgsl,
                          origin=os.path.abspath(args.wgsl) if args.wgsl else "")
    meta = {"command": "check", "argv": sys.argv[1:], "profile": profile.name}
    return _execute(jobs, Path(args.out), meta, args.junit)


def cmd_gate(args) -> int:
    from verify.kernels.registry import get_kernel, kernel_names
    from verify.profiles import get_profile

    profile = get_profile(args.profile)
    names = args.kernels.split(",") if args.kernels else kernel_names()
    jobs, skipped = [], []
    for name in names:
        kernel = get_kernel(name)
        try:
            configs = kernel.gate_configs(profile.name)
        except UsageError as exc:  # e.g. apache-tvm not installed: reported, not fatal to the gate
            skipped.append({"kernel": name, "check": "*", "config": {}, "verdict": "skip", "reason": str(exc)})
            continue
        per_config = max(1, math.ceil(profile.examples / len(configs)))
        for config in configs:
            jobs += _jobs_for(kernel, config, examples=per_config, seed=args.seed, profile=profile.name,
                              out_dir=Path(args.out), time_limit=args.time_limit or profile.time_limit,
                              adapter=args.adapter)
    meta = {"command": "gate", "argv": sys.argv[1:], "profile": profile.name}
    out_dir = Path(args.out)
    if skipped:
        from verify.display import record_line

        for record in skipped:
            print(record_line(record), file=sys.stderr)
        meta["skipped_kernels"] = skipped
    return _execute(jobs, out_dir, meta, args.junit)


# -- replay / report -------------------------------------------------------------------------------
def cmd_replay(args) -> int:
    from verify.checks import get_check
    from verify.checks.context import CheckContext
    from verify.gpu import Device
    from verify.kernels.registry import get_kernel
    from verify.results.casefile import load_case

    case, meta = load_case(args.case)
    kernel = get_kernel(meta["kernel"])
    config = kernel.config(meta["config"])
    device = Device(args.adapter, kernel.limits)
    missing = device.missing(kernel.requirements(config))
    if missing:
        raise UsageError(f"this adapter ({device.info.name}) lacks {', '.join(missing)}; cannot replay")
    check = get_check(meta.get("check", "reference"))
    print(f"kernel {kernel.name} [{' '.join(f'{k}={v}' for k, v in sorted(config.items()))}], check {check.name}")
    print(f"case   {case.summary()}")
    recorded = meta.get("adapter", {})
    print(f"saved on {recorded.get('name', '?')} ({recorded.get('backend', '?')}); replaying on {device.info.name} "
          f"({device.info.backend})")
    outcome = check.run_example(CheckContext(kernel, config, device, meta["wgsl"]), case)
    for metrics in outcome.outputs:
        m = metrics
        print(f"  {m.name:8} max abs {m.max_abs:.3g}  max ulp {m.max_ulp:.3g}  rel L2 {m.rel_l2:.3g}  "
              f"max err/budget {m.max_err_over_budget:.3g}  NaN {m.nan_count}  failing {m.failing}/{m.elements}")
    print(("PASS" if outcome.passed else "FAIL") + f"  {outcome.message()}")
    return 0 if outcome.passed else 1


def cmd_report(args) -> int:
    from verify.report import render_report
    from verify.results.store import load_results

    documents = [load_results(path) for path in args.results]
    render_report(documents, Path(args.output))
    print(f"report: {args.output}", file=sys.stderr)
    return 0


# -- parser ----------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="verify", description="Prove WebGPU LLM kernels correct: float64 references, real GPU runs, "
        "Hypothesis property tests, error budgets derived from the arithmetic.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"verify {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def adapter_option(p):
        p.add_argument("--adapter", help="run on the adapter whose name/backend contains this text "
                       "(default: $VERIFY_ADAPTER, else the best one)")

    p = sub.add_parser("list", help="every kernel with its source, reference, config keys and checks")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("adapters", help="the WebGPU adapters found, their features and subgroup size")
    p.add_argument("--json", action="store_true")
    adapter_option(p)
    p.set_defaults(func=cmd_adapters)

    config_help = "KEY=VALUE the WGSL is specialised on (repeatable or comma-separated; see `verify list`)"
    p = sub.add_parser("show", help="print the exact WGSL `check` runs for a config")
    p.add_argument("kernel")
    p.add_argument("--config", action="append", metavar="K=V", help=config_help)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("check", help="property-test kernels against their references on this machine",
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG)
    p.add_argument("kernel", nargs="+")
    p.add_argument("--config", action="append", metavar="K=V", help=config_help)
    p.add_argument("--wgsl", metavar="FILE", help="check this WGSL file under the kernel's contract instead of ours")
    p.add_argument("--examples", type=int, default=100, help="Hypothesis examples per check (default 100)")
    p.add_argument("--seed", type=int, default=0, help="Hypothesis seed; the same seed draws the same cases (default 0)")
    p.add_argument("--checks", help="comma-separated subset of the kernel's checks")
    p.add_argument("--profile", default="ci", help="case sizes: quick | ci | nightly (default ci)")
    p.add_argument("--out", default="reports/check", help="folder for results.json, report.html, case files")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML")
    p.add_argument("--time-limit", type=float, help="seconds per check before it fails as a hang")
    adapter_option(p)
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("gate", help="every kernel's checks; the CI gate")
    p.add_argument("--profile", default="ci", help="quick | ci | nightly (default ci)")
    p.add_argument("--out", default="reports", help="folder for results.json, report.html, case files (default reports)")
    p.add_argument("--junit", metavar="FILE", help="also write JUnit XML")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kernels", help="comma-separated subset of kernels")
    p.add_argument("--time-limit", type=float, help="seconds per check before it fails as a hang")
    adapter_option(p)
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("replay", help="re-run one saved case on this machine and print the comparison")
    p.add_argument("case", help="a case file (.npz, with its .json beside it)")
    adapter_option(p)
    p.set_defaults(func=cmd_replay)

    p = sub.add_parser("report", help="render one HTML report from one or more results files")
    p.add_argument("results", nargs="+", metavar="RESULTS.json")
    p.add_argument("-o", "--output", default="reports/report.html")
    p.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except UsageError as exc:
        print(f"verify: error: {exc}", file=sys.stderr)
        return 2
    except KernelError as exc:
        print(f"verify: kernel failed: {exc}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
