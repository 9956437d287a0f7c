"""ggml-webgpu's tiled prefill attention (flash_attn_tile), run on a real adapter under verify's contract.

The program is instantiated as ggml-webgpu does (verify.sources.llamacpp.selection.tile_attention_plan)
and judged against ggml's op (references.ggml_attention.flash_attn_ext) within
verify.budgets.llamacpp_attention_tile; planted bugs must fail it, at lavapipe's width and at
emulated ones.
"""

from __future__ import annotations

import numpy as np
import pytest

from verify.budgets.llamacpp_attention_tile import tile_output_budget, tile_score_errors
from verify.budgets.metrics import compare
from verify.kernels.registry import get_kernel
from verify.results.record import Verdict
from verify.sources.llamacpp.attention import tile
from verify.sources.llamacpp.attention.tile_cases import kv_values, make_tile_case

TILE = "llamacpp.attention.flash_attn_tile"
#: The gate's configs: head dim 128 with a mask in 16 KiB (KV_TILE 22), head dim 64 with sinks in
#: 32 KiB (KV_TILE 64), f32 K/V at head dim 112 with ALiBi and a softcap (KV_TILE 26), no mask
#: (KV_TILE 41); every one for subgroups of 4 to 64 lanes (WG_SIZE 256).
CONFIGS = {
    "hd128-mask": {"heads": 4},
    "hd64-sinks": {"head_dim": 64, "heads": 4, "kv_heads": 4, "sinks": True, "workgroup_storage": 32768},
    "f32-alibi-softcap": {"head_dim": 112, "heads": 6, "kv_heads": 2, "kv_type": "f32", "max_bias": 8.0,
                          "softcap": 50.0},
    "no-mask": {"head_dim": 80, "heads": 6, "kv_heads": 2, "mask": False},
}


def judged(device, overrides, case, wgsl=None):
    kernel = get_kernel(TILE)
    config = kernel.config(overrides)
    launched = kernel.launch(device, wgsl or kernel.wgsl(config), config, case)
    return {e.name: compare(launched.outputs[e.name], e) for e in kernel.expected(config, case)}


def passed(metrics) -> bool:
    return all(m.passed for m in metrics.values())


# -- no GPU ------------------------------------------------------------------------------------------
def test_the_gate_configs_take_the_tile_path_with_the_tiles_the_shader_library_chooses():
    kernel = get_kernel(TILE)
    tiles = {label: kernel.kv_tile(kernel.config(c)) for label, c in CONFIGS.items()}
    assert tiles == {"hd128-mask": 22, "hd64-sinks": 64, "f32-alibi-softcap": 26, "no-mask": 41}
    assert [c for c in kernel.gate_configs("ci")] == [kernel.config(c) for c in CONFIGS.values()]
    assert kernel.gate_subgroup_widths("ci") == (4, 16, 32, 64)


def test_the_cases_are_prefills_with_f32_values_f16_does_not_hold():
    """Every case has 20 query rows or more (fewer take the vec path); f32 K and V are of f16's
    range but not f16 values, so the program's staging in f16 rounds them."""
    kernel = get_kernel(TILE)
    config = kernel.config(CONFIGS["f32-alibi-softcap"])
    for case in kernel.corners(config):
        assert case.params["rows"] >= 20 and case["mask"].shape == (case.params["batch"], case.params["rows"],
                                                                    case.params["kv_len"])
    k = kv_values(np.random.default_rng(1), "large", (4096,), "f32")
    assert k.dtype == np.float32 and np.abs(k).max() <= 65504.0
    assert np.mean(k.astype(np.float16).astype(np.float32) != k) > 0.9


def test_the_budget_admits_the_f16_staging_and_weights_and_nothing_for_f16_kv_staging():
    """f32 K moves the scores by r16 Σ|q k| more than f16 K; the f16 weights add about r16 |o| to
    the output bound (the budget of the same logits without them is output_budget's)."""
    from verify.budgets.llamacpp_attention import output_budget, score_errors

    rng = np.random.default_rng(3)
    q = rng.standard_normal((1, 20, 2, 64)).astype(np.float32)
    k = rng.standard_normal((1, 1, 30, 64)).astype(np.float32)
    v = rng.standard_normal((1, 1, 30, 64))
    base = score_errors(q, k, scale=0.125)
    f16 = tile_score_errors(q, k, scale=0.125, kv_type="f16")
    f32 = tile_score_errors(q, k, scale=0.125, kv_type="f32")
    assert np.all(f16 >= base) and np.allclose(f16, base, rtol=1e-12, atol=1e-30)
    abs_dot = 0.125 * np.einsum("bsnd,bnld->bsnl", np.abs(q), np.repeat(np.abs(k), 2, axis=1))
    assert np.all(f32 - f16 >= 2.0**-10 * abs_dot)
    logits2 = 0.125 * np.einsum("bsnd,bnld->bsnl", q, np.repeat(k, 2, axis=1)) / np.log(2)
    values = np.repeat(v, 2, axis=1)[:, None]
    plain = output_budget(values, logits2, f16)
    tiled = tile_output_budget(values, logits2, f16)
    weights = np.exp2(logits2 - logits2.max(-1, keepdims=True))
    weights /= weights.sum(-1, keepdims=True)
    assert np.all(tiled - plain >= 2.0**-10 * np.einsum("bsnl,bnld->bsnd", weights, np.abs(values[:, 0])))


# -- on the adapter ------------------------------------------------------------------------------------
@pytest.mark.webgpu(requires=("subgroup", "shader-f16"))
@pytest.mark.parametrize("label", list(CONFIGS))
def test_the_tile_path_is_within_budget_on_its_corners(webgpu_device, label):
    kernel = get_kernel(TILE)
    for case in kernel.corners(kernel.config(CONFIGS[label])):
        metrics = judged(webgpu_device, CONFIGS[label], case)
        assert passed(metrics), (label, case.params, {n: m.max_ratio for n, m in metrics.items()})


@pytest.mark.webgpu(requires=("subgroup", "shader-f16"))
@pytest.mark.parametrize("width", [4, 64])
def test_at_emulated_widths_the_program_is_within_budget(webgpu_device, width):
    """The subgroupMax and subgroupAdd of every KV tile are reached by the whole workgroup, so
    verify's emulation runs the program at 4 lanes (MIN_SUBGROUP_SIZE: 16 score slots a lane at
    KV_TILE 64) and at 64 (4 subgroups: every one holds a query row)."""
    from verify.instrument import EmulatingDevice

    device = EmulatingDevice(webgpu_device, width)
    kernel = get_kernel(TILE)
    config = kernel.config(CONFIGS["hd64-sinks"])
    for case in kernel.corners(config)[:3]:
        metrics = judged(device, CONFIGS["hd64-sinks"], case)
        assert passed(metrics), (width, case.params, {n: m.max_ratio for n, m in metrics.items()})


def _mutant(overrides, old, new):
    kernel = get_kernel(TILE)
    wgsl = kernel.wgsl(kernel.config(overrides))
    assert wgsl.count(old) == 1, old
    return wgsl.replace(old, new)


@pytest.mark.webgpu(requires=("subgroup", "shader-f16"))
@pytest.mark.parametrize("label, old, new", [
    # the last, partial KV tile skipped
    ("hd128-mask", "kv_tile < params.seq_len_kv; kv_tile += 22", "kv_tile + 22u <= params.seq_len_kv; kv_tile += 22"),
    ("no-mask", "kv_tile < params.seq_len_kv; kv_tile += 41", "kv_tile + 41u <= params.seq_len_kv; kv_tile += 41"),
    # the running sum and output not rescaled when the max grows
    ("hd128-mask", "let cur_exp = exp(row_max - new_max);", "let cur_exp = 1.0;"),
    # the mask ignored
    ("hd128-mask", "dot_val += slope * f32(mask[mask_idx]);", ""),
    # ALiBi's slope ignored: the mask added as it is
    ("f32-alibi-softcap", "dot_val += slope * f32(mask[mask_idx]);", "dot_val += f32(mask[mask_idx]);"),
    # the softcap's tanh left out
    ("f32-alibi-softcap", "dot_val = params.logit_softcap * tanh(dot_val);",
     "dot_val = params.logit_softcap * dot_val;"),
    # the sink left out of the exp-sum
    ("hd64-sinks", "exp_sum = exp_sum * sink_scale + exp(sink_score - sink_max);", "exp_sum = exp_sum * sink_scale;"),
    # GQA: every query head reads KV head 0
    ("no-mask", "let k_head_idx = head_idx / params.q_per_kv;", "let k_head_idx = 0u;"),
    # the weights kept to 8 fractional bits before P·V
    ("hd128-mask", "p_shmem[subgroup_p_offset + kv_local] = f16(p);",
     "p_shmem[subgroup_p_offset + kv_local] = f16(round(p * 256.0) / 256.0);"),
    # a partial last query tile's rows not written (the row limit off by one tile row)
    ("no-mask", "global_q_row < params.seq_len_q;", "global_q_row + 1u < params.seq_len_q;"),
])
def test_planted_bugs_fail_the_contract(webgpu_device, label, old, new):
    kernel = get_kernel(TILE)
    config = kernel.config(CONFIGS[label])
    wgsl = _mutant(CONFIGS[label], old, new)
    caught = False
    # the corners, and sharp scores (queries of spread 16: scores of tens, where a softcap of 50 bends them)
    sharp = make_tile_case(config, 1, 22, 50, 50, "normal", "causal", 16.0, 9, kernel.kv_tile(config))
    for case in kernel.corners(config) + [sharp]:
        caught |= not passed(judged(webgpu_device, CONFIGS[label], case, wgsl))
    assert caught


class _WholeTiles(tile.FlashAttnTile):
    """The kernel on prefills of 24 rows only (six whole query tiles): §19.11's control."""

    name = "test.flash_attn_tile_whole_query_tiles"

    def corners(self, config):
        return [make_tile_case(config, 1, 24, 30, 30, "normal", "causal", 1.0, 2, self.kv_tile(config))]

    def cases(self, config, profile):
        from hypothesis import strategies as st

        return st.just(self.corners(config)[0])


@pytest.mark.webgpu(requires=("subgroup", "shader-f16"))
def test_q_is_read_past_its_binding_only_where_the_rows_leave_a_partial_tile():
    """§19.11 under sanitize: KNOWN for 21 query rows (the first corner: 3 rows of the last tile
    read past Q), and the control: 24 rows read nothing past it (PASS)."""
    from verify.api import check

    (known,) = check(TILE, {}, checks=["sanitize"], examples=1, isolate=False, implementation="wgpu")
    assert known.verdict == Verdict.KNOWN, known.reason
    assert "out-of-bounds read of storage buffer Q: index 21632 is not below the length 21504" in known.reason
    (control,) = check(_WholeTiles, {}, checks=["sanitize"], examples=1, isolate=False, implementation="wgpu")
    assert control.verdict == Verdict.PASS, control.reason


def test_a_shape_the_vec_path_takes_is_refused():
    from verify.errors import UsageError

    with pytest.raises(UsageError, match="tile path"):
        tile.plan_of(get_kernel(TILE).config(), rows=19)
    case = make_tile_case(get_kernel(TILE).config(), 1, 20, 20, 20, "normal", "causal", 1.0, 0, 22)
    assert case.params["rows"] == 20
