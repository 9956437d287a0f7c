"""Apache TVM's prefill and token-tree kernels for WebGPU (verify.sources.tvm.attention.prefill): the bindings
and launch of TVM's web runtime, the cases, the budget and its chunked evaluation, the checks they
pass, the findings they fail (strict xfails: a TVM release that fixes one turns its test red), and
planted bugs the prefill checks catch."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, find, settings
from hypothesis.errors import NoSuchExample

from verify.budgets.metrics import compare
from verify.checks import get_check
from verify.checks.context import CheckContext
from verify.checks.runner import RunOptions, run_check
from verify.cli import main as verify_main
from verify.errors import UsageError
from verify.export.findings import with_extra_warp_guarded
from verify.kernels.attention import prefill_cases as pc
from verify.results.record import KnownFinding
from verify.kernels.attention.fastpath import DecodeInputs
from verify.kernels.attention.prefill_eval import evaluate, evaluate_plain
from verify.kernels.registry import get_kernel
from verify.sources.tvm import build as tvm_build
from verify.sources.tvm.attention.decode import EMPTY_LSE_BAND, EMPTY_MAX
from verify.sources.tvm.attention.prefill import (
    NUM_BLKS,
    TREE_EXTRA_WARP,
    TvmPrefill,
    TvmPrefillRagged,
    TvmSequencePrefill,
    sequence_tile_x,
)
from verify.wgsl import read_interface

PREFILL_KERNELS = ("tvm.prefill", "tvm.prefill_sliding_window", "tvm.prefill_ragged", "tvm.tree_attention",
                   "tvm.tree_attention_paged", "tvm.sequence_prefill")
needs_tvm = pytest.mark.skipif(tvm_build.installed_version() is None, reason="apache-tvm is not installed")
SMALL = dict(head_dim=64, qo_heads=8, kv_heads=2, dtype="f32")
LLAMA3 = dict(rope_scaling="llama3", rope_factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
              original_max_position=8192)


@pytest.fixture(scope="module", autouse=True)
def tvm_cache(tmp_path_factory):
    """One WGSL cache for this module's tests, away from the user's."""
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("tvm-wgsl")
        patch.setenv(tvm_build.CACHE_ENV, str(path))
        yield path


def check_record(device, name: str, check: str, examples: int, config=None, wgsl=None, profile="quick") -> dict:
    kernel = get_kernel(name)
    config = kernel.config(config or {})
    ctx = CheckContext(kernel, config, device, wgsl or kernel.wgsl(config), profile)
    return run_check(get_check(check), ctx, RunOptions(examples, seed=0, shrink=False)).result.to_dict()


def judged(device, kernel, config, case, wgsl=None):
    """Metrics by output name, the outputs, and whether every guard is intact."""
    launched = kernel.launch(device, wgsl or kernel.wgsl(config), config, case)
    metrics = {e.name: compare(launched.outputs[e.name], e) for e in kernel.expected(config, case)}
    return metrics, launched.outputs, all(launched.guard_intact.values())


def failures(metrics) -> list:
    return [m.message() for m in metrics.values() if not m.passed]


# -- bindings, PODArgs and schedules (docs/tvm.md §11) --------------------------------------------------
INTERFACES = {
    "tvm.prefill": ("batch_prefill_paged_kv_kernel",
                    ["k_rope_pos_offset", "length_info", "lse", "output", "page_indptr", "page_values", "pages", "q",
                     "q_indptr", "q_rope_position"],
                    ["batch_size", "causal", "k_rope_pos_offset_elem_offset", "length_info_elem_offset",
                     "page_indptr_elem_offset", "page_values_elem_offset", "pages_elem_offset", "q_indptr_elem_offset",
                     "q_rope_position_elem_offset", "rope_scale", "rope_theta", "rotary_mode", "sm_scale",
                     "packGridDimX"]),
    "tvm.prefill_ragged": ("batch_prefill_ragged_kv_kernel",
                           ["k", "k_rope_pos_offset", "kv_indptr", "lse", "output", "q", "q_indptr", "q_rope_position",
                            "v"],
                           ["batch_size", "causal", "k_rope_pos_offset_elem_offset", "kv_indptr_elem_offset",
                            "q_indptr_elem_offset", "q_rope_position_elem_offset", "rope_scale", "rope_theta",
                            "rotary_mode", "sm_scale", "packGridDimX"]),
    "tvm.tree_attention": ("batch_tree_attn_kernel",
                           ["k", "kv_indptr", "lse", "mask", "mn_indptr", "output", "q", "q_indptr", "q_rope_position",
                            "v"],
                           ["batch_size_plus_1", "kv_indptr_elem_offset", "mask_elem_offset", "mn_indptr_elem_offset",
                            "q_indptr_elem_offset", "q_rope_position_elem_offset", "rope_scale", "rope_theta",
                            "rotary_mode", "sm_scale", "packGridDimX"]),
    "tvm.tree_attention_paged": ("tree_attn_paged_kv_kernel",
                                 ["length_info", "lse", "output", "page_indptr", "page_values", "pages", "q", "q_indptr",
                                  "tree_order", "tree_order_indptr"],
                                 ["batch_size", "length_info_elem_offset", "page_indptr_elem_offset",
                                  "page_values_elem_offset", "q_indptr_elem_offset", "sm_scale",
                                  "tree_order_elem_offset", "tree_order_indptr_elem_offset", "packGridDimX"]),
}


@needs_tvm
@pytest.mark.parametrize("name", sorted(INTERFACES))
def test_prefill_kernel_binds_what_its_wgsl_declares(name):
    """Storage buffers by TVM's parameter names (sorted, as split_host_device.cc orders them), then
    PODArgs; the launch supplies every PODArgs field and binds every buffer."""
    kernel = get_kernel(name)
    interface = read_interface(kernel.wgsl(kernel.config(SMALL)))
    entry, storage, pod = INTERFACES[name]
    assert [b.name.removesuffix("_ptr") for b in interface.bindings] == storage + ["podArgs"]
    assert [f for f, _ in interface.structs["PODArgs"].fields] == pod
    assert interface.entry_points[0].name == entry
    offsets = {f for f in pod if f.endswith("_elem_offset")}
    from verify.sources.tvm.layout import offset_field

    assert {offset_field(n) for n in kernel.small_arrays} | ({"pages_elem_offset"} & offsets) == offsets


@needs_tvm
def test_sliding_window_prefill_has_the_plain_kernels_interface():
    plain, window = get_kernel("tvm.prefill"), get_kernel("tvm.prefill_sliding_window")
    a = read_interface(plain.wgsl(plain.config(SMALL)))
    b = read_interface(window.wgsl(window.config(dict(SMALL, window=16))))
    assert a.names == b.names and a.structs["PODArgs"].fields == b.structs["PODArgs"].fields


@needs_tvm
def test_sequence_prefill_passes_batch_tiles_as_a_host_subexpression():
    kernel = get_kernel("tvm.sequence_prefill")
    interface = read_interface(kernel.wgsl(kernel.config(SMALL)))
    fields = [f for f, _ in interface.structs["PODArgs"].fields]
    assert [b.name for b in interface.bindings] == ["k_ptr", "lse_ptr", "output_ptr", "q_ptr", "v_ptr", "podArgs"]
    assert [f for f in fields if not f.startswith("cse_v")] == ["batch_size", "kv_len", "qo_len", "packGridDimX"]
    assert len([f for f in fields if f.startswith("cse_v")]) == 1


def test_kv_cache_prefill_kernels_launch_a_fixed_grid():
    """(NUM_BLKS, H_kv) whatever the batch: never packed."""
    kernel = get_kernel("tvm.prefill")
    config = kernel.config(SMALL)
    for lengths in ([1], [40] * 4):
        case = pc.explicit_paged_case(config, lengths, lengths, causal=True)
        assert kernel.grid(config, case) == (NUM_BLKS, 2)
        assert kernel.launch_paths(config, case)[0] == "grid direct"


@needs_tvm
@pytest.mark.parametrize("dtype,head_dim", [(t, d) for t in ("f16", "f32") for d in (64, 80, 96, 128, 160, 192, 256)
                                            if not (t == "f16" and 152 <= d <= 248)])
def test_tree_schedule_runs_an_extra_warp_exactly_at_the_listed_head_dims(dtype, head_dim):
    """The loads are split for num_warps warps (2 where ceil(D/128) ceil(bits/16) >= 4, else 4;
    _kernel_common.py L652-658); the workgroup has more exactly at TREE_EXTRA_WARP."""
    kernel = get_kernel("tvm.tree_attention")
    wgsl = kernel.wgsl(kernel.config(dict(head_dim=head_dim, qo_heads=4, kv_heads=1, dtype=dtype)))
    warps = 2 if -(-head_dim // 128) * (2 if dtype == "f32" else 1) >= 4 else 4
    workgroup = read_interface(wgsl).entry_points[0].workgroup_size
    assert workgroup[0] == 32
    assert (workgroup[1] > warps) == ((dtype, head_dim) in TREE_EXTRA_WARP), workgroup


@pytest.mark.parametrize("name", ["tvm.tree_attention", "tvm.tree_attention_paged"])
def test_the_extra_warps_race_is_stated_exactly_where_the_extra_warp_runs(name):
    """On an NVIDIA GPU the stray stores race (docs/findings.md §14.1): determinism and
    page_permutation state it at the head dims with an extra warp, and nowhere else."""
    kernel = get_kernel(name)
    for dtype, head_dim in [("f32", 96), ("f32", 160), ("f32", 192), ("f32", 128), ("f16", 96), ("f16", 64)]:
        config = kernel.config(dict(head_dim=head_dim, dtype=dtype))
        for check in {"determinism", "page_permutation"} & set(kernel.checks):
            stated = kernel.known_finding(check, config)
            assert (stated is not None) == ((dtype, head_dim) in TREE_EXTRA_WARP), (check, dtype, head_dim)
            assert stated is None or "race" in stated.text.split("\n", 1)[0]
            assert stated is None or stated.finding_id == "tvm-tree-extra-warp"


@pytest.mark.parametrize("head_dim,dtype,tile", [(64, "f16", 32), (128, "f32", 16), (256, "f16", 16), (256, "f32", 8)])
def test_sequence_tile_is_tvms_row_tile(head_dim, dtype, tile):
    assert sequence_tile_x(head_dim, dtype) == tile


# -- cases --------------------------------------------------------------------------------------------------
def found(strategy, condition, examples=3000):
    """The first example of `strategy` meeting `condition`, from a fixed seed: a search that finds
    its example on one seed and not on another would make the test flaky."""
    return find(strategy, condition, settings=settings(max_examples=examples, database=None, derandomize=True,
                                                       suppress_health_check=list(HealthCheck)))


CONFIG16 = dict(SMALL, page_size=16)


def test_prefill_cases_draw_chunks_on_and_off_page_boundaries():
    cases = pc.paged_prefill_cases(CONFIG16, "ci", causal=True)
    history = lambda c: [kv - qo for qo, kv in zip(c.params["qo_lens"], c.params["kv_lens"]) if qo]
    on = found(cases, lambda c: any(h and h % 16 == 0 for h in history(c)))
    off = found(cases, lambda c: any(h % 16 not in (0,) and h > 16 for h in history(c)))
    assert any(h % 16 == 0 and h for h in history(on)) and any(h % 16 and h > 16 for h in history(off))


def test_prefill_cases_mix_single_tokens_with_long_prompts_and_empty_sequences():
    cases = pc.paged_prefill_cases(CONFIG16, "ci", causal=True)
    mixed = found(cases, lambda c: 1 in c.params["qo_lens"] and max(c.params["qo_lens"]) >= 9
                  and 0 in c.params["qo_lens"])
    assert 1 in mixed.params["qo_lens"] and 0 in mixed.params["qo_lens"] and max(mixed.params["qo_lens"]) >= 9


def test_prefill_cases_put_tile_tails_where_the_group_does_not_divide_the_tile():
    """G = 7: a chunk of qo_len tokens fills 7 qo_len rows; cases end one row past a 16-row tile."""
    config = dict(CONFIG16, qo_heads=14, kv_heads=2)
    case = found(pc.paged_prefill_cases(config, "ci", causal=True), lambda c: any(
        q * 7 % 16 in (1, 2, 3, 4, 5, 6) and q * 7 > 16 for q in c.params["qo_lens"]))
    assert any(q * 7 > 16 and q * 7 % 16 for q in case.params["qo_lens"])
    assert {3, 5} <= set(pc.special_q_lens(7, 40))  # ceil(16/7) = 3, ceil(32/7) = 5


def test_paged_cases_poison_spare_pages_and_unused_slots():
    case = found(pc.paged_prefill_cases(CONFIG16, "ci", causal=False),
                 lambda c: c["pages"].shape[0] > c["page_values"].size >= 2)
    unused = np.setdiff1d(np.arange(case["pages"].shape[0]), case["page_values"])
    assert unused.size and np.isnan(case["pages"][unused]).all()
    assert not np.array_equal(case["page_values"], np.sort(case["page_values"])) or case["page_values"].size < 3


def test_ragged_cases_have_empty_sequences_on_either_side():
    cases = pc.ragged_prefill_cases(dict(SMALL), "ci", causal=False, v_head_dim=64)
    case = found(cases, lambda c: 0 in c.params["kv_lens"] and 0 in c.params["qo_lens"])
    assert np.any(np.diff(case["kv_indptr"]) == 0) and np.any(np.diff(case["q_indptr"]) == 0)


@pytest.mark.parametrize("shape", pc.TREE_SHAPES)
def test_tree_cases_draw_every_shape_with_queries_on_the_last_nodes(shape):
    case = found(pc.tree_cases(CONFIG16, "ci", paged=True),
                 lambda c: shape in c.params["trees"] and max(c.params["tree_sizes"]) >= 3
                 and any(q < n for q, n in zip(c.params["qo_lens"], c.params["tree_sizes"])))
    parents = case["token_tree_parent_ptr"]
    assert np.all(parents < np.arange(parents.size) + 1)
    if shape == "forest":
        assert case.params["trees"].count("forest") >= 1


def test_chunk_split_rebuilds_the_whole_prefill_row_order():
    case = found(pc.paged_prefill_cases(CONFIG16, "ci", causal=True), lambda c: sum(c.params["qo_lens"]) >= 6)
    split = pc.split_chunk(case, "paged")
    assert split.first["q"].shape[0] and split.second["q"].shape[0]
    assert np.array_equal(split.assemble(split.first["q"], split.second["q"]), case["q"])
    for b, (cut, context) in enumerate(zip(split.first.params["qo_lens"], split.first.params["kv_lens"])):
        qo, kv = case.params["qo_lens"][b], case.params["kv_lens"][b]
        assert context == kv - qo + cut  # the context as it stood when the first rows ran


def test_prefill_values_draw_only_the_rows_each_sequence_holds():
    """K and V come back padded to the longest context and zero past each sequence's own, for every
    value kind; a kind's structure holds per sequence (equal_logits: one key direction per sequence
    and head; rising: the ramp restarts at each sequence's first row)."""
    rng = np.random.default_rng(3)
    qo_lens, kv_lens = [2, 0, 5], [40, 7, 0]
    for kind in pc.PREFILL_VALUE_KINDS:
        q, k, v = pc.prefill_values(rng, kind, qo_lens, kv_lens, 8, 2, 64, 32, np.float32, 0.125)
        assert q.shape == (7, 8, 64) and k.shape == (3, 2, 40, 64) and v.shape == (3, 2, 40, 32)
        assert not k[1, :, 7:].any() and not v[1, :, 7:].any() and not k[2].any() and not v[2].any()
        assert np.all(np.abs(k[0]).sum(axis=-1) > 0) and np.all(np.abs(k[1, :, :7]).sum(axis=-1) > 0)
    _, k, _ = pc.prefill_values(rng, "equal_logits", qo_lens, kv_lens, 8, 2, 64, 32, np.float32, 0.125)
    assert np.abs(k[0] - k[0, :, :1]).max() < 0.02 and np.abs(k[0, :, 0] - k[1, :, 0]).max() > 0.1


def test_nightly_prefill_cases_keep_to_the_work_bound():
    """Nightly: prompts up to 4096 tokens and contexts up to 8192 rows, but query rows x heads x
    context rows of a case (a sequence without rows counting as one) within the sizes' bound."""
    from verify.kernels.attention.sizes import SIZES

    bound = SIZES("nightly").max_prefill_work
    config = dict(CONFIG16, qo_heads=32, kv_heads=8, head_dim=128)
    limits = pc.prefill_limits("nightly", config["qo_heads"])
    assert limits.max_q_len == 4096 and limits.max_context == 8192
    assert limits.cells * config["qo_heads"] <= bound < limits.max_q_len * limits.max_context
    for causal in (False, True):
        lengths = pc.prefill_lengths(limits, 4, causal=causal)
        # a causal chunk attends itself, so its rows are at most the bound's square root (362 here)
        long_prompt = found(lengths, lambda ql: ql[0].max() >= (256 if causal else 2048))
        long_context = found(lengths, lambda ql: ql[1].max() >= 6000)
        for qo, kv in (long_prompt, long_context):
            assert (np.maximum(qo, 1) * kv).sum() * config["qo_heads"] <= bound
    assert pc.prefill_limits("ci", 32).cells == 12 * 64  # ci and quick keep one maximal sequence


@pytest.mark.parametrize("head_dim,kv_heads,dtype", [(64, 8, "f32"), (96, 32, "f32"), (256, 8, "f16")])
def test_nightly_prefill_cases_fit_the_default_storage_binding(head_dim, kv_heads, dtype):
    """A case's paged K/V (every sequence's pages, each with its last page and a sliding window's
    offset, and the spare pages) fits WebGPU's default 128 MiB binding, which a device granting the
    defaults refuses past (a nightly draw of f32 contexts did); cases near the bound are drawn,
    none past it, and without the bound such cases are drawn."""
    config = dict(CONFIG16, qo_heads=kv_heads, kv_heads=kv_heads, head_dim=head_dim, dtype=dtype)
    row_bytes = pc.context_row_bytes(config)
    limits = pc.prefill_limits("nightly", config["qo_heads"], row_bytes)
    assert 0 < limits.max_rows < limits.max_batch * limits.max_context

    def pool_bytes(lengths):
        return (sum(-(-(int(n) + 45) // 16) * 16 for n in lengths[1] if n) + 3 * 16) * row_bytes

    for causal in (False, True):
        lengths = pc.prefill_lengths(limits, 1, causal=causal)
        found(lengths, lambda ql: ql[1].sum() >= min(limits.max_rows, limits.cells) * 3 // 4)  # it binds
        with pytest.raises(NoSuchExample):
            found(lengths, lambda ql: pool_bytes(ql) > pc.BINDING_BYTES, examples=1500)
    # Without the bound such cases are drawn (a causal batch of long chunks).
    unbound = pc.prefill_lengths(dataclasses.replace(limits, max_rows=0), 1, causal=True)
    assert pool_bytes(found(unbound, lambda ql: pool_bytes(ql) > pc.BINDING_BYTES)) > pc.BINDING_BYTES
    assert pc.prefill_limits("ci", 8, row_bytes).max_rows == 0  # ci's cases all fit: drawn as before


def test_the_gate_gives_prefill_kernels_the_sizes_examples():
    from verify.kernels.attention.sizes import SIZES
    from verify.profiles import get_profile

    for name in PREFILL_KERNELS:
        kernel = get_kernel(name)
        assert kernel.gate_examples(get_profile("nightly")) == SIZES("nightly").prefill_examples == 200
        assert kernel.gate_examples(get_profile("ci")) == get_profile("ci").examples
    assert get_kernel("tvm.decode").gate_examples(get_profile("nightly")) == get_profile("nightly").examples


@pytest.mark.parametrize("name", PREFILL_KERNELS)
def test_the_floor_bound_settles_only_cases_inside_the_floor(name):
    """clear_of_floor is a shortcut of within_floor: where it says True, the reference's largest
    logit of every row that sees anything is above the floor; it says True for ordinary values and
    nothing for a case whose logits reach the floor."""
    from verify.sources.tvm.attention.decode import FLOOR_MARGIN
    from verify.sources.tvm.attention.prefill import clear_of_floor

    kernel = get_kernel(name)
    config = kernel.config(kernel.ci_shapes[0])
    settled = 0
    for seed in range(12):
        case = found(kernel.raw_cases(config, "ci"), lambda c, s=seed: c.params["seed"] % 12 == s, examples=500)
        problem = kernel.problem(config, case)
        top = evaluate_plain(problem).top_logit2
        inside = bool(np.all(np.isneginf(top) | (top > EMPTY_MAX + FLOOR_MARGIN)))
        if clear_of_floor(problem):
            settled += 1
            assert inside, case.params
    assert settled >= 6
    if hasattr(kernel, "below_floor"):
        deep = kernel.below_floor(config, found(kernel.raw_cases(config, "ci"),
                                                lambda c: max(c.params.get("kv_lens", [1])) > 0), 600.0)
        assert not clear_of_floor(kernel.problem(config, deep)) and not kernel.within_floor(config, deep)


def test_the_floor_bounds_f16_squared_norms_from_above_in_float32():
    """clear_of_floor's float32 sums of f16 squares, lifted by 1 + 2 gamma, are never below the exact
    sums (computed here in exact rational arithmetic), and not above them by more than the sum's
    own rounding and that lift, on rows of f16's whole range: its largest values, subnormals, mixed magnitudes, zeros and 256-wide rows."""
    from fractions import Fraction

    from verify.sources.tvm.attention.prefill import _squared_norms

    rng = np.random.default_rng(7)
    finite = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    finite = finite[np.isfinite(finite)]
    rows = [rng.choice(finite, (64, width)) for width in (1, 2, 7, 64, 128, 256)]
    rows += [np.full((2, 256), np.float16(65504)), np.full((2, 128), np.float16(2.0**-24)), np.zeros((1, 64), np.float16),
             (rng.standard_normal((32, 128)) * 2.0 ** rng.integers(-20, 12, (32, 1))).astype(np.float16)]
    for x in rows:
        ours = _squared_norms(x)
        n = x.shape[-1]
        gamma_ = (n - 1) * 2.0**-24 / (1 - (n - 1) * 2.0**-24)
        for row, value in zip(x, ours):
            exact = sum(Fraction(float(v)) ** 2 for v in row)
            assert Fraction(float(value)) >= exact
            assert float(value) <= float(exact) * (1 + gamma_) * (1 + 2 * gamma_) * (1 + 2.0**-50)


# -- budget and its evaluation -----------------------------------------------------------------------------
def _blocks_attended(monkeypatch) -> list:
    """The row counts of the blocks references.prefill.attend is called with from now on."""
    from verify.references import prefill as reference

    blocks, attend = [], reference.attend
    monkeypatch.setattr(reference, "attend", lambda q, *rest: blocks.append(q.shape[0]) or attend(q, *rest))
    return blocks


def test_chunked_evaluation_equals_one_reference_call(monkeypatch):
    """The row blocks of prefill_eval give the plain reference's numbers and budgets."""
    kernel = TvmPrefillRagged()
    config = kernel.config(dict(SMALL, causal=1))
    case = found(kernel.raw_cases(config, "ci"), lambda c: max(c.params["qo_lens"]) >= 10 and
                 c.params["rotary_mode"] == 1)
    problem = kernel.problem(config, case)
    plain = evaluate_plain(problem)
    blocks = _blocks_attended(monkeypatch)
    chunked = evaluate(problem, plain_cells=8 * 40, min_rows=1)
    qo_lens = [n for n in case.params["qo_lens"] if n]
    assert max(blocks) < max(qo_lens) and len(blocks) > len(qo_lens)  # rows of a sequence in several blocks
    for name in ("o", "lse2", "top_logit2", "v_low", "v_high", "walked"):
        np.testing.assert_allclose(getattr(chunked, name), getattr(plain, name), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(chunked.o_budget, plain.o_budget, rtol=1e-9)
    np.testing.assert_allclose(chunked.lse_budget, plain.lse_budget, rtol=1e-9)


def test_the_budgets_products_per_kv_head_are_numpys_broadcast_products():
    from verify.budgets.attention import per_kv_head

    rng = np.random.default_rng(0)
    a, b = rng.random((3, 2, 4, 5)), rng.random((2, 5, 6))
    np.testing.assert_allclose(per_kv_head(a, b), a @ b[None], rtol=1e-14)


def test_a_batch_mostly_padding_is_evaluated_sequence_by_sequence(monkeypatch):
    """One reference call lays every sequence out to the longest context; where that is mostly
    padding (2 rows on 300 beside 30 on 30) the case goes sequence by sequence, with the same numbers
    and budgets; a batch of equal lengths stays one call."""
    from verify.kernels.attention import prefill_eval

    kernel = TvmPrefill()
    config = kernel.config(dict(SMALL, dtype="f16"))
    split = []
    by_sequence = prefill_eval._by_sequence
    monkeypatch.setattr(prefill_eval, "_by_sequence", lambda problem, cells, rows: split.append(cells) or
                        by_sequence(problem, cells, rows))
    mixed = kernel.problem(config, pc.explicit_paged_case(config, [2, 30], [300, 30], causal=True))
    plain, chunked = evaluate_plain(mixed), evaluate(mixed, plain_cells=150_000)
    assert split == [150_000]
    for name in ("o", "lse2", "top_logit2", "v_low", "v_high", "walked"):
        np.testing.assert_allclose(getattr(chunked, name), getattr(plain, name), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(chunked.o_budget, plain.o_budget, rtol=1e-9)
    np.testing.assert_allclose(chunked.lse_budget, plain.lse_budget, rtol=1e-9)
    equal = kernel.problem(config, pc.explicit_paged_case(config, [30, 30], [300, 300], causal=True))
    evaluate(equal, plain_cells=150_000)
    assert split == [150_000]


def test_prefill_budget_of_a_row_that_sees_its_whole_context_is_decodes():
    """A causal chunk's last row is a decode: the prefill budget adds only the -5e4 stand-ins, whose
    ~1e-40 vanish in float64 here, so the two derivations agree to float64 rounding (the same
    sums, associated by different matrix products)."""
    kernel = TvmPrefill()
    config = kernel.config(dict(SMALL, dtype="f16"))
    case = pc.explicit_paged_case(config, [5, 1, 3], [40, 17, 3], causal=True)
    ev = kernel.evaluation(config, case)
    decode_case, rows = pc.last_rows_as_decode(case, "paged")
    p = decode_case.params
    inputs = DecodeInputs(decode_case["q"], decode_case["pages"], decode_case["page_indptr"],
                          decode_case["page_values"], decode_case["length_info"], decode_case["k_rope_pos_offset"],
                          decode_case["q_rope_position"], sm_scale=p["sm_scale"], rotary_mode=0, rope_theta=1e4,
                          rope_scale=1.0, sliding_window=False, qkv_dtype="f16", page_size=16)
    result = inputs.reference()
    o_budget, lse_budget = inputs.budget(result)
    np.testing.assert_allclose(ev.o[rows], result.o, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(ev.o_budget[rows], o_budget, rtol=1e-12)
    np.testing.assert_allclose(ev.lse_budget[rows], lse_budget, rtol=1e-12)


@pytest.mark.parametrize("kernel_class, overrides", [(TvmPrefill, dict(causal=1)), (TvmPrefill, dict(causal=0)),
                                                     (TvmPrefillRagged, dict(causal=1))])
def test_the_last_rows_expected_alone_are_the_whole_cases_rows(kernel_class, overrides):
    """prefill_vs_decode evaluates only the rows it compares (prefill_cases.last_rows): their
    bounds, budgets and conventions are the whole case's rows', to float64 rounding, with rope on
    and off, a sequence without query rows among them."""
    from verify.kernels.attention.checks import _rows_of

    kernel = kernel_class()
    config = kernel.config(dict(SMALL, **overrides))
    checked = 0
    for rotary in (0, 1):
        case = found(kernel.raw_cases(config, "ci"), lambda c, r=rotary: c.params["rotary_mode"] == r and
                     max(c.params["qo_lens"]) >= 3 and 0 in c.params["qo_lens"] and max(c.params["kv_lens"]) > 0)
        _, rows = kernel.decode_view(config, case)
        whole = [_rows_of(e, rows[rows >= 0]) for e in kernel.expected(config, case)]
        alone = kernel.last_rows_expected(config, case)
        for w, a in zip(whole, alone, strict=True):
            assert w.name == a.name and w.lo.shape == a.lo.shape == (int((rows >= 0).sum()),) + w.lo.shape[1:]
            for field in ("lo", "hi", "budget"):
                np.testing.assert_allclose(getattr(a, field), getattr(w, field), rtol=1e-9, atol=1e-300)
            np.testing.assert_array_equal(a.convention, w.convention)
        checked += 1
    assert checked == 2


@pytest.mark.parametrize("kernel_class, overrides", [(TvmPrefill, dict(causal=1)), (TvmPrefill, dict(causal=0)),
                                                     (TvmPrefillRagged, dict(causal=1)),
                                                     (TvmSequencePrefill, dict(causal=1))])
def test_a_chunk_on_the_whole_context_has_the_whole_prefills_budgets(kernel_class, overrides):
    """causal_split takes the budgets of a chunk that runs on the whole context (the second; the
    first too without the causal mask) from the whole prefill's rows rather than evaluating it:
    they are the same rows seeing and walking the same columns, so the numbers agree to float64
    rounding, conventions (rows that see nothing) included; a first chunk on a cut context is
    evaluated, and its budgets differ (it walks fewer columns)."""
    kernel = kernel_class()
    config = kernel.config(dict(SMALL, **overrides))
    rows = (lambda c: c.params["qo_len"]) if kernel_class is TvmSequencePrefill else \
        (lambda c: max(c.params["qo_lens"]))
    case = found(kernel.raw_cases(config, "ci"), lambda c: rows(c) >= 6)
    split = kernel.split_chunk(config, case)
    whole = kernel.expected(config, case)
    on_whole = 0
    for index, part in enumerate((split.first, split.second)):
        own = kernel.expected(config, part)
        for w, p in zip(whole, own, strict=True):
            taken = split.rows_of(np.broadcast_to(w.budget, w.lo.shape), index)
            if split.on_whole_context(index):
                np.testing.assert_allclose(taken, np.broadcast_to(p.budget, p.lo.shape), rtol=1e-9, atol=1e-300)
                np.testing.assert_allclose(split.rows_of(w.lo, index), p.lo, rtol=1e-12, atol=1e-300)
        on_whole += split.on_whole_context(index)
    assert on_whole == (1 if overrides["causal"] else 2)


# -- TVM's kernels under the checks ----------------------------------------------------------------------------
PASSING = [
    ("tvm.prefill", dict(SMALL, causal=1), ("reference", "causal_split", "prefill_vs_decode", "page_permutation")),
    ("tvm.prefill", dict(head_dim=128, qo_heads=14, kv_heads=2, dtype="f16", causal=0), ("reference",)),
    ("tvm.prefill", dict(head_dim=128, qo_heads=32, kv_heads=8, dtype="f16", causal=1, **LLAMA3), ("reference",)),
    ("tvm.prefill_sliding_window", dict(SMALL, qo_heads=6, causal=1, window=16), ("reference", "page_permutation")),
    ("tvm.prefill_sliding_window", dict(SMALL, dtype="f16", causal=0), ("reference",)),
    ("tvm.prefill_ragged", dict(SMALL, causal=1), ("reference", "causal_split", "prefill_vs_decode")),
    ("tvm.prefill_ragged", dict(head_dim=192, v_head_dim=128, qo_heads=4, kv_heads=4, dtype="f32", causal=1),
     ("reference",)),
    ("tvm.tree_attention", dict(SMALL, dtype="f16"), ("reference",)),
    ("tvm.tree_attention_paged", SMALL, ("reference", "page_permutation")),
    ("tvm.sequence_prefill", dict(SMALL, qo_heads=6), ("reference", "causal_split")),
    ("tvm.sequence_prefill", dict(SMALL, dtype="f16", causal=0), ("reference",)),
]


@pytest.mark.webgpu
@needs_tvm
@pytest.mark.parametrize("name,config,checks", PASSING, ids=[f"{n}-{i}" for i, (n, _, _) in enumerate(PASSING)])
def test_tvm_prefill_kernel_passes(webgpu_device, name, config, checks):
    for check in checks:
        record = check_record(webgpu_device, name, check, examples=6, config=config)
        assert record["verdict"] == "pass", f"{check}: {record['reason']}"
        assert record["examples"] == 6


@pytest.mark.webgpu
@needs_tvm
def test_a_chunked_prefill_of_several_sequences_matches_the_reference(webgpu_device):
    """Unequal chunks, histories on and off page boundaries, a single token, more tiles than the
    16 workgroups (each walks tiles bx, bx + 16, ...)."""
    kernel = get_kernel("tvm.prefill")
    config = kernel.config(dict(SMALL, qo_heads=6, causal=1))
    case = pc.explicit_paged_case(config, [70, 1, 16, 0, 9], [86, 33, 16, 7, 26], causal=True)
    metrics, outputs, intact = judged(webgpu_device, kernel, config, case)
    assert intact and not failures(metrics), failures(metrics)
    assert sum(-(-q * 3 // 16) for q in case.params["qo_lens"]) > NUM_BLKS


@pytest.mark.webgpu
@needs_tvm
def test_a_sequence_without_context_is_output_zero_and_lse_minus_5e4(webgpu_device):
    """No pages, no mask: the kernel runs no tile and stores its initial state, O = 0, lse = -5e4."""
    kernel = get_kernel("tvm.prefill")
    config = kernel.config(dict(SMALL, causal=0))
    case = pc.explicit_paged_case(config, [2, 3], [0, 21], causal=False)
    metrics, outputs, _ = judged(webgpu_device, kernel, config, case)
    assert not failures(metrics), failures(metrics)
    assert not outputs["output"][:2].any() and np.all(outputs["lse"][:2] == np.float32(EMPTY_MAX))


@pytest.mark.webgpu
@needs_tvm
def test_window_rows_that_see_nothing_follow_tvms_convention(webgpu_device):
    """W = 4: chunk rows i >= 3 see no cached row. TVM stores lse = -5e4 + log2(1 + n) and the mean of
    the hidden V rows (not 0); the contract holds them to EMPTY_LSE_BAND and to V's range, and
    a row that sees something to the reference."""
    kernel = get_kernel("tvm.prefill_sliding_window")
    config = kernel.config(dict(SMALL, causal=1, window=4))
    case = pc.explicit_paged_case(config, [8], [20], causal=True)
    last = case["length_info"]
    case = case.replace({"length_info": np.stack([last, 0 * last, 0 * last]).astype(np.int32)})
    metrics, outputs, _ = judged(webgpu_device, kernel, config, case)
    assert not failures(metrics), failures(metrics)
    ev = kernel.evaluation(config, case)
    assert ev.sees_nothing[3:].all() and not ev.sees_nothing[:3].any()
    lo, hi = EMPTY_LSE_BAND
    assert np.all((outputs["lse"][3:] >= lo) & (outputs["lse"][3:] <= hi))
    assert np.abs(outputs["output"][3:]).max() > 0.01  # a mean of hidden rows, not decode's 0


# -- findings ---------------------------------------------------------------------------------------------------
KNOWN = {("tvm.prefill", "below_floor"): "TVM's -inf is -5e4",
         ("tvm.prefill_ragged", "below_floor"): "TVM's -inf is -5e4",
         ("tvm.tree_attention", "sanitize"): "read the tree's mask past its last node",
         ("tvm.tree_attention_paged", "sanitize"): "read the tree's mask past its last node",
         ("tvm.sequence_prefill", "packed_grid"): "TVM's packed grid runs one workgroup too many"}
EXTRA_WARP = {"reference", "implementations", "sanitize", "determinism", "page_permutation"}


@pytest.mark.parametrize("name", PREFILL_KERNELS)
def test_known_findings_are_the_documented_failures(name):
    """Each finding is stated for exactly its checks (and, for the extra warp, head dims); its
    evidence names tests that exist."""
    kernel = get_kernel(name)
    tests = Path(__file__).parent
    for dims in (dict(SMALL), dict(SMALL, head_dim=96)):
        config = kernel.config(dims)
        for check in kernel.checks:
            finding = kernel.known_finding(check, config)
            tree_96 = "tree" in name and dims["head_dim"] == 96 and check in EXTRA_WARP
            if (name, check) not in KNOWN and not tree_96:
                assert finding is None, (check, dims)
                continue
            stated = KnownFinding.all_of(finding)
            assert all(f.finding_id for f in stated), [f.headline for f in stated]
            texts = "\n".join(dict.fromkeys(f.text for f in stated))
            assert any(KNOWN.get((name, check), "extra warp") in f.text.split("\n", 1)[0] for f in stated)
            if tree_96:
                assert "extra warp" in texts
            for text in dict.fromkeys(f.text for f in stated):
                evidence = text.split("\n", 1)[1]
                cited, module = [], None
                for word in evidence.split():
                    if "::" not in word:
                        continue
                    path, test = word.strip("(),.;").rsplit("::", 1)
                    module = (tests / Path(path).name) if path else module
                    cited.append((module, test))
                assert cited and all(f"def {test}(" in path.read_text() for path, test in cited), cited


def extra_warp_case():
    kernel = get_kernel("tvm.tree_attention")
    config = kernel.config(dict(head_dim=96, qo_heads=4, kv_heads=1, dtype="f32"))
    return kernel, config, pc.explicit_tree_case(config, [[-1, 0, 1, 2]])


@pytest.mark.webgpu
@needs_tvm
@pytest.mark.xfail(strict=True, reason=(
    "tree_attn's get_tile_size (tree_attn.py L514-522) pads the O tile of 16 rows to 18 for f32 D = 96, so the "
    "workgroup has 5 warps while the Q/K/V loads were split for 4 without a threadIdx.y guard (L524-532); the 5th "
    "warp stores past Q_smem/K_smem/V_smem (1536 elements), which lavapipe lands on tile row 15, dim 95: one chain "
    "[-1, 0, 1, 2], 4 heads on 1 kv head: query row 3, head 3 wrong in all 96 dims (|dO| up to 0.159, err/budget "
    "1.04e3; lse err/budget 1.66e3)"))
def test_tvm_tree_attention_is_right_at_head_dim_96_f32(webgpu_device):
    kernel, config, case = extra_warp_case()
    metrics, _, _ = judged(webgpu_device, kernel, config, case)
    assert not failures(metrics), failures(metrics)


@pytest.mark.webgpu
@needs_tvm
def test_guarding_the_extra_warp_fixes_tvms_tree_kernels(webgpu_device):
    kernel, config, case = extra_warp_case()
    fixed = with_extra_warp_guarded(kernel.wgsl(config))
    metrics, _, _ = judged(webgpu_device, kernel, config, case, wgsl=fixed)
    assert not failures(metrics), failures(metrics)
    for name in ("tvm.tree_attention", "tvm.tree_attention_paged"):
        tree = get_kernel(name)
        tree_config = tree.config(dict(head_dim=96, qo_heads=8, kv_heads=2, dtype="f32"))
        record = check_record(webgpu_device, name, "reference", 6, tree_config,
                              wgsl=with_extra_warp_guarded(tree.wgsl(tree_config)))
        assert record["verdict"] == "pass", record["reason"]


@pytest.mark.webgpu
@needs_tvm
@pytest.mark.xfail(strict=True, reason=(
    "the tree mask reads tree_order[indptr[b] + row + tree_len - qo_len] for every row of a tile before testing the "
    "row against qo_len: a tree of one node reads index 2 of its 2-element mask (tile rows past the query)"))
def test_tvm_tree_attention_reads_only_its_trees_mask():
    from verify.gpu import open_device
    from verify.instrument import SanitizingDevice

    kernel = get_kernel("tvm.tree_attention")
    config = kernel.config(dict(SMALL, dtype="f16"))
    device = SanitizingDevice(open_device(limits=get_check("sanitize").device_limits(kernel, config)))
    kernel.launch(device, kernel.wgsl(config), config, pc.explicit_tree_case(config, [[-1]]))
    report = device.take_report()
    assert report.clean, report.messages()


@needs_tvm
@pytest.mark.xfail(strict=True, raises=UsageError, reason=(
    "apache-tvm 0.27's TIR CSE fails on Llama 3's rope frequency (two dependent Let bindings): tree_attn with "
    "llama3 scaling, f16 D = 64, 8 query heads on 2 kv heads: 'variable cse_vN has been used before definition'"))
def test_tvm_tree_attention_builds_with_llama3_scaling():
    kernel = get_kernel("tvm.tree_attention")
    assert "fn batch_tree_attn_kernel(" in kernel.wgsl(kernel.config(dict(SMALL, dtype="f16", **LLAMA3)))


@needs_tvm
def test_the_llama3_build_failure_is_tirs_cse():
    """The same factory call builds with TIR's common-subexpression elimination switched off."""
    import tvm

    build = tvm_build.tree_build(kv_heads=2, qo_heads=8, head_dim=64, dtype="f16", paged=False,
                                 rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192})
    with pytest.raises(UsageError, match="used before definition"):
        tvm_build.build_wgsl(build)
    with tvm.transform.PassContext(config={"tirx.disable_cse_tir": True}):
        assert "fn batch_tree_attn_kernel(" in tvm_build.build_wgsl(build)


@needs_tvm
def test_a_config_tvm_cannot_build_is_one_usage_line(capsys):
    args = ["show", "tvm.tree_attention", "--config", "head_dim=64,qo_heads=8,kv_heads=2,dtype=f16,rope_scaling=llama3"]
    assert verify_main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "common-subexpression" in err and "docs/findings.md §15" in err


@pytest.mark.webgpu
@needs_tvm
@pytest.mark.xfail(strict=True, reason=(
    "TVM's -inf is -5e4: with every visible logit below it, a causal row's max stays at -5e4 and each hidden "
    "(future) column weighs 2^0: rows store lse ~ -5e4 + log2(1 + n) and the mean of hidden V rows, where the "
    "reference is lse ~ -5e4 - 600 and a weighted mean of the visible rows"))
def test_tvm_prefill_attends_logits_below_its_floor(webgpu_device):
    kernel = get_kernel("tvm.prefill")
    config = kernel.config(SMALL)
    case = kernel.below_floor(config, pc.explicit_paged_case(config, [4], [20], causal=True), 600.0)
    assert not kernel.within_floor(config, case)
    metrics, _, _ = judged(webgpu_device, kernel, config, case)
    assert not failures(metrics), failures(metrics)


@pytest.mark.webgpu
@needs_tvm
def test_below_its_floor_a_causal_row_returns_the_mean_of_its_future(webgpu_device):
    """The finding's mechanism, measured: f32 D = 64 (16-column KV tiles), a 20-token chunk on its own
    20 rows, every logit below -5e4. Row 3 sees rows 0-3; its max stays at -5e4, so the 16 future
    rows 4-19 and the 12 padding columns of the two tiles weigh 1 each and the initial state 1:
    the output is sum(V[4..19]) / 29 and lse -5e4 + log2(29)."""
    from verify.references.paged_kv import gather_kv

    kernel = get_kernel("tvm.prefill")
    config = kernel.config(dict(SMALL, qo_heads=2, kv_heads=2))
    case = kernel.below_floor(config, pc.explicit_paged_case(config, [20], [20], causal=True), 600.0)
    outputs = kernel.launch(webgpu_device, kernel.wgsl(config), config, case).outputs
    _, v, _ = gather_kv(case["pages"], case["page_indptr"], case["page_values"], case["length_info"])
    future = v[0, :, 4:20].sum(axis=1) / 29  # [Hkv, D]
    np.testing.assert_allclose(outputs["output"][3], future, atol=1e-6)
    np.testing.assert_allclose(outputs["lse"][3], EMPTY_MAX + np.log2(29), rtol=0, atol=0.01)


@pytest.mark.webgpu
@needs_tvm
@pytest.mark.xfail(strict=True, reason=(
    "the sequence kernel's grid is (B * ceil(qo_len G / tile_x), H_kv); packed at the web runtime's threshold (here "
    "lowered to 2: x = 3 -> 2 x 2) the kernel returns early only where its flat index is > packGridDimX, so the "
    "workgroup at index 3 runs batch 3 of 3 and writes output and lse past their end"))
def test_tvm_sequence_prefill_runs_no_workgroup_past_its_packed_grid(webgpu_device):
    kernel = TvmSequencePrefill()
    config = kernel.config(dict(SMALL, causal=1))
    case = found(kernel.raw_cases(config, "quick"), lambda c: c["q"].shape[0] == 3 and kernel.tiles(config, c) == 1)
    assert kernel.grid(config, case)[0] == 3
    _, _, intact = judged(webgpu_device, kernel, config, case.replace(grid_limit=2))
    assert intact


# -- planted bugs: each prefill check catches what it is for ------------------------------------------------------
CAUSAL_TEST = ") <= (((((i32(threadIdx.y) * 8i)"
CHUNK_END = ") - q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]));"
PAGE_LOOKUP = "page_values_ptr[((iterator + cur_page_indptr_begin) + podArgs.page_values_elem_offset)]"
MUTANTS = {
    # the causal test is strict: each row misses its own column (the newest token)
    "causal_off_by_one": (CAUSAL_TEST, ") < (((((i32(threadIdx.y) * 8i)", ("prefill_vs_decode",)),
    # the chunk's end taken as its start: rows see their future (and the last tile's padding)
    "causal_sees_the_future": (CHUNK_END, ") - q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]));",
                               ("causal_split", "prefill_vs_decode")),
    # the page table is skipped: logical page p is read from physical page p
    "logical_page": (PAGE_LOOKUP, "(iterator + cur_page_indptr_begin)", ("page_permutation",)),
}


@pytest.mark.webgpu
@needs_tvm
@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_prefill_checks_catch_planted_bugs(webgpu_device, mutant):
    """Each planted bug fails the relation checks named for it, which do not read references/prefill.py:
    causal_split compares the kernel with itself on a split chunk, prefill_vs_decode with verify's
    decode kernel and references/decode.py. An off-by-one mask is the same in every chunk, so it is
    prefill_vs_decode's to catch (causal_split sees it only where it leaves a chunk's first row seeing
    nothing, whose TVM state depends on the context walked)."""
    find_text, replace_text, checks = MUTANTS[mutant]
    kernel = get_kernel("tvm.prefill")
    config = kernel.config(dict(SMALL, causal=1))
    source = kernel.wgsl(config)
    assert source.count(find_text) == 2
    wgsl = source.replace(find_text, replace_text)
    for check in checks:
        record = check_record(webgpu_device, "tvm.prefill", check, 20, config, wgsl=wgsl, profile="ci")
        assert record["verdict"] == "fail", f"{check} let {mutant} through"


def test_chunked_evaluation_of_the_cross_window_equals_one_reference_call(monkeypatch):
    """Rows [s, e) under the window W are rows [0, e - s) under W - s; rows past W - 1 see nothing."""
    from verify.sources.tvm.attention.prefill import TvmPrefillSlidingWindow

    kernel = TvmPrefillSlidingWindow()
    config = kernel.config(dict(SMALL, causal=1, window=7))
    case = found(kernel.raw_cases(config, "ci"), lambda c: max(c.params["qo_lens"]) >= 10)
    problem = kernel.problem(config, case)
    plain = evaluate_plain(problem)
    blocks = _blocks_attended(monkeypatch)
    chunked = evaluate(problem, plain_cells=8 * 24, min_rows=1)
    # rows in several blocks, and the blocks wholly past the window not evaluated
    assert max(blocks) < max(case.params["qo_lens"]) and sum(blocks) < sum(case.params["qo_lens"])
    assert plain.sees_nothing.any() and not plain.sees_nothing.all()
    for name in ("o", "lse2", "top_logit2"):
        np.testing.assert_allclose(getattr(chunked, name), getattr(plain, name), rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(chunked.o_budget, plain.o_budget, rtol=1e-9)
    np.testing.assert_allclose(chunked.lse_budget, plain.lse_budget, rtol=1e-9)
