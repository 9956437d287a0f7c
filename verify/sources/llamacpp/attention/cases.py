"""Cases of ggml-webgpu's split-KV decode attention: shapes, masks and values.

A case is one FLASH_ATTN_EXT node on the vec path: 1-2 batches (ggml's ne[3], llama.cpp's
streams) of 1-19 query rows (decode is 1; a few more for speculative decoding), the config's
heads over its KV heads, and a KV length that crosses the programs' boundaries: one row, a KV
tile's tail, each doubling of the split count (nwg doubles while 2·nwg·KV_TILE < L) and long
contexts. llama.cpp pads its KV cache to 256 rows (KV_SEQ_PAD) and masks the rows past the used
ones with -inf; with the config's `kv_padded` the length is such a multiple (the programs then
read K and V straight from memory: K_DIRECT, V_DIRECT), without it it is not.

Masks (f16, [batch, rows, L], as llama.cpp builds its KQ mask: one per stream, shared by every
head): `causal` (0, or -inf for the future and the padding), `distance` (-|i - j| as llama.cpp
writes it for ALiBi models), `values` (test-backend-ops' uniform [-1, 1], causal -inf kept) and
`blocks` (whole KV tiles -inf, zero or mixed, so flash_attn_vec_blk's three tile states all
occur, and rows that see no key at all). Values: verify's value kinds for K and V (of f16's
range in either storage type), queries of a flat-to-sharp spread, sinks N(0, 2²).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.budgets.roundoff import numpy_dtype
from verify.cases import Case
from verify.cases.values import VALUE_KINDS, make_values
from verify.profiles import FamilySizes
from verify.sources.llamacpp.selection import FLASH_ATTN_VEC_MAX_SEQ_LEN, KV_SEQ_PAD


@dataclass(frozen=True)
class AttentionSizes:
    """Largest KV length, batch and query rows a case draws."""

    max_kv: int
    max_batch: int
    max_rows: int


SIZES = FamilySizes("llamacpp.attention", quick=AttentionSizes(600, 1, 3), ci=AttentionSizes(2048, 2, 8),
                    nightly=AttentionSizes(8192, 2, FLASH_ATTN_VEC_MAX_SEQ_LEN - 1))
MASK_KINDS = ("causal", "distance", "values", "blocks")
#: Query spreads: flat to sharp softmax weights.
Q_SPREADS = (0.25, 1.0, 4.0, 16.0)


def kv_lengths(sizes: AttentionSizes, kv_tile: int, padded: bool):
    """KV lengths: multiples of 256 with `padded`, else lengths that are not, with the corners
    of a KV tile (1, its tail, one past it) and of each doubling of the split count."""
    if padded:
        return st.integers(1, max(1, sizes.max_kv // KV_SEQ_PAD)).map(lambda n: n * KV_SEQ_PAD)
    edges = {1, kv_tile - 1, kv_tile, kv_tile + 1}
    for nwg in (1, 2, 4, 8, 16, 32, 64):
        edges |= {2 * nwg * kv_tile, 2 * nwg * kv_tile + 1}
    corners = sorted(c for c in edges if 1 <= c <= sizes.max_kv and c % KV_SEQ_PAD)
    return st.one_of(st.sampled_from(corners), st.integers(1, sizes.max_kv)).map(
        lambda n: n + 1 if n % KV_SEQ_PAD == 0 else n)


def make_mask(rng: np.random.Generator, kind: str, batch: int, rows: int, length: int, used: int,
              kv_tile: int) -> np.ndarray:
    """An f16 mask [batch, rows, length]: query row i (at position used - rows + i) sees keys up
    to its position among the `used` ones; the rest is -inf (the future and the padding)."""
    position = used - rows + np.arange(rows)[:, None]
    key = np.arange(length)[None, :]
    visible = np.broadcast_to((key <= position) & (key < used), (batch, rows, length)).copy()
    if kind == "distance":
        values = np.broadcast_to(-np.abs(position - key).astype(np.float64), visible.shape)
    elif kind == "values":
        values = rng.uniform(-1.0, 1.0, visible.shape)
    else:
        values = np.zeros(visible.shape)
    if kind == "blocks":  # whole tiles hidden (blk state 0), left zero (2) or given values (1)
        tiles = -(-length // kv_tile)
        state = rng.integers(0, 3, (batch, rows, tiles))
        per_key = np.repeat(state, kv_tile, axis=-1)[..., :length]
        visible &= per_key != 0
        values = np.where(per_key == 1, rng.uniform(-4.0, 4.0, visible.shape), 0.0)
        visible[:, rng.random(rows) < 0.2] = False  # rows that see nothing
    return np.where(visible, values, -np.inf).astype(np.float16)


@st.composite
def attention_cases(draw, config: dict, kv_tile: int, profile) -> Case:
    """A case for `config` (its head dims, heads, KV type, mask, sinks) whose programs use KV tiles of `kv_tile`."""
    sizes = SIZES(profile)
    batch = draw(st.integers(1, sizes.max_batch))
    rows = draw(st.one_of(st.just(1), st.integers(1, sizes.max_rows)))
    length = draw(kv_lengths(sizes, kv_tile, config["kv_padded"]))
    used = draw(st.integers(max(rows, length - KV_SEQ_PAD + 1), length)) if config["kv_padded"] else length
    used = max(used, min(rows, length))
    kind = draw(st.sampled_from(VALUE_KINDS))
    mask_kind = draw(st.sampled_from(MASK_KINDS))
    spread = draw(st.sampled_from(Q_SPREADS))
    seed = draw(st.integers(0, 2**32 - 1))
    return make_case(config, batch, rows, length, used, kind, mask_kind, spread, seed, kv_tile)


def make_case(config: dict, batch: int, rows: int, length: int, used: int, kind: str, mask_kind: str,
              spread: float, seed: int, kv_tile: int) -> Case:
    rng = np.random.default_rng(seed)
    heads, kv_heads, dk, dv = config["heads"], config["kv_heads"], config["head_dim"], config["head_dim"]
    kv = numpy_dtype(config["kv_type"])
    # K and V of f16's range in either storage type (an f32 cache holds what f16/bf16 projections
    # make; keys of 2^40 would leave every a-priori bound on an f32 dot product meaningless)
    arrays = {"q": (rng.standard_normal((batch, rows, heads, dk), dtype=np.float32) * np.float32(spread)),
              "k": make_values(rng, kind, (batch, kv_heads, length, dk), "f16").astype(kv),
              "v": make_values(rng, kind, (batch, kv_heads, length, dv), "f16").astype(kv)}
    if config["mask"]:
        arrays["mask"] = make_mask(rng, mask_kind, batch, rows, length, used, kv_tile)
    if config["sinks"]:
        arrays["sinks"] = (rng.standard_normal(heads) * 2).astype(np.float32)
    return Case(arrays, {"batch": batch, "rows": rows, "kv_len": length, "used": used, "values": kind,
                         "mask": mask_kind if config["mask"] else "none", "q_spread": spread, "seed": seed})
