"""What the dawn backend costs per case next to the wgpu backend, on the same kernels and cases.

For each kernel, one list of cases is drawn (Hypothesis, fixed seed) and launched on a wgpu
device and a Dawn device in the same run, the two taking turns case by case; each run's
upload, dispatch and readback (as the devices' Timing reports them) and its wall time are
averaged per case, after one warm-up launch per device (the pipeline compile). A bare round trip (a 64-element dispatch with one upload and
one readback) gives each backend's floor. Dawn's extra cost is the Node process hop: the frames
on the pipes and Node's copies.

    python benchmarks/bench_backends.py [--cases 30] [--kernels merge_state,dp4a.matmul] [--out FILE]

Prints a table on stderr and the JSON document on stdout (and to --out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed

from verify.gpu import Output, open_device
from verify.kernels.registry import get_kernel

ROUND_TRIP = """
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) { dst[id.x] = src[id.x] + 1.0; }
"""
BACKENDS = ("wgpu", "dawn")
STAGES = ("upload", "dispatch", "readback", "wall")


def draw_cases(kernel, config: dict, count: int, profile: str) -> list:
    """`count` cases of the kernel's strategy, the same on every call (seed 0)."""
    drawn = []

    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @hseed(0)
    @given(kernel.cases(config, profile))
    def collect(case):
        drawn.append(case)

    collect()
    return drawn


def _summary_ms(runs: list[dict]) -> dict:
    summary = {stage: round(statistics.mean(r[stage] for r in runs) * 1e3, 4) for stage in STAGES}
    summary["wall_median"] = round(statistics.median(r["wall"] for r in runs) * 1e3, 4)
    return summary


def _timed(launch) -> dict:
    start = time.perf_counter()
    timing = launch().timing
    return {"upload": timing.upload, "dispatch": timing.dispatch, "readback": timing.readback,
            "wall": time.perf_counter() - start}


def interleaved(devices: dict, launch, items: list) -> dict:
    """Per backend, the summary of launch(device, item) over `items`, the backends taking turns
    item by item (so a change in the machine's load falls on both alike), after one warm-up
    launch each (the pipeline compile)."""
    for device in devices.values():
        launch(device, items[0])
    runs = {backend: [] for backend in devices}
    for item in items:
        for backend, device in devices.items():
            runs[backend].append(_timed(lambda: launch(device, item)))
    return {backend: _summary_ms(r) for backend, r in runs.items()}


def round_trip(device, _):
    pipeline = device.pipeline(ROUND_TRIP)
    return device.run(pipeline, {"src": np.arange(64, dtype=np.float32), "dst": Output(np.float32, (64,))}, 1)


def _ratios(row: dict) -> dict:
    return {stage: round(row["dawn"][stage] / row["wgpu"][stage], 3) if row["wgpu"][stage] else None
            for stage in STAGES}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--kernels", default="merge_state,rope,decode.tiled,decode.sharded,dp4a.quantize,dp4a.matmul")
    parser.add_argument("--round-trips", type=int, default=100)
    parser.add_argument("--out", help="also write the JSON document here")
    args = parser.parse_args()

    devices: dict = {}

    def device(backend: str, limits: dict):
        key = (backend, json.dumps(limits, sort_keys=True))
        if key not in devices:
            devices[key] = open_device(backend, None, limits)
        return devices[key]

    floor_row = interleaved({b: device(b, {}) for b in BACKENDS}, round_trip, list(range(args.round_trips)))
    document = {
        "command": " ".join([sys.executable.rsplit("/", 1)[-1], *sys.argv]),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_average_at_start": os.getloadavg()},
        "adapters": {b: device(b, {}).info.as_record() for b in BACKENDS},
        "units": "milliseconds per case (mean; wall_median the median), after one warm-up launch per device",
        "round_trip": dict(floor_row, dawn_over_wgpu=_ratios(floor_row)),
        "kernels": [],
    }
    print(f"{'kernel':16} {'cases':>5} " + " ".join(f"{b + ' ' + s:>14}" for s in ("upload", "dispatch", "readback", "wall")
                                                     for b in BACKENDS) + f" {'wall ratio':>10}", file=sys.stderr)

    def show(name: str, count: int, row: dict) -> None:
        cells = " ".join(f"{row[b][s]:14.3f}" for s in ("upload", "dispatch", "readback", "wall") for b in BACKENDS)
        print(f"{name:16} {count:>5} {cells} {row['dawn']['wall'] / row['wgpu']['wall']:10.2f}", file=sys.stderr)

    show("(round trip)", args.round_trips, floor_row)
    for name in args.kernels.split(","):
        kernel = get_kernel(name)
        config = kernel.gate_configs(args.profile)[0]
        cases = draw_cases(kernel, config, args.cases, args.profile)
        wgsl = kernel.wgsl(config)
        row = interleaved({b: device(b, kernel.limits) for b in BACKENDS},
                          lambda dev, case: kernel.launch(dev, wgsl, config, case), cases)
        document["kernels"].append({"kernel": name, "config": config, "cases": len(cases), **row,
                                    "dawn_over_wgpu": _ratios(row)})
        show(name, len(cases), row)
    text = json.dumps(document, indent=1, default=str)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
