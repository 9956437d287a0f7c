"""`ort.gqa` and `ort.paged_attention` (ONNX Runtime Web's attention sessions, end to end) and
`ort.attention.decode_qkv` / `ort.attention.decode_reduce` (its split decode, program by program).

What is proven without a GPU: the reference's rotation from cos/sin tables is references.rope's
NeoX and GPT-J rotation; the local window attends the last W keys; the reference's 64-key tile
states merge (references.softmax.merge_many_outputs) to the whole attention, which is the
split/merge contract the two programs are held to; the dispatch rule names the paths
docs/ort-attention.md §2 gives; bad configs are usage errors; the budgets grow with the model
type's roundoff. With ORT on Dawn: the split-reduce, unfused and paged-prefill configs PASS, each
program passes under its contract, and each documented finding's config is KNOWN with its finding
reproduced (docs/findings.md §18.1, §18.2, §18.4, §18.6, §18.7); an edited program (`--wgsl`) that zeroes
what §18.6 reads passes sanitize, and FlashAttention as shipped fails it with §18.7's reads past the
cache (strict xfail) where loading its rows under an `if` passes.

Tests that run ORT need what scripts/setup.sh installs and skip, saying why, without it.
"""

from __future__ import annotations

import numpy as np
import pytest

from verify.budgets.ort_attention import output_budget, score_errors
from verify.errors import UsageError
from verify.export.findings import with_loads_under_an_if
from verify.references.group_query import attend, rotate_with_tables, visible_keys
from verify.references.rope import rotate_gptj, rotate_neox
from verify.references.softmax import merge_many_outputs
from verify.results.record import Verdict
from verify.sources.ort.attention.cases import gqa_path, paged_path, rotary_tables
from verify.sources.ort.attention.programs import (
    FLASH_READS_PAST_CACHE,
    FLASH_SUBGROUP_4,
    UNINITIALISED_PARTIALS,
    OrtDecodeQkv,
    OrtDecodeReduce,
    OrtFlashPrefill,
    present_cache,
    tile_states,
)
from verify.sources.ort.attention.sessions import (
    FLASH_LOOP_VAR,
    PAGED_PREFILL_F16_SCORES,
    SOFTCAP_IGNORED,
    OrtGqa,
    OrtPagedAttention,
)


# -- no GPU -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("interleaved,rotate", [(False, rotate_neox), (True, rotate_gptj)])
def test_rotating_with_theta_tables_is_the_rope_references_rotation(interleaved, rotate):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((5, 3, 64))
    positions = np.array([0, 1, 17, 63, 200])
    cos, sin = rotary_tables(256, 32, np.float64)
    ours = rotate_with_tables(x, cos, sin, positions[:, None], interleaved)
    assert np.allclose(ours, rotate(x, positions[:, None]), rtol=0, atol=1e-12)


def test_a_local_window_attends_the_last_w_keys_the_query_included():
    visible = visible_keys(10, 2, local_window_size=3)
    assert visible[0].nonzero()[0].tolist() == [6, 7, 8]  # token 0 is at position 8
    assert visible[1].nonzero()[0].tolist() == [7, 8, 9]
    assert visible_keys(10, 2).sum(axis=1).tolist() == [9, 10]


@pytest.mark.parametrize("window", [-1, 0, 1, 5, 9, 30])
def test_the_window_is_orts_in_place_softmax_formula_pair_by_pair(window):
    """InPlaceSoftmax (onnxruntime-web 1.30's WGSL): seq_causal_length = past + i + 1; with
    local_window_size >= 0 and seq_causal_length > W, keys start_offset = seq_causal_length - W
    up to seq_causal_length; else all of 0..seq_causal_length."""
    total, new = 12, 4
    visible = visible_keys(total, new, window)
    for i in range(new):
        causal_length = total - new + i + 1
        start = causal_length - window if 0 <= window < causal_length else 0
        for c in range(total):
            assert visible[i, c] == (start <= c < causal_length), (i, c)


def test_attention_with_one_visible_key_returns_its_value():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((1, 4, 8)), rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 8))
    o, logits2 = attend(q, k, v, visible_keys(5, 1, local_window_size=1), scale=0.3)
    assert np.array_equal(o[0], np.repeat(v[:, 4], 2, axis=0))
    assert np.isinf(logits2[..., :4]).all()


def _minimal(strategy, condition=lambda case: True):
    from hypothesis import find, settings

    return find(strategy, condition, settings=settings(database=None, max_examples=1000, derandomize=True))


@pytest.mark.parametrize("m_tile", [1, 4])
def test_the_reference_tile_states_merge_to_the_whole_attention(m_tile):
    """The split/merge contract: the 64-key tiles' (o_t, m_t + ln l_t) merge to the attention."""
    kernel = OrtDecodeQkv()
    config = kernel.config(dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2, m_tile=m_tile))
    case = _minimal(kernel.cases(config, "ci"), lambda case: max(case.params["past"]) > 130)
    o, m, lsum, written, _ = tile_states(case, config)
    keys, values = present_cache(case, "key", config), present_cache(case, "value", config)
    for b, past in enumerate(case.params["past"]):
        total, used = past + case.params["new"], written[b].sum()
        assert used == -(-total // 64) >= 3
        with np.errstate(divide="ignore"):
            lse = np.where(lsum[b, :, :, :used] > 0, m[b, :, :, :used] + np.log(lsum[b, :, :, :used]), -np.inf)
        merged, _ = merge_many_outputs(o[b, :, :, :used], lse, axis=2, base="e")
        q = case["query"][b].reshape(case.params["new"], 4, 64)
        whole, _ = attend(q, keys[b, :, :total], values[b, :, :total], visible_keys(total, case.params["new"]),
                          scale=0.125)
        assert np.allclose(merged.transpose(1, 0, 2), whole, rtol=1e-12, atol=1e-12)


def test_a_sink_adds_to_the_denominator_and_nothing_to_the_numerator():
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((2, 4, 8)), rng.standard_normal((2, 6, 8)), rng.standard_normal((2, 6, 8))
    visible = visible_keys(6, 2)
    plain, _ = attend(q, k, v, visible, scale=0.5)
    sunk, logits2 = attend(q, k, v, visible, scale=0.5, sink=np.array([0.0, 1.0, -1.0, 2.0]))
    scores = 0.5 * np.einsum("shd,hld->shl", q, np.repeat(k, 2, axis=0))
    denominator = np.where(visible[:, None, :], np.exp(scores), 0.0).sum(-1)
    share = denominator / (denominator + np.exp([0.0, 1.0, -1.0, 2.0]))
    assert np.allclose(sunk, plain * share[..., None], rtol=1e-13, atol=0) and logits2.shape == (2, 4, 7)


def test_the_dispatch_rule_names_each_path():
    assert [gqa_path(-1, 1, 100), gqa_path(-1, 31, 100), gqa_path(-1, 32, 100)] == ["split", "split", "flash"]
    assert [gqa_path(16, 1, 100), gqa_path(100, 1, 100), gqa_path(16, 40, 100)] == ["probs", "split", "probs"]
    assert gqa_path(-1, 1, 100, smooth_softmax=True) == "probs"
    assert [paged_path(-1, 32, 32, head_sink=True), paged_path(-1, 31, 32, head_sink=True)] == ["flash", "split"]
    assert [paged_path(-1, 31, 16), paged_path(-1, 32, 16), paged_path(-1, 32, 32), paged_path(8, 1, 32)] == \
        ["split", "flash", "paged_prefill", "flash"]


def test_configs_that_cannot_be_built_are_usage_errors():
    with pytest.raises(UsageError, match="multiple of kv_num_heads"):
        OrtGqa().config({"num_heads": 6, "kv_num_heads": 4})
    with pytest.raises(UsageError, match="needs do_rotary"):
        OrtGqa().config({"rotary_interleaved": 1})
    with pytest.raises(UsageError, match="expected one of f16"):
        OrtPagedAttention().config({"dtype": "f32"})
    with pytest.raises(UsageError, match="no config key 'softcap'"):
        OrtPagedAttention().config({"softcap": 2.0})


@pytest.mark.parametrize("path", ["split", "probs", "flash", "paged_prefill"])
def test_an_f16_budget_exceeds_the_f32_one_and_both_are_finite(path):
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((3, 4, 64)), rng.standard_normal((2, 90, 64)), rng.standard_normal((2, 90, 64))
    _, logits2 = attend(q, k, v, visible_keys(90, 3), scale=0.125)
    budgets = {}
    for dtype in ("f16", "f32"):
        delta = score_errors(q, k, scale=0.125, dtype=dtype, path=path)
        budgets[dtype] = output_budget(v, logits2, delta, dtype=dtype, path=path)
    assert np.isfinite(budgets["f16"]).all() and (budgets["f16"] > budgets["f32"]).all()
    assert (budgets["f32"] > 0).all()


# -- ORT on Dawn ----------------------------------------------------------------------------------------
def _reference(kernel, config, examples=6, check_name="reference", wgsl=None, implementation="dawn"):
    from verify.api import check

    (result,) = check(kernel, config, checks=[check_name], examples=examples, isolate=False,
                      implementation=implementation, wgsl=wgsl)
    return result


@pytest.mark.webgpu
@pytest.mark.parametrize("kernel,config", [
    (OrtGqa, dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2, do_rotary=1, head_sink=1)),
    (OrtGqa, dict(dtype="f32", num_heads=8, kv_num_heads=1, phase="prefill", do_rotary=1, rotary_interleaved=1)),
    (OrtGqa, dict(dtype="f32", num_heads=4, kv_num_heads=4, local_window_size=32, smooth_softmax=1)),
    (OrtPagedAttention, dict(head_size=128, num_heads=8, kv_num_heads=2, do_rotary=1, head_sink=1)),
    (OrtPagedAttention, dict(num_heads=4, kv_num_heads=1, phase="prefill", block_size=32, do_rotary=1,
                             rotary_interleaved=1)),
    (OrtPagedAttention, dict(num_heads=4, kv_num_heads=1, phase="flash", block_size=32)),
    (OrtDecodeQkv, dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2)),
    (OrtDecodeQkv, dict(dtype="f32", num_heads=4, kv_num_heads=1, m_tile=4)),
    (OrtDecodeReduce, dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2)),
], ids=["gqa-f16-decode-rotary-sink", "gqa-f32-prefill-gptj", "gqa-window-smooth", "paged-decode-rotary",
        "paged-prefill-gptj", "paged-prefill-program", "qkv-decode", "qkv-m-tile-4", "reduce"])
def test_orts_attention_passes_where_no_finding_applies(ort, kernel, config):
    result = _reference(kernel, config)
    assert result.verdict == Verdict.PASS, result.reason
    assert result.finding is None
    if kernel in (OrtGqa, OrtPagedAttention):
        assert sum(result.launch_paths.values()) == result.examples


@pytest.mark.webgpu
@pytest.mark.parametrize("kernel,config,check_name,finding", [
    (OrtGqa, dict(dtype="f32", num_heads=4, kv_num_heads=2, softcap=2.0), "reference", SOFTCAP_IGNORED),
    (OrtGqa, dict(dtype="f32", num_heads=4, kv_num_heads=2, phase="flash"), "reference", FLASH_LOOP_VAR),
    (OrtPagedAttention, dict(num_heads=4, kv_num_heads=2, local_window_size=32), "reference", FLASH_LOOP_VAR),
    (OrtPagedAttention, dict(num_heads=4, kv_num_heads=1, phase="flash", block_size=32), "large_scores",
     PAGED_PREFILL_F16_SCORES),
    (OrtDecodeQkv, dict(dtype="f32", num_heads=4, kv_num_heads=2), "sanitize", UNINITIALISED_PARTIALS),
], ids=["gqa-softcap", "gqa-flash", "paged-window-flash", "paged-prefill-f16-scores", "qkv-uninitialised"])
def test_each_documented_finding_is_known_and_reproduced(ort, kernel, config, check_name, finding):
    """FlashAttention's and FlashAttentionPagedPrefill's first compiles on lavapipe take minutes,
    and so does the sanitized QKV program's (Mesa caches them)."""
    result = _reference(kernel, config, examples=3, check_name=check_name)
    assert result.verdict == Verdict.KNOWN, result.reason
    assert result.finding_reproduced is True and result.finding.splitlines()[0] == finding.splitlines()[0]
    if check_name != "sanitize":
        assert result.failing_outputs == {"output"}


@pytest.mark.webgpu
def test_naga_and_tint_agree_on_orts_reduce_program(ort):
    result = _reference(OrtDecodeReduce, dict(dtype="f32", num_heads=4, kv_num_heads=2), check_name="implementations")
    if result.verdict == Verdict.SKIP:
        pytest.skip(result.reason)
    assert result.verdict == Verdict.PASS, result.reason


@pytest.mark.webgpu
def test_where_workgroup_memory_is_not_zeroed_the_qkv_programs_known_finding_shows(ort, webgpu_device):
    """§18.6 under `implementations`: wgpu on Mesa 22.3's lavapipe leaves workgroup memory as the
    last workgroup left it, and ORT's QKV sums onto it."""
    if webgpu_device.zeroes_workgroup_memory:
        pytest.skip(f"{webgpu_device.info.label} zero-initialises workgroup memory")
    result = _reference(OrtDecodeQkv, dict(dtype="f32", num_heads=4, kv_num_heads=2), examples=3,
                        check_name="implementations")
    assert result.verdict == Verdict.KNOWN and result.finding_reproduced is True, result.reason
    assert result.finding.splitlines()[0] == UNINITIALISED_PARTIALS.splitlines()[0]


@pytest.mark.webgpu
def test_orts_qkv_program_edited_to_zero_its_workgroup_memory_passes_sanitize(ort):
    """`--wgsl` checks an edit of ORT's program under the same contract (and never inherits a
    known finding): zeroing inner_qk_values and tile_output first clears §18.6's reads."""
    kernel = OrtDecodeQkv()
    config = dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2)
    wgsl = kernel.wgsl(kernel.config(config))
    assert wgsl.splitlines()[2].startswith("// onnxruntime-web ") and "out_split_vx" in wgsl  # `verify show`'s text
    anchor = ("  let global_idx = workgroup_idx * (workgroup_size_x * workgroup_size_y * workgroup_size_z)"
              " + local_idx;\n")
    zeroing = ("  for (var z = local_idx; z < 64u * 32u; z += workgroup_size_x) {"
               " inner_qk_values[0][z / 32u][z % 32u] = 0.0; }\n"
               "  for (var z = local_idx; z < 16u; z += workgroup_size_x) { tile_output[0][z] = q_value_t(0); }\n"
               "  workgroupBarrier();\n")
    assert anchor in wgsl
    result = _reference(OrtDecodeQkv, config, examples=3, check_name="sanitize",
                        wgsl=wgsl.replace(anchor, anchor + zeroing))
    assert result.verdict == Verdict.PASS, result.reason


# -- FlashAttention (ort.attention.flash) ---------------------------------------------------------------
FLASH_CONFIG = dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2)


def _zeroed_accumulators(wgsl: str) -> str:
    """The program with `= vec4(0)` on its four loop-body score accumulators (§18.2's control)."""
    for n in range(1, 5):
        wgsl = wgsl.replace(f"var qk_{n} : vec4<qk_precision>;", f"var qk_{n} = vec4<qk_precision>(0);")
    assert wgsl.count("= vec4<qk_precision>(0);") == 4
    return wgsl


def test_a_width_bound_finding_shows_only_at_its_width():
    """§18.3 is stated for emulated 4-lane subgroups alone, so at other widths a failure is
    judged against §18.2 only (and never hidden behind §18.3)."""
    from types import SimpleNamespace

    from verify.results.record import KnownFinding

    finding = KnownFinding(FLASH_SUBGROUP_4, outputs=("output",), subgroup_widths=(4,))
    shows = [finding.shows_on_implementation(SimpleNamespace(subgroup_width=width, adapter=None))
             for width in (None, 4, 8, 16)]
    assert shows == [False, True, False, False]
    assert [f.subgroup_widths for f in OrtFlashPrefill().known_finding("reference", {})] == [(4,), ()]


@pytest.mark.webgpu
def test_launching_orts_flash_program_as_ort_dispatches_it_matches_its_output_bit_for_bit(ort):
    """verify's launch (FlashPrefill's uniforms and workgroup count) reproduces ORT's own
    FlashAttention dispatch of the same case: the same uniform values, grid and output bits."""
    from hypothesis import find, settings

    from verify.gpu.dawn import DawnDevice

    kernel = OrtFlashPrefill()
    config = kernel.config(FLASH_CONFIG)
    case = find(kernel.cases(config, "ci"), lambda c: c.params["new"] > 64 and c.params["past"][0] > 0,
                settings=settings(database=None, max_examples=1000, derandomize=True))
    gqa = OrtGqa()
    gqa_config = gqa.config(FLASH_CONFIG | {"phase": "flash"})
    model = gqa.model(gqa_config)
    run = ort.run(model, gqa.feeds(model, case), aliases=model.shared_cache, snapshots=True)
    dispatch = run.dispatch("FlashAttention")
    flash = kernel.flash(config, case)
    assert dispatch.workgroups == flash.grid() == (config["num_heads"] * 2, 1, 1)
    device = DawnDevice()
    try:
        wgsl = kernel.wgsl(config)
        launched = kernel.launch(device, wgsl, config, case).outputs["output"]
    finally:
        device.close()
    # The uniform struct's fields in declaration order: u32 each but alpha (f32, the sixth).
    ours = [np.float32(v).view(np.uint32) if k == "alpha" else np.uint32(v) for k, v in flash.uniforms().items()]
    recorded = np.frombuffer(np.asarray(dispatch.binding(5).data).tobytes(), np.uint32)[:len(ours)]
    assert recorded.tolist() == [int(v) for v in ours]
    assert launched.tobytes() == run.outputs["output"].tobytes()


@pytest.mark.webgpu
def test_orts_flash_program_is_known_and_reproduced(ort):
    """The shipped program under `reference`: §18.2 (the score accumulators carry across key
    steps on Dawn's Tint), KNOWN with the finding reproduced, the output its signature."""
    result = _reference(OrtFlashPrefill, FLASH_CONFIG, examples=3)
    assert result.verdict == Verdict.KNOWN, result.reason
    assert result.finding_reproduced is True and result.finding.splitlines()[0] == FLASH_LOOP_VAR.splitlines()[0]
    assert result.failing_outputs == {"output"}


@pytest.mark.webgpu
def test_orts_flash_program_with_zeroed_accumulators_passes(ort):
    """The control: the same WGSL with `= vec4(0)` on qk_1..qk_4 (an edit under `--wgsl`, which
    inherits no finding) is within the flash path's budget of the reference."""
    kernel = OrtFlashPrefill()
    wgsl = _zeroed_accumulators(kernel.wgsl(kernel.config(FLASH_CONFIG)))
    result = _reference(OrtFlashPrefill, FLASH_CONFIG, examples=3, wgsl=wgsl)
    assert result.verdict == Verdict.PASS, result.reason


def test_the_flash_finding_example_ends_its_cache_within_the_last_key_step():
    """§18.7's documented case: a total of 33 in a cache of exactly 33 rows, so at every step width
    (4, 8, 16 lanes) the last step's rows run past the buffer for the last KV head; that case,
    and only under `sanitize`, whose signature is the out-of-bounds read of present_key."""
    kernel = OrtFlashPrefill()
    config = kernel.config(FLASH_CONFIG)
    (case,) = kernel.finding_examples("sanitize", config)
    total, capacity = int(case["total_sequence_length"]), case.params["capacity"]
    assert (total, capacity, case.params["past"], case.params["new"]) == (33, 33, [1], 32)
    assert case["past_key"].shape == (1, 2, 33, 64) and int(case["seqlens_k"][0]) + 1 == total
    assert all(-(-total // step) * step > capacity for step in (4, 8, 16))
    assert kernel.finding_examples("reference", config) == []
    findings = kernel.known_finding("sanitize", config)
    assert all(f.text == FLASH_READS_PAST_CACHE and f.finding_id == "ort-flash-reads-past-cache" for f in findings)
    assert [f.reasons for f in findings] == [("out-of-bounds read of storage buffer present_key:",),
                                             ("out-of-bounds read of storage buffer present_value:",)]


@pytest.mark.webgpu
@pytest.mark.xfail(strict=True, reason=(
    "§18.7: FlashAttention's select loads the last key step's K and V rows past the end of present_key and "
    "present_value (lines 66 and 76 of the f32 program) where the cache buffer ends within the step: 224 "
    "out-of-bounds reads of each for a total of 33 in 33 rows at 8 lanes"))
def test_orts_flash_program_reads_only_the_cache_rows_it_has(ort):
    """The program as shipped under sanitize (on wgpu, whose Naga compiles the instrumented program
    in seconds), passed as `--wgsl` (no known finding); the kernel's finding example runs first."""
    kernel = OrtFlashPrefill()
    result = _reference(OrtFlashPrefill, FLASH_CONFIG, examples=3, check_name="sanitize",
                        wgsl=kernel.wgsl(kernel.config(FLASH_CONFIG)), implementation="wgpu")
    assert result.verdict == Verdict.PASS, result.reason


@pytest.mark.webgpu
def test_the_flash_programs_reads_past_the_cache_are_known_and_reproduced(ort):
    """The shipped program under sanitize: KNOWN with §18.7 reproduced, the reason naming both loads.
    The finding example runs first: its last step of s lanes loads rows 32..32+s-1 of 33, so s - 1
    rows of 16 vec4s past the end for each of KV head 1's 2 query heads (224 reads at lavapipe's 8)."""
    import re

    result = _reference(OrtFlashPrefill, FLASH_CONFIG, examples=3, check_name="sanitize", implementation="wgpu")
    assert result.verdict == Verdict.KNOWN, result.reason
    assert result.finding_reproduced is True
    assert result.finding.splitlines()[0] == FLASH_READS_PAST_CACHE.splitlines()[0]
    for buffer, line in (("present_key", 66), ("present_value", 76)):
        # 1056 vec4s: 2 KV heads of 33 rows of 16
        assert re.search(rf"out-of-bounds read of storage buffer {buffer}: index \d+ is not below the length 1056 ",
                         result.reason)
        assert f"at line {line} \"let val = select(q_value_t(0), {buffer}[offset + idx]," in result.reason
    counts = re.findall(r"\((\d+) accesses in all\)", result.reason)
    assert len(counts) == 2 and counts[0] == counts[1]
    assert int(counts[0]) in {2 * (step - 1) * 16 for step in (4, 8, 16)}


@pytest.mark.webgpu
def test_orts_flash_program_loading_its_rows_under_an_if_passes_sanitize(ort):
    """The control: each K and V row loaded only below the sequence's total (an `if` where ORT has
    a `select`; the folder's fix) makes no read past the cache buffer."""
    kernel = OrtFlashPrefill()
    wgsl = with_loads_under_an_if(kernel.wgsl(kernel.config(FLASH_CONFIG)))
    result = _reference(OrtFlashPrefill, FLASH_CONFIG, examples=3, check_name="sanitize", wgsl=wgsl,
                        implementation="wgpu")
    assert result.verdict == Verdict.PASS, result.reason


def test_the_flash_program_is_in_ci_at_32_lanes_and_left_out_of_quick_with_a_clear_line():
    """Every emulated width is a new FlashAttention program of minutes' first compile on lavapipe:
    quick plans none of ort.attention.flash (ort.gqa's flash phase runs the program end to end), a
    gate asked for it alone says so in one line, exit 2; ci plans the f32 config whose capture
    ships, its checks at the adapter's own width and `reference` again at 32 lanes alone, the width
    a bug of wide subgroups needs (Kernel.gate_subgroup_widths; tests/fixtures/mutants)."""
    import subprocess
    import sys

    from verify.plan import gate_jobs
    from verify.profiles import get_profile

    jobs, skipped = gate_jobs(["ort.attention.flash"], profile=get_profile("quick"), seed=0, out_dir=None,
                              time_limit=None, implementations=["dawn"])
    assert (jobs, skipped) == ([], [])
    result = subprocess.run([sys.executable, "-m", "verify", "gate", "--profile", "quick", "--kernels",
                             "ort.attention.flash", "--out", "unused"], capture_output=True, text=True)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "nothing to verify: ort.attention.flash offers no configs in the quick profile" in result.stderr
    jobs, skipped = gate_jobs(["ort.attention.flash"], profile=get_profile("ci"), seed=0, out_dir=None,
                              time_limit=None, implementations=["dawn"])
    assert not skipped
    assert {(j.config["dtype"], j.config["head_size"], j.config["num_heads"], j.config["kv_num_heads"])
            for j in jobs} == {("f32", 64, 4, 2)}
    assert [(j.check, j.subgroup_width) for j in jobs if j.subgroup_width] == [("reference", 32)]
    assert {j.check for j in jobs if not j.subgroup_width} == {"reference", "determinism", "sanitize"}
