"""`ort.attention.paged_prefill`: ORT's FlashAttentionPagedPrefill, PagedAttention's prefill
program, launched by verify from the WGSL onnxruntime-web generated.

PagedAttention with 32 new tokens or more in blocks larger than 16 tokens, no head sink and no
local window (docs/ort-attention.md §2) runs PagedAttentionPackMetadata (the lengths, read back
to the host), ScatterKVToPagedCache (the new keys and values into their blocks) and then this
program, which reads the blocks in place through the block table. verify launches it as ORT's
host code does (flash_attention.cc, ApplyFlashAttentionPagedPrefill; paged_attention.cc for the
lengths), with the cache already holding the new keys and values, so `verify show` prints it,
`--wgsl` checks an edit under the same contract and `sanitize` instruments it.

The program: one 64-lane workgroup per (sequence, query head, 64 new tokens), one lane per new
token; keys in steps of 32 (a block) loaded into workgroup memory, slots past the sequence's
total read as 0; each lane sums q.k, keeps the running max and denominator, and accumulates its
normalised output, all in the model's type (f16) with only the exponentials in f32
(verify.budgets.ort_attention's `paged_prefill` path). Its contract is the attention itself:
references.group_query.attend of each new token over its sequence's keys.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.budgets.expected import Expected
from verify.budgets.ort_attention import output_budget, prefill_weight_errors, score_errors
from verify.budgets.roundoff import numpy_dtype
from verify.cases import Case
from verify.errors import UsageError
from verify.gpu import Output
from verify.kernels.contract import ConfigKey, Launched
from verify.profiles import get_profile
from verify.references.group_query import attend, visible_keys
from verify.results.record import KnownFinding
from verify.sources.ort.attention.cases import paged_cases, with_large_scores
from verify.sources.ort.attention.launch import SPLIT_REDUCE_BELOW, AttentionShape
from verify.sources.ort.attention.programs import OrtDecodeProgram
from verify.sources.ort.attention.sessions import (
    HEAD_SIZE,
    KV_NUM_HEADS,
    MAX_PAST,
    NUM_HEADS,
    PAGED_DTYPE,
    PAGED_PREFILL_F16_SCORES,
    OrtPagedAttention,
)
from verify.sources.ort.launch import bind, header, ort_grid

PAGED_PREFILL = "FlashAttentionPagedPrefill"
#: New tokens per workgroup (its 64 lanes, one token each; ORT takes 128 on Apple's GPUs only).
PREFILL_QUERY_TILE = 64
#: Most new tokens a case draws: past 64, a second query workgroup per head.
PREFILL_MAX_TOKENS = 80
#: Most cached tokens a case draws at the quick profile's sizes (OrtPagedPrefill.cases).
QUICK_MAX_PAST = 32
PREFILL_BLOCK_SIZE = ConfigKey("block_size", 32, (32,), "tokens per block of the paged cache: ORT takes this program "
                               "for blocks larger than 16 (16-token blocks gather the cache for FlashAttention)")


@dataclass(frozen=True)
class PagedPrefill(AttentionShape):
    """One FlashAttentionPagedPrefill launch, as PagedAttention passes it (no attention bias, a
    query of equal new-token counts per sequence, so BSNH without unpacking).

    new_sequence_length is the new tokens per sequence, total_sequence_length the batch's largest
    total (max_kv_len in paged_attention.cc), present_sequence_length the block table's reach
    (its width times block_size). Per-sequence totals travel in seqlens_k (total - 1) and the new
    counts in seqlens_q. tests/sources/ort/test_ort_paged_prefill.py holds these uniforms and the
    workgroup count to a recorded ORT dispatch, field for field.
    """

    block_size: int = 32

    def __post_init__(self):
        super().__post_init__()
        if self.present_sequence_length % self.block_size:
            raise UsageError("present_sequence_length must be whole blocks")

    @property
    def blocks_per_sequence(self) -> int:
        return self.present_sequence_length // self.block_size

    @property
    def num_seq_tile(self) -> int:
        return -(-self.new_sequence_length // PREFILL_QUERY_TILE)

    @property
    def output_shape(self) -> tuple[int, ...]:
        """output: [B·S, N·H] in the model's type (PagedAttention's packed layout)."""
        return (self.batch * self.new_sequence_length, self.num_heads * self.head_size)

    def uniforms(self) -> dict:
        """FlashAttentionPagedPrefill's uniforms: block_table's shape and row stride (its
        UseUniform input), then the eight ApplyFlashAttentionPagedPrefill adds."""
        return {"block_table_shape": (self.batch, self.blocks_per_sequence),
                "block_table_stride": self.blocks_per_sequence,
                "new_sequence_length": self.new_sequence_length, "total_sequence_length": self.total_sequence_length,
                "batch_size": self.batch, "n_reps": self.num_heads // self.kv_num_heads, "alpha": self.alpha,
                "num_seq_tile": self.num_seq_tile, "block_size": self.block_size, "kv_num_heads": self.kv_num_heads}

    def grid(self) -> tuple[int, int, int]:
        return ort_grid(self.batch * self.num_heads * self.num_seq_tile)


def scattered_caches(case: Case, config: dict) -> tuple[np.ndarray, np.ndarray]:
    """key_cache/value_cache with each sequence's new keys and values in their slots, as
    ScatterKVToPagedCache leaves them (spare blocks and unused slots keep their poison)."""
    nkv, h, bs = config["kv_num_heads"], config["head_size"], config["block_size"]
    keys, values = case["key_cache"].copy(), case["value_cache"].copy()
    flat_key, flat_value = keys.reshape(-1, nkv, h), values.reshape(-1, nkv, h)
    cu, table = case["cumulative_sequence_length"], case["block_table"]
    for b, past in enumerate(case.params["past"]):
        begin, end = int(cu[b]), int(cu[b + 1])
        rows = past + np.arange(end - begin)
        slots = table[b, rows // bs] * bs + rows % bs
        flat_key[slots] = case["key"][begin:end].reshape(-1, nkv, h)
        flat_value[slots] = case["value"][begin:end].reshape(-1, nkv, h)
    return keys, values


def sequence_rows(case: Case, config: dict, b: int) -> tuple[np.ndarray, np.ndarray]:
    """Sequence b's keys and values [Nkv, total, H] (float64) in order, read through its block table."""
    nkv, h, bs = config["kv_num_heads"], config["head_size"], config["block_size"]
    keys, values = scattered_caches(case, config)
    total = case.params["past"][b] + case.params["new"][b]
    rows = np.arange(total)
    slots = case["block_table"][b, rows // bs] * bs + rows % bs
    return tuple(cache.reshape(-1, nkv, h)[slots].transpose(1, 0, 2).astype(np.float64) for cache in (keys, values))


class OrtPagedPrefill(OrtDecodeProgram):
    """ORT's FlashAttentionPagedPrefill: PagedAttention's prefill of 32 new tokens or more, read
    from the blocks in place."""

    name = "ort.attention.paged_prefill"
    summary = ("ONNX Runtime Web 1.30's FlashAttentionPagedPrefill (PagedAttention, 32 or more new tokens, 32-token "
               "blocks): one lane per new token, an online softmax over 32-key steps, all in f16 but the exp")
    reference = "verify.references.group_query.attend"
    checks = ("reference", "implementations", "large_scores")
    config_keys = (PAGED_DTYPE, HEAD_SIZE, NUM_HEADS, KV_NUM_HEADS, PREFILL_BLOCK_SIZE, MAX_PAST)
    program = PAGED_PREFILL
    output_axes = {"output": ("token", "channel")}
    budget_function = staticmethod(output_budget)
    # The program enables subgroups and declares subgroup_size and subgroup_invocation_id but reads
    # neither and calls no subgroup built-in, so its output cannot depend on the width; yet the gate
    # runs a kernel that requires subgroups again at every emulated width of its profile (five in
    # ci), each a new program text with a first compile of minutes on lavapipe, and sanitized. So,
    # as for ort.attention.flash, the per-change gates leave this program to ort.paged_attention's
    # flash phase in 32-token blocks, which runs it end to end (`large_scores` included), and the
    # nightly runs it program by program.
    gate_shapes = {
        "quick": (),
        "ci": (),
        "nightly": (dict(head_size=64, num_heads=4, kv_num_heads=1, max_past=2048),
                    dict(head_size=128, num_heads=8, kv_num_heads=2, max_past=1024)),
    }

    def budget_doc(self) -> str:
        import inspect

        return "\n\n".join(inspect.getdoc(f) or "" for f in (score_errors, prefill_weight_errors, output_budget))

    def known_finding(self, check, config):
        """§18.4 under `large_scores` (the output its signature), as ort.paged_attention states
        it: the program sums q.k in f16, so a partial sum past 65504 is Inf and the output NaN."""
        if check == "large_scores":
            return KnownFinding(PAGED_PREFILL_F16_SCORES, outputs=("output",),
                                finding_id="ort-paged-prefill-f16-scores")
        return None

    def paged_config(self, config) -> dict:
        """The ort.paged_attention config whose session dispatches this program."""
        return OrtPagedAttention().config({k: config[k] for k in ("head_size", "num_heads", "kv_num_heads",
                                                                  "block_size", "max_past")} | {"phase": "flash"})

    def wgsl(self, config):
        paged = OrtPagedAttention()
        data = paged.captured(self.paged_config(config))
        return f"{header(self.name, config)}{data.line}\n{data.program(self.program)}"

    def upstream(self, config, wgsl):
        from verify.sources.ort.attention.sessions import attention_upstream

        return attention_upstream(wgsl, f"program `{self.program}` as a PagedAttention session dispatches it")

    def cases(self, config, profile):
        """ort.paged_attention's paged cases (a shuffled block pool, spare blocks and unused slots
        poisoned with NaN, flat to sharp queries) for 1-3 sequences of unequal cached lengths
        sharing one count of 32-80 new tokens: one or two query workgroups per head.

        At the quick profile's sizes (which `sanitize` draws, since the sanitizer logs every
        access) one sequence of 32-40 new tokens over at most QUICK_MAX_PAST cached ones: a case
        of three sequences of 80 new tokens over 160 cached makes 5.9 million accesses (H=64, 8/2
        heads), past the 5.6 million records the log holds within maxStorageBufferBindingSize."""
        if get_profile(profile).scale == "quick":
            small = {**self.paged_config(config), "max_past": min(config["max_past"], QUICK_MAX_PAST)}
            return paged_cases(small, sequences=st.just(1),
                               shared_new_tokens=st.integers(SPLIT_REDUCE_BELOW, SPLIT_REDUCE_BELOW + 8))
        return paged_cases(self.paged_config(config), sequences=st.integers(1, 3),
                           shared_new_tokens=st.integers(SPLIT_REDUCE_BELOW, PREFILL_MAX_TOKENS))

    def large_score_cases(self, config, profile):
        """As ort.paged_attention's: the first sequence's queries all c and its first new key +c
        on the first half of each head's channels and -c on the other (q.k = 0 exactly), c the
        smallest whole number whose half-head partial sum passes 1.1 · 65504
        (verify.sources.ort.attention.cases.with_large_scores)."""
        return self.cases(config, profile).map(lambda case: with_large_scores(case, config))

    def finding_examples(self, check, config):
        """Under `large_scores`, the simplest large-score case: one sequence of 32 new tokens, no past."""
        if check != "large_scores":
            return []
        from hypothesis import find, settings

        case = find(self.cases(config, "quick"), lambda case: True, settings=settings(database=None, max_examples=10))
        return [with_large_scores(case, config)]

    def prefill(self, config, case) -> PagedPrefill:
        news, past = case.params["new"], case.params["past"]
        if len(set(news)) != 1:
            raise UsageError(f"{self.name}: every sequence of a case must have the same new tokens, got {news}")
        return PagedPrefill(len(news), config["num_heads"], config["kv_num_heads"], config["head_size"], news[0],
                            max(p + s for p, s in zip(past, news)),
                            case["block_table"].shape[1] * config["block_size"], block_size=config["block_size"])

    def launch(self, device, wgsl, config, case):
        prefill = self.prefill(config, case)
        keys, values = scattered_caches(case, config)
        totals = np.asarray(case.params["past"], np.int32) + np.asarray(case.params["new"], np.int32)
        pipeline = device.pipeline(wgsl)
        resources = bind(pipeline, {
            "q": case["query"], "key_cache": keys, "value_cache": values, "block_table": case["block_table"],
            "seqlens_k": totals - 1, "seqlens_q": np.asarray(case.params["new"], np.int32),
            "output": Output(numpy_dtype(config["dtype"]), prefill.output_shape)}, prefill.uniforms())
        run = device.run(pipeline, resources, prefill.grid())
        return Launched(dict(run.outputs), dict(run.guard_intact), run.timing)

    def expected(self, config, case):
        """Per sequence, references.group_query.attend of each new token over keys 0..its
        position, read through the block table, under verify.budgets.ort_attention's
        `paged_prefill` path (score_errors, prefill_weight_errors, output_budget)."""
        n, h = config["num_heads"], config["head_size"]
        scale = h ** -0.5
        cu = case["cumulative_sequence_length"]
        out, budget = np.zeros((int(cu[-1]), n * h)), np.zeros((int(cu[-1]), n * h))
        for b, past in enumerate(case.params["past"]):
            begin, end = int(cu[b]), int(cu[b + 1])
            new = end - begin
            k, v = sequence_rows(case, config, b)
            q = case["query"][begin:end].reshape(new, n, h)
            o, logits2 = attend(q, k, v, visible_keys(past + new, new), scale=scale)
            delta = score_errors(q, k, scale=scale, dtype=config["dtype"], path="paged_prefill")
            out[begin:end] = o.reshape(new, -1)
            budget[begin:end] = output_budget(v, logits2, delta, dtype=config["dtype"],
                                              path="paged_prefill").reshape(new, -1)
        return [Expected.around("output", out, budget, config["dtype"])]

    def features(self, case):
        return {"context": max(p + s for p, s in zip(case.params["past"], case.params["new"])),
                "new_tokens": case.params["new"][0], "sequences": len(case.params["new"])}
