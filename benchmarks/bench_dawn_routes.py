"""Dawn in process (PyPI wgpudawn, `dawn-inprocess`) against Dawn in Node (`dawn`), side by side.

Three measurements, the two routes always taking turns so that a change in the machine's load falls
on both alike:

- `checks`: `verify check KERNELS --implementation ROUTE --checks reference --examples N`, run as a
  user runs it (a fresh command: process start, worker, device, compile, cases), `--rounds` times
  each, alternating; the command's wall time and each record's per-case stage times;
- `compile`: a fresh process per (route, kernel) opens a device, compiles the kernel's first gate
  config and launches one case, with Mesa's shader cache off (MESA_SHADER_CACHE_DISABLE: a cold
  compile, as on a fresh machine; lavapipe makes a pipeline's machine code at its first dispatch,
  so the compile is the pipeline and the first launch), then the same on a second device of the
  same process (warm: the process's start-up spent, the driver loaded);
- `cases`: in one process, each kernel's cases (Hypothesis, seed 0) launched on both devices in
  turn after one warm-up launch each, as benchmarks/bench_backends.py does for wgpu and Dawn.

    python benchmarks/bench_dawn_routes.py [--kernels merge_state,rope] [--rounds 3] [--out FILE]

Prints a table on stderr and the JSON document on stdout (and to --out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUTES = ("dawn", "dawn-inprocess")
HERE = Path(__file__).resolve().parent

#: Run in a fresh process: open a device of the route, compile the kernel's first gate config and
#: launch one case (cold: lavapipe compiles a pipeline's machine code at its first dispatch), then
#: the same on a second device of the same process (warm); seconds as JSON on stdout.
_COMPILE = """
import json, sys, time
started = time.perf_counter()
from hypothesis import HealthCheck, given, settings, seed
from verify.gpu import open_device
from verify.kernels.registry import get_kernel
route, name, profile = sys.argv[1:4]
kernel = get_kernel(name)
config = kernel.gate_configs(profile)[0]
wgsl = kernel.wgsl(config)
cases = []
@settings(max_examples=1, database=None, deadline=None, suppress_health_check=list(HealthCheck))
@seed(0)
@given(kernel.cases(config, "quick"))
def collect(case):
    cases.append(case)
collect()
imported = time.perf_counter()
times = {"import_s": imported - started}
for label, limits in (("cold", kernel.limits), ("warm", dict(kernel.limits, **{"max-storage-buffers-per-shader-stage": 9}))):
    begun = time.perf_counter()
    device = open_device(route, None, limits)
    opened = time.perf_counter()
    for module in kernel.modules(wgsl):
        device.pipeline(module)
    compiled = time.perf_counter()
    kernel.launch(device, wgsl, config, cases[0])
    launched = time.perf_counter()
    times.update({f"{label}_open_s": opened - begun, f"{label}_pipeline_s": compiled - opened,
                  f"{label}_first_launch_s": launched - compiled, f"{label}_compile_s": launched - opened})
print(json.dumps(times))
"""


def run_checks(kernels: list[str], route: str, examples: int) -> dict:
    """One `verify check` of the kernels' reference on `route`, as a user runs it."""
    with tempfile.TemporaryDirectory() as out:
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "verify", "check", *kernels, "--implementation", route,
                               "--checks", "reference", "--examples", str(examples), "--out", out, "--jobs", "1"],
                              capture_output=True, text=True)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"verify check on {route} failed ({done.returncode}): {done.stderr[-2000:]}")
        records = json.loads((Path(out) / "results.json").read_text())["records"]
    return {"wall_s": round(wall, 3),
            "records": [{"kernel": r["kernel"], "verdict": r["verdict"], "examples": r["examples"],
                         "duration_s": r["duration_s"], "per_case_ms": r["timing"]["per_case_ms"]} for r in records]}


def compile_once(route: str, kernel: str, profile: str) -> dict:
    env = dict(os.environ, MESA_SHADER_CACHE_DISABLE="true")
    done = subprocess.run([sys.executable, "-c", _COMPILE, route, kernel, profile], capture_output=True, text=True,
                          env=env)
    if done.returncode != 0:
        raise SystemExit(f"compiling {kernel} on {route} failed: {done.stderr[-2000:]}")
    return {k: round(v, 3) if isinstance(v, float) else v for k, v in json.loads(done.stdout.splitlines()[-1]).items()}


def cases_side_by_side(kernels: list[str], count: int, profile: str) -> list[dict]:
    sys.path.insert(0, str(HERE))
    from bench_backends import draw_cases, interleaved, round_trip

    from verify.gpu import open_device
    from verify.kernels.registry import get_kernel

    devices = {route: open_device(route) for route in ROUTES}
    rows = [{"kernel": "(round trip)", **interleaved(devices, round_trip, list(range(100)))}]
    for name in kernels:
        kernel = get_kernel(name)
        config = kernel.gate_configs(profile)[0]
        wgsl = kernel.wgsl(config)
        cases = draw_cases(kernel, config, count, profile)
        per = {route: open_device(route, None, kernel.limits) for route in ROUTES}
        rows.append({"kernel": name, "cases": len(cases),
                     **interleaved(per, lambda device, case: kernel.launch(device, wgsl, config, case), cases)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="merge_state,rope")
    parser.add_argument("--compile-kernels", default="merge_state,rope,decode.tiled,dp4a.matmul")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    kernels = [k for k in args.kernels.split(",") if k]

    document = {
        "benchmark": "Dawn in process (wgpudawn) against Dawn in Node (npm webgpu)",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_average_at_start": os.getloadavg()},
        "checks": {route: [] for route in ROUTES}, "compile": [], "cases": [],
    }
    for _ in range(args.rounds):
        for route in ROUTES:
            document["checks"][route].append(run_checks(kernels, route, args.examples))
            print(f"check {route:15} {document['checks'][route][-1]['wall_s']:7.2f} s", file=sys.stderr)
    for kernel in [k for k in args.compile_kernels.split(",") if k]:
        for route in ROUTES:
            row = {"kernel": kernel, "route": route, **compile_once(route, kernel, args.profile)}
            document["compile"].append(row)
            print(f"compile {kernel:14} {route:15} open {row['cold_open_s']:.3f} s  cold {row['cold_compile_s']:.3f} s  "
                  f"warm {row['warm_compile_s']:.3f} s", file=sys.stderr)
    document["cases"] = cases_side_by_side(kernels, args.cases, args.profile)
    for row in document["cases"]:
        print(f"cases {row['kernel']:14} " + "  ".join(f"{route} wall {row[route]['wall']:.3f} ms" for route in ROUTES),
              file=sys.stderr)
    document["load_average_at_end"] = os.getloadavg()
    document["summary"] = {route: {"check_wall_s_median": statistics.median(r["wall_s"] for r in runs)}
                           for route, runs in document["checks"].items() if runs}
    text = json.dumps(document, indent=1, default=str)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
