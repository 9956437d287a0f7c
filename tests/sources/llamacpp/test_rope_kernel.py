"""ggml-webgpu's rope, run on a real adapter under verify's contract, and planted bugs the contract
catches."""

from __future__ import annotations

import numpy as np
import pytest

from verify.budgets.metrics import compare
from verify.kernels.registry import get_kernel
from verify.sources.llamacpp.ops.rope_cases import make_case

pytestmark = pytest.mark.webgpu

NAME = "llamacpp.ops.rope"
GATE = ({}, {"dtype": "f16", "binding": "inplace", "freq_factors": True, "wg_size": 64},
        {"binding": "inplace", "freq_factors": True, "wg_size": 128}, {"dtype": "f16"})


def over_budget(device, config, case, wgsl=None) -> list[str]:
    kernel = get_kernel(NAME)
    launched = kernel.launch(device, wgsl or kernel.wgsl(config), config, case)
    return [e.name for e in kernel.expected(config, case) if not compare(launched.outputs[e.name], e).passed]


@pytest.mark.parametrize("overrides", GATE, ids=("f32", "f16-inplace-ff-64", "f32-inplace-ff-128", "f16"))
def test_rope_is_within_budget_on_its_corners(webgpu_device, overrides):
    kernel = get_kernel(NAME)
    config = kernel.config(overrides)
    for case in kernel.corners(config):
        assert over_budget(webgpu_device, config, case) == [], case.params


def test_copied_channels_come_back_bit_for_bit(webgpu_device):
    """Outside the window [n_offs, n_offs + n_dims) the program copies: budget 0 there."""
    kernel = get_kernel(NAME)
    config = kernel.config({})
    case = make_case("f32", False, (128, 32, 64), "neox", (1, 2, 3), "normal", 5, max_position=900)
    y = kernel.launch(webgpu_device, kernel.wgsl(config), config, case).outputs["y"]
    outside = np.r_[0:64, 96:128]
    assert np.array_equal(y[..., outside], case["x"][..., outside])
    assert not np.array_equal(y[..., 64:96], case["x"][..., 64:96])


def test_the_budget_is_far_below_what_a_wrong_rotation_costs():
    """The budget at position 4096 stays a small fraction of |x| (the angle's f32 error and cos/sin's
    2^-11), so a rotation by the wrong angle or of the wrong pair cannot hide inside it."""
    kernel = get_kernel(NAME)
    config = kernel.config({})
    case = make_case("f32", False, (128, 128, 0), "normal", (1, 2, 2), "normal", 6, max_position=4096)
    budget = kernel.expected(config, case)[0].budget
    assert np.all(budget <= 0.02 * (np.abs(case["x"]).max() + 1))


#: (what is planted, the line of the program as instantiated, what replaces it)
PLANTED = [
    ("NeoX's pairing swapped with the normal mode's", "let is_neox = bool(params.mode & 2);",
     "let is_neox = !bool(params.mode & 2);"),
    ("the theta exponent k instead of k = iw/2", "var theta_scale_pwr: u32 = iw / 2;", "var theta_scale_pwr: u32 = iw;"),
    ("sin's sign flipped", "x0 * thetas.x - x1 * thetas.y", "x0 * thetas.x + x1 * thetas.y"),
    ("YaRN's mscale left out", "mscale *= 1.0f + 0.1f * log(1.0f / params.freq_scale);", ""),
    ("the ramp read at the channel, not the pair", "(f32(i / 2) - low)", "(f32(i) - low)"),
    ("the window's offset ignored for the copy", "i0 < params.n_offs ||", "false ||"),
]


@pytest.mark.parametrize("label, old, new", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_bugs_fail_the_contract(webgpu_device, label, old, new):
    kernel = get_kernel(NAME)
    config = kernel.config({})
    wgsl = kernel.wgsl(config)
    assert wgsl.count(old) == 1, old
    # NeoX, YaRN inside the pairs (ramp 4..27 of 32 pairs), attn_factor, a window moved by 32
    case = make_case("f32", False, (128, 64, 32), "neox", (1, 3, 2), "normal", 91, max_position=4096,
                     freq_scale=0.25, ext_factor=1.0, n_ctx_orig=4096)
    assert over_budget(webgpu_device, config, case, wgsl.replace(old, new)) == ["y"], label
    # the normal mode at full width: the pairing bug is invisible here (NeoX's pairs are not used)
    plain = make_case("f32", False, (64, 64, 0), "normal", (1, 3, 2), "normal", 92, max_position=2048)
    assert over_budget(webgpu_device, config, plain) == []


def test_frequency_factors_read_at_the_channel_instead_of_the_pair_fail_the_contract(webgpu_device):
    """FF_FUNC divides pair k's angle by src2[k] (ggml's freq_factors[i0/2]); reading src2[2k]
    takes another pair's factor (llama 3's ramp: 1 for the first pairs, 8 for the last)."""
    kernel = get_kernel(NAME)
    config = kernel.config({"freq_factors": True, "binding": "inplace", "wg_size": 128})
    wgsl = kernel.wgsl(config)
    old, new = "return src2[params.offset_src2 + i/2];", "return src2[params.offset_src2 + min(i, 31u)];"
    assert wgsl.count(old) == 1
    case = make_case("f32", True, (64, 64, 0), "normal", (1, 3, 2), "normal", 93, max_position=4096, ff_kind="llama3")
    assert over_budget(webgpu_device, config, case) == []
    assert over_budget(webgpu_device, config, case, wgsl.replace(old, new)) == ["y"]
