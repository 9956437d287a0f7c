"""How big the attention family's cases get at each profile scale (verify.profiles.FamilySizes)."""

from __future__ import annotations

from dataclasses import dataclass

from verify.profiles import FamilySizes


@dataclass(frozen=True)
class AttentionSizes:
    """Paged attention cases: sequences per batch and attended context length."""

    max_batch: int
    max_context: int


#: quick: a smoke test; ci: contexts to ~1k rows (a few pages past 512, the sharded kernel's
#: largest split); nightly: long contexts to 8192.
SIZES = FamilySizes("attention", quick=AttentionSizes(2, 70), ci=AttentionSizes(4, 520),
                    nightly=AttentionSizes(8, 8192))
