"""`ort.gqa`'s packed QKV, partial rotary and attention bias (`packed_qkv`, `rotary_dim`,
`attention_bias`).

Without a GPU: a packed model is fed each token's q, k and v side by side in `query`; the
reference rotates the first rotary_dim channels only and copies the rest, whose error bound is
the copy's; a full bias is NaN past each sequence's total, a shared one is one for the batch and
heads, and the expected output moves as added scores do; bad values are usage errors. With ORT
on Dawn: packed QKV (ORT's SplitPackedQKVWithRotaryEmbeddingAndCopyKV), partial rotary and the
bias on the split, prefill and unfused paths pass.
"""

from __future__ import annotations

import numpy as np
import pytest

from verify.budgets.ort_attention import rotation_error
from verify.errors import UsageError
from verify.references.group_query import rotate_with_tables
from verify.results.record import Verdict
from verify.sources.ort.attention.cases import gqa_cases, rotary_tables
from verify.sources.ort.attention.sessions import OrtGqa, _rotated


def _minimal(strategy):
    from hypothesis import find, settings

    return find(strategy, lambda case: True, settings=settings(database=None, max_examples=1000, derandomize=True))


def test_a_packed_model_takes_q_k_and_v_side_by_side_in_query():
    kernel = OrtGqa()
    config = kernel.config(dict(dtype="f32", num_heads=4, kv_num_heads=2, packed_qkv=1))
    case = _minimal(gqa_cases(config))
    model = kernel.model(config)
    feeds = kernel.feeds(model, case)
    assert "key" not in feeds and "value" not in feeds
    assert feeds["query"].shape[-1] == model.query_width == (4 + 2 * 2) * 64
    assert np.array_equal(feeds["query"], np.concatenate([case["query"], case["key"], case["value"]], axis=-1))


@pytest.mark.parametrize("interleaved", [0, 1])
def test_partial_rotary_rotates_the_first_rotary_dim_channels_and_copies_the_rest(interleaved):
    config = OrtGqa().config(dict(dtype="f16", head_size=128, do_rotary=1, rotary_dim=32,
                                  rotary_interleaved=interleaved))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 2, 128)).astype(np.float16)
    cos, sin = rotary_tables(40, 16, np.float16)

    class Tables:
        def __getitem__(self, name):
            return {"cos_cache": cos, "sin_cache": sin}[name]

    positions = np.array([0, 5, 39])
    rotated, bound = _rotated(x, Tables(), positions, config)
    assert np.array_equal(rotated[..., 32:], x[..., 32:].astype(np.float64))
    whole = rotate_with_tables(x[..., :32], cos, sin, positions[:, None], bool(interleaved))
    assert np.allclose(rotated[..., :32], whole, rtol=0, atol=0)
    assert rotated[..., :32].shape == whole.shape and not np.allclose(rotated[1:, :, :32], x[1:, :, :32])
    # the copied channels' bound is rotation_error's with cos 1, sin 0 (its docstring): gamma_2 |x| + 3 N_t
    rest = x[..., 32:].astype(np.float64)
    copy = rotation_error(rest, np.zeros(rest.shape), np.ones(rest.shape), np.zeros(rest.shape), "f16")
    assert np.array_equal(bound[..., 32:], copy)


def test_bad_rotary_dims_are_usage_errors():
    with pytest.raises(UsageError, match="needs do_rotary"):
        OrtGqa().config({"rotary_dim": 32})
    with pytest.raises(UsageError, match="must be even"):
        OrtGqa().config({"do_rotary": 1, "rotary_dim": 31})
    with pytest.raises(UsageError, match="at most head_size"):
        OrtGqa().config({"do_rotary": 1, "rotary_dim": 96, "head_size": 64})


# -- with ORT on Dawn ---------------------------------------------------------------------------------
@pytest.mark.webgpu
@pytest.mark.parametrize("config", [
    dict(dtype="f32", num_heads=4, kv_num_heads=2, packed_qkv=1),
    dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2, phase="prefill", do_rotary=1, rotary_dim=64,
         packed_qkv=1),
    dict(dtype="f32", num_heads=4, kv_num_heads=2, do_rotary=1, rotary_interleaved=1, rotary_dim=32),
], ids=["packed", "packed-prefill-partial-neox", "partial-gptj"])
def test_packed_qkv_and_partial_rotary_pass(ort, config):
    from verify.api import check

    (result,) = check(OrtGqa, config, checks=["reference"], examples=6, isolate=False, implementation="dawn")
    assert result.verdict == Verdict.PASS, result.reason
    assert sum(result.launch_paths.values()) == result.examples


# -- attention_bias -------------------------------------------------------------------------------------
def test_a_full_bias_poisons_the_columns_past_each_sequences_total():
    config = OrtGqa().config(dict(dtype="f32", num_heads=4, kv_num_heads=2, attention_bias="full", max_past=100))
    case = _minimal(gqa_cases(config).filter(lambda case: case.params["batch"] == 3 and len(set(case.params["past"])) == 3))
    bias = case["attention_bias"]
    assert bias.shape == (3, 4, 1, max(case.params["past"]) + 1)
    for b, past in enumerate(case.params["past"]):
        assert np.isfinite(bias[b, :, :, :past + 1]).all() and np.isnan(bias[b, :, :, past + 1:]).all()


def test_a_shared_bias_is_one_for_the_batch_and_the_heads():
    config = OrtGqa().config(dict(dtype="f16", num_heads=4, kv_num_heads=2, attention_bias="shared", phase="prefill"))
    case = _minimal(gqa_cases(config))
    assert case["attention_bias"].shape == (1, 1, case.params["new"], max(case.params["past"]) + case.params["new"])
    assert "attention_bias" in OrtGqa().feeds(OrtGqa().model(config), case)


def test_the_bias_moves_the_expected_output_as_added_scores_do():
    """With a bias of 0 except -10000 on every key but the last, each query attends its last
    visible key alone: the output is that key's value row."""
    kernel = OrtGqa()
    config = kernel.config(dict(dtype="f32", num_heads=4, kv_num_heads=2, attention_bias="full", max_past=20))
    case = _minimal(gqa_cases(config).filter(lambda case: max(case.params["past"]) > 3))
    bias = np.full(case["attention_bias"].shape, -1e4, np.float32)
    for b, past in enumerate(case.params["past"]):
        bias[b, :, :, past] = 0.0  # the new token's own key
        bias[b, :, :, past + 1:] = np.nan
    case = case.replace({"attention_bias": bias})
    (output, _, _) = kernel.expected(config, case)
    for b in range(case.params["batch"]):
        own = case["value"][b].reshape(2, 64).astype(np.float64)  # the new token's value, per KV head
        assert np.allclose(output.reference[b].reshape(4, 64), np.repeat(own, 2, axis=0), rtol=0, atol=1e-12)


def test_a_bias_with_softcap_is_a_usage_error():
    with pytest.raises(UsageError, match="softcap"):
        OrtGqa().config({"attention_bias": "full", "softcap": 2.0})
    with pytest.raises(UsageError, match="expected one of none"):
        OrtGqa().config({"attention_bias": "rows"})


@pytest.mark.webgpu
@pytest.mark.parametrize("config", [
    dict(dtype="f32", num_heads=4, kv_num_heads=2, attention_bias="full"),
    dict(dtype="f16", num_heads=8, kv_num_heads=2, phase="prefill", attention_bias="shared"),
    dict(dtype="f32", num_heads=4, kv_num_heads=4, local_window_size=32, attention_bias="full"),
], ids=["decode-full", "prefill-shared", "windowed-unfused-full"])
def test_orts_attention_bias_passes_on_each_path(ort, config):
    from verify.api import check

    (result,) = check(OrtGqa, config, checks=["reference"], examples=6, isolate=False, implementation="dawn")
    assert result.verdict == Verdict.PASS, result.reason


# -- position_ids ---------------------------------------------------------------------------------------
@pytest.mark.webgpu
def test_onnxruntime_web_rotates_at_the_cached_positions_whatever_position_ids_say(ort):
    """onnxruntime-web 1.30's GroupQueryAttention accepts position_ids and checks their shape but
    rotates q and the new keys at past + i from seqlens_k (group_query_attention.cc reads the
    input only for CheckCustomAttentionInputs): ids far from those positions change nothing. So
    verify draws no position_ids (docs/ort-attention.md §2); should ORT start to honour them,
    this test fails and says so."""
    from verify.sources.ort.attention.models import GroupQueryAttentionModel

    kernel = OrtGqa()
    config = kernel.config(dict(dtype="f32", num_heads=4, kv_num_heads=2, phase="prefill", do_rotary=1, max_past=20))
    case = _minimal(gqa_cases(config).filter(lambda case: case.params["new"] >= 3))
    plain = kernel.model(config)
    with_ids = GroupQueryAttentionModel("f32", 4, 2, 64, do_rotary=True, has_position_ids=True)
    feeds = kernel.feeds(plain, case)
    past, new = case.params["past"][0], case.params["new"]
    baseline = ort.run(plain, feeds, aliases=plain.shared_cache).outputs
    for ids in (past + np.arange(new), past + 17 + np.arange(new), np.zeros(new)):
        run = ort.run(with_ids, feeds | {"position_ids": ids[None].astype(np.int64)}, aliases=with_ids.shared_cache)
        for name in ("output", "present_key"):
            assert np.array_equal(run.outputs[name], baseline[name]), (ids, name)


# -- quantized KV cache: k_scale / v_scale ---------------------------------------------------------------
class _ScaledCacheModel:
    """A GroupQueryAttention node with inputs 12-13, k_scale and v_scale [1] (bert_defs.cc), and a
    cache of `cache` ("f32", or "int8" with k/v_quant_type and kv_cache_bit_width=8): f32 H=64,
    4 query heads on 2 KV heads, no rotary."""

    def __init__(self, cache: str, quant_type: str = ""):
        from verify.sources.ort.attention.models import GQA_INPUTS, GQA_OUTPUTS, _node_inputs, _serialize
        from verify.sources.ort.dp4a.model import _import_onnx

        onnx, helper = _import_onnx()
        f32, i32 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT32
        element = onnx.TensorProto.INT8 if cache == "int8" else f32
        self.name = f"GroupQueryAttention(scaled cache {cache} {quant_type})"
        kv = ["batch", 2, "past_length", 64]
        values = {"query": (f32, ["batch", "sequence", 256]), "key": (f32, ["batch", "sequence", 128]),
                  "value": (f32, ["batch", "sequence", 128]), "past_key": (element, kv), "past_value": (element, kv),
                  "seqlens_k": (i32, ["batch"]), "total_sequence_length": (i32, []),
                  "k_scale": (f32, [1]), "v_scale": (f32, [1])}
        names = _node_inputs(GQA_INPUTS + ("k_scale", "v_scale"), set(values))
        attrs = dict(k_quant_type=quant_type, v_quant_type=quant_type, kv_cache_bit_width=8) if quant_type else {}
        node = helper.make_node("GroupQueryAttention", names, list(GQA_OUTPUTS), domain="com.microsoft",
                                num_heads=4, kv_num_heads=2, **attrs)
        present = ["batch", 2, "present_length", 64]
        outputs = [helper.make_tensor_value_info("output", f32, ["batch", "sequence", 256])] + [
            helper.make_tensor_value_info(name, element, present) for name in ("present_key", "present_value")]
        inputs = [helper.make_tensor_value_info(name, *values[name]) for name in names if name]
        self.onnx_bytes = _serialize(node, "group_query_attention_scaled_cache", inputs, outputs)

    def describe(self) -> str:
        return self.name

    @staticmethod
    def feeds(cache_type, k_scale: float, v_scale: float, past: int = 5) -> dict:
        rng = np.random.default_rng(0)
        cache = rng.standard_normal((1, 2, past, 64)) * (20 if cache_type == np.int8 else 1)
        return {"query": rng.standard_normal((1, 1, 256)).astype(np.float32),
                "key": rng.standard_normal((1, 1, 128)).astype(np.float32),
                "value": rng.standard_normal((1, 1, 128)).astype(np.float32),
                "past_key": cache.astype(cache_type), "past_value": cache[:, :, ::-1].astype(cache_type),
                "seqlens_k": np.array([past], np.int32), "total_sequence_length": np.array(past + 1, np.int32),
                "k_scale": np.array([k_scale], np.float32), "v_scale": np.array([v_scale], np.float32)}


@pytest.mark.webgpu
def test_onnxruntime_web_ignores_kv_scales_on_a_float_cache(ort):
    """k_scale and v_scale without a quantization type (a float cache) change nothing: scales of
    0.05 and of 7 give bit-identical outputs and caches. So `ort.gqa` draws none (docs/ort-attention.md §2)."""
    model = _ScaledCacheModel("f32")
    small = ort.run(model, model.feeds(np.float32, 0.05, 0.05)).outputs
    large = ort.run(model, model.feeds(np.float32, 7.0, 3.0)).outputs
    for name in ("output", "present_key", "present_value"):
        assert np.array_equal(small[name], large[name]), name


@pytest.mark.webgpu
@pytest.mark.parametrize("quant_type", ["PER_TENSOR", "PER_CHANNEL"])
def test_onnxruntime_web_cannot_run_an_int8_kv_cache(ort, quant_type):
    """onnxruntime-web 1.30 accepts a GroupQueryAttention with an int8 cache (kv_cache_bit_width=8)
    at session creation, then generates WGSL that reads the cache as u32 words and stores or
    converts them as f32 vectors, with no dequantization: Tint refuses the modules (CopyKVCache:
    `cannot assign 'vec4<f32>' to 'u32'`; the split decode's QKV: no `vec4<f32>(u32)`; which one a
    run meets first depends on the pipelines already cached), and every run fails. A quantized KV cache is not something 1.30 runs on WebGPU, so verify draws none
    (docs/ort-attention.md §2); should a release run it, this test fails and says so."""
    from verify.errors import KernelError

    model = _ScaledCacheModel("int8", quant_type)
    with pytest.raises(KernelError, match='Invalid ShaderModule "(CopyKVCache|FlashAttentionDecodeQKV)"'):
        ort.run(model, model.feeds(np.int8, 0.05, 0.05))
