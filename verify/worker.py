"""The process that actually runs checks, one job at a time, so a hung or crashed kernel
can be killed without losing the rest of a run (see verify.session).

Protocol: one JSON job per line on stdin; JSON events per line on the protocol stream
(the original stdout): {"event": "progress", ...} then {"event": "record", "record": {...}}.
Everything libraries print goes to stderr.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path

from verify import __version__
from verify.checks import get_check
from verify.checks.context import CheckContext
from verify.checks.runner import RunOptions, run_check
from verify.errors import KernelError, UsageError
from verify.gpu import ShaderCompileError
from verify.gpu.backends import open_device
from verify.gpu.wgsl import sha256
from verify.kernels.registry import get_kernel


def base_record(job: dict, kernel, config: dict, wgsl: str) -> dict:
    return {
        "kernel": kernel.name,
        "family": kernel.family,
        "source": {"kind": job.get("origin_kind", kernel.source), "origin": job.get("origin", kernel.source),
                   "sha256": sha256(wgsl)},
        "config": config,
        "check": job["check"],
        "profile": job.get("profile", "ci"),
        "seed": job["seed"],
        "budget": kernel.budget_doc(),
        "verify_version": __version__,
    }


def with_known_finding(record: dict, finding: str | None) -> dict:
    """`record` judged against a documented finding (Kernel.known_finding): a failure becomes
    verdict "known", carrying the finding, so it is reported without failing the run; a pass
    keeps its verdict and records the finding as not reproduced, so an upstream fix, or an
    adapter where the bug does not show, is visible. Errors and skips are left as they are: they
    say nothing about the finding."""
    if finding is None or record["verdict"] not in ("pass", "fail"):
        return record
    reproduced = record["verdict"] == "fail"
    return dict(record, verdict="known" if reproduced else "pass", finding=finding, finding_reproduced=reproduced)


def device_key(backend: str | None, limits: dict) -> str:
    """The key of the worker's open devices: one device per (backend, limits)."""
    return json.dumps([backend, limits], sort_keys=True)


def device_limits(kernel, check: str) -> dict:
    """The kernel's device limits; for the differential check also its partner's (per key, the
    larger), since both run on one device and WebGPU refuses a pipeline beyond the device's
    limits (Dawn enforces it; wgpu 0.32 does not check workgroup storage)."""
    if check != "differential" or not getattr(kernel, "differential_partner", None):
        return kernel.limits
    partner = get_kernel(kernel.differential_partner).limits
    return {key: max(v for v in (kernel.limits.get(key), partner.get(key)) if v is not None)
            for key in set(kernel.limits) | set(partner)}


def execute(job: dict, devices: dict, emit) -> dict:
    kernel = get_kernel(job["kernel"])
    config = kernel.config(job.get("config"))
    wgsl = job.get("wgsl") or kernel.wgsl(config)
    record = base_record(job, kernel, config, wgsl)
    limits = device_limits(kernel, job["check"])
    key = device_key(job.get("backend"), limits)
    if key not in devices:
        devices[key] = open_device(job.get("backend"), job.get("adapter"), limits)
    device = devices[key]
    record["adapter"] = dict(device.info.as_record(), subgroup_size=device.subgroup_size,
                             zeroes_workgroup_memory=device.zeroes_workgroup_memory)
    missing = device.missing(kernel.requirements(config))
    if missing:
        return dict(record, verdict="skip", reason=f"adapter lacks {', '.join(missing)}", examples=0)
    check = get_check(job["check"])
    try:
        for module in kernel.modules(wgsl):
            device.pipeline(module)
    except ShaderCompileError as exc:
        return dict(record, verdict="fail", reason=f"WGSL does not compile:\n{exc}", examples=0)
    ctx = CheckContext(kernel, config, device, wgsl, job.get("profile", "ci"))
    options = RunOptions(job["examples"], job["seed"], Path(job["out_dir"]) if job.get("out_dir") else None)
    result = run_check(check, ctx, options, progress=lambda done, total: emit(
        {"event": "progress", "done": done, "total": total}))
    # A finding documents the kernel's own WGSL; a user's file under its contract is judged plainly.
    finding = None if job.get("wgsl") else kernel.known_finding(job["check"], config)
    return with_known_finding(dict(record, **result), finding)


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def emit(event: dict) -> None:
        protocol.write(json.dumps(event, default=str) + "\n")
        protocol.flush()

    devices: dict = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        try:
            record = execute(job, devices, emit)
            emit({"event": "record", "record": record})
        except UsageError as exc:
            emit({"event": "usage_error", "message": str(exc)})
        except KernelError as exc:
            emit({"event": "record", "record": dict(job_identity(job), verdict="fail", reason=str(exc), examples=0)})
        except Exception as exc:
            emit({"event": "record", "record": dict(job_identity(job), verdict="error", examples=0,
                                                    reason=f"internal error in verify: {type(exc).__name__}: {exc}",
                                                    traceback=traceback.format_exc())})


def job_identity(job: dict) -> dict:
    return {k: job.get(k) for k in ("kernel", "config", "check", "seed", "profile")}


if __name__ == "__main__":
    main()
