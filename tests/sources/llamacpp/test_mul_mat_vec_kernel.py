"""ggml-webgpu's float and dequantizing mat-vec (`llamacpp.quant.mul_mat_vec`), run on a real adapter
under verify's contract: its corners, its rules, the f16 dot that overflows (docs/findings.md
§19.9), and planted bugs the contract catches."""

from __future__ import annotations

import pytest

from verify.budgets.llamacpp_quant import mul_mat_vec_depth
from verify.budgets.metrics import compare
from verify.errors import UsageError
from verify.kernels.registry import get_kernel
from verify.sources.llamacpp.quant.mul_mat_vec_cases import make_case, overflow_case

NAME = "llamacpp.quant.mul_mat_vec"
#: lavapipe's subgroups are 8 lanes: the programs are made for exactly that width.
LAVAPIPE = {"subgroup_min": 8, "subgroup_max": 8}


def config_of(overrides):
    return get_kernel(NAME).config({**overrides, **LAVAPIPE})


def over_budget(device, config, case, wgsl=None) -> list[str]:
    kernel = get_kernel(NAME)
    launched = kernel.launch(device, wgsl or kernel.wgsl(config), config, case)
    return [e.name for e in kernel.expected(config, case) if not compare(launched.outputs[e.name], e).passed]


GATE = ({}, {"vec4": False, "cols": 2}, {"weight": "f32", "cols": 3, "reduce": "workgroup"},
        {"weight": "f32", "vec4": False}, {"activation": "f16", "vec4": False, "cols": 4},
        {"weight": "q4_0", "vec4": False}, {"weight": "q8_0", "vec4": False, "cols": 2},
        {"weight": "q4_1", "vec4": False, "cols": 4, "reduce": "workgroup"})


@pytest.mark.webgpu(requires=("subgroup",))
@pytest.mark.parametrize("overrides", GATE, ids=lambda o: "-".join(f"{v}" for v in o.values()) or "f16-vec4")
def test_the_mat_vec_is_within_budget_on_its_corners(webgpu_device, overrides):
    config = config_of(overrides)
    for case in get_kernel(NAME).corners(config):
        assert over_budget(webgpu_device, config, case) == [], case.params


@pytest.mark.webgpu(requires=("subgroup",))
def test_zero_weight_rows_give_exact_zeros(webgpu_device):
    kernel = get_kernel(NAME)
    config = config_of({"weight": "f32", "cols": 2})
    case = make_case("f32", "f32", True, 2, 9, 1024, "zero_rows", 3)
    zero = ~case["weights"].any(axis=1)
    assert zero.any() and not zero.all()
    y = kernel.launch(webgpu_device, kernel.wgsl(config), config, case).outputs["y"]
    assert (y[:, zero] == 0).all()
    assert over_budget(webgpu_device, config, case) == []


@pytest.mark.webgpu(requires=("subgroup",))
@pytest.mark.xfail(strict=True, reason="docs/findings.md §19.9: the VEC program takes f16 x f16 dot products in f16")
def test_the_f16_mat_vec_is_finite_where_its_products_pass_f16s_range(webgpu_device):
    kernel = get_kernel(NAME)
    config = config_of({"activation": "f16"})
    y = kernel.launch(webgpu_device, kernel.wgsl(config), config, overflow_case(8)).outputs["y"]
    assert y[0, 0] == 8 * 65536.0


@pytest.mark.webgpu(requires=("subgroup",))
def test_the_scalar_f16_program_takes_the_same_products_in_f32(webgpu_device):
    """The control: K = 7 takes SCALAR, f32(w) * f32(x), exact, and is right."""
    kernel = get_kernel(NAME)
    config = config_of({"activation": "f16", "vec4": False})
    case = overflow_case(7)
    y = kernel.launch(webgpu_device, kernel.wgsl(config), config, case).outputs["y"]
    assert y[0, 0] == 7 * 65536.0
    assert over_budget(webgpu_device, config, case) == []


def test_a_case_must_match_the_program_it_runs_on():
    kernel = get_kernel(NAME)
    with pytest.raises(UsageError, match="f16 activations with f16 weights only"):
        kernel.config({"weight": "f32", "activation": "f16"})
    with pytest.raises(UsageError, match="never vectorized"):
        kernel.config({"weight": "q4_0"})


def test_the_depth_counts_the_programs_roundings():
    """K = 4096 as vec4: a product, 3 in the dot, 4 a thread, 255 across lanes; as SCALAR f16 x f16
    the product is exact; q4_1: its decoding, product, 8 in row_sum, 2 blocks a thread, 255."""
    assert mul_mat_vec_depth("f32", "f32", True, 4096) == 1 + 3 + 4 + 255
    assert mul_mat_vec_depth("f16", "f16", False, 4097) == 0 + 17 + 255
    assert mul_mat_vec_depth("f16", "f16", True, 4096) == 4 + 255
    assert mul_mat_vec_depth("q4_1", "f32", False, 128 * 32) == 1 + 1 + 8 + 2 + 255


#: (what is planted, the program's line as instantiated, what replaces it, config, the case)
PLANTED = [
    ("the last partial step of K dropped", "k < k_vec; k += 256", "k < (k_vec / 256u) * 256u; k += 256",
     {}, ("f16", "f32", True, 1, 5, 1028, "normal", 11)),
    ("partial sums kept in f16", "acc[col][row] += inner_dot(w, x_vals[col]);",
     "acc[col][row] = f32(f16(acc[col][row] + inner_dot(w, x_vals[col])));",
     {}, ("f16", "f32", True, 1, 5, 2048, "constant", 12)),
    ("the row stride taken as K", "output_row * params.stride_01", "output_row * params.k",
     {"vec4": False, "cols": 2}, ("f16", "f32", False, 2, 6, 257, "normal", 13, (1, 3, 2, 1))),
    ("the activation column stride taken as K", "col * (params.stride_11 / VEC_SIZE)", "col * (params.k / VEC_SIZE)",
     {"weight": "f32", "cols": 3}, ("f32", "f32", True, 3, 5, 1028, "normal", 14, (0, 0, 0, 4))),
    ("the workgroup tree stops a level early", "var stride = 256 / 2u;", "var stride = 256 / 4u;",
     {"weight": "f32", "cols": 3, "reduce": "workgroup"}, ("f32", "f32", True, 3, 5, 1028, "normal", 15)),
    ("a subgroup's partial sum left out", "for (var k = subgroup_invocation_id; k < num_subgroups;",
     "for (var k = subgroup_invocation_id + 1u; k < num_subgroups;", {},
     ("f16", "f32", True, 1, 5, 1028, "normal", 16)),
    ("q4_0's codes offset by 7", "(f32(q_byte & 0xFu) - 8.0) * d", "(f32(q_byte & 0xFu) - 7.0) * d",
     {"weight": "q4_0", "vec4": False}, ("q4_0", "f32", False, 1, 5, 2080, "normal", 17)),
    ("q4_1's minimum dropped", "let q_lo = f32(q_byte & 0xFu) * d + m;", "let q_lo = f32(q_byte & 0xFu) * d;",
     {"weight": "q4_1", "vec4": False, "cols": 4}, ("q4_1", "f32", False, 4, 5, 2080, "normal", 18)),
]


@pytest.mark.webgpu(requires=("subgroup",))
@pytest.mark.parametrize("label, old, new, overrides, shape", PLANTED, ids=[p[0] for p in PLANTED])
def test_planted_bugs_fail_the_contract(webgpu_device, label, old, new, overrides, shape):
    kernel = get_kernel(NAME)
    config = config_of(overrides)
    wgsl = kernel.wgsl(config)
    old, new = old.replace("VEC_SIZE", "4u"), new.replace("VEC_SIZE", "4u")
    assert old in wgsl, old
    case = make_case(*shape)
    assert over_budget(webgpu_device, config, case) == [], "the correct program must pass first"
    assert over_budget(webgpu_device, config, case, wgsl.replace(old, new)) == ["y"], label
