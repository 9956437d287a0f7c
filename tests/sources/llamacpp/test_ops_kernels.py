"""ggml-webgpu's rms_norm_mul, run on a real adapter under verify's contract, and planted bugs the
contract catches."""

from __future__ import annotations

import pytest

from verify.budgets.metrics import compare
from verify.kernels.registry import get_kernel
from verify.sources.llamacpp.ops.cases import make_case

pytestmark = pytest.mark.webgpu

NAME = "llamacpp.ops.rms_norm_mul"


def over_budget(device, config, case, wgsl=None) -> list[str]:
    kernel = get_kernel(NAME)
    launched = kernel.launch(device, wgsl or kernel.wgsl(config), config, case)
    return [e.name for e in kernel.expected(config, case) if not compare(launched.outputs[e.name], e).passed]


@pytest.mark.parametrize("overrides", ({}, {"mode": "inplace", "wg_size": 64}), ids=("separate", "inplace-64"))
def test_rms_norm_mul_is_within_budget_on_its_corners(webgpu_device, overrides):
    kernel = get_kernel(NAME)
    config = kernel.config(overrides)
    for case in kernel.corners(config):
        assert over_budget(webgpu_device, config, case) == [], case.params


#: (what is planted, the line of the program as instantiated, what replaces it)
PLANTED = [
    ("the mean over ne0 - 1 values", "sum/f32(params.ne0)", "sum/f32(params.ne0 - 1u)"),
    ("eps left out", "sum/f32(params.ne0) + params.eps", "sum/f32(params.ne0)"),
    ("the weight's last column repeated", "col % params.mul_src_ne0", "min(col, params.mul_src_ne0 - 2u)"),
    ("the tree stops one level early", "var offset: u32 = WG_SIZE / 2;", "var offset: u32 = WG_SIZE / 4;"),
]


@pytest.mark.parametrize("label, old, new", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_bugs_fail_the_contract(webgpu_device, label, old, new):
    kernel = get_kernel(NAME)
    config = kernel.config({})
    wgsl = kernel.wgsl(config)
    old = old.replace("WG_SIZE", "256")
    new = new.replace("WG_SIZE", "256")
    assert wgsl.count(old) == 1, old
    # small rows of values near 1e-3 (eps matters), one past the lanes (the tree's second half holds data)
    case = make_case(2, 257, "normal", 1e-5, 71)
    case.arrays["x"] = (case["x"] * 1e-3).astype("float32")
    assert over_budget(webgpu_device, config, case, wgsl.replace(old, new)) == ["y"], label


#: The product line of rms_norm_mul.wgsl, and how an implementation that flushes subnormal inputs
#: (WGSL allows it; NVIDIA's drivers do) computes it: `limit` is where values count as 0.
PRODUCT = "scale * rn_src[rn_src_offset] * mul_src[mul_src_offset]"


def _flushing(limit: str) -> str:
    return (f"scale * select(rn_src[rn_src_offset], 0.0, abs(rn_src[rn_src_offset]) < {limit})"
            f" * select(mul_src[mul_src_offset], 0.0, abs(mul_src[mul_src_offset]) < {limit})")


def test_subnormal_inputs_flushed_to_zero_are_within_budget(webgpu_device):
    """A flushed subnormal x_j loses all of y_j = scale x_j w_j, which scale (up to 1/sqrt(eps))
    lifts far above any absolute floor: the budget allows it where x_j or w_j is subnormal, and
    only there (a flush of normal values still fails)."""
    import numpy as np

    kernel = get_kernel(NAME)
    config = kernel.config({})
    wgsl = kernel.wgsl(config)
    assert wgsl.count(PRODUCT) == 1
    case = make_case(3, 1025, "tiny", 1e-6, 255689)
    x = np.abs(case["x"])
    assert ((x > 0) & (x < np.finfo(np.float32).tiny)).any(), "the case must hold subnormal inputs"
    assert over_budget(webgpu_device, config, case, wgsl.replace(PRODUCT, _flushing("1.17549435e-38"))) == []
    assert over_budget(webgpu_device, config, case, wgsl.replace(PRODUCT, _flushing("1e-30"))) == ["y"]
