"""Strategies for attention kernels: merge states, paged decode cases (rotary inputs:
verify.kernels.attention.rope_cases)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

import numpy as np
from hypothesis import strategies as st

from verify.cases.case import Case
from verify.cases.values import _normal_table, make_values, seeds, value_kinds
from verify.kernels.attention.rope_cases import cached_rope_bases, max_position
from verify.kernels.attention.sizes import SIZES
from verify.profiles import Profile

#: How two states' LSEs relate: close (weights comparable), far (one dominates, up to 2^-200),
#: offset (both large in magnitude, as after long contexts), empty (-inf on one or both sides).
LSE_KINDS = ("close", "far", "offset", "empty")


def _lse_pair(rng: np.random.Generator, kind: str, shape) -> tuple[np.ndarray, np.ndarray]:
    base = rng.standard_normal(shape) * 4.0
    if kind == "close":
        other = base + rng.standard_normal(shape)
    elif kind == "far":
        other = base + rng.choice([-1.0, 1.0], shape) * rng.uniform(20.0, 200.0, shape)
    elif kind == "offset":
        shift = rng.uniform(-3e4, 3e4)
        base, other = base + shift, base + shift + rng.standard_normal(shape) * 8.0
    elif kind == "empty":
        other = base + rng.standard_normal(shape)
        which = rng.integers(0, 4, shape)  # 0: none, 1: self, 2: other, 3: both empty
        base = np.where((which == 1) | (which == 3), -np.inf, base)
        other = np.where((which == 2) | (which == 3), -np.inf, other)
    else:
        raise ValueError(f"unknown LSE kind {kind!r}")
    return base.astype(np.float32), other.astype(np.float32)


@st.composite
def merge_cases(draw, head_dim: int, dtype: str, max_tokens: int = 16, max_heads: int = 32, *,
                heads: int | None = None, lse_kinds: tuple = LSE_KINDS):
    """Two states per (token, head): v, v_other [N, H, D] in `dtype`, s, s_other [N, H] f32.

    `heads` pins H for kernels specialised on it (TVM's merge); `lse_kinds` narrows LSE_KINDS.
    """
    tokens = draw(st.integers(1, max_tokens))
    heads = heads or draw(st.integers(1, max_heads))
    lse_kind = draw(st.sampled_from(lse_kinds))
    values = draw(value_kinds)
    seed = draw(seeds)
    rng = np.random.default_rng(seed)
    shape = (tokens, heads, head_dim)
    s, s_other = _lse_pair(rng, lse_kind, shape[:2])
    v = make_values(rng, values, shape, dtype)
    v_other = make_values(rng, values, shape, dtype)
    v = np.where(np.isinf(s)[..., None], 0, v).astype(v.dtype)  # an empty state's output is 0
    v_other = np.where(np.isinf(s_other)[..., None], 0, v_other).astype(v.dtype)
    params = {"tokens": tokens, "heads": heads, "lse_kind": lse_kind, "values": values, "seed": seed}
    return Case({"v": v, "s": s, "v_other": v_other, "s_other": s_other}, params)


def merge_corners(head_dim: int, dtype: str, heads: int = 2) -> list[Case]:
    """The merge's corners: two empty states (lse -inf, v 0: their merge is the empty state), one
    empty side either way, equal LSEs (weights 1/2 each, where rounding of the weights is
    tightest), and a large LSE gap (one weight underflows to 0)."""
    t = np.float16 if dtype == "f16" else np.float32
    inf = np.float32(np.inf)
    s = np.array([[-inf] * heads, [-inf] * heads, [1.0] * heads, [0.5] * heads, [200.0] * heads], np.float32)
    s_other = np.array([[-inf] * heads, [2.0] * heads, [-inf] * heads, [0.5] * heads, [-200.0] * heads], np.float32)
    rng = np.random.default_rng(7)
    shape = (s.shape[0], heads, head_dim)
    v = np.where(np.isinf(s)[..., None], 0, rng.standard_normal(shape)).astype(t)
    v_other = np.where(np.isinf(s_other)[..., None], 0, rng.standard_normal(shape)).astype(t)
    params = {"tokens": s.shape[0], "heads": heads, "lse_kind": "corners", "values": "normal", "seed": 7}
    return [Case({"v": v, "s": s, "v_other": v_other, "s_other": s_other}, params)]


def decode_corners(config: dict) -> list[Case]:
    """The paged decode's corners: one row; exactly a page; one row past a page; and a batch of a
    row, a page less one, two pages and three rows, and a page (the tails of the first and last
    page of each sequence, and sequences of different page counts side by side)."""
    page = config["page_size"]
    shapes = ([1], [page], [page + 1], [1, page - 1, 2 * page + 3, page])

    def sliding(n: int):
        return (np.zeros(n, np.int64), np.zeros(n, np.int64)) if config.get("sliding_window") else None

    return [explicit_decode_case(config, lengths, seed=11 + k, sliding=sliding(len(lengths)))
            for k, lengths in enumerate(shapes)]


# -- paged decode ---------------------------------------------------------------------------------
#: Data shapes for q/k/v beyond the plain value kinds: equal_logits (all keys nearly equal, so
#: the softmax is flat and sums are long), rising (keys increasingly aligned with q, along its
#: RISING_DIMS largest dimensions, so the running max moves at every tile and every rescale
#: matters), peaked (one key dominates).
#: far_negative puts every base-2 logit near -7e4, below the -5e4 that TVM-style kernels use
#: for -inf: softmax is shift-invariant, so the attention is still defined.
DECODE_VALUE_KINDS = ("normal", "uniform", "large", "spiky", "equal_logits", "rising", "peaked", "far_negative")
#: Where far_negative puts the logits (base 2).
FAR_NEGATIVE_LOGIT = -7e4
#: Unused slots and spare pages hold NaN, so a read of anything unattended poisons the output.
POISON = np.nan


@dataclass(frozen=True)
class DecodeLimits:
    """How big decode cases get in a profile."""

    max_batch: int
    max_context: int
    #: Context lengths drawn on purpose: 1, page and shard boundaries, 256 +- 1.
    special: tuple


def special_lengths(page_size: int, max_context: int) -> tuple:
    """Context lengths worth drawing on purpose, up to max_context: page boundaries for
    `page_size`, the boundaries of 128-row shards and tiles, and their neighbours."""
    p = page_size
    edges = {1, 2, p - 1, p, p + 1, 2 * p - 1, 2 * p + 1, 127, 128, 129, 255, 256, 257, 383, 385,
             511, 512, 513, 1023, 1025, 2047, 4096, 4097, 8191}
    return tuple(sorted(e for e in edges if 0 < e <= max_context))


def decode_limits(profile: Profile | str, page_size: int) -> DecodeLimits:
    """The profile's decode sizes, with the lengths worth drawing on purpose."""
    sizes = SIZES(profile)
    return DecodeLimits(sizes.max_batch, sizes.max_context, special_lengths(page_size, sizes.max_context))


def context_lengths(limits: DecodeLimits):
    """Attended lengths: mostly the boundary values, else anything up to the profile's maximum,
    with an occasional empty context."""
    return st.one_of(
        st.sampled_from(limits.special),
        st.integers(1, limits.max_context),
        st.integers(1, 48),
        st.just(0),
    )


VALUE_KINDS_SET = frozenset(("normal", "uniform", "large", "tiny", "spiky"))


@dataclass(frozen=True)
class PageLayout:
    """Where a batch's logical rows live in a shuffled page pool, as TVM's runtime lays it out.

    Sequence b occupies slots 0 .. slots[b]-1 of its logical pages page_indptr[b] ..; with a
    sliding window, rows below its sink size sit in the first slots and row r >= sink at slot
    r - sink + offset (the slots between are stale). `row` [P, page_size] is the logical row each
    physical slot holds, -1 for a stale or unused slot and every slot of a spare page; `sequence`
    [P] owns each physical page, -1 for a spare."""

    page_indptr: np.ndarray
    page_values: np.ndarray
    length_info: np.ndarray
    row: np.ndarray
    sequence: np.ndarray

    @property
    def num_pages(self) -> int:
        return self.sequence.size


def page_layout(rng, lengths, page_size, *, sliding=None, spare_pages=0) -> PageLayout:
    """The layout build_paged_cache scatters rows into (same slots, pages shuffled by rng, spare
    pages at random places in the pool), computed without any row data."""
    lengths = np.asarray(lengths, dtype=np.int64)
    batch = lengths.size
    offset, sink = sliding if sliding is not None else (np.zeros(batch, np.int64), np.zeros(batch, np.int64))
    slots = np.where(lengths > 0, offset + lengths - sink, 0)
    pages_per_seq = -(-slots // page_size)
    total = int(pages_per_seq.sum())
    num_pages = total + spare_pages
    physical = rng.permutation(num_pages)[:total]
    indptr = np.concatenate([[0], np.cumsum(pages_per_seq)]).astype(np.int64)
    owner = np.repeat(np.arange(batch), pages_per_seq)  # [total] the sequence of each logical page
    slot = (np.arange(total) - indptr[owner])[:, None] * page_size + np.arange(page_size)  # [total, page_size]
    sink_, offset_ = sink[owner][:, None], offset[owner][:, None]
    held = (slot < slots[owner][:, None]) & ((slot < sink_) | (slot >= offset_))
    row = np.full((num_pages, page_size), -1, np.int64)
    row[physical] = np.where(held, np.where(slot < sink_, slot, slot - offset_ + sink_), -1)
    sequence = np.full(num_pages, -1, np.int64)
    sequence[physical] = owner
    last_page_len = np.where(slots > 0, (slots - 1) % page_size + 1, 0).astype(np.int32)
    length_info = np.stack([last_page_len, offset, sink]).astype(np.int32) if sliding is not None else last_page_len
    return PageLayout(indptr.astype(np.int32), physical.astype(np.int32), length_info, row, sequence)


#: Rows of D values (one kv head's key or value in one slot) a decode case draws fresh; a larger
#: case picks its rows from this many fresh ones (paged_decode_values). Drawing a row costs D
#: normal draws (about 20 ns each for float32 on a 2-core machine), picking one a copy of its
#: bytes: at 8192 a nightly f32 case at D = 128 just below the line spent 40 ms drawing its K and
#: V; at 2048 no case spends more than about 10 ms, and a row read from the wrong slot still
#: meets other values with probability 2047/2048 (a wrong page of 16 rows: all but 2048^-16).
FRESH_ROWS = 2048


def paged_decode_values(rng, kind, q_shape, kv_heads, lengths, page_size, dtype, sm_scale, *, sliding=None,
                        spare_pages=0):
    """q [B, Hq, D] and a paged cache of `kind` (DECODE_VALUE_KINDS): (q, pages, page_indptr,
    page_values, length_info), as build_paged_cache lays the rows out.

    The values are drawn straight into the page pool, in its shuffled order, and then every slot
    nothing attends (the tails of last pages, stale window slots, spare pages) is set to POISON:
    no logical [B, Hkv, Lmax, D] rows to draw, pad and scatter. The value kinds and the keys of
    far_negative and peaked are i.i.d. rows, which any order of the pool leaves as they are;
    equal_logits places each key by its sequence, rising adds its rise by logical row
    (PageLayout.row) after the rows are in place.

    A pool of up to FRESH_ROWS rows (K or V of one head in one slot: short contexts) is drawn
    fresh, in the pages' order. A larger one (the nightly's: eight sequences of up to 8192 rows
    hold up to 2^20 rows of D values) draws FRESH_ROWS fresh rows of each i.i.d. kind and fills every slot with
    one picked at random (equal_logits: FRESH_ROWS per batch, split among its (sequence, head)
    pairs; rising: its noise rows). Each value keeps its kind's distribution; a kernel that reads another row
    than the one it should meets the same values with probability 1/FRESH_ROWS, a wrong page
    (16 rows) with 1/FRESH_ROWS^16; and a slot costs one copy of D values instead of D draws
    and table reads, which made drawing a nightly case cost several times its reference."""
    layout = page_layout(rng, lengths, page_size, sliding=sliding, spare_pages=spare_pages)
    lengths = np.asarray(lengths, dtype=np.int64)
    dim = q_shape[2]
    slots = (layout.num_pages, kv_heads, page_size)  # one row of D values per slot and head, K and V each
    q = make_values(rng, kind, q_shape, dtype) if kind in VALUE_KINDS_SET else _normal(rng, q_shape, dtype)
    if kind in VALUE_KINDS_SET:
        pool, pick = _fresh_or_picked(rng, lambda n: make_values(rng, kind, (n, dim), dtype),
                                      slots[:1] + (2,) + slots[1:])
    else:
        q, (keys, k_pick) = _shaped_keys(rng, kind, q, layout, lengths, slots + (dim,), dtype, sm_scale)
        values, v_pick = _fresh_or_picked(rng, lambda n: make_values(rng, "normal", (n, dim), dtype), slots)
        pool, pick = np.concatenate([keys, values]), np.stack([k_pick, v_pick + len(keys)], axis=1)
    if len(pool) == pick.size and kind in VALUE_KINDS_SET:  # fresh rows, already in place: no copy
        pages = pool.reshape(pick.shape + (dim,))
    else:  # [P, 2, Hkv, page_size, D]: one gather of whole rows (take: half the time of pool[pick])
        pages = np.take(pool, pick, axis=0)
    if kind == "rising":
        _rise(pages, q, layout, lengths, dtype)
    np.moveaxis(pages, 3, 1)[layout.row < 0] = POISON  # [P, page_size, 2, Hkv, D] view
    return np.asarray(q).astype(dtype), pages, layout.page_indptr, layout.page_values, layout.length_info


def _fresh_or_picked(rng, make, shape) -> tuple[np.ndarray, np.ndarray]:
    """(rows [R, D], pick `shape`): R = all of them fresh (make(n) [n, D]) up to FRESH_ROWS of
    them, pick the identity; else FRESH_ROWS fresh rows, each place picking one at random."""
    rows = int(np.prod(shape))
    if rows <= FRESH_ROWS:
        return make(rows), np.arange(rows).reshape(shape)
    return make(FRESH_ROWS), rng.integers(0, FRESH_ROWS, size=shape)


def _normal(rng, shape, dtype) -> np.ndarray:
    """N(0,1) in float32 to compute with: f16's table quantiles for f16 storage, else numpy's."""
    if np.dtype(dtype) == np.float16:
        return _normal_table()[rng.integers(0, 1 << 16, size=shape, dtype=np.uint16)]
    return rng.standard_normal(shape, dtype=np.float32)


def _scaled_normal(rng, scale: float, shape, dtype) -> np.ndarray:
    """scale N(0,1) stored in `dtype`: (float32(scale) _normal(...)).astype(dtype), the same
    draws and values; for f16 storage one table read a value (_scaled_f16_table) instead of a
    float32 product and a cast of every value."""
    if np.dtype(dtype) == np.float16:
        return np.take(_scaled_f16_table(scale), rng.integers(0, 1 << 16, size=shape, dtype=np.uint16))
    return (np.float32(scale) * _normal(rng, shape, dtype)).astype(dtype)


@cache
def _scaled_f16_table(scale: float) -> np.ndarray:
    """float32(scale) times each of _normal_table's quantiles, rounded once to f16: entry i is what
    _scaled_normal's f32 path makes of the integer i."""
    table = (np.float32(scale) * _normal_table()).astype(np.float16)
    table.flags.writeable = False
    return table


def _shaped_keys(rng, kind, q, layout: PageLayout, lengths, k_shape, dtype, sm_scale):
    """(q, (rows [R, D], pick [P, Hkv, page_size])) of a shaped kind: the key of each slot and
    head is rows[pick], placed by its sequence and logical row (layout)."""
    pages, kv_heads, page_size, dim = k_shape
    slots = k_shape[:3]
    batch = lengths.size
    if kind == "far_negative":
        # q = a, k = -a(1 + e), e in [0, 1/2): logits2 = -a^2 (1 + e) D sm_scale log2(e)
        dim_scale = dim * sm_scale / np.log(2.0)
        amplitude = np.sqrt(-FAR_NEGATIVE_LOGIT / dim_scale / 1.25)
        def far(n):
            return (-amplitude * (1 + 0.5 * rng.random((n, dim), dtype=np.float32))).astype(dtype)
        return np.full(q.shape, amplitude), _fresh_or_picked(rng, far, slots)
    direction = np.asarray(q, np.float32).reshape(batch, kv_heads, -1, dim).mean(axis=2)  # [B, Hkv, D]
    direction = direction / np.maximum(np.linalg.norm(direction, axis=-1, keepdims=True), 1e-6)
    owner = np.maximum(layout.sequence, 0)  # spare pages borrow sequence 0's shape; they are poisoned
    if kind == "peaked":
        rows, pick = _fresh_or_picked(rng, lambda n: _scaled_normal(rng, 0.3, (n, dim), dtype), slots)
        peaks: list[np.ndarray] = []
        for b, n in enumerate(lengths):  # one key per sequence dominates: its own rows, appended
            if n:
                page, slot = np.nonzero((layout.sequence[:, None] == b) & (layout.row == rng.integers(0, n)))
                peak = rows[pick[page[0], :, slot[0]]].astype(np.float32) + direction[b] * np.float32(3 * np.sqrt(dim))
                pick[page[0], :, slot[0]] = len(rows) + kv_heads * len(peaks) + np.arange(kv_heads)
                peaks.append(peak.astype(dtype))
        return q, (np.concatenate([rows] + peaks), pick)
    if kind == "equal_logits":
        base = rng.standard_normal((batch, kv_heads, 1, dim)).astype(np.float32)
        if int(np.prod(slots)) <= FRESH_ROWS:
            keys = (base[owner] + np.float32(1e-3) * _normal(rng, k_shape, dtype)).astype(dtype)
            return q, (keys.reshape(-1, dim), np.arange(keys.shape[0] * kv_heads * page_size).reshape(slots))
        each = max(1, FRESH_ROWS // (batch * kv_heads))  # fresh rows per (sequence, head)
        fresh = (base + np.float32(1e-3) * _normal(rng, (batch, kv_heads, each, dim), dtype)).astype(dtype)
        pick = (owner[:, None, None] * kv_heads + np.arange(kv_heads)[:, None]) * each
        return q, (fresh.reshape(-1, dim), pick + rng.integers(0, each, size=slots))
    if kind == "rising":  # the noise here, the rise added in place (_rise)
        return q, _fresh_or_picked(rng, lambda n: _scaled_normal(rng, 0.1, (n, dim), dtype), slots)
    raise ValueError(f"unknown decode value kind {kind!r}")


#: How many of q's dimensions a rising key rises along (_rise).
RISING_DIMS = 8


def _rise(pages, q, layout: PageLayout, lengths, dtype) -> None:
    """Make the keys of `pages` [P, 2, Hkv, page_size, D] (0.1 N(0,1) noise) rise along their
    sequence's rows: key r of a sequence of n gains ramp_r u, ramp_r = -4 + 8 r / (n - 1),
    where u (norm sqrt(D)) points along the RISING_DIMS largest dimensions of the mean
    direction of the head's query group. Its logit then grows linearly along the rows (slope
    |q . u|), so the running max moves at every tile and every rescale matters; and only
    RISING_DIMS of each key's D values are computed and rounded again."""
    num_pages, _, kv_heads, page_size, dim = pages.shape
    batch = lengths.size
    direction = np.asarray(q, np.float32).reshape(batch, kv_heads, -1, dim).mean(axis=2)  # [B, Hkv, D]
    top = np.argsort(-np.abs(direction), axis=-1)[..., :min(RISING_DIMS, dim)]  # [B, Hkv, k]
    along = np.take_along_axis(direction, top, axis=-1)
    along = along / np.maximum(np.linalg.norm(along, axis=-1, keepdims=True), 1e-6) * np.float32(np.sqrt(dim))
    owner = np.maximum(layout.sequence, 0)  # spare pages borrow sequence 0's; they are poisoned
    n = lengths[owner][:, None]
    ramp = np.where(n > 1, -4.0 + 8.0 * layout.row / np.maximum(n - 1, 1), -4.0).astype(np.float32)  # [P, page_size]
    # flat positions of (page, K, head, slot, top dim) in the contiguous pool
    row = (np.arange(num_pages)[:, None, None] * 2 * kv_heads + np.arange(kv_heads)[:, None]) * page_size \
        + np.arange(page_size)  # [P, Hkv, page_size]: the K row of each slot and head
    where = row[..., None] * dim + top[owner][:, :, None, :]  # [P, Hkv, page_size, k]
    flat = pages.reshape(-1)
    risen = flat[where].astype(np.float32) + ramp[:, None, :, None] * along[owner][:, :, None, :]
    flat[where] = risen.astype(dtype)


def build_paged_cache(rng, k_rows, v_rows, lengths, page_size, *, sliding=None, spare_pages=0):
    """Scatter logical K/V rows into a shuffled paged cache, as TVM's runtime lays it out.

    k_rows, v_rows: [B, Hkv, Lmax, D]; lengths [B] attended rows; sliding: optional (offset, sink)
    arrays [B]. Returns pages [P, 2, Hkv, page_size, D], page_indptr, page_values, length_info.
    Unused slots, stale slots between sinks and window, and spare pages are NaN.
    """
    batch, kv_heads, _, dim = k_rows.shape
    def rows_of(b):
        return (k_rows[b, :, :lengths[b]].transpose(1, 0, 2), v_rows[b, :, :lengths[b]].transpose(1, 0, 2))

    return _paged_cache(rng, rows_of, (kv_heads, dim), k_rows.dtype, lengths, page_size, sliding, spare_pages)


def _paged_cache(rng, rows_of, head_shape, dtype, lengths, page_size, sliding, spare_pages):
    """build_paged_cache with sequence b's K and V rows, each [lengths[b], Hkv, D], from rows_of(b):
    the pages drawn from `rng` alike whatever the rows come from."""
    batch = len(lengths)
    offset, sink = sliding if sliding is not None else (np.zeros(batch, int), np.zeros(batch, int))
    slots = np.where(lengths > 0, offset + lengths - sink, 0)  # slots the sequence occupies
    pages_per_seq = -(-slots // page_size)
    total = int(pages_per_seq.sum())
    num_pages = total + spare_pages
    physical = rng.permutation(num_pages)[:total]
    pages = np.full((num_pages, 2, head_shape[0], page_size, head_shape[1]), POISON, dtype=dtype)
    indptr = np.concatenate([[0], np.cumsum(pages_per_seq)]).astype(np.int32)
    for b in range(batch):  # a handful of sequences; rows are scattered with fancy indexing
        rows = np.arange(lengths[b])
        slot = np.where(rows < sink[b], rows, rows - sink[b] + offset[b])
        page = physical[indptr[b] + slot // page_size]
        k, v = rows_of(b)
        pages[page, 0, :, slot % page_size] = k
        pages[page, 1, :, slot % page_size] = v
    last_page_len = np.where(slots > 0, (slots - 1) % page_size + 1, 0).astype(np.int32)
    length_info = np.stack([last_page_len, offset, sink]).astype(np.int32) if sliding is not None else last_page_len
    return pages, indptr, physical.astype(np.int32), length_info


# decode_cases' strategies, one object per arguments: Hypothesis validates a strategy object the
# first time it is drawn from, which cost a case more than its draws did when every case built
# its own. The draws are the same.
@cache
def _context_lists(limits: DecodeLimits, batch: int):
    return st.lists(context_lengths(limits), min_size=batch, max_size=batch)


@cache
def _window_offsets(page_size: int):
    return st.sampled_from([0, 1, page_size - 1, page_size, 37])


@cache
def _sm_scales(head_dim: int):
    return st.sampled_from([1.0 / np.sqrt(head_dim), 0.5 / np.sqrt(head_dim), 1.0])


_ROTARY_MODES = st.sampled_from([0, 1])
_ROPE_THETAS = st.sampled_from([1e4, 5e5])
_ROPE_SCALES = st.sampled_from([1.0, 0.25])
_DECODE_KINDS = st.sampled_from(DECODE_VALUE_KINDS)


@st.composite
def decode_cases(draw, config: dict, profile: Profile | str, llama3=None, drop=None):
    """A paged decode case for a kernel config (head_dim, qo_heads, kv_heads, dtype, page_size,
    sliding_window). `llama3` (references.rope.Llama3Scaling) is the rope scaling the kernel was
    built with: then every case rotates (except far_negative ones), positions reach 128k, and
    bases include ones that put a pair on a band edge (verify.kernels.attention.rope_cases).

    `drop(kind, lengths)`, for a caller that filters the cases: True where its filter rejects
    every case of that value kind and those lengths whatever the values. Such a draw is None,
    with no array built (the filter must reject None); the draws are the same, so is every
    case the filter keeps."""
    limits = decode_limits(profile, config["page_size"])
    batch = draw(st.integers(1, limits.max_batch))
    lengths = np.array(draw(_context_lists(limits, batch)), dtype=np.int64)
    sliding = None
    if config.get("sliding_window"):
        sinks = [draw(st.integers(0, min(int(n), 8))) for n in lengths]
        offsets = [s + draw(_window_offsets(config["page_size"])) for s in sinks]
        sliding = (np.array(offsets, dtype=np.int64), np.array(sinks, dtype=np.int64))
    rotary_mode = 1 if llama3 is not None else draw(_ROTARY_MODES)
    rope_theta, band_edge = draw(cached_rope_bases(config["head_dim"], llama3)) if llama3 is not None else \
        (draw(_ROPE_THETAS), "")
    rope_scale = 1.0 if llama3 is not None else draw(_ROPE_SCALES)
    kind = draw(_DECODE_KINDS)
    rotary_mode = 0 if kind == "far_negative" else rotary_mode  # rotation would move the logits
    spare = draw(st.integers(0, 3))
    sm_scale = draw(_sm_scales(config["head_dim"]))
    seed = draw(seeds)
    if drop is not None and drop(kind, lengths):
        return None
    rng = np.random.default_rng(seed)
    dtype = np.float16 if config["dtype"] == "f16" else np.float32
    max_len = int(lengths.max(initial=0))
    q, pages, indptr, values, length_info = paged_decode_values(
        rng, kind, (batch, config["qo_heads"], config["head_dim"]), config["kv_heads"], lengths,
        config["page_size"], dtype, sm_scale, sliding=sliding, spare_pages=spare)
    # Keys at k_offset .. k_offset + L - 1 and the query at most one past them, all <= max_position.
    top = max_position(llama3) + 1 - max_len
    k_offset = rng.integers(0, top, size=batch) if rotary_mode else np.zeros(batch, np.int64)
    q_position = k_offset + np.maximum(lengths - 1, 0) + rng.integers(0, 2, size=batch) * rotary_mode
    arrays = {
        "q": q, "pages": pages, "page_indptr": indptr, "page_values": values, "length_info": length_info,
        "k_rope_pos_offset": k_offset.astype(np.int32), "q_rope_position": q_position.astype(np.int32),
    }
    params = {"batch": batch, "lengths": lengths.tolist(), "rotary_mode": rotary_mode, "rope_theta": rope_theta,
              "rope_scale": rope_scale, "sm_scale": float(sm_scale), "values": kind, "spare_pages": spare,
              "seed": seed}
    if band_edge and rotary_mode:
        params["band_edge"] = band_edge
    return Case(arrays, params)


# -- metamorphic transforms of decode cases ---------------------------------------------------------
def _transform_rng(case: Case, salt: int) -> np.random.Generator:
    """Transforms derive their randomness from the case, so a saved case replays exactly."""
    return np.random.default_rng([int(case.params.get("seed", 0)), salt])


def permute_pages(case: Case) -> Case:
    """The same cache with every physical page moved (page_values renamed alike)."""
    pages = case["pages"]
    perm = _transform_rng(case, 1).permutation(pages.shape[0])
    moved = np.empty_like(pages)
    moved[perm] = pages
    return case.replace({"pages": moved, "page_values": perm[case["page_values"]].astype(np.int32)})


def split_context(case: Case, config: dict) -> tuple[Case, Case, np.ndarray]:
    """Cut every sequence's attended rows at a point c_b: rows [0, c) and [c, L) as two caches.

    The second part's keys keep their positions (k_rope_pos_offset + c); the query is unchanged.
    Returns (first, second, cut). Sliding-window configs get windows with no sinks and no offset.
    Each part's rows are copied once, from the case's pages into the part's (a nightly context is
    tens of megabytes: gathering it in logical order first, then taking each part, copied it
    three times).
    """
    from verify.references.paged_kv import attended_length, row_to_slot, validate_page_table

    sliding, page_size = bool(config.get("sliding_window")), config["page_size"]
    source, indptr, values, info = (np.asarray(case[name]) for name in
                                    ("pages", "page_indptr", "page_values", "length_info"))
    validate_page_table(indptr, values, info, source.shape[0], page_size, sliding)
    length = attended_length(indptr, info, page_size, sliding)
    indptr, values = indptr.astype(np.int64), values.astype(np.int64)
    rng = _transform_rng(case, 2)
    cut = np.array([rng.integers(0, n + 1) for n in length], dtype=np.int64)
    batch = length.size
    zeros = np.zeros(batch, np.int64)
    window = (zeros, zeros) if sliding else None
    parts = []
    for start, stop in ((zeros, cut), (cut, length)):
        def rows_of(b, start=start, stop=stop):
            """Sequence b's logical rows start..stop of K and V, [rows, Hkv, D] each, from the case's
            pages in one gather."""
            rows = np.arange(start[b], stop[b])
            slot = row_to_slot(rows[None], info[:, b:b + 1] if sliding else info[b:b + 1], sliding)[0]
            both = source[values[indptr[b] + slot // page_size], :, :, slot % page_size]  # [rows, 2, Hkv, D]
            return both[:, 0], both[:, 1]

        pages, part_indptr, part_values, length_info = _paged_cache(
            rng, rows_of, source.shape[2::2], source.dtype, stop - start, page_size, window, 0)
        offset = (case["k_rope_pos_offset"].astype(np.int64) + start).astype(np.int32)
        parts.append(case.replace({"pages": pages, "page_indptr": part_indptr, "page_values": part_values,
                                   "length_info": length_info, "k_rope_pos_offset": offset},
                                  lengths=(stop - start).tolist()))
    return parts[0], parts[1], cut


def explicit_decode_case(config: dict, lengths, *, seed: int = 0, rotary_mode: int = 0, sliding=None) -> Case:
    """A decode case with exactly these context lengths (for pinned corner cases, outside Hypothesis):
    N(0,1) values, a shuffled page table with two spare pages; sliding = (offsets, sinks) per sequence."""
    rng = np.random.default_rng(seed)
    dtype = np.float16 if config["dtype"] == "f16" else np.float32
    lengths = np.asarray(lengths, dtype=np.int64)
    batch, rows, dim = lengths.size, int(lengths.max(initial=0)), config["head_dim"]
    q = rng.standard_normal((batch, config["qo_heads"], dim)).astype(dtype)
    k = rng.standard_normal((batch, config["kv_heads"], rows, dim)).astype(dtype)
    v = rng.standard_normal((batch, config["kv_heads"], rows, dim)).astype(dtype)
    if sliding is not None:
        sliding = tuple(np.asarray(x, dtype=np.int64) for x in sliding)
    pages, indptr, values, length_info = build_paged_cache(rng, k, v, lengths, config["page_size"],
                                                           sliding=sliding, spare_pages=2)
    k_offset = rng.integers(0, 4096, batch) if rotary_mode else np.zeros(batch, np.int64)
    arrays = {"q": q, "pages": pages, "page_indptr": indptr, "page_values": values, "length_info": length_info,
              "k_rope_pos_offset": k_offset.astype(np.int32),
              "q_rope_position": (k_offset + np.maximum(lengths - 1, 0)).astype(np.int32)}
    params = {"batch": batch, "lengths": lengths.tolist(), "rotary_mode": rotary_mode, "rope_theta": 1e4,
              "rope_scale": 1.0, "sm_scale": float(dim ** -0.5), "values": "normal", "seed": seed}
    return Case(arrays, params)
