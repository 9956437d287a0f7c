"""What one run's upload and readback cost on the host, in two source trees side by side.

The gate's GPU stages are mostly host work on a fast GPU: turning the case's arrays into buffer
bytes and the buffers' bytes back into arrays (verify.gpu.binding, verify.gpu.buffers), around
the WebGPU implementation's own copies. This times `Device.run`'s upload and readback stages on
a copy kernel at a few sizes (input megabytes, output megabytes), as a nightly case moves them.

Each tree runs in a subprocess with that tree first on sys.path, the trees alternating round by
round (--rounds) so both see the same load; each size runs --repeats times a round and keeps its
best (load only adds time). Writes JSON with the milliseconds of each and their ratios.

    python benchmarks/bench_transfers.py --before /tmp/base [--after .] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

#: (input MB, output MB): a decode case (22 MB of pages, a small output), a long prefill (both large).
SIZES = ((1, 1), (24, 1), (24, 8), (64, 64))

COPY = """
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    let i = g.x + g.y * 65535u * 64u;
    if (i < arrayLength(&dst)) { dst[i] = src[i % arrayLength(&src)]; }
}
"""


def measure(repeats: int) -> dict:
    """{size: {upload_ms, readback_ms}}, each the best of `repeats` runs, in this process."""
    import numpy as np

    from verify.gpu import Output, open_device

    device = open_device()
    pipeline = device.pipeline(COPY)
    found = {}
    for megabytes_in, megabytes_out in SIZES:
        source = np.random.default_rng(0).standard_normal(megabytes_in * 2**18).astype(np.float32)
        count = megabytes_out * 2**18
        groups = (count + 63) // 64
        grid = (min(groups, 65535), (groups + 65534) // 65535)
        best = {"upload_ms": float("inf"), "readback_ms": float("inf")}
        for _ in range(repeats):
            run = device.run(pipeline, {"src": source, "dst": Output(np.float32, (count,))}, grid)
            best["upload_ms"] = min(best["upload_ms"], run.timing.upload * 1e3)
            best["readback_ms"] = min(best["readback_ms"], run.timing.readback * 1e3)
            expected = source[np.arange(count) % source.size]
            if not np.array_equal(run.outputs["dst"], expected):
                raise SystemExit("the copy kernel's output is wrong: the measurement would mean nothing")
        found[f"{megabytes_in}MB in, {megabytes_out}MB out"] = {k: round(v, 3) for k, v in best.items()}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="the source tree before the change")
    parser.add_argument("--after", default=str(Path(__file__).resolve().parents[1]), help="the tree after it")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", help="write the JSON here")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(measure(args.repeats)))
        return
    if not args.before:
        parser.error("--before TREE is required")
    trees = {"before": args.before, "after": args.after}
    best: dict = {}
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        for name, tree in trees.items():
            env = dict(os.environ, PYTHONPATH=os.pathsep.join(
                [os.path.abspath(tree)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
            out = subprocess.run([sys.executable, __file__, "--worker", "--repeats", str(args.repeats)], cwd=tree,
                                 env=env, check=True, capture_output=True, text=True).stdout
            for size, stages in json.loads(out.splitlines()[-1]).items():
                for stage, ms in stages.items():
                    key = best.setdefault(size, {}).setdefault(stage, {})
                    key[name] = min(key.get(name, float("inf")), ms)
    for stages in best.values():
        for times in stages.values():
            times["ratio"] = round(times["before"] / times["after"], 2) if times["after"] else None
    result = {"command": " ".join(sys.argv), "trees": trees, "rounds": args.rounds, "repeats": args.repeats,
              "cpus": os.cpu_count(), "load_before": [round(x, 2) for x in load_before],
              "load_after": [round(x, 2) for x in os.getloadavg()], "ms": best}
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
