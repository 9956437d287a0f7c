"""Milliseconds per case of the float64 reference + budget as the `reference` and `split_merge` checks
ask for it, in two source trees side by side (the code before a change and after it).

Per case, drawn as the gate draws them (benchmarks/bench_reference.py's `draw`, the chosen profile);
for dp4a.quantize the reference only (`expected()`: its legal codes and scales; "rows" is then the
number of values); for TVM's prefill kernels and llama.cpp's attention the reference only ("rows": query rows,
"longest": the longest context):

- reference: the case's evaluation (`kernel.evaluation`, what `expected()` reads), memo cleared;
- split_merge: the case and split_context's two parts, as SplitMergeCheck asks for them (the
  kernel's `prepare_split` first, where the tree has it), memo cleared; split_context itself is
  case generation and not timed there;
- split_context_only: split_context itself (the check draws it once per example).

Wall and process CPU milliseconds (on a loaded machine the CPU time is the steadier of the two).

Each tree runs in a subprocess of its own with that tree first on sys.path, in the gate workers'
environment (verify.session's worker tuning), the trees alternating round by round (--rounds) so
that both see the same load; each case runs --repeats times per round, and its time is its best
over all of them (load and a cold heap only add time).
The cases are the same in both trees when their case generation is (same seed). Load averages are
recorded before and after. Writes JSON.

    python benchmarks/bench_nightly_reference.py --before /tmp/base --profile nightly --cases 8 \\
        --out benchmarks/results/nightly_reference_lavapipe.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
#: (kernel, gate config index): decode.tiled's Llama-3.2-3B and D 256 window configs, TVM's decode
#: shapes, dp4a.quantize's f16 and f32 configs.
DEFAULT = "decode.tiled:0,decode.tiled:2,tvm.decode:0,tvm.decode_sliding_window:0,dp4a.quantize:0,dp4a.quantize:1"


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def worker(args) -> None:
    """Time this tree's code on the cases; print {"kernel:index": [per case {...}]} as JSON."""
    import numpy as np

    from benchmarks.bench_reference import draw, gate_configs
    from verify.kernels.attention import fastpath, prefill_eval
    from verify.kernels.attention.cases import split_context
    from verify.kernels.registry import get_kernel
    from verify.profiles import get_profile

    profile = get_profile(args.profile)
    report = {}
    for item in args.configs.split(","):
        name, index = item.split(":")
        kernel = get_kernel(name)
        config = gate_configs(name, profile)[int(index)]
        rows = []
        prepare = getattr(kernel, "prepare_split", None)
        prefill = hasattr(kernel, "problem")  # TVM's prefill family: memo in prefill_eval, no split_merge
        decode = kernel.family == "attention" and not prefill
        for case in draw(kernel, config, profile, args.cases, args.seed):
            first, second, cut = split_context(case, config) if decode else (None, None, None)

            def reference():
                kernel.evaluation(config, case) if decode or prefill else kernel.expected(config, case)

            def split_context_only():
                split_context(case, config)

            def split_merge():
                if prepare is not None:
                    prepare(config, case, ((first, np.zeros_like(cut)), (second, cut)))
                for part in (case, first, second):
                    kernel.evaluation(config, part)

            if prefill:  # the sequence kernel's case is one sequence (qo_len, kv_len)
                p = case.params
                lengths, queries = p.get("kv_lens", [p.get("kv_len", 0)]), sum(p.get("qo_lens", [p.get("qo_len", 0)]))
            elif decode:
                lengths = case.params["lengths"]
                queries = sum(lengths)
            elif "a" in case.arrays:  # DP4A: its values
                lengths = queries = [case["a"].size]
                queries = sum(lengths)
            else:  # llama.cpp's attention: q [B, S, N, D], k [B, Nkv, L, D]
                lengths, queries = [int(case["k"].shape[2])], int(case.params.get("batch", 1) * case.params["rows"])
            row = {"rows": int(queries), "longest": int(max(lengths, default=0))}
            for work in (reference, split_merge, split_context_only) if decode else (reference,):
                wall = cpu = float("inf")
                for _ in range(args.repeats):  # a warm heap, as in a gate worker; the best run
                    fastpath._MEMO.clear()
                    prefill_eval._MEMO.clear()
                    start, start_cpu = time.perf_counter(), time.process_time()
                    work()
                    wall, cpu = min(wall, time.perf_counter() - start), min(cpu, time.process_time() - start_cpu)
                row[f"{work.__name__}_ms"], row[f"{work.__name__}_cpu_ms"] = wall * 1e3, cpu * 1e3
            fastpath._MEMO.clear()
            prefill_eval._MEMO.clear()
            rows.append(row)
        report[item] = rows
    print(json.dumps(report))


def best_of(rounds: list[list[dict]]) -> list[dict]:
    """Each case's best time over the rounds (every round times the same cases in the same order)."""
    return [{key: min(cases[i][key] for cases in rounds) for key in rounds[0][i]} for i in range(len(rounds[0]))]


def run_tree(tree: Path, args) -> dict:
    from verify.session import _WORKER_TUNING

    env = {**os.environ, **_WORKER_TUNING,
           "PYTHONPATH": os.pathsep.join([str(tree), str(tree / "examples" / "rmsnorm")])}
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", "--profile", args.profile,
               "--cases", str(args.cases), "--seed", str(args.seed), "--configs", args.configs,
               "--repeats", str(args.repeats)]
    done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", required=False, help="the source tree before the change (a checkout or export)")
    parser.add_argument("--after", default=str(HERE), help="the source tree after it (default: this one)")
    parser.add_argument("--profile", default="nightly")
    parser.add_argument("--configs", default=DEFAULT, help="kernel:gate-config-index, comma separated")
    parser.add_argument("--cases", type=int, default=8, help="cases per config")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="runs of each case per round (the best counts)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    if not args.before:
        parser.error("--before is required")
    trees = {"before": Path(args.before).resolve(), "after": Path(args.after).resolve()}
    report = {"command": " ".join(sys.argv), "host": platform.node(), "cpus": os.cpu_count(),
              "python": platform.python_version(), "profile": args.profile, "cases_per_config": args.cases,
              "rounds": args.rounds, "repeats": args.repeats, "load_before": load(), "rounds_load": [], "configs": {}}
    runs = {label: [] for label in trees}
    for _ in range(args.rounds):
        for label, tree in trees.items():
            print(f"bench_nightly_reference: {label} {tree}", file=sys.stderr, flush=True)
            runs[label].append(run_tree(tree, args))
            report["rounds_load"].append({label: load()})
    for item in args.configs.split(","):
        before, after = (best_of([run[item] for run in runs[label]]) for label in ("before", "after"))
        assert [r["rows"] for r in before] == [r["rows"] for r in after], "the trees drew different cases"
        entry = {"cases": len(before), "mean_rows": statistics.fmean(r["rows"] for r in before),
                 "max_longest": max(r["longest"] for r in before)}
        for key in [k for k in ("reference_ms", "split_merge_ms", "split_context_only_ms", "reference_cpu_ms",
                                "split_merge_cpu_ms", "split_context_only_cpu_ms")
                    if k in before[0]]:
            b, a = statistics.fmean(r[key] for r in before), statistics.fmean(r[key] for r in after)
            entry[key] = {"before": round(b, 2), "after": round(a, 2), "ratio": round(b / max(a, 1e-9), 2),
                          "largest_case": {"before": round(max(r[key] for r in before), 1),
                                           "after": round(max(r[key] for r in after), 1)}}
        report["configs"][item] = entry
    report["load_after"] = load()
    text = json.dumps(report, indent=1)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
