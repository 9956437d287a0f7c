"""dp4a.quantize: block independence across subgroup widths, zero and tie blocks, config rules."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from verify.references.dp4a_quant import quantize_blocks
from verify.budgets.metrics import compare
from verify.cases import Case
from verify.errors import UsageError
from verify.gpu.device import SUBGROUP_WIDTHS
from verify.kernels.dp4a.quantize import Quantize
from verify.kernels.dp4a.quantize_cases import BLOCK_KINDS, make_activation, make_blocks

KERNEL = Quantize()
_TYPES = {"f16": np.float16, "f32": np.float32}


def _variants(webgpu_device, dtype: str) -> list[dict]:
    """Every reduction this device can run: emulated at each width, the tree, native subgroups."""
    configs = [{"dtype": dtype, "reduce": "emulated", "width": w} for w in SUBGROUP_WIDTHS]
    configs += [{"dtype": dtype, "reduce": "workgroup"}, {"dtype": dtype, "reduce": "subgroup"}]
    configs = [KERNEL.config(c) for c in configs]
    return [c for c in configs if not webgpu_device.missing(KERNEL.requirements(c))]


def _run(webgpu_device, config: dict, a: np.ndarray) -> dict:
    launched = KERNEL.launch(webgpu_device, KERNEL.wgsl(config), config, Case({"a": a}))
    assert all(launched.guard_intact.values()), launched.guard_intact
    return launched.outputs


def _assert_legal(config: dict, a: np.ndarray, outputs: dict) -> None:
    for expected in KERNEL.expected(config, Case({"a": a})):
        metrics = compare(outputs[expected.name], expected)
        assert metrics.passed, metrics.message()


@pytest.mark.webgpu
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_every_subgroup_width_gives_identical_codes_and_scales(webgpu_device, dtype):
    """A block's max is exact whichever lanes combine it, so every width (and the tree, and the
    native subgroups) must agree bit for bit; a butterfly that mixed blocks at 64 or 128 lanes,
    or a combine that missed a subgroup at 4 or 8, would differ. 45 mixed blocks: 11 full
    workgroups of four and a tail of one."""
    a = make_activation(np.random.default_rng(5), (3, 5, 384), "normal", "mixed", dtype)
    variants = _variants(webgpu_device, dtype)
    assert len(variants) >= len(SUBGROUP_WIDTHS) + 1
    first = _run(webgpu_device, variants[0], a)
    _assert_legal(variants[0], a, first)
    for config in variants[1:]:
        outputs = _run(webgpu_device, config, a)
        for name in ("codes", "scales"):
            assert np.array_equal(outputs[name].view(np.uint8), first[name].view(np.uint8)), (config, name)


@pytest.mark.webgpu
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_all_zero_block_stores_zero_codes_and_scale_beside_live_blocks(webgpu_device, dtype):
    """Blocks 1 and 2 of a workgroup's four are zero; the guard keeps 0/0 out of their codes."""
    rng = np.random.default_rng(9)
    a = rng.standard_normal((1, 4 * 128)).astype(_TYPES[dtype])
    a[0, 128:384] = 0
    for config in _variants(webgpu_device, dtype):
        outputs = _run(webgpu_device, config, a)
        assert (outputs["codes"][0, 128:384] == 0).all(), config
        assert (outputs["scales"][0, 1:3] == 0).all(), config
        assert (outputs["scales"][0, [0, 3]] > 0).all(), config
        _assert_legal(config, a, outputs)


@pytest.mark.webgpu
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_tie_block_codes_are_one_of_the_two_nearest(webgpu_device, dtype):
    """Block max 1 (a negative value), values ±1/2: 127·t = ±63.5, an exact tie, so {63, 64} and
    {-64, -63} are legal and nothing else, the same code for equal values; 1/4 gives 31.75, code 32."""
    a = np.zeros((1, 128), dtype=_TYPES[dtype])
    a[0, 0] = -1
    a[0, 1:64] = 0.5
    a[0, 64:127] = -0.5
    a[0, 127] = _TYPES[dtype](0.25)
    for config in _variants(webgpu_device, dtype):
        outputs = _run(webgpu_device, config, a)
        codes = outputs["codes"][0]
        assert codes[0] == -127 and codes[127] == 32
        assert set(codes[1:64].tolist()) <= {63, 64} and len(set(codes[1:64].tolist())) == 1
        assert set(codes[64:127].tolist()) <= {-64, -63} and len(set(codes[64:127].tolist())) == 1
        _assert_legal(config, a, outputs)


@pytest.mark.parametrize("kind", BLOCK_KINDS)
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_block_kinds_make_finite_dtype_values_with_their_property(kind, dtype):
    rng = np.random.default_rng(1)
    base = rng.standard_normal((40, 128)).astype(_TYPES[dtype]).astype(np.float64)
    blocks = make_blocks(rng, kind, base, dtype).astype(_TYPES[dtype])
    assert np.isfinite(blocks).all()
    top = np.abs(blocks.astype(np.float64)).max(axis=1)
    if kind == "zero":
        assert (blocks == 0).all()
    elif kind == "negative_max":
        assert (blocks[np.arange(40), np.abs(blocks).argmax(axis=1)] < 0).all()
    elif kind == "tie":
        q = quantize_blocks(blocks.astype(np.float64), dtype)
        assert (q.code_hi - q.code_lo == 1).sum() > 40 * 16
    elif kind == "tiny_max":
        assert (top < 2.0 ** (-10 if dtype == "f16" else -122)).all()
    elif kind == "huge_max":
        assert (top >= 2.0 ** (12 if dtype == "f16" else 100)).all()


@pytest.mark.parametrize(("overrides", "rule"), [
    ({"reduce": "emulated"}, "reduce=emulated needs width"),
    ({"reduce": "emulated", "width": "12"}, "must be a power of two"),
    ({"reduce": "emulated", "width": "256"}, "4 to 128 lanes"),
    ({"reduce": "subgroup", "width": "32"}, "applies only to reduce=emulated"),
    ({"reduce": "shuffle"}, "expected one of subgroup, workgroup, emulated"),
])
def test_bad_config_is_a_usage_error_naming_the_rule(overrides, rule):
    with pytest.raises(UsageError, match=rule):
        KERNEL.config(overrides)


def test_cli_rejects_an_emulated_config_without_width_with_exit_code_2():
    result = subprocess.run([sys.executable, "-m", "verify", "show", "dp4a.quantize", "--config", "reduce=emulated"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and "needs width" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.webgpu
def test_subgroup_reduce_on_a_device_without_subgroups_is_skipped(webgpu_device, monkeypatch):
    """The check is skipped with the reason, not passed: verify.worker asks the device first."""
    from verify.protocol import Job
    from verify.results.record import Verdict
    from verify.worker import DeviceCache, execute

    monkeypatch.setattr(webgpu_device, "features", webgpu_device.features - {"subgroup"})
    devices = DeviceCache()
    monkeypatch.setattr(devices, "get", lambda adapter, implementation, limits: webgpu_device)
    job = Job(0, "dp4a.quantize", "verify.kernels.dp4a.quantize:Quantize", {"dtype": "f32", "reduce": "subgroup"},
              "reference", 5, 0)
    record = execute(job, devices, lambda event: None)
    assert record.verdict is Verdict.SKIP and "subgroup" in record.reason and record.examples == 0
