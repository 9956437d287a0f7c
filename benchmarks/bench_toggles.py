"""What the `toggles` check adds to a gate: its wall time per kernel config, as the gate plans it.

The check compiles each config's WGSL on three more Dawn devices (as shipped, and with each of
`disable_workgroup_init` and `disable_robustness`) and runs at most eight small cases three times,
so its cost is mostly compiling. For each kernel that declares the check, every gate config of the
profile is checked in this process (`verify.check(..., checks="toggles", isolate=False)`), one after
the other, and the wall time of each call is kept, with the record's verdict and whether a note says
the kernel is implementation-sensitive. With `--cold`, Mesa's shader cache is off
(MESA_SHADER_CACHE_DISABLE), as on a fresh machine; without it, a second run finds the cache warm.

    python benchmarks/bench_toggles.py --profile ci [--cold] [--kernels merge_state,rope] [--out FILE]

Prints a table on stderr and the JSON document on stdout (and to --out).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="ci")
    parser.add_argument("--kernels", default="", help="comma-separated; default: every kernel declaring `toggles`")
    parser.add_argument("--cold", action="store_true", help="Mesa's shader cache off (a fresh machine)")
    parser.add_argument("--implementation", default=None,
                        help="the job's implementation (default: each kernel's own); the check opens Dawn itself")
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)
    if args.cold:
        os.environ["MESA_SHADER_CACHE_DISABLE"] = "true"  # before any driver loads

    import verify
    from verify.kernels.registry import get_kernel, kernel_names
    from verify.profiles import get_profile

    profile = get_profile(args.profile)
    names = [n for n in args.kernels.split(",") if n] or [n for n in kernel_names() if "toggles" in get_kernel(n).checks]
    rows = []
    started = time.perf_counter()
    for name in names:
        kernel = get_kernel(name)
        configs = kernel.gate_configs(profile)
        examples = max(1, math.ceil(kernel.gate_examples(profile) / max(len(configs), 1)))
        for config in configs:
            begun = time.perf_counter()
            result = verify.check(name, config, checks="toggles", profile=profile, examples=examples, isolate=False,
                                  implementation=args.implementation)[0]
            rows.append({"kernel": name, "config": result.config_text, "verdict": result.verdict.value,
                         "examples": result.examples, "wall_s": round(time.perf_counter() - begun, 3),
                         "reason": result.reason.splitlines()[0] if result.reason else "",
                         "sensitive": [n.split("(")[0].strip() for n in result.notes
                                       if n.startswith("implementation-sensitive")],
                         "notes": list(result.notes)})
            print(f"{rows[-1]['wall_s']:8.2f} s  {result.verdict.value:5} {name} [{result.config_text}]"
                  f"{'  SENSITIVE' if rows[-1]['sensitive'] else ''}", file=sys.stderr)
    document = {
        "benchmark": "toggles check per gate config", "profile": profile.name, "cold_shader_cache": args.cold,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                    "load_average_at_start": os.getloadavg()},
        "total_s": round(time.perf_counter() - started, 2), "configs": len(rows), "rows": rows,
    }
    text = json.dumps(document, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    print(f"{len(rows)} configs, {document['total_s']} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
