"""The `verify` command's entry point: signals are answered from the first moment.

SIGTERM and SIGHUP (a CI timeout, a closed terminal) stop verify as Ctrl-C does, and Ctrl-C
during start-up (while the command's modules are still importing) is one line and exit 130, never
a traceback or an exit by the signal: the handlers are installed before anything heavy is
imported. A run installs its own handlers while it runs (verify.cli) and puts these back after.
"""

import signal
import sys


def _stop(signum, frame):
    raise KeyboardInterrupt


def main() -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    try:
        from verify.cli import main as run

        return run()
    except KeyboardInterrupt:
        print("verify: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
