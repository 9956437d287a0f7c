"""What ort.gqa and ort.paged_attention draw, and which of ORT's paths each case takes.

The dispatch rule of onnxruntime-web 1.30 (docs/ort-attention.md §2) names a case's path when it
is drawn, so the budget follows ORT's arithmetic on that path and `launch`
(verify.sources.ort.attention.sessions) can check that ORT ran what the rule says. The cases are
Hypothesis strategies composed from small draws (cached lengths with the 64-key tile edges, new
tokens per phase, query spreads from flat to sharp), with unused cache rows and blocks poisoned.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from verify.budgets.roundoff import numpy_dtype
from verify.cases import Case
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.attention.launch import SPLIT_REDUCE_BELOW

#: The rotary tables are those of theta = 10000 (their values are inputs; the reference uses them as stored).
ROPE_THETA = 1e4
#: Most new tokens a flash case draws (past 32, each token costs the reference and ORT alike).
MAX_FLASH_TOKENS = 48

# -- what ORT runs -------------------------------------------------------------------------------------
GQA_PROGRAMS = {
    "split": ("FlashAttentionDecodeQKV", "FlashAttentionDecodeVxReduce"),
    "probs": ("AttentionProbs", "InPlaceSoftmax", "VxAttentionScore"),
    "flash": ("FlashAttention",),
}
PAGED_PROGRAMS = {
    "split": ("FlashAttentionPagedDecodeQKV", "FlashAttentionPagedDecodeVxReduce"),
    "flash": ("FlashAttention",),
    "paged_prefill": ("FlashAttentionPagedPrefill",),
    # onnxruntime-web 1.31.1, a local window below 32 new tokens: the blocks gathered, then
    # GroupQueryAttention's split decode over them (paged_path)
    "gathered_split": ("FlashAttentionDecodeQKV", "FlashAttentionDecodeVxReduce"),
}
ATTENTION_PROGRAMS = frozenset(p for programs in (*GQA_PROGRAMS.values(), *PAGED_PROGRAMS.values()) for p in programs)


def gqa_path(local_window_size: int, new: int, total: int, smooth_softmax: bool = False,
             fused_window: bool = False) -> str:
    """ORT 1.30's choice for GroupQueryAttention (flash_attention.cc CanApplyFlashAttention and
    ApplyFlashAttention): smooth_softmax, or a local window shorter than the batch's total
    length, takes the unfused programs (AttentionProbs, InPlaceSoftmax, VxAttentionScore);
    otherwise fewer than 32 new tokens take the split-reduce pair, 32 or more the FlashAttention
    program (head_sink goes with every path). `fused_window` (onnxruntime-web 1.31.1 on,
    runtime.fuses_local_window): a local window no longer leaves the fused programs, which mask
    it themselves; smooth_softmax still does (observed on every dispatch verify checks)."""
    if smooth_softmax or (not fused_window and 0 <= local_window_size < total):
        return "probs"
    return "split" if new < SPLIT_REDUCE_BELOW else "flash"


def paged_path(local_window_size: int, max_new: int, block_size: int, head_sink: bool = False,
               fused_window: bool = False) -> str:
    """ORT 1.30's choice for PagedAttention, as observed on the programs it dispatches (verify
    checks every run against it): a local window, or 32 new tokens or more in 16-token blocks or
    with head sinks, gather the blocks (PagedAttentionGatherKV) for FlashAttention; 32 or more in
    larger blocks take FlashAttentionPagedPrefill; fewer the paged split-reduce pair.
    `fused_window` (1.31.1 on): a local window below 32 new tokens gathers the blocks for the
    split decode instead (`gathered_split`)."""
    if local_window_size >= 0 and fused_window and max_new < SPLIT_REDUCE_BELOW:
        return "gathered_split"
    if local_window_size >= 0 or (max_new >= SPLIT_REDUCE_BELOW and (block_size == 16 or head_sink)):
        return "flash"
    return "paged_prefill" if max_new >= SPLIT_REDUCE_BELOW else "split"


#: The budget's arithmetic for each path (verify.budgets.ort_attention.PATHS): FlashAttentionPagedPrefill
#: sums q.k and runs its softmax in the model's type, not in f32 as FlashAttention does.
BUDGET_PATH = {"split": "split", "probs": "probs", "flash": "flash", "paged_prefill": "paged_prefill",
               "gathered_split": "split"}


class OrtDispatchRuleError(RuntimeError):
    """ORT ran other programs than the rule verify's budgets assume: verify's model of ORT is out of date."""


# -- cases --------------------------------------------------------------------------------------------
def _past_lengths(max_past: int):
    """Cached lengths: any up to max_past, and the 64-key tile edges (tails and exact multiples)."""
    edges = sorted({e for t in (64, 128, 256, 1024, 4096, 8192) for e in (t - 1, t, t + 1) if e <= max_past})
    return st.one_of(st.integers(0, max_past), st.sampled_from(edges)) if edges else st.integers(0, max_past)


def _new_tokens(phase: str):
    return {"decode": st.just(1), "prefill": st.integers(2, SPLIT_REDUCE_BELOW - 1),
            "flash": st.integers(SPLIT_REDUCE_BELOW, MAX_FLASH_TOKENS)}[phase]


def rotary_tables(rows: int, half: int, dtype) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin [rows, half] of theta = 10000 (NeoX frequencies), stored in `dtype`."""
    angles = np.arange(rows)[:, None] * ROPE_THETA ** (-np.arange(half) / half)
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def _values(rng, shape, spread, dtype):
    return (rng.standard_normal(shape) * spread).astype(dtype)


#: What an attention bias holds: N(0, 2²) values, or a mask (0 where attended, -10000 on about a
#: third of the keys, as models build padding masks).
BIAS_KINDS = ("normal", "mask")
#: The mask's value for a masked key: far below any score, finite in f16.
BIAS_MASKED = -1e4


def _attention_bias(rng, kind: str, config: dict, past: list, new: int, t) -> np.ndarray:
    """attention_bias [B or 1, N or 1, S, T] (T the batch's largest total); in the full shape the
    columns past a sequence's own total are no key of it, and are poisoned with NaN."""
    batch, total = len(past), max(past) + new
    shape = (batch, config["num_heads"], new, total) if config["attention_bias"] == "full" else (1, 1, new, total)
    if kind == "normal":
        bias = rng.standard_normal(shape) * 2.0
    else:
        bias = np.where(rng.random(shape) < 1 / 3, BIAS_MASKED, 0.0)
    bias = bias.astype(t)
    if config["attention_bias"] == "full":
        for b, length in enumerate(past):
            bias[b, :, :, length + new:] = np.nan
    return bias


#: Spreads of q: flat (scores near 0), unit, sharp (a few keys dominate).
Q_SPREADS = (0.25, 1.0, 4.0)


def _min_total(config) -> int:
    """A windowed config draws totals past the window (so ORT takes its windowed path)."""
    return config["local_window_size"] + 1 if config["local_window_size"] >= 0 else 0


@st.composite
def gqa_cases(draw, config: dict, new_tokens=None) -> Case:
    """GroupQueryAttention cases: a batch of 1-3 sequences of unequal cached lengths for decode
    (ORT takes a batch > 1 only without a past for more than one new token), new tokens by phase,
    flat to sharp queries, a static cache with spare rows past each sequence poisoned with NaN.
    `new_tokens` (a strategy) replaces the phase's new-token counts."""
    t = numpy_dtype(config["dtype"])
    new = draw(new_tokens if new_tokens is not None else _new_tokens(config["phase"]))
    batch = draw(st.integers(1, 3)) if new == 1 else 1
    past = [draw(_past_lengths(config["max_past"])) for _ in range(batch)]
    past[0] = max(past[0], _min_total(config) - new)
    spare = draw(st.integers(0, 8))
    capacity = max(past) + new + spare
    seed = draw(st.integers(0, 2**32 - 1))
    spread = draw(st.sampled_from(Q_SPREADS))
    rng = np.random.default_rng(seed)
    n, nkv, h = config["num_heads"], config["kv_num_heads"], config["head_size"]
    cache_shape = (batch, nkv, capacity, h)
    past_key, past_value = _values(rng, cache_shape, 1.0, t), _values(rng, cache_shape, 1.0, t)
    for b, length in enumerate(past):
        past_key[b, :, length:] = np.nan
        past_value[b, :, length:] = np.nan
    arrays = {"query": _values(rng, (batch, new, n * h), spread, t),
              "key": _values(rng, (batch, new, nkv * h), 1.0, t), "value": _values(rng, (batch, new, nkv * h), 1.0, t),
              "past_key": past_key, "past_value": past_value,
              "seqlens_k": np.asarray(past, np.int32) + new - 1,
              "total_sequence_length": np.asarray(max(past) + new, np.int32)}
    if config["do_rotary"]:
        arrays["cos_cache"], arrays["sin_cache"] = rotary_tables(capacity, (config.get("rotary_dim") or h) // 2, t)
    if config.get("head_sink"):
        arrays["head_sink"] = _values(rng, (n,), 2.0, t)
    if config.get("attention_bias", "none") != "none":
        arrays["attention_bias"] = _attention_bias(rng, draw(st.sampled_from(BIAS_KINDS)), config, past, new, t)
    path = gqa_path(config["local_window_size"], new, max(past) + new, bool(config.get("smooth_softmax")),
                    ort_runtime.fuses_local_window())
    return Case(arrays, {"batch": batch, "new": new, "past": past, "capacity": capacity, "q_spread": spread,
                         "seed": seed, "path": path})


@st.composite
def paged_cases(draw, config: dict, sequences=None, new_tokens=None, shared_new_tokens=None) -> Case:
    """PagedAttention cases: 1-3 sequences (decode and prefill; flash: one), each with its own
    cached and new lengths, its blocks drawn from a shuffled pool whose spare blocks, and the
    unused slots of the last block of each sequence, are poisoned with NaN. `sequences` (a
    strategy) replaces the batch size; `new_tokens` (a strategy, drawn once per sequence)
    replaces the phase's new-token counts; `shared_new_tokens` (a strategy) draws one count that
    every sequence shares: the query layout ORT's FlashAttentionPagedPrefill reads without
    unpacking it first (verify.sources.ort.attention.paged_prefill)."""
    t = numpy_dtype(config["dtype"])
    bs = config["block_size"]
    if sequences is not None:
        batch = draw(sequences)
    else:
        batch = draw(st.integers(1, 3)) if config["phase"] != "flash" else 1
    if shared_new_tokens is not None:
        news = [draw(shared_new_tokens)] * batch
    else:
        news = [draw(new_tokens if new_tokens is not None else _new_tokens(config["phase"])) for _ in range(batch)]
    past = [draw(_past_lengths(config["max_past"])) for _ in range(batch)]
    past = [max(p, _min_total(config) - s) for p, s in zip(past, news)]
    totals = [p + s for p, s in zip(past, news)]
    blocks = [-(-total // bs) for total in totals]
    spare = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    spread = draw(st.sampled_from(Q_SPREADS))
    rng = np.random.default_rng(seed)
    pool = rng.permutation(sum(blocks) + spare).astype(np.int32)
    table = np.empty((batch, max(blocks)), np.int32)
    table[:] = pool[sum(blocks)]  # unused entries name a (poisoned) spare block
    start = 0
    for b, count in enumerate(blocks):
        table[b, :count] = pool[start:start + count]
        start += count
    n, nkv, h = config["num_heads"], config["kv_num_heads"], config["head_size"]
    cache_shape = (len(pool), bs, nkv, h)
    key_cache, value_cache = _values(rng, cache_shape, 1.0, t), _values(rng, cache_shape, 1.0, t)
    written = np.zeros(cache_shape[:2], bool)
    for b in range(batch):
        rows = np.arange(past[b])
        written[table[b, rows // bs], rows % bs] = True
    key_cache[~written], value_cache[~written] = np.nan, np.nan
    tokens = sum(news)
    arrays = {"query": _values(rng, (tokens, n * h), spread, t), "key": _values(rng, (tokens, nkv * h), 1.0, t),
              "value": _values(rng, (tokens, nkv * h), 1.0, t), "key_cache": key_cache, "value_cache": value_cache,
              "cumulative_sequence_length": np.concatenate([[0], np.cumsum(news)]).astype(np.int32),
              "past_seqlens": np.asarray(past, np.int32), "block_table": table}
    if config["do_rotary"]:
        arrays["cos_cache"], arrays["sin_cache"] = rotary_tables(max(totals) + 1, h // 2, t)
    if config.get("head_sink"):
        arrays["head_sink"] = _values(rng, (n,), 2.0, t)
    path = paged_path(config["local_window_size"], max(news), bs, bool(config.get("head_sink")),
                      ort_runtime.fuses_local_window())
    return Case(arrays, {"batch": batch, "new": news, "past": past, "q_spread": spread, "seed": seed, "path": path})


def with_large_scores(case: Case, config: dict) -> Case:
    """`case` with sequence 0's queries all c and its first new key +c / -c on each half of every
    KV head's channels (OrtPagedAttention.large_score_cases): the packed layout of a paged case
    ([tokens, N·H], sequence 0 its first cumulative_sequence_length[1] rows) or the [B, S, N·H]
    layout of a GroupQueryAttention case (gqa_cases: sequence 0 is batch row 0)."""
    h = config["head_size"]
    c = float(np.ceil(np.sqrt(1.1 * 65504 / (h / 2 * h ** -0.5))))
    query, key = case["query"].copy(), case["key"].copy()
    if "cumulative_sequence_length" in case.arrays:
        query[:int(case["cumulative_sequence_length"][1])] = c
        first_key = key[0:1]
    else:
        query[0] = c
        first_key = key[0, 0:1]
    first = first_key.reshape(config["kv_num_heads"], h)
    first[:, : h // 2], first[:, h // 2:] = c, -c
    first_key[:] = first.reshape(first_key.shape)
    return case.replace({"query": query, "key": key}, large_score=c)


def with_sharp_queries(case: Case, spread: float = 2.0) -> Case:
    """`case` with its queries redrawn N(0, spread²) from a fixed seed (OrtPagedAttention.finding_examples)."""
    rng = np.random.default_rng(0)
    query = (rng.standard_normal(case["query"].shape) * spread).astype(case["query"].dtype)
    return case.replace({"query": query}, q_spread=spread)
