"""ggml-webgpu's quantize_q8 and MMVQ mat-vec, run on a real adapter under verify's contracts."""

from __future__ import annotations

import numpy as np
import pytest

from verify.budgets.metrics import compare
from verify.instrument import EmulatingDevice
from verify.kernels.registry import get_kernel
from verify.references import ggml_quants as gq
from verify.sources.llamacpp.quant.cases import half_block_case, overflowing_sum_case, with_finite_sums

pytestmark = pytest.mark.webgpu(requires=("subgroup",))


def judged(device, kernel, config, case):
    launched = kernel.launch(device, kernel.wgsl(config), config, case)
    return {e.name: compare(launched.outputs[e.name], e) for e in kernel.expected(config, case)}, launched.outputs


def over_budget(metrics) -> list[str]:
    return [name for name, m in metrics.items() if not m.passed]


@pytest.mark.parametrize("weight", ("q4_0", "q4_1", "q8_0", "q2_K", "q4_K"))
def test_the_mat_vec_is_within_budget_on_its_corners(webgpu_device, weight):
    kernel = get_kernel("llamacpp.quant.mul_mat_vec_q")
    config = kernel.config({"weight": weight, "cols": 2, "subgroup_min": 8, "subgroup_max": 8})
    for case in kernel.corners(config):
        metrics, _ = judged(webgpu_device, kernel, config, case)
        assert not over_budget(metrics)


def test_quantize_q8_writes_legal_codes_scales_and_sums(webgpu_device):
    kernel = get_kernel("llamacpp.quant.quantize_q8")
    config = kernel.config({"weight": "q4_0", "subgroup_min": 8, "subgroup_max": 8})
    for case in kernel.corners(config):
        metrics, outputs = judged(webgpu_device, kernel, config, case)
        assert not over_budget(metrics)
        assert not outputs["d"][0, 0] and not outputs["codes"][0, 0].any()  # the all-zero block


@pytest.mark.xfail(strict=True, reason="docs/findings.md §19.1: quantize_q8 assumes subgroups of at least 8 lanes")
def test_quantize_q8_on_4_lane_subgroups_takes_the_max_of_half_a_block(webgpu_device):
    kernel = get_kernel("llamacpp.quant.quantize_q8")
    config = kernel.config({"weight": "q4_0", "subgroup_min": 4, "subgroup_max": 4})
    metrics, _ = judged(EmulatingDevice(webgpu_device, 4), kernel, config, half_block_case())
    assert not over_budget(metrics)


def test_quantize_q8_on_8_lane_subgroups_takes_the_max_of_the_whole_block(webgpu_device):
    """The control: the same case at 8 lanes (emulated), the width cluster_max_8 is written for."""
    kernel = get_kernel("llamacpp.quant.quantize_q8")
    config = kernel.config({"weight": "q4_0", "subgroup_min": 8, "subgroup_max": 8})
    metrics, outputs = judged(EmulatingDevice(webgpu_device, 8), kernel, config, half_block_case())
    assert not over_budget(metrics)
    assert outputs["d"][0, 0] == np.float16(100.0 / 127)


@pytest.mark.xfail(strict=True, reason="docs/findings.md §19.2: q8_1's block sum s overflows f16")
def test_the_q4_0_mat_vec_is_finite_where_a_blocks_sum_overflows_f16(webgpu_device):
    """32 activations of 3000: d = 23.6, every code 127, d Σq = 96000 > 65504, so s = f16(...) is
    inf (in ggml's CPU quantize_row_q8_1_ref too). The exact product is finite (12 for these
    weights), but MMVQ's Q4_0 term subtracts 8 da s / 4: y is -inf or NaN."""
    kernel = get_kernel("llamacpp.quant.mul_mat_vec_q")
    config = kernel.config({"weight": "q4_0", "subgroup_min": 8, "subgroup_max": 8})
    case = overflowing_sum_case()
    weights, activations = case["weights"], case["activations"]
    assert not np.isfinite(gq.q8_1_fields(activations)[1]).all()
    launched = kernel.launch(webgpu_device, kernel.wgsl(config), config, case)
    assert np.isfinite(gq.dot("q4_0", weights, activations)).all()
    assert np.isfinite(launched.outputs["y"]).all()


def test_drawn_activations_keep_every_block_sum_finite():
    x = np.full((1, 64), 3000.0, np.float32)
    _, sums, _ = gq.q8_1_fields(gq.quantize("q8_1", with_finite_sums(x)))
    assert np.isfinite(sums).all()


def test_an_overflowing_block_sum_gets_a_finite_budget_which_the_mat_vecs_inf_fails(webgpu_device):
    """§19.2 as the contract sees it: s = inf is no rounding of d Σq, so the budget takes f16's
    rounding of d Σq there (finite) rather than |s - d Σq| (inf, which would admit any output),
    and the mat-vec's -inf or NaN is outside it."""
    kernel = get_kernel("llamacpp.quant.mul_mat_vec_q")
    config = kernel.config({"weight": "q4_0", "subgroup_min": 8, "subgroup_max": 8})
    case = overflowing_sum_case()
    (expected,) = kernel.expected(config, case)
    assert np.isfinite(expected.budget).all() and np.isfinite(expected.lo).all()
    metrics, outputs = judged(webgpu_device, kernel, config, case)
    assert not np.isfinite(outputs["y"]).all()
    assert over_budget(metrics) == ["y"]
