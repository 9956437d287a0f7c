"""Where verify keeps what it can make again: one folder, `$VERIFY_CACHE`, else
`$XDG_CACHE_HOME/verify` (`~/.cache/verify`). Dawn's Node packages and Mesa 25 (`verify setup
--dawn`), the workers' Hypothesis database and the report's kept plots live in it.

The rule is defined in verify.gpu.dawn.install, which scripts/setup_dawn.sh runs as a plain file
before the project is installed (so it imports only the standard library); everything else takes
it from here.
"""

from verify.gpu.dawn.install import cache_dir

__all__ = ["cache_dir"]
