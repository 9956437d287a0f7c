"""The RMSNorm kernel under verify's pytest plugin: the property checks, and a test of our own."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from verify_rmsnorm import RmsNorm

import verify.strategies as vs
from verify.testing import assert_within_budget


@pytest.mark.webgpu
def test_rmsnorm_f32_holds_its_derived_budget(verify_check):
    verify_check("rmsnorm", {"dtype": "f32", "workgroup": 64}, examples=30)


@pytest.mark.webgpu(requires={"shader-f16"})
def test_rmsnorm_f16_holds_its_derived_budget(verify_check):
    verify_check(RmsNorm, {"dtype": "f16", "workgroup": 256}, examples=30)


@pytest.mark.webgpu
@settings(max_examples=15, deadline=None)
@given(x=vs.values((3, 200), "f32", kinds=("normal", "uniform", "spiky")),
       scale=st.sampled_from([2.0**-20, 1.0, 2.0**20]))
def test_rmsnorm_is_invariant_to_scaling_a_row(webgpu_device, x, scale):
    """RMSNorm(c x) = RMSNorm(x) for eps = 0: scaling a row by a power of two (exact in f32, and
    far from under- or overflow for these value kinds) leaves the output within budget of the
    unscaled reference."""
    kernel = RmsNorm()
    config = kernel.config({"dtype": "f32"})
    weight = np.ones(200, np.float32)
    case = verify_case(x * np.float32(scale), weight, eps=0.0)
    launched = kernel.launch(webgpu_device, kernel.wgsl(config), config, case)
    [expected] = kernel.expected(config, verify_case(x, weight, eps=0.0))
    assert_within_budget(launched.outputs["y"], expected)


def verify_case(x, weight, eps):
    from verify import Case

    return Case({"x": x, "weight": weight}, {"rows": x.shape[0], "hidden": x.shape[1], "eps": eps})


@pytest.mark.webgpu
def test_subnormal_inputs_read_as_zero_are_within_budget(webgpu_device):
    """WGSL lets an implementation read a subnormal input as 0 (SwiftShader and NVIDIA do): the
    budget allows that element to lose all of y, and only that element (a flush of normal values
    still fails)."""
    kernel = RmsNorm()
    config = kernel.config({"dtype": "f32", "workgroup": 64})
    product = "f32(x[base + i]) * inv * f32(weight[i])"
    wgsl = kernel.wgsl(config)
    assert wgsl.count(product) == 1

    def flushing(limit: str) -> str:
        return wgsl.replace(product, f"select(f32(x[base + i]), 0.0, abs(f32(x[base + i])) < {limit}) * inv"
                                     f" * f32(weight[i])")

    tiny = np.finfo(np.float32).tiny
    x = np.full((2, 64), tiny * 0.25, np.float32)  # subnormal inputs
    x[:, ::2] = np.float32(3e-30)  # normal, and small: the row's mean is eps's business
    case = verify_case(x, np.ones(64, np.float32), eps=1e-6)
    [expected] = kernel.expected(config, case)
    assert_within_budget(kernel.launch(webgpu_device, flushing("1.17549435e-38"), config, case).outputs["y"], expected)
    with pytest.raises(AssertionError):
        assert_within_budget(kernel.launch(webgpu_device, flushing("1e-29"), config, case).outputs["y"], expected)
