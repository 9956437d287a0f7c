"""The results file: run metadata plus one record per check, rewritten atomically after
every record, so an interrupted run still leaves a valid (partial) file."""

from __future__ import annotations

import json
import math
import platform
import time
from pathlib import Path

from verify import __version__
from verify.errors import UsageError
from verify.results.atomic import write_atomic

SCHEMA = "verify.results/1"
REQUIRED_RECORD_KEYS = ("kernel", "check", "config", "verdict")


class ResultsWriter:
    def __init__(self, path: Path, meta: dict):
        self.path = Path(path)
        self.document = {
            "schema": SCHEMA,
            "verify_version": __version__,
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "host": platform.node(),
            "complete": False,
            **meta,
            "records": [],
        }
        self.flush()

    @property
    def records(self) -> list:
        return self.document["records"]

    def add(self, record: dict) -> None:
        self.records.append(record)
        self.flush()

    def finish(self, **meta) -> None:
        self.document.update(meta, complete=True, finished=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        self.flush()

    def flush(self) -> None:
        write_atomic(self.path, json.dumps(_sanitize(self.document), indent=1))


def _sanitize(value):
    """JSON has no inf/NaN: write them as strings (load_results turns them back)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_sanitize(v) for v in value]
    return value


def load_results(path: str | Path) -> dict:
    """A results document; UsageError with one line naming the file and the problem."""
    path = Path(path)
    try:
        document = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such results file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise UsageError(f"{path}: not a verify results file (expected schema {SCHEMA!r})")
    records = document.get("records")
    if not isinstance(records, list):
        raise UsageError(f"{path}: 'records' is missing or not a list")
    for i, record in enumerate(records):
        missing = [k for k in REQUIRED_RECORD_KEYS if not isinstance(record, dict) or k not in record]
        if missing:
            raise UsageError(f"{path}: record {i} lacks {', '.join(missing)}")
    return document
