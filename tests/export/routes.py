"""Running a reproduction folder the three ways a maintainer would: the page in Chromium, repro.py
with wgpu, repro.mjs with Dawn in Node. Each gives its verdict (PASS, FAIL, ERROR, SKIP) and what
it printed or showed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.export.chromium import CHROMIUM, run_page

VERDICTS = ("PASS", "FAIL", "ERROR", "SKIP")
EXIT_CODES = {"PASS": 0, "FAIL": 1, "ERROR": 1, "SKIP": 2}


def _verdict(stdout: str) -> str:
    """The verdict a script printed: the first word of its second line (the first is the title)."""
    lines = stdout.splitlines()
    word = lines[1].split(" ", 1)[0] if len(lines) > 1 else ""
    return word if word in VERDICTS else f"no verdict in {stdout[-600:]!r}"


def run_python(folder: Path, timeout: float = 300) -> tuple[str, str, int]:
    """repro.py with this interpreter (it has wgpu and numpy), from the folder itself."""
    done = subprocess.run([sys.executable, "repro.py"], cwd=folder, capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONPATH=""))
    return _verdict(done.stdout), done.stdout + done.stderr, done.returncode


def node_environment() -> dict | None:
    """Where Node finds npm `webgpu` (WEBGPU_MODULE) and a Vulkan driver Dawn accepts (Mesa 25's
    lavapipe, as verify's dawn implementation finds them); None where either is missing."""
    from verify.errors import SetupError
    from verify.gpu.dawn.environment import find_webgpu_module, vulkan_drivers

    if shutil.which("node") is None:
        return None
    try:
        module = find_webgpu_module()
    except SetupError:
        return None
    drivers = [d for d in vulkan_drivers() if d.name == "mesa-backports"]
    if not drivers:
        return None
    return dict(os.environ, **drivers[0].env, WEBGPU_MODULE=str(module))


def run_node(folder: Path, environment: dict, timeout: float = 300) -> tuple[str, str, int]:
    done = subprocess.run(["node", "repro.mjs"], cwd=folder, capture_output=True, text=True, timeout=timeout,
                          env=environment)
    return _verdict(done.stdout), done.stdout + done.stderr, done.returncode


def run_chromium(folder: Path) -> dict:
    return run_page(folder / "repro.html")


__all__ = ["CHROMIUM", "EXIT_CODES", "node_environment", "run_chromium", "run_node", "run_python"]
