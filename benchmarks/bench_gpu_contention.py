"""What one check's GPU stages cost when other processes use the GPU at the same time.

Runs N copies of one `verify check` at once (each its own worker process, device and, on Dawn,
Node process; each its own seed), for each N and WebGPU implementation asked for, and reports the
median over the copies of each stage's milliseconds per case (verify's own stage timings:
upload, dispatch, readback on the GPU; generation and reference on the CPU) and the wall time.
A stage that grows with N while the CPU stages do not is the GPU (or its driver) shared between
processes, not the machine's cores: on a gate's 16 workers, what a dispatch really costs.

    python benchmarks/bench_gpu_contention.py --processes 1,4,16 --implementations wgpu,dawn \\
        --kernel decode.tiled --config dtype=f32 --checks reference --examples 40
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STAGES = ("upload", "dispatch", "readback", "generation", "reference")


def run_copies(copies: int, implementation: str, args, folder: Path) -> dict:
    """N copies of the check at once: wall time, and each stage's median ms per case over them."""
    base = [sys.executable, "-m", "verify", "check", args.kernel, "--checks", args.checks, "--examples",
            str(args.examples), "--implementation", implementation, "--subgroup-width", "native", "--allow-skip"]
    if args.config:
        base += ["--config", args.config]
    started = time.perf_counter()
    runs = [subprocess.Popen(base + ["--seed", str(seed), "--out", str(folder / f"{implementation}-{copies}-{seed}")],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for seed in range(copies)]
    codes = [run.wait() for run in runs]
    wall = time.perf_counter() - started
    per_case: dict[str, list[float]] = {stage: [] for stage in STAGES}
    verdicts = []
    for seed in range(copies):
        results = folder / f"{implementation}-{copies}-{seed}" / "results.json"
        for record in json.loads(results.read_text())["records"] if results.is_file() else []:
            verdicts.append(record["verdict"])
            for stage, ms in ((record.get("timing") or {}).get("per_case_ms") or {}).items():
                if stage in per_case:
                    per_case[stage].append(ms)
    return {"implementation": implementation, "processes": copies, "wall_s": round(wall, 2), "exit_codes": codes,
            "verdicts": verdicts,
            "median_ms_per_case": {stage: round(statistics.median(v), 2) for stage, v in per_case.items() if v}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--processes", default="1,4,16", help="comma-separated numbers of copies run at once")
    parser.add_argument("--implementations", default="wgpu")
    parser.add_argument("--kernel", default="decode.tiled")
    parser.add_argument("--config", default="dtype=f32")
    parser.add_argument("--checks", default="reference")
    parser.add_argument("--examples", type=int, default=40)
    parser.add_argument("--out", help="write the JSON here (default: print it)")
    args = parser.parse_args()
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for implementation in args.implementations.split(","):
            for copies in (int(n) for n in args.processes.split(",")):
                rows.append(run_copies(copies, implementation, args, Path(scratch)))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    report = {"command": " ".join(sys.argv), "cpus": os.cpu_count(), "load_average_before": [round(x, 2) for x in load],
              "runs": rows}
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
