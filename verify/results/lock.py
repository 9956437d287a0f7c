"""One run at a time per output folder.

Two runs writing into one `--out` would each rewrite results.json with only their own records
and the last one would silently win; the lock makes the second run stop before it writes
anything, naming the run that holds the folder. The lock is an advisory `flock` on a file in the
folder, released by the kernel when its process ends, however it ends: a killed run never leaves
the folder locked.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from verify.errors import UsageError

LOCK_NAME = ".verify.lock"


class OutputLock:
    """Held for the duration of a run into `folder`."""

    def __init__(self, folder: Path):
        self.path = Path(folder) / LOCK_NAME
        self._fd: int | None = None

    def __enter__(self) -> OutputLock:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise UsageError(f"{self.path.parent}: another verify run (pid {holder}) is writing there; wait for it "
                             "to finish or choose another --out") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self._fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing releases the flock
            self._fd = None
