"""The result of one check of one kernel config: a typed record that flows unchanged from the
check runner through the worker and the session to the console, JUnit, the results file and the
report.

One type, one place that knows what a verdict means: `Verdict` says whether a verdict fails a
run, how it ranks against others, and how it reads; `CheckResult` carries everything a reader
needs to act on a failure (reason, the shrunk and worst cases with their replay files, the
metrics, the adapter, the exact WGSL's sha256) and converts to and from the JSON of the results
file, where a value of the wrong type is a one-line UsageError, never a traceback later on.
"""

from __future__ import annotations

import enum
import math
from dataclasses import MISSING, dataclass, field, fields, replace

from verify.budgets.metrics import OutputMetrics
from verify.errors import FailureKind, UsageError
from verify.results.thoroughness import Thoroughness
from verify.results.thoroughness import parse as parse_thoroughness


class Verdict(str, enum.Enum):
    """What a check concluded.

    PASS: every example held. FAIL: the kernel is wrong (numbers, NaN, a write past the end, a
    compile error, a hang, a crash). DIVERGENCE: the WGSL compiles under one WebGPU
    implementation's compiler and not under the other's (Tint in Dawn, Naga in wgpu): it fails
    the run, since browsers ship both; the reason carries both compilers' verdicts. KNOWN: it
    failed exactly as the kernel's documented finding says (reported, does not fail the run).
    ERROR: the check could not be carried out because Python code raised: verify's own (a defect
    of the toolkit) or the kernel's (its cases, reference or launch; the record's failure_kind
    says which). SKIP: the check could not run here (e.g. the adapter lacks shader-f16): it
    proved nothing.
    """

    PASS = "pass"
    FAIL = "fail"
    DIVERGENCE = "divergence"
    KNOWN = "known"
    ERROR = "error"
    SKIP = "skip"

    @property
    def fails_run(self) -> bool:
        """Whether this verdict makes `verify check`/`verify gate` exit 1."""
        return self in (Verdict.FAIL, Verdict.DIVERGENCE, Verdict.ERROR)

    @property
    def rank(self) -> int:
        """Worst first: the order of a combined verdict and of the console's counts."""
        return _RANK[self]

    @classmethod
    def worst(cls, verdicts) -> Verdict:
        """The most severe of `verdicts` (PASS for none)."""
        return min(verdicts, key=lambda v: v.rank, default=cls.PASS)

    def __str__(self) -> str:
        return self.value


#: A skip outranks a known finding: it verified nothing and fails the run unless allowed.
_RANK = {Verdict.FAIL: 0, Verdict.DIVERGENCE: 1, Verdict.ERROR: 2, Verdict.SKIP: 3, Verdict.KNOWN: 4, Verdict.PASS: 5}


@dataclass(frozen=True)
class Source:
    """Where the WGSL under test came from: `kind` own | tvm | file | package (a kernel from
    another package), `origin` (the file or the kernel's import path), and its sha256."""

    kind: str
    origin: str = ""
    sha256: str = ""
    #: Who made the WGSL, at which version (e.g. "Apache TVM 0.27.0.post1", "ONNX Runtime Web
    #: 1.30.0", "verify 0.2.0"): what a finding of the kernel is about.
    version: str = ""


@dataclass(frozen=True)
class AdapterRecord:
    """The WebGPU adapter a check ran on, as a reader needs it to interpret the result."""

    name: str
    vendor: str = ""
    backend: str = ""
    type: str = ""
    driver: str = ""
    subgroup_size: int | None = None
    zeroes_workgroup_memory: bool | None = None
    #: The WebGPU implementation that compiled and ran the kernel (verify.gpu.implementations,
    #: e.g. wgpu with Naga, dawn with Tint; "" in results written before it was recorded).
    #: (name, backend, driver, implementation) is one column of the report.
    implementation: str = ""
    #: The implementation's version (AdapterInfo.implementation_version, e.g. "wgpu-py 0.32.0,
    #: wgpu-native 29.0.1.1").
    implementation_version: str = ""
    #: The WGSL semantics probes that deviate from the specification on this (implementation,
    #: adapter), comma-separated ("" none; None: not measured, results written before them).
    #: A finding of an implementation shows only where its probe deviates (verify.findings).
    deviations: str | None = None

    @property
    def label(self) -> str:
        return f"{self.name} ({self.backend})" if self.backend else self.name

    @property
    def deviating(self) -> tuple[str, ...] | None:
        """The probes that deviate here, or None where none were measured."""
        if self.deviations is None:
            return None
        return tuple(p for p in self.deviations.split(",") if p)


@dataclass
class ExampleSummary:
    """One drawn case as the record keeps it: the shrunk (smallest failing) or the worst one.

    `outputs` are the per-output metrics; `detail` holds the small plot payloads (histogram,
    heatmap) the report draws; `case_file` is the saved case (.npz) once verify/results wrote it.
    """

    score: float
    passed: bool
    message: str = ""
    features: dict = field(default_factory=dict)
    case: str = ""
    outputs: list[OutputMetrics] = field(default_factory=list)
    detail: dict = field(default_factory=dict)
    case_file: str | None = None
    #: The failure's separate messages (e.g. one per sanitizer finding), which `message` joins: a
    #: known finding must account for each (KnownFinding.mismatch).
    reasons: list = field(default_factory=list)

    @property
    def replay(self) -> str | None:
        return f"verify replay {self.case_file}" if self.case_file else None


@dataclass
class StageTiming:
    """Where a check's time went: seconds per stage in total and per case, and the median GPU
    time of one dispatch when the adapter has timestamp queries."""

    cases: int = 0
    total_s: dict = field(default_factory=dict)
    per_case_ms: dict = field(default_factory=dict)
    gpu_ms_median: float | None = None


@dataclass
class CheckResult:
    """One check of one kernel config: its verdict and everything that explains it.

    Every field is published in docs/schema/results-2.json (a field added here is added there,
    optional: tests/framework/test_schemas.py holds the two together)."""

    kernel: str
    check: str
    config: dict
    verdict: Verdict
    reason: str = ""
    #: The import path the worker loaded the kernel from ("pkg.module:Class").
    kernel_ref: str = ""
    family: str = ""
    source: Source | None = None
    profile: str = ""
    seed: int = 0
    #: Examples Hypothesis drew (shrinking runs not counted), and kernel runs in all.
    examples: int = 0
    runs: int = 0
    #: In a budgeted gate (verify.plan.budgeted): the examples the check was planned to draw, of which
    #: `examples` ran before the budget was spent, and whether its corners (the kernel's corners and
    #: findings' cases, always run first) completed; None outside a budgeted gate.
    examples_planned: int | None = None
    corners_complete: bool | None = None
    duration_s: float = 0.0
    #: Pipelines the check's worker compiled for it (not found in its process's pipeline cache:
    #: a first compile in that process, which the driver's own shader cache may still make cheap);
    #: None where no worker reported it (an older record, a check that did not return).
    pipelines_compiled: int | None = None
    adapter: AdapterRecord | None = None
    worst: ExampleSummary | None = None
    shrunk: ExampleSummary | None = None
    #: Per-example points for plots: the case's features, "score" and "passed".
    samples: list[dict] = field(default_factory=list)
    timing: StageTiming | None = None
    #: The budget's derivation (the docstring of the kernel's budget function).
    budget: str = ""
    #: A documented failure of the kernel (Kernel.known_finding), and whether it reproduced.
    finding: str | None = None
    finding_reproduced: bool | None = None
    #: The documented finding's id (verify.findings), where it has one: the report, the
    #: reproductions and docs/findings.md name it by this.
    finding_id: str | None = None
    traceback: str | None = None
    verify_version: str = ""
    #: How many of the drawn cases took each host-side launch path (Kernel.launch_paths).
    launch_paths: dict = field(default_factory=dict)
    #: Subgroups were emulated at this width (None: the adapter's own subgroups, if any).
    subgroup_width: int | None = None
    #: Facts worth knowing that do not change the verdict, e.g. a WebGPU default limit the
    #: kernel exceeds (it runs here, but a browser granting only the defaults refuses it).
    notes: list[str] = field(default_factory=list)
    #: What kind of failure this is (None for a pass or a skip), set where the failure was found.
    failure_kind: FailureKind | None = None
    #: The position of the job in its run's plan (None for a record no job made, e.g. a kernel
    #: that could not be planned): records are reported in plan order by it.
    job_id: int | None = None
    #: The digest of everything the verdict depends on (verify.results.reuse), where computed.
    inputs_sha256: str | None = None
    #: Where this record was copied from instead of running the check again ("path (started)").
    reused_from: str | None = None
    #: The authentication tag verify made for this record on the machine that ran it
    #: (verify.results.signing): `--reuse` takes only records whose tag verifies there.
    auth_tag: str | None = None
    #: How thoroughly the check judged the kernel (verify.results.thoroughness): numeric,
    #: relation, structural or not run; None in records written before it was recorded.
    thoroughness: Thoroughness | None = None

    # -- reading -----------------------------------------------------------------------------
    @property
    def max_err_over_budget(self) -> float | None:
        """The largest err/budget of any example (None when the check compares no budgets)."""
        return self.worst.score if self.worst is not None and self.worst.outputs else None

    @property
    def config_text(self) -> str:
        """The config, and the emulated subgroup width when there is one."""
        text = " ".join(f"{k}={v}" for k, v in sorted(self.config.items()))
        return f"{text} subgroup_width={self.subgroup_width}" if self.subgroup_width else text

    @property
    def title(self) -> str:
        return f"{self.kernel} {self.check} [{self.config_text}]"

    @property
    def finding_headline(self) -> str:
        lines = (self.finding or "").strip().splitlines()
        return lines[0] if lines else ""

    @property
    def finding_not_reproduced(self) -> bool:
        """A pass of a check the kernel is documented to fail: fixed upstream, or hidden here."""
        return self.verdict is Verdict.PASS and self.finding_reproduced is False

    @property
    def replay_commands(self) -> list[str]:
        return [s.replay for s in (self.shrunk, self.worst) if s is not None and s.replay]

    def failure_message(self) -> str:
        """What went wrong, the smallest case that shows it, and how to replay it."""
        lines = [f"{self.verdict.value.upper()} {self.title}: {self.reason or 'no reason recorded'}"]
        same = self.shrunk is not None and self.worst is not None and self.shrunk.case == self.worst.case
        for role, summary in (("shrunk", self.shrunk), ("worst", None if same else self.worst)):
            if summary is not None and not summary.passed:
                lines.append(f"{role} case: {summary.case}")
                if summary.replay:
                    lines.append(f"  replay: {summary.replay}")
        if self.finding:
            lines.append(f"known finding: {self.finding_headline}")
        return "\n".join(lines)

    def raise_for_verdict(self, *, allow_skip: bool = False) -> CheckResult:
        """Raise VerificationFailure (an AssertionError) unless the check held.

        FAIL and ERROR always raise; SKIP raises unless `allow_skip` (a skipped check proved
        nothing); KNOWN and PASS return the result.
        """
        if self.verdict.fails_run or (self.verdict is Verdict.SKIP and not allow_skip):
            raise VerificationFailure(self.failure_message(), (self,))
        return self

    # -- changing ----------------------------------------------------------------------------
    def with_known_finding(self, finding) -> CheckResult:
        """This result judged against the documented findings of its kernel (Kernel.known_finding:
        a KnownFinding, its text, several of them, or None).

        A failure (FAIL, DIVERGENCE) that has a finding's signature (its outputs, failure kinds,
        reason) becomes KNOWN, carrying the finding, so it is reported without failing the run;
        a failure of another signature stays a failure, noting which finding it is not (a known
        bug must not mask a new one). A pass is recorded with the finding and
        `finding_reproduced: False`, where the finding shows on this implementation, so an
        upstream fix, or an adapter where the bug does not show, is seen. Errors and skips are
        left as they are: they say nothing about a finding.
        """
        declared = KnownFinding.all_of(finding)
        findings = [f for f in declared if f.shows_on_implementation(self)]
        if self.verdict not in (Verdict.PASS, Verdict.FAIL, Verdict.DIVERGENCE):
            return self
        absent = [f for f in declared if f not in findings and f.rests_on_deviation(self)]
        if not findings:
            if self.verdict is Verdict.PASS or not absent:
                return self
            return replace(self, notes=list(self.notes) + [f"not the documented finding \"{f.headline}\": it shows "
                                                           f"only where {f.condition()} deviates, and here it conforms"
                                                           for f in absent])
        if self.verdict is Verdict.PASS:
            return replace(self, finding=findings[0].text, finding_id=findings[0].finding_id or None,
                           finding_reproduced=False)
        mismatches = []
        for candidate in findings:
            why = candidate.mismatch(self)
            if why is None:
                return replace(self, verdict=Verdict.KNOWN, finding=candidate.text,
                               finding_id=candidate.finding_id or None, finding_reproduced=True)
            mismatches.append(f"{candidate.headline}: {why}")
        # Several findings may each cover part of a sanitizer's report (a race and a read past the end).
        together = KnownFinding.covering(findings, self)
        if together is not None:
            ids = list(dict.fromkeys(f.finding_id for f in together if f.finding_id))
            return replace(self, verdict=Verdict.KNOWN, finding="\n\n".join(dict.fromkeys(f.text for f in together)),
                           finding_id=",".join(ids) or None, finding_reproduced=True)
        notes = [f"not the documented finding \"{m}\"" for m in mismatches]
        return replace(self, notes=list(self.notes) + notes)

    @property
    def messages(self) -> list[str]:
        """The separate messages of the shrunk and worst cases (each once, in order)."""
        found = []
        for summary in (self.shrunk, self.worst):
            for message in (summary.reasons if summary is not None else ()):
                if message not in found:
                    found.append(message)
        return found

    @property
    def failing_outputs(self) -> set[str]:
        """The outputs over budget, NaN or not bit-exact in the shrunk or worst case."""
        return {m.name for s in (self.shrunk, self.worst) if s is not None for m in s.outputs
                if not m.passed}

    # -- JSON --------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Plain JSON values (inf and NaN as strings, as JSON has neither)."""
        return to_json_value(self)

    @classmethod
    def from_dict(cls, data: object, where: str = "record") -> CheckResult:
        """The record a results file holds; UsageError naming `where` and the field if it is malformed."""
        return _typed(cls, data, where)


@dataclass(frozen=True)
class KnownFinding:
    """A documented failure of a kernel's WGSL (Kernel.known_finding), and the signature a failure
    must have to be it: the outputs it makes fail, the kinds of failure it shows as, text each of
    its messages contains (e.g. the racing lines a sanitizer names: every message of the failure
    must be one of the finding's, so a new race beside a known one is still a failure), the WebGPU
    implementations it shows on, and the emulated subgroup widths it shows at (empty: any of each;
    a width-bound finding, such as a program that assumes subgroups of at least 8 lanes, shows only
    where the check ran at that width).

    `finding_id` names the declared finding (verify.findings): its headline, layer and the
    semantics probes it rests on come from there (a finding of an implementation shows only where
    one of its probes deviates on the record's adapter). `on_this_adapter` False says the failure
    is not this adapter's run alone, so its probes do not decide: a comparison with another
    implementation (which may be the one that deviates), or the sanitizer's reading of the
    program's own accesses. `text`, where given, is the evidence; its first line is the headline
    of a finding declared nowhere else. Several KnownFindings may share an id (one signature each:
    a read past `key`, a read past `value`)."""

    text: str = ""
    outputs: tuple = ()
    kinds: tuple = ()
    reasons: tuple = ()
    implementations: tuple = ()
    subgroup_widths: tuple = ()
    finding_id: str = ""
    on_this_adapter: bool = True

    @property
    def declared(self):
        """The verify.findings.Finding of `finding_id`, or None (no id, or not registered here)."""
        if not self.finding_id:
            return None
        from verify.findings import all_findings

        return all_findings().get(self.finding_id)

    @property
    def headline(self) -> str:
        declared = self.declared
        if declared is not None:
            return declared.title
        lines = self.text.strip().splitlines()
        return lines[0] if lines else ""

    def __post_init__(self):
        if not self.text and self.finding_id:
            declared = self.declared
            text = (f"{declared.title} (docs/findings.md {declared.section}; the {declared.blame}'s)"
                    if declared is not None else self.finding_id)
            object.__setattr__(self, "text", text)

    @classmethod
    def all_of(cls, finding) -> list[KnownFinding]:
        """Findings from what Kernel.known_finding returns: None, text, a KnownFinding, or several."""
        if finding is None:
            return []
        if isinstance(finding, (str, KnownFinding)):
            finding = (finding,)
        return [f if isinstance(f, KnownFinding) else KnownFinding(str(f)) for f in finding]

    def shows_on_implementation(self, result: CheckResult) -> bool:
        adapter = result.adapter
        implementation = adapter.implementation if adapter is not None else ""
        if self.subgroup_widths and result.subgroup_width not in self.subgroup_widths:
            return False
        if self.implementations and implementation not in self.implementations:
            return False
        return not self.rests_on_deviation(result)

    def rests_on_deviation(self, result: CheckResult) -> bool:
        """True where this finding rests on a semantics probe that the record's adapter measured,
        and none of its probes deviates there: the documented finding cannot be what failed."""
        declared = self.declared
        deviating = result.adapter.deviating if result.adapter is not None else None
        if not self.on_this_adapter or declared is None or not declared.deviation or deviating is None:
            return False
        return not any(probe in deviating for probe in declared.deviation)

    def condition(self) -> str:
        declared = self.declared
        return " or ".join(declared.deviation) if declared is not None else ""

    def mismatch(self, result: CheckResult) -> str | None:
        """None if the failure has this finding's signature, else why not."""
        if self.kinds and result.failure_kind not in self.kinds:
            kind = result.failure_kind.value if result.failure_kind is not None else "unknown"
            return f"it failed as {kind}, the finding as {', '.join(k.value for k in self.kinds)}"
        failing = result.failing_outputs
        if self.outputs and failing - set(self.outputs):
            return f"outputs {', '.join(sorted(failing - set(self.outputs)))} fail, the finding's are " \
                   f"{', '.join(self.outputs)}"
        if self.reasons:
            stray = [message for message in result.messages if not self.covers(message)]
            if not result.messages:
                missing = [text for text in self.reasons if text not in result.reason]
                if missing:
                    return f"its reason lacks {', '.join(repr(m) for m in missing)}"
            elif stray:
                return f"it also found what the finding does not: {stray[0][:300]}"
        return None

    def covers(self, message: str) -> bool:
        """Whether one message of a failure (one sanitizer finding) is this finding's."""
        return all(text in message for text in self.reasons)

    @staticmethod
    def covering(findings: list[KnownFinding], result: CheckResult) -> list[KnownFinding] | None:
        """The findings that together account for every message of a failure, each by its
        signature, or None where some message is none of theirs (or none has messages to split)."""
        if not result.messages or not all(f.reasons for f in findings):
            return None
        if any(f.kinds and result.failure_kind not in f.kinds for f in findings):
            return None
        used = []
        for message in result.messages:
            owner = next((f for f in findings if f.covers(message)), None)
            if owner is None:
                return None
            if owner not in used:
                used.append(owner)
        return used


class CheckResults(tuple):
    """The results of `verify.check`: one CheckResult per check, in the order they ran, with
    their combined verdict (the worst of them)."""

    def __new__(cls, results=()):
        return super().__new__(cls, results)

    @property
    def verdict(self) -> Verdict:
        return Verdict.worst(r.verdict for r in self)

    @property
    def max_err_over_budget(self) -> float | None:
        scores = [r.max_err_over_budget for r in self if r.max_err_over_budget is not None]
        return max(scores) if scores else None

    @property
    def examples(self) -> int:
        return sum(r.examples for r in self)

    def __getitem__(self, key):
        """By position, or by check name (`results["reference"]`)."""
        if isinstance(key, str):
            for result in self:
                if result.check == key:
                    return result
            raise KeyError(f"no result for check {key!r}; checks run: {', '.join(r.check for r in self)}")
        return super().__getitem__(key)

    def raise_for_verdict(self, *, allow_skip: bool = False) -> CheckResults:
        """Raise VerificationFailure listing every check that did not hold (see CheckResult)."""
        bad = [r for r in self if r.verdict.fails_run or (r.verdict is Verdict.SKIP and not allow_skip)]
        if bad:
            raise VerificationFailure("\n\n".join(r.failure_message() for r in bad), tuple(bad))
        return self

    def __repr__(self) -> str:
        parts = ", ".join(f"{r.check}={r.verdict.value}" for r in self)
        return f"CheckResults({self.verdict.value}: {parts})"


class VerificationFailure(AssertionError):
    """A check did not hold: its message has the reason, the shrunk case and the replay command."""

    def __init__(self, message: str, results: tuple[CheckResult, ...]):
        super().__init__(message)
        self.results = results


# -- JSON conversion ---------------------------------------------------------------------------
_NESTED = {"source": Source, "adapter": AdapterRecord, "worst": ExampleSummary, "shrunk": ExampleSummary,
           "timing": StageTiming}


def to_json_value(value):
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, OutputMetrics):
        return value.as_record()
    if hasattr(value, "__dataclass_fields__"):
        return {f.name: to_json_value(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if hasattr(value, "item"):  # numpy scalars
        return to_json_value(value.item())
    return value


def number(value) -> float | None:
    """A number from a results file, where inf and NaN are written as strings."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


_EXPECTED = {
    "kernel": str, "check": str, "config": dict, "reason": str, "kernel_ref": str, "family": str, "profile": str,
    "seed": int, "examples": int, "runs": int, "duration_s": "number", "samples": list, "budget": str,
    "examples_planned": (int, type(None)), "corners_complete": (bool, type(None)),
    "pipelines_compiled": (int, type(None)),
    "finding": (str, type(None)), "finding_reproduced": (bool, type(None)), "traceback": (str, type(None)),
    "verify_version": str, "notes": list, "subgroup_width": (int, type(None)), "job_id": (int, type(None)),
    "inputs_sha256": (str, type(None)), "reused_from": (str, type(None)), "auth_tag": (str, type(None)),
    "finding_id": (str, type(None)),
}


def _typed(cls, data, where: str):
    if not isinstance(data, dict):
        raise UsageError(f"{where}: expected an object, got {type(data).__name__}")
    known = {f.name for f in fields(cls)}
    values = {}
    for name, value in data.items():
        if name not in known:
            continue  # newer writers may add fields; they are not needed to read this one
        values[name] = _field(cls, name, value, f"{where}.{name}")
    missing = [f.name for f in fields(cls) if f.name not in values and f.default is MISSING
               and f.default_factory is MISSING]
    if missing:
        raise UsageError(f"{where}: lacks {', '.join(missing)}")
    return cls(**values)


def _field(cls, name: str, value, where: str):
    if cls is CheckResult and name == "verdict":
        try:
            return Verdict(value)
        except ValueError:
            raise UsageError(f"{where}: unknown verdict {value!r} (expected one of "
                             f"{', '.join(v.value for v in Verdict)})") from None
    if cls is CheckResult and name == "failure_kind":
        if value is None:
            return None
        try:
            return FailureKind(value)
        except ValueError:
            return FailureKind.FAILED  # a kind a newer verify wrote: still a failure
    if cls is CheckResult and name == "thoroughness":
        return parse_thoroughness(value, where)
    if cls is CheckResult and name in _NESTED:
        return None if value is None else _typed(_NESTED[name], value, where)
    if name in ("samples", "features"):
        return _numbers_restored(value, where)
    if cls is ExampleSummary and name == "outputs":
        if not isinstance(value, list):
            raise UsageError(f"{where}: expected a list, got {type(value).__name__}")
        return [_metrics(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if name in ("score", "duration_s", "gpu_ms_median"):
        if value is None and name == "gpu_ms_median":
            return None
        x = number(value)
        if x is None:
            raise UsageError(f"{where}: expected a number, got {value!r}")
        return x
    expected = _EXPECTED.get(name) if cls is CheckResult else None
    if expected is not None and expected != "number":
        kinds = expected if isinstance(expected, tuple) else (expected,)
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            raise UsageError(f"{where}: expected {' or '.join(k.__name__ for k in kinds)}, got {type(value).__name__}")
    return value


def _numbers_restored(value, where: str):
    """Plot points and case features with their inf/NaN strings read back as floats."""
    def restore(x):
        return float(x) if isinstance(x, str) and x in ("inf", "-inf", "nan") else x

    if isinstance(value, dict):
        return {k: restore(v) for k, v in value.items()}
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return [{k: restore(v) for k, v in item.items()} for item in value]
    raise UsageError(f"{where}: expected {'an object' if where.endswith('features') else 'a list of objects'}, "
                     f"got {type(value).__name__}")


def _metrics(item, where: str) -> OutputMetrics:
    if not isinstance(item, dict):
        raise UsageError(f"{where}: expected an object, got {type(item).__name__}")
    names = {f.name for f in fields(OutputMetrics)} - {"ratio"}
    values = {k: v for k, v in item.items() if k in names}
    for key in ("max_abs", "max_ulp", "rel_l2", "max_err_over_budget", "worst_value", "worst_expected", "worst_budget"):
        if key in values:
            values[key] = number(values[key])
    if values.get("max_err_over_floor") is not None:
        values["max_err_over_floor"] = number(values["max_err_over_floor"])
    try:
        return OutputMetrics(**values)
    except TypeError as exc:
        raise UsageError(f"{where}: not output metrics ({exc})") from None
