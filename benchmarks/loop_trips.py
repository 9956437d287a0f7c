"""How many trips the loops of the repository's kernels make: the measurement behind the
sanitizer's loop bound (verify.instrument.sanitize.LOOP_BOUND, docs/instrumentation.md §2).

Every loop (`loop`, `for`, `while`) of every module a kernel launches counts its trips
(verify.instrument.trips: per loop, the largest count one execution of it reached in any
invocation, as the sanitizer counts; and every trip of an invocation added up, as lavapipe's own
loop limit counts, docs/findings.md §9). Cases are drawn by Hypothesis at each
profile's sizes, steered (`target`) toward the largest trip count, so the figure is the largest
the gate's cases reach, not a typical one.

    python -m benchmarks.loop_trips --profiles ci,nightly --examples 6 --out benchmarks/results/loop_trips.json
    python -m benchmarks.loop_trips --kernels merge_state,decode.sharded --profiles ci --examples 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings, target
from hypothesis import seed as hseed

from verify.errors import SetupError
from verify.instrument.trips import TripCountingDevice
from verify.profiles import get_profile


def largest_cases(kernel, config: dict, profile: str) -> list:
    """(config, case) pairs at the largest sizes of the profile, for the families whose loop trips
    grow with the case: a decode of one sequence of the longest context (per invocation, batch
    adds invocations, not trips); a matmul with the largest K (M and N drawn as usual)."""
    if hasattr(kernel, "decode_inputs"):
        from verify.kernels.attention.cases import explicit_decode_case
        from verify.kernels.attention.sizes import SIZES

        longest = SIZES(profile).max_context
        sliding = ([0], [0]) if config.get("sliding_window") else None
        return [(config, explicit_decode_case(config, [longest], sliding=sliding))]
    return []


def measure(kernel, config: dict, profile: str, examples: int, device) -> dict:
    counting = TripCountingDevice(device)
    wgsl = kernel.wgsl(config)
    state = {"cases": 0, "seconds": 0.0}
    for pinned, case in largest_cases(kernel, config, profile):
        start = time.perf_counter()
        kernel.launch(counting, kernel.wgsl(pinned), pinned, case)
        state["cases"] += 1
        state["seconds"] += time.perf_counter() - start
    if kernel.family == "dp4a" and "k" in config and not config["k"]:
        from verify.kernels.dp4a.sizes import SIZES

        config = kernel.config(dict(config, k=SIZES(profile).matmul.max_k))  # the largest K; M and N drawn
        wgsl = kernel.wgsl(config)

    @settings(max_examples=examples, database=None, deadline=None, suppress_health_check=list(HealthCheck),
              phases=[Phase.explicit, Phase.generate, Phase.target])  # an error is reported, not shrunk
    @hseed(0)
    @given(kernel.cases(config, get_profile(profile)))
    def run(case):
        start = time.perf_counter()
        counting.reset()
        kernel.launch(counting, wgsl, config, case)
        last = counting.last
        state["cases"] += 1
        state["seconds"] += time.perf_counter() - start
        target(float(last.largest_loop if last else 0), label="trips of one loop")
        target(float(counting.launch_invocation), label="trips of one invocation")

    run()
    loops = []
    for sha, counted in counting.loops.items():
        for loop in counted:
            loops.append({"module": sha[:12], "line": loop.line, "loop": loop.text,
                          "largest_trips": counting.largest.get((sha, loop.number), 0)})
    # A kernel whose launch compiles no module on the device (ONNX Runtime's session end to end)
    # has no loops to count here: `modules` is 0.
    return {"kernel": kernel.name, "config": config, "profile": profile, "cases": state["cases"],
            "modules": len(counting.loops),
            "seconds": round(state["seconds"], 2),
            "largest_trips": max((loop["largest_trips"] for loop in loops), default=0),
            "largest_invocation_total": max(counting.largest_invocation.values(), default=0), "loops": loops}


def main(argv=None) -> int:
    from verify.gpu.implementations import open_device
    from verify.kernels.registry import get_kernel, kernel_names

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="", help="comma-separated (default: every kernel)")
    parser.add_argument("--profiles", default="ci,nightly")
    parser.add_argument("--examples", type=int, default=6, help="cases per kernel config and profile")
    parser.add_argument("--implementation", default=None)
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    devices: dict[str, object] = {}

    def device_for(kernel):
        """A device with the kernel's limits on the implementation it is meant for (as the gate
        opens one: ONNX Runtime's kernels are Dawn's), kept per (implementation, limits)."""
        chosen = args.implementation or (kernel.implementations[0] if kernel.implementations else None)
        key = f"{chosen} {json.dumps(kernel.limits, sort_keys=True)}"
        if key not in devices:
            devices[key] = open_device(chosen, None, dict(kernel.limits))
        return devices[key]

    names = [n for n in args.kernels.split(",") if n] or kernel_names()
    results, skipped = [], []
    for name in names:
        kernel = get_kernel(name)
        for profile in args.profiles.split(","):
            try:
                configs = kernel.gate_configs(profile)
            except SetupError as exc:
                skipped.append(f"{name}: {exc}")
                continue
            device = device_for(kernel)
            for config in configs:
                if kernel.requirements(config) - device.features:
                    skipped.append(f"{name} {config}: the adapter lacks {sorted(kernel.requirements(config))}")
                    continue
                try:
                    result = measure(kernel, config, profile, args.examples, device)
                except Exception as exc:  # a kernel that does not launch through a device (ORT's session)
                    skipped.append(f"{name} {config} ({profile}): {type(exc).__name__}: {exc}")
                    continue
                results.append(result)
                if not result["modules"]:
                    skipped.append(f"{name} {config} ({profile}): launches no module through the device")
                print(f"{name:28} {profile:8} largest trips {result['largest_trips']:6}  invocation total "
                      f"{result['largest_invocation_total']:6}  ({result['cases']} cases, {result['seconds']} s)  "
                      f"{' '.join(f'{k}={v}' for k, v in sorted(config.items()))}", flush=True)
    for line in skipped:
        print(f"skipped: {line}", file=sys.stderr)
    summary = {
        "largest_trips": max((r["largest_trips"] for r in results), default=0),
        "largest_invocation_total": max((r["largest_invocation_total"] for r in results), default=0),
        "adapters": sorted({device.info.label for device in devices.values()}), "machine": platform.node(),
        "cpus": os.cpu_count(),
        "examples": args.examples, "profiles": args.profiles, "results": results, "skipped": skipped,
    }
    print(f"largest trips of one loop execution: {summary['largest_trips']}; "
          f"of one invocation, all loops: {summary['largest_invocation_total']}")
    if args.out:
        Path(args.out).write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
