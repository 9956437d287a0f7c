"""What crosses between `verify` and the worker process that runs checks: typed jobs and events.

The same types are used in process (`verify.check(..., isolate=False)`) and across the pipe, where
each travels as one JSON line: a job on the worker's stdin, events on its protocol stream. Only
this module turns them into JSON and back, and `decode_*` refuse a malformed line with a
UsageError naming what is wrong, so nothing else reads a dict by string keys.

Events, in the order the worker emits them for a job: `Started` (the check itself starts: the
parent's time limit counts from here), any number of `Progress` and `Stage`, then `Finished` (the record),
`Replayed` (a replay's lines) or `Refused` (a usage error: the run stops).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace

from verify._version import __version__
from verify.errors import FailureKind, UsageError
from verify.results.record import CheckResult, Source, Verdict


@dataclass(frozen=True)
class Job:
    """One check of one kernel config, as the worker runs it; `id` is its place in the plan."""

    id: int
    kernel: str
    #: The import path the worker loads the kernel from ("pkg.module:Class").
    kernel_ref: str
    config: dict
    check: str
    examples: int
    seed: int
    profile: str = "ci"
    #: WGSL to run instead of the kernel's own (a user's file under the kernel's contract).
    wgsl: str | None = None
    #: Where the WGSL comes from (kind own | tvm | ort | file | package, and its origin).
    source: Source = field(default_factory=lambda: Source("own"))
    out_dir: str | None = None
    adapter: str | None = None
    #: The WebGPU implementation to run on (verify.gpu.implementations); None: the default.
    implementation: str | None = None
    time_limit: float = 600.0
    #: Run with subgroups of this many lanes, emulated in workgroup memory (None: native).
    subgroup_width: int | None = None
    #: A profile that is not one of verify's own (`Profile` built by the caller), whole, as JSON
    #: (verify.profiles.encode_profile); None: the profile named `profile`.
    profile_data: str | None = None
    #: The digest of everything the job's verdict depends on (verify.results.reuse), when computed.
    inputs: str | None = None
    #: (k, n): this job is slice k of n of its check's examples, with a seed stream of its own
    #: (verify.plan.sliced); the parent merges the n records into one (verify.results.slices).
    slice: tuple | None = None
    #: Which part of its check this job runs: "" all of it; "corners" the explicit cases alone
    #: (the kernel's corners and findings' cases); "random" the randomly drawn examples alone (the
    #: parts of a budgeted gate, verify.plan.budgeted; a corners job is its slice (0, n)).
    part: str = ""
    #: What one example of this job costs against a usual one, as its kernel declares by taking
    #: fewer examples (profile examples / Kernel.gate_examples): the plan runs heavy jobs first
    #: where no earlier run gives their durations (verify.plan.longest_first).
    weight: float = 1.0
    #: Other jobs of the plan draw the same cases (the same check of this config at another
    #: subgroup width or on another implementation, from the same seed): the worker keeps the
    #: references it computes by the case's content (verify.checks.shared_cases).
    shares_cases: bool = False

    @property
    def slice_seed(self) -> int:
        """The Hypothesis seed this job draws with: the job's, or one of its own per slice."""
        if self.slice is None:
            return self.seed
        k, n = self.slice
        return int.from_bytes(hashlib.sha256(f"{self.seed}/{k}/{n}".encode()).digest()[:8], "little")

    def result(self, verdict: Verdict, reason: str = "", **fields) -> CheckResult:
        """A record of this job: its identity filled in, `fields` (the outcome) added."""
        return CheckResult(kernel=self.kernel, check=self.check, config=dict(self.config), verdict=verdict,
                           reason=reason, kernel_ref=self.kernel_ref, profile=self.profile, seed=self.seed,
                           source=self.source, subgroup_width=self.subgroup_width, job_id=self.id,
                           verify_version=__version__, inputs_sha256=self.inputs, **fields)

    def unfinished(self, kind: FailureKind, reason: str, duration_s: float, examples: int = 0,
                   verdict: Verdict = Verdict.FAIL) -> CheckResult:
        """The record of a job whose worker could not report one (time limit, crash): a FAIL only
        where the session has evidence against the kernel (verify.session), else an ERROR."""
        return self.judged(self.result(verdict, reason, failure_kind=kind, examples=examples,
                                       duration_s=round(duration_s, 3)))

    def judged(self, record: CheckResult) -> CheckResult:
        """`record` with how thoroughly its check judged the kernel (verify.results.thoroughness):
        the check's level, lowered where the record did less; a check that cannot be loaded here
        claims nothing beyond what the verdict alone says."""
        from verify.results.thoroughness import judged

        try:
            from verify.checks import get_check

            level = get_check(self.check).thoroughness
        except Exception:  # noqa: BLE001 - a check that cannot load has its own ERROR record
            level = None
        return judged(record, level)

    @property
    def label(self) -> str:
        """The job as the console and pytest name it: kernel, check, config, width, implementation."""
        text = " ".join(f"{k}={v}" for k, v in sorted(self.config.items()))
        if self.subgroup_width:
            text += f" subgroup_width={self.subgroup_width}"
        return f"{self.kernel} {self.check} [{text}]"

    def with_id(self, number: int) -> Job:
        return replace(self, id=number)


@dataclass(frozen=True)
class ReplayJob:
    """Re-run one saved case under its check, `repeat` times."""

    case_path: str
    adapter: str | None = None
    implementation: str | None = None
    time_limit: float = 600.0
    repeat: int = 1


@dataclass(frozen=True)
class Started:
    """The check itself starts (kernel imported, device open, WGSL compiled)."""


@dataclass(frozen=True)
class Progress:
    done: int
    total: int


@dataclass(frozen=True)
class Stage:
    """What the check is doing now (GPU, reference, compare, drawing cases): a time limit then
    says whether a kernel hung on the GPU or the kernel's Python reference was slow."""

    name: str


@dataclass(frozen=True)
class Finished:
    record: CheckResult


@dataclass(frozen=True)
class Replayed:
    """What a replay printed about the case, and whether it held (None: the replay could not be
    carried out, or showed nothing either way, e.g. a race that did not show again)."""

    passed: bool | None
    lines: tuple = ()


@dataclass(frozen=True)
class Refused:
    """The job cannot be run as asked (a usage error): the message, one line."""

    message: str


_EVENTS = {"started": Started, "progress": Progress, "stage": Stage, "finished": Finished, "replayed": Replayed,
           "refused": Refused}
_KIND = {cls: name for name, cls in _EVENTS.items()}


# -- JSON lines ----------------------------------------------------------------------------------
def encode_job(job: Job | ReplayJob) -> str:
    payload = {"kind": "replay" if isinstance(job, ReplayJob) else "check", **asdict(job)}
    if isinstance(job, Job):
        payload["source"] = asdict(job.source)
    return json.dumps(payload)


def decode_job(line: str) -> Job | ReplayJob:
    """The job a line holds; UsageError naming what is wrong with a malformed one."""
    data = _object(line, "job")
    kind = data.pop("kind", None)
    cls = {"check": Job, "replay": ReplayJob}.get(kind)
    if cls is None:
        raise UsageError(f"job: unknown kind {kind!r}")
    if cls is Job:
        if data.get("slice") is not None:
            data["slice"] = tuple(data["slice"])
        source = data.get("source")
        if not isinstance(source, dict):
            raise UsageError("job: source must be an object")
        data["source"] = Source(**{k: v for k, v in source.items() if k in ("kind", "origin", "sha256")})
    return _build(cls, data, "job")


def encode_event(event) -> str:
    kind = _KIND[type(event)]
    if isinstance(event, Finished):
        return json.dumps({"event": kind, "record": event.record.to_dict()}, default=str)
    return json.dumps({"event": kind, **asdict(event)}, default=str)


def decode_event(line: str | bytes):
    """The event a line holds; UsageError naming what is wrong with a malformed one."""
    data = _object(line, "event")
    kind = data.pop("event", None)
    cls = _EVENTS.get(kind)
    if cls is None:
        raise UsageError(f"worker event: unknown kind {kind!r}")
    if cls is Finished:
        return Finished(CheckResult.from_dict(data.get("record"), "worker record"))
    if cls is Replayed:
        data["lines"] = tuple(data.get("lines") or ())
    return _build(cls, data, f"worker event {kind!r}")


def _object(line, what: str) -> dict:
    try:
        data = json.loads(line)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"{what}: not a JSON line ({exc})") from None
    if not isinstance(data, dict):
        raise UsageError(f"{what}: expected an object, got {type(data).__name__}")
    return data


def _build(cls, data: dict, what: str):
    known = {f.name for f in fields(cls)}
    try:
        return cls(**{k: v for k, v in data.items() if k in known})
    except TypeError as exc:
        raise UsageError(f"{what}: {exc}") from None
