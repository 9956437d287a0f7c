"""`verify --version` stays one line; `verify version --verbose` (and `--version --verbose`) lists
every version a verdict depends on, as found here (verify.versions)."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

from verify._version import DISTRIBUTION, __version__


def _verify(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=300)


def test_version_is_one_line_as_before():
    done = _verify("--version")
    assert done.returncode == 0
    assert done.stdout == f"verify {__version__} ({DISTRIBUTION} {__version__})\n"
    assert _verify("version").stdout == done.stdout


def test_verbose_version_names_the_whole_stack():
    verbose = _verify("--version", "--verbose")
    assert verbose.returncode == 0, verbose.stderr
    assert _verify("version", "--verbose").stdout == verbose.stdout
    found = dict(line.split(": ", 1) for line in verbose.stdout.splitlines())
    assert found["verify"] == f"{__version__} ({DISTRIBUTION})"
    assert found["wgpu-py"] == metadata.version("wgpu")
    assert found["Python"].split()[-1] == ".".join(map(str, sys.version_info[:3]))
    for name in ("wgpu-native", "Node.js", "npm webgpu", "npm onnxruntime-web", "apache-tvm", "onnx"):
        assert found[name], name
    adapters = [line for line in verbose.stdout.splitlines() if line.startswith("adapter [")]
    assert any(line.startswith("adapter [wgpu]: ") for line in adapters)
    assert all("driver " in line or ": none (" in line for line in adapters)  # the driver text names Mesa's version
