"""ggml-webgpu's set_rows into q8_0 and q4_0 tables, run on a real adapter under verify's contract,
planted bugs the contract catches, and the contract's own properties: ggml's CPU bytes are legal."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.budgets.llamacpp_rows_quant import quant_domain_error, set_rows_quant_legal
from verify.budgets.metrics import compare
from verify.kernels.registry import get_kernel
from verify.references import ggml_quants as gq
from verify.sources.llamacpp.ops.rows_quant import read_view, table_view
from verify.sources.llamacpp.ops.rows_quant_cases import QUANT_KINDS, set_rows_quant_case, source_values

NAME = "llamacpp.ops.set_rows_quant"


def failing(device, config, case, wgsl=None) -> list[str]:
    kernel = get_kernel(NAME)
    launched = kernel.launch(device, wgsl or kernel.wgsl(config), config, case)
    return [e.name for e in kernel.expected(config, case) if not compare(launched.outputs[e.name], e).passed]


# -- the contract, without an adapter --------------------------------------------------------------------------------
@pytest.mark.parametrize("dst_type", ["q8_0", "q4_0"])
@pytest.mark.parametrize("kind", QUANT_KINDS)
@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_ggmls_cpu_quantizer_writes_legal_blocks(dst_type, kind, seed):
    """The CPU reference (roundf, half away from zero; a tie of q4_0's x id + 8.5 rounding up) is
    one of the implementations the legal intervals admit: its scale and every code lie in them."""
    x = source_values(np.random.default_rng(seed), dst_type, kind, (3, 96))
    blocks = gq.quantize(dst_type, x)
    (d_lo, d_hi), (q_lo, q_hi) = set_rows_quant_legal(dst_type, x)
    d, q = gq.f16_field(blocks, 0), gq.codes(dst_type, blocks)
    assert np.all((d_lo <= d) & (d <= d_hi))
    assert np.all((q_lo <= q) & (q <= q_hi))


@pytest.mark.parametrize("dst_type", ["q8_0", "q4_0"])
def test_the_legal_codes_are_the_cpus_or_one_neighbour_at_a_tie(dst_type):
    """Ties (x id exactly halfway, d a power of two) admit both neighbours and nothing wider (but
    where q4_0's clamp takes both to 15); away
    from ties a code has at most two legal values, and most blocks' codes only ggml's."""
    x = source_values(np.random.default_rng(5), dst_type, "ties", (4, 64))
    (_, _), (q_lo, q_hi) = set_rows_quant_legal(dst_type, x)
    assert np.all(q_hi - q_lo <= 1)
    peak_free = np.abs(x.reshape(4, 2, 32)) < np.abs(x.reshape(4, 2, 32)).max(-1, keepdims=True)
    clamped = q_lo == 15  # q4_0: t = 7.5 gives 16 either way, clamped to 15
    assert np.all((q_hi - q_lo)[peak_free & ~clamped] == 1)
    x = source_values(np.random.default_rng(6), dst_type, "normal", (8, 64))
    (_, _), (q_lo, q_hi) = set_rows_quant_legal(dst_type, x)
    assert np.all(q_hi - q_lo <= 1) and np.mean(q_hi == q_lo) > 0.99


def test_a_zero_block_is_exact_and_the_domain_is_enforced():
    x = np.zeros((1, 64), np.float32)
    x[0, 32:] = 1.0
    (d_lo, d_hi), (q_lo, q_hi) = set_rows_quant_legal("q4_0", x)
    assert d_lo[0, 0] == d_hi[0, 0] == 0 and np.all(q_lo[0, 0] == 8) and np.all(q_hi[0, 0] == 8)
    assert np.all(d_hi[0, 1] <= 0)  # q4_0's d = max / -8: of the max's other sign
    x[0, :32] = 2.0**-110
    assert "2^-96" in quant_domain_error("q8_0", x)
    x[0, :32] = 2.0**24
    assert "f16" in quant_domain_error("q8_0", x)


# -- the program ----------------------------------------------------------------------------------------------------
CONFIGS = [get_kernel(NAME).config(c) for c in
           ({}, {"dst_type": "q4_0", "pair_blocks": True}, {"idx_type": "i64", "pair_blocks": True},
            {"dst_type": "q4_0", "idx_type": "i64", "wg_size": 64})]


def _id(config) -> str:
    return f"{config['dst_type']}-{config['idx_type']}-pair{int(config['pair_blocks'])}-wg{config['wg_size']}"


@pytest.mark.webgpu
@pytest.mark.parametrize("config", CONFIGS, ids=_id)
def test_set_rows_quant_is_within_its_contract_on_its_corners(webgpu_device, config):
    for case in get_kernel(NAME).corners(config):
        assert failing(webgpu_device, config, case) == [], case.params


@pytest.mark.webgpu
def test_an_i64_index_with_a_high_word_sets_the_error_word_and_writes_nothing(webgpu_device):
    kernel = get_kernel(NAME)
    config = kernel.config({"idx_type": "i64"})
    case = set_rows_quant_case("q8_0", True, False, 1, 4, 2, 3, "normal", "in_range", 7)
    flagged = case.replace({"idx": np.array([[2**32 + 1, 3]], np.int64)})
    launched = kernel.launch(webgpu_device, kernel.wgsl(config), config, flagged)
    assert launched.outputs["error"][0] == 1
    _, stride = table_view(case["dst"], case.params["offset"], case.params["pad"])
    after = read_view(launched.outputs["bytes"].astype(np.uint8), case["dst"].shape, case.params["offset"], stride)
    assert np.array_equal(after[:, :3], case["dst"][:, :3])  # row 1 (2^32 + 1) not written, rows 0 and 2 named by none
    assert not np.array_equal(after[:, 3], case["dst"][:, 3])
    assert failing(webgpu_device, config, flagged) == []


#: (what is planted, the config, the line of the program as instantiated, what replaces it, the outputs it breaks)
PLANTED = [
    ("q8_0's scale from the max without abs (the wrong max)", {}, "amax = max(amax, abs(src[src_block + j]));",
     "amax = max(amax, src[src_block + j]);"),
    ("q4_0's scale from the first value, not the max", {"dst_type": "q4_0", "pair_blocks": True},
     "if (amax < av) {", "if (amax == 0.0) {"),
    ("q8_0's codes truncated instead of rounded", {"pair_blocks": True},
     "(u32(i32(round(src[base + 1u] * id)) & 0xFF) << 8u)", "(u32(i32(src[base + 1u] * id) & 0xFF) << 8u)"),
    ("q4_0's codes truncated instead of rounded", {"dst_type": "q4_0"}, "let q0 = u32(clamp(i32(x0 + 8.5), 0, 15));",
     "let q0 = u32(clamp(i32(x0 + 8.0), 0, 15));"),
    ("a neighbouring block overwritten (the u16 store's mask a whole word)", {},
     "let mask = 0xFFFFu << shift;", "let mask = 0xFFFFFFFFu;"),
    ("a neighbouring block overwritten (the pair's second block two bytes late)", {"pair_blocks": True},
     "quantize_block(src_block + 32u, dst_word_idx, 34u);", "quantize_block(src_block + 32u, dst_word_idx, 36u);"),
    ("the scale stored without its f16 rounding (truncated to 8 mantissa bits)", {"dst_type": "q4_0"},
     "let packed_d = pack2x16float(vec2(d, 0.0)) & 0xFFFFu;",
     "let packed_d = (pack2x16float(vec2(d, 0.0)) & 0xFFFFu) & 0xFFFCu;"),
    ("the error word not set", {"idx_type": "i64"}, "atomicStore(&error, 1u);", "atomicStore(&error, 0u);"),
    ("a flagged index written", {"idx_type": "i64", "dst_type": "q4_0"}, "atomicStore(&error, 1u);\n        return;",
     "atomicStore(&error, 1u);"),
]


@pytest.mark.webgpu
@pytest.mark.parametrize("label, overrides, old, new", PLANTED, ids=[p[0] for p in PLANTED])
def test_set_rows_quant_planted_bugs_fail_the_contract(webgpu_device, label, overrides, old, new):
    kernel = get_kernel(NAME)
    config = kernel.config(overrides)
    wgsl = kernel.wgsl(config)
    assert wgsl.count(old) == 1, old
    i64 = config["idx_type"] == "i64"
    case = set_rows_quant_case(config["dst_type"], i64, config["pair_blocks"], 2, 9, 6, 4, "normal",
                               "high_word" if i64 else "in_range", 95, offset=2, pad=2)
    assert failing(webgpu_device, config, case) == []
    assert failing(webgpu_device, config, case, wgsl.replace(old, new)) != [], label


@pytest.mark.webgpu
def test_ggmls_roundf_in_place_of_wgsls_round_is_one_the_contract_allows(webgpu_device):
    """WGSL's round() takes a tie to even, ggml's roundf away from zero: the program with ggml's
    rule on its ties passes, as the round() it ships does (the contract holds it to either)."""
    kernel = get_kernel(NAME)
    config = kernel.config({})
    wgsl = kernel.wgsl(config)
    old = "round(src[base + 1u] * id)"
    new = "(sign(src[base + 1u] * id) * floor(abs(src[base + 1u] * id) + 0.5))"
    assert wgsl.count(old) == 1
    case = set_rows_quant_case("q8_0", False, False, 2, 9, 6, 5, "ties", "in_range", 96)
    assert failing(webgpu_device, config, case) == []
    assert failing(webgpu_device, config, case, wgsl.replace(old, new)) == []


MID_WORD = "llamacpp-set-rows-quant-pair-mid-word: each pair lands 2 bytes before its blocks"


@pytest.mark.webgpu
@pytest.mark.parametrize("dst_type", ["q8_0", "q4_0"])
@pytest.mark.parametrize("offset, pad", [
    pytest.param(0, 0, id="packed"), pytest.param(2, 2, id="even"),
    pytest.param(1, 0, id="odd_offset", marks=pytest.mark.xfail(strict=True, reason=MID_WORD)),
    pytest.param(0, 1, id="odd_stride", marks=pytest.mark.xfail(strict=True, reason=MID_WORD))])
def test_the_pair_program_writes_a_view_whose_pairs_start_mid_word(webgpu_device, dst_type, offset, pad):
    """docs/findings.md §19.10: PAIR_BLOCKS is chosen by the number of blocks a row alone (S L1394),
    but its stores take the pair's first word as dst_block_byte / 4 and write from the word's start;
    a destination view (supports_op accepts any, C L4429-4433) whose pairs start at an odd block
    (an odd offset or row stride in blocks, 18- and 34-byte blocks) has them start mid-word, so each
    pair lands 2 bytes early. Every row of the view is written, so an odd stride puts odd rows
    mid-word. Word-aligned views (packed, even) pass; the others are the finding."""
    kernel = get_kernel(NAME)
    config = kernel.config({"dst_type": dst_type, "pair_blocks": True})
    case = set_rows_quant_case(dst_type, False, True, 1, 4, 4, 2, "normal", "in_range", 5, offset=0, pad=0)
    assert failing(webgpu_device, config, case.replace(offset=offset, pad=pad)) == []
