"""Cases of ggml-webgpu's tiled prefill attention (flash_attn_tile): shapes, masks and values.

A case is one FLASH_ATTN_EXT node the tile path takes: 20 query rows or more (fewer take the vec
path, selection.flash_attn_use_vec_path), in 1-2 batches (llama.cpp's streams), the config's
heads over its KV heads. The query rows cross the program's 4-row query tile (20-23, each
multiple of 4 and one past it: a last workgroup with 1, 2 or 3 rows), and the KV length its KV
tile (KV_TILE - 1, KV_TILE + 1, multiples of it and one past them: a last, partial tile of every
size). As in llama.cpp, a prefill of `rows` tokens after `past` cached ones attends over
past + rows keys (`used`), and the cache may be padded to a multiple of 256 (KV_SEQ_PAD) with
the rows past the used ones masked -inf.

Masks are verify.sources.llamacpp.attention.cases.make_mask's (llama.cpp's KQ mask, one per
stream shared by every head: causal, ALiBi's distances, test-backend-ops' uniform values, whole
KV tiles hidden, zero or mixed, and rows that see no key). Values: verify's value kinds for K
and V; with f32 K and V the values are of f16's range but not f16 values (each moved by up to
2^-10 relatively), so the program's conversion to f16 in workgroup memory rounds them. Queries
of four spreads, sinks N(0, 2²).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.cases import Case
from verify.cases.values import VALUE_KINDS, make_values
from verify.profiles import FamilySizes
from verify.sources.llamacpp.attention.cases import MASK_KINDS, Q_SPREADS, make_mask
from verify.sources.llamacpp.selection import FLASH_ATTN_TILE_Q_TILE, FLASH_ATTN_VEC_MAX_SEQ_LEN, KV_SEQ_PAD

#: The fewest query rows the tile path takes (the vec path takes fewer, C L1969).
MIN_ROWS = FLASH_ATTN_VEC_MAX_SEQ_LEN
F16_MAX = 65504.0


@dataclass(frozen=True)
class TileSizes:
    """Largest cached context before the prompt, batch and query rows a case draws, and whether
    the cache may be padded to 256 rows (the quick sizes, which `sanitize` draws, keep contexts
    short: a padded cache would log 256 keys' accesses for every row; the corners hold one)."""

    max_past: int
    max_batch: int
    max_rows: int
    padded: bool = True


SIZES = FamilySizes("llamacpp.attention_tile", quick=TileSizes(40, 1, 24, padded=False), ci=TileSizes(320, 2, 44),
                    nightly=TileSizes(2048, 2, 160))


def row_counts(sizes: TileSizes):
    """Query rows from 20: each residue of the 4-row query tile, and random ones."""
    corners = [r for r in range(MIN_ROWS, MIN_ROWS + 2 * FLASH_ATTN_TILE_Q_TILE) if r <= sizes.max_rows]
    return st.one_of(st.sampled_from(corners), st.integers(MIN_ROWS, max(MIN_ROWS, sizes.max_rows)))


def past_lengths(sizes: TileSizes, rows: int, kv_tile: int):
    """Cached keys before the prompt: none, enough that past + rows lands on a KV tile's edge
    (a multiple of it, one past, one short), and random ones."""
    targets = {0}
    for tiles in range(1, (sizes.max_past + rows) // kv_tile + 2):
        targets |= {tiles * kv_tile - rows - 1, tiles * kv_tile - rows, tiles * kv_tile - rows + 1}
    corners = sorted(p for p in targets if 0 <= p <= sizes.max_past)
    return st.one_of(st.sampled_from(corners), st.integers(0, sizes.max_past))


def kv_values(rng: np.random.Generator, kind: str, shape: tuple[int, ...], kv_type: str) -> np.ndarray:
    """K or V of f16's range: f16 values for f16 storage; for f32 those values each moved by a
    relative U(-2^-10, 2^-10) in f32 (clipped to f16's largest), so f16 does not hold them."""
    values = make_values(rng, kind, shape, "f16")
    if kv_type == "f16":
        return values
    moved = values.astype(np.float64) * (1.0 + rng.uniform(-2.0**-10, 2.0**-10, shape))
    return np.clip(moved, -F16_MAX, F16_MAX).astype(np.float32)


@st.composite
def tile_cases(draw, config: dict, kv_tile: int, profile) -> Case:
    """A case for `config` (head dim, heads, KV type, mask, sinks) whose program has KV tiles of `kv_tile`."""
    sizes = SIZES(profile)
    batch = draw(st.integers(1, sizes.max_batch))
    rows = draw(row_counts(sizes))
    past = draw(past_lengths(sizes, rows, kv_tile))
    used = past + rows
    padded = config["mask"] and sizes.padded and draw(st.booleans())
    length = -(-used // KV_SEQ_PAD) * KV_SEQ_PAD if padded else used
    kind = draw(st.sampled_from(VALUE_KINDS))
    mask_kind = draw(st.sampled_from(MASK_KINDS))
    spread = draw(st.sampled_from(Q_SPREADS))
    seed = draw(st.integers(0, 2**32 - 1))
    return make_tile_case(config, batch, rows, length, used, kind, mask_kind, spread, seed, kv_tile)


def make_tile_case(config: dict, batch: int, rows: int, length: int, used: int, kind: str, mask_kind: str,
                   spread: float, seed: int, kv_tile: int) -> Case:
    """One case: q [batch, rows, heads, D] f32, k and v [batch, kv_heads, length, D], the mask
    [batch, rows, length] f16 (`used` keys, the last `rows` of them the prompt's), sinks [heads]."""
    rng = np.random.default_rng(seed)
    heads, kv_heads, d = config["heads"], config["kv_heads"], config["head_dim"]
    arrays = {"q": (rng.standard_normal((batch, rows, heads, d), dtype=np.float32) * np.float32(spread)),
              "k": kv_values(rng, kind, (batch, kv_heads, length, d), config["kv_type"]),
              "v": kv_values(rng, kind, (batch, kv_heads, length, d), config["kv_type"])}
    if config["mask"]:
        arrays["mask"] = make_mask(rng, mask_kind, batch, rows, length, used, kv_tile)
    if config["sinks"]:
        arrays["sinks"] = (rng.standard_normal(heads) * 2).astype(np.float32)
    return Case(arrays, {"batch": batch, "rows": rows, "kv_len": length, "used": used, "values": kind,
                         "mask": mask_kind if config["mask"] else "none", "q_spread": spread, "seed": seed})
