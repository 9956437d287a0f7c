"""Where a gate's workers spend their time: one `verify gate` with every worker traced.

A gate's records time each check's own run (`duration_s`); what a worker does around its checks
is not in them: opening devices (a wgpu device takes about a second on NVIDIA, a Dawn device a
Node process and 4-5 s), compiling pipelines, sanitizing programs, reading WGSL for its limits,
and at its exit tearing its Node processes down. This runs one gate with a `sitecustomize` that
wraps those functions in each worker as their modules load (nothing in `verify` changes) and
writes each worker's spans; then it prints their sums over the workers and a timeline, one row a
worker and one letter a step (W wgpu device open, D Dawn device open, S sanitized pipeline, c / d
wgpu / Dawn compile, L limits, K kernel load, R check run, X Node teardown at exit, . between):

    python benchmarks/trace_workers.py --step 0.5 --out trace.json -- --profile ci --jobs 16 --budget 0.001

Everything after `--` goes to `verify gate` (an output folder of its own is added unless given).
Measure on a quiet machine; the spans nest (a compile inside a sanitized pipeline counts in both).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

#: Each traced span: (module, what to wrap, the span's name). "Class.method" wraps a method.
SPANS = (
    ("verify.gpu.wgpu_device", "WgpuDevice.__init__", "open wgpu"),
    ("verify.gpu.dawn.device", "DawnDevice.__init__", "open dawn"),
    ("verify.instrument.devices", "SanitizingDevice.pipeline", "sanitize pipeline"),
    ("verify.checks.runner", "run_check", "run_check"),
    ("verify.gpu.limits", "check_limits", "check_limits"),
    ("verify.kernels.registry", "load_kernel", "load_kernel"),
    ("verify.gpu.dawn.process", "kill_all", "kill_all"),
)
#: One letter a span in the timeline, the first listed winning where spans nest.
LETTERS = {"open wgpu": "W", "open dawn": "D", "sanitize pipeline": "S", "compile wgpu": "c", "compile dawn": "d",
           "compile dawn-inprocess": "d", "check_limits": "L", "load_kernel": "K", "kill_all": "X", "run_check": "R"}

_SITECUSTOMIZE = textwrap.dedent('''\
    import contextlib, functools, importlib.abc, importlib.machinery, json, os, sys, time
    if os.environ.get("TRACE_OUT") and "verify.worker" in " ".join(getattr(sys, "orig_argv", [])):
        SPANS, EVENTS, STARTED = {spans!r}, [], time.time()

        def timed(name, function):
            @functools.wraps(function)
            def traced(*args, **kwargs):
                begun = time.time()
                try:
                    return function(*args, **kwargs)
                finally:
                    EVENTS.append((name, begun, time.time()))
            return traced

        def wrap(module):
            for owner, attribute, name in SPANS:
                if owner != module.__name__:
                    continue
                holder, _, method = attribute.rpartition(".")
                target = getattr(module, holder) if holder else module
                setattr(target, method, timed(name, getattr(target, method)))
            if module.__name__ == "verify.gpu.compiling":
                real = module.compiling

                @contextlib.contextmanager
                def compiling(what=""):
                    begun = time.time()
                    try:
                        with real(what):
                            yield
                    finally:
                        EVENTS.append(("compile " + (what.split()[0] if what else "?"), begun, time.time()))
                module.compiling = compiling

        class Hook(importlib.abc.MetaPathFinder):
            def find_spec(self, name, path, target=None):
                if name != "verify.gpu.compiling" and name not in {{owner for owner, _, _ in SPANS}}:
                    return None
                spec = importlib.machinery.PathFinder.find_spec(name, path)
                if spec is not None and spec.loader is not None:
                    execute = spec.loader.exec_module

                    def exec_module(module, execute=execute):
                        execute(module)
                        wrap(module)
                    spec.loader.exec_module = exec_module
                return spec

        sys.meta_path.insert(0, Hook())

        def dump():
            path = os.path.join(os.environ["TRACE_OUT"], f"worker-{{os.getpid()}}.json")
            with open(path, "w") as out:
                json.dump({{"pid": os.getpid(), "started": STARTED, "ended": time.time(), "spans": EVENTS}}, out)

        leave = os._exit

        def _exit(code):
            try:
                dump()
            finally:
                leave(code)
        os._exit = _exit
        import atexit
        atexit.register(dump)
    ''')


def trace(gate_args: list[str], folder: Path) -> list[dict]:
    """Run `verify gate *gate_args` with every worker traced into `folder`; each worker's trace."""
    site = folder / "site"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(_SITECUSTOMIZE.format(spans=SPANS))
    env = dict(os.environ, TRACE_OUT=str(folder),
               PYTHONPATH=os.pathsep.join([str(site), *filter(None, [os.environ.get("PYTHONPATH")])]))
    if "--out" not in gate_args:
        gate_args = [*gate_args, "--out", str(folder / "gate")]
    subprocess.run([sys.executable, "-m", "verify", "gate", *gate_args], env=env, check=False)
    return [json.loads(path.read_text()) for path in sorted(folder.glob("worker-*.json"))]


def summary(workers: list[dict]) -> dict:
    """Worker seconds in all, and per span name its count and seconds summed over the workers."""
    seconds, counts = collections.Counter(), collections.Counter()
    for worker in workers:
        for name, begun, ended in worker["spans"]:
            seconds[name] += ended - begun
            counts[name] += 1
    return {"workers": len(workers), "worker_s": round(sum(w["ended"] - w["started"] for w in workers), 1),
            "spans": {name: {"count": counts[name], "s": round(s, 1)} for name, s in seconds.most_common()}}


def timeline(workers: list[dict], step: float) -> list[str]:
    """One row a worker: a letter a `step` seconds (LETTERS; "." between spans, " " not running).

    A cell shows the first listed of the spans that overlap its `step` seconds, so a span shorter
    than a step (a device open on a fast machine) still shows, whatever the machine's speed.
    """
    if not workers:
        return []
    start, end = min(w["started"] for w in workers), max(w["ended"] for w in workers)
    order = list(LETTERS)
    rows = []
    for worker in sorted(workers, key=lambda w: w["started"]):
        cells, at = [], start
        while at < end:
            inside = [name for name, begun, ended in worker["spans"]
                      if begun < at + step and at < ended and name in LETTERS]
            running = worker["started"] < at + step and at <= worker["ended"]
            cells.append(LETTERS[min(inside, key=order.index)] if inside else "." if running else " ")
            at += step
        rows.append(f"{worker['pid']:>8} |{''.join(cells)}|")
    return rows


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    gate_args = argv[argv.index("--") + 1:] if "--" in argv else []
    mine = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--step", type=float, default=1.0, help="seconds a letter of the timeline stands for")
    parser.add_argument("--out", help="write the summary and every worker's spans here as JSON")
    args = parser.parse_args(mine)
    if args.step <= 0:
        parser.error("--step must be positive")
    with tempfile.TemporaryDirectory() as scratch:
        workers = trace(gate_args, Path(scratch))
    found = summary(workers)
    print(json.dumps(found, indent=1))
    print("\n".join(timeline(workers, args.step)))
    if args.out:
        Path(args.out).write_text(json.dumps({"gate_args": gate_args, **found, "traces": workers}, indent=1))
    return 0 if workers else 1


if __name__ == "__main__":
    sys.exit(main())
