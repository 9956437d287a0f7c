"""Write-then-rename, so a reader (or a crash) never sees a half-written file; and texts kept on
disk that one process makes while the others that want them wait."""

from __future__ import annotations

import fcntl
import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, text: str | bytes) -> None:
    """Write `text` (str, or bytes written as they are) to `path` whole or not at all."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.fchmod(fd, 0o666 & ~_umask())  # mkstemp makes 0600; results and reports are for sharing
    try:
        with os.fdopen(fd, "wb" if isinstance(text, bytes) else "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def made_once(path: Path, make: Callable[[], str]) -> str:
    """The text kept at `path`, else `make()`'s, kept there. One process makes it at a time (an
    advisory flock on a file beside it, released however its holder ends), so processes that want
    one slow text at once (an ORT capture of minutes, planned by two processes or two workers)
    make it once: the others wait for it and read it.

    A cache folder that cannot hold it (a file where the folder should be, a read-only or full
    disk) is a SetupError naming the folder: the machine's set-up, one line, never a traceback."""
    path = Path(path)
    try:
        if path.is_file():
            return path.read_text()
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.parent / f".{path.name}.lock", "w")
    except OSError as exc:
        raise _unusable(path, exc) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():  # made while this process waited
            return path.read_text()
        text = make()
        try:
            write_atomic(path, text)
        except OSError as exc:
            raise _unusable(path, exc) from None
        return text


def _unusable(path: Path, exc: OSError):
    from verify.errors import SetupError

    return SetupError(f"cannot keep {path.name} in the cache folder {path.parent} ({exc.strerror or exc}): make it "
                      "a writable folder with room, or point VERIFY_CACHE, VERIFY_TVM_CACHE or VERIFY_ORT_CACHE "
                      "elsewhere")
