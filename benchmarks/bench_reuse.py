"""What re-gating costs after a one-line WGSL edit: `verify gate --reuse` against an earlier run.

For each --edit (a WGSL file, relative to the checkout), appends one comment line to it, runs
`verify gate --profile PROFILE --jobs N --reuse BASE` and restores the file. With --baseline DIR
(another checkout of verify, e.g. a `git worktree` of an earlier commit) the same edit is re-gated
by both, alternating, each from its own checkout, in the same minutes: the records then carry
both and the ratio. BASE is a plain gate's results.json (--base), or one this script runs first.

Per run it records the wall time, how many checks were reused and how many ran (by verdict),
their check seconds, and the gate's timeline (first and last record, exit; bench_gate.py).
Measure on a quiet machine: the figures are the machine's, not the code's, otherwise.

    python benchmarks/bench_reuse.py --base reports/results.json --edit verify/kernels/attention/decode_tiled.wgsl
    python benchmarks/bench_reuse.py --base /tmp/base/results.json --baseline ../old --rounds 2 \\
        --edit verify/kernels/attention/decode_tiled.wgsl --edit examples/rmsnorm/verify_rmsnorm/rmsnorm.wgsl
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

from bench_gate import timeline

HERE = Path(__file__).resolve().parent.parent
EDIT = "// a one-line edit: re-gating one kernel\n"


def regate(checkout: Path, base: Path, profile: str, jobs: int, out: Path) -> dict:
    """One `verify gate --reuse BASE` from `checkout` (its verify is imported: it runs from there)."""
    command = [sys.executable, "-m", "verify", "gate", "--profile", profile, "--jobs", str(jobs), "--out", str(out),
               "--reuse", str(base), "--allow-skip"]
    start = time.perf_counter()
    lines: list[tuple[float, str]] = []
    with subprocess.Popen(command, cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as gate:
        reader = threading.Thread(target=lambda: lines.extend((time.perf_counter() - start, line)
                                                              for line in gate.stderr), daemon=True)
        reader.start()
        gate.wait()
        reader.join()
    wall = time.perf_counter() - start
    if gate.returncode not in (0, 1):
        sys.exit(f"bench_reuse: the gate could not run (exit {gate.returncode}):\n"
                 + "".join(line for _, line in lines)[-2000:])
    records = json.loads((out / "results.json").read_text())["records"]
    ran = [r for r in records if not r.get("reused_from")]
    return {"checkout": str(checkout), "wall_s": round(wall, 2), "exit": gate.returncode, "checks": len(records),
            "reused": len(records) - len(ran), "ran": dict(Counter(r["verdict"] for r in ran)),
            "ran_check_s": round(sum(float(r.get("duration_s") or 0) for r in ran), 1),
            "timeline": timeline(lines, wall)}


@contextmanager
def edited(paths: list[Path]):
    """One comment line appended to each of `paths`, restored afterwards whatever happens."""
    texts = {path: path.read_text() for path in paths}
    try:
        for path, text in texts.items():
            path.write_text(text + EDIT)
        yield
    finally:
        for path, text in texts.items():
            path.write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--base", type=Path, help="results.json of a plain gate of this profile (default: run one)")
    parser.add_argument("--edit", action="append", required=True, metavar="WGSL",
                        help="a WGSL file to edit, relative to the checkout (repeatable: one re-gate per file)")
    parser.add_argument("--baseline", type=Path, metavar="DIR", help="another checkout, re-gated alternately")
    parser.add_argument("--rounds", type=int, default=1, help="re-gates per edit and checkout")
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/bench_reuse"), help="folder for the runs' output")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    checkouts = [HERE] + ([args.baseline.resolve()] if args.baseline else [])
    for relative in args.edit:
        missing = [c for c in checkouts if not (c / relative).is_file()]
        if missing:
            parser.error(f"--edit {relative}: not a file in {', '.join(map(str, missing))}")
    load_before = os.getloadavg()
    base = args.base
    if base is None:
        print(f"bench_reuse: a plain gate --profile {args.profile} for the base ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "verify", "gate", "--profile", args.profile, "--jobs", str(args.jobs),
                        "--out", str(args.scratch / "base"), "--allow-skip"], cwd=HERE, stdout=subprocess.DEVNULL,
                       check=False)
        base = args.scratch / "base" / "results.json"
    edits = []
    for relative in args.edit:
        runs = []
        for round_ in range(args.rounds):
            for checkout in reversed(checkouts):  # the baseline first: it has no plot kept from this run
                with edited([c / relative for c in checkouts]):
                    name = "this" if checkout == HERE else "baseline"
                    out = args.scratch / f"{Path(relative).stem}-{name}-{round_}"
                    print(f"bench_reuse: {relative} edited, --reuse from {name} ...", file=sys.stderr, flush=True)
                    runs.append({"code": name, "load_average_before": [round(x, 2) for x in os.getloadavg()]}
                                | regate(checkout, base.resolve(), args.profile, args.jobs, out))
                    print(f"bench_reuse:   {runs[-1]['wall_s']} s, reused {runs[-1]['reused']}, ran {runs[-1]['ran']}",
                          file=sys.stderr, flush=True)
        entry = {"edit": relative, "runs": runs}
        if args.baseline:
            mean = {code: sum(r["wall_s"] for r in runs if r["code"] == code) / args.rounds
                    for code in ("this", "baseline")}
            entry["speed_up"] = round(mean["baseline"] / mean["this"], 2)
        edits.append(entry)
    report = {"command": " ".join(sys.argv), "host": platform.node(), "cpus": os.cpu_count(),
              "python": platform.python_version(), "profile": args.profile, "jobs": args.jobs, "base": str(base),
              "load_average_before": [round(x, 2) for x in load_before], "edits": edits}
    text = json.dumps(report, indent=1)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
