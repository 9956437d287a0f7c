"""Where verify keeps what it can make again: one folder, `$VERIFY_CACHE`, else
`$XDG_CACHE_HOME/verify` (`~/.cache/verify`). Dawn's Node packages and Mesa 25 (`verify setup
--dawn`), the workers' Hypothesis database, the semantics probes and the report's kept plots
live in it.

The rule is here, at the bottom of verify, and uses only the standard library: Dawn's installer
(verify.gpu.dawn.install), which scripts/setup_dawn.sh runs as a plain file before the project is
installed, reads it from this file too.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """$VERIFY_CACHE, else $XDG_CACHE_HOME/verify (~/.cache/verify)."""
    if os.environ.get("VERIFY_CACHE"):
        return Path(os.environ["VERIFY_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "verify"
