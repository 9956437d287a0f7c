"""The results file: run metadata plus one record (a CheckResult) per check, rewritten
atomically after every record, so an interrupted run still leaves a valid (partial) file.

A run that ends before its first record (a usage error, a signal) leaves an earlier results file
in the folder as it was: nothing is written until there is something to keep. A run that stops on
an error after some records is written with `complete: false` and the error as `aborted`, never as
complete. A disk that refuses a write stops the run with one line; the last complete results file
stays (the write goes to a temporary file first).
"""

from __future__ import annotations

import errno
import json
import os
import platform
import re
import stat
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from verify._files import write_atomic
from verify._version import __version__
from verify.errors import UsageError
from verify.results.record import CheckResult, to_json_value

SCHEMA = "verify.results/2"
#: Schemas this version reads: /1 records are the same fields, untyped.
READABLE = ("verify.results/1", SCHEMA)


#: The largest results file read (bytes). A whole ci gate's is about 10 MB, a nightly's a few times
#: that; past this bound a file is not one verify wrote, and reading it would only exhaust memory.
MAX_RESULTS_BYTES = 512 << 20

#: The most shards a gate may be split into (a split into more shards than jobs runs nothing).
MAX_SHARDS = 100_000
_SHARD = re.compile(r"^(\d{1,6})/(\d{1,6})$")


@dataclass(frozen=True)
class PlanIdentity:
    """What a run set out to do, so shards of one gate can be proved to be that gate's.

    `fingerprint` is the sha256 of the whole plan: every job's identity (kernel and its import
    path, check, config, implementation, subgroup width, examples), the sha256 of the WGSL each
    would run, the profile, the seed and verify's version (verify.plan.plan_identity). `jobs` is
    how many jobs the whole plan has (ids 0..jobs-1), `skipped` how many kernels it could not plan
    (reported by shard 1 as SKIP records)."""

    fingerprint: str
    jobs: int
    skipped: int = 0
    #: The plan's jobs in id order as runs of (kernel, implementation, count): which kernel and
    #: implementation each job id belongs to, so a report can say which kernels' checks did not run
    #: (an interrupted run, a missing shard). () in files written before it was recorded.
    layout: tuple = ()

    def laid_out(self, jobs) -> PlanIdentity:
        """This plan with the layout of `jobs`, the whole plan (all shards) in id order."""
        runs: list[list] = []
        for job in sorted(jobs, key=lambda j: j.id):
            key = [job.kernel, job.implementation or ""]
            if runs and runs[-1][:2] == key:
                runs[-1][2] += 1
            else:
                runs.append(key + [1])
        return replace(self, layout=tuple(tuple(run) for run in runs))

    def job_owners(self) -> list[tuple[str, str]] | None:
        """(kernel, implementation) of each job id, from the layout; None where none was recorded."""
        if not self.layout:
            return None
        return [(kernel, implementation) for kernel, implementation, count in self.layout for _ in range(count)]


@dataclass
class ResultsDocument:
    """One run's results: what ran it, where, whether it finished, and its records."""

    command: str = ""
    argv: list = field(default_factory=list)
    profile: str = ""
    host: str = ""
    started: str = ""
    finished: str = ""
    complete: bool = False
    interrupted: bool = False
    verify_version: str = __version__
    #: "K/N" when this run is shard K of a gate split N ways (`verify gate --shard K/N`).
    shard: str = ""
    #: Checks in the whole plan (all shards), so a merge can tell whether every one ran.
    planned: int = 0
    #: The plan this run is (a part of); None in files written before plans were recorded.
    plan: PlanIdentity | None = None
    #: Why the run stopped before its end (a usage or setup error, a full disk); "" otherwise.
    aborted: str = ""
    records: list[CheckResult] = field(default_factory=list)
    #: Where the document was read from ("" for one being written).
    path: str = ""

    def to_dict(self, records: bool = True) -> dict:
        """The document as JSON values; records=False leaves the records out (the writer adds
        their texts, made once each)."""
        data: dict[str, object] = {"schema": SCHEMA}
        for name in ("command", "argv", "profile", "host", "started", "finished", "complete", "interrupted",
                     "aborted", "verify_version", "shard", "planned"):
            data[name] = to_json_value(getattr(self, name))
        data["plan"] = asdict(self.plan) if self.plan is not None else None
        data["pipelines_compiled"] = pipelines_compiled(self.records)
        if records:
            data["records"] = [r.to_dict() for r in self.records]
        return data


class ResultsWriter:
    """Writes one run's results file as its records arrive (nothing before the first)."""

    def __init__(self, path: Path, *, command: str, argv: list, profile: str, shard: str = "", planned: int = 0,
                 plan: PlanIdentity | None = None):
        self.path = Path(path)
        self.document = ResultsDocument(command=command, argv=list(argv), profile=profile, host=platform.node(),
                                        started=time.strftime("%Y-%m-%dT%H:%M:%S%z"), shard=shard, planned=planned,
                                        plan=plan)
        self.written = False
        #: Each record's JSON text, by the record's identity: a record is final once added, so the
        #: file is rewritten from these texts without serialising every earlier record again.
        self._texts: dict[int, tuple[CheckResult, str]] = {}

    @property
    def records(self) -> list[CheckResult]:
        return self.document.records

    def add(self, record: CheckResult, *, write: bool = True) -> None:
        """Keep `record`, and write the file unless told not to (records known before the run's
        first job, e.g. kernels it could not plan, wait for a record of a job)."""
        self.records.append(record)
        if write:
            self.flush()

    def finish(self, *, interrupted: bool = False, aborted: str = "", order=None) -> bool:
        """Mark the run finished (or interrupted, or aborted with the reason) and write it; `order`
        (a key function) puts the records in plan order, which parallel workers do not finish in.
        A run that did not end normally and has no record of a job writes nothing (an earlier file
        in the folder stays). Returns whether the file was written."""
        if order is not None:
            self.document.records.sort(key=order)
        self.document.complete = not interrupted and not aborted
        self.document.interrupted = interrupted
        self.document.aborted = aborted
        self.document.finished = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        if self.document.complete or self.written or any(r.job_id is not None for r in self.records):
            self.flush()
        return self.written

    def flush(self) -> None:
        """Write the document; UsageError (one line) when the disk refuses.

        The gate writes the whole file after every batch of records that arrived together, before
        it prints them, so a run killed at any moment leaves every record it printed. Serialising
        the whole document each time grew with the run (0.3 s per record at 337 records, in the
        parent, while workers waited for their next job), so each record is serialised once and the
        file is assembled from those texts: the same bytes as
        json.dumps(document.to_dict(), indent=1)."""
        try:
            write_atomic(self.path, self.text())
        except OSError as exc:
            kept = "the last complete version is kept" if self.path.exists() else "nothing was written"
            raise UsageError(f"{self.path}: cannot write the results ({exc.strerror or exc}); {kept}") from None
        self.written = True


    def text(self) -> str:
        """The document as JSON (indent 1), each record's text made once."""
        data = self.document.to_dict(records=False)
        if not self.records:
            return json.dumps(dict(data, records=[]), indent=1)
        head = json.dumps(data, indent=1)
        texts = []
        for record in self.records:
            kept = self._texts.get(id(record))
            if kept is None or kept[0] is not record:
                kept = self._texts[id(record)] = (record, json.dumps(record.to_dict(), indent=1))
            texts.append("  " + kept[1].replace("\n", "\n  "))
        return head[:-2] + ',\n "records": [\n' + ",\n".join(texts) + "\n ]\n}"


def load_results(path: str | Path) -> ResultsDocument:
    """A results document; UsageError with one line naming the file and the problem."""
    path = Path(path)
    try:
        data = json.loads(read_results_text(path))
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    except RecursionError:
        raise UsageError(f"{path}: not a verify results file (JSON nested too deeply)") from None
    try:
        return parse_results(data, str(path))
    except RecursionError:
        raise UsageError(f"{path}: not a verify results file (a value nested too deeply)") from None


def results_file_problem(path: str | Path) -> str | None:
    """Why `path` cannot be a results file, from its metadata alone (None if it may be one): not
    there, a folder, a symbolic link loop, a FIFO, device or socket (whose read may block for
    ever, or never end: /dev/zero), or larger than MAX_RESULTS_BYTES. Nothing is opened."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "no such results file"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "too many levels of symbolic links (a link loop?)"
        return f"cannot read ({exc.strerror or exc})"
    return _metadata_problem(path, info)


def _metadata_problem(path, info: os.stat_result) -> str | None:
    if stat.S_ISDIR(info.st_mode):
        return f"is a folder, not a results file (try {Path(path) / 'results.json'})"
    if not stat.S_ISREG(info.st_mode):
        return "not a regular file (a FIFO, device or socket), so not a results file"
    if info.st_size > MAX_RESULTS_BYTES:
        return (f"larger than {MAX_RESULTS_BYTES >> 20} MiB ({info.st_size >> 20} MiB), more than any results "
                "file verify writes")
    return None


def read_results_text(path: Path) -> str:
    """The text of the results file `path`, read without blocking and no further than
    MAX_RESULTS_BYTES; UsageError (one line) for anything that is not a regular file of sane size
    (results_file_problem). The opened file is checked again, so one swapped in after the first
    look (a FIFO for the file) is refused too, and O_NONBLOCK keeps opening a FIFO from waiting
    for a writer."""
    problem = results_file_problem(path)
    if problem is not None:
        raise UsageError(f"{path}: {problem}")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        problem = results_file_problem(path) or f"cannot read ({exc.strerror or exc})"
        raise UsageError(f"{path}: {problem}") from None
    with os.fdopen(fd, "rb") as handle:
        problem = _metadata_problem(path, os.fstat(handle.fileno()))
        if problem is not None:
            raise UsageError(f"{path}: {problem}")
        try:
            data = handle.read(MAX_RESULTS_BYTES + 1)
        except OSError as exc:
            raise UsageError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) > MAX_RESULTS_BYTES:  # grew since it was looked at
        raise UsageError(f"{path}: larger than {MAX_RESULTS_BYTES >> 20} MiB, more than any results file verify writes")
    return data.decode("utf-8")


def pipelines_compiled(records) -> int | None:
    """Pipelines the run's workers compiled for its records (CheckResult.pipelines_compiled),
    records reused from an earlier run (--reuse) not counted; None where no record says."""
    counts = [r.pipelines_compiled for r in records if r.pipelines_compiled is not None and not r.reused_from]
    return sum(counts) if counts else None


def parse_results(data, where: str = "results") -> ResultsDocument:
    """A results document from its JSON value; UsageError naming `where` and the problem."""
    path = where
    if not isinstance(data, dict) or data.get("schema") not in READABLE:
        found = data.get("schema") if isinstance(data, dict) else None
        hint = f" (found {found!r}: written by a newer verify?)" if isinstance(found, str) else ""
        raise UsageError(f"{path}: not a verify results file (expected schema {SCHEMA!r}){hint}")
    records = data.get("records")
    if not isinstance(records, list):
        raise UsageError(f"{path}: 'records' is missing or not a list")
    document = ResultsDocument(path=str(path))
    for name, kind in (("command", str), ("argv", list), ("profile", str), ("host", str), ("started", str),
                       ("finished", str), ("complete", bool), ("interrupted", bool), ("aborted", str),
                       ("verify_version", str), ("shard", str), ("planned", int)):
        if name in data and data[name] is not None:
            if not isinstance(data[name], kind) or (kind is int and isinstance(data[name], bool)):
                raise UsageError(f"{path}: {name!r} should be a {kind.__name__}, not {type(data[name]).__name__}")
            setattr(document, name, data[name])
    if document.planned < 0:
        raise UsageError(f"{path}: 'planned' is {document.planned}; a plan has no fewer than 0 checks")
    if document.shard:
        shard_of(document.shard, path)
    document.plan = _plan(data.get("plan"), path)
    document.records = [CheckResult.from_dict(r, f"{path}: record {i}") for i, r in enumerate(records)]
    # Kernels a /1 gate could not set up were kept beside the records; they are skipped checks.
    for i, r in enumerate(data.get("skipped_kernels") or []):
        document.records.append(CheckResult.from_dict(r, f"{path}: skipped kernel {i}"))
    return document


def shard_of(text: str, where: str = "shard") -> tuple[int, int]:
    """(K, N) of a shard written "K/N" with 1 <= K <= N <= MAX_SHARDS; UsageError otherwise."""
    found = _SHARD.match(text) if isinstance(text, str) else None
    index, count = (int(found[1]), int(found[2])) if found else (0, 0)
    if not found or not 1 <= index <= count <= MAX_SHARDS:
        raise UsageError(f"{where}: shard {text!r} is not K/N with 1 <= K <= N <= {MAX_SHARDS}")
    return index, count


def _plan(value, path: str) -> PlanIdentity | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UsageError(f"{path}: 'plan' should be an object, not {type(value).__name__}")
    fingerprint, jobs, skipped = value.get("fingerprint"), value.get("jobs"), value.get("skipped", 0)
    if not isinstance(fingerprint, str) or not re.fullmatch(r"[0-9a-f]{64}", fingerprint):
        raise UsageError(f"{path}: the plan's fingerprint is not a sha256")
    for name, number in (("jobs", jobs), ("skipped", skipped)):
        if not isinstance(number, int) or isinstance(number, bool) or not 0 <= number <= 10**7:
            raise UsageError(f"{path}: the plan's {name} should be a count, not {number!r}")
    assert isinstance(jobs, int)  # as the loop above checked (and skipped)
    return PlanIdentity(fingerprint, jobs, skipped, _layout(value.get("layout") or [], jobs, path))


def _layout(value, jobs: int, path: str) -> tuple:
    """The plan's layout, checked: runs of [kernel, implementation, count] covering its jobs once."""
    if not isinstance(value, list):
        raise UsageError(f"{path}: the plan's layout should be a list, not {type(value).__name__}")
    runs = []
    for run in value:
        if not (isinstance(run, list) and len(run) == 3 and isinstance(run[0], str) and isinstance(run[1], str)
                and isinstance(run[2], int) and not isinstance(run[2], bool) and run[2] > 0):
            raise UsageError(f"{path}: the plan's layout holds {run!r}, not [kernel, implementation, count]")
        runs.append(tuple(run))
    if runs and sum(run[2] for run in runs) != jobs:
        raise UsageError(f"{path}: the plan's layout covers {sum(run[2] for run in runs)} jobs; the plan has {jobs}")
    return tuple(runs)
