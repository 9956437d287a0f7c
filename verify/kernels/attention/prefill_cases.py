"""Strategies for prefill attention: paged, ragged, token-tree and dense batches, and the
metamorphic transforms of the prefill checks (a chunk split in two, the last row as a decode).

A prefill step appends qo_len[b] query tokens to each sequence b and attends them over kv_len[b]
context rows (references/prefill.py). The cases draw what breaks a tiled prefill kernel:

- batches whose sequences differ in qo_len and kv_len, with q_len = 1 rows beside long prompts and
  empty sequences on either side (q_indptr / kv_indptr steps of 0);
- chunked prefill: a history of kv_len - qo_len > 0 earlier rows before the chunk, on and off page
  boundaries (the chunk's first row then starts mid-page);
- chunks whose rows x GQA group end just before, on and after TVM's row tiles (8, 16, 32 and 64
  (token, head) rows): tiles with tails, and tiles that span two sequences;
- paged contexts in shuffled pages with NaN-poisoned spare pages (verify.kernels.attention.cases.
  build_paged_cache), so a read of anything unattended poisons the output;
- token trees of random shape (chains, stars, random parents, forests) up to the profile's size
  (TVM's runtime allows 256 nodes), with the queries being the tree's last nodes.

Value kinds are decode's (verify.kernels.attention.cases) minus far_negative, whose logits lie
below TVM's -5e4 floor (the prefill kernels' `below_floor` check draws those on purpose); "large"
keeps its large V but scales q and k so that logits spread to 1e2..1e4 around 0, large but inside
that floor.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache, lru_cache

import numpy as np
from hypothesis import strategies as st

from verify.cases.case import Case
from verify.cases.values import make_values, seeds
from verify.kernels.attention.cases import _ROPE_SCALES, _ROTARY_MODES, _sm_scales, build_paged_cache
from verify.kernels.attention.rope_cases import cached_rope_bases, max_position
from verify.kernels.attention.sizes import SIZES
from verify.profiles import Profile
from verify.references.token_tree import tree_depths, tree_order

PREFILL_VALUE_KINDS = ("normal", "uniform", "large", "spiky", "equal_logits", "rising", "peaked")
#: Row tiles of TVM's prefill schedules, in (token, head-in-group) rows: tile_x is 32 (f16) or 16
#: (f32) divided by ceil(D / 128), and f32 D > 128 or f16 D > 384 use 8 (_kernel_common.py L625-692).
ROW_TILES = (8, 16, 32, 64)
#: Histories (context rows before the chunk) drawn on purpose: none, and page and tile edges.
SPECIAL_HISTORIES = (0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129)


@dataclass(frozen=True)
class PrefillLimits:
    """How big prefill cases get in a profile."""

    max_batch: int
    max_q_len: int
    max_context: int
    max_tree: int
    #: Query-row x context-row products one case may hold in all (0: one sequence at both maxima).
    max_cells: int = 0
    #: Context rows the sequences' K and V may hold together (0: no bound), so that one case's K/V
    #: buffer fits the storage binding WebGPU grants by default (BINDING_BYTES).
    max_rows: int = 0

    @property
    def cells(self) -> int:
        """Query-row x context-row products one case may hold in all."""
        return self.max_cells or self.max_q_len * self.max_context


def prefill_limits(profile: Profile | str, qo_heads: int = 1, row_bytes: int = 0) -> PrefillLimits:
    """The profile's prefill limits for a config of `qo_heads` query heads: the sizes' work bound
    (query rows x heads x context rows, AttentionSizes.max_prefill_work) shared among the heads;
    with `row_bytes` (what one context row takes in the K/V buffer, context_row_bytes), the
    context rows that buffer holds within WebGPU's default binding size, less ROW_SLACK of room for
    spare pages."""
    sizes = SIZES(profile)
    cells = sizes.max_prefill_work // max(qo_heads, 1) if sizes.max_prefill_work else 0
    if cells >= sizes.max_q_len * sizes.max_prefill_context:
        cells = 0
    rows = BINDING_BYTES // row_bytes - ROW_SLACK if row_bytes else 0
    if rows >= sizes.max_batch * (sizes.max_prefill_context + ROW_SLACK):
        rows = 0  # every case fits
    return PrefillLimits(sizes.max_batch, sizes.max_q_len, sizes.max_prefill_context, sizes.max_tree, cells,
                         max(rows, 0))


#: WebGPU's default maxStorageBufferBindingSize (128 MiB): a case whose K/V buffer is larger cannot
#: be bound on a device that grants the defaults, which the gate's devices are.
BINDING_BYTES = 128 << 20
#: Context rows kept free per sequence and per case: a paged sequence's last page (15), a sliding
#: window's offset past its sinks (up to 45), and up to 3 spare pages of 16 per case.
ROW_SLACK = 64


def context_row_bytes(config: dict, v_head_dim: int | None = None) -> int:
    """Bytes one context row takes where K and V share a buffer (a paged cache: [pages, 2, Hkv,
    page, D]); a ragged case's separate K and V each take at most this."""
    dim = max(config["head_dim"], v_head_dim or config["head_dim"])
    return 2 * config["kv_heads"] * dim * (2 if config["dtype"] == "f16" else 4)


def special_q_lens(group: int, max_q_len: int) -> tuple:
    """Chunk lengths whose qo_len x group lands one token before, on and after a row tile's end."""
    edges = {1, 2, max_q_len}
    for tile in ROW_TILES:
        n = -(-tile // group)
        edges |= {n - 1, n, n + 1}
    return tuple(sorted(e for e in edges if 1 <= e <= max_q_len))


@st.composite
def prefill_lengths(draw, limits: PrefillLimits, group: int, *, causal: bool, batch: int | None = None,
                    allow_empty_context: bool = True):
    """(qo_lens, kv_lens) per sequence: qo_len mostly 1, tile edges or anything up to max_q_len,
    now and then 0; for causal chunks kv_len = qo_len + a history (0, page and tile edges, or
    anything); without the causal mask kv_len is independent (now and then 0). The sum of
    qo_len x kv_len stays within limits.cells (one maximal sequence, or the profile's work bound,
    under which a sequence without query rows counts as one)."""
    batch = batch or draw(st.integers(1, limits.max_batch))
    special_q = special_q_lens(group, limits.max_q_len)
    qo_lens, kv_lens, left = [], [], limits.cells
    rows_left = limits.max_rows
    for _ in range(batch):
        qo = draw(_chunk_lengths(special_q, limits.max_q_len))
        room = limits.max_context - qo
        if causal:
            history = draw(_histories(room))
            kv = qo + min(history, max(room, 0))
        else:
            kv = draw(_contexts(0 if allow_empty_context else 1, limits.max_context, qo))
        # Under a work bound (limits.max_cells) a sequence without query rows still holds a
        # context to draw, page and upload: it is charged as one row.
        rows = max(qo, 1) if limits.max_cells else qo
        if rows * kv > left:  # keep the batch within one maximal sequence's work
            if causal:
                qo = min(qo, math.isqrt(left))
                kv = max(qo, min(kv, left // max(qo, 1)))
            else:
                kv = min(kv, left // max(qo, 1))
            if qo * kv > left:
                qo = 0
            rows = max(qo, 1) if limits.max_cells else qo
        left -= min(rows * kv, left)
        if limits.max_rows:  # keep the case's K/V within one default storage binding
            room = max(rows_left - ROW_SLACK, 0)
            if kv > room:
                kv = room
                qo = min(qo, kv) if causal else qo
            rows_left -= min(kv + ROW_SLACK, rows_left)
        qo_lens.append(qo)
        kv_lens.append(kv)
    if not any(qo_lens):  # a launch needs one query row
        qo_lens[0], kv_lens[0] = 1, max(kv_lens[0], 1 if causal else 0)
    return np.array(qo_lens, np.int64), np.array(kv_lens, np.int64)


# The strategies above, one object per arguments: Hypothesis validates a strategy object the first
# time it is drawn from, which cost more than the draws themselves when every case built its own.
# The draws are the same.
@cache
def _chunk_lengths(special_q: tuple, max_q_len: int):
    return st.one_of(st.just(1), st.sampled_from(special_q), spread_integers(1, max_q_len), st.just(0))


@lru_cache(maxsize=4096)
def _histories(room: int):
    return st.one_of(st.sampled_from([h for h in SPECIAL_HISTORIES if h <= room] or [0]),
                     spread_integers(0, max(room, 0)), st.just(max(room, 0)))


@lru_cache(maxsize=4096)
def _contexts(low: int, max_context: int, qo: int):
    return st.one_of(spread_integers(low, max_context),
                     st.sampled_from([max(low, min(qo + h, max_context)) for h in SPECIAL_HISTORIES]))


@lru_cache(maxsize=4096)
def spread_integers(low: int, high: int):
    """Integers in [low, high], log-uniform: as many 2-digit as 4-digit values, so long prompts and
    contexts come now and then rather than in every case (their reference costs chunk x context)."""
    if high <= low:
        return st.just(max(low, high))

    def octave(e: int):
        lo = min(high, max(low, (1 << e) - 1))
        return st.integers(lo, max(lo, min(high, (1 << (e + 1)) - 1)))

    return st.integers(0, high.bit_length() - 1).flatmap(octave)


def _indptr(lengths) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)


def prefill_values(rng, kind: str, qo_lens, kv_lens, qo_heads: int, kv_heads: int, head_dim: int, v_dim: int, dtype,
                   sm_scale: float):
    """q [T, Hq, D], and each sequence's K [B, Hkv, Lmax, D] and V [B, Hkv, Lmax, Dv] in logical row
    order (zero past kv_len), for a value kind (PREFILL_VALUE_KINDS; see the module docstring).

    Values are drawn for the rows the sequences hold (sum of kv_len), not for the padded
    [B, Hkv, Lmax] block: a batch of one 8192-row context beside seven short ones would otherwise
    draw, convert and mask eight times the values it uses. The kinds built from normal draws work
    in float32: they are stored as f16 or f32, and float64 draws cost twice the memory and a slow
    float64 -> f16 conversion (a 4000-row context: 232 ms against 35 ms for "normal")."""
    kv_lens = np.asarray(kv_lens, np.int64)
    total, batch, longest = int(np.sum(qo_lens)), len(kv_lens), int(np.max(kv_lens, initial=0))
    rows = int(kv_lens.sum())
    q_shape, k_shape, v_shape = (total, qo_heads, head_dim), (rows, kv_heads, head_dim), (rows, kv_heads, v_dim)
    sequence = np.repeat(np.arange(batch), kv_lens)  # the sequence of each drawn K/V row
    if kind in ("normal", "uniform", "spiky"):
        q, k, v = (make_values(rng, kind, shape, dtype) for shape in (q_shape, k_shape, v_shape))
    elif kind == "large":
        spread = 10.0 ** rng.uniform(2.0, 4.0)  # typical |logit| (base 2)
        amplitude = np.float32(np.sqrt(spread / (np.sqrt(head_dim) * sm_scale * np.log2(np.e))))
        q = (_normal(rng, q_shape) * amplitude).astype(dtype)
        k = (_normal(rng, k_shape) * amplitude).astype(dtype)
        v = make_values(rng, "large", v_shape, dtype)
    else:
        q = _normal(rng, q_shape)
        v = make_values(rng, "normal", v_shape, dtype)
        noise = _normal(rng, k_shape)
        q_sequence = np.repeat(np.arange(batch), qo_lens)
        direction = np.zeros((batch, kv_heads, head_dim), np.float32)
        for b in range(batch):  # the mean direction of each sequence's queries, per kv head
            group_rows = q[q_sequence == b].reshape(-1, kv_heads, qo_heads // kv_heads, head_dim)
            if group_rows.size:
                direction[b] = group_rows.mean(axis=(0, 2))
        direction /= np.maximum(np.linalg.norm(direction, axis=-1, keepdims=True), 1e-6)
        if kind == "equal_logits":
            k = _normal(rng, (batch, kv_heads, head_dim))[sequence] + np.float32(1e-3) * noise
        elif kind == "rising":
            position = np.arange(rows) - np.repeat(np.cumsum(kv_lens) - kv_lens, kv_lens)  # row within its sequence
            ramp = np.linspace(-4.0, 4.0, max(longest, 1), dtype=np.float32)[position][:, None, None]
            k = direction[sequence] * (ramp * np.float32(np.sqrt(head_dim))) + np.float32(0.1) * noise
        elif kind == "peaked":
            k = np.float32(0.3) * noise
            starts = np.cumsum(kv_lens) - kv_lens
            for b in range(batch):
                if kv_lens[b]:
                    k[starts[b] + rng.integers(0, kv_lens[b])] += direction[b] * np.float32(3.0 * np.sqrt(head_dim))
        else:
            raise ValueError(f"unknown prefill value kind {kind!r}; expected one of {PREFILL_VALUE_KINDS}")
        q, k, v = (np.asarray(x).astype(dtype) for x in (q, k, v))
    return q, _padded(k, kv_lens, longest), _padded(v, kv_lens, longest)


def _normal(rng, shape) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32)


def _padded(rows: np.ndarray, lengths, longest: int) -> np.ndarray:
    """Ragged rows [sum(lengths), Hkv, X] -> [B, Hkv, Lmax, X], zero past each sequence's length."""
    out = np.zeros((len(lengths), rows.shape[1], longest, rows.shape[2]), rows.dtype)
    start = 0
    for b, n in enumerate(int(n) for n in lengths):
        out[b, :, :n] = rows[start:start + n].transpose(1, 0, 2)
        start += n
    return out


def _ragged_rows(rows: np.ndarray, lengths) -> np.ndarray:
    """[B, Hkv, Lmax, X] logical rows -> ragged [sum(lengths), Hkv, X]."""
    parts = [rows[b, :, :n].transpose(1, 0, 2) for b, n in enumerate(lengths)]
    if not parts:
        return np.zeros((0,) + (rows.shape[1], rows.shape[3]), rows.dtype)
    return np.ascontiguousarray(np.concatenate(parts, axis=0))


@cache
@st.composite
def _rope(draw, head_dim: int, llama3, rotate_always: bool = False):
    """(rotary_mode, rope_theta, rope_scale, band_edge): inline rope drawn on or off (always on with
    Llama 3 scaling compiled in, whose frequencies are then the point). One strategy object per
    arguments, its draws from ones made once (see _chunk_lengths)."""
    rotary = 1 if (llama3 is not None or rotate_always) else draw(_ROTARY_MODES)
    theta, edge = draw(cached_rope_bases(head_dim, llama3))
    scale = 1.0 if llama3 is not None else draw(_ROPE_SCALES)
    return rotary, theta, scale, edge if rotary else ""


def _positions(rng, mode: str, qo_lens, kv_lens, causal: bool, rotary: int, llama3):
    """(k_rope_pos_offset [B], q_rope_position [T]): "runtime" as TVM's runtime fills them (K row c
    at offset + c, the chunk right after its history: q at offset + kv_len - qo_len + i with the
    causal mask, at offset + kv_len + i when the chunk is not in the context), or "random" (any
    position up to the top, so a row reading another row's position shows)."""
    batch, total = len(qo_lens), int(np.sum(qo_lens))
    if not rotary:
        return np.zeros(batch, np.int32), np.zeros(total, np.int32)
    top = max_position(llama3)
    extent = np.asarray(kv_lens) + (0 if causal else np.asarray(qo_lens))
    offset = np.array([rng.integers(0, max(1, top + 1 - int(n))) for n in extent], np.int64)
    if mode == "random":
        return offset.astype(np.int32), rng.integers(0, top + 1, total).astype(np.int32)
    first = offset + np.asarray(kv_lens) - (np.asarray(qo_lens) if causal else 0)
    q_pos = np.concatenate([f + np.arange(n) for f, n in zip(first, qo_lens)] or [np.zeros(0)])
    return offset.astype(np.int32), q_pos.astype(np.int32)


_PREFILL_KINDS = st.sampled_from(PREFILL_VALUE_KINDS)
_POSITION_MODES = st.sampled_from(["runtime", "random"])


@cache
@st.composite
def _common(draw, head_dim: int):
    kind = draw(_PREFILL_KINDS)
    sm_scale = draw(_sm_scales(head_dim))
    return kind, float(sm_scale), draw(seeds), draw(_POSITION_MODES)


def _dtype(config):
    return np.float16 if config["dtype"] == "f16" else np.float32


@st.composite
def paged_prefill_cases(draw, config: dict, profile: Profile | str, *, causal: bool, sliding: bool = False,
                        llama3=None):
    """A paged prefill case (TVM's `batch_prefill_paged_kv[_sliding_window]` arguments): q [T, Hq, D],
    q_indptr [B+1], the paged context (pages [P, 2, Hkv, 16, D], page_indptr, page_values,
    length_info [B], or [3, B] with sinks and window offsets when `sliding`), k_rope_pos_offset [B]
    and q_rope_position [T]."""
    limits = prefill_limits(profile, config["qo_heads"], context_row_bytes(config))
    group = config["qo_heads"] // config["kv_heads"]
    qo_lens, kv_lens = draw(prefill_lengths(limits, group, causal=causal))
    batch = len(qo_lens)
    window = None
    if sliding:
        sinks = [draw(st.integers(0, min(int(n), 8))) for n in kv_lens]
        offsets = [s + draw(st.sampled_from([0, 1, config["page_size"] - 1, config["page_size"], 37])) for s in sinks]
        window = (np.array(offsets, np.int64), np.array(sinks, np.int64))
    rotary, theta, scale, edge = draw(_rope(config["head_dim"], llama3))
    kind, sm_scale, seed, position_mode = draw(_common(config["head_dim"]))
    spare = draw(st.integers(0, 3))
    rng = np.random.default_rng(seed)
    q, k_rows, v_rows = prefill_values(rng, kind, qo_lens, kv_lens, config["qo_heads"], config["kv_heads"],
                                       config["head_dim"], config["head_dim"], _dtype(config), sm_scale)
    pages, page_indptr, page_values, length_info = build_paged_cache(rng, k_rows, v_rows, kv_lens, config["page_size"],
                                                                     sliding=window, spare_pages=spare)
    k_offset, q_position = _positions(rng, position_mode, qo_lens, kv_lens, causal, rotary, llama3)
    arrays = {"q": q, "q_indptr": _indptr(qo_lens), "pages": pages, "page_indptr": page_indptr,
              "page_values": page_values, "length_info": length_info, "k_rope_pos_offset": k_offset,
              "q_rope_position": q_position}
    params = {"batch": batch, "qo_lens": qo_lens.tolist(), "kv_lens": kv_lens.tolist(), "causal": int(causal),
              "rotary_mode": rotary, "rope_theta": theta, "rope_scale": scale, "sm_scale": sm_scale, "values": kind,
              "positions": position_mode if rotary else "none", "spare_pages": spare, "seed": seed}
    if edge:
        params["band_edge"] = edge
    return Case(arrays, params)


@st.composite
def ragged_prefill_cases(draw, config: dict, profile: Profile | str, *, causal: bool, v_head_dim: int, llama3=None):
    """A ragged prefill case (`batch_prefill_ragged_kv`): q [T, Hq, D], q_indptr, k [N, Hkv, D],
    v [N, Hkv, Dv], kv_indptr, k_rope_pos_offset [B], q_rope_position [T]. Half the causal cases are
    the runtime's own call, the chunk attending itself (kv_indptr == q_indptr)."""
    limits = prefill_limits(profile, config["qo_heads"], context_row_bytes(config, v_head_dim))
    group = config["qo_heads"] // config["kv_heads"]
    qo_lens, kv_lens = draw(prefill_lengths(limits, group, causal=causal))
    if causal and draw(st.booleans()):
        kv_lens = qo_lens.copy()  # paged_kv_cache.cc L2182-2191: the chunk's own K/V, causal
    rotary, theta, scale, edge = draw(_rope(config["head_dim"], llama3))
    kind, sm_scale, seed, position_mode = draw(_common(config["head_dim"]))
    rng = np.random.default_rng(seed)
    q, k_rows, v_rows = prefill_values(rng, kind, qo_lens, kv_lens, config["qo_heads"], config["kv_heads"],
                                       config["head_dim"], v_head_dim, _dtype(config), sm_scale)
    k_offset, q_position = _positions(rng, position_mode, qo_lens, kv_lens, causal, rotary, llama3)
    arrays = {"q": q, "q_indptr": _indptr(qo_lens), "k": _ragged_rows(k_rows, kv_lens),
              "v": _ragged_rows(v_rows, kv_lens), "kv_indptr": _indptr(kv_lens), "k_rope_pos_offset": k_offset,
              "q_rope_position": q_position}
    params = {"batch": len(qo_lens), "qo_lens": qo_lens.tolist(), "kv_lens": kv_lens.tolist(), "causal": int(causal),
              "rotary_mode": rotary, "rope_theta": theta, "rope_scale": scale, "sm_scale": sm_scale, "values": kind,
              "positions": position_mode if rotary else "none", "seed": seed}
    if edge:
        params["band_edge"] = edge
    return Case(arrays, params)


# -- token trees ----------------------------------------------------------------------------------------
TREE_SHAPES = ("chain", "star", "random", "forest", "binary")
#: Query rows x heads x context rows of one tree case at most (160 MB of float64 logits).
TREE_CELLS = 20_000_000


_TREE_SHAPE_CHOICES = st.sampled_from(TREE_SHAPES)


@cache
def _tree_sizes(max_size: int):
    return st.one_of(st.integers(1, max_size), st.sampled_from([s for s in (1, 2, 16, 17, 32, 33, max_size)
                                                                if s <= max_size]))


@lru_cache(maxsize=4096)
def _tree_queries(size: int):
    return st.one_of(st.just(size), st.integers(1, size))


@lru_cache(maxsize=4096)
def _tree_histories(room: int):
    return st.one_of(st.sampled_from([h for h in SPECIAL_HISTORIES if h <= room]), st.integers(0, room))


@cache
@st.composite
def token_trees(draw, max_size: int):
    """(shape, parents): a parent array (-1 for a root, else an earlier node; TVM's rule,
    paged_kv_cache.cc L1878-1884) of 1..max_size nodes: a chain (speculative decoding of one
    draft), a star (one token, many candidates), a binary tree, or random parents, with several
    roots for a forest."""
    shape = draw(_TREE_SHAPE_CHOICES)
    size = draw(_tree_sizes(max_size))
    if shape == "chain":
        parents = list(range(-1, size - 1))
    elif shape == "star":
        parents = [-1] + [0] * (size - 1)
    elif shape == "binary":
        parents = [-1] + [(n - 1) // 2 for n in range(1, size)]
    else:
        seed = draw(seeds)
        rng = np.random.default_rng(seed)
        lowest = -1 if shape == "forest" else 0
        parents = [-1] + [int(rng.integers(lowest, n)) for n in range(1, size)]
    return shape, parents


@st.composite
def tree_cases(draw, config: dict, profile: Profile | str, *, paged: bool, llama3=None):
    """A token-tree case. Each sequence's tree is the last rows of its context; its queries are the
    tree's last qo_len nodes (`_check_tree_order`, tree_attn.py L47-64).

    Ragged (`batch_tree_attn`): q, q_indptr, k, v, kv_indptr, q_rope_position, mn_indptr, mask (the
    preorder pairs of references.token_tree.tree_order, as the runtime builds them, L1900-1917). As
    the runtime calls it, the queries are the whole tree and the context is the tree itself
    (kv_indptr == q_indptr == mn_indptr), positions the nodes' depths after the sequence's offset; now
    and then (rope off) a context holding earlier rows and queries only the last nodes.
    Paged (`tree_attn_paged_kv`): the tree after a paged history; tree_order_indptr and tree_order.
    Both carry token_tree_parent_ptr for the reference."""
    limits = prefill_limits(profile, config["qo_heads"])
    batch = draw(st.integers(1, limits.max_batch))
    trees = [draw(token_trees(limits.max_tree)) for _ in range(batch)]
    sizes = np.array([len(parents) for _, parents in trees], np.int64)
    runtime_form = not paged and draw(st.booleans())
    if paged or not runtime_form:
        qo_lens = np.array([draw(_tree_queries(int(n))) for n in sizes], np.int64)
        # the tree reference is evaluated whole ([rows, Hq, context] logits): keep it to TREE_CELLS
        # and to the profile's work bound
        work = min(TREE_CELLS, limits.max_cells * config["qo_heads"]) if limits.max_cells else TREE_CELLS
        cap = work // (config["qo_heads"] * int(qo_lens.sum())) - int(sizes.max())
        history_room = max(0, min(limits.max_context - int(sizes.max()), cap))
        histories = np.array([draw(_tree_histories(history_room)) for _ in range(batch)], np.int64)
    else:
        qo_lens, histories = sizes.copy(), np.zeros(batch, np.int64)
    kv_lens = histories + sizes
    rotary, theta, scale, edge = ((0, 1e4, 1.0, "") if (paged or not runtime_form)
                                  else draw(_rope(config["head_dim"], llama3)))
    kind, sm_scale, seed, _ = draw(_common(config["head_dim"]))
    rng = np.random.default_rng(seed)
    q, k_rows, v_rows = prefill_values(rng, kind, qo_lens, kv_lens, config["qo_heads"], config["kv_heads"],
                                       config["head_dim"], config["head_dim"], _dtype(config), sm_scale)
    parents = np.concatenate([np.array(p, np.int32) for _, p in trees])
    tree_indptr = _indptr(sizes)
    order = np.concatenate([tree_order(p) for _, p in trees]).astype(np.int32)
    arrays = {"q": q, "q_indptr": _indptr(qo_lens), "token_tree_parent_ptr": parents}
    params = {"batch": batch, "qo_lens": qo_lens.tolist(), "kv_lens": kv_lens.tolist(),
              "trees": [shape for shape, _ in trees], "tree_sizes": sizes.tolist(), "sm_scale": sm_scale,
              "values": kind, "seed": seed}
    if paged:
        spare = draw(st.integers(0, 3))
        pages, page_indptr, page_values, length_info = build_paged_cache(rng, k_rows, v_rows, kv_lens,
                                                                         config["page_size"], spare_pages=spare)
        arrays.update(pages=pages, page_indptr=page_indptr, page_values=page_values, length_info=length_info,
                      tree_order_indptr=tree_indptr, tree_order=order)
        params["spare_pages"] = spare
    else:
        offsets = rng.integers(0, max_position(llama3) - int(sizes.max()), batch) if rotary else np.zeros(batch, int)
        q_position = np.concatenate([o + tree_depths(p)[-n:] for o, (_, p), n in zip(offsets, trees, qo_lens)])
        arrays.update(k=_ragged_rows(k_rows, kv_lens), v=_ragged_rows(v_rows, kv_lens), kv_indptr=_indptr(kv_lens),
                      q_rope_position=q_position.astype(np.int32), mn_indptr=tree_indptr, mask=order)
        params.update(rotary_mode=rotary, rope_theta=theta, rope_scale=scale)
        if edge:
            params["band_edge"] = edge
    return Case(arrays, params)


# -- dense batches ----------------------------------------------------------------------------------------
@st.composite
def dense_prefill_cases(draw, config: dict, profile: Profile | str, *, causal: bool):
    """A dense batch (`batch_sequence_prefill_kv`): q [B, qo_len, Hq, D], k and v [B, kv_len, Hkv, D],
    every sequence of the same lengths; kv_len >= 1 (and >= qo_len with the causal mask)."""
    limits = prefill_limits(profile, config["qo_heads"], context_row_bytes(config))
    group = config["qo_heads"] // config["kv_heads"]
    batch = draw(st.integers(1, limits.max_batch))
    single = PrefillLimits(1, limits.max_q_len, limits.max_context, limits.max_tree, limits.max_cells,
                           limits.max_rows)
    qo_lens, kv_lens = draw(prefill_lengths(single, group, causal=causal, batch=1, allow_empty_context=False))
    qo, kv = max(int(qo_lens[0]), 1), max(int(kv_lens[0]), int(qo_lens[0]) if causal else 1, 1)
    while batch > 1 and (batch * qo * kv > limits.cells or (limits.max_rows and batch * kv > limits.max_rows)):
        batch -= 1
    kind, _, seed, _ = draw(_common(config["head_dim"]))
    sm_scale = float(config["head_dim"] ** -0.5)  # the build's (verify.sources.tvm.attention.prefill)
    rng = np.random.default_rng(seed)
    q, k_rows, v_rows = prefill_values(rng, kind, [qo] * batch, [kv] * batch, config["qo_heads"], config["kv_heads"],
                                       config["head_dim"], config["head_dim"], _dtype(config), sm_scale)
    arrays = {"q": q.reshape(batch, qo, config["qo_heads"], config["head_dim"]),
              "k": np.ascontiguousarray(k_rows.transpose(0, 2, 1, 3)),
              "v": np.ascontiguousarray(v_rows.transpose(0, 2, 1, 3))}
    params = {"batch": batch, "qo_len": qo, "kv_len": kv, "causal": int(causal), "sm_scale": sm_scale,
              "values": kind, "seed": seed}
    return Case(arrays, params)


# -- metamorphic transforms of prefill cases ------------------------------------------------------------
def _transform_rng(case: Case, salt: int) -> np.random.Generator:
    """Transforms derive their randomness from the case, so a saved case replays exactly."""
    return np.random.default_rng([int(case.params.get("seed", 0)), salt])


def total_rows(case: Case) -> int:
    """Query rows of a case (a dense batch counts B x qo_len)."""
    q = case["q"]
    return int(q.shape[0] * q.shape[1]) if q.ndim == 4 else int(q.shape[0])


@dataclass(frozen=True)
class ChunkSplit:
    """A case's query rows cut in two chunks (first, second): `assemble` puts arrays of the two
    parts' rows (leading axis, or axes B, qo_len for dense batches) back in the case's row order."""

    first: Case
    second: Case
    first_rows: np.ndarray   # whole-case row of each row of `first` (ragged layouts)
    second_rows: np.ndarray
    dense_cut: int = -1      # dense batches: rows [0, cut) and [cut, qo_len) of every sequence
    #: whether the first chunk runs on a shorter context than the whole (the causal mask's); the
    #: second always runs on the whole context
    first_context_cut: bool = True

    def on_whole_context(self, part: int) -> bool:
        """Whether chunk `part` (0: first, 1: second) runs on the whole case's context: its rows
        then see and walk what the same rows of the whole prefill do, so their references and
        budgets are those rows' (`rows_of`)."""
        return part == 1 or not self.first_context_cut

    def rows_of(self, whole, part: int) -> np.ndarray:
        """Chunk `part`'s rows of an array of the whole case's rows (assemble's inverse)."""
        whole = np.asarray(whole)
        if self.dense_cut >= 0:
            return whole[:, :self.dense_cut] if part == 0 else whole[:, self.dense_cut:]
        return whole[self.first_rows if part == 0 else self.second_rows]

    def assemble(self, first, second) -> np.ndarray:
        first, second = np.asarray(first), np.asarray(second)
        if self.dense_cut >= 0:
            return np.concatenate([first, second], axis=1)
        out = np.empty((self.first_rows.size + self.second_rows.size,) + first.shape[1:], first.dtype)
        out[self.first_rows], out[self.second_rows] = first, second
        return out


def _cuts(case: Case, qo_lens) -> np.ndarray:
    """A cut 0 <= a_b <= qo_len[b] per sequence, with rows on both sides in all."""
    rng = _transform_rng(case, 4)
    qo_lens = np.asarray(qo_lens, np.int64)
    cut = np.array([rng.integers(0, n + 1) for n in qo_lens], np.int64)
    if qo_lens.sum() >= 2:
        while cut.sum() == 0 or cut.sum() == qo_lens.sum():
            b = int(rng.choice(np.flatnonzero(qo_lens > 0)))
            cut[b] = rng.integers(1, qo_lens[b]) if qo_lens[b] >= 2 else (1 - cut[b])
    return cut


def _rows(indptr, start, stop) -> np.ndarray:
    return np.concatenate([np.arange(i + a, i + b) for i, a, b in zip(indptr[:-1], start, stop)] or [np.zeros(0)]
                          ).astype(np.int64)


def split_chunk(case: Case, layout: str, page_size: int = 16) -> ChunkSplit:
    """Chunked prefill, as TVM's runtime runs a long prompt: the query rows [0, a_b) of each sequence
    b first, on the context as it stood then (the first kv_len - qo_len + a_b rows when the chunk is
    causal; the same context otherwise), then rows [a_b, qo_len) on the whole context. Each row sees
    the same columns with the same values and positions as in the whole prefill, so both runs are
    within their budgets of the same exact values. `layout` is "paged", "ragged" or "dense".
    """
    causal = bool(case.params.get("causal", 1))
    if layout == "dense":
        qo_len, kv_len = int(case.params["qo_len"]), int(case.params["kv_len"])
        at = int(_transform_rng(case, 4).integers(1, qo_len)) if qo_len >= 2 else 0
        kept = kv_len - qo_len + at if causal else kv_len
        head = case.replace({"q": case["q"][:, :at], "k": case["k"][:, :kept], "v": case["v"][:, :kept]},
                            qo_len=at, kv_len=kept)
        second = case.replace({"q": case["q"][:, at:]}, qo_len=qo_len - at)
        return ChunkSplit(head, second, np.zeros(0, np.int64), np.zeros(0, np.int64), at, causal)
    q_indptr = np.asarray(case["q_indptr"], np.int64)
    qo_lens = np.diff(q_indptr)
    kv_lens = np.asarray(case.params["kv_lens"], np.int64)
    cut = _cuts(case, qo_lens)
    first_rows, second_rows = _rows(q_indptr, np.zeros_like(cut), cut), _rows(q_indptr, cut, qo_lens)
    context = kv_lens - qo_lens + cut if causal else kv_lens

    def queries(rows, lengths) -> dict:
        arrays = {"q": case["q"][rows], "q_indptr": _indptr(lengths)}
        if "q_rope_position" in case.arrays:
            arrays["q_rope_position"] = case["q_rope_position"][rows]
        return arrays

    first = queries(first_rows, cut)
    if layout == "ragged":
        kv_indptr = np.asarray(case["kv_indptr"], np.int64)
        keep = _rows(kv_indptr, np.zeros_like(context), context)
        first.update(k=case["k"][keep], v=case["v"][keep], kv_indptr=_indptr(context))
    elif causal:  # the same pages, each sequence's table cut after its first `context` rows
        page_indptr = np.asarray(case["page_indptr"], np.int64)
        pages = -(-context // page_size)
        values = [case["page_values"][page_indptr[b]:page_indptr[b] + pages[b]] for b in range(len(pages))]
        first.update(page_indptr=_indptr(pages), page_values=np.concatenate(values).astype(np.int32),
                     length_info=np.where(context > 0, (context - 1) % page_size + 1, 0).astype(np.int32))
    split = ChunkSplit(case.replace(first, qo_lens=cut.tolist(), kv_lens=context.tolist()),
                       case.replace(queries(second_rows, qo_lens - cut), qo_lens=(qo_lens - cut).tolist()),
                       first_rows, second_rows, first_context_cut=causal)
    return split


def last_rows_as_decode(case: Case, layout: str, page_size: int = 16) -> tuple[Case, np.ndarray]:
    """A decode case of every sequence's last query token on the same context, and the prefill row
    of each sequence's last token (-1 for a sequence with no query rows, whose decode query is 0).

    Decode attends one token to the whole context: the causal mask lets a chunk's last row see
    c < kv_len, and the unmasked prefill lets every row see that. Paged cases keep their pages and
    table; a ragged context is laid out in shuffled pages (build_paged_cache). The query keeps its
    rope position, the keys their offsets."""
    last = _last_rows(case)
    q = np.where((last >= 0)[:, None, None], case["q"][np.maximum(last, 0)], 0).astype(case["q"].dtype)
    kv_lens = np.asarray(case.params["kv_lens"], np.int64)
    positions = case["q_rope_position"][np.maximum(last, 0)] if case["q_rope_position"].size else \
        np.zeros(last.size, np.int32)
    arrays = {"q": q, "k_rope_pos_offset": case["k_rope_pos_offset"],
              "q_rope_position": np.where(last >= 0, positions, 0).astype(np.int32)}
    if layout == "paged":
        arrays.update({name: case[name] for name in ("pages", "page_indptr", "page_values", "length_info")})
    else:
        kv_indptr = np.asarray(case["kv_indptr"], np.int64)
        longest = int(kv_lens.max(initial=0))
        index = np.minimum(kv_indptr[:-1, None] + np.arange(longest), max(case["k"].shape[0] - 1, 0))
        k_rows, v_rows = (x[index].transpose(0, 2, 1, 3) if x.shape[0] else np.zeros((len(kv_lens), x.shape[1], 0,
                          x.shape[2]), x.dtype) for x in (case["k"], case["v"]))
        pages, indptr, values, info = build_paged_cache(_transform_rng(case, 5), k_rows, v_rows, kv_lens, page_size,
                                                        spare_pages=1)
        arrays.update(pages=pages, page_indptr=indptr, page_values=values, length_info=info)
    params = {"batch": len(kv_lens), "lengths": kv_lens.tolist(), "rotary_mode": case.params.get("rotary_mode", 0),
              "rope_theta": case.params.get("rope_theta", 1e4), "rope_scale": case.params.get("rope_scale", 1.0),
              "sm_scale": case.params["sm_scale"], "values": case.params.get("values", ""),
              "seed": case.params.get("seed", 0)}
    return Case(arrays, params), last


def _last_rows(case: Case) -> np.ndarray:
    """The row of each sequence's last query token, -1 for a sequence with no query rows."""
    q_indptr = np.asarray(case["q_indptr"], np.int64)
    return np.where(np.diff(q_indptr) > 0, q_indptr[1:] - 1, -1)


def last_rows(case: Case) -> Case:
    """The prefill case of every sequence's last query row alone, on the same context: the rows
    last_rows_as_decode takes, in the same order (sequences without query rows keep none).

    Their reference and budget are those rows' in the whole case, since a row's depend only on its
    own query, position, mask row and sequence, and a chunk of one row sees what the chunk's last
    row sees (c < kv_len, with the causal mask or without); prefill_vs_decode reads only these rows,
    and evaluating the whole chunk for them cost its every row (4096 of them for a long prompt)."""
    every = _last_rows(case)
    has, last = every >= 0, every[every >= 0]
    positions = case["q_rope_position"]
    arrays = {"q": case["q"][last], "q_indptr": _indptr(has.astype(np.int64)),
              "q_rope_position": positions[last] if positions.size == case["q"].shape[0] else positions}
    return case.replace(arrays, qo_lens=has.astype(int).tolist())


# -- pinned cases (outside Hypothesis) --------------------------------------------------------------------
def explicit_paged_case(config: dict, qo_lens, kv_lens, *, causal: bool, seed: int = 0, spare_pages: int = 2) -> Case:
    """A paged prefill case with exactly these lengths: N(0,1) values, shuffled pages with NaN spares,
    rope off."""
    rng = np.random.default_rng(seed)
    qo_lens, kv_lens = np.asarray(qo_lens, np.int64), np.asarray(kv_lens, np.int64)
    sm_scale = float(config["head_dim"] ** -0.5)
    q, k_rows, v_rows = prefill_values(rng, "normal", qo_lens, kv_lens, config["qo_heads"], config["kv_heads"],
                                       config["head_dim"], config["head_dim"], _dtype(config), sm_scale)
    pages, page_indptr, page_values, length_info = build_paged_cache(rng, k_rows, v_rows, kv_lens, config["page_size"],
                                                                     spare_pages=spare_pages)
    arrays = {"q": q, "q_indptr": _indptr(qo_lens), "pages": pages, "page_indptr": page_indptr,
              "page_values": page_values, "length_info": length_info,
              "k_rope_pos_offset": np.zeros(len(kv_lens), np.int32), "q_rope_position": np.zeros(q.shape[0], np.int32)}
    params = {"batch": len(qo_lens), "qo_lens": qo_lens.tolist(), "kv_lens": kv_lens.tolist(), "causal": int(causal),
              "rotary_mode": 0, "rope_theta": 1e4, "rope_scale": 1.0, "sm_scale": sm_scale, "values": "normal",
              "seed": seed}
    return Case(arrays, params)


def explicit_tree_case(config: dict, trees, *, seed: int = 0) -> Case:
    """A ragged token-tree case as the runtime calls it: each tree is its sequence's whole context and
    all its queries (kv_indptr == q_indptr == mn_indptr), N(0,1) values, rope off."""
    rng = np.random.default_rng(seed)
    sizes = np.array([len(t) for t in trees], np.int64)
    sm_scale = float(config["head_dim"] ** -0.5)
    q, k_rows, v_rows = prefill_values(rng, "normal", sizes, sizes, config["qo_heads"], config["kv_heads"],
                                       config["head_dim"], config["head_dim"], _dtype(config), sm_scale)
    indptr = _indptr(sizes)
    arrays = {"q": q, "q_indptr": indptr, "k": _ragged_rows(k_rows, sizes), "v": _ragged_rows(v_rows, sizes),
              "kv_indptr": indptr, "q_rope_position": np.zeros(q.shape[0], np.int32), "mn_indptr": indptr,
              "mask": np.concatenate([tree_order(t) for t in trees]).astype(np.int32),
              "token_tree_parent_ptr": np.concatenate([np.asarray(t, np.int32) for t in trees])}
    params = {"batch": len(trees), "qo_lens": sizes.tolist(), "kv_lens": sizes.tolist(), "tree_sizes": sizes.tolist(),
              "rotary_mode": 0, "rope_theta": 1e4, "rope_scale": 1.0, "sm_scale": sm_scale, "values": "normal",
              "seed": seed}
    return Case(arrays, params)
