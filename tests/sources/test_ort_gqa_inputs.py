"""`ort.gqa`'s packed QKV and partial rotary (`packed_qkv`, `rotary_dim`).

Without a GPU: a packed model is fed each token's q, k and v side by side in `query`; the
reference rotates the first rotary_dim channels only and copies the rest, whose error bound is
the copy's; bad rotary_dim values are usage errors. With ORT on Dawn: packed QKV (ORT's
SplitPackedQKVWithRotaryEmbeddingAndCopyKV) and partial rotary pass on the split and prefill paths.
"""

from __future__ import annotations

import numpy as np
import pytest

from references.group_query import rotate_with_tables
from verify.budgets.ort_attention import rotation_error
from verify.errors import SetupError, UsageError
from verify.results.record import Verdict
from verify.sources.ort import programs
from verify.sources.ort.attention_cases import gqa_cases, rotary_tables
from verify.sources.ort.attention_kernels import OrtGqa, _rotated


def _minimal(strategy):
    from hypothesis import find, settings

    return find(strategy, lambda case: True, settings=settings(database=None, max_examples=10))


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
@pytest.fixture(scope="module", autouse=True)
def ort_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(programs.CACHE_ENV, str(tmp_path_factory.mktemp("ort-gqa-inputs-wgsl")))
        yield


@pytest.fixture(scope="module")
def ort():
    from verify.sources.ort import runtime

    try:
        return runtime.shared_runtime()
    except SetupError as exc:
        pytest.skip(str(exc))


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
