"""ONNX Runtime Web's own WebGPU kernels: captured from ORT running in Node on Dawn, launched by
the toolkit, and checked end to end and kernel by kernel.

What is proven: a capture names ORT's programs and records every dispatch (WGSL, bindings,
uniforms, workgroups); replaying a captured dispatch through DawnDevice, and launching ORT's WGSL
through the ort.dp4a.* contracts on the captured inputs, reproduce ORT's outputs bit for bit;
ORT's WGSL does not change with M, N or K; ORT's session output is within the derived end-to-end
budgets; the findings in ORT's kernels are strict xfails with their numbers (a release that fixes
one turns its test red), stated by the kernels to the gate as known findings; Naga's refusal of
ORT's tile program is a compile divergence; a machine without onnxruntime-web gets one line.

Tests that run ORT or Dawn need what scripts/setup.sh installs and skip, saying why, without it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace

import numpy as np
import pytest

import verify
from verify.budgets.end_to_end import dp4a_budget, float_budget
from verify.cases import Case
from verify.checks import get_check
from verify.checks.context import CheckContext
from verify.checks.runner import RunOptions, run_check
from verify.cli import main as verify_main
from verify.errors import FailureKind, SetupError
from verify.gpu import Output
from verify.instrument import OutOfBounds, SanitizingDevice, UninitializedRead
from verify.kernels.registry import get_kernel
from verify.plan import check_jobs, gate_jobs
from verify.profiles import get_profile
from verify.references.dp4a_quant import pack_codes, quantize_blocks, unpack_codes
from verify.references.nbits import default_zero_point, pack_weights
from verify.results.record import KnownFinding, Verdict
from verify.sources.ort import cache as ort_cache_module
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.capture import DP4A_PROGRAMS, QUANTIZE, SMALL_M, TILE
from verify.sources.ort.dp4a import captures as programs
from verify.sources.ort.dp4a.model import MatMulNBitsModel
from verify.sources.ort.launch import bind, ort_grid, zero_blocks_per_col
from verify.sources.shipped import Shipped
from verify.wgsl import read_interface

ORT_KERNELS = ("ort.matmul_nbits", "ort.dp4a.quantize", "ort.dp4a.matmul", "ort.dp4a.matmul_small_m")


def capture(ort, dtype="f32", bits=4, block_size=32, zero_points=False, bias=False, m=4, k=256, n=32,
            accuracy_level=4, batch=1, seed=1):
    """A run of a one-node model with every dispatch's bytes: (model, feeds, run)."""
    model = MatMulNBitsModel(dtype, bits, block_size, k, n, accuracy_level, zero_points, bias)
    feeds = programs.capture_feeds(model, batch * m, seed)
    feeds["A"] = feeds["A"].reshape(batch, m, k)
    return model, feeds, ort.run(model, feeds, snapshots=True)


def logical_bytes(array: np.ndarray) -> int:
    return array.size * array.dtype.itemsize


# -- capture ------------------------------------------------------------------------------------------
@pytest.mark.webgpu
@pytest.mark.parametrize("dtype,m,expected", [("f32", 1, (QUANTIZE, SMALL_M)), ("f32", 4, (QUANTIZE, TILE)),
                                              ("f16", 4, (QUANTIZE, TILE)), ("f16", 64, (QUANTIZE, TILE))])
def test_accuracy_level_4_runs_orts_labelled_dp4a_programs(ort, dtype, m, expected):
    _, _, run = capture(ort, dtype=dtype, m=m)
    assert run.labels == expected
    assert all("dot4I8Packed" in run.program(label).wgsl for label in expected[1:])
    assert run.outputs["Y"].shape == (1, m, 32)


@pytest.mark.webgpu
@pytest.mark.parametrize("dtype,m,accuracy_level", [("f32", 1, 0), ("f32", 64, 0), ("f16", 64, 0), ("f16", 1, 4),
                                                    ("f16", 3, 4)])
def test_no_dp4a_program_runs_off_orts_dp4a_path(ort, dtype, m, accuracy_level):
    """Accuracy level 0 (the control), and f16 models with fewer than 4 rows (ORT's rule)."""
    _, _, run = capture(ort, dtype=dtype, m=m, accuracy_level=accuracy_level)
    assert run.dispatches and not set(run.labels) & set(DP4A_PROGRAMS)
    assert all("dot4I8Packed" not in d.program.wgsl for d in run.dispatches)


@pytest.mark.webgpu
def test_ort_folds_the_batch_into_m_when_it_picks_a_program(ort):
    """A [2, 2, K] in f16 is 4 rows: the tile program, where [1, 2, K] takes the float path."""
    assert capture(ort, dtype="f16", m=2, batch=2)[2].labels == (QUANTIZE, TILE)
    assert not set(capture(ort, dtype="f16", m=2, batch=1)[2].labels) & set(DP4A_PROGRAMS)


@pytest.mark.webgpu
@pytest.mark.parametrize("program,m", [(QUANTIZE, 4), (TILE, 4), (SMALL_M, 1)])
def test_orts_wgsl_does_not_depend_on_m_n_or_k(ort, program, m):
    """The premise of the WGSL cache: M, N and K travel in the uniforms."""
    _, _, small = capture(ort, m=m, k=256, n=32)
    _, _, large = capture(ort, m=m + 2 if program == SMALL_M else 70, k=1024, n=96, seed=2)
    assert small.program(program).wgsl == large.program(program).wgsl


@pytest.mark.webgpu
def test_a_capture_records_workgroups_bindings_and_uniforms_as_orts_host_code_sets_them(ort):
    model, feeds, run = capture(ort, dtype="f16", bits=8, block_size=64, zero_points=True, bias=True, m=70,
                                k=512, n=96)
    kernel = get_kernel("ort.dp4a.matmul")
    config = kernel.config({"dtype": "f16", "bits": 8, "block_size": 64, "has_zero_points": 1, "has_bias": 1})
    quantize, tile = run.dispatch(QUANTIZE), run.dispatch(TILE)
    assert quantize.workgroups == ort_grid(-(-70 * 512 // 4 // 64)) == (140, 1, 1)
    assert tile.workgroups == kernel.grid(70, 96) == (4, 1, 1)
    interface = read_interface(tile.program.wgsl)
    uniform = next(b for b in interface.bindings if b.address_space == "uniform")
    ours = bind(_Pipeline(interface), {b.name: b"" for b in interface.bindings if b.address_space != "uniform"},
                kernel.uniforms(70, 96, 512, config))[uniform.name]
    assert tile.binding(uniform.binding).data[:len(ours)] == ours
    assert zero_blocks_per_col(512 // 64, 8) == 8 and zero_blocks_per_col(5, 4) == 6
    # Every binding's range holds at least the tensor it carries; ORT rounds buffers up.
    assert tile.binding(6).size >= logical_bytes(run.outputs["Y"])
    assert quantize.binding(0).size >= logical_bytes(feeds["A"])


class _Pipeline:
    def __init__(self, interface):
        self.interface = interface


@pytest.mark.webgpu
def test_ort_sessions_are_kept_per_model_and_runs_after_the_first_are_fast(ort):
    model = MatMulNBitsModel("f32", 4, 32, 256, 32)
    feeds = programs.capture_feeds(model, 4)
    ort.run(model, feeds)
    sessions = dict(ort._sessions)
    ort.run(model, feeds)
    assert dict(ort._sessions) == sessions


@pytest.mark.webgpu
def test_programs_are_captured_once_and_then_read_from_the_cache(ort, tmp_path, monkeypatch):
    runs = []
    original = ort.run
    monkeypatch.setattr(ort, "run", lambda *a, **k: runs.append(a[0]) or original(*a, **k))
    config = programs.CaptureConfig("f32", bits=8, block_size=128, has_bias=True)
    first = programs.captured_programs(config, tmp_path)
    second = programs.captured_programs(config, tmp_path)
    assert len(runs) == 1 and first == second
    assert list(first.programs) == [QUANTIZE, TILE]
    assert first.line.startswith(f"// onnxruntime-web {ort.version} on ")
    assert [p.name for p in (tmp_path / ort.version).glob("*/*.json")] == [config.filename]


# -- replays: the toolkit's launches are ORT's --------------------------------------------------------------
def replay(dawn, dispatch) -> dict:
    """A captured dispatch run again through DawnDevice: ORT's WGSL, ORT's bytes, ORT's workgroups.
    Returns each writable binding's bytes."""
    pipeline = dawn.pipeline(dispatch.program.wgsl)
    resources = {}
    for binding in pipeline.interface.bindings:
        bound = dispatch.binding(binding.binding)
        resources[binding.name] = Output(np.uint8, (bound.size,)) if binding.writable else bound.data
    run = dawn.run(pipeline, resources, dispatch.workgroups)
    return {name: value.tobytes() for name, value in run.outputs.items()}


@pytest.mark.webgpu
@pytest.mark.parametrize("dtype,bits,block_size,zero_points,bias,m", [
    ("f32", 4, 32, False, False, 1), ("f32", 8, 128, True, True, 3), ("f32", 4, 64, True, False, 70),
    ("f16", 4, 32, False, True, 4), ("f16", 8, 64, True, True, 130), ("f32", 2, 32, True, True, 3),
    ("f16", 2, 64, True, False, 70)])
def test_a_replayed_dispatch_gives_orts_output_bit_for_bit(ort, dawn, dtype, bits, block_size, zero_points, bias, m):
    _, _, run = capture(ort, dtype, bits, block_size, zero_points, bias, m=m, k=512, n=48)
    for dispatch in run.dispatches:
        written = replay(dawn, dispatch)
        interface = read_interface(dispatch.program.wgsl)
        for binding in interface.bindings:
            if binding.writable:
                ort_bytes = dispatch.binding(binding.binding).data
                if dispatch.program.label != QUANTIZE:  # the matmul's output: compare Y exactly
                    y = run.outputs["Y"]
                    assert written[binding.name][:logical_bytes(y)] == y.tobytes()
                else:  # codes (rows·K bytes) and scales (rows·K/128 values of T)
                    size = m * 512 if binding.name == "output" else m * 4 * np.dtype(
                        np.float16 if dtype == "f16" else np.float32).itemsize
                    assert written[binding.name][:size] == ort_bytes[:size]


def _quantized_a(run, dtype, batch, m, k):
    """ORT's codes and scales of A, from the quantize dispatch's snapshot."""
    quantize = run.dispatch(QUANTIZE)
    t = np.float16 if dtype == "f16" else np.float32
    codes = quantize.binding(1).array(np.uint32, batch * m * k // 4).reshape(batch, m, k // 4)
    scales = quantize.binding(2).array(t, batch * m * k // 128).reshape(batch, m, k // 128)
    return codes, scales


@pytest.mark.webgpu
@pytest.mark.parametrize("name,dtype,bits,block_size,zero_points,bias,batch,m", [
    ("ort.dp4a.matmul", "f16", 4, 32, True, True, 1, 70), ("ort.dp4a.matmul", "f32", 8, 64, False, True, 2, 3),
    ("ort.dp4a.matmul", "f16", 8, 128, True, False, 3, 33), ("ort.dp4a.matmul_small_m", "f32", 4, 32, True, True, 1, 3),
    ("ort.dp4a.matmul_small_m", "f32", 8, 64, False, False, 1, 1), ("ort.dp4a.matmul", "f16", 2, 64, True, True, 1, 70),
    ("ort.dp4a.matmul_small_m", "f32", 2, 32, True, False, 1, 2)])
def test_kernel_by_kernel_launches_reproduce_orts_outputs_bit_for_bit(ort, dawn, name, dtype, bits, block_size,
                                                                      zero_points, bias, batch, m):
    """verify's launch (bindings by name, uniforms from the WGSL, ORT's dispatch sizes, batch
    folded into M) on the inputs ORT saw gives ORT's bytes: for the quantizer and the matmul."""
    k, n = 512, 48
    _, feeds, run = capture(ort, dtype, bits, block_size, zero_points, bias, m=m, k=k, n=n, batch=batch)
    codes, scales = _quantized_a(run, dtype, batch, m, k)

    quantizer = get_kernel("ort.dp4a.quantize")
    config = quantizer.config({"dtype": dtype})
    ours = quantizer.launch(dawn, quantizer.wgsl(config), config, Case({"a": feeds["A"]}, {"seed": 0}))
    assert np.array_equal(ours.outputs["codes"], unpack_codes(codes))
    assert ours.outputs["scales"].tobytes() == scales.tobytes()

    kernel = get_kernel(name)
    config = kernel.config({"dtype": dtype, "bits": bits, "block_size": block_size, "has_zero_points": int(zero_points),
                            "has_bias": int(bias)})
    arrays = {"a_codes": codes, "a_scales": scales, "b": feeds["B"], "b_scales": feeds["scales"]}
    if zero_points:
        arrays["zero_points"] = feeds["zero_points"]
    if bias:
        arrays["bias"] = feeds["bias"]
    launched = kernel.launch(dawn, kernel.wgsl(config), config, Case(arrays, {"batch": batch, "m": m}))
    assert launched.outputs["y"].tobytes() == run.outputs["Y"].tobytes()


@pytest.mark.webgpu
def test_an_edit_of_orts_wgsl_is_checked_under_the_same_contract(ort, dawn):
    """`verify show` prints ORT's WGSL with verify's header; an edit comes back with --wgsl. Dropping
    the 8-bit zero-point correction (Σ a·b' - (Σ a)(zp - 128)) is caught; the text as shown passes."""
    kernel = get_kernel("ort.dp4a.matmul")
    config = {"dtype": "f32", "bits": 8, "has_zero_points": 1}
    shown = kernel.wgsl(kernel.config(config))
    correction = "local_sum -= dot(dequantized_a_sum, vec4<i32>(bias_zero));"
    assert shown.startswith("// verify kernel: ort.dp4a.matmul\n// config: ") and correction in shown
    for text, verdict in ((shown, Verdict.PASS), (shown.replace(correction, ""), Verdict.FAIL)):
        results = verify.check("ort.dp4a.matmul", config, checks="reference", examples=4, wgsl=text, isolate=False,
                               profile="quick")
        assert results.verdict is verdict


# -- verification -------------------------------------------------------------------------------------------
def check(name, config, checks, examples, device=None, profile="quick"):
    kernel = get_kernel(name)
    config = kernel.config(config)
    results = []
    for check_name in checks:
        ctx = CheckContext(kernel, config, device, kernel.wgsl(config), get_profile(profile))
        result = run_check(get_check(check_name), ctx, RunOptions(examples, seed=0, shrink=False)).result
        results.append(result.with_known_finding(kernel.known_finding(check_name, config)))
    return results


@pytest.mark.webgpu
@pytest.mark.parametrize("config", [
    dict(dtype="f16", bits=4, block_size=32, has_zero_points=1),
    dict(dtype="f32", bits=8, block_size=64, has_bias=1),
    dict(dtype="f16", bits=8, block_size=128, has_zero_points=1, has_bias=1),
    dict(dtype="f32", bits=2, block_size=32, has_zero_points=1),
    dict(dtype="f32", bits=4, block_size=32, accuracy_level=0, has_zero_points=1),
    dict(dtype="f16", bits=4, block_size=64, accuracy_level=0, has_bias=1)])
def test_orts_session_output_is_within_the_end_to_end_budget(dawn, config):
    """Over dp4a.matmul's cases (small M, tails, ties, zero blocks, outliers, tiny and huge blocks),
    both of ORT's paths, every legal quantization of A accounted for."""
    reference, determinism, quantization = check("ort.matmul_nbits", config,
                                                 ("reference", "determinism", "quantization_error"), 12, dawn)
    assert reference.verdict is Verdict.PASS, reference.reason
    assert determinism.verdict is Verdict.PASS, determinism.reason
    assert quantization.verdict is Verdict.PASS and quantization.max_err_over_budget <= 1


@pytest.mark.webgpu
@pytest.mark.parametrize("name,config,checks", [
    ("ort.dp4a.quantize", dict(dtype="f16"), ("reference", "determinism")),
    ("ort.dp4a.quantize", dict(dtype="f32"), ("reference",)),
    ("ort.dp4a.matmul", dict(dtype="f16", bits=4, block_size=64, has_bias=1), ("reference", "integer_sums")),
    ("ort.dp4a.matmul", dict(dtype="f32", bits=8, block_size=32, has_zero_points=1), ("reference", "integer_sums")),
    ("ort.dp4a.matmul", dict(dtype="f16", bits=2, block_size=32, has_zero_points=1), ("reference", "integer_sums")),
    ("ort.dp4a.matmul_small_m", dict(dtype="f32", bits=4, block_size=128, has_zero_points=1, has_bias=1),
     ("reference", "integer_sums", "determinism"))])
def test_orts_kernels_hold_under_the_dp4a_contracts(dawn, name, config, checks):
    for result in check(name, config, checks, 10, dawn):
        assert result.verdict is Verdict.PASS, f"{result.check}: {result.reason}"


@pytest.mark.webgpu
@pytest.mark.parametrize("width", [4, 16, 32, 64, 128])
def test_orts_quantizer_holds_on_each_of_its_subgroup_branches(dawn, width):
    """Its branches for 32-lane and 16-lane subgroups and its scan for others, at emulated widths."""
    from verify.instrument import EmulatingDevice

    for dtype in ("f16", "f32"):
        result, = check("ort.dp4a.quantize", dict(dtype=dtype), ("reference",), 8, EmulatingDevice(dawn, width))
        assert result.verdict is Verdict.PASS, result.reason


# -- findings (strict xfails) ---------------------------------------------------------------------------------
def _launch_quantizer_on_a_zero_block(dawn):
    kernel = get_kernel("ort.dp4a.quantize")
    config = kernel.config({"dtype": "f32"})
    a = np.zeros((2, 256), np.float32)
    a[:, 128:] = np.linspace(-1, 1, 128, dtype=np.float32)
    return kernel.launch(dawn, kernel.wgsl(config), config, Case({"a": a}, {"seed": 0})).outputs


@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason=(
    "ORT's quantizer stores pack4x8snorm(0/0) for an all-zero block: every code -127 on Mesa 25 lavapipe "
    "through Dawn (scale 0, so ORT's own product is unaffected); docs/findings.md §13"))
def test_ort_quantizer_writes_code_zero_for_an_all_zero_block(dawn):
    outputs = _launch_quantizer_on_a_zero_block(dawn)
    assert (outputs["scales"][:, 0] == 0).all()
    assert (outputs["codes"][:, :128] == 0).all()


@pytest.mark.webgpu
@pytest.mark.parametrize("m", [1, 4])
def test_a_zero_blocks_codes_do_not_reach_orts_product(dawn, m):
    """The finding above is harmless to ORT's own matmul: the zero block's scale is exactly 0, so
    its session's Y is within budget on A with zero blocks (small-M and tile programs)."""
    from verify.budgets.metrics import compare

    outputs = _launch_quantizer_on_a_zero_block(dawn)
    assert (outputs["scales"][:, 0] == 0).all() and (outputs["codes"][:, 128:] != 0).any()
    kernel = get_kernel("ort.matmul_nbits")
    config = kernel.config({"dtype": "f32"})
    case = _matmul_case(m=m)
    case.arrays["a"][..., :128] = 0
    launched = kernel.launch(dawn, kernel.wgsl(config), config, case)
    assert compare(launched.outputs["y"], kernel.expected(config, case)[0]).passed


def _same_sign_case(dtype="f16", m=4, k=2048, n=16):
    """Every weight -8 (4-bit codes 0), A = +1 over the first half of K and -(1 - 2^-11) over the
    second: each 32-value chunk adds -p, p = 32·127·8·(1/127)·s_b = 3000, to the running sums,
    which reach -32 p = -96000 past -65504 before they fall back. The unquantized Y is
    -8 s_b · 1024 · 2^-11 = -46.875; the DP4A-exact Y is 0 (both halves' scales round to one f16)."""
    t = np.float16 if dtype == "f16" else np.float32
    a = np.full((1, m, k), 1.0, t)
    a[..., k // 2:] = t(-(1 - 2.0**-11))
    codes = np.zeros((n, k), np.uint8)
    b_scales = np.full((n, k // 32), 3000 / 256, t)
    quantized = quantize_blocks(a, dtype)
    arrays = {"a": a, "a_codes": pack_codes(quantized.codes), "a_scales": quantized.scales.astype(t),
              "b": pack_weights(codes, 4, 32), "b_scales": b_scales}
    return Case(arrays, {"batch": 1, "m": m, "n": n, "k": k, "seed": 0, "peak_partial_sum": 96000.0})


@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason=(
    "ORT accumulates f16 models' chunk products in f16: running sums of -96000 overflow, Y = -Inf in all 64 "
    "outputs where the DP4A-exact Y is 0 (budget 1.3e4) and the unquantized -46.875 (ORT's tile program, and its "
    "session end to end); docs/findings.md §13, §7"))
@pytest.mark.parametrize("name", ["ort.dp4a.matmul", "ort.matmul_nbits"])
def test_ort_keeps_large_same_sign_sums_finite(dawn, name):
    kernel = get_kernel(name)
    config = kernel.config({"dtype": "f16", "bits": 4, "block_size": 32})
    case = _same_sign_case()
    expected = kernel.expected(config, case)[0]
    assert np.abs(expected.reference).max() < 100 and np.isfinite(expected.budget).all()
    y = kernel.launch(dawn, kernel.wgsl(config), config, case).outputs["y"]
    assert np.isfinite(y).all()


@pytest.mark.webgpu
def test_f32_outputs_keep_the_same_sums_within_budget(dawn):
    """The control: the same data in f32, whose accumulators do not overflow."""
    kernel = get_kernel("ort.dp4a.matmul")
    config = kernel.config({"dtype": "f32", "bits": 4, "block_size": 32})
    case = _same_sign_case("f32")
    launched = kernel.launch(dawn, kernel.wgsl(config), config, case)
    from verify.budgets.metrics import compare

    assert compare(launched.outputs["y"], kernel.expected(config, case)[0]).passed


def _sanitized(dawn, name, config, case):
    kernel = get_kernel(name)
    config = kernel.config(config)
    device = SanitizingDevice(dawn)
    kernel.launch(device, kernel.wgsl(config), config, case)
    return device.take_report()


def _matmul_case(m=1, k=256, n=16, bits=4, seed=3):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (1, m, k)).astype(np.float32)
    quantized = quantize_blocks(a, "f32")
    codes = rng.integers(0, 2**bits, (n, k)).astype(np.uint8)
    return Case({"a": a, "a_codes": pack_codes(quantized.codes), "a_scales": quantized.scales.astype(np.float32),
                 "b": pack_weights(codes, bits, 32), "b_scales": np.full((n, k // 32), 2.0**-6, np.float32)},
                {"batch": 1, "m": m, "n": n, "k": k, "seed": seed})


@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason=(
    "ORT's small-M program loads 8 A scales per 1024 values of K: with K = 256 (2 scales per row) it reads 6 past "
    "the row, and past the end of scales_a for the last row (unused values); docs/findings.md §13"))
def test_orts_small_m_program_reads_no_a_scale_past_its_row(dawn):
    report = _sanitized(dawn, "ort.dp4a.matmul_small_m", {"dtype": "f32"}, _matmul_case(m=1))
    assert not [f for f in report.of_type(OutOfBounds) if f.access.site.variable == "scales_a"]


@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason=(
    "ORT's matmul programs read workgroup memory no invocation wrote: the tile program's unloaded rows of a "
    "partial tile (products never stored), the small-M program's inter_results (it adds onto WGSL's zero "
    "initialisation); docs/findings.md §13"))
@pytest.mark.parametrize("name,m", [("ort.dp4a.matmul", 5), ("ort.dp4a.matmul_small_m", 1)])
def test_orts_matmul_programs_read_only_workgroup_memory_they_wrote(dawn, name, m):
    report = _sanitized(dawn, name, {"dtype": "f32"}, _matmul_case(m=m))
    assert not report.of_type(UninitializedRead)


@pytest.mark.webgpu
def test_orts_small_m_result_rests_on_zero_initialised_workgroup_memory(webgpu_device, dawn):
    """Where workgroup memory is not zeroed (Mesa 22.3 lavapipe under wgpu, docs/findings.md §8),
    ORT's small-M program returns wrong sums; zeroing inter_results first makes it right."""
    if webgpu_device.zeroes_workgroup_memory:
        pytest.skip(f"{webgpu_device.info.label} zero-initialises workgroup memory")
    kernel = get_kernel("ort.dp4a.matmul_small_m")
    config = kernel.config({"dtype": "f32"})
    case = _matmul_case(m=1, k=1024, n=64)
    expected = kernel.expected(config, case)[0]
    from verify.budgets.metrics import compare

    wgsl = kernel.wgsl(config)
    assert not compare(kernel.launch(webgpu_device, wgsl, config, case).outputs["y"], expected).passed
    anchor = ("  let global_idx = workgroup_idx * (workgroup_size_x * workgroup_size_y * workgroup_size_z)"
              " + local_idx;\n")
    zeroed = wgsl.replace(anchor, anchor + "  inter_results[local_idx / 32][local_idx % 32] = 0;\n"
                                           "  workgroupBarrier();\n")
    assert zeroed != wgsl
    assert compare(kernel.launch(webgpu_device, zeroed, config, case).outputs["y"], expected).passed


@pytest.mark.webgpu
def test_the_kernels_state_their_findings_to_the_gate_and_they_reproduce_as_known(dawn):
    for name, config, check_name in [("ort.dp4a.quantize", dict(dtype="f32"), "zero_blocks"),
                                     ("ort.dp4a.matmul", dict(dtype="f16"), "accumulator_range"),
                                     ("ort.matmul_nbits", dict(dtype="f16"), "accumulator_range")]:
        result, = check(name, config, (check_name,), 4, dawn)
        assert result.verdict is Verdict.KNOWN and result.finding_reproduced, (name, result.reason)
    # f32 accumulates without overflow: the only finding stated there is Naga refusing the tile
    # program (§13.5), which names wgpu alone, so nothing is expected of the f32 sums on Dawn.
    kernel = get_kernel("ort.dp4a.matmul")
    stated = KnownFinding.all_of(kernel.known_finding("accumulator_range", kernel.config({"dtype": "f32"})))
    assert [f.implementations for f in stated] == [("wgpu",)]
    assert all(FailureKind.COMPILE_DIVERGENCE in f.kinds for f in stated)


# -- Naga and Tint --------------------------------------------------------------------------------------------
@pytest.mark.webgpu
def test_naga_refusing_orts_tile_program_is_a_compile_divergence(ort, tmp_path):
    """The divergence is documented (docs/findings.md §13.5): the same KNOWN verdict, with both
    compilers' messages, whether a check runs on wgpu or the implementations check compares."""
    junit = tmp_path / "junit.xml"
    result = subprocess.run([sys.executable, "-m", "verify", "check", "ort.dp4a.matmul", "--implementation", "wgpu",
                             "--checks", "reference", "--examples", "2", "--jobs", "1", "--out", str(tmp_path),
                             "--junit", str(junit)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    assert "KNOWN ort.dp4a.matmul reference" in result.stderr and "Naga refuses ORT's tile program" in result.stderr
    record = json.loads((tmp_path / "results.json").read_text())["records"][0]
    assert record["verdict"] == "known" and record["failure_kind"] == "compile divergence"
    assert "subgroupShuffle(own_b0, 0)" in record["reason"] and "Tint: compiles" in record["reason"]
    assert ET.parse(junit).find(".//skipped") is not None
    other = tmp_path / "implementations"
    compared = subprocess.run([sys.executable, "-m", "verify", "check", "ort.dp4a.matmul", "--checks",
                               "implementations", "--examples", "2", "--out", str(other)],
                              capture_output=True, text=True, timeout=600)
    assert compared.returncode == 0, compared.stderr
    [record] = json.loads((other / "results.json").read_text())["records"]
    assert record["verdict"] == "known" and record["failure_kind"] == "compile divergence"


@pytest.mark.webgpu
def test_orts_quantizer_compiles_under_both_compilers(ort):
    """Only `enable subgroups;` separates it from Naga, and the wgpu backend bridges that, recorded."""
    results = verify.check("ort.dp4a.quantize", {"dtype": "f32"}, checks="reference", examples=3, implementation="wgpu",
                           isolate=False, profile="quick")
    assert results.verdict is Verdict.PASS


# -- backends, setup ----------------------------------------------------------------------------------------
def test_ort_kernels_run_on_dawn_unless_a_check_names_another_implementation():
    profile = get_profile("quick")
    for name in ORT_KERNELS:
        assert get_kernel(name).implementations == ("dawn",)
    jobs = check_jobs("ort.dp4a.quantize", {}, profile=profile, examples=1, seed=0, out_dir=None, time_limit=None)
    assert {job.implementation for job in jobs} == {"dawn"}
    jobs = check_jobs("ort.dp4a.quantize", {}, profile=profile, examples=1, seed=0, out_dir=None, time_limit=None,
                      implementation="wgpu")
    assert {job.implementation for job in jobs} == {"wgpu"}
    jobs = check_jobs("dp4a.quantize", {}, profile=profile, examples=1, seed=0, out_dir=None, time_limit=None)
    assert {job.implementation for job in jobs} == {None}


@pytest.mark.webgpu
def test_the_gate_runs_ort_kernels_on_dawn_when_it_runs_on_wgpu(ort):
    jobs, skipped = gate_jobs(list(ORT_KERNELS) + ["dp4a.quantize"], profile=get_profile("ci"), seed=0, out_dir=None,
                              time_limit=None, implementations=["wgpu"])
    assert not skipped
    assert {job.implementation for job in jobs if job.kernel.startswith("ort.")} == {"dawn"}
    assert {job.implementation for job in jobs if not job.kernel.startswith("ort.")} == {"wgpu"}


def test_a_gate_told_to_run_on_wgpu_only_does_not_plan_kernels_meant_for_dawn():
    unplanned = []
    jobs, skipped = gate_jobs(list(ORT_KERNELS) + ["dp4a.quantize"], profile=get_profile("ci"), seed=0, out_dir=None,
                              time_limit=None, implementations=["wgpu"], unplanned=unplanned)
    assert not skipped and {job.kernel for job in jobs} == {"dp4a.quantize"}
    assert sorted(name for name, _ in unplanned) == sorted(ORT_KERNELS)
    assert {only for _, only in unplanned} == {("dawn",)}


def hide_onnxruntime_web(monkeypatch, tmp_path):
    """onnxruntime-web as if npm had not installed it, an empty ORT WGSL cache and no shipped
    captures (the runtimes already running are set aside for the test, not closed). What the
    shipped captures serve without it: tests/sources/test_shipped_sources.py."""
    monkeypatch.setattr(ort_runtime, "_SHARED", {})
    monkeypatch.setenv(programs.CACHE_ENV, str(tmp_path / "empty-cache"))
    monkeypatch.setattr(ort_cache_module, "SHIPPED", Shipped(tmp_path / "nothing-shipped", "ORT's captures"))

    def missing(version=None):
        raise SetupError(f"ORT kernels need npm onnxruntime-web {ort_runtime.pinned_version()}, not found in "
                         f"{tmp_path}; {ort_runtime.SETUP_HINT}")

    monkeypatch.setattr(ort_runtime, "find_ort_dist", missing)


def test_without_onnxruntime_web_an_ort_kernel_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    hide_onnxruntime_web(monkeypatch, tmp_path)
    for name in ORT_KERNELS:
        assert verify_main(["show", name]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "onnxruntime-web 1.30.0" in err and "verify setup --dawn" in err
    jobs, skipped = gate_jobs(list(ORT_KERNELS), profile=get_profile("ci"), seed=0, out_dir=None, time_limit=None)
    assert not jobs and [r.verdict for r in skipped] == [Verdict.SKIP] * len(ORT_KERNELS)
    assert all("onnxruntime-web" in r.reason for r in skipped)


def test_cached_programs_serve_a_machine_without_onnxruntime_web(tmp_path, monkeypatch):
    config = programs.CaptureConfig("f32")
    folder = tmp_path / "cache" / ort_runtime.pinned_version() / "mesa"
    folder.mkdir(parents=True)
    want = programs.wanted(config, ort_runtime.pinned_version())
    made = programs.Capture(replace(want, adapter="elsewhere", run="the run"), {QUANTIZE: "fn q() {}"})
    (folder / config.filename).write_text(made.to_json())
    hide_onnxruntime_web(monkeypatch, tmp_path)
    assert programs.captured_programs(config, tmp_path / "cache").wgsl(QUANTIZE) == (
        f"// onnxruntime-web {ort_runtime.pinned_version()} on elsewhere: the run\nfn q() {{}}")


def test_without_onnx_building_a_model_is_a_setup_error_naming_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    with pytest.raises(SetupError, match=r"pip install 'onnx>=1.16,<2'"):
        _ = MatMulNBitsModel("f32", 4, 32, 256, 32).onnx_bytes


def test_small_m_is_refused_for_f16_as_ort_never_runs_it_there():
    with pytest.raises(verify.UsageError, match="only for f32 outputs"):
        get_kernel("ort.dp4a.matmul_small_m").config({"dtype": "f16"})


def test_a_config_must_state_orts_fixed_entries_right():
    kernel = get_kernel("ort.dp4a.matmul")
    config = kernel.config({"dtype": "f16", "bits": 4})
    assert (config["acc"], config["mul"], config["tile"]) == ("f16", "f16", "64x64")
    assert kernel.config(dict(config)) == config
    assert kernel.config({"dtype": "f32", "bits": 8})["mul"] == "f32"
    assert kernel.config({"dtype": "f16", "bits": 2})["mul"] == "f16"
    with pytest.raises(verify.UsageError, match="acc=f32"):
        kernel.config({"dtype": "f16", "acc": "f32"})


# -- the end-to-end budgets (no GPU) ----------------------------------------------------------------------------
def _weights(rng, n, k, bits=4, block_size=32):
    codes = rng.integers(0, 2**bits, (n, k)).astype(np.int16) - default_zero_point(bits)
    scales = (2.0 ** rng.uniform(-8, -4, (n, k // block_size))).astype(np.float16).astype(np.float64)
    return codes, scales


@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_the_dp4a_budget_covers_every_legal_quantization_of_a(dtype):
    """Quantizations at the corners of the legal sets (the extremes of s·c) land within the budget
    of the nominal DP4A-exact product, with ORT's arithmetic done exactly."""
    rng = np.random.default_rng(0)
    t = np.float16 if dtype == "f16" else np.float32
    a = (rng.standard_normal((2, 3, 512)) * 2.0 ** rng.integers(-6, 6, (2, 3, 1))).astype(t)
    codes, scales = _weights(rng, 48, 512)
    w = codes * np.repeat(scales, 32, axis=-1)
    centre, budget = dp4a_budget(a, codes, scales, None, dtype=dtype, acc=dtype, mul=dtype, block_size=32)
    q = quantize_blocks(a, dtype)
    for pick_scale in (q.scale_lo, q.scale_hi):
        for pick_code in (q.code_lo, q.code_hi):
            a_deq = pick_code.astype(np.float64) * np.repeat(pick_scale, 128, axis=-1)
            assert (np.abs(a_deq @ w.T - centre) <= budget).all()
    assert (budget > 0).all()


def test_the_float_budget_covers_a_sequential_f16_evaluation():
    """ORT's float programs' arithmetic in f16, one operation at a time, within float_budget."""
    rng = np.random.default_rng(1)
    k, n = 256, 16
    a = rng.uniform(-1, 1, (1, 2, k)).astype(np.float16)
    codes = rng.integers(0, 16, (n, k)).astype(np.uint8)
    packed = pack_weights(codes, 4, 32)
    scales = (2.0 ** rng.uniform(-8, -3, (n, k // 32))).astype(np.float16)
    centre, budget = float_budget(a, packed, scales.astype(np.float64), None, None, dtype="f16", bits=4, block_size=32)
    w = ((codes.astype(np.float16) - np.float16(8)) * np.repeat(scales, 32, axis=-1)).astype(np.float16)
    y = np.zeros((1, 2, n), np.float16)
    for i in range(k):
        y = (y + (a[..., i:i + 1] * w[:, i]).astype(np.float16)).astype(np.float16)
    assert (np.abs(y.astype(np.float64) - centre) <= budget).all()


@pytest.mark.parametrize("groups", [1, 2, 3, 4, 5, 8, 32, 33, 100, 1000])
def test_a_lowered_limit_makes_orts_normalisation_pack_a_grid_as_it_does_past_65535(groups):
    """Under lowered_limit, ort_grid (NormalizeDispatchGroupSize) takes its square or its cube for
    any grid big enough to pack (3 workgroups or more; a cube where its side is below the
    square's), covering every workgroup with no dimension past the lowered limit, and flat grids
    stay as ORT dispatches them under WebGPU's limit."""
    from verify.sources.ort.launch import MAX_GROUPS, lowered_limit, packed_grid

    assert packed_grid(groups) == ort_grid(groups) == (groups, 1, 1)
    for grid in ("square", "cube"):
        limit = lowered_limit(groups, grid)
        x, y, z = packed_grid(groups, grid)
        assert x * y * z >= groups and max(x, y, z) <= limit
        if groups >= 3:
            assert y > 1 and limit < groups
            square, cube = int(np.ceil(np.sqrt(groups))), int(np.ceil(np.cbrt(groups)))
            assert (z > 1) == (grid == "cube" and cube < square)
        else:
            assert (x, y, z, limit) == (groups, 1, 1, MAX_GROUPS)
