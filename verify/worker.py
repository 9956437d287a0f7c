"""The process that actually runs checks, one job at a time, so a hung or crashed kernel
can be killed without losing the rest of a run (see verify.session).

Protocol: one JSON job per line on stdin; JSON events per line on the protocol stream
(the original stdout): {"event": "started"} when the check itself starts (the parent's time
limit counts from there), {"event": "progress", ...}, then {"event": "record", "record": {...}}
(a CheckResult) or, for a replay, {"event": "replayed", ...}. Everything libraries print goes
to stderr. The worker asks the kernel to kill it when its parent dies (Linux), so no worker
outlives the command that started it, even after SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from dataclasses import replace
from pathlib import Path

from verify._version import __version__
from verify.checks import get_check
from verify.checks.context import CheckContext
from verify.checks.runner import RunOptions, run_check
from verify.errors import KernelError, UsageError
from verify.gpu import ShaderCompileError
from verify.gpu.backends import open_device
from verify.gpu.limits import check_limits
from verify.kernels.registry import load_kernel
from verify.kernels.specialize import check_recorded_config
from verify.profiles import get_profile
from verify.results.casefile import load_case, save_check_cases
from verify.results.record import AdapterRecord, CheckResult, Source, Verdict
from verify.wgsl import sha256


class DeviceCache:
    """Open devices by (adapter, backend, limits): a kernel held to other limits gets its own."""

    def __init__(self):
        self._open: dict = {}

    def get(self, adapter: str | None, backend: str | None, limits: dict):
        key = (adapter, backend, json.dumps(limits, sort_keys=True))
        if key not in self._open:
            self._open[key] = open_device(backend, adapter, limits)
        return self._open[key]


def device_limits(kernel, check: str) -> dict:
    """The kernel's device limits; for the differential check also its partner's (per key, the
    larger), since both run on one device and WebGPU refuses a pipeline beyond the device's
    limits (Dawn enforces it; wgpu 0.32 does not check workgroup storage)."""
    if check != "differential" or not getattr(kernel, "differential_partner", None):
        return kernel.limits
    from verify.kernels.registry import get_kernel

    partner = get_kernel(kernel.differential_partner).limits
    return {key: max(v for v in (kernel.limits.get(key), partner.get(key)) if v is not None)
            for key in set(kernel.limits) | set(partner)}


def _other_implementation(devices: DeviceCache, job: dict, device, limits: dict):
    """A device of the other WebGPU implementation on the same adapter, emulating the same
    subgroup width if the job does."""
    from verify.gpu.adapters import Implementation

    mine = device.info.implementation
    other = Implementation.DAWN if mine is Implementation.WGPU else Implementation.WGPU
    opened = devices.get(job.get("adapter"), other.value, limits)
    if job.get("subgroup_width"):
        from verify.instrument import EmulatingDevice

        opened = EmulatingDevice(opened, job["subgroup_width"])
    return opened


def _second_implementation_missing(job: dict, device, requirements, devices: DeviceCache, limits: dict) -> str:
    """Why the `implementations` check cannot run here ("" if it can): the other WebGPU
    implementation has no adapter matching this one, or lacks a feature the config needs."""
    from verify.errors import SetupError
    from verify.gpu.adapters import Implementation

    other = Implementation.DAWN if device.info.implementation is Implementation.WGPU else Implementation.WGPU
    try:  # the worker's device of that implementation (opened once): no extra adapter probe per check
        missing = devices.get(job.get("adapter"), other.value, limits).missing(requirements)
    except SetupError as exc:
        return f"no second WebGPU implementation here ({other.value}: {exc})"
    if missing:
        return f"the second WebGPU implementation ({other.value}) lacks {', '.join(missing)}"
    return ""


def adapter_record(device) -> AdapterRecord:
    info = device.info
    return AdapterRecord(info.name, info.vendor, info.backend, info.adapter_type, info.driver,
                         device.subgroup_size, device.zeroes_workgroup_memory, str(info.implementation))


def compile_divergence(refusal: ShaderCompileError, modules: list[str], devices: DeviceCache, adapter: str | None,
                       here, limits: dict, width: int | None = None) -> str | None:
    """The reason of a compile divergence, or None.

    When one implementation's compiler (`here`) refuses the WGSL, it is compiled on the other
    implementation (Tint for Naga's refusal, Naga for Tint's), with the same limits and subgroup
    emulation; if every module compiles there, the two compilers disagree about what is valid
    WGSL, and the reason carries both verdicts. Where the other implementation is missing here,
    or refuses too, there is no divergence to report (the refusal is a plain failure).
    """
    from verify.errors import SetupError
    from verify.gpu import Implementation

    there = Implementation.DAWN if here is Implementation.WGPU else Implementation.WGPU
    try:
        other = devices.get(adapter, there.value, limits)
        if width:
            from verify.instrument import EmulatingDevice

            other = EmulatingDevice(other, width)
        for module in modules:
            other.pipeline(module)
    except (SetupError, ShaderCompileError):
        return None
    return _divergence(refused_by=here, refusal=str(refusal), compiled_by=there, label=other.info.label)


def _divergence(*, refused_by, refusal: str, compiled_by, label: str) -> str:
    """The reason of a compile divergence: one compiler's refusal next to the other's success."""
    return (f"compile divergence: the WGSL compiles under {compiled_by.compiler} ({compiled_by.value}) but not "
            f"under {refused_by.compiler} ({refused_by.value}); browsers ship both, so the kernel does not run on "
            f"one of them.\n{refused_by.compiler}: {refusal}\n{compiled_by.compiler}: compiles ({label})")


def execute(job: dict, devices: DeviceCache, emit) -> CheckResult:
    kernel = load_kernel(job["kernel_ref"])
    config = kernel.config(job.get("config"))
    profile = get_profile(job.get("profile") or "ci")
    wgsl = job.get("wgsl") or kernel.wgsl(config)
    check = get_check(job["check"])
    device = devices.get(job.get("adapter"), job.get("backend"), device_limits(kernel, check.name))
    width = job.get("subgroup_width")
    if width:
        from verify.instrument import EmulatingDevice

        device = EmulatingDevice(device, width)
    result = CheckResult(
        kernel=kernel.name, check=check.name, config=config, verdict=Verdict.PASS, kernel_ref=job["kernel_ref"],
        family=kernel.family, source=Source(job.get("source_kind") or kernel.source, job.get("origin") or "", sha256(wgsl)),
        profile=profile.name, seed=job["seed"], adapter=adapter_record(device), budget=kernel.budget_doc(),
        verify_version=__version__, subgroup_width=width)
    missing = device.missing(kernel.requirements(config))
    if missing:
        return replace(result, verdict=Verdict.SKIP, reason=f"adapter lacks {', '.join(missing)}")
    if check.name == "implementations":
        unavailable = _second_implementation_missing(job, device, kernel.requirements(config), devices,
                                                     device_limits(kernel, check.name))
        if unavailable:
            return replace(result, verdict=Verdict.SKIP, reason=unavailable)
    modules = kernel.modules(wgsl)
    # The limits first, from the WGSL itself: a kernel over them fails, whichever compiler notices.
    limits = check_limits(modules, device.limits)
    result = replace(result, notes=list(limits.over_defaults))
    if limits.over_limits:
        return replace(result, verdict=Verdict.FAIL, reason="exceeds the limits verify holds it to: "
                       + "; ".join(limits.over_limits))
    try:
        for module in modules:
            device.pipeline(module)
    except ShaderCompileError as exc:
        divergence = compile_divergence(exc, modules, devices, job.get("adapter"), device.info.implementation,
                                        device_limits(kernel, check.name), width)
        if divergence is not None:
            return replace(result, verdict=Verdict.DIVERGENCE, reason=divergence)
        return replace(result, verdict=Verdict.FAIL, reason=f"WGSL does not compile:\n{exc}")
    if check.name == "implementations":  # the other compiler must accept it too, before any case
        other = _other_implementation(devices, job, device, device_limits(kernel, check.name))
        try:
            for module in modules:
                other.pipeline(module)
        except ShaderCompileError as exc:
            return replace(result, verdict=Verdict.DIVERGENCE, reason=_divergence(
                refused_by=other.info.implementation, refusal=str(exc), compiled_by=device.info.implementation,
                label=device.info.label))
    emit({"event": "started"})
    ctx = CheckContext(kernel, config, device, wgsl, profile,
                       open_other=lambda: _other_implementation(devices, job, device, device_limits(kernel, check.name)))
    run = run_check(check, ctx, RunOptions(job["examples"], job["seed"]), progress=lambda done, total: emit(
        {"event": "progress", "done": done, "total": total}))
    checked = replace(run.result, kernel_ref=result.kernel_ref, family=result.family, source=result.source,
                      profile=result.profile, adapter=result.adapter, budget=result.budget,
                      verify_version=__version__, notes=result.notes, subgroup_width=width)
    if job.get("out_dir") and (run.shrunk is not None or run.worst is not None):
        checked = save_check_cases(checked, run.shrunk and run.shrunk.case, run.worst and run.worst.case,
                                   Path(job["out_dir"]), wgsl)
    # A finding documents the kernel's own WGSL; a user's file under its contract is judged plainly.
    finding = None if job.get("wgsl") else kernel.known_finding(check.name, config)
    return checked.with_known_finding(finding)


def replay(job: dict, devices: DeviceCache, emit) -> dict:
    """Re-run a saved case under its check; the lines to print and whether it held."""
    case, meta = load_case(job["case_path"])
    kernel = load_kernel(meta.get("kernel_ref") or _built_in_ref(meta["kernel"]))
    if kernel.name != meta["kernel"]:
        raise UsageError(f"{job['case_path']}: recorded for kernel {meta['kernel']!r}, but "
                         f"{meta.get('kernel_ref')} is {kernel.name!r}")
    config = kernel.config(meta["config"])
    check_recorded_config(meta["wgsl"], config, f"{job['case_path']}: the saved WGSL")
    check = get_check(meta.get("check", "reference"))
    _check_case_fits(kernel, config, case, job["case_path"])
    device = devices.get(job.get("adapter"), job.get("backend"), kernel.limits)
    if meta.get("subgroup_width"):
        from verify.instrument import EmulatingDevice

        device = EmulatingDevice(device, int(meta["subgroup_width"]))
    missing = device.missing(kernel.requirements(config))
    if missing:
        raise UsageError(f"this adapter ({device.info.name}) lacks {', '.join(missing)}; cannot replay")
    lines = [f"kernel {kernel.name} [{' '.join(f'{k}={v}' for k, v in sorted(config.items()))}], check {check.name}",
             f"case   {case.summary()}"]
    recorded = meta.get("adapter") or {}
    lines.append(f"saved on {recorded.get('name', '?')} ({recorded.get('backend', '?')}, "
                 f"{recorded.get('implementation', 'wgpu')}); replaying on {device.info.label}")
    emit({"event": "started"})
    ctx = CheckContext(kernel, config, device, meta["wgsl"], get_profile(meta.get("profile") or "ci"),
                       open_other=lambda: _other_implementation(
                           devices, {"adapter": job.get("adapter"), "subgroup_width": meta.get("subgroup_width")},
                           device, kernel.limits))
    try:
        outcome = check.run_example(ctx, case)
    except KernelError as exc:
        return {"event": "replayed", "passed": False, "lines": lines + [f"FAIL  {exc}"]}
    for m in outcome.outputs:
        lines.append(f"  {m.name:8} max abs {m.max_abs:.3g}  max ulp {m.max_ulp:.3g}  rel L2 {m.rel_l2:.3g}  "
                     f"max err/budget {m.max_err_over_budget:.3g}  NaN {m.nan_count}  failing {m.failing}/{m.elements}")
    lines.append(("PASS" if outcome.passed else "FAIL") + f"  {outcome.message()}")
    return {"event": "replayed", "passed": outcome.passed, "lines": lines}


def _built_in_ref(name: str) -> str:
    from verify.kernels.registry import spec_of

    return spec_of(name).ref


def _check_case_fits(kernel, config: dict, case, path: str) -> None:
    """A case edited to another kernel or config would be judged against the wrong reference:
    the kernel's expected outputs must be computable from it."""
    try:
        kernel.expected(config, case)
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        raise UsageError(f"{path}: the case does not fit {kernel.name} with config "
                         f"{' '.join(f'{k}={v}' for k, v in sorted(config.items()))} "
                         f"({type(exc).__name__}: {exc})") from None


def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when the parent dies (SIGKILL, SIGHUP or a crash of
    `verify` leaves no worker spinning on a hung kernel)."""
    parent = int(os.environ.get("VERIFY_PARENT_PID", "0") or 0)
    if sys.platform.startswith("linux"):
        import ctypes

        PR_SET_PDEATHSIG = 1
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        except OSError:
            pass
    if parent and os.getppid() != parent:  # the parent died before the request took effect
        os._exit(1)


def main() -> None:
    _die_with_parent()
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def emit(event: dict) -> None:
        protocol.write(json.dumps(event, default=str) + "\n")
        protocol.flush()

    devices = DeviceCache()
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        if job.get("kind") == "replay":
            _replay_job(job, devices, emit)
            continue
        try:
            emit({"event": "record", "record": execute(job, devices, emit).to_dict()})
        except UsageError as exc:
            emit({"event": "usage_error", "message": str(exc)})
        except KernelError as exc:
            emit({"event": "record", "record": _failed(job, Verdict.FAIL, str(exc)).to_dict()})
        except Exception as exc:
            emit({"event": "record", "record": _failed(job, Verdict.ERROR, f"internal error in verify: "
                                                       f"{type(exc).__name__}: {exc}", traceback.format_exc()).to_dict()})


def _replay_job(job: dict, devices: DeviceCache, emit) -> None:
    try:
        emit(replay(job, devices, emit))
    except UsageError as exc:
        emit({"event": "usage_error", "message": str(exc)})
    except KernelError as exc:
        emit({"event": "replayed", "passed": False, "lines": [f"FAIL  {exc}"]})
    except Exception as exc:
        emit({"event": "replayed", "passed": False,
              "lines": [f"ERROR internal error in verify: {type(exc).__name__}: {exc}", traceback.format_exc()]})


def _failed(job: dict, verdict: Verdict, reason: str, trace: str | None = None) -> CheckResult:
    return CheckResult(kernel=job.get("kernel", "?"), check=job.get("check", "?"), config=job.get("config") or {},
                       verdict=verdict, reason=reason, kernel_ref=job.get("kernel_ref", ""),
                       profile=job.get("profile", ""), seed=job.get("seed", 0), traceback=trace,
                       source=Source(job.get("source_kind") or "own", job.get("origin") or ""),
                       verify_version=__version__)


if __name__ == "__main__":
    main()
