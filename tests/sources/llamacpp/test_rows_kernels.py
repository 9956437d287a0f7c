"""ggml-webgpu's get_rows (and set_rows), run on a real adapter under verify's contract, and
planted bugs the contract catches."""

from __future__ import annotations

import numpy as np
import pytest

from verify.budgets.metrics import compare
from verify.kernels.registry import get_kernel
from verify.sources.llamacpp.ops.rows_cases import get_rows_case, set_rows_case

pytestmark = pytest.mark.webgpu

GET_ROWS = "llamacpp.ops.get_rows"


def failing(device, name, config, case, wgsl=None) -> list[str]:
    kernel = get_kernel(name)
    launched = kernel.launch(device, wgsl or kernel.wgsl(config), config, case)
    return [e.name for e in kernel.expected(config, case) if not compare(launched.outputs[e.name], e).passed]


GET_ROWS_CONFIGS = [get_kernel(GET_ROWS).config(c) for c in
                    ({"vec4": True}, {"wg_size": 64}, {"src_type": "f16"}, {"src_type": "i32"},
                     {"src_type": "q4_0"}, {"src_type": "q4_1"}, {"src_type": "q8_0"}, {"src_type": "q2_K"},
                     {"src_type": "q4_K"})]


@pytest.mark.parametrize("config", GET_ROWS_CONFIGS, ids=lambda c: f"{c['src_type']}-vec{int(c['vec4'])}")
def test_get_rows_is_within_budget_on_its_corners(webgpu_device, config):
    kernel = get_kernel(GET_ROWS)
    for case in kernel.corners(config):
        assert failing(webgpu_device, GET_ROWS, config, case) == [], case.params


#: (what is planted, the config, the line of the program as instantiated, what replaces it)
GET_ROWS_PLANTED = [
    ("index off by one row", {}, "let idx_val = u32(idx[i_idx]);", "let idx_val = u32(idx[i_idx]) + 1u;"),
    ("the last element of the last row left out", {"vec4": True},
     "if (gid.x >= blocks_per_row * row_count) {", "if (gid.x + 1u >= blocks_per_row * row_count) {"),
    ("the batch's stride dropped", {"src_type": "f16"}, "+ i_dst2 * params.stride_src2", ""),
    ("the view's offset dropped", {"src_type": "q8_0"}, "let i_src_row = params.offset_src + ",
     "let i_src_row = "),
    ("q4_0's high nibble offset by 7", {"src_type": "q4_0"}, "let q_hi = (f32((q_byte >> 4) & 0xF) - 8.0) * d;",
     "let q_hi = (f32((q_byte >> 4) & 0xF) - 7.0) * d;"),
    ("q4_K's min read as its scale", {"src_type": "q4_K"}, "let dl = d * scale_min.x;", "let dl = d * scale_min.y;"),
    ("q4_1's minimum added as f16", {"src_type": "q4_1"}, "let m = f32(block_q4_1.m);",
     "let m = f32(f16(f32(block_q4_1.m) * 1.0009765625));"),
]


@pytest.mark.parametrize("label, overrides, old, new", GET_ROWS_PLANTED, ids=[p[0] for p in GET_ROWS_PLANTED])
def test_get_rows_planted_bugs_fail_the_contract(webgpu_device, label, overrides, old, new):
    kernel = get_kernel(GET_ROWS)
    config = kernel.config(overrides)
    wgsl = kernel.wgsl(config)
    assert wgsl.count(old) == 1, old
    # two batches of a 9-row table, every row once, shuffled, the view offset by 4 elements (blocks)
    case = get_rows_case(config["src_type"], config["vec4"], 2, 9, 9, 64, "random" if config["src_type"][0] == "q"
                         else "normal", "shuffled", 91)
    case = case.replace(offset=4, pad=4)
    assert failing(webgpu_device, GET_ROWS, config, case) == []
    assert failing(webgpu_device, GET_ROWS, config, case, wgsl.replace(old, new)) == ["dst"], label


SET_ROWS = "llamacpp.ops.set_rows"
SET_ROWS_CONFIGS = [get_kernel(SET_ROWS).config(c) for c in
                    ({}, {"dst_type": "f16", "vec4": True}, {"idx_type": "i64", "vec4": True},
                     {"dst_type": "f16", "idx_type": "i64", "wg_size": 64})]


@pytest.mark.parametrize("config", SET_ROWS_CONFIGS,
                         ids=lambda c: f"{c['dst_type']}-{c['idx_type']}-vec{int(c['vec4'])}-wg{c['wg_size']}")
def test_set_rows_is_within_budget_on_its_corners(webgpu_device, config):
    kernel = get_kernel(SET_ROWS)
    for case in kernel.corners(config):
        assert failing(webgpu_device, SET_ROWS, config, case) == [], case.params


def test_an_i64_index_with_a_high_word_sets_the_error_word_and_writes_nothing(webgpu_device):
    kernel = get_kernel(SET_ROWS)
    config = kernel.config({"idx_type": "i64"})
    case = set_rows_case("f32", False, True, 1, 4, 2, 5, "normal", "in_range", 7)
    case.arrays["idx"] = np.array([[2**32 + 1, 3]], np.int64)
    launched = kernel.launch(webgpu_device, kernel.wgsl(config), config, case)
    assert launched.outputs["error"].tolist() == [1]
    assert np.array_equal(launched.outputs["dst"][0, :3], case["dst"][0, :3])  # row 1 not written
    assert np.array_equal(launched.outputs["dst"][0, 3], case["src"][0, 1])
    assert failing(webgpu_device, SET_ROWS, config, case) == []


#: (what is planted, the config, the line of the program as instantiated, what replaces it)
SET_ROWS_PLANTED = [
    ("index off by one row", {}, "let idx_val = idx[idx_i];", "let idx_val = idx[idx_i] + 1u;"),
    ("an untouched row overwritten (row 0 of each batch)", {"vec4": True},
     "    dst[i_dst_row / VEC_SIZE + col_idx] = DST_TYPE(src[i_src_row / VEC_SIZE + col_idx]);",
     "    dst[i_dst_row / VEC_SIZE + col_idx] = DST_TYPE(src[i_src_row / VEC_SIZE + col_idx]);\n"
     "    dst[(params.offset_dst + i_src2 * params.stride_dst2) / VEC_SIZE + col_idx] = DST_TYPE(0.0);"),
    ("f16 conversion that keeps 8 significant bits", {"dst_type": "f16"},
     "DST_TYPE(src[i_src_row / VEC_SIZE + col_idx])",
     "DST_TYPE(bitcast<f32>(bitcast<u32>(src[i_src_row / VEC_SIZE + col_idx]) & 0xFFFF0000u))"),
    ("the error word not set", {"idx_type": "i64"}, "atomicStore(&error, 1);", ""),
    ("a flagged index written anyway", {"idx_type": "i64"}, "atomicStore(&error, 1);\n        return;",
     "atomicStore(&error, 1);"),
]


def _expanded(text: str, config: dict) -> str:
    """A line of set_rows.wgsl as the preprocessor leaves it: VEC_SIZE and DST_TYPE replaced."""
    dst = "vec4<{}>".format(config["dst_type"]) if config["vec4"] else config["dst_type"]
    return text.replace("VEC_SIZE", "4" if config["vec4"] else "1").replace("DST_TYPE", dst)


@pytest.mark.parametrize("label, overrides, old, new", SET_ROWS_PLANTED, ids=[p[0] for p in SET_ROWS_PLANTED])
def test_set_rows_planted_bugs_fail_the_contract(webgpu_device, label, overrides, old, new):
    kernel = get_kernel(SET_ROWS)
    config = kernel.config(overrides)
    wgsl = kernel.wgsl(config)
    old, new = (_expanded(text, config) for text in (old, new))
    assert wgsl.count(old) == 1, old
    # two batches; 6 of a 9-row table's rows written (row 0 never), i64: one index with its high word set
    case = set_rows_case(config["dst_type"], config["vec4"], config["idx_type"] == "i64", 2, 9, 6, 64, "normal",
                         "in_range", 93)
    idx = np.array([[3, 1, 5, 8, 2, 7], [8, 6, 4, 2, 1, 3]], case["idx"].dtype)
    if config["idx_type"] == "i64":
        idx[1, 2] = 2**32 + 4
    case.arrays["idx"] = idx
    assert failing(webgpu_device, SET_ROWS, config, case) == []
    assert failing(webgpu_device, SET_ROWS, config, case, wgsl.replace(old, new)) != [], label


def test_an_f16_conversion_toward_zero_is_one_wgsl_allows(webgpu_device):
    """WGSL rounds f32 -> f16 to either neighbour, so a program that truncates toward zero to f16's
    precision conforms (ggml's CPU rounds to nearest even): the contract holds set_rows to WGSL and
    lets this pass; keeping fewer bits than f16 fails (above)."""
    kernel = get_kernel(SET_ROWS)
    config = kernel.config({"dst_type": "f16"})
    old = "f16(src[i_src_row / 1 + col_idx])"
    new = "f16(bitcast<f32>(bitcast<u32>(src[i_src_row / 1 + col_idx]) & 0xFFFFE000u))"
    wgsl = kernel.wgsl(config)
    assert wgsl.count(old) == 1
    case = set_rows_case("f16", False, False, 1, 6, 4, 33, "normal", "in_range", 94)
    assert failing(webgpu_device, SET_ROWS, config, case, wgsl.replace(old, new)) == []
