"""What a run will do, as a list of jobs: one per (kernel, config, check).

`verify check`, `verify gate`, `verify.check` and the pytest plugin's gate items all plan their
work here, so the same arguments give the same jobs (and so the same verdicts) whichever way
the gate is run.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from verify.errors import UsageError
from verify.kernels.registry import get_kernel, kernel_names, spec_of
from verify.kernels.specialize import check_recorded_config, recorded_config
from verify.profiles import Profile
from verify.results.record import CheckResult, Source, Verdict
from verify.session import Job

#: Subgroup widths WebGPU allows (subgroupMinSize >= 4, subgroupMaxSize <= 128).
SUBGROUP_WIDTHS = (4, 8, 16, 32, 64, 128)
#: The checks a kernel runs again at each emulated subgroup width of the gate.
WIDTH_CHECKS = ("reference",)


def _source_kind(spec) -> str:
    return "package" if spec.origin != "built in" else ""


def check_jobs(kernel, overrides: dict | None, *, profile: Profile, examples: int, seed: int, out_dir: Path | None,
               time_limit: float | None, adapter: str | None = None, backend: str | None = None,
               checks: list[str] | None = None, wgsl: str | None = None, wgsl_origin: str = "",
               subgroup_width: int | None = None) -> list[Job]:
    """The jobs of `verify check KERNEL`: each of the kernel's checks (or `checks`) on one config.

    `wgsl` replaces the kernel's own WGSL (a user's file under the kernel's contract): its
    recorded config is used unless `overrides` says otherwise, and its bindings must match.
    """
    spec = spec_of(kernel)
    instance = get_kernel(kernel)
    if examples < 1:
        raise UsageError(f"--examples must be at least 1 (got {examples})")
    if subgroup_width is not None and subgroup_width not in SUBGROUP_WIDTHS:
        raise UsageError(f"--subgroup-width {subgroup_width}: expected one of {', '.join(map(str, SUBGROUP_WIDTHS))} "
                         "(WebGPU's subgroups have 4 to 128 lanes, a power of two)")
    overrides = dict(overrides or {})
    if wgsl is not None:
        keys = {k.name for k in instance.config_keys}
        recorded = {k: v for k, v in (recorded_config(wgsl) or {}).items() if k in keys}
        overrides = {**recorded, **overrides}
    config = instance.config(overrides)
    if wgsl is not None:
        _validate_user_wgsl(instance, config, wgsl, wgsl_origin or "the WGSL")
    if checks:
        unknown = [c for c in checks if c not in instance.checks]
        if unknown:
            raise UsageError(f"{instance.name} has no check {', '.join(unknown)}; its checks: {', '.join(instance.checks)}")
    selected = list(dict.fromkeys(checks)) if checks else list(instance.checks)  # in the order asked for
    backend = backend or kernel_backend(instance, None)
    kind = "file" if wgsl is not None else (_source_kind(spec) or instance.source)
    origin = wgsl_origin if wgsl is not None else (spec.ref if kind == "package" else instance.source)
    return [Job(instance.name, spec.ref, config, check, examples, seed, profile.name, wgsl=wgsl, source_kind=kind,
                origin=origin, out_dir=str(out_dir) if out_dir is not None else None, adapter=adapter, backend=backend,
                time_limit=time_limit or profile.time_limit, subgroup_width=subgroup_width) for check in selected]


def gate_jobs(kernels: list | None, *, profile: Profile, seed: int, out_dir: Path | None, time_limit: float | None,
              adapter: str | None = None, backend: str | None = None,
              backends: list | None = None,
              unavailable_backends: tuple = ()) -> tuple[list[Job], list[CheckResult]]:
    """The gate's jobs for `kernels` (default: every kernel by name), and a SKIP result for each
    kernel whose configs cannot be built on this machine (e.g. apache-tvm missing).

    A kernel's examples are shared among its gate configs: ceil(profile.examples / configs) each.
    `backends` (default: [`backend`]) are the WebGPU implementations to run on: the first runs
    every check of the kernel; each other one runs the profile's `other_backend_checks`, and the
    `implementations` check (which compares the first with the others) runs only when there are
    several. A kernel that runs only on implementations in `unavailable_backends` (those the
    machine lacks) is a SKIP record.
    """
    backends = list(backends or [backend])
    jobs, skipped = [], []
    for name in kernels or kernel_names():
        spec = spec_of(name)
        instance = get_kernel(name)
        try:
            configs = instance.gate_configs(profile)
        except UsageError as exc:
            skipped.append(CheckResult(kernel=instance.name, check="*", config={}, verdict=Verdict.SKIP,
                                       reason=str(exc), kernel_ref=spec.ref, profile=profile.name, seed=seed,
                                       source=Source(_source_kind(spec) or instance.source)))
            continue
        per_config = max(1, math.ceil(profile.examples / len(configs)))
        runs_on = kernel_backends(instance, backends)
        if runs_on[0] in unavailable_backends:
            skipped.append(CheckResult(
                kernel=instance.name, check="*", config={}, verdict=Verdict.SKIP, kernel_ref=spec.ref,
                profile=profile.name, seed=seed, source=Source(_source_kind(spec) or instance.source),
                reason=f"{instance.name} runs on {' or '.join(instance.backends)} only, which cannot run here"))
            continue
        primary, others = runs_on[0], runs_on[1:]
        main_checks = [c for c in instance.checks if c != "implementations" or others]
        other_checks = [c for c in instance.checks if c != "implementations" and
                        (profile.other_backend_checks is None or c in profile.other_backend_checks)]
        for config in configs:
            jobs += check_jobs(name, config, profile=profile, examples=per_config, seed=seed, out_dir=out_dir,
                               time_limit=time_limit, adapter=adapter, backend=primary, checks=main_checks)
            for other in others:
                if other_checks:
                    jobs += check_jobs(name, config, profile=profile, examples=per_config, seed=seed,
                                       out_dir=out_dir, time_limit=time_limit, adapter=adapter, backend=other,
                                       checks=other_checks)
            # A kernel built on subgroups runs at the widths real GPUs have, emulated on any adapter.
            if "subgroup" in instance.requirements(instance.config(config)):
                for width in profile.subgroup_widths:
                    jobs += check_jobs(name, config, profile=profile, examples=per_config, seed=seed,
                                       out_dir=out_dir, time_limit=time_limit, adapter=adapter, backend=primary,
                                       checks=list(WIDTH_CHECKS), subgroup_width=width)
    return jobs, skipped


def gate_backends(chosen: str | None, adapter: str | None) -> tuple[list[str], list]:
    """The implementations the gate runs on: the chosen one, else both wgpu and Dawn (browsers
    run both). One that cannot run here is a SKIP record saying why (a skip fails the gate unless
    --allow-skip), not a silent omission."""
    from verify.errors import SetupError
    from verify.gpu.backends import ensure_available
    from verify.results.record import CheckResult, Verdict

    if chosen or os.environ.get("VERIFY_BACKEND"):
        return [chosen or os.environ["VERIFY_BACKEND"]], []
    backends, unavailable = ["wgpu"], []
    try:
        ensure_available("dawn", adapter)
        backends.append("dawn")
    except SetupError as exc:
        unavailable.append(CheckResult(kernel="*", check="*", config={}, verdict=Verdict.SKIP,
                                       reason=f"the dawn backend cannot run here, so no kernel ran on Dawn/Tint: {exc}"))
    return backends, unavailable


def kernel_backend(kernel, backend: str | None) -> str | None:
    """The backend a kernel's jobs run on: `backend` (the run's), unless the kernel declares the
    WebGPU implementations it runs on (`Kernel.backends`, e.g. ORT's kernels: ("dawn",)) and the
    run's is not among them, or the run names none; then the kernel's first. `verify check
    --backend B` passes B explicitly and is honoured (a kernel Naga cannot compile then reports
    its compile divergence)."""
    return kernel_backends(kernel, [backend])[0]


def kernel_backends(kernel, backends: list) -> list:
    """The gate's implementations a kernel runs on, first the one that runs all its checks:
    `backends` in order, or, for a kernel that declares its own (`Kernel.backends`), those of
    them it declares, else its first one (ORT's kernels run on Dawn even in a gate on wgpu)."""
    declared = tuple(getattr(kernel, "backends", ()) or ())
    if not declared:
        return list(backends)
    from verify.gpu.backends import backend_named

    return [b for b in backends if b is not None and backend_named(b).value in declared] or [declared[0]]


def select_shard(jobs: list[Job], index: int, count: int) -> list[Job]:
    """Shard `index` (1-based) of `count`: every count-th job, starting at the index-th.

    Deterministic (the same plan gives the same shards on every machine) and balanced: a
    kernel's configs and checks sit next to each other in the plan, so each shard gets a slice
    of every kernel rather than whole expensive kernels.
    """
    if not 1 <= index <= count:
        raise UsageError(f"shard {index}/{count}: expected 1 <= K <= N")
    return jobs[index - 1 :: count]


def _validate_user_wgsl(kernel, config: dict, text: str, origin: str) -> None:
    from verify.wgsl import read_interface

    if not kernel.modules(text):
        raise UsageError(f"{kernel.name} compiles no WGSL of its own (its source runs its programs itself), "
                         "so --wgsl does not apply to it")
    check_recorded_config(text, config, origin)
    want = read_interface(kernel.wgsl(config)).names
    have = read_interface(text).names
    if sorted(want) != sorted(have):
        raise UsageError(f"{origin}: bindings {sorted(have)} do not match {kernel.name}'s contract {sorted(want)}")


def read_wgsl(path: str | os.PathLike) -> str:
    """A user's WGSL file; UsageError if it cannot be read or is not text."""
    try:
        data = Path(path).read_bytes()
    except IsADirectoryError:
        raise UsageError(f"{path}: is a folder, not a WGSL file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot read WGSL ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not a WGSL text file (not UTF-8: byte {exc.start})") from None
    if "\x00" in text:
        raise UsageError(f"{path}: not a WGSL text file (it contains NUL bytes)")
    return text
