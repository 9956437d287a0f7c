"""The dawn implementation (Dawn + Tint through Node) keeps the device contract the wgpu implementation keeps.

These tests need what scripts/setup.sh installs (Node, the pinned npm `webgpu`, a Vulkan
driver Dawn accepts); without it they fail rather than skip, since a skip is not a pass.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from verify.gpu import InOut, Output, ShaderCompileError
from verify.gpu.dialect import ENABLE_SUBGROUPS
from verify.gpu.uniforms import pack_struct

REPO = Path(__file__).resolve().parents[2]

COPY = """
struct Params { count: u32, scale: f32 }
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < params.count) { dst[id.x + OFFSET] = src[id.x] * params.scale; }
}
"""

#: One correctly rounded multiply per float output and exact integer dot products: any two
#: conforming implementations must agree bit for bit (WGSL: f32 `*` is correctly rounded).
SAME_EVERYWHERE = """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> packed: array<u32>;
@group(0) @binding(2) var<storage, read_write> scaled: array<f32>;
@group(0) @binding(3) var<storage, read_write> dots: array<i32>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  let i = id.x;
  let n = arrayLength(&x);  // not the outputs' length: that includes their guard regions
  if (i < n) {
    scaled[i] = x[i] * x[(i + 1u) % n];
    dots[i] = dot4I8Packed(packed[i], packed[(i + 7u) % n]);
  }
}
"""


def _copy(offset: int) -> str:
    return f"const OFFSET: u32 = {offset}u;\n" + COPY


def _params(pipeline, count, scale=2.0) -> bytes:
    return pack_struct(pipeline.interface.structs["Params"], {"count": count, "scale": scale})


@pytest.fixture(scope="module")
def dawn():
    from verify.gpu.dawn import DawnDevice

    device = DawnDevice()
    yield device
    device.close()


def verify(*args, env=None, timeout=2400):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


# -- the device contract ----------------------------------------------------------------------------
def test_dawn_device_names_its_implementation(dawn):
    assert dawn.info.implementation == "dawn"
    assert dawn.info.as_record()["implementation"] == "dawn"
    assert dawn.info.label.endswith(f"[{dawn.info.backend}, dawn]")


def test_dawn_leaves_unwritten_outputs_poisoned_and_guards_intact(dawn):
    pipeline = dawn.pipeline(_copy(0))
    src = np.arange(8, dtype=np.float32)
    run = dawn.run(pipeline, {"src": src, "dst": Output(np.float32, (10,)), "params": _params(pipeline, 8)}, 1)
    assert run.outputs["dst"][:8].tolist() == (src * 2).tolist()
    assert np.isnan(run.outputs["dst"][8:]).all()
    assert run.guard_intact["dst"]


def test_a_write_past_the_end_breaks_the_guard_on_dawn(dawn):
    pipeline = dawn.pipeline(_copy(2))
    run = dawn.run(pipeline, {"src": np.ones(8, np.float32), "dst": Output(np.float32, (8,)),
                              "params": _params(pipeline, 8)}, 1)
    assert not run.guard_intact["dst"]


def test_inout_buffers_are_read_back_on_dawn(dawn):
    source = "const OFFSET: u32 = 0u;\n" + COPY.replace(
        "dst[id.x + OFFSET] = src[id.x] * params.scale;", "dst[id.x] = dst[id.x] + src[id.x] * params.scale;")
    pipeline = dawn.pipeline(source)
    run = dawn.run(pipeline, {"src": np.ones(4, np.float32), "dst": InOut(np.full(4, 3.0, np.float32)),
                              "params": _params(pipeline, 4, scale=0.5)}, 1)
    assert run.outputs["dst"].tolist() == [3.5] * 4


def test_uniform_fields_reach_the_kernel_on_dawn(dawn):
    pipeline = dawn.pipeline(_copy(0))
    run = dawn.run(pipeline, {"src": np.ones(64, np.float32), "dst": Output(np.float32, (64,)),
                              "params": _params(pipeline, 5, scale=-3.0)}, 1)
    assert run.outputs["dst"][:5].tolist() == [-3.0] * 5 and np.isnan(run.outputs["dst"][5:]).all()


def test_dawn_timestamps_measure_the_dispatch(dawn):
    """Unquantized: Dawn rounds timestamps to 65536 ns unless told not to, and a dispatch this
    short then measured 0 in about one run of five (a failure seen under load)."""
    assert "timestamp-query" in dawn.features  # lavapipe 25 and SwiftShader both have them
    pipeline = dawn.pipeline(_copy(0))
    measured = []
    for _ in range(5):
        run = dawn.run(pipeline, {"src": np.ones(64, np.float32), "dst": Output(np.float32, (64,)),
                                  "params": _params(pipeline, 64)}, 1, timestamps=True)
        assert run.timing.gpu_ns is not None and run.timing.gpu_ns > 0
        assert min(run.timing.upload, run.timing.dispatch, run.timing.readback) >= 0
        measured.append(run.timing.gpu_ns)
    assert any(ns % 65536 for ns in measured)


def test_dawn_measures_the_subgroup_size_it_runs_with(dawn):
    size = dawn.subgroup_size
    assert size is not None and size & (size - 1) == 0 and 4 <= size <= 128
    if dawn.info.name.startswith("llvmpipe"):
        assert size == 8  # lavapipe runs 256-bit vectors of 32-bit lanes


def test_dawn_zeroes_workgroup_memory_as_wgsl_requires(dawn):
    """Dawn creates its pipelines with WGSL's zeroing (unlike wgpu-native): the probe, with three
    shapes of 16 KiB after a kernel that filled them, finds no stale word."""
    assert dawn.zeroes_workgroup_memory
    assert dawn.semantics.of("workgroup-zero-init").verdict.value == "conforms"


def test_compile_errors_carry_tints_own_message_with_line_and_caret(dawn):
    source = _copy(0).replace("* params.scale", "* 1u")
    line = next(n for n, text in enumerate(source.splitlines(), 1) if "* 1u" in text)
    with pytest.raises(ShaderCompileError) as info:
        dawn.pipeline(source)
    message = str(info.value)
    assert info.value.compiler == "Tint"
    assert f":{line}:" in message and "error:" in message and "^" in message
    assert "While calling" not in message  # Dawn's call-site trailer is not the compiler's


def test_subgroup_kernels_get_the_enable_directive_tint_requires_and_keep_their_line_numbers(dawn):
    source = textwrap.dedent("""\
        @group(0) @binding(0) var<storage, read_write> total: array<f32>;
        @compute @workgroup_size(64)
        fn main(@builtin(local_invocation_index) i: u32) {
          total[i] = subgroupAdd(1.0);
        }
        """)
    pipeline = dawn.pipeline(source)
    assert pipeline.adaptations == (ENABLE_SUBGROUPS,) and pipeline.wgsl == source
    run = dawn.run(pipeline, {"total": Output(np.float32, (64,))}, 1)
    assert (run.outputs["total"] == dawn.subgroup_size).all()
    with pytest.raises(ShaderCompileError, match=":4:"):
        dawn.pipeline(source.replace("subgroupAdd(1.0)", "subgroupAdd(1u)"))  # u32 stored into f32


def test_pipelines_are_cached_by_source_hash_on_dawn(dawn):
    assert dawn.pipeline(_copy(0)) is dawn.pipeline(_copy(0))
    assert dawn.pipeline(_copy(0)) is not dawn.pipeline(_copy(1))


def test_a_bindings_mismatch_is_a_usage_error_on_dawn(dawn):
    from verify.errors import UsageError

    with pytest.raises(UsageError, match="bindings mismatch"):
        dawn.run(dawn.pipeline(_copy(0)), {"src": np.ones(4, np.float32)}, 1)


def test_the_device_limit_on_workgroup_storage_is_enforced_on_dawn():
    """WebGPU refuses a pipeline using more workgroup storage than the device allows (wgpu 0.32
    does not check it; see docs/backends.md)."""
    from verify.gpu.dawn import DawnDevice

    device = DawnDevice(limits={"max-compute-workgroup-storage-size": 16384})
    try:
        with pytest.raises(ShaderCompileError, match="workgroup storage"):
            device.pipeline("var<workgroup> big: array<f32, 5000>;\n"
                            "@compute @workgroup_size(1) fn main() { big[0] = 1.0; }")
    finally:
        device.close()


def test_dawn_devices_get_the_adapters_buffer_limits_not_webgpus_defaults(dawn):
    """Buffer sizes are asked for at the adapter's limits, as wgpu-py gives them and as TVM's and ORT's
    runtimes ask: at WebGPU's defaults (256 MiB a buffer, 128 MiB a binding) an NVIDIA GPU's Dawn
    refused the nightly's larger cases that wgpu ran (a FAIL that was verify's request, not the
    kernel). Mesa's lavapipe offers 4 GiB buffers (and 128 MiB bindings, WebGPU's default)."""
    assert dawn.limits["max-buffer-size"] > 268435456, dawn.limits
    assert dawn.limits["max-storage-buffer-binding-size"] >= 134217728, dawn.limits
    from verify.gpu.dawn import DawnDevice

    held = DawnDevice(limits={"max-buffer-size": 268435456})  # a kernel may still hold itself to less
    try:
        assert held.limits["max-buffer-size"] == 268435456
    finally:
        held.close()


# -- the same WGSL on both implementations ----------------------------------------------------------
@pytest.mark.webgpu
def test_the_same_wgsl_gives_bit_identical_outputs_on_wgpu_and_dawn(webgpu_device, dawn):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(300).astype(np.float32) * np.float32(1e3)
    packed = rng.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)
    results = []
    for backend in (webgpu_device, dawn):
        pipeline = backend.pipeline(SAME_EVERYWHERE)
        run = backend.run(pipeline, {"x": x, "packed": packed, "scaled": Output(np.float32, (300,)),
                                     "dots": Output(np.int32, (300,))}, 5)
        assert all(run.guard_intact.values())
        results.append(run.outputs)
    wgpu_out, dawn_out = results
    assert wgpu_out["scaled"].tobytes() == dawn_out["scaled"].tobytes()
    assert (wgpu_out["dots"] == dawn_out["dots"]).all()
    expected = x.astype(np.float64) * np.roll(x, -1).astype(np.float64)
    assert (dawn_out["scaled"] == expected.astype(np.float32)).all()  # correctly rounded product


# -- the Node process ---------------------------------------------------------------------------------
def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_the_node_process_dies_when_its_python_parent_is_killed():
    parent = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""\
        import sys, time
        from verify.gpu.dawn import DawnDevice
        device = DawnDevice()
        print(device.pid, flush=True)
        time.sleep(600)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        node_pid = int(parent.stdout.readline())
        assert _alive(node_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        assert _wait_gone(node_pid), f"node process {node_pid} outlived its killed parent"
    finally:
        parent.kill()


def test_a_closed_worker_leaves_at_once_and_takes_its_node_processes_along():
    """A worker whose stdin closes leaves without finalisers (verify.worker._leave): its Node
    processes (two here, as the toggles check holds several; all killed before any is reaped) must
    be gone by the time the parent has reaped the worker, not a moment later. (In a child:
    kill_all would end this process's own Dawn devices, the module's fixture among them.)"""
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""\
        import io, sys
        from verify.gpu.dawn import DawnDevice
        from verify.worker import _leave
        devices = [DawnDevice(), DawnDevice()]
        print(" ".join(str(device.pid) for device in devices), flush=True)
        sys.stdin.read()
        _leave(io.StringIO())
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        node_pids = [int(pid) for pid in child.stdout.readline().split()]
        assert len(set(node_pids)) == 2 and all(map(_alive, node_pids))
        child.stdin.close()
        assert child.wait(timeout=60) == 0
        assert not any(map(_alive, node_pids)), f"node processes {node_pids} outlived the worker that left"
    finally:
        child.kill()


def _orphaned_dawn_workers() -> set[int]:
    """Live Node processes running our worker.mjs whose parent is no longer a Python process
    (an orphan is re-parented to init or a subreaper): each is a leak."""
    from verify.gpu.dawn import environment

    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if not entry.name.isdigit() or str(environment.WORKER).encode() not in (entry / "cmdline").read_bytes():
                continue
            parent = (entry / "stat").read_text().split(")")[-1].split()[1]
            if b"python" not in Path(f"/proc/{parent}/cmdline").read_bytes() and _alive(int(entry.name)):
                found.add(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("mutant,kind", [("far_write", "write out of bounds"),
                                          ("never_ends_continue", "never terminates")])
def test_reference_on_dawn_fails_a_far_write_or_a_loop_that_never_ends(tmp_path, mutant, kind):
    """The reference check's bounds pass runs on every implementation: Tint refuses `loop {}`
    outright, but a loop whose exit is never taken compiles, and Mesa 25's lavapipe under Dawn
    would run it for ever (it has no loop cap), as a far write goes wherever the driver puts it."""
    wgsl = REPO / "tests" / "fixtures" / "mutants" / "merge_state" / f"{mutant}.wgsl"
    result = verify("check", "merge_state", "--wgsl", str(wgsl), "--implementation", "dawn", "--checks", "reference",
                    "--examples", "5", "--out", str(tmp_path), timeout=300)
    assert result.returncode == 1, result.stderr
    [record] = json.loads((tmp_path / "results.json").read_text())["records"]
    assert record["verdict"] == "fail" and record["failure_kind"] == kind, record
    assert record["adapter"]["implementation"] == "dawn"


def test_a_kernel_that_hangs_on_dawn_runs_out_of_time_and_leaves_no_node_process(tmp_path):
    before = _orphaned_dawn_workers()
    hang = REPO / "tests" / "fixtures" / "wgsl" / "merge_state_never_finishes.wgsl"
    result = verify("check", "merge_state", "--wgsl", str(hang), "--implementation", "dawn", "--checks", "reference",
                    "--examples", "2", "--time-limit", "8", "--out", str(tmp_path), timeout=300)
    # Mesa 25's lavapipe has no loop cap: the reference check's bounds pass may prove first that the
    # loop never ends (a FAIL naming it), else the time limit ends the check (verify's limit, an ERROR).
    assert result.returncode == 1, result.stderr
    assert "time limit" in result.stderr or "does not terminate" in result.stderr, result.stderr
    deadline = time.monotonic() + 10
    while _orphaned_dawn_workers() - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _orphaned_dawn_workers() - before, "a Node process outlived the killed worker"


def test_the_node_process_exits_when_its_stdin_closes():
    """The pipe-EOF watchdog alone (no parent death): closing our end ends the process cleanly."""
    from verify.gpu.dawn import environment
    from verify.gpu.dawn.process import NodeProcess

    process = NodeProcess(environment.find_node(), str(environment.WORKER),
                          {"VERIFY_WEBGPU_MODULE": str(environment.find_webgpu_module())})
    reply, _ = process.request({"op": "adapters"})
    assert "adapters" in reply  # it answered; the system driver may offer Dawn none
    process.proc.stdin.close()
    assert process.proc.wait(timeout=10) == 0


def test_large_buffers_travel_as_raw_bytes(dawn):
    """16 MiB in and out in one run: the frames carry bytes, intact, in both directions."""
    n = 4 << 20
    source = ("@group(0) @binding(0) var<storage, read> a: array<u32>;\n"
              "@group(0) @binding(1) var<storage, read_write> b: array<u32>;\n"
              "@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) id: vec3<u32>,\n"
              "  @builtin(num_workgroups) n: vec3<u32>) {\n"
              "  let i = id.y * n.x * 64u + id.x;\n"
              "  if (i < arrayLength(&b)) { b[i] = a[i] ^ 0x5a5a5a5au; } }\n")
    values = np.random.default_rng(1).integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32)
    run = dawn.run(dawn.pipeline(source), {"a": values, "b": Output(np.uint32, (n,))}, (1024, n // 64 // 1024))
    assert (run.outputs["b"] == values ^ np.uint32(0x5A5A5A5A)).all() and run.guard_intact["b"]


# -- the command line ----------------------------------------------------------------------------------
def test_verify_adapters_lists_adapters_of_both_implementations():
    import json

    result = verify("adapters", "--json")
    assert result.returncode == 0, result.stderr
    implementations = {row.get("implementation") for row in json.loads(result.stdout) if "name" in row}
    import importlib.util

    # dawn-inprocess (Dawn in this process) where the `dawn` extra's wgpudawn is installed
    in_process = {"dawn-inprocess"} if importlib.util.find_spec("wgpudawn") else set()
    assert implementations == {"wgpu", "dawn"} | in_process


def test_own_kernels_pass_on_dawn(tmp_path):
    result = verify("check", "merge_state", "rope", "decode.tiled", "decode.sharded", "dp4a.quantize",
                    "dp4a.matmul", "--implementation", "dawn", "--examples", "5", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr[-4000:]
    assert "fail" not in result.stderr.splitlines()[-2].lower() and "skip" not in result.stderr.splitlines()[-2]


def test_tvm_decode_passes_on_dawn(tmp_path):
    pytest.importorskip("tvm", reason="apache-tvm is installed by scripts/setup.sh")
    result = verify("check", "tvm.decode", "--implementation", "dawn", "--examples", "5", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr[-4000:]


def test_the_implementation_can_be_chosen_by_environment_variable(tmp_path):
    result = verify("check", "merge_state", "--checks", "reference", "--examples", "2", "--out", str(tmp_path),
                    env={"VERIFY_IMPLEMENTATION": "dawn"})
    assert result.returncode == 0, result.stderr
    import json

    record = json.loads((tmp_path / "results.json").read_text())["records"][0]
    assert record["adapter"]["implementation"] == "dawn"


def _one_line_exit_2(result, fragment):
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("verify: error:") and fragment in lines[0], result.stderr


def test_without_node_the_dawn_implementation_is_one_line_and_exit_2(tmp_path):
    result = verify("check", "merge_state", "--implementation", "dawn", "--out", str(tmp_path),
                    env={"VERIFY_NODE": str(tmp_path / "no-node")})
    _one_line_exit_2(result, "Node.js")


def test_an_adapter_dawn_does_not_offer_is_one_line_and_exit_2(tmp_path):
    result = verify("check", "merge_state", "--implementation", "dawn", "--adapter", "no-such-gpu", "--out", str(tmp_path))
    _one_line_exit_2(result, "no Dawn adapter matching 'no-such-gpu'")


def test_an_unknown_implementation_is_one_line_and_exit_2(tmp_path):
    _one_line_exit_2(verify("check", "merge_state", "--implementation", "metal", "--out", str(tmp_path)), "wgpu, dawn")


def test_the_old_backend_option_still_works_as_implementation_with_a_warning(tmp_path):
    result = verify("check", "merge_state", "--backend", "dawn", "--checks", "reference", "--examples", "2",
                    "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "--backend is deprecated" in result.stderr and "--implementation" in result.stderr
    [record] = json.loads((tmp_path / "results.json").read_text())["records"]
    assert record["adapter"]["implementation"] == "dawn"


def test_dawn_setup_is_a_quick_no_op_when_already_done():
    setup = str(REPO / "scripts" / "setup_dawn.sh")
    subprocess.run(setup, capture_output=True, timeout=600, check=True)  # whatever is missing, once
    again = subprocess.run(setup, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "up to date" in again.stderr and "present" in again.stderr, again.stderr


# -- the Naga/Tint differences docs/backends.md records ---------------------------------------------
SHUFFLE_WITH_ABSTRACT_LANE = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) i: u32) {
  out[i] = subgroupShuffle(f32(i), 0);
}
"""
CONST_INFINITY = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(1)
fn main() { out[0] = bitcast<f32>(0xff800000u); }
"""
BARRIER_UNDER_STRUCT_MEMBER = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
struct Lanes { @builtin(local_invocation_index) local: u32, @builtin(subgroup_size) width: u32 }
@compute @workgroup_size(64)
fn main(lanes: Lanes) {
  if (lanes.width < 32u) { workgroupBarrier(); }
  out[lanes.local] = lanes.width;
}
"""


def _compiles(device, source: str) -> bool:
    try:
        device.pipeline(source)
    except ShaderCompileError:
        return False
    return True


@pytest.mark.webgpu
@pytest.mark.parametrize("source, tint_accepts, naga_accepts", [
    (SHUFFLE_WITH_ABSTRACT_LANE, True, False),
    (CONST_INFINITY, False, True),
    (BARRIER_UNDER_STRUCT_MEMBER, False, True),
], ids=["shuffle-lane-abstract-int", "const-infinity", "barrier-under-struct-member"])
def test_naga_and_tint_differ_where_the_docs_say(webgpu_device, dawn, source, tint_accepts, naga_accepts):
    assert _compiles(dawn, source) is tint_accepts
    assert _compiles(webgpu_device, source) is naga_accepts


@pytest.mark.webgpu
def test_naga_refuses_the_subgroups_directive_and_the_wgpu_backend_bridges_it_on_the_record(webgpu_device, dawn):
    """WGSL written for Tint compiles on both backends; Naga itself still refuses the directive."""
    from verify.gpu.dialect import DROP_ENABLE_SUBGROUPS

    source = "enable subgroups;\n" + SHUFFLE_WITH_ABSTRACT_LANE.replace(", 0)", ", 0u)")
    with pytest.raises(Exception, match="enable-extension is not yet supported"):
        webgpu_device.wgpu_device.create_shader_module(code=source)
    assert webgpu_device.pipeline(source).adaptations == (DROP_ENABLE_SUBGROUPS,)
    assert dawn.pipeline(source).adaptations == ()
    assert webgpu_device.pipeline(source.replace("enable subgroups;", "")).adaptations == ()


def test_the_subgroups_directive_is_added_only_where_tint_needs_it():
    from verify.gpu.dialect import for_tint

    plain = "@compute @workgroup_size(1) fn main() {}\n"
    assert for_tint(plain) == (plain, ())
    commented = "// subgroupAdd(x) would need the extension\n" + plain
    assert for_tint(commented) == (commented, ())
    enabled = "enable f16, subgroups;\nfn f(x: f32) -> f32 { return subgroupAdd(x); }\n"
    assert for_tint(enabled) == (enabled, ())
    used = "fn f(x: f32) -> f32 { return subgroupAdd(x); }\n"
    adapted, adaptations = for_tint(used)
    assert adapted == "enable subgroups;" + used and adaptations == (ENABLE_SUBGROUPS,)
    assert adapted.count("\n") == used.count("\n")  # Tint's line numbers are the source's


def test_a_dispatch_of_zero_workgroups_returns_on_dawn(dawn):
    """Dawn warns on stdout that a zero-workgroup dispatch is unusual; the replies have a pipe of
    their own, so the warning is kept with the process's log lines and the run returns at once
    (it used to wait for ever: TVM's chunked prefill dispatches an empty chunk's grid)."""
    pipeline = dawn.pipeline(_copy(0))
    src = np.arange(64, dtype=np.float32)
    for grid in ((0, 2, 1), (0, 0, 0)):
        run = dawn.run(pipeline, {"src": src, "dst": Output(np.float32, (64,)), "params": _params(pipeline, 64)}, grid)
        assert np.isnan(run.outputs["dst"]).all()  # nothing ran: the outputs keep their poison
    full = dawn.run(pipeline, {"src": src, "dst": Output(np.float32, (64,)), "params": _params(pipeline, 64)}, 1)
    np.testing.assert_array_equal(full.outputs["dst"], 2.0 * src)
