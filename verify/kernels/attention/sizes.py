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


#: quick: a smoke test (and the sanitizer's cases: a prefill's logged accesses grow as tokens x
#: context x heads x D, so its chunks stay at 4 tokens on 24 rows); ci: decode contexts to ~1k rows (a few pages past 512, the sharded
#: kernel's largest split), prefill chunks of up to 12 tokens on contexts of up to 4 pages: with a
#: GQA group of 3 or more a chunk crosses TVM's 16- and 32-row tiles (lavapipe on two cores spends
#: ~0.1 ms per context row per token at D = 128, so chunk x context is what a case costs);
#: nightly: decode contexts to 8192, prompts of 4096 tokens on 8192-row contexts, trees of
#: TVM's largest size.
SIZES = FamilySizes("attention", quick=AttentionSizes(2, 70, 4, 24, 6), ci=AttentionSizes(4, 520, 12, 64, 12),
                    nightly=AttentionSizes(8, 8192, 4096, 8192, 256))
