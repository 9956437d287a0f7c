"""`verify export CASE.npz -o DIR`: any saved case as a folder that reproduces it without verify.

What is captured is what the kernel's own launch binds and dispatches (replayed on a real device
it judges exactly as verify judges the kernel's own launch); the scripts' comparison is verify's
(verify.budgets.metrics.compare) element for element; a passing case of a correct kernel passes
in Chromium, wgpu and Dawn, and a known finding's saved case fails there; and every bad input is
one line, exit 2, with nothing left behind.
"""

from __future__ import annotations

import base64
import gzip
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.export.routes import CHROMIUM, node_environment, run_chromium, run_node, run_python
from verify.budgets.expected import Expected
from verify.budgets.metrics import compare
from verify.cases import Case
from verify.cli import main
from verify.errors import UsageError
from verify.export.capture import capture
from verify.export.findings import merge_case
from verify.export.write import TEMPLATES, pack
from verify.kernels.registry import get_kernel
from verify.results.casefile import save_case

ROOT = Path(__file__).resolve().parents[2]
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="needs Chromium (Debian package `chromium`)")


def saved(tmp_path: Path, kernel_name: str, config: dict, case: Case, *, check: str = "reference",
          message: str = "ok", wgsl: str | None = None, kind: str = "own", failure_kind=None) -> Path:
    """A case file as verify saves one (verify.results.casefile)."""
    kernel = get_kernel(kernel_name)
    config = kernel.config(config)
    text = wgsl or kernel.wgsl(config)
    meta = {"kernel": kernel.name, "kernel_ref": f"{type(kernel).__module__}:{type(kernel).__name__}",
            "config": config, "check": check, "seed": 0, "profile": "quick", "subgroup_width": None,
            "adapter": {"name": "llvmpipe (LLVM 15.0.6, 256 bits)", "backend": "Vulkan", "implementation": "wgpu"},
            "source": {"kind": kind, "origin": kernel.name}, "failure_kind": failure_kind, "role": "shrunk",
            "message": message}
    return save_case(tmp_path / "cases", "case-shrunk", case, meta, text)


def merge(tokens=2, heads=3, head_dim=64) -> Case:
    return merge_case(tokens, heads, head_dim)


def export(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify", "export", *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)


# -- what is captured --------------------------------------------------------------------------------------
def test_the_capture_is_the_kernels_own_binding_and_grid():
    """Bytes per binding as verify.gpu.binding makes them (outputs NaN then the guard, uniforms packed),
    the grid the launch computes, and each output traced to its buffer."""
    from verify.gpu import buffers

    kernel = get_kernel("merge_state")
    config = kernel.config({"head_dim": 64, "dtype": "f32"})
    case = merge()
    captured = capture(kernel, config, kernel.wgsl(config), case)
    names = [b.name for b in captured.buffers]
    assert names == ["v", "s", "v_other", "s_other", "params"]  # binding order, by the WGSL's names
    [run] = captured.dispatches
    assert run.bindings == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)] and run.workgroups == (2, 1, 1)
    v = captured.buffers[0]
    assert v.readback == case["v"].nbytes and v.data[:v.readback] == case["v"].tobytes()  # an InOut starts as its array
    assert v.data[-buffers.GUARD_BYTES:] == buffers.guard_bytes()
    assert captured.buffers[4].data[:4] == np.uint32(6).tobytes()  # MergeParams.rows = tokens * heads
    assert {o.name: o.buffer for o in captured.outputs} == {"v": 0, "s": 1}
    expected = {e.name: e for e in kernel.expected(config, case)}
    for output in captured.outputs:
        assert np.array_equal(output.lo, expected[output.name].lo, equal_nan=True)


def test_a_launch_that_computes_an_output_on_the_host_is_refused():
    kernel = get_kernel("merge_state")
    config = kernel.config({"head_dim": 64, "dtype": "f32"})

    class Doubled(type(kernel)):
        def launch(self, device, wgsl, config, case):
            launched = super().launch(device, wgsl, config, case)
            with np.errstate(all="ignore"):
                launched.outputs["v"] = launched.outputs["v"] * 2
            return launched

    with pytest.raises(UsageError, match="computes it on the host"):
        capture(Doubled(), config, kernel.wgsl(config), merge())


@pytest.mark.webgpu
def test_replaying_the_capture_judges_as_verify_judges_the_kernels_launch(webgpu_device, tmp_path):
    """repro.py on this machine's wgpu adapter and verify's own launch and judgement agree on every
    output: failing elements, NaN, and the worst err/budget to the last bit."""
    from verify.checks.context import CheckContext

    kernel = get_kernel("tvm.merge_state") if importlib.util.find_spec("tvm") else None
    if kernel is None:
        pytest.skip("needs apache-tvm")
    config = kernel.config({"heads": 4, "head_dim": 64, "dtype": "f32"})
    case = merge(1, 4, 64)
    outcome = CheckContext(kernel, config, webgpu_device, kernel.wgsl(config)).judge(
        case, kernel.launch(webgpu_device, kernel.wgsl(config), config, case))
    folder = tmp_path / "out"
    assert export(saved(tmp_path, "tvm.merge_state", config, case), "-o", folder).returncode == 0
    module = _load_script(folder / "repro.py")
    result = module.reproduce(json.loads((folder / "repro.json").read_text()))
    ours = {m.name: m for m in outcome.outputs}
    for output in result["outputs"]:
        metrics = ours[output["name"]]
        assert (output["failing"], output["nan"]) == (metrics.failing, metrics.nan_count)
        assert output["max_ratio"] == metrics.max_err_over_budget


def _unpack(text: str) -> bytes:
    return gzip.decompress(base64.b64decode(text))


def _wide(case: Case, dtype=np.float64, **overrides) -> Case:
    """`case` with every array as `dtype` (a case file written by hand or by another tool), some replaced."""
    return Case({k: np.asarray(overrides.get(k, v), dtype) for k, v in case.arrays.items()}, case.params)


def test_a_float64_case_is_reproduced_in_the_types_the_kernel_binds(tmp_path):
    """WebGPU has no f64: the case's float64 arrays become the f32 the WGSL declares (rounded), the
    reference is of those values, and the outputs are read back and judged as f32."""
    case = merge()
    path = saved(tmp_path, "merge_state", {"head_dim": 64, "dtype": "f32"}, _wide(case), message="v: 384/384 over")
    done = export(path, "-o", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "out" / "repro.json").read_text())
    assert {o["name"]: o["dtype"] for o in data["outputs"]} == {"v": "f32", "s": "f32"}
    buffers = {b["name"]: b for b in data["buffers"]}
    for name in ("v", "s", "v_other", "s_other"):
        raw = _unpack(buffers[name]["data"])
        f32 = case[name].astype(np.float32).tobytes()
        assert raw[:len(f32)] == f32, name  # the f32 values, not float64 bytes read as twice as many f32
    assert buffers["v"]["readback"] == case["v"].size * 4
    lo = np.frombuffer(_unpack(data["outputs"][1]["lo"]), "<f8")
    kernel = get_kernel("merge_state")
    config = kernel.config({"head_dim": 64, "dtype": "f32"})
    [_, s] = kernel.expected(config, case)  # the f32 case: the reference of the values the kernel gets
    assert np.array_equal(lo, np.asarray(s.lo, np.float64).ravel())
    assert "float64 -> f32" in data["case"] and "v: 384/384" not in (tmp_path / "out" / "ISSUE.md").read_text()


@pytest.mark.webgpu
def test_a_float64_case_of_a_correct_kernel_passes_with_wgpu(tmp_path):
    pytest.importorskip("wgpu")
    path = saved(tmp_path, "merge_state", {"head_dim": 64, "dtype": "f32"}, _wide(merge()))
    assert export(path, "-o", tmp_path / "out").returncode == 0
    verdict, output, code = run_python(tmp_path / "out")
    assert (verdict, code) == ("PASS", 0), output


def test_a_float64_case_past_the_kernels_type_is_refused_in_one_line(tmp_path):
    """An f16 kernel given float64 values past 65504: converting would change the case."""
    case = merge()
    wide = _wide(case, v=np.full(case["v"].shape, 1e6))
    path = saved(tmp_path, "merge_state", {"head_dim": 64, "dtype": "f16"}, wide)
    before = {p.name for p in tmp_path.iterdir()}
    _one_line_error(export(path, "-o", tmp_path / "out"), "v", "float64", "f16's range")
    _nothing_left(tmp_path, before)


def test_a_launch_that_binds_a_64_bit_array_is_refused():
    """Whatever the case, an array the launch itself makes float64 has no WebGPU type to be bound as."""
    kernel = get_kernel("merge_state")
    config = kernel.config({"head_dim": 64, "dtype": "f32"})

    class Widening(type(kernel)):
        def launch(self, device, wgsl, config, case):
            return super().launch(device, wgsl, config, case.replace({"v": case["v"].astype(np.float64)}))

    with pytest.raises(UsageError, match="binds 'v' as float64, a type WebGPU does not have"):
        capture(Widening(), config, kernel.wgsl(config), merge())


def _load_script(path: Path):
    spec = importlib.util.spec_from_file_location(f"repro_{abs(hash(path))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# -- the comparison ----------------------------------------------------------------------------------------
def _tricky() -> tuple[Expected, np.ndarray]:
    """Points and intervals, infinities expected and not, NaN got and expected, bit-exact elements,
    zero and NaN budgets."""
    lo = np.array([1.0, 1.0, -np.inf, 0.0, np.nan, 2.0, 0.0, 5.0, 0.0, 1.0, -3.0, 7.0])
    hi = np.array([1.0, 1.0, -np.inf, 0.0, np.nan, 3.0, 0.0, 5.0, 0.0, 1.0, -1.0, 7.0])
    budget = np.array([0.1, 0.1, 0.0, 1e-3, 1.0, 0.5, 0.0, 1.0, np.nan, 0.0, 0.1, 1.0])
    exact = np.array([0, 0, 1, 0, 1, 0, 1, 1, 0, 0, 0, 0], bool)
    got = np.array([1.05, 1.2, -np.inf, np.nan, np.nan, 3.4, -0.0, 5.5, 0.0, np.inf, -3.05, 7.0], np.float32)
    return Expected("y", lo, hi, budget, "f32", exact), got


def _judged_spec(expected: Expected, got: np.ndarray) -> dict:
    return {"name": "y", "buffer": 0, "dtype": "f32", "shape": list(got.shape),
            "lo": pack(expected.lo.astype("<f8").tobytes()), "hi": pack(expected.hi.astype("<f8").tobytes()),
            "budget": pack(expected.budget.astype("<f8").tobytes()),
            "exact": pack(expected.exact.astype(np.uint8).tobytes())}


def test_the_python_scripts_comparison_is_verifys():
    pytest.importorskip("wgpu")
    expected, got = _tricky()
    metrics = compare(got, expected)
    result = _load_script(TEMPLATES / "repro.py").judge(_judged_spec(expected, got), got.tobytes())
    assert (result["failing"], result["nan"], result["exact_mismatches"]) == \
        (metrics.failing, metrics.nan_count, metrics.exact_mismatches)
    assert result["max_ratio"] == metrics.max_err_over_budget


def test_the_pages_and_nodes_comparison_is_verifys(tmp_path):
    if node_environment() is None and not _node():
        pytest.skip("needs Node")
    expected, got = _tricky()
    metrics = compare(got, expected)
    spec = _judged_spec(expected, got)
    driver = tmp_path / "judge.mjs"
    driver.write_text(f"import {{ judge }} from {json.dumps((TEMPLATES / 'core.js').as_uri())};\n"
                      f"const bytes = Uint8Array.from(atob({json.dumps(__import__('base64').b64encode(got.tobytes()).decode())}),"
                      " c => c.charCodeAt(0));\n"
                      f"const r = await judge({json.dumps(spec)}, bytes);\n"
                      "console.log(JSON.stringify([r.failing, r.nan, r.exactMismatches, String(r.maxRatio)]));\n")
    done = subprocess.run(["node", str(driver)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    failing, nan, mismatches, ratio = json.loads(done.stdout)
    assert (failing, nan, mismatches) == (metrics.failing, metrics.nan_count, metrics.exact_mismatches)
    assert float(ratio) == metrics.max_err_over_budget


def _node() -> bool:
    import shutil

    return shutil.which("node") is not None


# -- the three routes ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def passing(tmp_path_factory) -> Path:
    """A passing case of a correct kernel of verify's own (merge_state, f32), exported."""
    tmp = tmp_path_factory.mktemp("passing")
    folder = tmp / "out"
    done = export(saved(tmp, "merge_state", {"head_dim": 64, "dtype": "f32"}, merge()), "-o", folder)
    assert done.returncode == 0, done.stderr
    return folder


@needs_chromium
@pytest.mark.webgpu
def test_a_passing_case_of_a_correct_kernel_passes_in_chromium(passing):
    result = run_chromium(passing)
    assert result["verdict"] == "PASS", result["reason"]
    assert result["adapter"]["architecture"] and result["subgroupSize"]
    assert "every output within its budget" in result["page"] and "subgroup size" in result["page"]


@pytest.mark.webgpu
def test_a_passing_case_of_a_correct_kernel_passes_with_wgpu_and_dawn(passing):
    verdict, output, code = run_python(passing)
    assert (verdict, code) == ("PASS", 0), output
    environment = node_environment()
    if environment is None:
        pytest.skip("needs Node, npm webgpu and Mesa 25 lavapipe (verify setup --dawn)")
    verdict, output, code = run_node(passing, environment)
    assert (verdict, code) == ("PASS", 0), output


@needs_chromium
@pytest.mark.webgpu
def test_a_known_findings_saved_case_fails_in_chromium(tmp_path):
    """The shrunk case a `verify check` saved for TVM's merge of two -inf states (KNOWN)."""
    pytest.importorskip("tvm", reason="apache-tvm is not installed")
    out = tmp_path / "run"
    run = subprocess.run([sys.executable, "-m", "verify", "check", "tvm.merge_state", "--checks", "infinite_empty",
                          "--config", "heads=2,head_dim=64,dtype=f32", "--examples", "3", "--jobs", "1",
                          "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert run.returncode == 0 and "KNOWN" in run.stderr, run.stderr
    [shrunk] = (out / "cases").glob("*-shrunk.npz")
    done = export(shrunk, "-o", tmp_path / "repro")
    assert done.returncode == 0 and done.stderr.strip() == f"reproduction: {tmp_path / 'repro'}", done.stderr
    issue = (tmp_path / "repro" / "ISSUE.md").read_text()
    assert issue.startswith("# TVM's merge returns NaN") and "Apache TVM" in issue and "Evidence" not in issue
    result = run_chromium(tmp_path / "repro")
    assert result["verdict"] == "FAIL" and result["outputs"][0]["nan"], result["reason"]


# -- bad input: one line, exit 2, nothing left behind ----------------------------------------------------------
def _one_line_error(done: subprocess.CompletedProcess, *needles: str) -> None:
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("verify: error: ") and "Traceback" not in done.stderr, done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def _nothing_left(parent: Path, before: set) -> None:
    assert {p.name for p in parent.iterdir()} == before


@pytest.fixture
def good(tmp_path) -> Path:
    return saved(tmp_path, "merge_state", {"head_dim": 64, "dtype": "f32"}, merge())


def test_a_file_that_is_not_a_case_is_refused(tmp_path):
    np.savez(tmp_path / "x.npz", a=np.zeros(3))
    (tmp_path / "x.json").write_text(json.dumps({"hello": 1}))
    before = {p.name for p in tmp_path.iterdir()}
    _one_line_error(export(tmp_path / "x.npz", "-o", tmp_path / "out"), "not a case file")
    _nothing_left(tmp_path, before)
    _one_line_error(export(tmp_path / "missing.npz", "-o", tmp_path / "out"), "no such case file")


@pytest.mark.parametrize("edit,needle", [
    (lambda meta: meta["params"].update(seed=99), "case_sha256"),
    (lambda meta: meta.update(wgsl=meta["wgsl"] + "\n// edited\n"), "sha256"),
])
def test_a_tampered_case_is_refused(good, tmp_path, edit, needle):
    sidecar = good.with_suffix(".json")
    meta = json.loads(sidecar.read_text())
    edit(meta)
    sidecar.write_text(json.dumps(meta))
    before = {p.name for p in tmp_path.iterdir()}
    _one_line_error(export(good, "-o", tmp_path / "out"), needle)
    _nothing_left(tmp_path, before)


def test_an_output_folder_that_is_not_empty_is_refused(good, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    _one_line_error(export(good, "-o", out), "not empty")
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_an_output_that_is_a_file_is_refused(good, tmp_path):
    (tmp_path / "out").write_text("a file")
    _one_line_error(export(good, "-o", tmp_path / "out"), "is a file")


def test_a_read_only_output_folder_is_refused(good, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    out.chmod(0o555)
    try:
        before = {p.name for p in tmp_path.iterdir()}
        _one_line_error(export(good, "-o", out), "read-only")
        _nothing_left(tmp_path, before)
        assert not any(out.iterdir())
    finally:
        out.chmod(0o755)


def test_an_output_under_a_read_only_folder_is_refused(good, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        _one_line_error(export(good, "-o", locked / "out"), "read-only")
        assert not any(locked.iterdir())
    finally:
        locked.chmod(0o755)
    _one_line_error(export(good, "-o", "/proc/no-such-folder/out"), "cannot")


def test_an_export_that_fails_midway_leaves_nothing(good, tmp_path, monkeypatch):
    """The folder is written beside its destination and renamed: an error while writing removes it."""
    from verify.export import write

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(write.Path, "write_text", broken)
    before = {p.name for p in tmp_path.iterdir()}
    assert main(["export", str(good), "-o", str(tmp_path / "out")]) == 2
    _nothing_left(tmp_path, before)


def test_the_export_command_needs_an_output(good):
    done = export(good)
    assert done.returncode == 2 and "-o/--output" in done.stderr and "Traceback" not in done.stderr

