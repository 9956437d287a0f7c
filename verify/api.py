"""`verify.check`: property-test a kernel from Python, with the same jobs, worker and time limit
as `verify check`."""

from __future__ import annotations

import atexit
import os
import tempfile
import threading
from pathlib import Path

from verify.errors import UsageError
from verify.gpu.implementations import chosen_implementation
from verify.plan import read_wgsl
from verify.profiles import Profile, get_profile
from verify.results.record import CheckResult, CheckResults
from verify.run import plan_check

_session = None
_session_lock = threading.Lock()
_devices = None


def _shared_session():
    """One worker process for every isolated check of this process, stopped at exit."""
    global _session
    with _session_lock:
        if _session is None:
            from verify.session import Session

            _session = Session()
            atexit.register(_session.close)
        return _session


def default_out_dir() -> Path:
    """Where failing cases go when no folder is named: verify-<uid> in the temporary folder."""
    return Path(tempfile.gettempdir()) / f"verify-{os.getuid() if hasattr(os, 'getuid') else 'user'}"


def check(kernel, config: dict | None = None, *, checks=None, examples: int | None = None, seed: int = 0,
          profile: str | Profile = "ci", adapter: str | None = None, implementation: str | None = None,
          wgsl: str | os.PathLike | None = None, isolate: bool = True, time_limit: float | None = None,
          out_dir: str | os.PathLike | None = None, subgroup_width: int | None = None) -> CheckResults:
    """Property-test `kernel` on this machine's WebGPU adapter; one CheckResult per check.

    kernel:     a registered name ("decode.tiled"), an import path ("my_pkg.kernels:RmsNorm"),
                or a Kernel subclass (it must be importable by its module path when isolated).
    config:     config keys the WGSL is specialised on; missing keys take their defaults.
    checks:     a check name or a list of them (default: every check the kernel declares).
    examples:   Hypothesis examples per check (default: the profile's, 200 for "ci").
    seed:       the same seed draws the same cases.
    profile:    "quick" | "ci" | "nightly" (or a Profile): how big the drawn cases get.
    adapter:    run on the adapter whose name or backend contains this text (default:
                $VERIFY_ADAPTER, else the best adapter).
    implementation:
                the WebGPU implementation to run on: "wgpu" (wgpu-native, Naga), "dawn" (Dawn
                through Node, Tint), or another registered one (default: $VERIFY_IMPLEMENTATION,
                else the kernel's own, else "wgpu"; see docs/backends.md).
    wgsl:       WGSL source text, or a pathlib.Path to a .wgsl file, to check instead of the
                kernel's own WGSL under the kernel's contract (its bindings must match).
    isolate:    run in a worker process with `time_limit` (a hung kernel fails instead of
                hanging the caller; default). False runs in this process: faster to start,
                no time limit.
    time_limit: seconds per check before it fails as a hang (default: the profile's).
    out_dir:    where failing cases are saved for `verify replay` (default: a folder under the
                system's temporary directory).
    subgroup_width:
                run at this subgroup width, emulated (4..128, docs/instrumentation.md), as `verify
                check --subgroup-width W` does (default: the adapter's own subgroups only).

    Returns CheckResults: iterate it, index it by check name, read `.verdict`, or call
    `.raise_for_verdict()` to turn a failure into an AssertionError carrying the shrunk case
    and its replay command. Bad arguments raise verify.UsageError; a machine without a usable
    adapter raises verify.SetupError.
    """
    chosen = get_profile(profile)
    implementation = chosen_implementation(implementation)
    if isinstance(checks, str):
        checks = [checks]
    text, origin = _wgsl_text(wgsl)
    plan = plan_check([kernel], _as_overrides(config), profile=chosen,
                      examples=chosen.examples if examples is None else int(examples), seed=seed,
                      out_dir=Path(out_dir) if out_dir is not None else default_out_dir(), time_limit=time_limit,
                      adapter=adapter, implementation=implementation, checks=list(checks) if checks else None,
                      subgroup_width=subgroup_width, wgsl=text, wgsl_origin=origin, require_adapters=False)
    jobs = plan.jobs
    results: list[CheckResult] = []
    if isolate:
        _shared_session().run(jobs, on_record=results.append)
    else:
        results = [_run_here(job) for job in jobs]
    return CheckResults(results)


def _as_overrides(config) -> dict:
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise UsageError(f"config must be a dict of config keys, not {type(config).__name__}")
    return dict(config)


def _wgsl_text(wgsl) -> tuple[str | None, str]:
    if wgsl is None:
        return None, ""
    if isinstance(wgsl, os.PathLike):
        return read_wgsl(wgsl), os.path.abspath(wgsl)
    if isinstance(wgsl, str):
        return wgsl, "WGSL text"
    raise UsageError(f"wgsl must be WGSL text (str) or a path (pathlib.Path), not {type(wgsl).__name__}")


def _run_here(job) -> CheckResult:
    """A job in this process, through the worker's own code path (no time limit)."""
    global _devices
    from verify import worker

    if _devices is None:
        _devices = worker.DeviceCache()
    return worker.execute(job, _devices, lambda event: None)
