"""What verifying ONNX Runtime Web's kernels costs: starting ORT, capturing its programs, and per case.

Measured, in one process on the dawn backend's adapter:

- `start`: a new OrtRuntime (Node, Dawn instance, ORT's wasm loaded with --liftoff-only);
- `capture`: captured_programs for a config not in the cache (a session, its first run with
  pipeline creation, the cache write), then the same call again (a cached read);
- per case, for each kernel and config: the kernel's launch (an ORT session run for
  ort.matmul_nbits; a launch of ORT's WGSL through DawnDevice for ort.dp4a.*) and its expected()
  (reference and budget), after one warm-up case; the cases are the kernel's own strategy under
  the `ci` profile (seed 0).

    python benchmarks/bench_ort.py [--cases 20] [--out FILE]

Prints a table on stderr and the JSON document on stdout (and to --out). The ORT WGSL cache is a
fresh temporary folder, so captures are measured cold; Mesa's shader cache is whatever the machine has.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import seed as hseed

KERNELS = (
    ("ort.matmul_nbits", dict(dtype="f16", bits=4, block_size=32, has_zero_points=1)),
    ("ort.matmul_nbits", dict(dtype="f32", bits=8, block_size=64, has_bias=1)),
    ("ort.matmul_nbits", dict(dtype="f16", bits=4, block_size=128, has_bias=1, accuracy_level=0)),
    ("ort.dp4a.quantize", dict(dtype="f16")),
    ("ort.dp4a.matmul", dict(dtype="f16", bits=4, block_size=32, has_zero_points=1)),
    ("ort.dp4a.matmul", dict(dtype="f32", bits=8, block_size=128, has_zero_points=1, has_bias=1)),
    ("ort.dp4a.matmul_small_m", dict(dtype="f32", bits=4, block_size=32, has_zero_points=1, has_bias=1)),
)


def draw_cases(kernel, config: dict, count: int, profile: str) -> list:
    drawn = []

    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @hseed(0)
    @given(kernel.cases(config, profile))
    def collect(case):
        drawn.append(case)

    collect()
    return drawn


def per_case(kernel, config: dict, device, count: int) -> dict:
    wgsl = kernel.wgsl(config)
    cases = draw_cases(kernel, config, count + 1, "ci")
    kernel.launch(device, wgsl, config, cases[0])  # warm-up: pipeline compile or session creation
    launch, expected = [], []
    for case in cases[1:]:
        started = time.perf_counter()
        kernel.launch(device, wgsl, config, case)
        launch.append(time.perf_counter() - started)
        started = time.perf_counter()
        kernel.expected(config, case)
        expected.append(time.perf_counter() - started)
    return {"cases": len(launch), "launch_ms_mean": round(statistics.mean(launch) * 1e3, 2),
            "launch_ms_median": round(statistics.median(launch) * 1e3, 2),
            "expected_ms_mean": round(statistics.mean(expected) * 1e3, 2)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20)
    parser.add_argument("--out")
    args = parser.parse_args()
    os.environ["VERIFY_ORT_CACHE"] = tempfile.mkdtemp(prefix="verify-ort-bench-")

    from verify.gpu.dawn import DawnDevice
    from verify.kernels.registry import get_kernel
    from verify.sources.ort import programs, runtime

    started = time.perf_counter()
    ort = runtime.shared_runtime()
    start_s = time.perf_counter() - started
    captures = []
    for config in (programs.CaptureConfig("f16", 4, 32, True, False, 4, 4), programs.CaptureConfig("f32", 8, 128, m=1)):
        started = time.perf_counter()
        programs.captured_programs(config)
        cold = time.perf_counter() - started
        started = time.perf_counter()
        programs.captured_programs(config)
        captures.append({"config": config.describe(), "capture_s": round(cold, 3),
                         "cached_ms": round((time.perf_counter() - started) * 1e3, 3)})
    device = DawnDevice()
    results = []
    for name, overrides in KERNELS:
        kernel = get_kernel(name)
        config = kernel.config(overrides)
        results.append({"kernel": name, "config": overrides, **per_case(kernel, config, device, args.cases)})
    document = {"machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "load": os.getloadavg()},
                "ort_version": ort.version, "adapter": ort.adapter.get("description"),
                "start_s": round(start_s, 3), "captures": captures, "per_case": results}
    print(f"ORT {ort.version} on {document['adapter']}; start {start_s:.2f} s", file=sys.stderr)
    for capture in captures:
        print(f"capture {capture['config']}: {capture['capture_s']:.2f} s, cached {capture['cached_ms']:.2f} ms",
              file=sys.stderr)
    print(f"{'kernel':28} {'config':58} {'launch ms':>10} {'expected ms':>12}", file=sys.stderr)
    for row in results:
        config = " ".join(f"{k}={v}" for k, v in row["config"].items())
        print(f"{row['kernel']:28} {config:58} {row['launch_ms_mean']:>10.1f} {row['expected_ms_mean']:>12.1f}",
              file=sys.stderr)
    text = json.dumps(document, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    device.close()
    runtime.close_shared()
    return 0


if __name__ == "__main__":
    sys.exit(main())
