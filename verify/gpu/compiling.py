"""Who is told when a WebGPU implementation compiles a pipeline.

Compiling is not running the kernel: on a software driver with a cold shader cache, one of TVM's
prefill pipelines takes up to 100 s to compile (several times that sanitized, or on a busy
machine), where its dispatches take milliseconds. So the time a check spends compiling must not
count against the check's time limit, which is meant for the kernel's own work (a kernel that
does not return). Every implementation wraps a real compile (not a cache hit) in `compiling()`;
the worker listens (verify.worker) and reports a "compiling" stage to the parent, whose clock
pauses the check's limit and gives the compile an allowance of its own (verify.session).

Each real compile is also counted, with what it compiled (`compiled()`): a check's record says
how many pipelines its worker compiled for it (CheckResult.pipelines_compiled), and a gate the
sum (docs/performance.md).
"""

from __future__ import annotations

import time
from contextlib import contextmanager

#: The name of the stage a check is in while a pipeline compiles (verify.protocol.Stage).
COMPILING = "compiling"

_listener = None
_depth = 0
#: What each real compile of this process compiled, in order ("implementation digest", or "").
_compiled: list[str] = []
#: The seconds each of those compiles took, in the same order.
_seconds: list[float] = []


def listen(callback) -> None:
    """Call `callback(True)` when the outermost compile starts and `callback(False)` when it ends
    (None: nobody listens). One listener per process: the worker's."""
    global _listener
    _listener = callback


def compiled() -> list[str]:
    """What this process has compiled so far, one entry per real compile (outermost only)."""
    return list(_compiled)


def compile_seconds() -> list[float]:
    """How long each of compiled()'s compiles took, in its order (a compile still running: 0)."""
    return _seconds + [0.0] * (len(_compiled) - len(_seconds))


@contextmanager
def compiling(what: str = ""):
    """Around a real compile of `what` (the implementation and the WGSL's digest); nested ones
    (a wrapper compiling through the device it wraps) count once."""
    global _depth
    _depth += 1
    if _depth == 1:
        _compiled.append(what)
    if _depth == 1 and _listener is not None:
        _listener(True)
    started = time.perf_counter()
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _seconds.append(time.perf_counter() - started)
        if _depth == 0 and _listener is not None:
            _listener(False)
