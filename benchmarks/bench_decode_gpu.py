"""GPU time of paged decode kernels against context length: ours (tiled, sharded) and TVM's.

One fixed case per (head_dim, context): B=1, Hq=32, Hkv=8, f16, page size 16, a shuffled page
table with spare pages, N(0,1) values, rotary off, sm_scale = D^-1/2. Each kernel runs it
--repeats times after a warm-up; the compute pass is timed with GPU timestamp queries (wall
time of the dispatch where the adapter has none). Prints the median in microseconds per
kernel, the tiled/sharded ratio, and each kernel's max err/budget against the float64
reference on that case (--no-check skips it); --out writes the table as JSON.

TVM's kernels need their WGSL, built by apache-tvm. On a machine without apache-tvm (a GPU
box), point --tvm-cache at a folder filled beforehand on a machine that has it:

    python3 -m benchmarks.bench_decode_gpu --tvm-cache benchmarks/tvm_wgsl --prepare   (with apache-tvm)
    python3 -m benchmarks.bench_decode_gpu --tvm-cache benchmarks/tvm_wgsl --out h200.json   (on the GPU)

Quick look on a CPU adapter:
    python3 -m benchmarks.bench_decode_gpu --head-dims 128 --contexts 64,256 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

KERNELS = "decode.tiled,decode.sharded,tvm.decode"
HEAD_DIMS = "64,128,256"
CONTEXTS = "64,128,256,512,1024,2048,3072,4096,8192"
QO_HEADS, KV_HEADS, DTYPE, PAGE_SIZE, SPARE_PAGES = 32, 8, "f16", 16, 4


def make_case(head_dim: int, context: int, seed: int = 0):
    from verify.cases import Case
    from verify.cases.attention import build_paged_cache

    rng = np.random.default_rng([seed, head_dim, context])
    q = rng.standard_normal((1, QO_HEADS, head_dim)).astype(np.float16)
    k = rng.standard_normal((1, KV_HEADS, context, head_dim)).astype(np.float16)
    v = rng.standard_normal((1, KV_HEADS, context, head_dim)).astype(np.float16)
    pages, indptr, values, length_info = build_paged_cache(rng, k, v, np.array([context]), PAGE_SIZE,
                                                           spare_pages=SPARE_PAGES)
    arrays = {"q": q, "pages": pages, "page_indptr": indptr, "page_values": values, "length_info": length_info,
              "k_rope_pos_offset": np.zeros(1, np.int32), "q_rope_position": np.array([context - 1], np.int32)}
    params = {"batch": 1, "lengths": [context], "rotary_mode": 0, "rope_theta": 1e4, "rope_scale": 1.0,
              "sm_scale": float(head_dim ** -0.5), "values": "normal", "seed": seed}
    return Case(arrays, params)


class TimedDevice:
    """A device whose every dispatch is timed with GPU timestamps (kernels call `run` themselves)."""

    def __init__(self, device):
        self._device = device

    def __getattr__(self, name):
        return getattr(self._device, name)

    def run(self, pipeline, resources, workgroups, **_):
        return self._device.run(pipeline, resources, workgroups, timestamps=True)


def time_kernel(device, kernel, config, case, repeats: int) -> tuple[list[float], str, object]:
    """Microseconds of each timed run, what timed them, and the last run's outputs."""
    wgsl = kernel.wgsl(config)
    launched = kernel.launch(device, wgsl, config, case)  # warm-up: compiles the pipeline
    samples, clock = [], "gpu timestamps"
    for _ in range(repeats):
        launched = kernel.launch(device, wgsl, config, case)
        if launched.timing.gpu_ns is None:
            clock = "dispatch wall time"
            samples.append(launched.timing.dispatch * 1e6)
        else:
            samples.append(launched.timing.gpu_ns / 1e3)
    return samples, clock, launched.outputs


def max_err_over_budget(kernel, config, case, outputs) -> float:
    from verify.budgets.metrics import compare

    return max(compare(outputs[e.name], e).max_err_over_budget for e in kernel.expected(config, case))


def prepare(kernels, head_dims) -> None:
    """Build the WGSL of every TVM kernel config into the cache (no GPU needed)."""
    for kernel in kernels:
        if kernel.source != "tvm":
            continue
        for head_dim in head_dims:
            config = kernel.config({"head_dim": head_dim, "qo_heads": QO_HEADS, "kv_heads": KV_HEADS, "dtype": DTYPE})
            kernel.wgsl(config)
            print(f"cached {kernel.name} head_dim={head_dim}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kernels", default=KERNELS, help=f"comma-separated kernel names (default {KERNELS})")
    parser.add_argument("--head-dims", default=HEAD_DIMS, help=f"default {HEAD_DIMS}")
    parser.add_argument("--contexts", default=CONTEXTS, help=f"default {CONTEXTS}")
    parser.add_argument("--repeats", type=int, default=20, help="timed runs per kernel and case (default 20)")
    parser.add_argument("--tvm-cache", metavar="DIR", help="folder of TVM's WGSL (read, and filled where apache-tvm is)")
    parser.add_argument("--prepare", action="store_true", help="only build TVM's WGSL into the cache, then exit")
    parser.add_argument("--no-check", action="store_true", help="skip the comparison with the float64 reference")
    parser.add_argument("--adapter", help="adapter whose name/backend contains this text")
    parser.add_argument("--out", metavar="FILE", help="write the table as JSON")
    args = parser.parse_args()
    if args.tvm_cache:
        os.environ["VERIFY_TVM_CACHE"] = str(Path(args.tvm_cache).resolve())

    from verify.errors import UsageError
    from verify.gpu import Device
    from verify.kernels.registry import get_kernel

    head_dims = [int(d) for d in args.head_dims.split(",")]
    contexts = [int(c) for c in args.contexts.split(",")]
    try:
        kernels = [get_kernel(name) for name in args.kernels.split(",")]
        if args.prepare:
            prepare(kernels, head_dims)
            return 0
        devices = {}
        rows = []
        for head_dim in head_dims:
            for context in contexts:
                case = make_case(head_dim, context)
                row = {"head_dim": head_dim, "context": context}
                for kernel in kernels:
                    config = kernel.config({"head_dim": head_dim, "qo_heads": QO_HEADS, "kv_heads": KV_HEADS,
                                            "dtype": DTYPE})
                    key = json.dumps(kernel.limits, sort_keys=True)
                    if key not in devices:
                        devices[key] = TimedDevice(Device(args.adapter, kernel.limits))
                    started = time.perf_counter()
                    samples, clock, outputs = time_kernel(devices[key], kernel, config, case, args.repeats)
                    row[kernel.name] = {"median_us": statistics.median(samples), "min_us": min(samples),
                                        "clock": clock, "wall_s": round(time.perf_counter() - started, 3)}
                    if not args.no_check:
                        row[kernel.name]["max_err_over_budget"] = max_err_over_budget(kernel, config, case, outputs)
                rows.append(row)
                print_row(row, kernels, header=len(rows) == 1)
    except UsageError as exc:
        print(f"bench_decode_gpu: {exc}", file=sys.stderr)
        return 2
    adapter = next(iter(devices.values())).info.as_record()
    print(f"adapter: {adapter['name']} ({adapter['backend']}, {adapter['driver']}); median of {args.repeats} runs, "
          f"clock: {rows[0][kernels[0].name]['clock']}")
    if args.out:
        document = {"adapter": adapter, "repeats": args.repeats, "shape": {
            "batch": 1, "qo_heads": QO_HEADS, "kv_heads": KV_HEADS, "dtype": DTYPE, "page_size": PAGE_SIZE,
            "rotary_mode": 0}, "rows": rows}
        Path(args.out).write_text(json.dumps(document, indent=1))
        print(f"wrote {args.out}")
    return 0


def print_row(row: dict, kernels, header: bool) -> None:
    names = [k.name for k in kernels]
    ratio = "decode.tiled" in row and "decode.sharded" in row
    if header:
        print(f"{'D':>4} {'context':>7} " + " ".join(f"{n + ' us':>16}" for n in names)
              + (f" {'tiled/sharded':>13}" if ratio else "") + "   max err/budget")
    cells = " ".join(f"{row[n]['median_us']:16.1f}" for n in names)
    if ratio:
        cells += f" {row['decode.tiled']['median_us'] / row['decode.sharded']['median_us']:13.2f}"
    errors = " ".join(f"{row[n].get('max_err_over_budget', float('nan')):.2g}" for n in names)
    print(f"{row['head_dim']:>4} {row['context']:>7} {cells}   {errors}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
