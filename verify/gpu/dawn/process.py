"""The Node process that runs Dawn, and the binary frames Python and it exchange on its pipes.

A frame (both directions) is a u32 little-endian header length, a UTF-8 JSON header, then the
raw bytes of the blobs whose lengths the header lists under "blobs". Buffer contents are
blobs: nothing large is ever encoded as text.

The process must never outlive the Python process that started it, even when that one is
killed (verify.session kills a worker whose kernel hangs): it gets SIGKILL when its parent
dies (prctl PR_SET_PDEATHSIG), and it also exits by itself when its stdin reaches EOF.
PR_SET_PDEATHSIG follows the thread that started the process: open a DawnDevice in a thread
that lives as long as the device (the main thread, as verify.worker does).
"""

from __future__ import annotations

import collections
import ctypes
import ctypes.util
import json
import os
import select
import signal
import struct
import subprocess
import sys
import threading
import time
import weakref
from collections.abc import Sequence

from verify.errors import InfrastructureError, SetupError
from verify.gpu.environment import quiet_environment

#: The variable naming the descriptor a Node process writes its reply frames to (frames.mjs).
FRAMES_FD_ENVIRONMENT = "VERIFY_FRAMES_FD"
_HEADER_LENGTH = struct.Struct("<I")
_PR_SET_PDEATHSIG = 1
#: Loaded before any fork: the child may only call what is already loaded.
_LIBC = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True) if sys.platform == "linux" else None


#: Seconds Dawn's Node process may take to answer a request that has a time limit (start-up,
#: listing adapters, opening a device): far above the seconds it takes on a software driver.
ANSWER_S = float(os.environ.get("VERIFY_NODE_TIMEOUT", "120"))


class NodeProcessDied(InfrastructureError):
    """The Node process running Dawn exited (a crash in the driver, or a lost device): Dawn's
    infrastructure, not a verdict on the kernel."""


class NodeNotAnswering(SetupError):
    """The Node process running Dawn did not answer within its time limit (a wedged driver)."""


def encode_frame(header: dict, blobs: Sequence[bytes] = ()) -> list[bytes]:
    """The pieces of one frame, to be written in order (blobs are not copied)."""
    text = json.dumps(dict(header, blobs=[len(b) for b in blobs])).encode()
    return [_HEADER_LENGTH.pack(len(text)), text, *blobs]


def _die_with_parent(parent: int):
    libc = _LIBC
    assert libc is not None  # NodeProcess asks for this only where libc was loaded (Linux)

    def preexec() -> None:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before prctl took effect
            os._exit(1)
    return preexec


#: The NodeProcesses alive in this process (kill_all).
_LIVE: weakref.WeakSet[NodeProcess] = weakref.WeakSet()


def kill_all() -> None:
    """SIGKILL every Node process this process started and still runs, and reap them: for a
    process about to leave without its finalisers (verify.worker).

    Every one is killed before any is waited for: a Node process holding a Dawn device on
    NVIDIA's driver takes 1-3 s to be torn down after its SIGKILL, and a worker of the toggles
    check holds four, so killing and reaping them one by one kept a 16-worker gate's last workers
    alive 3-8 s after their last record; killed together, they are torn down at once."""
    running = [node for node in list(_LIVE) if node.proc.poll() is None]
    for node in running:
        node.proc.kill()
    for node in running:
        node.proc.wait()


class NodeProcess:
    """One `node [node_options] script` child (worker.mjs, or another script speaking the same
    frames): send a request frame, read its reply frame.

    Replies come on a pipe of their own ($VERIFY_FRAMES_FD in the child), not on stdout: Dawn
    prints warnings to stdout from native code, which in the reply stream read as a frame length
    and left a request waiting for ever (a dispatch of zero workgroups did it). Its stdout and
    stderr (Dawn's warnings, a lost device's reason) are kept, their last lines, to explain a death.
    """

    def __init__(self, node: str, script: str, env: dict, node_options: tuple[str, ...] = ()):
        quiet_environment()
        self._frames, frames_write = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [node, *node_options, script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env={**os.environ, **env, FRAMES_FD_ENVIRONMENT: str(frames_write)}, pass_fds=(frames_write,),
                preexec_fn=_die_with_parent(os.getpid()) if _LIBC else None,
            )
        except BaseException:
            os.close(self._frames)
            self._frames = -1
            raise
        finally:
            os.close(frames_write)  # the child's copy is the only write end: its death is EOF here
        _LIVE.add(self)
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._pending = bytearray()
        self._drain = threading.Thread(target=self._keep_stderr, daemon=True)
        self._drain.start()
        self._drain_stdout = threading.Thread(target=self._keep_stdout, daemon=True)
        self._drain_stdout.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def _keep_stderr(self) -> None:
        assert self.proc.stderr is not None  # the process was started with stderr=PIPE, as stdin and stdout
        for line in self.proc.stderr:
            self.stderr_tail.append(line.decode(errors="replace").rstrip())

    def _keep_stdout(self) -> None:
        """Dawn's native warnings (on stdout), kept with stderr's lines: never read as replies."""
        assert self.proc.stdout is not None  # started with stdout=PIPE
        for line in self.proc.stdout:
            self.stderr_tail.append(line.decode(errors="replace").rstrip())

    def request(self, header: dict, blobs: Sequence[bytes] = (), timeout: float | None = None
                ) -> tuple[dict, list[bytes]]:
        """Send one request and wait for its reply: (reply header, reply blobs). With `timeout`
        (seconds), a process that has not answered by then is killed: NodeNotAnswering. Requests
        without one (compiling, dispatching) are bounded by the check's own time limit."""
        deadline = None if timeout is None else time.monotonic() + timeout
        assert self.proc.stdin is not None  # started with stdin=PIPE
        try:
            for piece in encode_frame(header, blobs):
                self.proc.stdin.write(piece)
            self.proc.stdin.flush()
            length = _HEADER_LENGTH.unpack(self._read(_HEADER_LENGTH.size, deadline))[0]
            reply = json.loads(self._read(length, deadline))
            blobs_in = [self._read(size, deadline) for size in reply.pop("blobs", [])]
        except (BrokenPipeError, EOFError):
            raise self._died() from None
        except TimeoutError:
            self.proc.kill()
            self.proc.wait()
            raise NodeNotAnswering(f"Dawn's Node process (pid {self.proc.pid}) did not answer {header.get('op')!r} "
                                   f"within {timeout:g} s: its Vulkan driver may be wedged (VERIFY_NODE_TIMEOUT "
                                   "sets the limit)") from None
        return reply, blobs_in

    def _read(self, count: int, deadline: float | None = None) -> bytes:
        """`count` bytes of the replies' pipe; EOFError at its end, TimeoutError past `deadline`.

        Reads the pipe's file descriptor itself into its own buffer: a buffered reader would read
        ahead into a buffer select() cannot see."""
        fd = self._frames
        while len(self._pending) < count:
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                    raise TimeoutError
            chunk = os.read(fd, max(1 << 16, count - len(self._pending)))
            if not chunk:
                raise EOFError
            self._pending += chunk
        data = bytes(self._pending[:count])
        del self._pending[:count]
        return data

    def _died(self) -> NodeProcessDied:
        code = self.proc.wait()
        self._drain.join(timeout=2)
        tail = "\n".join(self.stderr_tail) or "(nothing on stderr)"
        return NodeProcessDied(f"the Node process running Dawn died (exit code {code}):\n{tail}")

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """End the process: EOF on its stdin, then SIGKILL if it has not exited within a few seconds."""
        assert self.proc.stdin is not None and self.proc.stdout is not None  # started with both piped
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc.stdout.close()
        if self._frames >= 0:
            os.close(self._frames)
            self._frames = -1

    def __del__(self):
        proc = getattr(self, "proc", None)
        if proc is not None and proc.poll() is None:
            proc.kill()
        frames = getattr(self, "_frames", -1)
        if frames >= 0:
            os.close(frames)
            self._frames = -1
