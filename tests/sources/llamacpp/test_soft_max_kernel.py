"""ggml-webgpu's soft_max, run on a real adapter under verify's contract, planted bugs the contract
catches, and the binding the INPLACE program declares twice."""

from __future__ import annotations

import numpy as np
import pytest

from verify.budgets.metrics import compare
from verify.kernels.registry import get_kernel
from verify.sources.llamacpp.ops.soft_max_cases import make_case
from verify.wgsl.interface import read_interface

NAME = "llamacpp.ops.soft_max"


def over_budget(device, config, case, wgsl=None) -> list[str]:
    kernel = get_kernel(NAME)
    launched = kernel.launch(device, wgsl or kernel.wgsl(config), config, case)
    return [e.name for e in kernel.expected(config, case) if not compare(launched.outputs[e.name], e).passed]


GATE = ({}, {"mask": "f32", "sinks": False, "mode": "inplace", "wg_size": 64},
        {"mask": "none", "sinks": True, "wg_size": 128}, {"mask": "none", "sinks": False})


@pytest.mark.webgpu
@pytest.mark.parametrize("overrides", GATE, ids=("f16-sinks", "f32-inplace-64", "sinks-128", "bare"))
def test_soft_max_is_within_budget_on_its_corners(webgpu_device, overrides):
    kernel = get_kernel(NAME)
    config = kernel.config(overrides)
    for case in kernel.corners(config):
        floor = case.params["logits"] == "below_floor" and not config["sinks"]  # §19.7, known
        assert over_budget(webgpu_device, config, case) == (["y"] if floor else []), case.params


@pytest.mark.webgpu
def test_hidden_rows_are_zero_with_a_sink_and_nan_without_one(webgpu_device):
    """A row whose mask is -inf throughout: with a sink every output is 0 (the sum is exp(sink -
    sink) = 1), without one the program's 0/0 is NaN as ggml's CPU arithmetic is (its op defines no
    value: a debug build asserts the sum positive)."""
    kernel = get_kernel(NAME)
    for sinks in (True, False):
        config = kernel.config({"sinks": sinks})
        case = make_case("f16", sinks, batch=1, heads=2, rows=3, n=40, mask_kind="hidden_rows", seed=7)
        y = kernel.launch(webgpu_device, kernel.wgsl(config), config, case).outputs["y"]
        hidden = np.isneginf(case["mask"][0, 0, :3].astype(np.float64)).all(-1)
        assert hidden.any()
        rows = y[:, :, hidden]
        assert (rows == 0).all() if sinks else np.isnan(rows).all()
        assert over_budget(webgpu_device, config, case) == []


#: (what is planted, the line of the program as instantiated, what replaces it, the case)
PLANTED = [
    ("the max not subtracted", "let ex = exp(val - row_max);", "let ex = exp(val);",
     dict(batch=1, heads=2, rows=2, n=40, logits="large", mask_kind="zero")),
    ("ALiBi's slope one head off", "pow(params.m0, head + 1)", "pow(params.m0, head)",
     dict(batch=1, heads=4, rows=2, n=33, mask_kind="alibi", max_bias=8.0)),
    ("the mask ignored", " + slope * mask_val(i_src1_row + col)", "",
     dict(batch=1, heads=2, rows=2, n=33, mask_kind="causal")),
    ("the sink left out of the sum", "let row_sum = add_sinks(scratch[0], i2, row_max);",
     "let row_sum = scratch[0];", dict(batch=1, heads=2, rows=2, n=33, mask_kind="zero")),
    ("the mask's head broadcast dropped", "(i2 % params.ne12) * params.stride_src12", "0u * params.stride_src12",
     dict(batch=1, heads=4, rows=2, n=33, mask_kind="uniform", mask_heads=4)),
    ("the sum's lane tree stops a level early", "\n    offset = WG_SIZE / 2;", "\n    offset = WG_SIZE / 4;",
     dict(batch=1, heads=1, rows=2, n=300, mask_kind="zero")),
    ("the max's lane tree stops a level early", "var offset: u32 = WG_SIZE / 2;", "var offset: u32 = WG_SIZE / 4;",
     dict(batch=1, heads=1, rows=2, n=300, logits="large", mask_kind="zero")),
]


@pytest.mark.webgpu
@pytest.mark.parametrize("label, old, new, shape", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_bugs_fail_the_contract(webgpu_device, label, old, new, shape):
    kernel = get_kernel(NAME)
    config = kernel.config({})
    wgsl = kernel.wgsl(config)
    old, new = old.replace("WG_SIZE", "256"), new.replace("WG_SIZE", "256")
    assert old in wgsl, old  # every occurrence is replaced (the logit is computed in two loops)
    case = make_case("f16", True, seed=91, **shape)
    assert over_budget(webgpu_device, config, case) == [], label  # the case passes the program as it is
    assert over_budget(webgpu_device, config, case, wgsl.replace(old, new)) == ["y"], label


def test_the_inplace_program_binds_params_where_it_also_declares_the_unused_dst():
    """soft_max.wgsl declares `dst` at DST_BINDING whatever the defines, and with INPLACE `params`
    there too; it names `dst` only without INPLACE. The interface keeps the variable the program
    uses (a layout with both is a conflict, WGSL forbids only two used at one slot)."""
    kernel = get_kernel(NAME)
    inplace = read_interface(kernel.wgsl(kernel.config({"mask": "f32", "sinks": False, "mode": "inplace"})))
    assert [(b.binding, b.name) for b in inplace.bindings] == [(0, "src"), (1, "mask"), (2, "params")]
    separate = read_interface(kernel.wgsl(kernel.config({})))
    assert [b.name for b in separate.bindings] == ["src", "mask", "sinks", "dst", "params"]
    both = ("@group(0) @binding(0) var<storage, read_write> a: array<f32>;\n"
            "@group(0) @binding(0) var<storage, read_write> b: array<f32>;\n"
            "@compute @workgroup_size(1) fn main() { a[0] = b[0]; }\n")
    assert [b.name for b in read_interface(both).bindings] == ["a", "b"]  # both used: the device reports it


@pytest.mark.webgpu
@pytest.mark.parametrize("sinks", (pytest.param(False, marks=pytest.mark.xfail(strict=True, reason="§19.7")), True),
                         ids=("without-sink", "with-sink"))
def test_logits_below_the_programs_floor_get_their_softmax(webgpu_device, sinks):
    """§19.7: without sinks the program's max starts at -1e30, so a row of logits all below it comes
    out 0/0 = NaN where ggml's op gives its softmax (one half at each of two tied maxima here); with a
    sink the max starts at the sink and the row is right (all 0: the sink takes the whole weight)."""
    kernel = get_kernel(NAME)
    config = kernel.config({"mask": "none", "sinks": sinks, "wg_size": 64})
    case = make_case("none", sinks, batch=1, heads=1, rows=1, n=4, seed=5)
    case.arrays["x"] = np.array([[[[-2e30, -2.5e30, -3e30, -2e30]]]], np.float32)
    y = kernel.launch(webgpu_device, kernel.wgsl(config), config, case).outputs["y"]
    assert not np.isnan(y).any()
    assert over_budget(webgpu_device, config, case) == []
