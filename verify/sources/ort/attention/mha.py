"""`ort.mha`: ONNX Runtime Web 1.30's `com.microsoft.MultiHeadAttention`, end to end.

MultiHeadAttention is the attention op of encoder and encoder-decoder models (BERT-style
encoders, Whisper's decoder cross-attending to the encoder's keys), and of decoders exported
without GroupQueryAttention. onnxruntime-web 1.30 runs it on the programs GroupQueryAttention
uses (docs/ort-attention.md §2): `CopyKVCache` (the past and the new keys into present_key /
present_value, or the new keys alone into the attention's key buffer), then the split-reduce
pair `FlashAttentionDecodeQKV` / `FlashAttentionDecodeVxReduce` below 32 query tokens and
`FlashAttention` from 32, in variants that take the lengths from uniforms instead of
`seqlens_k`: every sequence of a batch has the same lengths.

What a case draws (`mha_cases`): a batch of 1-3 sequences, and

- with a past (`has_past=1`): P cached keys (P up to max_past, with the 64-key tile edges), S new
  tokens by phase, the new keys as many as the queries (self-attention); the present cache
  [B, N, P + S, H] must hold the past rows then the new ones, bit for bit;
- without (`has_past=0`): S queries over L keys; with `unidirectional=0` L is drawn apart from S
  (cross-attention: L from 1 to max_past + S, tile edges included), with `unidirectional=1`
  L = S (causal self-attention over the new tokens).

`unidirectional=1` masks keys past each query's position P + i (references.group_query
.visible_keys); `unidirectional=0` attends every key. `attention_bias` (full [B, N, S, P + L] or
shared [1, 1, S, P + L], N(0, 2²) or a mask of 0 and -10000, as encoders pass padding) is added to
the scores. Its `key_padding_mask` input 1.30 refuses on WebGPU ("not implemented for webgpu"). The
output is judged against references.group_query.attend under verify.budgets.ort_attention on the
path ORT took (the same arithmetic as GroupQueryAttention's: `split` or `flash`), and each launch
checks that ORT dispatched the programs the rule predicts.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from verify.budgets.expected import Expected
from verify.budgets.ort_attention import output_budget, score_errors
from verify.budgets.roundoff import numpy_dtype
from verify.cases import Case
from verify.kernels.contract import ConfigKey
from verify.references.group_query import attend, visible_keys
from verify.results.record import KnownFinding
from verify.sources.ort.attention.cases import (
    BIAS_KINDS,
    BIAS_MASKED,
    BUDGET_PATH,
    GQA_PROGRAMS,
    Q_SPREADS,
    _new_tokens,
    _past_lengths,
    _values,
)
from verify.sources.ort.attention.launch import SPLIT_REDUCE_BELOW
from verify.sources.ort.attention.models import MultiHeadAttentionModel
from verify.sources.ort.attention.sessions import (
    ATTENTION_BIAS,
    DTYPE,
    FLASH_LOOP_VAR,
    HEAD_SIZE,
    MAX_PAST,
    NUM_HEADS,
    OrtAttentionKernel,
    _cache_expected,
)

MHA_PHASE = ConfigKey("phase", "decode", ("decode", "prefill", "flash"),
                      "query tokens per sequence: decode 1, prefill 2-31 (the split-reduce pair), flash 32-48 "
                      "(FlashAttention)")
UNIDIRECTIONAL = ConfigKey("unidirectional", 0, (0, 1), "causal: query i attends keys up to its position P + i")
HAS_PAST = ConfigKey("has_past", 1, (0, 1), "past_key/past_value inputs (and present_key/present_value outputs); "
                     "without, S queries attend L keys of their own (L drawn apart from S when not causal)")


def mha_path(queries: int) -> str:
    """ORT 1.30's choice for MultiHeadAttention (flash_attention.cc): the split-reduce pair below
    32 query tokens, FlashAttention from 32, causal or not, with a past or without."""
    return "split" if queries < SPLIT_REDUCE_BELOW else "flash"


def _kv_lengths(config: dict, new: int):
    """Keys per sequence without a past: as many as the queries when causal, else any from 1 to
    max_past + new, the 64-key tile edges included."""
    if config["unidirectional"]:
        return st.just(new)
    return _past_lengths(config["max_past"] + new).map(lambda length: max(length, 1))


@st.composite
def mha_cases(draw, config: dict) -> Case:
    """MultiHeadAttention cases: a batch of 1-3 sequences of one shape (MHA has no per-sequence
    lengths), S queries by phase, a past of P rows or L keys of their own, flat to sharp queries."""
    t = numpy_dtype(config["dtype"])
    new = draw(_new_tokens(config["phase"]))
    batch = draw(st.integers(1, 3))
    past = draw(_past_lengths(config["max_past"])) if config["has_past"] else 0
    keys = new if config["has_past"] else draw(_kv_lengths(config, new))
    seed = draw(st.integers(0, 2**32 - 1))
    spread = draw(st.sampled_from(Q_SPREADS))
    rng = np.random.default_rng(seed)
    width = config["num_heads"] * config["head_size"]
    arrays = {"query": _values(rng, (batch, new, width), spread, t), "key": _values(rng, (batch, keys, width), 1.0, t),
              "value": _values(rng, (batch, keys, width), 1.0, t)}
    if config["has_past"]:
        shape = (batch, config["num_heads"], past, config["head_size"])
        arrays["past_key"], arrays["past_value"] = _values(rng, shape, 1.0, t), _values(rng, shape, 1.0, t)
    if config["attention_bias"] != "none":
        full = config["attention_bias"] == "full"
        shape = (batch if full else 1, config["num_heads"] if full else 1, new, past + keys)
        kind = draw(st.sampled_from(BIAS_KINDS))
        bias = rng.standard_normal(shape) * 2.0 if kind == "normal" else np.where(rng.random(shape) < 1 / 3,
                                                                                   BIAS_MASKED, 0.0)
        arrays["attention_bias"] = bias.astype(t)
    return Case(arrays, {"batch": batch, "new": new, "keys": keys, "past": past, "q_spread": spread, "seed": seed,
                         "path": mha_path(new)})


class OrtMha(OrtAttentionKernel):
    """ORT's MultiHeadAttention session: output, and with a past the present cache it returns."""

    name = "ort.mha"
    summary = ("ONNX Runtime Web 1.30 (WebGPU provider on Dawn) running one com.microsoft.MultiHeadAttention node: "
               "self-attention with a past, causal or not, and cross-attention over keys of another length")
    config_keys = (DTYPE, HEAD_SIZE, NUM_HEADS, MHA_PHASE, UNIDIRECTIONAL, HAS_PAST, ATTENTION_BIAS, MAX_PAST)
    output_names = ("output", "present_key", "present_value")
    programs = GQA_PROGRAMS
    gate_shapes = {
        "quick": (dict(dtype="f32", num_heads=4),),
        "ci": (dict(dtype="f16", head_size=64, num_heads=8, phase="decode", unidirectional=1),
               dict(dtype="f32", head_size=64, num_heads=4, phase="prefill", has_past=0, attention_bias="full")),
        "nightly": (dict(dtype="f16", head_size=128, num_heads=16, phase="decode", unidirectional=1, max_past=4096),
                    dict(dtype="f16", head_size=64, num_heads=8, phase="prefill", has_past=0, max_past=1500,
                         attention_bias="shared"),
                    dict(dtype="f32", head_size=64, num_heads=4, phase="flash", unidirectional=1),
                    dict(dtype="f32", head_size=64, num_heads=4, phase="flash", has_past=0)),
    }

    def derive(self, config):
        return {}

    def validate(self, config):
        """Every combination of the keys is a model ORT runs (the keys' own bounds are checked
        where they are read); GroupQueryAttention's checks of heads and rotary do not apply."""

    def takes_flash(self, config) -> bool:
        return config["phase"] == "flash"

    def output_names_of(self, config) -> tuple[str, ...]:
        return self.output_names if config["has_past"] else ("output",)

    def model(self, config) -> MultiHeadAttentionModel:
        return MultiHeadAttentionModel(config["dtype"], config["num_heads"], config["head_size"],
                                       unidirectional=bool(config["unidirectional"]),
                                       has_past=bool(config["has_past"]), attention_bias=config["attention_bias"])

    def feeds(self, model, case):
        a = case.arrays
        return model.feeds(a["query"], a["key"], a["value"], a.get("past_key"), a.get("past_value"),
                           attention_bias=a.get("attention_bias"))

    def cases(self, config, profile):
        return mha_cases(config)

    def known_finding(self, check, config):
        """§18.2 on the flash path, under `reference`: MultiHeadAttention's FlashAttention variant
        declares the same loop-body score accumulators as GroupQueryAttention's."""
        if check == "reference" and self.takes_flash(config):
            return KnownFinding(FLASH_LOOP_VAR, outputs=("output",), finding_id="ort-flash-carried-scores")
        return None

    def expected(self, config, case):
        """Per sequence, references.group_query.attend of the S queries over the past rows and the
        new keys (every key, or up to each query's position when unidirectional); the present
        cache is the past then the new keys and values, bit for bit."""
        n, h = config["num_heads"], config["head_size"]
        batch, new, keys, past = case.params["batch"], case.params["new"], case.params["keys"], case.params["past"]
        path = BUDGET_PATH[case.params["path"]]
        total = past + keys
        visible = visible_keys(total, new) if config["unidirectional"] else np.ones((new, total), bool)
        scale = h ** -0.5
        out, budget = np.zeros((batch, new, n * h)), np.zeros((batch, new, n * h))
        present = {}
        for name in ("key", "value"):
            fresh = case[name].reshape(batch, keys, n, h).transpose(0, 2, 1, 3)
            present[name] = np.concatenate([case[f"past_{name}"], fresh], axis=2) if config["has_past"] else fresh
        for b in range(batch):
            q = case["query"][b].reshape(new, n, h)
            k, v = present["key"][b].astype(np.float64), present["value"][b].astype(np.float64)
            bias = None
            if "attention_bias" in case.arrays:  # [B or 1, N or 1, S, T] -> [S, N or 1, T]
                bias = case["attention_bias"][min(b, len(case["attention_bias"]) - 1)].transpose(1, 0, 2)
                bias = bias.astype(np.float64)
            o, logits2 = attend(q, k, v, visible, scale=scale, bias=bias)
            delta = score_errors(q, k, scale=scale, dtype=config["dtype"], path=path, bias=bias)
            out[b] = o.reshape(new, -1)
            budget[b] = output_budget(v, logits2, delta, dtype=config["dtype"], path=path).reshape(new, -1)
        t = config["dtype"]
        expected = [Expected.around("output", out, budget, t)]
        if config["has_past"]:
            exact = np.ones(present["key"].shape, bool)
            expected += [_cache_expected(f"present_{name}", present[name].astype(np.float64), 0.0, exact, t)
                         for name in ("key", "value")]
        return expected

    def features(self, case):
        return {"context": case.params["past"] + case.params["keys"], "new_tokens": case.params["new"]}
