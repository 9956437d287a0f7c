"""The example out-of-tree kernel package (examples/rmsnorm): registered by entry point, it passes
through all three routes (the CLI, verify.check, its own pytest file), and a bug planted in its
WGSL fails all three."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rmsnorm"
#: The planted bug: the mean of squares divides by hidden + 1 (an off-by-one in the count).
CORRECT = "partial[0] / f32(params.hidden)"
PLANTED = "partial[0] / f32(params.hidden + 1u)"

pytestmark = pytest.mark.webgpu


def example_copy(tmp_path: Path, planted: bool) -> Path:
    copy = tmp_path / "rmsnorm"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    wgsl = copy / "verify_rmsnorm" / "rmsnorm.wgsl"
    text = wgsl.read_text()
    assert CORRECT in text
    if planted:
        wgsl.write_text(text.replace(CORRECT, PLANTED))
    return copy


def run(args, copy: Path, cwd: Path):
    """A subprocess that imports the example from `copy` (ahead of the installed one)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(copy), str(EXAMPLE.parents[1])]))
    return subprocess.run(args, capture_output=True, text=True, timeout=900, env=env, cwd=cwd)


@pytest.fixture(scope="module", autouse=True)
def installed():
    from importlib import metadata

    names = [ep.name for ep in metadata.entry_points(group="verify.kernels")]
    if "rmsnorm" not in names:
        pytest.fail("examples/rmsnorm is not installed (scripts/setup.sh --test installs it: "
                    "pip install -e examples/rmsnorm)")


@pytest.mark.parametrize("planted", [False, True], ids=["as shipped", "planted bug"])
def test_the_cli_route(tmp_path, planted):
    copy = example_copy(tmp_path, planted)
    result = run([sys.executable, "-m", "verify", "check", "rmsnorm", "--examples", "30", "--out", str(tmp_path / "out")],
                 copy, tmp_path)
    assert result.returncode == (1 if planted else 0), result.stderr
    assert ("FAIL  rmsnorm reference" in result.stderr) == planted


@pytest.mark.parametrize("planted", [False, True], ids=["as shipped", "planted bug"])
def test_the_python_api_route(tmp_path, planted):
    copy = example_copy(tmp_path, planted)
    script = ("import verify\n"
              "results = verify.check('rmsnorm', examples=30)\n"
              "print(results)\n"
              "results.raise_for_verdict()\n")
    result = run([sys.executable, "-c", script], copy, tmp_path)
    assert result.returncode == (1 if planted else 0), result.stderr
    if planted:
        assert "VerificationFailure: FAIL rmsnorm reference" in result.stderr and "verify replay" in result.stderr


@pytest.mark.parametrize("planted", [False, True], ids=["as shipped", "planted bug"])
def test_the_pytest_plugin_route(tmp_path, planted):
    copy = example_copy(tmp_path, planted)
    result = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(copy / "tests")], copy, copy)
    assert result.returncode == (1 if planted else 0), result.stdout
    if planted:
        assert "FAIL rmsnorm reference" in result.stdout and "verify replay" in result.stdout
