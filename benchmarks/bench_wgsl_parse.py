"""What reading a module costs the one WGSL front end: full parse, declarations only, interface.

For every module a gate compiles (the built-in kernels' WGSL at their gate configs, TVM's cached
WGSL, ORT's captured programs), per module: the full parse (what the instrumentation needs), the
declarations-only parse (function bodies blanked; what a device reads the interface and resources
from), and `read_interface` uncached. A device reads a module's interface once per pipeline it
creates, so the declarations figure is the cost a gate pays per (worker, module).

    python benchmarks/bench_wgsl_parse.py [--repeat 5] [--out parse.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time


def modules() -> list[tuple[str, str]]:
    """(label, WGSL) of every module of every kernel's gate configs that can be built here."""
    from verify.errors import UsageError
    from verify.kernels.registry import get_kernel, kernel_names
    from verify.profiles import get_profile

    found, seen = [], set()
    for name in kernel_names():
        kernel = get_kernel(name)
        try:
            configs = kernel.gate_configs(get_profile("ci"))
        except UsageError:
            continue
        for config in configs:
            for index, module in enumerate(kernel.modules(kernel.wgsl(config))):
                if module not in seen:
                    seen.add(module)
                    found.append((f"{name}[{index}] {' '.join(f'{k}={v}' for k, v in sorted(config.items()))}", module))
    return found


def best_of(repeat: int, function, *args) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function(*args)
        times.append(time.perf_counter() - start)
    return min(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5, help="runs per module; the fastest counts (default 5)")
    parser.add_argument("--out", help="write the rows as JSON")
    args = parser.parse_args()

    from verify.wgsl import parse, parse_declarations
    from verify.wgsl.interface import _read, declared

    parse("fn f() {}")  # the grammar is built once per process
    rows = []
    for label, source in modules():
        full = best_of(args.repeat, parse, source)
        declarations = best_of(args.repeat, parse_declarations, source)
        interface = best_of(args.repeat, lambda s: (_read.cache_clear(), declared.cache_clear(), _read(s)), source)
        rows.append({"module": label, "lines": source.count("\n") + 1, "full_ms": round(full, 2),
                     "declarations_ms": round(declarations, 2), "interface_ms": round(interface, 2)})
        print(f"{full:8.1f} {declarations:8.1f} {interface:8.1f}  {rows[-1]['lines']:5d}  {label}")
    print(f"median per module: full {statistics.median(r['full_ms'] for r in rows):.1f} ms, declarations "
          f"{statistics.median(r['declarations_ms'] for r in rows):.1f} ms, interface "
          f"{statistics.median(r['interface_ms'] for r in rows):.1f} ms over {len(rows)} modules")
    if args.out:
        with open(args.out, "w") as out:
            json.dump(rows, out, indent=1)


if __name__ == "__main__":
    main()
