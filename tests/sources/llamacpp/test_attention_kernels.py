"""ggml-webgpu's split-KV decode attention (blk, split, reduce), run on a real adapter under verify's contracts.

The programs are instantiated as ggml-webgpu does (verify.sources.llamacpp.selection) and run at
the adapter's own subgroup width (lavapipe: 8), the only width verify can run them at (their
subgroup built-ins sit in subgroup-uniform control flow: verify.sources.llamacpp.checks).
"""

from __future__ import annotations

import numpy as np
import pytest

from verify.budgets.metrics import compare
from verify.cases import Case
from verify.kernels.registry import get_kernel
from verify.references.ggml_attention import flash_attn_ext
from verify.references.softmax import merge_many_outputs
from verify.results.record import Verdict
from verify.sources.llamacpp.attention import kernels as attention
from verify.sources.llamacpp.attention.cases import make_case, make_mask

VEC = "llamacpp.attention.flash_attn_vec"
SPLIT = "llamacpp.attention.flash_attn_vec_split"
REDUCE = "llamacpp.attention.flash_attn_vec_reduce"
BLK = "llamacpp.attention.flash_attn_vec_blk"
#: Configs of the end-to-end kernel and the split: a 29-row KV tile for the widest subgroup range
#: (WG_SIZE 128, up to 4 splits), lavapipe's exact width (WG_SIZE 8, up to 8 splits) with sinks and
#: a padded cache (direct K and V), f32 K/V at head dim 256 with ALiBi and a softcap, no mask.
CONFIGS = {
    "tile29-sg4-128": {},
    "sg8-sinks-padded": {"head_dim": 64, "heads": 4, "kv_heads": 4, "sinks": True, "kv_padded": True,
                         "subgroup_min": 8, "subgroup_max": 8},
    "f32-alibi-softcap": {"head_dim": 256, "heads": 8, "kv_heads": 1, "kv_type": "f32", "max_bias": 8.0,
                          "softcap": 50.0, "workgroup_storage": 32768, "subgroup_min": 4, "subgroup_max": 32},
    "no-mask": {"head_dim": 80, "heads": 6, "kv_heads": 2, "mask": False, "subgroup_min": 8, "subgroup_max": 8},
}


def judged(device, name, overrides, case, wgsl=None):
    kernel = get_kernel(name)
    config = kernel.config(overrides)
    launched = kernel.launch(device, wgsl or kernel.wgsl(config), config, case)
    return {e.name: compare(launched.outputs[e.name], e) for e in kernel.expected(config, case)}


def passed(metrics) -> bool:
    return all(m.passed for m in metrics.values())


# -- the reference and the contracts, no GPU --------------------------------------------------------
def test_the_split_states_of_the_reference_merge_to_the_op():
    """Each split's state (softmax over KV tiles i, i + nwg, ...; the sink in split 0) merged by
    references.softmax is references.ggml_attention.flash_attn_ext of the whole."""
    kernel = get_kernel(SPLIT)
    config = kernel.config(CONFIGS["sg8-sinks-padded"])
    case = make_case(config, 2, 3, 768, 700, "normal", "blocks", 4.0, 11, 32)
    plan = attention.case_plan(config, case)
    assert plan.nwg == 8
    o, lse, nonempty, _, _ = attention.split_reference(config, case, plan)
    merged, _ = merge_many_outputs(o, np.where(nonempty, lse, -np.inf), axis=3, base="e")
    whole, _, _, _ = attention.reference(config, case)
    np.testing.assert_allclose(merged, whole, rtol=1e-12, atol=1e-13)


def test_blk_states_follow_the_programs_comments():
    """Per tile: 0 where every value is at most -65504 (-inf included), 2 where all are zero, else 1."""
    mask = np.array([[[0, 0, -np.inf, -np.inf, 0.5, 0, -65504, -np.inf, 0]]], np.float16)
    assert attention.blk_states(mask, 2).tolist() == [[[2, 0, 1, 0, 2]]]


def test_the_mask_kinds_are_llamacpps():
    """Causal: row i of S sees keys up to used - S + i; distance: -|i - j| there (ALiBi); padding -inf."""
    rng = np.random.default_rng(0)
    causal = make_mask(rng, "causal", 1, 2, 6, 5, 4).astype(np.float64)[0]
    assert (np.isfinite(causal) == [[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 0]]).all()
    distance = make_mask(rng, "distance", 1, 1, 4, 4, 4).astype(np.float64)[0, 0]
    assert distance.tolist() == [-3.0, -2.0, -1.0, -0.0]


def test_a_reduce_config_past_the_smallest_subgroup_is_refused():
    from verify.errors import UsageError

    with pytest.raises(UsageError, match="caps the split count"):
        get_kernel(REDUCE).config({"nwg": 8, "subgroup_min": 4})


# -- on the adapter ----------------------------------------------------------------------------------
@pytest.mark.webgpu(requires=("subgroup", "shader-f16"))
@pytest.mark.parametrize("name", [VEC, SPLIT])
@pytest.mark.parametrize("label", list(CONFIGS))
def test_the_vec_path_is_within_budget_on_its_corners(webgpu_device, name, label):
    kernel = get_kernel(name)
    config = kernel.config(CONFIGS[label])
    for case in kernel.corners(config):
        metrics = judged(webgpu_device, name, CONFIGS[label], case)
        assert passed(metrics), [m.message() for m in metrics.values()]


@pytest.mark.webgpu(requires=("subgroup", "shader-f16"))
def test_at_lavapipes_width_every_split_count_merges_right(webgpu_device):
    """llama.cpp #23040 made the vec path subgroup-aware (WG_SIZE = max subgroup, nwg capped by the
    min): instantiated for exactly 8 lanes (head dim 80, no mask), contexts that take 1, 2, 4 and
    8 splits, each judged end to end and split by split at 8 lanes."""
    overrides = CONFIGS["no-mask"]  # a gate config: its programs ship with verify
    kernel = get_kernel(VEC)
    config = kernel.config(overrides)
    seen = set()
    for length in (64, 65, 129, 257, 1000):
        case = make_case(config, 1, 2, length, length, "normal", "causal", 1.0, length, 32)
        seen.add(attention.case_plan(config, case).nwg)
        for name in (VEC, SPLIT):
            metrics = judged(webgpu_device, name, overrides, case)
            assert passed(metrics), [m.message() for m in metrics.values()]
    assert seen == {1, 2, 4, 8}


@pytest.mark.webgpu(requires=("subgroup", "shader-f16"))
@pytest.mark.parametrize("overrides", [{"head_dim": 128, "nwg": 4},
                                       {"head_dim": 64, "nwg": 8, "subgroup_min": 8, "subgroup_max": 8}])
def test_the_reduce_is_within_budget_on_its_corners(webgpu_device, overrides):
    kernel = get_kernel(REDUCE)
    for case in kernel.corners(kernel.config(overrides)):
        metrics = judged(webgpu_device, REDUCE, overrides, case)
        assert passed(metrics), [m.message() for m in metrics.values()]


@pytest.mark.webgpu(requires=("shader-f16",))
@pytest.mark.parametrize("kv_tile", [29, 32])
def test_blk_classifies_every_tile_exactly(webgpu_device, kv_tile):
    config = {"head_dim": 64, "heads": 1, "kv_heads": 1, "kv_type": "f16", "mask": True, "sinks": False}
    for kind, seed in (("blocks", 1), ("distance", 2), ("values", 3)):
        case = make_case(config, 2, 3, 5 * kv_tile + 3, 5 * kv_tile + 3, "normal", kind, 1.0, seed, kv_tile)
        metrics = judged(webgpu_device, BLK, {"kv_tile": kv_tile}, case)
        assert passed(metrics), [m.message() for m in metrics.values()]


# -- planted bugs: the contracts catch them ---------------------------------------------------------------
def _mutant(name, overrides, old, new):
    kernel = get_kernel(name)
    wgsl = kernel.wgsl(kernel.config(overrides))
    assert wgsl.count(old) == 1, old
    return wgsl.replace(old, new)


@pytest.mark.webgpu(requires=("subgroup", "shader-f16"))
@pytest.mark.parametrize("name, label, old, new", [
    # the sink left out of the exp-sum
    (SPLIT, "sg8-sinks-padded", "exp_sum = exp_sum * max_exp + sink_exp_sum;", "exp_sum = exp_sum * max_exp;"),
    # ALiBi's slope ignored: the mask added as it is
    (SPLIT, "f32-alibi-softcap", "v += select(mask_val, slope * mask_val, has_bias);", "v += mask_val;"),
    # the softcap's tanh left out
    (VEC, "f32-alibi-softcap", "v = params.logit_softcap * tanh(v);", "v = params.logit_softcap * v;"),
    # every split weighted alike in the merge
    (VEC, "tile29-sg4-128", "let ms = select(0.0, exp(mi - m), active_thread);",
     "let ms = select(0.0, 1.0, active_thread);"),
    # blk skips tiles whose mask is all negative, not all -inf
    (VEC, "tile29-sg4-128", "if (mmax <= MASK_MIN) {", "if (mmax < 0.0) {"),
    # the last tile's tail: keys past the context weighed into the exp-sum (KV_TILE is 32 once instantiated)
    (SPLIT, "no-mask", "kv_tile + kv_idx < params.seq_len_kv && kv_idx < 32);", "kv_idx < 32);"),
])
def test_planted_bugs_fail_the_contract(webgpu_device, name, label, old, new):
    kernel = get_kernel(name)
    config = kernel.config(CONFIGS[label])
    wgsl = _mutant(name, CONFIGS[label], old, new)
    caught = False
    for case in kernel.corners(config) + [make_case(config, 1, 2, 300, 300, "normal", "distance", 1.0, 5,
                                                    kernel.kv_tile(config))]:
        case_metrics = judged(webgpu_device, name, CONFIGS[label], case, wgsl)
        caught |= not passed(case_metrics)
    assert caught


@pytest.mark.webgpu(requires=("subgroup", "shader-f16"))
def test_the_splits_read_past_their_tile_only_where_the_subgroup_does_not_divide_it():
    """§19.4 under sanitize: KNOWN for the 29-row tile (head dim 128 with a mask), and the control:
    a 32-row tile at 8 lanes reads nothing past it (PASS)."""
    from verify.api import check

    (known,) = check(SPLIT, {}, checks=["sanitize"], examples=2, isolate=False, implementation="wgpu")
    assert known.verdict == Verdict.KNOWN, known.reason
    assert "out-of-bounds read of workgroup array inter_shmem: index 29 is not below the length 29" in known.reason
    (control,) = check(SPLIT, CONFIGS["sg8-sinks-padded"], checks=["sanitize"], examples=2, isolate=False,
                       implementation="wgpu")
    assert control.verdict == Verdict.PASS, control.reason


def test_the_end_to_end_text_holds_each_program_the_host_may_dispatch():
    """blk (with a mask), the split, and one reduce per split count's workgroup size (2, 4, 8 splits
    at 8 lanes: WG_SIZE 16, 32, 64)."""
    kernel = get_kernel(VEC)
    variants = [i.variant for i in kernel.instances(kernel.config(CONFIGS["sg8-sinks-padded"]))]
    assert variants[0].startswith("flash_attn_vec_blk_kvt32") and variants[1].startswith("flash_attn_vec_kf16")
    assert [v.rsplit("_wg", 1)[1] for v in variants[2:]] == ["16", "32", "64"]


def test_the_op_reference_hides_masked_keys_and_weights_the_sink():
    q = np.zeros((1, 1, 1, 4))
    k = np.zeros((1, 1, 3, 4))
    v = np.arange(12.0).reshape(1, 1, 3, 4)
    mask = np.array([[[0.0, -np.inf, 0.0]]])
    o, _ = flash_attn_ext(q, k, v, mask, scale=1.0, sinks=np.zeros(1))
    np.testing.assert_allclose(o[0, 0, 0], (v[0, 0, 0] + v[0, 0, 2]) / 3)
    assert isinstance(Case({"q": q}, {}), Case)
