"""ggml-webgpu's get_rows (and set_rows), run on a real adapter under verify's contract, and
planted bugs the contract catches."""

from __future__ import annotations

import pytest

from verify.budgets.metrics import compare
from verify.kernels.registry import get_kernel
from verify.sources.llamacpp.ops.rows_cases import get_rows_case

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
