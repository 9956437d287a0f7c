"""Process environment every WebGPU implementation here shares."""

from __future__ import annotations

import os


def quiet_environment() -> None:
    """Mesa warns on every start without XDG_RUNTIME_DIR; give it (and child processes) a private one."""
    if not os.environ.get("XDG_RUNTIME_DIR"):
        path = f"/tmp/verify-xdg-{os.getuid()}"
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.environ["XDG_RUNTIME_DIR"] = path
