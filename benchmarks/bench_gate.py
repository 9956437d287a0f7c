"""The gate's speed, per kernel and per stage, from real gate runs (not from timed tests).

Runs `verify gate --profile PROFILE` once per `--jobs` value, side by side on the same machine,
and writes JSON: wall time per run (and its ratio to the first), its CPU utilisation (the gate's
processes' CPU seconds over wall time and cores), its ten longest checks, and the shares of
check time spent drawing cases, in the float64 reference and budget, on the GPU (upload,
dispatch, readback), comparing, and in the sanitize check; its timeline (when a check first
started, when it printed its first and its last record, and when it exited: planning and starting
workers before, results and the report after; and the machine's busy cores each second, which
shows where a gate leaves cores idle); the load average before the first run;
with --cold, each run starts with empty caches, as a fresh machine's first gate does;
and per kernel and WebGPU implementation (from the first run's records) the examples,
examples per second of check time, and milliseconds per case of each stage: reference (float64
reference and budget), upload, dispatch, readback, compare, and generation (Hypothesis drawing
cases, targeting, shrinking). Measure on a quiet machine.

    python benchmarks/bench_gate.py --profile ci --jobs 1,2 --out benchmarks/results/gate_ci.json
    python benchmarks/bench_gate.py --profile quick --kernels merge_state,rope
    python benchmarks/bench_gate.py --profile nightly --jobs 16 --stop-after 540   # a bounded window
    python benchmarks/bench_gate.py --profile ci --jobs 2 --cold    # a fresh machine's first gate

A gate stopped by `--stop-after` keeps the checks it finished (results.json is written as each
ends): the run says `complete: false`, how many of the planned checks finished, and its shares.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

#: The first word of a record's line in the gate's output (verify/display.py).
RECORD_WORDS = ("PASS", "FAIL", "KNOWN", "SKIP", "ERROR", "DIVERGENCE")
STAGES = ("reference", "upload", "dispatch", "readback", "compare", "generation")


#: What a machine keeps between gates, each pointed at an empty folder by --cold: ORT's captured
#: programs, TVM's built kernels, Mesa's and NVIDIA's shader caches.
COLD_CACHES = {"VERIFY_ORT_CACHE": "ort", "VERIFY_TVM_CACHE": "tvm", "MESA_SHADER_CACHE_DIR": "mesa",
               "__GL_SHADER_DISK_CACHE_PATH": "nvidia"}


def cold_environment(folder: Path) -> dict:
    """The environment of a gate that starts as a fresh machine's first one: every cache a gate
    fills (COLD_CACHES) empty, under `folder`."""
    environment = dict(os.environ)
    for variable, name in COLD_CACHES.items():
        (folder / name).mkdir(parents=True, exist_ok=True)
        environment[variable] = str(folder / name)
    return environment


def run_gate(profile: str, jobs: int, kernels: str | None, seed: int, out: Path, implementation: str | None = None,
             extra: tuple = (), stop_after: float | None = None, env: dict | None = None,
             log: str | None = None) -> dict:
    command = [sys.executable, "-m", "verify", "gate", "--profile", profile, "--jobs", str(jobs), "--seed", str(seed),
               "--out", str(out), "--allow-skip", *extra]
    if kernels:
        command += ["--kernels", kernels]
    if implementation:
        command += ["--implementation", implementation]
    start, cpu_before = time.perf_counter(), _children_cpu()
    stopped = False
    lines: list[tuple[float, str]] = []  # (seconds since start, line): when each record was printed
    with subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env) as gate:
        reader = threading.Thread(target=lambda: lines.extend((time.perf_counter() - start, line)
                                                              for line in gate.stderr), daemon=True)
        reader.start()
        busy: list[float] = []
        sampling = threading.Event()
        sampler = threading.Thread(target=sample_busy, args=(sampling, busy), daemon=True)
        sampler.start()
        try:
            gate.wait(timeout=stop_after)
        except subprocess.TimeoutExpired:
            # SIGTERM stops verify as Ctrl-C does: the records finished so far stay in results.json.
            stopped = True
            gate.terminate()
            gate.wait()
        reader.join()
        sampling.set()
        sampler.join()
    if log:
        with open(log, "a") as written:
            written.write(f"# verify gate --jobs {jobs}\n")
            written.writelines(f"{t:9.2f} {line}" for t, line in lines)
    stderr = "".join(line for _, line in lines)
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu_before
    if gate.returncode not in (0, 1) and not stopped:
        sys.exit(f"bench_gate: the gate could not run (exit {gate.returncode}):\n{stderr[-2000:]}")
    results = out / "results.json"  # absent when --stop-after stopped the gate while it planned
    document = json.loads(results.read_text()) if results.is_file() else {"records": [], "complete": False}
    verdicts = defaultdict(int)
    for record in document["records"]:
        verdicts[record["verdict"]] += 1
    records = document["records"]
    return {"jobs": jobs, "wall_s": round(wall, 2), "exit": gate.returncode, "checks": len(records),
            "stopped_after_s": stop_after if stopped else None, "complete": bool(document.get("complete")),
            "planned": document.get("planned"),
            "verdicts": dict(verdicts), "cpu_s": round(cpu, 1),
            "cpu_utilisation": round(cpu / wall / (os.cpu_count() or 1), 3),
            "longest": [{"check": f"{r['kernel']} {r['check']} [{_config(r)}]", "s": r.get("duration_s")}
                        for r in sorted(records, key=lambda r: -float(r.get("duration_s") or 0))[:10]],
            "shares": shares(records), "timeline": timeline(lines, wall, busy), "records": records}


def timeline(lines: list[tuple[float, str]], wall: float, busy: list[float] | None = None) -> dict:
    """When the gate said a check started (its first progress line) and printed its first and its
    last record, and when it exited, in seconds from its start: the time before the first start
    is planning and starting workers, the time after the last record writing results and the
    report. Under a budget a record prints once all of its check's parts have run, so the first
    record can come long after the first start. `busy`: the machine's busy cores in each second
    of the run (all of /proc/stat, so run it on a quiet machine): where a gate leaves cores idle."""
    printed = [t for t, line in lines if line.split(" ", 1)[0] in RECORD_WORDS]
    started = [t for t, line in lines if line.startswith("...")]
    # Planning that met WGSL not kept yet plans the kernels left in parallel (verify/prepare.py).
    pool = [[round(t, 2), line.strip()] for t, line in lines
            if line.startswith(("verify: the WGSL of ", "verify:   [", "verify: made in "))]
    found = {"planning_pool": pool} if pool else {}
    if started:
        found["first_start_s"] = round(min(started), 2)
    if busy:
        found["busy_cores_each_s"] = [round(cores, 1) for cores in busy]
    if not printed:
        return found | {"exit_s": round(wall, 2)}
    return found | {"first_record_s": round(min(printed), 2), "last_record_s": round(max(printed), 2),
                    "exit_s": round(wall, 2)}


def _busy_ticks() -> tuple[int, int] | None:
    """(busy, total) jiffies of every core so far (/proc/stat), or None where there is none."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def sample_busy(stop: threading.Event, into: list[float], every: float = 1.0) -> None:
    """Append the machine's busy cores over each `every` seconds to `into` until `stop` is set."""
    cores = os.cpu_count() or 1
    last = _busy_ticks()
    while last is not None and not stop.wait(every):
        now = _busy_ticks()
        if now is None:
            return
        busy, total = now[0] - last[0], now[1] - last[1]
        into.append(cores * busy / total if total else 0.0)
        last = now


def _children_cpu() -> float:
    """CPU seconds of this process's finished children: the gate, its workers and Node processes."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _config(record: dict) -> str:
    text = " ".join(f"{k}={v}" for k, v in sorted(record["config"].items()))
    implementation = (record.get("adapter") or {}).get("implementation")
    width = record.get("subgroup_width")
    return text + (f" w={width}" if width else "") + (f" {implementation}" if implementation else "")


def shares(records: list[dict]) -> dict:
    """Where check time went, as fractions of all checks' time: drawing cases, the float64
    reference, the GPU (upload + dispatch + readback), comparing, and the sanitize check whole."""
    total = sum(float(r.get("duration_s") or 0) for r in records) or 1.0
    stage = defaultdict(float)
    for record in records:
        for name, seconds in ((record.get("timing") or {}).get("total_s") or {}).items():
            stage[name] += float(seconds)
    sanitize = sum(float(r.get("duration_s") or 0) for r in records if r["check"] == "sanitize")
    return {"generation": round(stage["generation"] / total, 3), "reference": round(stage["reference"] / total, 3),
            "gpu": round((stage["upload"] + stage["dispatch"] + stage["readback"]) / total, 3),
            "compare": round(stage["compare"] / total, 3), "sanitize_check": round(sanitize / total, 3),
            "check_s": round(total, 1)}


def per_kernel(records: list[dict]) -> dict:
    kernels: dict = defaultdict(lambda: {"checks": 0, "examples": 0, "check_s": 0.0, "cases": 0,
                                         "stage_s": dict.fromkeys(STAGES, 0.0)})
    for record in records:  # one row per kernel and WebGPU implementation (wgpu: Naga, dawn: Tint)
        implementation = (record.get("adapter") or {}).get("implementation") or "-"
        entry = kernels[f"{record['kernel']} [{implementation}]"]
        entry["checks"] += 1
        entry["examples"] += int(record.get("examples") or 0)
        entry["check_s"] += float(record.get("duration_s") or 0.0)
        timing = record.get("timing") or {}
        entry["cases"] += int(timing.get("cases") or 0)
        for stage, seconds in (timing.get("total_s") or {}).items():
            if stage in entry["stage_s"]:
                entry["stage_s"][stage] += float(seconds)
    summary = {}
    for kernel, entry in sorted(kernels.items(), key=lambda kv: -kv[1]["check_s"]):
        cases = max(entry["cases"], 1)
        summary[kernel] = {
            "checks": entry["checks"], "examples": entry["examples"], "check_s": round(entry["check_s"], 2),
            "examples_per_s": round(entry["examples"] / entry["check_s"], 2) if entry["check_s"] else None,
            "ms_per_case": {stage: round(seconds / cases * 1e3, 3) for stage, seconds in entry["stage_s"].items()},
        }
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--jobs", default=f"1,{os.cpu_count() or 1}", help="comma-separated worker counts to compare")
    parser.add_argument("--kernels", help="comma-separated subset of kernels")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--implementation", help="one WebGPU implementation (e.g. wgpu or dawn); default: the gate's, "
                        "every one installed")
    parser.add_argument("--out", help="write the JSON here (default: print it)")
    parser.add_argument("--keep", help="keep each run's gate output (results.json, report) in this folder, "
                                       "e.g. to compare verdicts between two versions")
    parser.add_argument("--gate-args", default="", help="more arguments for every `verify gate`, e.g. "
                        "\"--slice-examples 0\" or \"--reuse\"")
    parser.add_argument("--stop-after", type=float, metavar="S",
                        help="stop each gate after S seconds (as Ctrl-C does) and report the checks it finished; "
                        "the run then says complete: false")
    parser.add_argument("--cold", action="store_true",
                        help="start each gate with empty caches of its own (ORT's captured programs, TVM's builds, "
                        "Mesa's and NVIDIA's shader caches), as a fresh machine's first gate does")
    parser.add_argument("--log", metavar="FILE", help="append every line each gate printed to FILE, with the second "
                        "it came (what the timeline summarises)")
    args = parser.parse_args()
    load_before = os.getloadavg()  # a busy machine skews every figure: say what it was doing
    runs = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or scratch
        for jobs in dict.fromkeys(int(j) for j in args.jobs.split(",")):
            print(f"bench_gate: verify gate --profile {args.profile} --jobs {jobs} ...", file=sys.stderr, flush=True)
            env = cold_environment(Path(scratch) / f"cold{jobs}") if args.cold else None
            runs.append(run_gate(args.profile, jobs, args.kernels, args.seed, Path(folder) / f"jobs{jobs}",
                                 args.implementation, tuple(args.gate_args.split()), args.stop_after, env, args.log))
            print(f"bench_gate:   {runs[-1]['wall_s']} s, {runs[-1]['verdicts']}", file=sys.stderr, flush=True)
    base = runs[0]["wall_s"]
    report = {
        "command": " ".join(sys.argv),
        "host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
        "profile": args.profile, "seed": args.seed, "implementation": args.implementation or "every one installed",
        "caches": "empty at each run's start (--cold)" if args.cold else "as the machine has them",
        "load_average_before": [round(x, 2) for x in load_before],
        "runs": [{k: v for k, v in run.items() if k != "records"} | {"speed_up": round(base / run["wall_s"], 2)}
                 for run in runs],
        "kernels": per_kernel(runs[0]["records"]),
    }
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
