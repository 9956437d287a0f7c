"""Where a check's time goes, per case: reference, upload, dispatch, readback, compare.

Draws cases from each kernel's strategy, runs the reference check's body on them, and prints
the per-case milliseconds of each stage next to the bare wgpu round trip (a 64-element dispatch
with one upload and one readback) measured in the same process, so the harness overhead
(everything but dispatch) can be read as a ratio to that floor.

    python benchmarks/bench_harness.py [--cases 40] [--kernels merge_state,decode.tiled]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed

from verify.checks import get_check
from verify.checks.context import CheckContext
from verify.gpu import Device, Output, open_device
from verify.kernels.registry import get_kernel

ROUND_TRIP = """
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) { dst[id.x] = src[id.x] + 1.0; }
"""


def bare_round_trip_ms(device: Device, repeats: int = 50) -> float:
    pipeline = device.pipeline(ROUND_TRIP)
    src = np.arange(64, dtype=np.float32)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        device.run(pipeline, {"src": src, "dst": Output(np.float32, (64,))}, 1)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def profile_kernel(device: Device, name: str, cases: int, profile: str) -> dict:
    kernel = get_kernel(name)
    config = kernel.gate_configs(profile)[0]
    ctx = CheckContext(kernel, config, device, kernel.wgsl(config), profile)
    check = get_check("reference")
    walls = []

    @settings(max_examples=cases, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @hseed(0)
    @given(kernel.cases(config, profile))
    def run(case):
        start = time.perf_counter()
        check.run_example(ctx, case)
        ctx.timer.cases += 1
        walls.append(time.perf_counter() - start)

    run()
    record = ctx.timer.as_record()
    return {"kernel": name, "config": config, "cases": record["cases"], "per_case_ms": record["per_case_ms"],
            "wall_ms": statistics.mean(walls) * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--kernels", default="merge_state,rope,decode.tiled,decode.sharded,dp4a.quantize,dp4a.matmul")
    args = parser.parse_args()
    device = open_device()
    floor = bare_round_trip_ms(device)
    print(f"adapter: {device.info.name} ({device.info.backend}); bare round trip {floor:.3f} ms (median of 50)")
    header = f"{'kernel':16} {'cases':>5} {'wall':>8} {'reference':>9} {'upload':>8} {'dispatch':>8} {'readback':>8} " \
             f"{'compare':>8} {'overhead/floor':>14}"
    print(header)
    for name in args.kernels.split(","):
        try:
            row = profile_kernel(device, name, args.cases, args.profile)
        except Exception as exc:  # a kernel not available here is reported, not fatal
            print(f"{name:16} skipped: {exc}")
            continue
        ms = row["per_case_ms"]
        overhead = ms["upload"] + ms["readback"]
        print(f"{name:16} {row['cases']:>5} {row['wall_ms']:8.2f} {ms['reference']:9.2f} {ms['upload']:8.2f} "
              f"{ms['dispatch']:8.2f} {ms['readback']:8.2f} {ms['compare']:8.2f} {overhead / floor:14.2f}")
    print("milliseconds per case; overhead/floor = (upload + readback) / bare round trip")


if __name__ == "__main__":
    main()
