"""The process that actually runs checks, one job at a time, so a hung or crashed kernel can be
killed without losing the rest of a run (see verify.session).

Protocol (verify.protocol): one job per line on stdin; events per line on the protocol stream
(the original stdout). Everything libraries print goes to stderr. The worker asks the kernel to
kill it when its parent dies (Linux), so no worker outlives the command that started it, even
after SIGKILL.

Before any case of a job: the adapter must have the features the config needs (else SKIP), the
WGSL must fit the limits verify holds it to (else FAIL, whichever compiler would notice) and
compile (else FAIL, or DIVERGENCE where the other implementation's compiler accepts it), and the
check's own preflight (verify.checks.base.Check.preflight) may give a verdict. Nothing here names
a check or an implementation: checks say what they need through their hooks, implementations
through the registry.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from dataclasses import replace
from pathlib import Path

from verify.checks import get_check
from verify.checks.context import CheckContext
from verify.checks.implementations import divergence
from verify.checks.runner import RunOptions, infrastructure_reason, limit_reason, raised_by, run_check
from verify.checks.saved import resolved
from verify.checks.shared_cases import ReferenceMemo, family
from verify.errors import FailureKind, InfrastructureError, KernelError, SetupError, UsageError, VerifyLimit
from verify.gpu import compiling
from verify.gpu.device import ShaderCompileError
from verify.gpu.implementations import (
    default_implementation,
    implementation_names,
    open_device,
    other_implementation,
)
from verify.gpu.limits import check_limits
from verify.kernels.registry import load_kernel
from verify.profiles import get_profile, job_profile
from verify.protocol import (
    Finished,
    Job,
    Progress,
    Refused,
    Replayed,
    ReplayJob,
    Stage,
    Started,
    decode_job,
    encode_event,
)
from verify.results.casefile import SavedCase, load_case, save_check_cases
from verify.results.record import AdapterRecord, CheckResult, Verdict
from verify.wgsl import sha256

#: References of the cases that several jobs draw (Job.shares_cases), kept for the worker's life.
_SHARED = ReferenceMemo()


class DeviceCache:
    """Open devices by (adapter, implementation, limits): a kernel held to other limits gets its own."""

    def __init__(self):
        self._open: dict = {}

    def get(self, adapter: str | None, implementation: str | None, limits: dict):
        implementation = implementation or default_implementation()
        key = (adapter, implementation, json.dumps(limits, sort_keys=True))
        if key in self._open and not getattr(self._open[key], "alive", True):
            del self._open[key]  # its process died (and took its check with it): start another
        if key not in self._open:
            self._open[key] = open_device(implementation, adapter, limits)
        return self._open[key]

    def other(self, device, adapter: str | None, limits: dict, width: int | None):
        """A device of the implementation `device`'s is compared with, on the same adapter and
        limits, emulating the same subgroup width; SetupError where there is none."""
        opened = self.get(adapter, other_implementation(device.info.implementation).name, limits)
        return emulating(opened, width)


def emulating(device, width: int | None):
    """`device`, with subgroups of `width` lanes emulated when a width is asked for."""
    if not width:
        return device
    from verify.instrument import EmulatingDevice

    return EmulatingDevice(device, width)


def adapter_record(device) -> AdapterRecord:
    """The adapter as a record keeps it, with its provenance: the implementation's version and the
    WGSL semantics probes that deviate here (measured once per machine, verify.gpu.semantics)."""
    info = device.info
    semantics = getattr(device, "semantics", None)
    deviations = None
    if semantics is not None:
        from verify.gpu.semantics import Conformance

        deviations = ",".join(r.probe for r in semantics.results if r.verdict is Conformance.DEVIATES)
    return AdapterRecord(info.name, info.vendor, info.backend, info.adapter_type, info.driver,
                         device.subgroup_size, not (deviations and "workgroup-zero-init" in deviations.split(",")),
                         info.implementation, getattr(info, "implementation_version", ""), deviations)


def source_version(kernel, config: dict, wgsl: str, user_wgsl: bool) -> str:
    """Who made the WGSL, at which version: the upstream project's (TVM, ORT), a package's, or
    verify's own; "" for a user's file (its author is the reader)."""
    if user_wgsl:
        return ""
    try:
        upstream = kernel.upstream(config, wgsl)
    except Exception:  # provenance must never cost a check
        upstream = None
    if upstream is not None:
        return f"{upstream.project} {upstream.version}".strip()
    module = type(kernel).__module__.split(".")[0]
    if module == "verify":
        from verify._version import __version__

        return f"verify {__version__}"
    try:
        from importlib import metadata

        return f"{module} {metadata.version(module)}"
    except Exception:
        return module


def compile_divergence(refusal: ShaderCompileError, modules: list[str], devices: DeviceCache, adapter: str | None,
                       device, limits: dict, width: int | None) -> str | None:
    """The reason of a compile divergence, or None.

    When the device's compiler refuses the WGSL, it is compiled on the implementation this one is
    compared with, with the same limits and subgroup emulation; if every module compiles there,
    the two compilers disagree about what is valid WGSL, and the reason carries both verdicts.
    Where that implementation is missing here, or refuses too, there is no divergence to report
    (the refusal is a plain failure).
    """
    try:
        other = devices.other(device, adapter, limits, width)
        for module in modules:
            other.pipeline(module)
    except (SetupError, ShaderCompileError):
        return None
    return divergence(refused_by=device.info, refusal=refusal, compiled_by=other.info)


class StageReporter:
    """The stages the parent sees (verify.protocol.Stage): the check's own (the StageTimer's), and
    `compiling` around every pipeline compile, whoever compiles (the parent's clock does not count
    compiles against the time limit, verify.session)."""

    def __init__(self, emit):
        self.emit = emit
        self.current = STARTING

    def __call__(self, name: str) -> None:
        self.current = name
        self.emit(Stage(name))

    def compiling(self, started: bool) -> None:
        self.emit(Stage(compiling.COMPILING if started else self.current))

    def __enter__(self) -> StageReporter:
        compiling.listen(self.compiling)
        return self

    def __exit__(self, *exc) -> None:
        compiling.listen(None)


#: The stage of a job before its check starts (importing the kernel, opening the device, compiling).
STARTING = "starting"


def execute(job: Job, devices: DeviceCache, emit) -> CheckResult:
    """Run one job: its record (emitting Started, Stage and Progress events on the way), with the
    pipelines compiled for it (compiles this process's devices had not cached). With
    $VERIFY_COMPILE_LOG set, each compile is a line of that file: the process, the job and what it
    compiled (the implementation and the WGSL's sha256) and the seconds it took, for measuring
    which compiles a run repeats and what they cost (docs/performance.md)."""
    before = len(compiling.compiled())
    with StageReporter(emit) as stages:
        record = _execute(job, devices, emit, stages)
    made = compiling.compiled()[before:]
    log = os.environ.get(COMPILE_LOG)
    if log and made:
        seconds = compiling.compile_seconds()[before:]
        with open(log, "a") as out:
            out.writelines(f"{os.getpid()} {job.id} {what} {took:.3f}\n" for what, took in zip(made, seconds))
    return replace(record, pipelines_compiled=len(made))


#: The environment variable naming a file each compile is written to (execute).
COMPILE_LOG = "VERIFY_COMPILE_LOG"


def _execute(job: Job, devices: DeviceCache, emit, stages: StageReporter) -> CheckResult:
    kernel = load_kernel(job.kernel_ref)
    config = kernel.config(job.config)
    profile = job_profile(job.profile or "ci", job.profile_data)
    wgsl = job.wgsl or kernel.wgsl(config)
    check = get_check(job.check)
    limits = check.opened_limits(kernel, config)
    device = emulating(devices.get(job.adapter, job.implementation, limits), job.subgroup_width)
    source = replace(job.source, sha256=sha256(wgsl),
                     version=source_version(kernel, config, wgsl, user_wgsl=job.wgsl is not None))
    base = replace(job, source=source).result(Verdict.PASS, family=kernel.family, adapter=adapter_record(device),
                                              budget=kernel.budget_doc())
    # A finding documents the kernel's own WGSL; a user's file under its contract is judged plainly.
    finding = None if job.wgsl else kernel.known_finding(check.name, config)
    missing = device.missing(kernel.requirements(config))
    if missing:
        return replace(base, verdict=Verdict.SKIP, reason=f"adapter lacks {', '.join(missing)}")
    modules = kernel.modules(wgsl)
    # The limits first, from the WGSL itself: a kernel over them fails, whichever compiler notices.
    resources = check_limits(modules, device.limits)
    base = replace(base, notes=list(resources.over_defaults))
    if resources.over_limits:
        return replace(base, verdict=Verdict.FAIL, failure_kind=FailureKind.OVER_LIMIT,
                       reason="exceeds the limits verify holds it to: " + "; ".join(resources.over_limits))
    try:
        for module in modules:
            device.pipeline(module)
    except ShaderCompileError as exc:
        diverged = compile_divergence(exc, modules, devices, job.adapter, device, limits, job.subgroup_width)
        if diverged is not None:
            return replace(base, verdict=Verdict.DIVERGENCE, reason=diverged,
                           failure_kind=FailureKind.COMPILE_DIVERGENCE).with_known_finding(finding)
        return replace(base, verdict=Verdict.FAIL, reason=f"WGSL does not compile:\n{exc}",
                       failure_kind=FailureKind.COMPILE_ERROR).with_known_finding(finding)
    ctx = CheckContext(kernel, config, device, wgsl, profile,
                       open_other=lambda: devices.other(device, job.adapter, limits, job.subgroup_width),
                       user_wgsl=job.wgsl is not None, shared=_SHARED.serve(family(job)) if job.shares_cases else None)
    verdict = check.preflight(ctx)
    if verdict is not None:
        return replace(base, verdict=verdict.verdict, reason=verdict.reason,
                       failure_kind=verdict.kind).with_known_finding(finding)
    emit(Started())
    ctx.timer.on_stage = stages
    ctx.timer.entering("drawing cases")
    run = run_check(check, ctx, RunOptions(job.examples, job.slice_seed, explicit=job.part != "random",
                                           generate=job.part != "corners"), base,
                    progress=lambda done, total: emit(Progress(done, total)), finding=finding,
                    loop_cap=_loop_cap(ctx, base.adapter, devices, job.adapter, job.implementation, limits,
                                       job.subgroup_width))
    checked = run.result
    if job.out_dir and (run.shrunk is not None or run.worst is not None):
        checked = save_check_cases(checked, run.shrunk.case if run.shrunk is not None else None,
                                   run.worst.case if run.worst is not None else None,
                                   Path(job.out_dir), wgsl, part=f"-s{job.slice[0]}" if job.slice else "")
    return checked.with_known_finding(run.findings(finding))


def _loop_cap(ctx: CheckContext, adapter: AdapterRecord | None, devices: DeviceCache, adapter_name: str | None,
              implementation: str | None, limits: dict, width: int | None):
    """Where the adapter's driver ends long loops (its `loop-trip-count` probe deviates), what
    tells a failing example past that cap from the kernel's own failure (verify.checks.loop_cap);
    None elsewhere."""
    from verify.checks import loop_cap

    if adapter is None or loop_cap.PROBE not in (adapter.deviating or ()):
        return None

    def open_counting():
        from verify.instrument.trips import TripCountingDevice

        raw = devices.get(adapter_name, implementation, loop_cap.counting_limits(limits))
        return emulating(TripCountingDevice(raw), width)

    return loop_cap.LoopCap(ctx, open_counting)


def replay(job: ReplayJob, devices: DeviceCache, emit) -> Replayed:
    """Re-run a saved case under its check `job.repeat` times; the lines to print and whether it held."""
    case, saved = load_case(job.case_path)
    kernel, config, check = resolved(saved, job.case_path)
    _check_case_fits(kernel, config, case, job.case_path)
    width = saved.subgroup_width
    limits = check.opened_limits(kernel, config)
    device = emulating(devices.get(job.adapter, replay_implementation(job, saved, kernel), limits), width)
    missing = device.missing(kernel.requirements(config))
    if missing:
        raise UsageError(f"this adapter ({device.info.name}) lacks {', '.join(missing)}; cannot replay")
    lines = [f"kernel {kernel.name} [{' '.join(f'{k}={v}' for k, v in sorted(config.items()))}], check {check.name}",
             f"case   {case.summary()}"]
    recorded = saved.adapter
    lines.append(f"saved on {recorded.get('name', '?')} ({recorded.get('backend', '?')}, "
                 f"{recorded.get('implementation', '?')}); replaying on {device.info.label}")
    if saved.message or saved.failure_kind:
        lines.append(f"saved  FAIL ({saved.failure_kind or 'failed'}): {saved.message or '?'}")
    emit(Started())
    ctx = CheckContext(kernel, config, device, saved.wgsl, get_profile(saved.profile or "ci"),
                       open_other=lambda: devices.other(device, job.adapter, limits, width),
                       user_wgsl=saved.user_wgsl)
    outcomes, failures = [], []
    for attempt in range(job.repeat):
        try:
            outcome = check.run_example(ctx, case)
        except KernelError as exc:
            failures.append(f"FAIL  {exc}")
            if job.repeat == 1:
                return Replayed(False, tuple(lines + failures))
            continue
        outcomes.append(outcome)
        emit(Progress(attempt + 1, job.repeat))
    if job.repeat == 1:
        outcome = outcomes[0]
        lines += _metric_lines(outcome)
        lines.append(("PASS" if outcome.passed else "FAIL") + f"  {outcome.message()}")
        cap = None if outcome.passed else _loop_cap(ctx, adapter_record(device), devices, job.adapter,
                                                    device.info.implementation, limits, width)
        trips = cap.reached(case, check) if cap is not None else None
        if trips is not None:
            lines.append(f"      its loops reached this driver's loop cap ({trips} trips in one invocation, counted by "
                         "the kernel itself; lavapipe ends them at 65535, docs/findings.md §9): the driver's limit, "
                         "not the kernel's result; replay it on a GPU")
        return Replayed(outcome.passed, tuple(lines))
    failed = [o for o in outcomes if not o.passed]
    worst = max(outcomes, key=lambda o: (not o.passed, o.score), default=None)
    if worst is not None:
        lines += _metric_lines(worst)
    held = not failed and not failures
    messages = sorted({o.message() for o in failed}) + failures
    counted = f"failed in {len(failed) + len(failures)} of {job.repeat} replays"
    if held and saved.failure_kind == FailureKind.NONDETERMINISTIC.value:
        # The case failed once when saved: a race shows in some schedules only, and the replays
        # run the saved WGSL, so replays that hold clear nothing.
        lines.append(f"NOT REPRODUCED  {counted}; it failed when saved, and a nondeterministic failure (a race or "
                     "uninitialised memory) shows in some runs only, so this is not a pass: run more --repeat, or "
                     "the sanitize check, which sees every access")
        return Replayed(None, tuple(lines))
    lines.append(f"{'PASS' if held else 'FAIL'}  {counted}" + (f": {'; '.join(messages[:3])}" if messages else ""))
    return Replayed(held, tuple(lines))


def replay_implementation(job: ReplayJob, saved: SavedCase, kernel) -> str | None:
    """Where a case replays: the implementation asked for, else the one it was saved on (when it is
    registered here), else the kernel's own (Kernel.implementations), else the default."""
    recorded = saved.adapter.get("implementation") or None
    if job.implementation:
        return job.implementation
    if recorded in implementation_names():
        return recorded
    return (kernel.implementations or (None,))[0]


def _metric_lines(outcome) -> list[str]:
    return [f"  {m.name:8} max abs {m.max_abs:.3g}  max ulp {m.max_ulp:.3g}  rel L2 {m.rel_l2:.3g}  "
            f"max err/budget {m.max_err_over_budget:.3g}  NaN {m.nan_count}  failing {m.failing}/{m.elements}"
            for m in outcome.outputs]


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
    # Ctrl-C reaches every process of the terminal's group: the parent decides what stops (and
    # kills this worker if the run ends), so a worker never dies of it mid-check on its own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def emit(event) -> None:
        protocol.write(encode_event(event) + "\n")
        protocol.flush()

    devices = DeviceCache()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            job = decode_job(line)
        except UsageError as exc:
            emit(Refused(str(exc)))
            continue
        if isinstance(job, ReplayJob):
            _replay_job(job, devices, emit)
        else:
            _check_job(job, devices, emit)
    _leave(protocol)


def _leave(protocol) -> None:
    """Exit at once once the parent closed stdin: every record is sent, nothing is left to do.

    A normal exit finalises the interpreter and lets the drivers tear their devices down: 0.7-1 s
    a worker on lavapipe and about 2.4 s on NVIDIA's Vulkan driver, and the parent waits for each
    worker it closes, the last one after the gate's last record. The system frees the devices
    with the process; the Node processes of Dawn and ONNX Runtime are killed and reaped first
    (they would die with it anyway, PR_SET_PDEATHSIG, but a moment after the parent saw it go)."""
    if "verify.gpu.dawn.process" in sys.modules:
        sys.modules["verify.gpu.dawn.process"].kill_all()
    for stream in (protocol, sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


def _check_job(job: Job, devices: DeviceCache, emit) -> None:
    def finished(record: CheckResult) -> Finished:
        return Finished(job.judged(record))  # how thoroughly, by the check's own level

    try:
        emit(finished(execute(job, devices, emit)))
    except UsageError as exc:
        emit(Refused(str(exc)))
    except KernelError as exc:
        emit(finished(job.result(Verdict.FAIL, str(exc), failure_kind=exc.kind)))
    except InfrastructureError as exc:
        emit(finished(job.result(Verdict.ERROR, infrastructure_reason(exc), failure_kind=exc.kind)))
    except VerifyLimit as exc:
        emit(finished(job.result(Verdict.ERROR, limit_reason(exc), failure_kind=exc.kind)))
    except Exception as exc:
        reason, kind = raised_by(exc, _loaded_kernel(job))
        emit(finished(job.result(Verdict.ERROR, reason, failure_kind=kind, traceback=traceback.format_exc())))


def _loaded_kernel(job: Job):
    """The job's kernel, to say whose code raised (None when it cannot even be loaded)."""
    try:
        return load_kernel(job.kernel_ref)
    except Exception:
        return None


def _replay_job(job: ReplayJob, devices: DeviceCache, emit) -> None:
    try:
        with StageReporter(emit):
            emit(replay(job, devices, emit))
    except UsageError as exc:
        emit(Refused(str(exc)))
    except KernelError as exc:
        emit(Replayed(False, (f"FAIL  {exc}",)))
    except InfrastructureError as exc:
        emit(Replayed(None, (f"ERROR {infrastructure_reason(exc)}",)))
    except Exception as exc:
        emit(Replayed(None, (f"ERROR internal error in verify: {type(exc).__name__}: {exc}",
                             traceback.format_exc())))


if __name__ == "__main__":
    main()
