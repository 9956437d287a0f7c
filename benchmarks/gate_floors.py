"""The least wall time a gate can take on its machine, from bench_gate.py's measurements.

A gate's work is CPU seconds; spread perfectly over the machine's cores it cannot end sooner
than that work over the cores. This script turns one or two bench_gate.py JSON files into such
floors, so that a speed goal can be checked against what the gate's own work allows before any
code is cut:

- `cpu`: the run's CPU seconds (the gate and every process it started) over the cores, for each
  run the file holds (bench_gate.py's side-by-side runs, or alternations of two versions);
- `kernels`: the seconds of the GPU stages (upload, dispatch, readback; ms per case times
  examples, per kernel and implementation) over the cores. On a software driver (lavapipe) the
  kernels run on the CPU, so this is work no change to verify's own code removes, only running
  fewer or smaller cases, or a faster driver; on a real GPU it is no floor (`--gpu` leaves it out).
  The stage times are wall time inside each worker; with as many workers as cores they are CPU
  time (a 2-core ci gate: 1287 s of check time summed over both workers, 1304 s of CPU);
- with `--cold` (a run of the same gate on empty caches): `compile`, the cold run's CPU seconds
  beyond the warm run's over the cores, what filling the caches (shader compiles, TVM builds,
  ORT captures) costs a fresh machine.

    python benchmarks/gate_floors.py benchmarks/results/gate_ci_lavapipe_fresh_rows.json \\
        --cold benchmarks/results/gate_ci_lavapipe_cold_compile_groups.json --goal 180 --cold-goal 600
    python benchmarks/gate_floors.py benchmarks/results/h200_gate_ci_process_start.json --cores 16 --gpu --goal 20
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

#: The stages bench_gate.py times that are the kernel's run on the adapter.
GPU_STAGES = ("upload", "dispatch", "readback")


def _load(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        _fail(f"cannot read {path}: {exc}")
    if not isinstance(data, dict) or not data.get("runs") or not all("cpu_s" in run for run in data["runs"]):
        _fail(f"{path} is not bench_gate.py output (no runs with cpu_s)")
    return data


def _fail(message: str):
    """Bad input: one line and exit status 2."""
    print(f"gate_floors: {message}", file=sys.stderr)
    raise SystemExit(2)


def _cores(data: dict, cores: int | None, path: Path) -> int:
    if cores is None and "cpus" not in data:
        _fail(f"{path} does not say how many cores it ran on; give --cores")
    return cores or data["cpus"]


def kernel_seconds(data: dict) -> dict[str, float]:
    """Seconds of the GPU stages per implementation: examples x ms per case, summed over kernels."""
    seconds: dict[str, float] = {}
    for name, kernel in data.get("kernels", {}).items():
        implementation = name.rsplit("[", 1)[-1].rstrip("]") if "[" in name else "?"
        stages = kernel["ms_per_case"]
        spent = kernel["examples"] * sum(stages.get(stage, 0.0) for stage in GPU_STAGES) / 1000
        seconds[implementation] = seconds.get(implementation, 0.0) + spent
    return seconds


def floors(warm: dict, cores: int, cold: dict | None = None, on_gpu: bool = False) -> dict:
    """The floors (seconds): each run's CPU floor; the least CPU any run of the warm file spent
    (a file of several runs holds warm-ups and older code too), over the cores; the kernels'
    floor from the file's per-kernel stages; and the cold run's floors when given (compile:
    its CPU beyond the cheapest warm run's)."""
    run = min(warm["runs"], key=lambda r: r["cpu_s"])
    result = {"cores": cores, "wall_s": run["wall_s"], "cpu_s": run["cpu_s"],
              "floor_s": {"cpu": round(run["cpu_s"] / cores, 1)},
              "runs": [{"run": r.get("run", i), "wall_s": r["wall_s"], "cpu_s": r["cpu_s"],
                        "cpu_floor_s": round(r["cpu_s"] / cores, 1)} for i, r in enumerate(warm["runs"])]}
    if not on_gpu and warm.get("kernels"):
        spent = kernel_seconds(warm)
        result["kernel_s"] = {name: round(s, 1) for name, s in sorted(spent.items())}
        result["floor_s"]["kernels"] = round(sum(spent.values()) / cores, 1)
    if cold is not None:
        cold_run = cold["runs"][0]
        if cold.get("cpus", cores) != cores:
            _fail(f"the cold run had {cold['cpus']} cores, the warm one {cores}")
        result["cold"] = {"wall_s": cold_run["wall_s"], "cpu_s": cold_run["cpu_s"],
                          "floor_s": {"cpu": round(cold_run["cpu_s"] / cores, 1),
                                      "compile": round((cold_run["cpu_s"] - run["cpu_s"]) / cores, 1)}}
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("warm", type=Path,
                        help="bench_gate.py JSON of a warm gate (its cheapest run makes the CPU floor)")
    parser.add_argument("--cold", type=Path, help="bench_gate.py JSON of the same gate on empty caches")
    parser.add_argument("--gpu", action="store_true", help="the adapter is a real GPU: kernel time is no CPU floor")
    parser.add_argument("--cores", type=int, help="cores the runs had (default: the file's `cpus`)")
    parser.add_argument("--goal", type=float,
                        help="the warm gate's wall-time goal in seconds, compared with its floors")
    parser.add_argument("--cold-goal", type=float, help="the cold gate's wall-time goal in seconds")
    parser.add_argument("--out", type=Path, help="also write the floors as JSON")
    args = parser.parse_args(argv)
    warm = _load(args.warm)
    result = floors(warm, _cores(warm, args.cores, args.warm), _load(args.cold) if args.cold else None, args.gpu)
    print(f"{args.warm.name}: {result['cores']} cores")
    for run in result["runs"]:
        print(f"  run {run['run']}: wall {run['wall_s']} s, CPU {run['cpu_s']} s, floor {run['cpu_floor_s']} s"
              + _against(run["cpu_floor_s"], args.goal))
    rows = [("warm", name, value, args.goal) for name, value in result["floor_s"].items()]
    rows += [("cold", name, value, args.cold_goal) for name, value in result.get("cold", {}).get("floor_s", {}).items()]
    for run, name, value, goal in rows:
        print(f"  {run} floor from {name:8s} {value:8.1f} s" + _against(value, goal))
    if args.out:
        record = dict(command=" ".join(["benchmarks/gate_floors.py", *(argv if argv is not None else sys.argv[1:])]),
                      **result, goal_s=args.goal, cold_goal_s=args.cold_goal)
        args.out.write_text(json.dumps(record, indent=1) + "\n")
    return 0


def _against(value: float, goal: float | None) -> str:
    if goal is None:
        return ""
    return f"  above the {goal:g} s goal" if value > goal else f"  within the {goal:g} s goal"


if __name__ == "__main__":
    sys.exit(main())
