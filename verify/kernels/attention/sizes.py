"""How big the attention family's cases get at each profile scale (verify.profiles.FamilySizes)."""

from __future__ import annotations

from dataclasses import dataclass

from verify.profiles import FamilySizes


@dataclass(frozen=True)
class AttentionSizes:
    """Attention cases: sequences per batch and attended context length (decode), and for
    prefill the longest chunk of query tokens per sequence, the longest context it attends
    (history plus chunk) and the largest token tree."""

    max_batch: int
    max_context: int
    #: Query tokens one prefill sequence may have (its chunk).
    max_q_len: int = 16
    #: Context rows (earlier tokens plus the chunk) one prefill sequence may attend.
    max_prefill_context: int = 64
    #: Nodes of one token tree; TVM's runtime allows 256 (kTreeAttnMaxTreeSize, attn_utils.h L52,
    #: checked in paged_kv_cache.cc L1853).
    max_tree: int = 16
    #: Query rows x query heads x context rows one prefill case may hold in all (0: one sequence at
    #: both maxima). A prefill case's float64 reference and its error budget cost about 0.3-0.4 us
    #: per such cell on one core (eight float64 products of D terms and some twenty elementwise
    #: passes per cell, verify.kernels.attention.prefill_eval), so this, not the row or context
    #: limit alone, is what a case costs.
    max_prefill_work: int = 0
    #: Examples the gate gives each check of a prefill kernel, shared among its configs (0: the
    #: profile's). One prefill example is a batch of up to thousands of query rows, each the work of
    #: a decode example.
    prefill_examples: int = 0


#: quick: a smoke test (and the sanitizer's cases: a prefill's logged accesses grow as tokens x
#: context x heads x D, so its chunks stay at 4 tokens on 24 rows); ci: decode contexts to ~1k rows
#: (a few pages past 512, the sharded kernel's largest split), prefill chunks of up to 12 tokens on
#: contexts of up to 4 pages: with a GQA group of 3 or more a chunk crosses TVM's 16- and 32-row
#: tiles (lavapipe on two cores spends ~0.1 ms per context row per token at D = 128, so chunk x
#: context is what a case costs); nightly: decode contexts to 8192; prompts of up to 4096 tokens and
#: contexts of up to 8192 rows, but not both in one case: at most 2^22 query-row x head x context-row
#: cells per case (a 4096-token prompt on 32 context rows, 362 causal rows on their own context, 16
#: rows on 8192, at 32 heads; four times as much at 8 heads), and 200 examples per prefill check;
#: trees of TVM's largest size. Prompts of 4096 tokens on 8192 rows at 32 heads (2^30 cells, minutes
#: of float64 per case), drawn 1000 times per check, would have kept the nightly's prefill checks
#: busy for days of CPU time (docs/tvm.md §11.4 gives the arithmetic).
SIZES = FamilySizes("attention", quick=AttentionSizes(2, 70, 4, 24, 6), ci=AttentionSizes(4, 520, 12, 64, 12),
                    nightly=AttentionSizes(8, 8192, 4096, 8192, 256, max_prefill_work=1 << 22,
                                           prefill_examples=200))
