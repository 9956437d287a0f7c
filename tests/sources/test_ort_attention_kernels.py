"""`ort.gqa` and `ort.paged_attention`: ONNX Runtime Web's attention sessions checked end to end.

What is proven without a GPU: the reference's rotation from cos/sin tables is references.rope's
NeoX and GPT-J rotation; the local window attends the last W keys; the dispatch rule names the
paths docs/ort-attention.md §2 gives; bad configs are usage errors; the budgets grow with the
model type's roundoff. With ORT on Dawn: the split-reduce and unfused configs PASS, and each
documented finding's config is KNOWN with its finding reproduced (docs/findings.md §18.1, §18.2).

Tests that run ORT need what scripts/setup.sh installs and skip, saying why, without it.
"""

from __future__ import annotations

import numpy as np
import pytest

from references.group_query import attend, rotate_with_tables, visible_keys
from references.rope import rotate_gptj, rotate_neox
from verify.budgets.ort_attention import output_budget, score_errors
from verify.errors import SetupError, UsageError
from verify.results.record import Verdict
from verify.sources.ort import programs
from verify.sources.ort.attention_kernels import (
    FLASH_LOOP_VAR,
    SOFTCAP_IGNORED,
    OrtGqa,
    OrtPagedAttention,
    gqa_path,
    paged_path,
    rotary_tables,
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


def test_attention_with_one_visible_key_returns_its_value():
    rng = np.random.default_rng(1)
    q, k, v = rng.standard_normal((1, 4, 8)), rng.standard_normal((2, 5, 8)), rng.standard_normal((2, 5, 8))
    o, logits2 = attend(q, k, v, visible_keys(5, 1, local_window_size=1), scale=0.3)
    assert np.array_equal(o[0], np.repeat(v[:, 4], 2, axis=0))
    assert np.isinf(logits2[..., :4]).all()


def test_the_dispatch_rule_names_each_path():
    assert [gqa_path(-1, 1, 100), gqa_path(-1, 31, 100), gqa_path(-1, 32, 100)] == ["split", "split", "flash"]
    assert [gqa_path(16, 1, 100), gqa_path(100, 1, 100), gqa_path(16, 40, 100)] == ["probs", "split", "probs"]
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


@pytest.mark.parametrize("path", ["split", "probs", "flash"])
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
@pytest.fixture(scope="module", autouse=True)
def ort_cache(tmp_path_factory):
    """One WGSL cache for this module's tests, away from the user's."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(programs.CACHE_ENV, str(tmp_path_factory.mktemp("ort-attention-wgsl")))
        yield


@pytest.fixture(scope="module")
def ort():
    from verify.sources.ort import runtime

    try:
        return runtime.shared_runtime()
    except SetupError as exc:
        pytest.skip(str(exc))


def _reference(kernel, config, examples=6):
    from verify.api import check

    (result,) = check(kernel, config, checks=["reference"], examples=examples, isolate=False, implementation="dawn")
    return result


@pytest.mark.webgpu
@pytest.mark.parametrize("kernel,config", [
    (OrtGqa, dict(dtype="f16", head_size=128, num_heads=8, kv_num_heads=2, do_rotary=1)),
    (OrtGqa, dict(dtype="f32", num_heads=8, kv_num_heads=1, phase="prefill", do_rotary=1, rotary_interleaved=1)),
    (OrtGqa, dict(dtype="f32", num_heads=4, kv_num_heads=4, local_window_size=32)),
    (OrtPagedAttention, dict(head_size=128, num_heads=8, kv_num_heads=2, do_rotary=1)),
    (OrtPagedAttention, dict(num_heads=4, kv_num_heads=1, phase="prefill", block_size=32, do_rotary=1,
                             rotary_interleaved=1)),
], ids=["gqa-f16-decode-rotary", "gqa-f32-prefill-gptj", "gqa-window", "paged-decode-rotary", "paged-prefill-gptj"])
def test_orts_attention_passes_where_no_finding_applies(ort, kernel, config):
    result = _reference(kernel, config)
    assert result.verdict == Verdict.PASS, result.reason
    assert result.finding is None and sum(result.launch_paths.values()) == result.examples


@pytest.mark.webgpu
@pytest.mark.parametrize("kernel,config,finding", [
    (OrtGqa, dict(dtype="f32", num_heads=4, kv_num_heads=2, softcap=2.0), SOFTCAP_IGNORED),
    (OrtGqa, dict(dtype="f32", num_heads=4, kv_num_heads=2, phase="flash"), FLASH_LOOP_VAR),
    (OrtPagedAttention, dict(num_heads=4, kv_num_heads=2, local_window_size=32), FLASH_LOOP_VAR),
], ids=["gqa-softcap", "gqa-flash", "paged-window-flash"])
def test_each_documented_finding_is_known_and_reproduced(ort, kernel, config, finding):
    """FlashAttention's first compile on lavapipe takes minutes (Mesa caches it)."""
    result = _reference(kernel, config, examples=3)
    assert result.verdict == Verdict.KNOWN, result.reason
    assert result.finding_reproduced is True and result.finding.splitlines()[0] == finding.splitlines()[0]
    assert result.failing_outputs == {"output"}
