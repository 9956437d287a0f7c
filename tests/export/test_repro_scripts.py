"""An exported repro.py or repro.mjs that cannot run says so: exit 2 ("cannot run here") and one
line naming what is missing and what to install, never a traceback, which Python and Node exit 1
with and their headers define as "the bug reproduces". Missing packages (wgpu, numpy, npm
webgpu), a missing, truncated or edited repro.json, and no adapter (Dawn refuses Debian 12's
Mesa 22.3) are each one such line."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.export.routes import node_environment
from tests.export.test_export import export, merge, saved

NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="needs Node")


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """A passing case of merge_state (f32), exported: a folder both scripts run as it is."""
    tmp = tmp_path_factory.mktemp("scripts")
    done = export(saved(tmp, "merge_state", {"head_dim": 64, "dtype": "f32"}, merge()), "-o", tmp / "out")
    assert done.returncode == 0, done.stderr
    return tmp / "out"


@pytest.fixture
def copy(folder, tmp_path) -> Path:
    """The folder, copied, so that a test may damage its repro.json."""
    return Path(shutil.copytree(folder, tmp_path / "repro"))


def _cannot_run(done: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit 2 and exactly one line of our own (the runtime's warnings on stderr aside), holding `needles`."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "    at " not in done.stderr, done.stderr
    ours = [line for line in (done.stdout + done.stderr).splitlines() if "cannot run here" in line]
    assert len(ours) == 1 and not done.stdout.strip(), (done.stdout, done.stderr)
    for needle in needles:
        assert needle in ours[0], ours[0]
    return ours[0]


def _python(folder: Path, *flags: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *flags, "repro.py"], cwd=folder, capture_output=True, text=True,
                          timeout=120, env=env or dict(os.environ, PYTHONPATH=""))


# -- repro.py ------------------------------------------------------------------------------------------------
def test_repro_py_without_numpy_names_what_to_install(folder):
    """`-S`: no site-packages, so neither numpy nor wgpu imports."""
    _cannot_run(_python(folder, "-S"), "numpy", "pip install wgpu numpy", sys.executable)


def test_repro_py_without_wgpu_names_what_to_install(folder, tmp_path):
    """numpy importable (a folder holding only it on PYTHONPATH), wgpu not."""
    import numpy

    only = tmp_path / "only-numpy"
    only.mkdir()
    (only / "numpy").symlink_to(Path(numpy.__file__).parent)
    done = _python(folder, "-S", env=dict(os.environ, PYTHONPATH=str(only)))
    line = _cannot_run(done, "wgpu", "pip install wgpu numpy")
    assert "numpy;" not in line  # numpy was found: only wgpu is named


def _truncated(text: str) -> str:
    return text[:len(text) // 2]


def _without_title(text: str) -> str:
    data = json.loads(text)
    del data["title"]
    return json.dumps(data)


def _foreign(text: str) -> str:
    return json.dumps({"hello": 1})


def _bad_blob(text: str) -> str:
    data = json.loads(text)
    data["buffers"][0]["data"] = "bm90IGd6aXA="  # base64 of "not gzip"
    return json.dumps(data)


def _short_reference(text: str) -> str:
    """An output's reference of fewer elements than its shape (a blob from another case)."""
    data = json.loads(text)
    data["outputs"][0]["lo"] = data["outputs"][1]["lo"]
    return json.dumps(data)


def _dangling_buffer(text: str) -> str:
    data = json.loads(text)
    data["dispatches"][0]["bindings"][0][1] = 99
    return json.dumps(data)


DAMAGE = {"truncated": _truncated, "no title": _without_title, "foreign": _foreign, "bad blob": _bad_blob,
          "short reference": _short_reference, "dangling buffer": _dangling_buffer}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_repro_py_with_a_damaged_repro_json_cannot_run(copy, damage):
    pytest.importorskip("wgpu")
    path = copy / "repro.json"
    path.write_text(DAMAGE[damage](path.read_text()))
    _cannot_run(_python(copy), "repro.json", "copy the reproduction's folder again")


def test_repro_py_without_repro_json_cannot_run(copy):
    pytest.importorskip("wgpu")
    (copy / "repro.json").unlink()
    _cannot_run(_python(copy), "repro.json is missing")


def test_repro_py_without_an_adapter_says_what_to_install(folder, monkeypatch):
    """wgpu finds no adapter (None), or cannot load its backend (an exception): SKIP, exit 2 by
    main's table, the line naming Mesa's lavapipe."""
    pytest.importorskip("wgpu")
    spec = importlib.util.spec_from_file_location("exported_repro", folder / "repro.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    repro = module.load(folder / "repro.json")

    def unloadable(**kwargs):
        raise RuntimeError("wgpu-native cannot be loaded")

    for answer in (lambda **kwargs: None, unloadable):
        monkeypatch.setattr(module.wgpu.gpu, "request_adapter_sync", answer)
        result = module.reproduce(repro)
        assert result["verdict"] == "SKIP" and "apt install mesa-vulkan-drivers" in result["reason"], result


# -- repro.mjs -----------------------------------------------------------------------------------------------
def _node(folder: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([NODE, "repro.mjs"], cwd=folder, capture_output=True, text=True, timeout=120, env=env)


def _without_webgpu() -> dict:
    """Node finds no npm webgpu: no WEBGPU_MODULE, NODE_PATH pointing nowhere (ES modules ignore it
    anyway) and the folder under a temporary directory, beside no node_modules."""
    env = {k: v for k, v in os.environ.items() if k != "WEBGPU_MODULE"}
    return dict(env, NODE_PATH="/nonexistent")


@needs_node
def test_repro_mjs_without_npm_webgpu_names_what_to_install(folder):
    _cannot_run(_node(folder, _without_webgpu()), "npm install webgpu@0.6.2", "WEBGPU_MODULE")


@needs_node
def test_repro_mjs_with_webgpu_module_pointing_nowhere_says_so(folder):
    _cannot_run(_node(folder, dict(_without_webgpu(), WEBGPU_MODULE="/nonexistent/index.js")),
                "WEBGPU_MODULE=/nonexistent/index.js", "npm install webgpu@0.6.2")


def _dawn() -> dict:
    environment = node_environment()
    if environment is None:
        pytest.skip("needs Node, npm webgpu and Mesa 25 lavapipe (verify setup --dawn)")
    return environment


@needs_node
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_repro_mjs_with_a_damaged_repro_json_cannot_run(copy, damage):
    environment = _dawn()
    path = copy / "repro.json"
    path.write_text(DAMAGE[damage](path.read_text()))
    _cannot_run(_node(copy, environment), "repro.json", "copy the reproduction's folder again")


@needs_node
def test_repro_mjs_without_repro_json_cannot_run(copy):
    environment = _dawn()
    (copy / "repro.json").unlink()
    _cannot_run(_node(copy, environment), "repro.json is missing")


@needs_node
def test_repro_mjs_without_an_adapter_names_the_drivers_dawn_accepts(folder):
    """No Vulkan driver (the loader pointed at a file that is not there), as on a machine whose only
    driver Dawn refuses (Debian 12's Mesa 22.3): SKIP, exit 2, the line saying what to install."""
    environment = {k: v for k, v in _dawn().items() if not k.startswith("VK_") and k != "LD_LIBRARY_PATH"}
    done = _node(folder, dict(environment, VK_ICD_FILENAMES="/nonexistent/icd.json",
                              VK_DRIVER_FILES="/nonexistent/icd.json"))
    assert done.returncode == 2, (done.stdout, done.stderr)
    [line] = [line for line in done.stdout.splitlines() if line.startswith("SKIP")]
    for needle in ("no WebGPU adapter", "Mesa 22.3", "bookworm-backports mesa-vulkan-drivers",
                   "vk_swiftshader_icd.json"):
        assert needle in line, line
