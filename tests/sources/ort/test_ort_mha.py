"""`ort.mha`: ONNX Runtime Web's MultiHeadAttention session, end to end.

Without a GPU: the cases draw what the docstring of verify.sources.ort.attention.mha promises
(cross-attention over key counts other than the query count, the 64-key tile edges, causal
self-attention over the new tokens, one shape per batch); the expected output is plain softmax
attention written out here independently, causal or not; the present cache is the past then the
new rows; an attention bias adds to the scores. With ORT on Dawn: self-attention with a past
(causal or not), cross-attention and both with an attention bias pass;
the flash path is KNOWN with docs/findings.md §18.2 reproduced, as for GroupQueryAttention.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.results.record import Verdict
from verify.sources.ort.attention.mha import OrtMha, mha_cases, mha_path
from verify.sources.ort.attention.sessions import FLASH_LOOP_VAR


def _draw(config, count=150):
    drawn = []

    @settings(max_examples=count, database=None, deadline=None)
    @given(mha_cases(config))
    def collect(case):
        drawn.append(case)

    collect()
    return drawn


def test_cross_attention_draws_key_counts_apart_from_the_query_count_and_the_tile_edges():
    config = OrtMha().config(dict(dtype="f32", num_heads=2, phase="prefill", has_past=0, max_past=200))
    cases = _draw(config)
    keys = {case.params["keys"] for case in cases}
    assert any(case.params["keys"] != case.params["new"] for case in cases)
    assert keys & {63, 64, 65, 127, 128, 129}
    assert all("past_key" not in case.arrays and case.params["past"] == 0 for case in cases)
    assert {case.params["batch"] for case in cases} == {1, 2, 3}


def test_causal_self_attention_without_a_past_attends_the_new_tokens_only():
    config = OrtMha().config(dict(dtype="f32", num_heads=2, phase="prefill", has_past=0, unidirectional=1))
    assert all(case.params["keys"] == case.params["new"] for case in _draw(config, 30))


def test_the_path_is_the_split_pair_below_32_queries_and_flash_from_32():
    assert [mha_path(n) for n in (1, 31, 32, 48)] == ["split", "split", "flash", "flash"]


def _softmax_attention(q, k, v, causal_offset=None, bias=None):
    """q [S, H], k, v [T, H] (bias [S, T]) -> [S, H], written out without the references' helpers."""
    scores = (q @ k.T) / np.sqrt(q.shape[-1]) + (0.0 if bias is None else bias)
    if causal_offset is not None:
        scores = np.where(np.arange(k.shape[0])[None, :] <= causal_offset + np.arange(q.shape[0])[:, None], scores,
                          -np.inf)
    weights = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (weights / weights.sum(axis=1, keepdims=True)) @ v


@pytest.mark.parametrize("unidirectional,has_past,bias", [(0, 1, "none"), (1, 1, "full"), (0, 0, "shared"),
                                                         (1, 0, "none")])
@given(data=st.data())
@settings(max_examples=8, database=None, deadline=None)
def test_the_expected_output_is_softmax_attention_over_the_past_and_the_new_keys(unidirectional, has_past, bias, data):
    kernel = OrtMha()
    config = kernel.config(dict(dtype="f32", num_heads=2, head_size=64, phase="prefill", attention_bias=bias,
                                unidirectional=unidirectional, has_past=has_past, max_past=70))
    case = data.draw(mha_cases(config))
    expected = {item.name: item for item in kernel.expected(config, case)}
    n, h, new, keys, past = 2, 64, case.params["new"], case.params["keys"], case.params["past"]
    for b in range(case.params["batch"]):
        for head in range(n):
            channels = slice(head * h, (head + 1) * h)
            k = case["key"][b][:, channels].astype(np.float64)
            v = case["value"][b][:, channels].astype(np.float64)
            if has_past:
                k = np.concatenate([case["past_key"][b, head], k])
                v = np.concatenate([case["past_value"][b, head], v])
            added = None
            if bias != "none":
                added = case["attention_bias"][b if bias == "full" else 0, head if bias == "full" else 0]
            o = _softmax_attention(case["query"][b][:, channels].astype(np.float64), k, v,
                                   past + keys - new if unidirectional else None, added)
            assert np.allclose(expected["output"].reference[b][:, channels], o, rtol=1e-12, atol=1e-12)
    if has_past:
        present = expected["present_key"].reference
        assert present.shape == (case.params["batch"], n, past + keys, h)
        assert np.array_equal(present[:, :, :past], case["past_key"])
        assert np.array_equal(present[:, :, past:], case["key"].reshape(-1, keys, n, h).transpose(0, 2, 1, 3))
        assert expected["present_key"].exact.all() and expected["present_value"].exact.all()
    else:
        assert set(expected) == {"output"}
    assert np.all(expected["output"].budget > 0)


# -- with ORT on Dawn ---------------------------------------------------------------------------------
def _check(config, examples=6):
    from verify.api import check

    (result,) = check(OrtMha, config, checks=["reference"], examples=examples, isolate=False, implementation="dawn")
    return result


@pytest.mark.webgpu
@pytest.mark.parametrize("config", [
    dict(dtype="f16", num_heads=8, phase="decode", unidirectional=1),
    dict(dtype="f16", num_heads=4, phase="prefill", unidirectional=0),
    dict(dtype="f32", num_heads=4, phase="prefill", has_past=0),
    dict(dtype="f16", num_heads=4, phase="decode", has_past=0, max_past=600),
    dict(dtype="f32", num_heads=4, phase="prefill", has_past=0, attention_bias="full"),
    dict(dtype="f16", num_heads=8, phase="decode", unidirectional=1, attention_bias="shared"),
], ids=["decode-causal-past", "prefill-past", "cross-attention", "cross-attention-one-query", "cross-attention-bias",
        "decode-shared-bias"])
def test_orts_multi_head_attention_passes_on_its_split_path(ort, config):
    result = _check(config)
    assert result.verdict == Verdict.PASS, result.reason
    assert result.launch_paths == {"split": result.examples}


@pytest.mark.webgpu
def test_orts_multi_head_attention_meets_the_flash_programs_finding(ort):
    """MultiHeadAttention's FlashAttention variant carries §18.2 as GroupQueryAttention's does."""
    result = _check(dict(dtype="f32", num_heads=4, phase="flash", has_past=0), examples=3)
    assert result.verdict == Verdict.KNOWN, result.reason
    assert result.finding_reproduced is True and result.finding.splitlines()[0] == FLASH_LOOP_VAR.splitlines()[0]
    assert result.failing_outputs == {"output"}
