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
    try:
        # Inside the try: a SIGTERM that arrives once its handler is in, while SIGHUP's is still
        # being installed, is one line and exit 130 like any other.
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _stop)
        from verify.cli import main as run

        code = run()
    except KeyboardInterrupt:
        print("verify: interrupted", file=sys.stderr)
        code = 130
    return _done(code)


def _done(code: int) -> int:
    """`code`, with every later SIGINT, SIGTERM and SIGHUP ignored: what the run had to write is
    written, and a signal while the interpreter shuts down (which restores the default handlers)
    would otherwise end the process by the signal instead of with its exit code."""
    while True:
        try:
            for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(signum, signal.SIG_IGN)
            return code
        except KeyboardInterrupt:  # a signal before the last handler was replaced
            code = code or 130


if __name__ == "__main__":
    sys.exit(main())
