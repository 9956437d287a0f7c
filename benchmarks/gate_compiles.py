"""How many pipelines a gate compiles, and how many of them it compiles again: a gate run with
$VERIFY_COMPILE_LOG (every compile a worker makes, verify.worker.execute), side by side with the
same gate of another checkout (`--baseline DIR`, e.g. `git archive HEAD~1 | tar -x -C DIR`).

    python benchmarks/gate_compiles.py [--kernels K,...] [--profile ci] [--jobs 2] [--cold]
                                       [--baseline DIR] [--runs 1] [--out FILE]

Per run: the wall time, the checks by verdict, the checks at an emulated subgroup width, the
compiles (each worker's first compile of a program on an implementation), the distinct
(implementation, program) pairs among them, and so the compiles another worker repeated (a
driver's shader cache makes those cheap; verify.session holds a check back while another of its
config compiles, so that the second finds it). `--cold` gives each run an empty Mesa shader cache
(MESA_SHADER_CACHE_DIR): every compile is then the driver's too. The runs alternate baseline and
this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ("ort.attention.decode_qkv,ort.attention.decode_reduce,ort.attention.paged_decode_qkv,"
           "ort.attention.paged_decode_reduce,ort.attention.copy_kv_cache,ort.attention.flash,"
           "ort.dp4a.matmul_small_m,dp4a.quantize")


def gate(tree: Path, args, label: str) -> dict:
    """One gate of the checkout at `tree`, measured."""
    with tempfile.TemporaryDirectory(prefix="gate-compiles-") as scratch:
        out, log = Path(scratch) / "out", Path(scratch) / "compiles.txt"
        env = dict(os.environ, PYTHONPATH=str(tree), VERIFY_COMPILE_LOG=str(log))
        if args.cold:
            env["MESA_SHADER_CACHE_DIR"] = str(Path(scratch) / "mesa")
        load = os.getloadavg()[0]
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "verify", "gate", "--profile", args.profile, "--kernels",
                               args.kernels, "--jobs", str(args.jobs), "--out", str(out)], cwd=tree, env=env,
                              capture_output=True, text=True)
        wall = time.perf_counter() - started
        records = json.loads((out / "results.json").read_text())["records"] if (out / "results.json").exists() else []
        compiles = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    distinct = Counter((c[2], c[3]) for c in compiles)
    row = {"label": label, "tree": str(tree), "exit": done.returncode, "wall_s": round(wall, 1),
           "load_at_start": round(load, 2), "load_at_end": round(os.getloadavg()[0], 2), "checks": len(records),
           "verdicts": dict(Counter(r["verdict"] for r in records)),
           "emulated_width_checks": sum(1 for r in records if r.get("subgroup_width")),
           "compiles": len(compiles), "distinct_programs": len(distinct), "repeated": len(compiles) - len(distinct),
           "worker_processes": len({c[0] for c in compiles}),
           "summary": next((line for line in (done.stdout + done.stderr).splitlines()[::-1] if " checks: " in line),
                           "")}
    print(json.dumps(row), flush=True)
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default=KERNELS)
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cold", action="store_true", help="an empty Mesa shader cache for each run")
    parser.add_argument("--baseline", type=Path, help="another checkout to run the same gate of, alternating")
    parser.add_argument("--runs", type=int, default=1, help="runs of each checkout")
    parser.add_argument("--out", type=Path, help="write the runs as JSON here")
    args = parser.parse_args(argv)
    rows = []
    for _ in range(args.runs):
        if args.baseline is not None:
            rows.append(gate(args.baseline.resolve(), args, "baseline"))
        rows.append(gate(ROOT, args, "this checkout"))
    if args.out:
        args.out.write_text(json.dumps({"command": " ".join([Path(sys.argv[0]).name, *(argv or sys.argv[1:])]),
                                        "kernels": args.kernels, "profile": args.profile, "jobs": args.jobs,
                                        "cold": args.cold, "cpus": os.cpu_count(), "runs": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
