"""The results file: run metadata plus one record (a CheckResult) per check, rewritten
atomically after every record, so an interrupted run still leaves a valid (partial) file."""

from __future__ import annotations

import json
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

from verify._version import __version__
from verify.errors import UsageError
from verify.results.atomic import write_atomic
from verify.results.record import CheckResult, to_json_value

SCHEMA = "verify.results/2"
#: Schemas this version reads: /1 records are the same fields, untyped.
READABLE = ("verify.results/1", SCHEMA)


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
    records: list[CheckResult] = field(default_factory=list)
    #: Where the document was read from ("" for one being written).
    path: str = ""

    def to_dict(self) -> dict:
        data = {"schema": SCHEMA}
        for name in ("command", "argv", "profile", "host", "started", "finished", "complete", "interrupted",
                     "verify_version", "shard", "planned"):
            data[name] = to_json_value(getattr(self, name))
        data["records"] = [r.to_dict() for r in self.records]
        return data


class ResultsWriter:
    def __init__(self, path: Path, *, command: str, argv: list, profile: str, shard: str = "", planned: int = 0):
        self.path = Path(path)
        self.document = ResultsDocument(command=command, argv=list(argv), profile=profile, host=platform.node(),
                                        started=time.strftime("%Y-%m-%dT%H:%M:%S%z"), shard=shard, planned=planned)
        self.flush()

    @property
    def records(self) -> list[CheckResult]:
        return self.document.records

    def add(self, record: CheckResult) -> None:
        self.records.append(record)
        self.flush()

    def finish(self, *, interrupted: bool = False, order=None) -> None:
        """Mark the run finished; `order` (a key function) puts the records in plan order, which
        parallel workers do not finish in."""
        if order is not None:
            self.document.records.sort(key=order)
        self.document.complete = not interrupted
        self.document.interrupted = interrupted
        self.document.finished = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self.flush()

    def flush(self) -> None:
        write_atomic(self.path, json.dumps(self.document.to_dict(), indent=1))


def load_results(path: str | Path) -> ResultsDocument:
    """A results document; UsageError with one line naming the file and the problem."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such results file") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a folder, not a results file (try {path / 'results.json'})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    return parse_results(data, str(path))


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
                       ("finished", str), ("complete", bool), ("interrupted", bool), ("verify_version", str),
                       ("shard", str), ("planned", int)):
        if name in data and data[name] is not None:
            if not isinstance(data[name], kind):
                raise UsageError(f"{path}: {name!r} should be a {kind.__name__}, not {type(data[name]).__name__}")
            setattr(document, name, data[name])
    document.records = [CheckResult.from_dict(r, f"{path}: record {i}") for i, r in enumerate(records)]
    # Kernels a /1 gate could not set up were kept beside the records; they are skipped checks.
    for i, r in enumerate(data.get("skipped_kernels") or []):
        document.records.append(CheckResult.from_dict(r, f"{path}: skipped kernel {i}"))
    return document
