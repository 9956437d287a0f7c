"""Where a run writes, checked before it starts: a folder or file that cannot be written fails in
the first second with one line naming the option, not after an hour of checks.

"Writable" is found out by writing, not by asking: `os.access` answers yes to root for a read-only
file, for /proc and for a full or read-only file system, where the first real write then fails.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from verify.errors import UsageError


def output_folder(path: str | os.PathLike, option: str) -> Path:
    """`path` as a folder a run can write into, made if missing; UsageError naming `option` else."""
    text = os.fspath(path)
    if not text.strip():
        raise UsageError(f"{option} is empty: name a folder (an empty name would write into the current folder)")
    folder = Path(text)
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{option} {text}: is a file, not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {text}: cannot create the folder ({exc.strerror or exc})") from None
    _probe(folder, option, text)
    return folder


def output_file(path: str | os.PathLike, option: str) -> Path:
    """`path` as a file a run can write (its folder made if missing, an existing file left as it
    is); UsageError naming `option` else."""
    text = os.fspath(path)
    if not text.strip():
        raise UsageError(f"{option} is empty: name the file to write")
    file = Path(text)
    if file.is_dir():
        raise UsageError(f"{option} {text}: is a folder; name the file to write")
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{option} {text}: cannot create its folder ({exc.strerror or exc})") from None
    _probe(file.parent, option, text)
    if file.exists():
        try:
            with open(file, "ab"):
                pass
        except OSError as exc:
            raise UsageError(f"{option} {text}: not writable ({exc.strerror or exc})") from None
    return file


def _probe(folder: Path, option: str, text: str) -> None:
    """Write and remove a small file in `folder` (a few bytes, which a full disk refuses too)."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".verify-probe-") as probe:
            probe.write(b"\0" * 64)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as exc:
        raise UsageError(f"{option} {text}: cannot write there ({exc.strerror or exc})") from None
