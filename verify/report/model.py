"""What the report shows, computed from one or more results documents before any HTML.

Documents are merged without losing where a record ran: every record keeps its own adapter
(records written without one, e.g. for a worker that died, take the adapter the rest of their
document ran on), and the kernel x adapter matrix gets one column per distinct adapter. Records
are ordered failures first (docs/architecture.md §8: a kernel author reads the failures, then the
summary of what held), then known findings (failures a kernel is documented to have,
Kernel.known_finding: reported in full, but not news), and skips are kept apart from passes: a
check that did not run proved nothing.

Nor does a check that never got a record: a run stopped half way (Ctrl-C, a CI timeout, a full
disk) or a split gate missing a shard holds fewer records than its plan, and every record it holds
may pass. So the records are set against the plan each document records (its size, and which
kernel and implementation each job is: PlanIdentity.layout): the headline says INCOMPLETE with how
much of the plan ran, and a kernel with checks that did not run is never a green cell.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from verify.errors import FailureKind
from verify.results.merge import shard_problems
from verify.results.record import AdapterRecord, CheckResult, Verdict, number
from verify.results.store import ResultsDocument, shard_of
from verify.results.thoroughness import Thoroughness

#: The order of sections, counts and legends, and of a matrix cell's verdict: what a kernel
#: author reads first. Known findings come before skips: they are failures, shown in full.
VERDICTS = ("fail", "divergence", "error", "known", "skip", "pass")
#: Verdicts shown as a full record card (cases, plots, provenance) rather than a table row.
CARDS = ("fail", "divergence", "error", "known")
_ORDER = {v: i for i, v in enumerate(VERDICTS)}
_SAMPLE_KEYS = ("score", "passed")


def config_text(config: dict | None) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted((config or {}).items()))


@dataclass
class AdapterColumn:
    """One (adapter, WebGPU implementation) as a column of the matrix: the same name, backend,
    driver and implementation are one column even when they come from several documents."""

    name: str
    backend: str
    driver: str
    type: str = ""
    subgroup_size: int | None = None
    implementation: str = ""
    hosts: list = field(default_factory=list)
    index: int = 0
    counts: Counter = field(default_factory=Counter)
    #: Checks planned on this column that have no record (Cell.unrun, summed over kernels).
    unrun: int = 0
    #: Provenance: the implementation's version, and the WGSL semantics probes that deviate from
    #: the specification here (None: not measured; AdapterRecord.deviations).
    implementation_version: str = ""
    deviations: tuple | None = None

    @property
    def key(self) -> tuple:
        return (self.name, self.backend, self.driver, self.implementation)

    @property
    def label(self) -> str:
        """Adapter, native API and WebGPU implementation: "llvmpipe (Vulkan, dawn)"."""
        inner = ", ".join(part for part in (self.backend, self.implementation) if part)
        return f"{self.name} ({inner})" if inner else self.name


@dataclass
class RecordView:
    record: CheckResult
    anchor: str
    run: int
    adapter: AdapterColumn
    #: The verdict's value ("fail", ...): a CSS class and badge text in the templates.
    verdict: str
    score: float | None
    #: True when the check compares against budgets (outputs with metrics), so its score is an
    #: err/budget; bitwise checks (determinism, page permutation) score a count of differences.
    has_metrics: bool
    kind: str = ""
    plots: list = field(default_factory=list)
    #: Standalone reproductions of the record's known finding: [(folder name, href)] (verify.report.render).
    reproductions: list = field(default_factory=list)

    @property
    def config(self) -> str:
        return self.record.config_text

    @property
    def wgsl(self) -> str:
        """Where the WGSL came from, short: "own", "tvm", or the user's file name."""
        source = self.record.source
        if source is None:
            return "–"
        if source.kind == "file" and source.origin:
            return "file " + source.origin.replace("\\", "/").rsplit("/", 1)[-1]
        return source.kind or "–"

    @property
    def judged(self) -> str:
        """How thoroughly the check judged the kernel (verify.results.thoroughness): the record's,
        "not run" for a skip or an error of a file written before it was recorded, else ""."""
        return judged_text(self.record)

    @property
    def finding_headline(self) -> str:
        """The first line of the record's known finding ("" without one)."""
        return self.record.finding_headline

    @property
    def blame(self) -> str:
        """Whose bug the record's documented findings are ("the implementation (wgpu-native)"), from
        their declarations (verify.findings); "" where the record names none registered here."""
        from verify.findings import all_findings

        declared = all_findings()
        found = [declared[i] for i in (self.record.finding_id or "").split(",") if i in declared]
        return "; ".join(f"{f.id}: the {f.blame}" for f in found)

    @property
    def finding_not_reproduced(self) -> bool:
        """A pass of a check the kernel is documented to fail: fixed upstream, or hidden here."""
        return self.record.finding_not_reproduced

    @property
    def same_case(self) -> bool:
        """The shrunk case is also the worst one found (a bug that fails on the first example)."""
        shrunk, worst = self.record.shrunk, self.record.worst
        return bool(shrunk and worst and shrunk.case == worst.case and shrunk.message == worst.message)

    @property
    def rerun(self) -> str:
        """The `verify check` line that re-runs this check with the same seed and draw count."""
        r = self.record
        parts = ["verify check", r.kernel_ref if r.source is not None and r.source.kind == "package" else r.kernel]
        if r.config:
            parts.append("--config " + ",".join(f"{k}={v}" for k, v in sorted(r.config.items())))
        if r.source is not None and r.source.kind == "file" and r.source.origin:
            parts.append(f"--wgsl {r.source.origin}")
        if r.check and r.check != "*":
            parts.append(f"--checks {r.check}")
        parts.append(f"--seed {r.seed}")
        if r.examples:
            parts.append(f"--examples {r.examples}")
        if r.profile:
            parts.append(f"--profile {r.profile}")
        return " ".join(parts)


def judged_text(record: CheckResult) -> str:
    """The record's thoroughness as the report shows it ("" where it was not recorded)."""
    if record.thoroughness is not None:
        return record.thoroughness.value
    return Thoroughness.NOT_RUN.value if record.verdict in (Verdict.SKIP, Verdict.ERROR) else ""


def failure_kind(record: CheckResult) -> str:
    """A defect class for a failing record, as Allure's categories do (docs/architecture.md §8):
    the kind set where the failure was found (CheckResult.failure_kind); for a record written
    before kinds were recorded, what its output metrics show."""
    if record.failure_kind is not None:
        return record.failure_kind.value
    if record.verdict is Verdict.ERROR:
        return FailureKind.INTERNAL.value
    summary = record.shrunk or record.worst
    outputs = summary.outputs if summary is not None else []
    if any(o.nan_count for o in outputs):
        return FailureKind.NAN.value
    if any(o.exact_mismatches for o in outputs):
        return FailureKind.NOT_BIT_EXACT.value
    if any(o.failing for o in outputs):
        return FailureKind.OVER_BUDGET.value
    return FailureKind.FAILED.value


def scatter_feature(samples: list[dict]) -> str | None:
    """The first case feature with a finite number in some sample (context length for decode)."""
    for key in (samples[0] if samples else {}):
        if key in _SAMPLE_KEYS:
            continue
        values = [number(s.get(key)) for s in samples]
        if any(v is not None and v == v and abs(v) != float("inf") for v in values):
            return key
    return None


def scatter_points(samples: list[dict], feature: str | None) -> list[tuple[float, float, bool]]:
    """(feature, err/budget, passed) per example; the example's index when no feature is numeric."""
    points = []
    for i, sample in enumerate(samples):
        x = number(sample.get(feature)) if feature else float(i + 1)
        y = number(sample.get("score"))
        if x is not None and y is not None and abs(x) != float("inf") and x == x:
            points.append((x, y, bool(sample.get("passed", True))))
    return points


#: A cell's verdict when checks of its kernel planned there have no record and none failed.
INCOMPLETE = "incomplete"


@dataclass
class Cell:
    """One kernel on one adapter: the worst verdict of its records, and their totals."""

    counts: Counter = field(default_factory=Counter)
    examples: int = 0
    worst: float | None = None
    #: The anchor of the first record card of each verdict that has cards.
    first_card: dict = field(default_factory=dict)
    #: Checks of this kernel planned on this adapter's implementation that have no record.
    unrun: int = 0
    #: Records by how thoroughly they judged the kernel (verify.results.thoroughness), so a pass
    #: resting on relations or structure alone reads as such.
    judged: Counter = field(default_factory=Counter)

    @property
    def verdict(self) -> str:
        """The worst verdict of the records; "incomplete" where checks did not run and none failed
        (a kernel whose only finished check passed has not passed)."""
        worst = next((v for v in VERDICTS if self.counts[v]), "")
        if self.unrun and worst not in ("fail", "divergence", "error"):
            return INCOMPLETE
        return worst

    @property
    def link(self) -> str | None:
        """Where the cell's badge leads: the first card of its worst verdict that has cards (none
        for skip or pass)."""
        return next((self.first_card[v] for v in CARDS if v in self.first_card), None)

    def add(self, view: RecordView) -> None:
        self.counts[view.verdict] += 1
        if view.judged:
            self.judged[view.judged] += 1
        self.examples += view.record.examples
        if view.has_metrics and view.score is not None:
            self.worst = view.score if self.worst is None else max(self.worst, view.score)
        if view.verdict in CARDS:
            self.first_card.setdefault(view.verdict, view.anchor)


@dataclass
class Progress:
    """How much of what the documents set out to do has a record.

    `planned` is None where a document records no plan size (files of verify.results/1, and of
    `verify check` before plans were recorded); `reasons` say why the run is incomplete, one each
    ("the run was interrupted", "shard 2/3 is not in this report"); `unlocated` is how many checks
    did not run whose kernel the documents do not say (a plan recorded without its layout)."""

    planned: int | None = None
    ran: int = 0
    reasons: list = field(default_factory=list)
    unlocated: int = 0
    #: Every document records which kernel each planned check is: a kernel without a record on an
    #: adapter had nothing planned there (else it may have had checks that never ran).
    located: bool = True

    @property
    def incomplete(self) -> bool:
        return bool(self.reasons) or (self.planned is not None and self.ran < self.planned)

    @property
    def missing(self) -> int | None:
        """Planned checks without a record (None where the plan's size is not recorded)."""
        return None if self.planned is None else max(self.planned - self.ran, 0)

    @property
    def text(self) -> str:
        """"INCOMPLETE: 62 of 672 planned checks ran; the run was interrupted" ("" when complete)."""
        if not self.incomplete:
            return ""
        reasons = "; ".join(self.reasons or [f"{self.missing} planned checks have no record"])
        if self.planned is None:
            return f"INCOMPLETE: {reasons}; {self.ran} checks ran (how many were planned was not recorded)"
        return f"INCOMPLETE: {self.ran} of {self.planned} planned checks ran; {reasons}"


@dataclass
class Report:
    runs: list
    adapters: list
    records: list
    counts: Counter
    matrix: list  # [(kernel, [Cell | None per adapter])]
    #: Missing shards of a split gate (verify.results.merge.shard_problems).
    shard_problems: list = field(default_factory=list)
    #: Per kernel, the host-side launch paths its drawn cases took: [(kernel, [(path, cases)])].
    coverage: list = field(default_factory=list)
    progress: Progress = field(default_factory=Progress)

    def section(self, *verdicts: str) -> list:
        return [r for r in self.records if r.verdict in verdicts]

    @property
    def judged(self) -> Counter:
        """Passing records by how thoroughly they judged the kernel: what the green rests on."""
        return Counter(view.judged for view in self.records if view.verdict == "pass" and view.judged)

    @property
    def unrun(self) -> int:
        """Checks that did not run, placed in the matrix (their kernel known from the plan)."""
        return sum(cell.unrun for _, cells in self.matrix for cell in cells if cell)

    @property
    def tone(self) -> str:
        """The headline's colour: red for news, amber for an incomplete run or known findings only,
        green only for a run that ran its whole plan and held."""
        if self.counts["fail"] + self.counts["divergence"] + self.counts["error"]:
            return "bad"
        if self.progress.incomplete:
            return INCOMPLETE
        return "known" if self.counts["known"] else "good"

    @property
    def headline(self) -> str:
        """What held, preceded by INCOMPLETE and how much of the plan ran where it did not all run."""
        held = self._held
        if not self.progress.incomplete:
            return held
        return f"{self.progress.text}. {held[:1].upper()}{held[1:]}"

    @property
    def _held(self) -> str:
        total = len(self.records)
        bad = self.counts["fail"] + self.counts["divergence"] + self.counts["error"]
        known, passed = self.counts["known"], self.counts["pass"]
        unreproduced = sum(view.finding_not_reproduced for view in self.records)
        notes = "".join([f"; {_plural(known, 'known finding')} reproduced" if known else "",
                         f"; {_plural(unreproduced, 'known finding')} did not reproduce" if unreproduced else "",
                         f", {self.counts['skip']} skipped" if self.counts["skip"] else ""])
        if bad:
            return f"{bad} of {total} checks did not hold{notes}"
        if passed:
            return f"all {passed} {'other ' if known else ''}checks that ran held{notes}"
        if known:
            return notes.lstrip("; ")
        return f"no check ran ({total} records{notes})"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _document_adapter(document: ResultsDocument) -> AdapterRecord | None:
    seen = Counter(r.adapter for r in document.records if r.adapter is not None)
    return seen.most_common(1)[0][0] if seen else None


def _share(document: ResultsDocument) -> int | None:
    """How many checks of its plan `document` was to run: the whole plan, or a shard's part of it
    (every N-th job from the K-th, verify.plan.select_shard; the skip records go with shard 1)."""
    index, count = shard_of(document.shard, document.path or "results") if document.shard else (1, 1)
    plan = document.plan
    if plan is not None:
        return len(range(index - 1, plan.jobs, count)) + (plan.skipped if index == 1 else 0)
    return document.planned if document.planned and count == 1 else None


def _run_summary(index: int, document: ResultsDocument, adapters: list) -> dict:
    return {
        "index": index + 1,
        "command": " ".join(["verify", *document.argv]) if document.argv else document.command,
        "profile": document.profile, "host": document.host, "started": document.started,
        "finished": document.finished, "verify_version": document.verify_version,
        "complete": document.complete,
        "interrupted": document.interrupted,
        "aborted": document.aborted,
        "records": len(document.records),
        "planned": _share(document),
        "adapters": adapters,
        "shard": document.shard,
    }


def _column(columns: dict, info: AdapterRecord) -> AdapterColumn:
    column = AdapterColumn(info.name, info.backend, info.driver, info.type, info.subgroup_size, info.implementation,
                           index=len(columns))
    column = columns.setdefault(column.key, column)
    if getattr(info, "implementation_version", "") and not column.implementation_version:
        column.implementation_version = info.implementation_version
    deviating = getattr(info, "deviating", None)
    if deviating is not None and column.deviations is None:
        column.deviations = deviating
    return column


#: The column of checks planned on an implementation none of whose checks got a record.
NOT_REACHED = "adapter not reached"


@dataclass
class _PlanGroup:
    """Documents of one plan: a split gate's shards (one split, one plan), or one document."""

    runs: list  # [(run index, document)]
    split: int = 0  # N for the shards of a gate split N ways, else 0

    @property
    def plan(self):
        plans = {d.plan for _, d in self.runs}
        return plans.pop() if len(plans) == 1 else None

    def planned(self) -> int | None:
        """The checks of the plan (of all its shards); None where the documents do not record it."""
        plan = self.plan
        if plan is not None:
            return plan.jobs + plan.skipped
        if self.split:
            sizes = {d.planned for _, d in self.runs}
            return sizes.pop() if len(sizes) == 1 and 0 not in sizes else None
        return _share(self.runs[0][1])


def _plan_groups(documents: list[ResultsDocument]) -> list[_PlanGroup]:
    groups: dict[tuple, _PlanGroup] = {}
    for run, document in enumerate(documents):
        key: tuple
        if document.shard:
            count = shard_of(document.shard, document.path or "results")[1]
            key = ("split", count, document.plan.fingerprint if document.plan else None)
        else:
            key = ("run", run)
        groups.setdefault(key, _PlanGroup([], key[1] if document.shard else 0)).runs.append((run, document))
    return list(groups.values())


def _stopped(run: int, document: ResultsDocument, alone: bool) -> str | None:
    """Why `document` is not complete, in words ("the run was interrupted"); None if it is."""
    if document.complete:
        return None
    label = "the run" if alone else f"run {run + 1}" + (f" (shard {document.shard})" if document.shard else "")
    if document.interrupted:
        return f"{label} was interrupted"
    if document.aborted:
        return f"{label} stopped: {document.aborted}"
    return f"{label} has not finished (it is still running, or was stopped from outside)"


def _progress(documents: list[ResultsDocument], views: list, columns: dict) -> tuple[Progress, Counter]:
    """How much of the documents' plans ran, and the checks that did not run by (kernel, column
    key), placed on the column their implementation's records ran on."""
    progress = Progress(planned=0)
    unrun: Counter[tuple[str, tuple]] = Counter()
    for group in _plan_groups(documents):
        progress.reasons += [why for run, document in group.runs
                             if (why := _stopped(run, document, len(documents) == 1))]
        if group.split:
            present = {shard_of(d.shard, d.path or "results")[0] for _, d in group.runs}
            absent = [f"{k}/{group.split}" for k in range(1, group.split + 1) if k not in present]
            if absent:
                which = (f"shard {absent[0]}" if len(absent) == 1 else f"shards {', '.join(absent)}" if len(absent) <= 4
                         else f"{len(absent)} of the {group.split} shards")
                progress.reasons.append(f"{which} of the gate split {group.split} ways "
                                        f"{'is' if len(absent) == 1 else 'are'} not in this report")
        records = [r for _, d in group.runs for r in d.records]
        planned, plan = group.planned(), group.plan
        progress.located &= bool(plan and plan.layout)
        if plan is None:
            ran = len(records)
            incomplete = any(not d.complete for _, d in group.runs) or (group.split and planned is None)
            if planned is None and incomplete:
                progress.planned = None
            if progress.planned is not None:
                progress.planned += planned if planned is not None else ran
            progress.ran += min(ran, planned) if planned is not None else ran
            continue
        assert planned is not None  # a group with its plan has its size (plan.jobs + plan.skipped)
        ran_ids = {r.job_id for r in records if r.job_id is not None and 0 <= r.job_id < plan.jobs}
        unnumbered = min(sum(1 for r in records if r.job_id is None), plan.skipped)
        if progress.planned is not None:
            progress.planned += planned
        progress.ran += len(ran_ids) + unnumbered
        missing = sorted(set(range(plan.jobs)) - ran_ids)
        owners = plan.job_owners()
        progress.unlocated += plan.skipped - unnumbered + (0 if owners else len(missing))
        if owners and missing:
            runs = {run for run, _ in group.runs}
            place = _placing(group, [v for v in views if v.run - 1 in runs], columns)
            for job in missing:
                kernel, implementation = owners[job]
                unrun[(kernel, place(implementation).key)] += 1
    return progress, unrun


def _placing(group: _PlanGroup, views: list, columns: dict):
    """implementation -> the column its records in `group` ran on most (any, for a job of the
    default implementation; a column of its own where none of its checks got a record)."""
    by_implementation: dict[str, Counter] = {}
    for view in views:
        by_implementation.setdefault(view.adapter.implementation, Counter())[view.adapter.key] += 1
    everywhere = sum(by_implementation.values(), Counter())

    def place(implementation: str) -> AdapterColumn:
        seen = by_implementation.get(implementation) or (everywhere if not implementation else None)
        if seen:
            return columns[seen.most_common(1)[0][0]]
        return _column(columns, AdapterRecord(NOT_REACHED, implementation=implementation))
    return place


def build_report(documents: list[ResultsDocument]) -> Report:
    columns: dict[tuple, AdapterColumn] = {}
    views, runs = [], []
    for run, document in enumerate(documents):
        fallback = _document_adapter(document) or AdapterRecord("unknown adapter")
        run_columns = []
        for record in document.records:
            column = _column(columns, record.adapter or fallback)
            if document.host and document.host not in column.hosts:
                column.hosts.append(document.host)
            if column not in run_columns:
                run_columns.append(column)
            worst = record.worst
            view = RecordView(record, "", run + 1, column, record.verdict.value,
                              worst.score if worst is not None else None, bool(worst and worst.outputs))
            if record.verdict.value in CARDS:
                view.kind = failure_kind(record)
            views.append(view)
        runs.append(_run_summary(run, document, [c.label for c in run_columns]))
    progress, unrun = _progress(documents, views, columns)
    views.sort(key=lambda v: (_ORDER[v.verdict], v.record.kernel, v.record.check, v.config, v.adapter.index, v.run))
    for i, view in enumerate(views):
        view.anchor = f"r{i + 1}"
    adapters = list(columns.values())
    kernels = sorted({v.record.kernel for v in views} | {kernel for kernel, _ in unrun})
    cells: dict[tuple[str, tuple], Cell | None] = {(k, a.key): None for k in kernels for a in adapters}
    for view in views:
        key = (view.record.kernel, view.adapter.key)
        cell = cells[key] = cells[key] or Cell()
        cell.add(view)
    for key, count in unrun.items():
        cell = cells[key] = cells[key] or Cell()
        cell.unrun += count
        columns[key[1]].unrun += count
    for view in views:
        view.adapter.counts[view.verdict] += 1
    matrix = [(k, [cells[(k, a.key)] for a in adapters]) for k in kernels]
    return Report(runs, adapters, views, Counter(v.verdict for v in views), matrix, shard_problems(documents),
                  launch_coverage(views), progress)


def launch_coverage(views: list[RecordView]) -> list:
    """[(kernel, [(path, cases)])] for the kernels whose launch has host-side branches."""
    paths: dict = {}
    for view in views:
        for path, count in view.record.launch_paths.items():
            counts = paths.setdefault(view.record.kernel, Counter())
            counts[path] += count
    return [(kernel, sorted(counts.items())) for kernel, counts in sorted(paths.items())]
