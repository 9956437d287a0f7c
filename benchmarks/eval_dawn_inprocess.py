"""What Dawn in process (PyPI wgpudawn, `dawn-inprocess`) offers on this machine: its adapters,
features and limits, what Dawn's toggles change here, and a cold compile.

For each adapter wgpudawn lists (with the drivers verify adds for Dawn, verify.gpu.dawn.wgpudawn_adapters):
its name, type, driver, features and the subgroup sizes its info claims. Then, on verify's device
(the best adapter): the limits granted, the measured subgroup size, the semantics probes on Dawn as
shipped and with each of `disable_workgroup_init` and `disable_robustness` (do the toggles change
what a kernel can observe on this adapter?), and a cold compile (Mesa's shader cache off where the
driver is Mesa: set MESA_SHADER_CACHE_DISABLE before running) of one config each of a few of
verify's kernels, pipeline creation and first launch apart (lavapipe makes machine code at the
first dispatch; a GPU driver at pipeline creation).

    python benchmarks/eval_dawn_inprocess.py [--kernels merge_state,rope,decode.tiled,dp4a.matmul] [--out FILE]

Prints a JSON document (and writes it to --out).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", default="merge_state,rope,decode.tiled,dp4a.matmul")
    parser.add_argument("--out", default="")
    args = parser.parse_args(argv)

    from hypothesis import HealthCheck, given, seed, settings

    from verify.gpu.dawn import wgpudawn_adapters
    from verify.gpu.dawn.wgpudawn_device import DawnInProcessDevice
    from verify.kernels.registry import get_kernel

    started = time.perf_counter()
    loaded = wgpudawn_adapters.load_wgpudawn()
    document: dict = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "load_average": os.getloadavg(),
                    "mesa_shader_cache_disabled": os.environ.get("MESA_SHADER_CACHE_DISABLE", "")},
        "wgpudawn": wgpudawn_adapters.wgpudawn_version(loaded.module),
        "load_s": round(time.perf_counter() - started, 3),
        "dawn_said_while_loading": loaded.said.strip().splitlines()[:6],
        "adapters": [{"name": a.info.get("device"), "type": a.info.get("adapter_type"),
                      "backend": a.info.get("backend_type"), "driver": a.info.get("description"),
                      "claimed_subgroup_sizes": [v for k, v in a.info.items() if "group_m" in k],
                      "features": sorted(a.features)} for a in wgpudawn_adapters.enumerate_adapters()],
    }
    begun = time.perf_counter()
    device = DawnInProcessDevice()
    document["device"] = {"adapter": device.info.label, "open_s": round(time.perf_counter() - begun, 3),
                          "features": sorted(device.features), "limits": device.limits,
                          "subgroup_size_measured": device.subgroup_size}
    probes = {}
    for toggles in ((), ("disable_workgroup_init",), ("disable_robustness",)):
        toggled = device if not toggles else DawnInProcessDevice(toggles=toggles)
        probes[",".join(toggles) or "as shipped"] = {
            r.probe: f"{r.verdict.value}: {r.observed}" for r in toggled.semantics.results
            if r.probe in ("workgroup-zero-init", "out-of-bounds-read", "var-zero-init", "subgroup-size")}
    document["probes"] = probes

    compiles = []
    for name in [k for k in args.kernels.split(",") if k]:
        kernel = get_kernel(name)
        # the first ci config whose features the adapter has (Dawn on NVIDIA's Vulkan offers no shader-f16)
        config = next((c for c in kernel.gate_configs("ci") if not device.missing(kernel.requirements(kernel.config(c)))),
                      None)
        if config is None:
            compiles.append({"kernel": name, "skipped": f"the adapter lacks what every ci config needs"})
            continue
        wgsl = kernel.wgsl(config)
        cases = []

        @settings(max_examples=1, database=None, deadline=None, suppress_health_check=list(HealthCheck))
        @seed(0)
        @given(kernel.cases(config, "quick"))
        def collect(case):
            cases.append(case)

        collect()
        fresh = DawnInProcessDevice(limits=kernel.limits)
        begun = time.perf_counter()
        for module in kernel.modules(wgsl):
            fresh.pipeline(module)
        compiled = time.perf_counter()
        kernel.launch(fresh, wgsl, config, cases[0])
        launched = time.perf_counter()
        kernel.launch(fresh, wgsl, config, cases[0])
        compiles.append({"kernel": name, "pipeline_s": round(compiled - begun, 3),
                         "first_launch_s": round(launched - compiled, 3),
                         "second_launch_s": round(time.perf_counter() - launched, 4)})
    document["cold_compile"] = compiles
    text = json.dumps(document, indent=1, default=str)
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
