"""What a run will do, as a list of jobs: one per (kernel, config, check).

`verify check`, `verify gate`, `verify.check` and the pytest plugin's gate items all plan their
work here, so the same arguments give the same jobs (and so the same verdicts) whichever way
the gate is run.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from verify._version import __version__
from verify.checks import get_check
from verify.errors import FailureKind, FeatureMissing, InfrastructureError, SetupError, UsageError
from verify.gpu.device import SUBGROUP_WIDTHS
from verify.gpu.implementations import (
    ADAPTER_ENVIRONMENT,
    default_implementation,
    implementation,
    implementation_names,
)
from verify.kernels.registry import KernelLoadError, KernelSpec, get_kernel, kernel_names, spec_of
from verify.kernels.specialize import check_recorded_config, recorded_config
from verify.prepare import KernelConfig, made_in_order
from verify.profiles import Profile, encode_profile
from verify.protocol import Job
from verify.results.record import CheckResult, Source, Verdict
from verify.results.store import PlanIdentity
from verify.results.thoroughness import Thoroughness
from verify.wgsl import sha256

if TYPE_CHECKING:
    from verify.kernels.contract import Kernel


def _source(spec, kernel) -> Source:
    """Where a kernel's WGSL comes from: another package's kernel, or the kernel's own source."""
    if spec.origin != "built in":
        return Source("package", spec.ref)
    return Source(kernel.source, kernel.source)


def named_list(text: str, option: str, what: str) -> list[str]:
    """The names of a comma-separated option (`--kernels a,b`). An empty one is a usage error: it
    would otherwise select everything, the opposite of what a script that built an empty list
    meant."""
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise UsageError(f"{option} {text!r}: names no {what}; name at least one (or leave the option out for all)")
    return names


def numbered(jobs: list[Job]) -> list[Job]:
    """`jobs` with their ids set to their places in the plan."""
    return [job.with_id(i) for i, job in enumerate(jobs)]


def check_jobs(kernel, overrides: dict | None, *, profile: Profile, examples: int, seed: int, out_dir: Path | None,
               time_limit: float | None, adapter: str | None = None, implementation: str | None = None,
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
    if not instance.checks:
        raise UsageError(f"{instance.name} declares no checks (Kernel.checks): it would verify nothing")
    if checks:
        unknown = [c for c in checks if c not in instance.checks]
        if unknown:
            raise UsageError(f"{instance.name} has no check {', '.join(unknown)}; "
                             f"its checks: {', '.join(instance.checks)}")
    selected = list(dict.fromkeys(checks)) if checks else list(instance.checks)  # in the order asked for
    own = implementation or kernel_implementation(instance, None)
    # A check the kernel routes elsewhere goes to the default implementation (the one that must run
    # here), unless the caller chose an implementation for every check.
    available = (own,) if implementation else (own, default_implementation())
    source = Source("file", wgsl_origin) if wgsl is not None else _source(spec, instance)
    return numbered([Job(0, instance.name, spec.ref, config, check, examples, seed, profile.name, wgsl=wgsl,
                         source=source, out_dir=str(out_dir) if out_dir is not None else None, adapter=adapter,
                         implementation=check_implementation(instance, check, own, available),
                         time_limit=time_limit or profile.time_limit,
                         subgroup_width=subgroup_width, profile_data=encode_profile(profile),
                         weight=profile.examples / max(instance.gate_examples(profile), 1)) for check in selected])


def emulated_widths(instance, config: dict, profile: Profile, wgsl: str | None = None, *,
                    gate: bool = False) -> tuple[int, ...]:
    """The subgroup widths at which a kernel config's width checks (Check.at_every_subgroup_width)
    run again, emulated: the profile's (in a gate, those the kernel chooses of them,
    Kernel.gate_subgroup_widths) for a config built on subgroups whose WGSL (`wgsl`, else the
    kernel's own) reads them (verify.instrument.subgroups.reads_subgroups); none for one that only
    enables them, whose output cannot depend on the width (each width is a new program text, and
    on a software driver its first compile can take minutes)."""
    from verify.instrument.subgroups import reads_subgroups

    config = instance.config(config)
    if "subgroup" not in instance.requirements(config):
        return ()
    widths = tuple(instance.gate_subgroup_widths(profile) if gate else profile.subgroup_widths)
    if not widths or not any(reads_subgroups(module) for module in instance.modules(
            wgsl if wgsl is not None else instance.wgsl(config))):
        return ()
    return widths


def width_jobs(kernel, overrides: dict | None, planned: list[Job], **options) -> list[Job]:
    """For a kernel config built on subgroups, the `planned` checks that run at every subgroup width
    (Check.at_every_subgroup_width) again at each of the profile's widths, emulated (emulated_widths:
    none where the WGSL never reads its subgroups), so an edit to a 16- or 64-lane branch is checked
    on an adapter of another width."""
    instance = get_kernel(kernel)
    config = planned[0].config if planned else instance.config(overrides)
    checks = [job.check for job in planned if get_check(job.check).at_every_subgroup_width]
    if not checks:
        return []
    return [job for width in emulated_widths(instance, config, options["profile"], options.get("wgsl"))
            for job in check_jobs(kernel, config, checks=checks, subgroup_width=width, **options)]


def skipped(kernel: str, reason: str, *, kernel_ref: str = "", profile: Profile | None = None, seed: int = 0,
            source: Source | None = None) -> CheckResult:
    """The SKIP record of something a plan cannot run here (no job is made for it)."""
    return CheckResult(kernel=kernel, check="*", config={}, verdict=Verdict.SKIP, reason=reason, kernel_ref=kernel_ref,
                       profile=profile.name if profile is not None else "", seed=seed, source=source,
                       thoroughness=Thoroughness.NOT_RUN)


def broken(kernel: str, reason: str, *, kernel_ref: str = "", profile: Profile | None = None,
           seed: int = 0) -> CheckResult:
    """The ERROR record of a kernel whose own code cannot even be planned (a broken package)."""
    return CheckResult(kernel=kernel, check="*", config={}, verdict=Verdict.ERROR, reason=reason, kernel_ref=kernel_ref,
                       profile=profile.name if profile is not None else "", seed=seed,
                       failure_kind=FailureKind.KERNEL_CODE, thoroughness=Thoroughness.NOT_RUN)


def gate_jobs(kernels: list | None, *, profile: Profile, seed: int, out_dir: Path | None, time_limit: float | None,
              adapter: str | None = None, implementations: list | None = None,
              unavailable: tuple = (), unplanned: list | None = None,
              workers: int = 1) -> tuple[list[Job], list[CheckResult]]:
    """The gate's jobs for `kernels` (default: every kernel by name), and a SKIP result for each
    kernel whose configs cannot be built on this machine (e.g. apache-tvm missing).

    A kernel's examples (Kernel.gate_examples: the profile's unless the kernel says otherwise) are
    shared among its gate configs: ceil(examples / configs) each.
    `implementations` (default: the default one) are the WebGPU implementations to run on: the
    first runs every check of the kernel; each further one runs the checks that run on every
    implementation (Check.on_every_implementation; every check under a profile that says so), and
    a check that compares implementations (Check.needs_other_implementation) runs only when there
    are several. A kernel that runs only on implementations in `unavailable` (those the machine
    lacks) is a SKIP record. With `unplanned` (a list: the user chose the implementations), a kernel
    meant only for implementations not chosen is not planned; its name and theirs go into the list.
    A kernel built on subgroups also runs the checks that say so
    (Check.at_every_subgroup_width) at each of the profile's subgroup widths, emulated.
    Planning makes the WGSL of every config it plans (the plan's identity hashes it): a kernel
    whose WGSL cannot be made here (apache-tvm or ORT missing) is a SKIP record, one whose WGSL
    refuses a config an ERROR record. Once one config's WGSL takes long to make (not kept on this
    machine yet: an ORT capture), the configs left are made in `workers` processes at once first
    (verify.prepare).
    """
    implementations = list(implementations or [None])
    planned: list = []  # in kernel order: a _Planned kernel, or the SKIP/ERROR record of one
    for name in kernels or kernel_names():
        spec, instance = spec_of(name), None
        try:
            instance = get_kernel(name)
            source = _source(spec, instance)
            configs = instance.gate_configs(profile)
        except KernelLoadError as exc:  # a broken package is an error of that kernel; the others still run
            planned.append(broken(spec.name, str(exc), kernel_ref=spec.ref, profile=profile, seed=seed))
            continue
        except SetupError as exc:  # what it needs is missing here (apache-tvm, a cache): not verified
            planned.append(skipped(spec.name, str(exc), kernel_ref=spec.ref, profile=profile, seed=seed,
                                   source=_source(spec, instance) if instance is not None else None))
            continue
        except UsageError as exc:
            planned.append(broken(spec.name, f"{spec.name}: its gate configs are refused: {exc}",
                                  kernel_ref=spec.ref, profile=profile, seed=seed))
            continue
        except Exception as exc:
            planned.append(broken(spec.name, f"{spec.name}: gate_configs() in {spec.provenance} raised "
                                  f"{type(exc).__name__}: {exc}", kernel_ref=spec.ref, profile=profile, seed=seed))
            continue
        if not configs:  # the kernel leaves this profile to others (its gate_configs say why)
            continue
        declared = tuple(instance.implementations or ())
        if unplanned is not None and declared and not set(declared) & set(implementations):
            unplanned.append((instance.name, declared))
            continue
        runs_on = kernel_implementations(instance, implementations)
        if runs_on[0] in unavailable:
            planned.append(skipped(instance.name, f"{instance.name} runs on {' or '.join(instance.implementations)} "
                                   "only, which cannot run here", kernel_ref=spec.ref, profile=profile, seed=seed,
                                   source=source))
            continue
        planned.append(_Planned(name, spec, instance, source, configs, runs_on))
    planned = _with_wgsl(planned, workers, profile=profile, seed=seed)

    jobs = []
    for entry in planned:
        if isinstance(entry, CheckResult):
            continue
        name, instance, configs = entry.name, entry.instance, entry.configs
        per_config = max(1, math.ceil(instance.gate_examples(profile) / len(configs)))
        primary, others = entry.runs_on[0], entry.runs_on[1:]
        available = tuple(default_implementation() if i is None else i for i in implementations)
        checks = [c for c in map(get_check, instance.checks) if c.gate_scales is None or profile.scale in c.gate_scales]
        # A check comparing implementations runs wherever the run has a second one, also for a
        # kernel meant for one implementation only (ORT's on Dawn against wgpu's Naga).
        compared = len(set(available) | {primary or default_implementation()}) > 1
        main_checks = [c.name for c in checks if not c.needs_other_implementation or compared]
        other_checks = [c.name for c in checks if not c.needs_other_implementation and
                        (profile.every_check_on_every_implementation or c.on_every_implementation)]
        width_checks = [c.name for c in checks if c.at_every_subgroup_width]
        for config in configs:
            heavier = program_weight(instance, config)

            def plan(checks, name=name, config=config, per_config=per_config, heavier=heavier, **options):
                return [replace(job, weight=job.weight * heavier) for job in
                        check_jobs(name, config, profile=profile, examples=per_config, seed=seed, out_dir=out_dir,
                                   time_limit=time_limit, adapter=adapter, checks=checks, **options)]
            for check in main_checks:  # one at a time: a check the kernel routes elsewhere goes there
                jobs += plan([check], implementation=check_implementation(instance, check, primary, available))
            for other in others:
                if other_checks:
                    jobs += plan(other_checks, implementation=other)
            # A kernel that reads its subgroups runs at the widths real GPUs have, emulated on any adapter.
            emulated_on = (instance.emulated_implementation if instance.emulated_implementation in available
                           else primary)
            for width in emulated_widths(instance, config, profile, gate=True) if width_checks else ():
                jobs += plan(width_checks, implementation=emulated_on, subgroup_width=width)
    skips = [entry for entry in planned if isinstance(entry, CheckResult)]
    return numbered(jobs), skips


#: The WGSL of a usual kernel config, in characters (all its modules): program_weight's unit.
USUAL_PROGRAM_CHARS = 10_000


def program_weight(kernel, config: dict) -> float:
    """How much one example of `config` costs against a usual kernel's, by its program's size
    (its modules' WGSL, in USUAL_PROGRAM_CHARS; 1 where the WGSL cannot be read): sanitizing,
    compiling and analysing a program grow with it, and so do the checks of the large kernels
    that write it (measured on the `ci` gate's corners: the `sanitize` checks' seconds follow
    their WGSL's size, correlation 0.7 on an H100, from 0.04 s for a 3.5 kB program to 4-7 s for
    TVM's 22-45 kB prefill and tree programs). Used only to order jobs where no earlier run timed
    them (longest_first)."""
    try:
        chars = sum(len(module) for module in kernel.modules(kernel.wgsl(config)))
    except Exception:  # noqa: BLE001 - the order only; planning reports a WGSL that cannot be made
        return 1.0
    return max(chars, 1) / USUAL_PROGRAM_CHARS


@dataclass(frozen=True)
class _Planned:
    """A kernel the gate plans: its configs and the implementations it runs on (default first)."""

    name: str
    spec: KernelSpec
    instance: Kernel
    source: Source
    configs: list
    runs_on: list


def _with_wgsl(planned: list, workers: int, *, profile: Profile, seed: int) -> list:
    """`planned` with each kernel whose WGSL cannot be made for one of its configs replaced by its
    SKIP record (what it needs is missing here: apache-tvm, ORT) or ERROR record (the config is
    refused, or wgsl() raised); a config that needs a feature its runtime's adapter lacks
    (FeatureMissing: ORT's f16 programs where Dawn offers no shader-f16) is a SKIP of that config
    alone, and the kernel keeps its other configs. Slow WGSL (not kept on this machine yet) is made in `workers`
    processes at once (verify.prepare)."""
    kernels = [entry for entry in planned if isinstance(entry, _Planned)]
    failed: dict[str, CheckResult] = {}
    #: Configs that need a feature the adapter of the kernel's own runtime lacks: kernel -> SKIP records.
    lacking: dict[str, list[CheckResult]] = {}
    for entry, config in made_in_order([(kernel, config) for kernel in kernels for config in kernel.configs],
                                       lambda item: KernelConfig(item[0].spec.ref, item[0].instance.name, item[1]),
                                       workers):
        if entry.name in failed:
            continue
        spec, instance = entry.spec, entry.instance
        try:
            instance.wgsl(config)
        except FeatureMissing as exc:  # this config only: the kernel's others still run
            lacking.setdefault(entry.name, []).append(replace(
                skipped(spec.name, str(exc), kernel_ref=spec.ref, profile=profile, seed=seed, source=entry.source),
                config=dict(config)))
        except SetupError as exc:
            failed[entry.name] = skipped(spec.name, str(exc), kernel_ref=spec.ref, profile=profile, seed=seed,
                                         source=entry.source)
        except UsageError as exc:
            failed[entry.name] = broken(spec.name, f"{spec.name}: its gate configs are refused: {exc}",
                                        kernel_ref=spec.ref, profile=profile, seed=seed)
        except InfrastructureError as exc:  # what makes the WGSL (ORT's Node) died: not the kernel's code
            failed[entry.name] = replace(broken(spec.name, f"{spec.name}: making its WGSL: {exc} (what runs the "
                                                "kernel broke, not the kernel: no verdict on it)", kernel_ref=spec.ref,
                                                profile=profile, seed=seed), failure_kind=exc.kind)
        except Exception as exc:
            failed[entry.name] = broken(spec.name, f"{spec.name}: wgsl() in {spec.provenance} raised "
                                        f"{type(exc).__name__}: {exc}", kernel_ref=spec.ref, profile=profile,
                                        seed=seed)
    kept: list = []
    for entry in planned:
        if not isinstance(entry, _Planned):
            kept.append(entry)
        elif entry.name in failed:
            kept.append(failed[entry.name])
        else:
            skips = lacking.get(entry.name, [])
            configs = [c for c in entry.configs if dict(c) not in [s.config for s in skips]]
            kept += ([replace(entry, configs=configs)] if configs else []) + skips
    return kept


@dataclass(frozen=True)
class ImplementationChoice:
    """The implementations a gate runs on (default first), and those that cannot run here with why."""

    run_on: tuple[str, ...]
    unavailable: dict = field(default_factory=dict)
    #: The adapters each implementation of run_on offers here (AdapterInfo tuples), as listed
    #: while choosing: every job's inputs name its adapter (with_inputs), and listing them again
    #: costs a second each (Dawn's starts a Node process). An implementation whose listing
    #: failed is absent.
    adapters: dict = field(default_factory=dict)

    def skips(self) -> list[CheckResult]:
        """A SKIP record per implementation that cannot run here (a skip fails the gate unless
        --allow-skip), not a silent omission."""
        return [skipped("*", f"the {name} implementation cannot run here, so no kernel ran on it: {reason}")
                for name, reason in self.unavailable.items()]

    def require_adapter(self, name: str, adapter: str | None) -> None:
        """SetupError (one line) unless implementation `name` offers an adapter matching `adapter`
        here (Implementation.available, from the adapters listed already where they were)."""
        chosen = implementation(name)
        if name in self.adapters:
            chosen.require_adapter(self.adapters[name], adapter)
        else:
            chosen.available(adapter)


def gate_implementations(chosen: str | None, adapter: str | None) -> ImplementationChoice:
    """The implementations the gate runs on: the chosen one, else every registered one (browsers
    ship several), default first; the default must be able to run here (SetupError otherwise).
    Their adapters are listed at once, each in a thread: wgpu's while Dawn's Node process starts."""
    names = [implementation(chosen).name] if chosen else implementation_names()
    listed = _adapters_listed(names)
    if chosen:
        return ImplementationChoice(tuple(names), adapters={n: a for n, a in listed.items() if isinstance(a, tuple)})
    run_on, unavailable = [], {}
    for position, name in enumerate(names):
        try:
            found = listed[name]
            if isinstance(found, SetupError):
                raise found
            implementation(name).require_adapter(found, adapter)
            run_on.append(name)
        except SetupError as exc:
            if position == 0:
                raise  # nothing can be verified without the default implementation
            unavailable[name] = str(exc)
    return ImplementationChoice(tuple(run_on), unavailable, {name: listed[name] for name in run_on})


def _adapters_listed(names: list[str]) -> dict:
    """name -> the implementation's adapters (a tuple), or the SetupError that says why it has none."""
    from concurrent.futures import ThreadPoolExecutor

    def listing(name: str):
        try:
            return tuple(implementation(name).adapters())
        except SetupError as exc:
            return exc

    if len(names) == 1:
        return {names[0]: listing(names[0])}
    with ThreadPoolExecutor(len(names)) as pool:
        return dict(zip(names, pool.map(listing, names)))


def kernel_implementation(kernel, chosen: str | None) -> str | None:
    """The implementation a kernel's jobs run on: `chosen` (the run's), unless the kernel declares
    the WebGPU implementations it runs on (`Kernel.implementations`, e.g. ORT's kernels: ("dawn",))
    and the run's is not among them, or the run names none; then the kernel's first. `verify check
    --implementation NAME` passes NAME explicitly and is honoured (a kernel another compiler
    cannot compile then reports its compile divergence)."""
    return kernel_implementations(kernel, [chosen])[0]


def check_implementation(kernel, check: str, own: str | None, available: tuple) -> str | None:
    """The implementation one of a kernel's checks runs on: `own` (the kernel's in this run), unless
    the kernel routes the check to another (Kernel.check_implementations) and that one is
    `available` in this run; ORT's attention programs route `sanitize` to wgpu, whose Naga compiles
    their instrumented programs in seconds where Tint took over 40 minutes on lavapipe."""
    routed = dict(kernel.check_implementations or {}).get(check)
    if routed is None or own is None:
        return own
    return implementation(routed).name if routed in available else own


def kernel_implementations(kernel, implementations: list) -> list:
    """The gate's implementations a kernel runs on, first the one that runs all its checks:
    `implementations` in order, or, for a kernel that declares its own (`Kernel.implementations`),
    those of them it declares, else its first one (ORT's kernels run on Dawn even in a gate that
    runs on wgpu only)."""
    declared = tuple(kernel.implementations or ())
    if not declared:
        return list(implementations)
    return [i for i in implementations if i is not None and implementation(i).name in declared] or [declared[0]]


def wgsl_sha256(job: Job, cache: dict) -> str:
    """The sha256 of the WGSL a job runs (its user's file, else its kernel's for its config)."""
    if job.wgsl is not None:
        return sha256(job.wgsl)
    key = (job.kernel_ref, json.dumps(job.config, sort_keys=True, default=str))
    if key not in cache:
        kernel = get_kernel(job.kernel_ref)
        cache[key] = sha256(kernel.wgsl(kernel.config(job.config)))
    return cache[key]


def plan_identity(jobs: list[Job], skipped: list, profile: Profile, seed: int) -> PlanIdentity:
    """The plan's fingerprint: every job's identity, the sha256 of the WGSL it runs, the profile,
    the seed and verify's version; shards of one gate share it, shards of anything else do not
    (verify.results.merge)."""
    digest = hashlib.sha256(f"{__version__}|{profile.name}|{seed}".encode())
    wgsl: dict[tuple, str] = {}
    for job in jobs:
        text_hash = wgsl_sha256(job, wgsl)
        digest.update(json.dumps([job.id, job.kernel, job.kernel_ref, job.check, job.config, job.implementation,
                                  job.subgroup_width, job.examples, text_hash], sort_keys=True, default=str).encode())
    for record in skipped:
        digest.update(f"skip|{record.kernel}|{record.reason}".encode())
    return PlanIdentity(digest.hexdigest(), len(jobs), len(skipped))


def with_inputs(jobs: list[Job], adapter: str | None, listed: dict | None = None) -> list[Job]:
    """`jobs` with the digest of their inputs (verify.results.reuse.inputs_digest), for reusing
    passing records of an earlier run; `listed` holds adapters listed already
    (ImplementationChoice.adapters)."""
    from dataclasses import replace

    from verify.results.reuse import inputs_digest

    wgsl: dict[tuple, str] = {}
    others: dict[tuple, tuple] = {}
    adapters: dict = {}
    found = []
    for job in jobs:
        name = job.implementation or default_implementation()
        if name not in adapters:
            adapters[name] = adapter_identity(name, adapter, (listed or {}).get(name))
        text = wgsl_sha256(job, wgsl)
        key = (job.kernel_ref, job.check, json.dumps(job.config, sort_keys=True, default=str))
        if key not in others:
            kernel = get_kernel(job.kernel_ref)
            try:
                others[key] = tuple(sha256(text) for text in get_check(job.check).other_wgsl(kernel,
                                                                                             kernel.config(job.config)))
            except (UsageError, SetupError):  # the check cannot launch them here: its own record says so
                others[key] = ("unavailable",)
        if others[key]:  # the other kernels' WGSL the check launches decides its verdict too
            text = sha256("|".join((text,) + others[key]))
        # What runs it too: the implementation, and the machinery that turns examples into a verdict
        # (the runner, and the worker that applies findings and the driver's loop cap).
        code = (*get_check(job.check).code_modules(), type(implementation(name)).__module__, *VERDICT_MACHINERY)
        found.append(replace(job, inputs=inputs_digest(job, text, adapters[name], code)))
    return found


#: The modules that judge every check's examples whatever the check (verify.results.reuse: a record
#: is reused only while their code, and all they import, is unchanged).
VERDICT_MACHINERY = ("verify.checks.runner", "verify.worker")


def adapter_identity(name: str, adapter: str | None, found=None) -> dict:
    """The adapter an implementation runs on here, as a reused record must match it: its name,
    backend and driver (whose text names the driver's version), and the versions of the
    implementation's stack (verify.results.reuse.stack_versions); `found`: its adapters, where
    listed already."""
    from verify.results.reuse import stack_versions

    wanted = adapter if adapter is not None else os.environ.get(ADAPTER_ENVIRONMENT) or ""
    for info in found if found is not None else implementation(name).adapters():
        if info.matches(wanted):
            return {"implementation": name, "name": info.name, "backend": info.backend, "driver": info.driver,
                    "implementation_version": getattr(info, "implementation_version", ""),
                    "versions": stack_versions(name)}
    return {"implementation": name, "adapter": wanted, "versions": stack_versions(name)}


def sliced(jobs: list[Job], slice_examples: int | None) -> list[Job]:
    """`jobs`, each drawing more than `slice_examples` examples split into slices of about that many
    (Job.slice: its share of the examples and a seed stream of its own), so N workers stay busy to
    the end of a run instead of waiting on a few long checks. The slices keep their job's id; their
    records merge into one (verify.results.slices). A check whose examples are capped
    (Check.max_examples) is never split. None: nothing is split."""
    from dataclasses import replace

    if not slice_examples:
        return list(jobs)
    found = []
    for job in jobs:
        cap = get_check(job.check).max_examples
        count = -(-job.examples // slice_examples)
        if count < 2 or (cap is not None and cap <= slice_examples):
            found.append(job)
            continue
        shares = [job.examples // count + (k < job.examples % count) for k in range(count)]
        found += [replace(job, examples=share, slice=(k + 1, count)) for k, share in enumerate(shares)]
    return found


#: Random examples in each part of a budgeted check: the unit a budget is spent in (small, so a
#: budget ends within seconds of its time, and every check gets a share before any gets a second).
BUDGET_PART_EXAMPLES = 10


def budgeted(jobs: list[Job], history: dict | None = None) -> list[Job]:
    """`jobs` as a budgeted gate runs them (`verify gate --budget`): each check split into its
    corners part (its explicit cases alone: the kernel's corners and its findings' cases; slice 0)
    and parts of BUDGET_PART_EXAMPLES random examples (slices 1..), each with a seed stream of its own.

    The order is the plan: every corners part first (longest first), then the random parts in
    rounds (every check's first part, then every check's second, ...: the checks with the fewest
    examples so far go next), longest first within a round. A budget stops issuing random parts
    once it is spent (verify.session), never corners nor the first part of a check whose corners
    ran no example (no check passes on none), so the same seed and budget on the same
    machine give the same parts, and a faster machine runs a longer prefix of the same sequence.
    The parts of a check merge into its one record (verify.results.slices)."""
    from dataclasses import replace

    corners: list[Job] = []
    rounds: dict[int, list[Job]] = {}
    for job in jobs:
        cap = get_check(job.check).max_examples
        examples = min(job.examples, cap) if cap is not None else job.examples
        count = -(-examples // BUDGET_PART_EXAMPLES)
        n = count + 1
        corners.append(replace(job, part="corners", examples=0, slice=(0, n)))
        shares = [examples // count + (k < examples % count) for k in range(count)] if count else []
        for k, share in enumerate(shares, 1):
            rounds.setdefault(k, []).append(replace(job, part="random", examples=share, slice=(k, n)))
    ordered = longest_first(corners, history)
    for k in sorted(rounds):
        ordered += longest_first(rounds[k], history)
    return ordered


#: The explicit cases a corners part runs, as longest_first guesses where no earlier run timed it
#: (a kernel's corners and its findings' cases: 2 to 15 in verify's kernels).
CORNERS_GUESS = 8


def longest_first(jobs: list[Job], history: dict | None = None) -> list[Job]:
    """The order to run jobs in: the longest first, by their durations in an earlier run (`history`:
    (kernel, check, config, implementation, subgroup width) -> seconds) where known, else by the
    examples they run (a corners part: CORNERS_GUESS) times what each costs: their weight
    (Job.weight: a kernel taking fewer examples, or with a larger program, says each costs more) and
    their check's Check.example_cost (a sanitized example costs tens of plain ones); the plan's
    order breaks ties. Records still come out in plan order (ids).

    The longest first matters most where workers are many: on 16 cores the `ci` gate's corners
    without an earlier run ended with a tail of TVM's sanitized prefill checks (4-7 s each) that
    the plan's kernel order had started last."""
    def key(job):
        past = (history or {}).get(job_key(job))
        per_slice = past / job.slice[1] if past is not None and job.slice else past
        if per_slice is None:
            check = get_check(job.check)
            examples = CORNERS_GUESS if job.part == "corners" else min(job.examples, check.max_examples or job.examples)
            per_slice = examples * check.example_cost * job.weight * 1e-3
        return (-per_slice, job.id)
    return sorted(jobs, key=key)


def job_key(job_or_record) -> tuple:
    """What identifies a check across runs, for a job or a record."""
    if isinstance(job_or_record, Job):
        implementation = job_or_record.implementation or default_implementation()
    else:
        adapter = job_or_record.adapter
        implementation = adapter.implementation if adapter is not None else ""
    return (job_or_record.kernel, job_or_record.check, json.dumps(job_or_record.config, sort_keys=True, default=str),
            implementation or "", job_or_record.subgroup_width)


def compile_group(job: Job) -> tuple:
    """The jobs whose first example compiles the same pipelines: the checks of one kernel, config
    and subgroup width (on any implementation: the `implementations` check compiles on both), a
    check launching a module of its own (Check.own_module) apart. The gate holds a job back while
    another of its group compiles (verify.session), so that on a cold shader cache the second
    finds the driver's cached pipelines instead of compiling the same program at the same time."""
    check = get_check(job.check)
    return (job.kernel, json.dumps(job.config, sort_keys=True, default=str), job.subgroup_width,
            job.check if check.own_module else "")


def select_shard(jobs: list[Job], index: int, count: int) -> list[Job]:
    """Shard `index` (1-based) of `count`: every count-th job, starting at the index-th.

    Deterministic (the same plan gives the same shards on every machine) and balanced: a
    kernel's configs and checks sit next to each other in the plan, so each shard gets a slice
    of every kernel rather than whole expensive kernels.
    """
    if not 1 <= index <= count:
        raise UsageError(f"shard {index}/{count}: expected 1 <= K <= N")
    if count > max(len(jobs), 1):
        raise UsageError(f"shard {index}/{count}: the plan has {len(jobs)} jobs, so a split into more than "
                         f"{max(len(jobs), 1)} shards leaves shards with nothing to run")
    return jobs[index - 1 :: count]


def _validate_user_wgsl(kernel, config: dict, text: str, origin: str) -> None:
    from verify.wgsl import read_interface

    if not kernel.modules(text):
        raise UsageError(f"{kernel.name} compiles no WGSL of its own (its source runs its programs itself), "
                         "so --wgsl does not apply to it")
    check_recorded_config(text, config, origin)
    for module in kernel.modules(text):
        entries = read_interface(module).entry_points
        if len(entries) != 1:
            raise UsageError(f"{origin}: a module must have exactly one @compute entry point; it has "
                             f"{len(entries)} ({', '.join(e.name for e in entries) or 'none'})")
    want = [name for module in kernel.modules(kernel.wgsl(config)) for name in read_interface(module).names]
    have = [name for module in kernel.modules(text) for name in read_interface(module).names]
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
