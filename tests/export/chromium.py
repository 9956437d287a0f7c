"""Open a page in headless Chromium with WebGPU and read a value the page computes, over the
DevTools protocol on a pipe (`--remote-debugging-pipe`: no port, no network).

`--dump-dom` with `--virtual-time-budget` is not enough for a WebGPU page: virtual time runs out
while the GPU process still compiles and dispatches, and the DOM is dumped before the result.
So the page is polled with Runtime.evaluate until the expression gives a value.

What works here (Chromium 156, Debian, as root, no display): `--headless --no-sandbox
--enable-unsafe-webgpu`; the page gets Chromium's SwiftShader adapter (Vulkan on the CPU;
subgroups of 4, no shader-f16). `--use-webgpu-adapter=swiftshader` and `--enable-features=Vulkan
--use-angle=swiftshader` give the same adapter. Mesa's lavapipe (VK_ICD_FILENAMES pointing at
it) is seen by the GPU process but never offered to pages: Chromium offers only SwiftShader as a
CPU adapter. `--use-angle=vulkan` with `--use-vulkan=native` and `--enable-gpu` crash or hang the
GPU process.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

CHROMIUM = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
FLAGS = ("--headless", "--no-sandbox", "--enable-unsafe-webgpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars")


def _high(fd: int) -> int:
    """`fd` moved to a number above 9, so the child's 3 and 4 can be made from it without clashing."""
    new = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return new


class Chromium:
    """One headless Chromium showing `url`, driven over the DevTools pipe."""

    def __init__(self, url: str, extra=()):
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        to_child, self._write = map(_high, os.pipe())
        self._read, from_child = map(_high, os.pipe())
        command = " ".join([f"exec 3<&{to_child} 4>&{from_child} {to_child}<&- {from_child}>&-;", "exec", CHROMIUM,
                            *FLAGS, *extra, f"--user-data-dir={self.profile}", "--remote-debugging-pipe", '"$0"'])
        # TMPDIR inside the profile: Chromium's own scratch folders (org.chromium.Chromium.*) go
        # with the profile instead of staying behind in /tmp; its own session keeps the group killable.
        env = dict(os.environ, TMPDIR=self.profile)
        self.process = subprocess.Popen(["bash", "-c", command, url], pass_fds=(to_child, from_child),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                                        start_new_session=True)
        os.close(to_child)
        os.close(from_child)
        self._buffer = b""
        self._ids = iter(range(1, 1 << 30))
        self._session = None

    def _send(self, method: str, params=None) -> int:
        ident = next(self._ids)
        message = {"id": ident, "method": method, "params": params or {}}
        if self._session and not method.startswith(("Target.", "Browser.")):
            message["sessionId"] = self._session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        return ident

    def _reply(self, ident: int, deadline: float) -> dict:
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                message = json.loads(raw)
                if message.get("id") == ident:
                    return message
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("Chromium did not answer in time")
            ready, _, _ = select.select([self._read], [], [], left)
            if ready:
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium exited: {self.stderr()[-2000:]}")
                self._buffer += chunk

    def call(self, method: str, params=None, timeout: float = 30) -> dict:
        return self._reply(self._send(method, params), time.monotonic() + timeout)

    def wait_for(self, expression: str, timeout: float = 120):
        """The value of `expression` in the page, once it is truthy (polled)."""
        deadline = time.monotonic() + timeout
        while self._session is None:
            targets = self.call("Target.getTargets")["result"]["targetInfos"]
            pages = [t for t in targets if t["type"] == "page"]
            if pages:
                attached = self.call("Target.attachToTarget", {"targetId": pages[0]["targetId"], "flatten": True})
                self._session = attached["result"]["sessionId"]
            elif time.monotonic() > deadline:
                raise TimeoutError("Chromium opened no page")
            else:
                time.sleep(0.1)
        while True:
            reply = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
            value = reply.get("result", {}).get("result", {}).get("value")
            if value:
                return value
            if time.monotonic() > deadline:
                raise TimeoutError(f"{expression} stayed falsy for {timeout} s")
            time.sleep(0.25)

    def stderr(self) -> str:
        return "" if self.process.poll() is None else self.process.stderr.read().decode(errors="replace")

    def close(self) -> None:
        """Ask Chromium to quit, then kill what is left of its process group, then drop the profile.

        A bare kill of the browser process leaves its helpers (GPU process, renderer) to die on their
        own, and one of them may still write into the profile after it is removed."""
        try:
            self._send("Browser.close")
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()
        for fd in (self._write, self._read):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_page(path, timeout: float = 240) -> dict:
    """The result a reproduction page computes (window.reproResult), with the page's text."""
    with Chromium(path.resolve().as_uri()) as browser:
        result = browser.wait_for("window.reproResult && JSON.stringify(window.reproResult)", timeout)
        text = browser.wait_for("document.body.innerText")
    return dict(json.loads(result), page=text)
