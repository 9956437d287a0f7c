"""ONNX Runtime Web's attention programs (GroupQueryAttention, PagedAttention, MultiHeadAttention):
captured from ORT in Node on Dawn, relaunched by the toolkit, compared with a float64 reference.

What is proven: the model builders put every input where ORT 1.30's contrib op schemas expect it;
GroupQueryAttention (and MultiHeadAttention) take the split-reduce pair for fewer than 32 new
tokens and the single FlashAttention program from 32; binding past and present to one buffer
makes ORT update its static cache in place; launching FlashAttentionDecodeQKV and
FlashAttentionDecodeVxReduce with the uniforms and workgroup counts of
verify.sources.ort.attention.launch reproduces ORT's intermediates and output bit for bit.

The findings are strict xfails with their numbers (a release or compiler that fixes one turns its
test red), each with a passing control: GroupQueryAttention ignores softcap on WebGPU; the
FlashAttention prefill's scores carry the previous key step's probabilities on Dawn and wgpu,
which do not re-zero a loop body's `var` per iteration; on 4-lane subgroups that program also
scores keys it never loaded; FlashAttentionPagedPrefill sums q.k in f16 and turns a large partial
sum into NaN outputs; CopyKVCache reads past key/value for a sequence shorter than the batch's
longest; and the decode partials rest on zero-initialised workgroup memory (docs/findings.md §18.1-§18.6).
The softcap, FlashAttention and paged-prefill findings are also KNOWN in the gate through the
end-to-end kernels `ort.gqa` and `ort.paged_attention`, and the decode's reliance on zeroed
workgroup memory under `sanitize` of `ort.attention.decode_qkv`
(tests/sources/ort/test_ort_attention_kernels.py); softcap and CopyKVCache's reads also at program level,
`ort.attention.decode_qkv` with `softcap` and `ort.attention.copy_kv_cache`
(tests/sources/ort/test_ort_attention_softcap_copy.py); the 4-lane subgroups finding on a real 4-lane
adapter is a test only (docs/ort-attention.md §6).

Tests that run ORT or Dawn need what scripts/setup.sh installs and skip, saying why, without it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from verify.errors import SetupError, UsageError
from verify.gpu import Output
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.attention.launch import DecodeSplit, decode_workgroup_storage
from verify.sources.ort.attention.models import (
    GQA_INPUTS,
    PAGED_INPUTS,
    GroupQueryAttentionModel,
    MultiHeadAttentionModel,
    PagedAttentionModel,
)
from verify.sources.ort.launch import bind

QKV, REDUCE, PREFILL, COPY = ("FlashAttentionDecodeQKV", "FlashAttentionDecodeVxReduce", "FlashAttention",
                              "CopyKVCache")


# -- a float64 reference from the op's definition ---------------------------------------------------------
def reference(model: GroupQueryAttentionModel, feeds: dict, softcap: float | None = None) -> np.ndarray:
    """GroupQueryAttention without rotary, in float64: sequence b attends keys 0..past_b + i
    (past_b = seqlens_k[b] + 1 - S), query head h reads KV head h // (N / Nkv), softmax of
    scale·q·k (softcap c: c·tanh(s / c)). Output [B, S, N·H]."""
    softcap = model.softcap if softcap is None else softcap
    n, h, g = model.num_heads, model.head_size, model.group_size
    q = feeds["query"].astype(np.float64)
    batch, new, _ = q.shape
    q = q.reshape(batch, new, n, h)
    k = feeds["key"].astype(np.float64).reshape(batch, new, -1, h)
    v = feeds["value"].astype(np.float64).reshape(batch, new, -1, h)
    out = np.zeros((batch, new, n, h))
    for b in range(batch):
        total = int(feeds["seqlens_k"][b]) + 1
        past = max(total - new, 0)
        keys = np.concatenate([feeds["past_key"][b, :, :past], k[b, :total - past].transpose(1, 0, 2)], axis=1)
        values = np.concatenate([feeds["past_value"][b, :, :past], v[b, :total - past].transpose(1, 0, 2)], axis=1)
        for i in range(total - past):
            for head in range(n):
                s = model.effective_scale * (keys[head // g, :past + i + 1] @ q[b, i, head])
                if softcap:
                    s = softcap * np.tanh(s / softcap)
                p = np.exp(s - s.max())
                out[b, i, head] = (p / p.sum()) @ values[head // g, :past + i + 1]
    return out.reshape(batch, new, n * h)


def gqa_feeds(model, past_lengths, new=1, capacity=None, seed=0):
    """Random feeds: sequence b has past_lengths[b] cached tokens and `new` new ones."""
    rng = np.random.default_rng(seed)
    past_lengths = np.asarray(past_lengths)
    batch, kv_width = len(past_lengths), model.kv_num_heads * model.head_size
    cache = capacity or int(past_lengths.max())
    shape = (batch, model.kv_num_heads, cache, model.head_size)
    return model.feeds(rng.standard_normal((batch, new, model.query_width)), rng.standard_normal(shape),
                       rng.standard_normal(shape), past_lengths + new - 1, int(past_lengths.max()) + new,
                       key=rng.standard_normal((batch, new, kv_width)), value=rng.standard_normal((batch, new, kv_width)))


# -- models (no GPU) ----------------------------------------------------------------------------------------
def _node(model):
    import onnx

    return onnx.load_from_string(model.onnx_bytes).graph.node[0]


def test_a_gqa_model_puts_each_input_at_its_schema_position():
    node = _node(GroupQueryAttentionModel("f16", 8, 2, 64, packed_qkv=True, do_rotary=True, has_head_sink=True,
                                          local_window_size=16, softcap=30.0))
    assert list(node.input) == ["query", "", "", "past_key", "past_value", "seqlens_k", "total_sequence_length",
                                "cos_cache", "sin_cache", "", "", "head_sink"]
    assert [n for n in node.input if n] == [n for n in GQA_INPUTS if n in node.input]
    attrs = {a.name: a for a in node.attribute}
    assert (attrs["num_heads"].i, attrs["kv_num_heads"].i, attrs["local_window_size"].i) == (8, 2, 16)
    assert attrs["softcap"].f == 30.0 and "scale" not in attrs and node.domain == "com.microsoft"


def test_a_paged_model_puts_each_input_at_its_schema_position():
    node = _node(PagedAttentionModel("f16", 4, 2, 64, block_size=32))
    assert list(node.input) == list(PAGED_INPUTS[:8])
    assert list(node.output) == ["output", "key_cache_out", "value_cache_out"]


def test_an_mha_model_puts_its_past_at_positions_6_and_7():
    node = _node(MultiHeadAttentionModel("f32", 4, 64, unidirectional=True, has_past=True))
    assert list(node.input) == ["query", "key", "value", "", "", "", "past_key", "past_value"]
    assert list(node.output) == ["output", "present_key", "present_value"]


def test_models_refuse_heads_that_do_not_group():
    with pytest.raises(UsageError, match="multiple of kv_num_heads"):
        GroupQueryAttentionModel("f32", 6, 4, 64)


# -- launch rules (no GPU) -------------------------------------------------------------------------------------
def test_the_decode_split_tiles_tokens_and_keys_as_orts_host_code_does():
    decode = DecodeSplit(batch=3, num_heads=8, kv_num_heads=2, head_size=128, new_sequence_length=1,
                         total_sequence_length=131, present_sequence_length=200)
    assert (decode.m_tile, decode.workgroup_size, decode.num_total_tiles, decode.num_present_tiles) == (1, 128, 3, 4)
    assert decode.qkv_grid() == (3 * 8 * 3, 1, 1) and decode.reduce_grid() == (3 * 8 * 4, 1, 1)
    assert decode.out_split_shape == (3, 8, 1, 4, 128) and decode.qkv_uniforms()["n_reps"] == 4
    assert math.isclose(decode.alpha, 128 ** -0.5)
    prefill = DecodeSplit(1, 4, 2, 256, 9, 20, 20, element_size=4)
    assert prefill.m_tile == 2  # 4 tokens of a 256-wide f32 head need 17952 bytes of workgroup memory
    assert decode_workgroup_storage(4, 64, 4) == 17952  # > 16384
    assert DecodeSplit(1, 4, 2, 256, 9, 20, 20, max_workgroup_storage=32768).m_tile == 4


# -- capture ---------------------------------------------------------------------------------------------------
@pytest.mark.webgpu
@pytest.mark.parametrize("dtype,new,expected", [
    ("f32", 1, (COPY, QKV, REDUCE)), ("f16", 5, (COPY, QKV, REDUCE)), ("f16", 31, (COPY, QKV, REDUCE)),
    ("f32", 32, (COPY, PREFILL))])
def test_gqa_takes_the_split_reduce_pair_below_32_new_tokens_and_flash_attention_from_32(ort, dtype, new, expected):
    model = GroupQueryAttentionModel(dtype, 4, 2, 64)
    run = ort.run(model, gqa_feeds(model, [3], new))
    assert run.labels == expected


@pytest.mark.webgpu
@pytest.mark.parametrize("new,expected", [(1, (COPY, QKV, REDUCE)), (40, (COPY, PREFILL))])
def test_multi_head_attention_takes_the_same_flash_programs(ort, new, expected):
    model = MultiHeadAttentionModel("f32", 4, 64, unidirectional=True, has_past=True)
    rng = np.random.default_rng(0)
    feeds = model.feeds(*(rng.standard_normal((1, new, 256)) for _ in range(3)),
                        *(rng.standard_normal((1, 4, 7, 64)) for _ in range(2)))
    run = ort.run(model, feeds)
    assert run.labels == expected
    assert "seqlens_k" not in run.program(expected[1]).wgsl  # MHA's variants take lengths from uniforms


@pytest.mark.webgpu
def test_a_shared_cache_is_updated_in_place_and_only_the_new_tokens_are_copied(ort):
    model = GroupQueryAttentionModel("f32", 4, 2, 64)
    feeds = gqa_feeds(model, [7, 2], capacity=16)
    run = ort.run(model, feeds, aliases=model.shared_cache)
    assert run.dispatch(COPY).workgroups == (1, 1, 1)  # B·Nkv·1·H/4 = 64 lanes: the new token only
    present = run.outputs["present_key"]
    assert present.shape == (2, 2, 16, 64)
    new_key = feeds["key"].reshape(2, 2, 64)
    assert np.array_equal(present[0, :, 7], new_key[0]) and np.array_equal(present[1, :, 2], new_key[1])
    untouched = np.ones(16, bool)
    untouched[7] = False
    assert np.array_equal(present[0][:, untouched], feeds["past_key"][0][:, untouched])
    unshared = ort.run(model, feeds)
    assert unshared.dispatch(COPY).workgroups == (8, 1, 1)  # B·Nkv·total·H/4 = 2·2·8·16 lanes, 64 a group
    assert np.array_equal(unshared.outputs["output"], run.outputs["output"])


@pytest.mark.webgpu
@pytest.mark.parametrize("dtype", ["f32", "f16"])
def test_gqa_decode_is_close_to_the_float64_reference_with_unequal_lengths(ort, dtype):
    """Decode over three sequences of 4, 71 and 131 tokens (one, two and three key tiles). The
    margin is a plain sanity bound, not a budget: f32 lands near 1e-6, f16 near 1e-3."""
    model = GroupQueryAttentionModel(dtype, 8, 2, 64)
    feeds = gqa_feeds(model, [3, 70, 130], seed=1)
    err = np.abs(ort.run(model, feeds).outputs["output"] - reference(model, feeds)).max()
    assert err < (1e-5 if dtype == "f32" else 1e-2)


# -- kernel by kernel: the toolkit's launches are ORT's -------------------------------------------------------------
def _split_of(model, feeds, run) -> DecodeSplit:
    batch, new, _ = feeds["query"].shape
    return DecodeSplit(batch, model.num_heads, model.kv_num_heads, model.head_size, new,
                       int(feeds["total_sequence_length"]), run.outputs["present_key"].shape[2],
                       element_size=model.numpy_dtype.itemsize,
                       max_workgroup_storage=run_limit("maxComputeWorkgroupStorageSize"))


def run_limit(name):
    return ort_runtime.shared_runtime().device["device_limits"][name]


def _written_tiles(split, seqlens_k) -> np.ndarray:
    """Which out_split_vx tiles QKV writes: per sequence, those that start before its total."""
    tiles = np.arange(split.num_present_tiles) * 64
    written = tiles[None, :] < (np.asarray(seqlens_k) + 1)[:, None]
    return np.broadcast_to(written[:, None, None, :], split.out_split_shape[:4])


@pytest.mark.webgpu
@pytest.mark.parametrize("dtype,past,new", [("f32", [3, 70, 130], 1), ("f16", [3, 70, 130], 1), ("f16", [40], 5),
                                            ("f32", [0], 3)])
def test_launching_the_decode_pair_reproduces_orts_intermediates_and_output_bit_for_bit(ort, dawn, dtype, past, new):
    model = GroupQueryAttentionModel(dtype, 8, 2, 64)
    feeds = gqa_feeds(model, past, new, seed=2)
    run = ort.run(model, feeds, snapshots=True)
    split = _split_of(model, feeds, run)
    qkv, reduce = run.dispatch(QKV), run.dispatch(REDUCE)
    assert qkv.workgroups == split.qkv_grid() and reduce.workgroups == split.reduce_grid()
    t = model.numpy_dtype

    pipeline = dawn.pipeline(qkv.program.wgsl)
    launched = dawn.run(pipeline, bind(pipeline, {
        "q": feeds["query"], "present_key": run.outputs["present_key"], "present_value": run.outputs["present_value"],
        "seqlens_k": feeds["seqlens_k"], "out_split_vx": Output(t, split.out_split_shape),
        "metadata": Output(np.float32, split.metadata_shape)}, split.qkv_uniforms()), split.qkv_grid())
    ours_split, ours_meta = launched.outputs["out_split_vx"], launched.outputs["metadata"]
    ort_split = qkv.binding(4).array(t, ours_split.size).reshape(split.out_split_shape)
    ort_meta = qkv.binding(5).array(np.float32, ours_meta.size).reshape(split.metadata_shape)
    assert ours_meta.tobytes() == ort_meta.tobytes()
    written = _written_tiles(split, feeds["seqlens_k"])
    assert ours_split[written].tobytes() == ort_split[written].tobytes()

    pipeline = dawn.pipeline(reduce.program.wgsl)
    for partial in (ours_split, ort_split):
        merged = dawn.run(pipeline, bind(pipeline, {
            "input": partial, "metadata": ours_meta, "seqlens_k": feeds["seqlens_k"],
            "output": Output(t, run.outputs["output"].shape)}, split.reduce_uniforms()), split.reduce_grid())
        assert merged.outputs["output"].tobytes() == run.outputs["output"].tobytes()


# -- findings (strict xfails) -------------------------------------------------------------------------------------------
@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason=(
    "GroupQueryAttention ignores softcap on WebGPU: with softcap=2 the decode output differs from the softcapped "
    "reference by about 1.8 and equals the uncapped one to 1e-6 (no program takes a softcap uniform)"))
@pytest.mark.parametrize("new", [1, 8])
def test_gqa_applies_its_softcap(ort, new):
    """Decode and an 8-token prefill (both the split-reduce pair, whose f32 error is near 1e-6)."""
    model, feeds, y = _softcapped_run(ort, new)
    assert np.abs(y - reference(model, feeds)).max() < 1e-5


def _softcapped_run(ort, new):
    model = GroupQueryAttentionModel("f32", 4, 2, 64, softcap=2.0)
    feeds = gqa_feeds(model, [7], new, seed=3)
    feeds["query"] = feeds["query"] * 3  # scores well past the cap
    return model, feeds, ort.run(model, feeds).outputs["output"]


@pytest.mark.webgpu
def test_with_softcap_gqa_computes_the_uncapped_attention(ort):
    """The finding above, stated positively: the softcapped model's output is the uncapped one."""
    model, feeds, y = _softcapped_run(ort, 1)
    assert np.abs(y - reference(model, feeds, softcap=0.0)).max() < 1e-5


PREFILL_FINDING = (
    "ORT's FlashAttention prefill declares its score accumulators qk_1..qk_4 as `var` without initializer inside the "
    "key-step loop and relies on WGSL's per-iteration zero value; Tint (npm webgpu 0.6.2) and Naga (wgpu 0.32) zero "
    "them once, so every step's scores carry the previous step's probabilities: error 0.19-0.46 for queries past "
    "the first key step")


@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason=PREFILL_FINDING)
def test_gqa_prefill_with_flash_attention_matches_the_reference(ort):
    model = GroupQueryAttentionModel("f32", 1, 1, 64)
    feeds = gqa_feeds(model, [0], 40, seed=0)
    err = np.abs(ort.run(model, feeds).outputs["output"] - reference(model, feeds)).max(axis=(0, 2))
    assert err.max() < 1e-5


LOOP_VAR = """
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(1)
fn main() {
  for (var i = 0u; i < 4u; i++) {
    var acc : f32;
    acc += 1.0;
    out[i] = acc;
  }
}
"""


@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason="Dawn's Tint (npm webgpu 0.6.2) keeps a loop body's `var` across iterations: "
                                       "[1, 2, 3, 4] where WGSL gives [1, 1, 1, 1]")
def test_dawn_zeroes_a_loop_bodys_var_at_every_iteration(dawn):
    out = dawn.run(dawn.pipeline(LOOP_VAR), {"out": Output(np.float32, (4,))}, (1, 1, 1)).outputs["out"]
    assert out.tolist() == [1, 1, 1, 1]


@pytest.mark.webgpu
def test_zeroing_orts_prefill_accumulators_explicitly_makes_it_match_the_reference(ort, dawn):
    """The control for the two findings above: the same dispatch, relaunched with `= vec4(0)`
    on the four declarations, is within 1e-6 of the float64 reference."""
    model = GroupQueryAttentionModel("f32", 1, 1, 64)
    feeds = gqa_feeds(model, [0], 40, seed=0)
    run = ort.run(model, feeds, snapshots=True)
    dispatch = run.dispatch(PREFILL)
    wgsl = dispatch.program.wgsl
    for n in range(1, 5):
        wgsl = wgsl.replace(f"var qk_{n} : vec4<qk_precision>;", f"var qk_{n} = vec4<qk_precision>(0);")
    assert wgsl.count("= vec4<qk_precision>(0);") == 4
    pipeline = dawn.pipeline(wgsl)
    resources = {b.name: Output(np.uint8, (dispatch.binding(b.binding).size,)) if b.writable
                 else dispatch.binding(b.binding).data for b in pipeline.interface.bindings}
    raw = dawn.run(pipeline, resources, dispatch.workgroups).outputs["output"]
    y = np.frombuffer(raw.tobytes(), np.float32)[:40 * 64].reshape(1, 40, 64)
    assert np.abs(y - reference(model, feeds)).max() < 1e-6


def _zeroed_accumulators(wgsl: str) -> str:
    """ORT's prefill WGSL with `= vec4(0)` on the four loop-body score accumulators."""
    for n in range(1, 5):
        wgsl = wgsl.replace(f"var qk_{n} : vec4<qk_precision>;", f"var qk_{n} = vec4<qk_precision>(0);")
    assert wgsl.count("= vec4<qk_precision>(0);") == 4
    return wgsl


def _replay_output(device, dispatch, wgsl, shape):
    pipeline = device.pipeline(wgsl)
    resources = {b.name: Output(np.uint8, (dispatch.binding(b.binding).size,)) if b.writable
                 else dispatch.binding(b.binding).data for b in pipeline.interface.bindings}
    raw = device.run(pipeline, resources, dispatch.workgroups).outputs["output"]
    return np.frombuffer(raw.tobytes(), np.float32)[:int(np.prod(shape))].reshape(shape)


@pytest.fixture(scope="module")
def swiftshader():
    """ORT and a Dawn device on SwiftShader (4-lane subgroups, no f16); skipped without it."""
    from verify.gpu.dawn import DawnDevice, environment

    drivers = [d for d in environment.vulkan_drivers() if d.name == "swiftshader"]
    if not drivers:
        pytest.skip("SwiftShader (Debian's chromium package) is not installed")
    try:
        runtime = ort_runtime.OrtRuntime(driver=drivers[0])
    except SetupError as exc:
        pytest.skip(str(exc))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(environment, "vulkan_drivers", lambda: drivers)
        device = DawnDevice()
    yield runtime, device
    device.close()
    runtime.close()


SUBGROUP_4_FINDING = (
    "ORT's FlashAttention prefill assumes subgroups of at least 8 lanes: with 4 (SwiftShader) its `sg_size <= 8` "
    "branch scores keys k_start+4..7 through subgroupShuffle from lanes that do not exist, while the loop advances "
    "by 4 keys; with the accumulators zeroed the error is still 1.1 for every query past key 3")


@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason=SUBGROUP_4_FINDING)
def test_orts_prefill_is_right_on_4_lane_subgroups_once_its_accumulators_are_zeroed(swiftshader):
    runtime, device = swiftshader
    model = GroupQueryAttentionModel("f32", 1, 1, 64)
    feeds = gqa_feeds(model, [0], 40, seed=0)
    dispatch = runtime.run(model, feeds, snapshots=True).dispatch(PREFILL)
    y = _replay_output(device, dispatch, _zeroed_accumulators(dispatch.program.wgsl), (1, 40, 64))
    assert np.abs(y - reference(model, feeds)).max() < 1e-6


@pytest.mark.webgpu
def test_on_4_lane_subgroups_orts_prefill_is_right_when_it_scores_4_keys_a_step(swiftshader):
    """The control: zeroed accumulators, and keys 4..7 of a step masked when sg_size is 4."""
    runtime, device = swiftshader
    model = GroupQueryAttentionModel("f32", 1, 1, 64)
    feeds = gqa_feeds(model, [0], 40, seed=0)
    dispatch = runtime.run(model, feeds, snapshots=True).dispatch(PREFILL)
    wgsl = _zeroed_accumulators(dispatch.program.wgsl)
    for j in range(4, 8):
        visible = f"is_key_visible(k_start + {j}, local_window_start, seq_causal_length)"
        assert visible in wgsl
        wgsl = wgsl.replace(visible, f"{visible} && sg_size > 4u")
    y = _replay_output(device, dispatch, wgsl, (1, 40, 64))
    assert np.abs(y - reference(model, feeds)).max() < 1e-6


@pytest.mark.webgpu
def test_orts_decode_partials_rest_on_zero_initialised_workgroup_memory(webgpu_device, ort):
    """Where workgroup memory is not zeroed (Mesa 22.3 lavapipe under wgpu), ORT's
    FlashAttentionDecodeQKV sums score columns it never wrote (inner_qk_values) and adds onto
    tile_output: the decode output is wrong (off by more than 0.1, or NaN where the leftovers are
    NaN); zeroing both first makes it right."""
    if webgpu_device.zeroes_workgroup_memory:
        pytest.skip(f"{webgpu_device.info.label} zero-initialises workgroup memory")
    from verify.gpu.dialect import for_naga

    model = GroupQueryAttentionModel("f32", 4, 2, 64)
    feeds = gqa_feeds(model, [70], seed=4)
    run = ort.run(model, feeds, snapshots=True)
    split = _split_of(model, feeds, run)
    qkv, reduce = run.dispatch(QKV), run.dispatch(REDUCE)
    anchor = "  let global_idx = workgroup_idx * (workgroup_size_x * workgroup_size_y * workgroup_size_z) + local_idx;\n"
    zeroing = ("  for (var z = local_idx; z < 64u * 32u; z += workgroup_size_x) { inner_qk_values[0][z / 32u][z % 32u] = 0.0; }\n"
               "  for (var z = local_idx; z < 16u; z += workgroup_size_x) { tile_output[0][z] = q_value_t(0); }\n"
               "  workgroupBarrier();\n")
    assert anchor in qkv.program.wgsl
    errors = []
    # Run as shipped twice: the second run finds the first one's leftovers in workgroup memory
    # (the first may find it still zero).
    for wgsl in (qkv.program.wgsl, qkv.program.wgsl, qkv.program.wgsl.replace(anchor, anchor + zeroing)):
        pipeline = webgpu_device.pipeline(for_naga(wgsl)[0])
        partial = webgpu_device.run(pipeline, bind(pipeline, {
            "q": feeds["query"], "present_key": run.outputs["present_key"], "present_value": run.outputs["present_value"],
            "seqlens_k": feeds["seqlens_k"], "out_split_vx": Output(np.float32, split.out_split_shape),
            "metadata": Output(np.float32, split.metadata_shape)}, split.qkv_uniforms()), split.qkv_grid()).outputs
        pipeline = webgpu_device.pipeline(for_naga(reduce.program.wgsl)[0])
        y = webgpu_device.run(pipeline, bind(pipeline, {
            "input": partial["out_split_vx"], "metadata": partial["metadata"], "seqlens_k": feeds["seqlens_k"],
            "output": Output(np.float32, run.outputs["output"].shape)}, split.reduce_uniforms()), split.reduce_grid())
        error = np.abs(y.outputs["output"] - reference(model, feeds))
        errors.append(np.where(np.isnan(error), np.inf, error).max())  # leftovers may be NaN: wrong too
    assert max(errors[:2]) > 0.1 and errors[2] < 1e-5, errors


def _paged_overflow_case(model: PagedAttentionModel, new: int):
    """One sequence of `new` tokens in a shuffled 3-block cache: every query 130, key 0 = +130 on
    its first 32 channels and -130 on the last 32 (q.k_0 = 0 exactly, but a running sum over the
    channels passes 32·(130/8)·130 = 67600 > 65504), the other keys small. The attention is finite
    (|output| < 4)."""
    rng = np.random.default_rng(1)
    blocks = rng.permutation(3).astype(np.int32)
    cache = rng.standard_normal((3, model.block_size, 1, 64))
    key = rng.standard_normal((new, 64)) * 0.1
    key[0, :32], key[0, 32:] = 130.0, -130.0
    feeds = model.feeds(np.full((new, 64), 130.0), cache, cache, [0, new], [0], blocks[None, :2], key=key,
                        value=rng.standard_normal((new, 64)))
    expected = np.zeros((new, 64))
    k, v = feeds["key"].astype(np.float64), feeds["value"].astype(np.float64)
    q = feeds["query"].astype(np.float64)
    for i in range(new):
        s = (k[:i + 1] @ q[i]) / 8
        p = np.exp(s - s.max())
        expected[i] = (p / p.sum()) @ v[:i + 1]
    return feeds, expected


@pytest.mark.webgpu
def test_paged_attention_split_path_keeps_large_partial_scores_finite(ort):
    """8 new tokens take FlashAttentionPagedDecodeQKV/VxReduce, whose scores are summed in f32."""
    model = PagedAttentionModel("f16", 1, 1, 64, block_size=32)
    feeds, expected = _paged_overflow_case(model, 8)
    run = ort.run(model, feeds, aliases=model.shared_cache)
    assert "FlashAttentionPagedDecodeQKV" in run.labels
    assert np.abs(run.outputs["output"] - expected).max() < 1e-2


@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason=(
    "FlashAttentionPagedPrefill accumulates q.k in f16: a running score past 65504 is inf and every output of "
    "the sequence is NaN (2560 of 2560) where the attention is finite (max |output| 3.6) and the split path "
    "computes it to 1e-3"))
def test_paged_attention_prefill_keeps_large_partial_scores_finite(ort):
    """40 new tokens take FlashAttentionPagedPrefill (its first compile on lavapipe takes minutes; Mesa caches it)."""
    model = PagedAttentionModel("f16", 1, 1, 64, block_size=32)
    feeds, _ = _paged_overflow_case(model, 40)
    run = ort.run(model, feeds, aliases=model.shared_cache)
    assert run.labels[-1] == "FlashAttentionPagedPrefill"
    assert np.isfinite(run.outputs["output"]).all()


@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason=(
    "CopyKVCache (past and present not shared) fills every present row < the batch's largest total: for a "
    "shorter sequence the rows past its own total copy key[b, row - past_b] with row - past_b >= S, reading past "
    "the end of key and value for the last sequence (160 out-of-bounds reads for totals 8 and 3, S = 1); the rows "
    "are never attended"))
def test_copy_kv_cache_reads_only_the_new_tokens_it_was_given(ort, dawn):
    from verify.instrument import OutOfBounds, SanitizingDevice

    model = GroupQueryAttentionModel("f32", 4, 2, 64)
    feeds = gqa_feeds(model, [7, 2], seed=5)
    dispatch = ort.run(model, feeds, snapshots=True).dispatch(COPY)
    device = SanitizingDevice(dawn)
    pipeline = device.pipeline(dispatch.program.wgsl)
    exact = {"key": feeds["key"], "value": feeds["value"], "seqlen_k": feeds["seqlens_k"],
             "past_key": feeds["past_key"], "past_value": feeds["past_value"]}
    resources = {}
    for binding in pipeline.interface.bindings:
        bound = dispatch.binding(binding.binding)
        resources[binding.name] = (Output(np.uint8, (bound.size,)) if binding.writable
                                   else exact.get(binding.name, bound.data))
    device.run(pipeline, resources, dispatch.workgroups)
    assert not device.take_report().of_type(OutOfBounds)
