"""GPU time of paged decode kernels against context length: ours (tiled, sharded) and TVM's.

One fixed case per (head_dim, context): B=1, Hq=32, Hkv=8, f16, page size 16, a shuffled page
table with spare pages, N(0,1) values, rotary off, sm_scale = D^-1/2. Each kernel's launch is
captured once (bindings, uniform, grid) and then dispatched --repeats times back to back over
buffers uploaded once, each dispatch after an L2-evicting pass and timed with GPU timestamp
queries (--upload-each-run times whole Device.run calls instead: on an H200 that left the
GPU idle between dispatches and D=256 rows varied 2x between identical runs). Prints the median
in microseconds per kernel, the tiled/sharded ratio, and each kernel's max err/budget against the
float64 reference on that case (--no-check skips it); --out writes the table as JSON.

TVM's kernels need their WGSL, built by apache-tvm. On a machine without apache-tvm (a GPU
box), point --tvm-cache at a folder filled beforehand on a machine that has it:

    python3 -m benchmarks.bench_decode_gpu --tvm-cache benchmarks/tvm_wgsl --prepare   (with apache-tvm)
    python3 -m benchmarks.bench_decode_gpu --tvm-cache benchmarks/tvm_wgsl --out h200.json   (on the GPU)

Quick look on a CPU adapter (lavapipe: no L2 to flush, no clocks to raise):
    python3 -m benchmarks.bench_decode_gpu --head-dims 128 --contexts 64,256 --repeats 3 --flush-mib 0 --warmup 0
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
    from verify.kernels.attention.cases import build_paged_cache

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


#: Evicts the GPU's L2 (50 MB on an H200) between timed dispatches: writes `scratch` end to end.
FLUSH = """
@group(0) @binding(0) var<storage, read_write> scratch: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) id: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = id.y * groups.x * 256u + id.x;
  if (i < arrayLength(&scratch)) { scratch[i] = i; }
}
"""


class CapturingDevice:
    """A device that remembers the last dispatch a kernel's `launch` made, and times it."""

    def __init__(self, device, timestamps: bool):
        self._device, self._timestamps, self.last = device, timestamps, None

    def __getattr__(self, name):
        return getattr(self._device, name)

    def run(self, pipeline, resources, workgroups, **_):
        self.last = (pipeline, resources, workgroups)
        return self._device.run(pipeline, resources, workgroups, timestamps=self._timestamps)


def resident_gpu_us(device, pipeline, resources, workgroups, repeats: int, flush_mib: int,
                    warmup_s: float) -> list[float]:
    """GPU microseconds of `repeats` dispatches recorded back to back over buffers uploaded once,
    each after a pass that overwrites `flush_mib` MiB (so K/V come from memory, not L2), once the
    same work has kept the GPU busy for `warmup_s`. An idle H200 drops from 1980 to 345 MHz:
    uploading and reading back around every dispatch, as Device.run does, leaves it idle in
    between, and a short batch after host work (the reference check) starts before it clocks up."""
    import wgpu

    from verify.gpu import InOut, Output
    from verify.gpu.binding import MIN_INPUT_BYTES
    from verify.gpu.buffers import array_bytes

    dev = device.wgpu_device
    grid = ((workgroups,) if isinstance(workgroups, int) else tuple(workgroups)) + (1, 1)
    grid = grid[:3]
    entries = []
    for binding in pipeline.interface.bindings:
        value = resources[binding.name]
        if isinstance(value, Output):
            data = bytes(max(4, -(-value.nbytes // 4) * 4))
        elif isinstance(value, InOut):
            data = array_bytes(value.array)
        elif isinstance(value, (bytes, bytearray)):
            data = bytes(value) + bytes(-len(value) % 16)
        else:
            data = array_bytes(np.asarray(value), min_bytes=MIN_INPUT_BYTES)
        usage = wgpu.BufferUsage.UNIFORM if binding.address_space == "uniform" else wgpu.BufferUsage.STORAGE
        entries.append({"binding": binding.binding,
                        "resource": {"buffer": dev.create_buffer_with_data(data=data, usage=usage)}})
    group = dev.create_bind_group(layout=pipeline.layout, entries=entries)
    flush = device.pipeline(FLUSH) if flush_mib else None
    if flush:
        words = flush_mib << 18
        scratch = dev.create_buffer(size=words * 4, usage=wgpu.BufferUsage.STORAGE)
        flush_group = dev.create_bind_group(layout=flush.layout,
                                            entries=[{"binding": 0, "resource": {"buffer": scratch}}])
        flush_grid = (1024, -(-words // (256 * 1024)), 1)
    queries = dev.create_query_set(type=wgpu.QueryType.timestamp, count=2 * repeats)
    resolved = dev.create_buffer(size=16 * repeats, usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)

    def submit(timed: bool) -> None:
        encoder = dev.create_command_encoder()
        for i in range(repeats):
            if flush:
                compute = encoder.begin_compute_pass()
                compute.set_pipeline(flush.compute)
                compute.set_bind_group(0, flush_group)
                compute.dispatch_workgroups(*flush_grid)
                compute.end()
            writes = {"query_set": queries, "beginning_of_pass_write_index": 2 * i,
                      "end_of_pass_write_index": 2 * i + 1}
            compute = encoder.begin_compute_pass(**({"timestamp_writes": writes} if timed else {}))
            compute.set_pipeline(pipeline.compute)
            compute.set_bind_group(0, group)
            compute.dispatch_workgroups(*grid)
            compute.end()
        if timed:
            encoder.resolve_query_set(queries, 0, 2 * repeats, resolved, 0)
        dev.queue.submit([encoder.finish()])
        dev._poll_wait()  # as Device.run: a blocking poll waits for the submission

    started = time.perf_counter()
    while time.perf_counter() - started < warmup_s:
        submit(timed=False)
    submit(timed=True)
    stamps = np.frombuffer(bytes(dev.queue.read_buffer(resolved)), dtype="<u8").reshape(repeats, 2)
    return list((stamps[:, 1] - stamps[:, 0]) / 1e3)


def time_kernel(device, kernel, config, case, repeats: int, flush_mib: int, warmup_s: float,
                upload_each_run: bool):
    """Microseconds of each timed run, what timed them, and the outputs of a plain launch."""
    wgsl = kernel.wgsl(config)
    outputs = kernel.launch(device, wgsl, config, case).outputs  # also compiles the pipeline
    if not upload_each_run and "timestamp-query" in device.features:
        samples = resident_gpu_us(device, *device.last, repeats, flush_mib, warmup_s)
        return samples, "gpu timestamps, resident buffers", outputs
    samples, clock = [], "gpu timestamps, upload per run"
    for _ in range(repeats):
        timing = kernel.launch(device, wgsl, config, case).timing
        if timing.gpu_ns is None:
            clock = "dispatch wall time, upload per run"
            samples.append(timing.dispatch * 1e6)
        else:
            samples.append(timing.gpu_ns / 1e3)
    return samples, clock, outputs


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
    parser.add_argument("--tvm-cache", metavar="DIR",
                        help="folder of TVM's WGSL (read; filled where apache-tvm is installed)")
    parser.add_argument("--prepare", action="store_true", help="only build TVM's WGSL into the cache, then exit")
    parser.add_argument("--no-check", action="store_true", help="skip the comparison with the float64 reference")
    parser.add_argument("--flush-mib", type=int, default=128,
                        help="MiB overwritten before each timed dispatch to evict the L2 (default 128; 0: none)")
    parser.add_argument("--warmup", type=float, default=0.3,
                        help="seconds of untimed repeats before each timed batch, to clock the GPU up (default 0.3)")
    parser.add_argument("--upload-each-run", action="store_true",
                        help="time each dispatch as Device.run makes it, uploading and reading back around it")
    parser.add_argument("--adapter", help="adapter whose name/backend contains this text")
    parser.add_argument("--out", metavar="FILE", help="write the table as JSON")
    args = parser.parse_args()
    if args.tvm_cache:
        os.environ["VERIFY_TVM_CACHE"] = str(Path(args.tvm_cache).resolve())

    from verify.errors import UsageError
    from verify.gpu import open_device
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
                        devices[key] = CapturingDevice(open_device("wgpu", args.adapter, kernel.limits), args.upload_each_run)
                    started = time.perf_counter()
                    samples, clock, outputs = time_kernel(devices[key], kernel, config, case, args.repeats,
                                                          args.flush_mib, args.warmup, args.upload_each_run)
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
        document = {"adapter": adapter, "repeats": args.repeats, "flush_mib": args.flush_mib, "shape": {
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
