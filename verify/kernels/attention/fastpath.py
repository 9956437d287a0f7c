"""Paged decode's float64 reference and error budget, evaluated fast: the numbers of
references.decode.decode_attention and verify.budgets.attention.decode_budget.

The plain pair pads every sequence to the longest, works on K as [B, Hkv, Lmax, D] float64
arrays (rotary error terms elementwise, a float16 round trip for every ulp) and sums o with a
vector-matrix product per query head. Here the same numbers come from:

- a ragged gather: only attended rows, one fancy index for K and V of all sequences;
- the same elementwise rotation (the same angles; numpy's float64 cos and sin are libm's,
  elementwise), so the rotated, rounded q and k are bit for bit the plain ones (the store to f16
  on the float64 bits: verify.fastpath.floats.round_to);
- work in blocks of kv heads whose buffers stay in cache and are reused;
- logits from the very BLAS call the plain path makes per (sequence, kv head) (G x D times
  D x Lmax), so logits, softmax weights, d and lse are bit for bit the plain ones;
- o from one G x L times L x D product per (sequence, kv head): equal to the plain o up to
  float64 rounding of the sum (bounded below);
- the budget's logit error delta_j without per-element arrays: the rotary terms
  sum_d (e_q,d |k_jd| + |q_d| e_k,jd + e_q,d e_k,jd), with e_k = sqrt2 (a_jd (|k_d| + |k_pair|)
  + 3 FTZ) + ulp(k_d) and a_jd = trig + 2r + |pos_j| |f_d| rel_d (pair-symmetric in d), regroup
  exactly into two matrix products with |k| and ulp(k):
    delta_j / c = P.|k_j| + |pos_j| R.|k_j| + W.ulp(k_j) + 3 sqrt2 FTZ sum_d W_d,
  W = |q| + e_q, V_d = W_d + W_pair(d), P = (gamma_{D+3} + u)|q| + e_q + sqrt2 (trig + 2r) V,
  R = sqrt2 |f| rel V;
- the softmax's weight terms on each sequence's attended rows, not padded to the longest
  (fastpath_budget.Budget.of);
- split_merge's two parts evaluated with the whole (remember_split): their rows are the whole's,
  so the per-row work is done once.

Why this cannot weaken a check: the budget's delta, spread and A_d are sums of non-negative
products of the same float64 inputs as the plain path's, only associated differently; each
computed value is within a factor (1 +- u)^N of the exact sum (N roundings on any term's path,
N <= 2D + 64 for delta, 2 Lmax + 8 for the sums over rows), so multiplying ours by
1 + 2 gamma_N makes it >= the plain value, and everything downstream is the plain formula on
bit-identical inputs and is monotone in them (sums and products of non-negative terms, which
round monotonically). The one input not bit-identical downstream is o, in the store's rounding
term faithful_rounding_bound(o), a step function of |o|: it is taken at its largest over
|o| +- e with e >= |o - o_plain| (verify.kernels.attention.fastpath_budget.o_difference_bound).
So every budget element is >= the plain one; tests/fastpath/test_decode_fastpath.py checks that,
and that it is not larger by more than rounding, on drawn cases.

Inputs the fast path does not take (invalid page tables, non-finite or +inf logits, rotated
values at the top of their format's range) go to the plain pair, which decides them as before.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np

from verify.budgets.attention import decode_budget
from verify.budgets.roundoff import numpy_dtype
from verify.fastpath import floats
from verify.fastpath.memo import CaseMemo
from verify.kernels.attention.fastpath_budget import Budget, LogitError
from verify.references.decode import LOG2E, DecodeResult, decode_attention
from verify.references.paged_kv import attended_length, row_to_slot, validate_page_table
from verify.references.rope import Llama3Scaling, rope_frequencies, rotate_neox
from verify.references.softmax import state_to_output


@dataclass(frozen=True)
class DecodeInputs:
    """Everything the decode reference and budget of one case read, and nothing else (so that a
    remembered evaluation is keyed on all it depends on)."""

    q: np.ndarray
    pages: np.ndarray
    page_indptr: np.ndarray
    page_values: np.ndarray
    length_info: np.ndarray
    k_rope_pos_offset: np.ndarray
    q_rope_position: np.ndarray
    sm_scale: float
    rotary_mode: int
    rope_theta: float
    rope_scale: float
    sliding_window: bool
    qkv_dtype: str
    page_size: int
    llama3: Llama3Scaling | None = None

    _ARRAYS = ("q", "pages", "page_indptr", "page_values", "length_info", "k_rope_pos_offset", "q_rope_position")

    def arrays(self) -> tuple:
        return tuple(getattr(self, name) for name in self._ARRAYS)

    def scalars(self) -> tuple:
        return (float(self.sm_scale), int(self.rotary_mode), float(self.rope_theta), float(self.rope_scale),
                bool(self.sliding_window), self.qkv_dtype, int(self.page_size), self.llama3)

    def reference(self) -> DecodeResult:
        """The plain reference, references.decode.decode_attention."""
        return decode_attention(
            self.q, self.pages, self.page_indptr, self.page_values, self.length_info, sm_scale=self.sm_scale,
            rotary_mode=self.rotary_mode, rope_theta=self.rope_theta, rope_scale=self.rope_scale,
            k_rope_pos_offset=self.k_rope_pos_offset, q_rope_position=self.q_rope_position,
            sliding_window=self.sliding_window, rotary_dtype=numpy_dtype(self.qkv_dtype), page_size=self.page_size,
            llama3=self.llama3)

    def budget(self, result: DecodeResult):
        """The plain budget of a plain reference result, verify.budgets.attention.decode_budget."""
        k_positions = np.asarray(self.k_rope_pos_offset).astype(np.int64)[:, None] + np.arange(result.k.shape[2])
        return decode_budget(result, self.qkv_dtype, sm_scale=self.sm_scale, rotary_mode=self.rotary_mode,
                             rope_theta=self.rope_theta, rope_scale=self.rope_scale,
                             q_positions=np.asarray(self.q_rope_position).astype(np.int64), k_positions=k_positions,
                             llama3=self.llama3)


@dataclass(frozen=True)
class DecodeEvaluation:
    """A case's reference outputs and their budgets (empty contexts: o 0, lse -inf, budgets 0)."""

    o: np.ndarray         # [B, Hq, D]
    lse2: np.ndarray      # [B, Hq]
    logits2: np.ndarray   # [B, Hq, Lmax], -inf past each length
    length: np.ndarray    # [B]
    o_budget: np.ndarray  # [B, Hq, D]
    lse_budget: np.ndarray  # [B, Hq]


def evaluate_plain(inputs: DecodeInputs) -> DecodeEvaluation:
    """The plain pair: references.decode.decode_attention, then decode_budget."""
    result = inputs.reference()
    o_budget, lse_budget = inputs.budget(result)
    return DecodeEvaluation(result.o, result.lse2, result.logits2, result.length, o_budget, lse_budget)


def evaluate(inputs: DecodeInputs) -> DecodeEvaluation:
    """The reference and budget of a decode case: the fast path, or the plain pair for inputs
    the fast path does not take (see the module docstring)."""
    fast = _evaluate_fast(inputs) if _takes(inputs) else None
    return fast if fast is not None else evaluate_plain(inputs)


_MEMO = CaseMemo()


def remembered(inputs: DecodeInputs) -> DecodeEvaluation:
    """evaluate(inputs), computed once for the same input arrays and scalars (verify.fastpath.memo)."""
    return _MEMO.get(inputs.arrays(), inputs.scalars(), lambda: evaluate(inputs))


def remember_split(x: DecodeInputs, parts) -> None:
    """Evaluate a case and parts of its context together and remember each (so `remembered` finds
    them): `parts` holds (inputs, first) pairs, a part being sequence b's attended rows first[b]
    onwards of x's, as split_context cuts them. Each part's per-row work (gather, rotation, |k|,
    ulp(k), the logit error's products) is the whole's rows', computed once; what depends on the
    part's extent (its logits' BLAS calls of its own Lmax, softmax, o and the budget's sums) is its
    own, so each evaluation has the contract evaluate() has (docs/fastpath.md §2.5). A part that is
    not x's rows (checked), or a case the fast path does not take, is left to `remembered`."""
    evaluations = _evaluate_fast(x, parts) if parts and _takes(x) else None
    if evaluations is None:
        return
    for inputs, evaluation in zip([x] + [inputs for inputs, _ in parts], evaluations):
        if evaluation is not None:
            # mypy cannot infer a lambda whose default argument binds the loop's value
            _MEMO.get(inputs.arrays(), inputs.scalars(), lambda evaluation=evaluation: evaluation)  # type: ignore[misc]


def leading_rows(x: DecodeInputs, count: int) -> DecodeInputs:
    """The same decode cut to each sequence's first `count` attended rows (count <= page_size),
    laid out as one page per sequence without a window. Its rows keep their logical index, so
    their positions (k_rope_pos_offset + row) and rotated, rounded values are the full case's:
    its logits are the full case's logits of those rows, up to the order of the sums over D
    (a matrix product of another width). For a question about the logits that a few rows
    answer (TVM's floor: is some logit high enough?) without the reference of every row."""
    if not 0 < count <= x.page_size:
        raise ValueError(f"count must be in 1..page_size={x.page_size} (got {count})")
    pages = np.asarray(x.pages)
    length = attended_length(x.page_indptr, x.length_info, x.page_size, x.sliding_window)
    keep = np.minimum(length, count)
    slot = row_to_slot(np.broadcast_to(np.arange(count), (length.size, count)), x.length_info, x.sliding_window)
    indptr, values = (np.asarray(a).astype(np.int64) for a in (x.page_indptr, x.page_values))
    first = np.zeros((length.size, 2) + pages.shape[2:], pages.dtype)  # [B, 2, Hkv, page_size, D], V = 0
    for b in np.flatnonzero(keep):
        s = slot[b, : keep[b]]
        first[b, 0, :, : keep[b]] = pages[values[indptr[b] + s // x.page_size], 0, :,
                                          s % x.page_size].transpose(1, 0, 2)
    used = keep > 0
    indptr = np.concatenate([[0], np.cumsum(used)]).astype(np.int32)
    return dataclasses.replace(x, pages=first, page_indptr=indptr, page_values=np.flatnonzero(used).astype(np.int32),
                               length_info=keep.astype(np.int32), sliding_window=False)


def key_ranges(x: DecodeInputs) -> tuple[np.ndarray, np.ndarray]:
    """(largest, smallest) stored key of each (sequence, kv head, dim) over the attended rows,
    float64 [B, Hkv, D] (-inf, +inf for an empty sequence): bounds on every logit of a case
    without rotation, sum_d max(q_d hi_d, q_d lo_d) >= q . k_j, from one pass over the keys."""
    rows = _rows(x)
    keys, _ = _gather(x, rows)  # [Hkv, T, D] as stored
    batch, kv_heads, dim = rows.length.size, keys.shape[0], keys.shape[2]
    hi, lo = np.full((batch, kv_heads, dim), -np.inf), np.full((batch, kv_heads, dim), np.inf)
    for b in np.flatnonzero(rows.length):
        part = keys[:, rows.span(b)]
        hi[b], lo[b] = part.max(axis=1), part.min(axis=1)
    return hi, lo


# -- the fast path -----------------------------------------------------------------------------------
def _takes(x: DecodeInputs) -> bool:
    """Shapes and tables the fast path handles; anything else (including every input the plain
    reference rejects) goes to the plain pair, which raises its own error."""
    q, pages = np.asarray(x.q), np.asarray(x.pages)
    if q.ndim != 3 or pages.ndim != 5 or pages.shape[1] != 2 or pages.shape[4] != q.shape[2]:
        return False
    batch, qo_heads, head_dim = q.shape
    kv_heads = pages.shape[2]
    if kv_heads == 0 or qo_heads % kv_heads or head_dim % 2 or pages.shape[3] != x.page_size:
        return False
    if x.qkv_dtype not in ("f16", "f32") or x.rotary_mode not in (0, 1) or not math.isfinite(x.sm_scale):
        return False
    if np.asarray(x.page_indptr).shape != (batch + 1,):
        return False
    for name in ("k_rope_pos_offset", "q_rope_position"):
        pos = np.asarray(getattr(x, name))
        if x.rotary_mode and (pos.shape != (batch,) or not np.issubdtype(pos.dtype, np.integer)):
            return False
    try:
        validate_page_table(x.page_indptr, x.page_values, x.length_info, pages.shape[0], x.page_size,
                            x.sliding_window)
    except ValueError:
        return False
    return True


@dataclass
class _Rows:
    """The attended rows of every sequence, back to back: sequence b owns rows start[b] .. + length[b]."""

    length: np.ndarray  # [B] int64
    start: np.ndarray   # [B] int64
    sequence: np.ndarray  # [T] which sequence each row belongs to
    row: np.ndarray     # [T] its logical row within the sequence

    @property
    def total(self) -> int:
        return int(self.length.sum())

    @property
    def longest(self) -> int:
        return int(self.length.max(initial=0))

    def span(self, b: int | np.integer) -> slice:
        return slice(int(self.start[b]), int(self.start[b] + self.length[b]))


def _rows(x: DecodeInputs) -> _Rows:
    length = attended_length(x.page_indptr, x.length_info, x.page_size, x.sliding_window).astype(np.int64)
    start = np.concatenate([[0], np.cumsum(length)[:-1]]).astype(np.int64)
    sequence = np.repeat(np.arange(length.size), length)
    return _Rows(length, start, sequence, np.arange(int(length.sum())) - start[sequence])


def _gather(x: DecodeInputs, rows: _Rows) -> tuple[np.ndarray, np.ndarray]:
    """K and V of the attended rows as stored, [Hkv, T, D] each: references.paged_kv's addressing
    (`_get_seq_offset`, `_get_kv_chunk_len`) on the rows that exist only."""
    pages = np.asarray(x.pages)
    slot = rows.row
    if x.sliding_window:
        info = np.asarray(x.length_info).astype(np.int64)
        offset, sink = info[1][rows.sequence], info[2][rows.sequence]
        slot = np.where(slot < sink, slot, slot - sink + offset)
    indptr = np.asarray(x.page_indptr).astype(np.int64)
    values = np.asarray(x.page_values).astype(np.int64)
    page = values[indptr[rows.sequence] + slot // x.page_size] if rows.total else slot
    kv = pages[page[None, None, :], np.arange(2)[:, None, None], np.arange(pages.shape[2])[None, :, None],
               (slot % x.page_size)[None, None, :]]  # [2, Hkv, T, D]
    return kv[0], kv[1]


def _round_in_place(x: np.ndarray, dtype) -> np.ndarray:
    """As references.decode's rounder: store in the qkv dtype (inf beyond its range)."""
    with np.errstate(over="ignore"):
        x[...] = x.astype(dtype)
    return x


#: Elements of one block of kv heads worked on at a time: small enough for its buffers to stay in
#: cache and be reused from block to block, large enough to keep the number of numpy calls small.
_BLOCK_ELEMENTS = 1 << 16


def _head_blocks(kv_heads: int, rows: int, head_dim: int) -> list[slice]:
    step = max(1, _BLOCK_ELEMENTS // max(1, rows * head_dim))
    return [slice(h, min(h + step, kv_heads)) for h in range(0, kv_heads, step)]


@dataclass
class _Rotation:
    """cos and sin of every attended row's angles, [T, D/2]: rotate_neox's angles (positions times
    rope_scale times the NeoX frequencies), for the attended rows only. numpy's float64 cos and sin
    are elementwise (libm's), so these are the values the plain path takes of its [B, 1, Lmax, D/2]."""

    cos: np.ndarray
    sin: np.ndarray

    @classmethod
    def of(cls, x: DecodeInputs, rows: _Rows, head_dim: int) -> _Rotation:
        positions = np.asarray(x.k_rope_pos_offset).astype(np.int64)[rows.sequence] + rows.row
        freq = rope_frequencies(head_dim, x.rope_theta, x.llama3, "neox")[:head_dim // 2]
        angles = (positions.astype(np.float64) * x.rope_scale)[..., None] * freq
        return cls(np.cos(angles), np.sin(angles))

    def rotate_into(self, k_stored: np.ndarray, out: np.ndarray, dtype) -> None:
        """out [h, T, D] = rotate_neox's rotation of k_stored [h, T, D], rounded to dtype: the same
        products and sums in the same order, on contiguous half-width arrays."""
        half = k_stored.shape[-1] // 2
        lower = k_stored[..., :half].astype(np.float64)
        upper = k_stored[..., half:].astype(np.float64)
        scratch = self.sin * upper
        rotated = np.multiply(self.cos, lower)
        np.subtract(rotated, scratch, out=rotated)
        # The store to dtype (inf beyond its range, as the plain rounder stores), by
        # verify.fastpath.floats.round_to: numpy's conversion's values, from the float64 bits.
        out[..., :half] = floats.round_to(rotated, dtype, out=scratch)
        np.multiply(self.sin, lower, out=scratch)
        np.multiply(self.cos, upper, out=rotated)
        np.add(rotated, scratch, out=rotated)
        out[..., half:] = floats.round_to(rotated, dtype, out=scratch)


@dataclass
class _View:
    """One evaluation the block loops of _evaluate_fast serve: the case itself, or a part of its
    context that is a case of its own (split_context's), sequence b's attended rows first[b] ..
    first[b] + length[b] of the whole's, at the whole's positions."""

    inputs: DecodeInputs
    first: np.ndarray   # [B] int64, 0 for the whole
    length: np.ndarray  # [B] int64

    def __post_init__(self):
        self.longest = int(self.length.max(initial=0))
        self.live = [b for b in range(self.length.size) if self.length[b] > 0]


def _part_view(x: DecodeInputs, rows: _Rows, k_stored: np.ndarray, v_stored: np.ndarray,
               part: DecodeInputs, first) -> _View | None:
    """A view of `part` if it is, row for row, the whole's attended rows from `first` on (the same
    query, scalars and positions, and stored keys and values equal to the whole's rows, checked
    here), else None. Every per-row quantity of the fast path (rotated, rounded key, |k|, ulp(k),
    the logit error delta_j) is a function of the stored row, its position, the query and the
    scalars only, so the part's are the whole's."""
    first = np.asarray(first).astype(np.int64)
    q, q_part = np.asarray(x.q), np.asarray(part.q)
    if first.shape != rows.length.shape or (first < 0).any() or part.scalars() != x.scalars() or not _takes(part):
        return None
    if q_part.dtype != q.dtype or not np.array_equal(q_part, q):
        return None
    rows_part = _rows(part)
    if (first + rows_part.length > rows.length).any():
        return None
    if x.rotary_mode == 1:
        offsets = [np.asarray(a).astype(np.int64) for a in (x.k_rope_pos_offset, part.k_rope_pos_offset)]
        if not np.array_equal(offsets[1], offsets[0] + first) or \
                not np.array_equal(np.asarray(part.q_rope_position), np.asarray(x.q_rope_position)):
            return None
    k_part, v_part = _gather(part, rows_part)
    if k_part.dtype != k_stored.dtype:
        return None
    bits = np.dtype(f"u{k_part.dtype.itemsize}")  # the same bit patterns, compared as integers
    for b in np.flatnonzero(rows_part.length):
        begin = rows.start[b] + first[b]
        whole = slice(begin, begin + rows_part.length[b])
        for ours, theirs in ((k_part, k_stored), (v_part, v_stored)):
            if not np.array_equal(ours[:, rows_part.span(b)].view(bits), theirs[:, whole].view(bits)):
                return None
    return _View(part, first, rows_part.length)


@overload
def _evaluate_fast(x: DecodeInputs) -> DecodeEvaluation | None: ...
@overload
def _evaluate_fast(x: DecodeInputs, parts: Sequence[tuple[DecodeInputs, np.ndarray]]
                   ) -> list[DecodeEvaluation | None] | None: ...
def _evaluate_fast(x: DecodeInputs, parts: Sequence[tuple[DecodeInputs, np.ndarray]] = ()
                   ) -> DecodeEvaluation | list[DecodeEvaluation | None] | None:
    """The fast path's evaluation of x; with `parts` ((inputs, first) pairs, see _View), a list of
    x's evaluation and each part's (None for a part that is not x's rows), the parts computed from
    x's per-row work."""
    q_stored = np.asarray(x.q)
    batch, qo_heads, head_dim = q_stored.shape
    kv_heads = np.asarray(x.pages).shape[2]
    group = qo_heads // kv_heads
    rows = _rows(x)
    longest, total = rows.longest, rows.total
    live = [b for b in range(batch) if rows.length[b] > 0]
    k_stored, v_stored = _gather(x, rows)
    dtype = numpy_dtype(x.qkv_dtype)
    whole = _View(x, np.zeros(batch, np.int64), rows.length)
    found = [_part_view(x, rows, k_stored, v_stored, *part) for part in parts]
    views = [whole] + [view for view in found if view is not None]

    q = np.asarray(q_stored, np.float64)
    rotation = None
    if x.rotary_mode == 1:
        q_positions = np.asarray(x.q_rope_position).astype(np.int64)
        q = _round_in_place(rotate_neox(q, q_positions[:, None], rope_theta=x.rope_theta, rope_scale=x.rope_scale,
                                        llama3=x.llama3), dtype)
        rotation = _Rotation.of(x, rows, head_dim)
    qg = q.reshape(batch, kv_heads, group, head_dim)
    logit_error = LogitError.of(x, qg)
    if logit_error is None:
        return None

    # Per block of kv heads: the keys (rotated and rounded with rotary_mode 1) followed by
    # `longest` zero rows, so each sequence has the [Lmax, D] window the plain path's logits
    # product (one BLAS call per sequence and head) runs on (a part's window, of its own Lmax,
    # starts at its first row); then |k| and ulp(k) for the budget.
    blocks = _head_blocks(kv_heads, total, head_dim)
    width = max(h.stop - h.start for h in blocks)
    keys = np.empty((width, total + longest, head_dim))
    keys[:, total:] = 0.0
    abs_k = np.empty((width, total, head_dim))
    ulp_k = np.empty((width, total, head_dim)) if rotation is not None else None
    scores = [np.zeros((batch, kv_heads, group, view.longest)) for view in views]
    magnitude_terms = np.zeros((batch, kv_heads, logit_error.by_magnitude.shape[2], longest))
    ulp_terms = np.zeros((batch, kv_heads, group, longest)) if rotation is not None else None
    for heads in blocks:
        n = heads.stop - heads.start
        k, a, e = keys[:n, :total], abs_k[:n], None if ulp_k is None else ulp_k[:n]
        if rotation is not None:
            rotation.rotate_into(k_stored[heads], k, dtype)
        else:
            k[...] = k_stored[heads]
        for view, view_scores in zip(views, scores):
            for b in view.live:
                begin = rows.start[b] + view.first[b]
                window = keys[:n, begin:begin + view.longest]
                view_scores[b, heads] = qg[b, heads] @ window.transpose(0, 2, 1)
        np.abs(k, out=a)
        if e is not None:
            floats.ulp(a, x.qkv_dtype, out=e)
        for b in live:
            span, length = rows.span(b), rows.length[b]
            magnitude_terms[b, heads, :, :length] = logit_error.by_magnitude[b, heads] @ a[:, span].transpose(0, 2, 1)
            if e is not None:
                # e, ulp_terms and by_ulp all exist exactly with rotation (rotary_mode 1)
                assert ulp_terms is not None and logit_error.by_ulp is not None
                ulp_terms[b, heads, :, :length] = logit_error.by_ulp[b, heads] @ e[:, span].transpose(0, 2, 1)
    del keys, abs_k, ulp_k
    delta = logit_error.combine(x, rows.longest, magnitude_terms, ulp_terms)

    states = []
    for view, view_scores in zip(views, scores):
        valid = (np.arange(view.longest) < view.length[:, None])[:, None, None, :]
        logits2 = np.where(valid, view_scores * (x.sm_scale * LOG2E), -np.inf)
        if np.isnan(logits2).any() or np.isposinf(logits2).any():
            return None  # the plain reference rejects these logits
        # references.softmax.softmax_state's m, weights and d.
        m = np.max(logits2, axis=-1, initial=-np.inf)
        weights = np.exp2(logits2 - np.where(np.isfinite(m), m, 0.0)[..., None])
        d = weights.sum(axis=-1)
        logits2 = logits2.reshape(batch, qo_heads, view.longest)
        # A part's rows have the whole's delta_j (the same q, |k_j|, ulp(k_j) and position).
        view_delta = delta if view is whole else np.zeros(weights.shape)
        if view is not whole:
            for b in view.live:
                view_delta[b, ..., :view.length[b]] = delta[b, ..., view.first[b]:view.first[b] + view.length[b]]
        states.append((logits2, m, weights, d, Budget.of(view.length, logits2, view_delta, d)))

    # Per block of kv heads: o's sums over the attended rows, then the budget's over |v|.
    o_sums = [np.zeros((batch, kv_heads, group, head_dim)) for _ in views]
    sums = [np.zeros((batch, kv_heads, 2 * group, head_dim)) for _ in views]
    values = np.empty((width, total, head_dim))
    for heads in blocks:
        v = values[:heads.stop - heads.start]
        v[...] = v_stored[heads]
        for view, (_, _, weights, _, _), o_sum in zip(views, states, o_sums):
            for b in view.live:
                begin = rows.start[b] + view.first[b]
                o_sum[b, heads] = weights[b, heads, :, :view.length[b]] @ v[:, begin:begin + view.length[b]]
        np.abs(v, out=v)
        for view, (_, _, _, _, budget), view_sums in zip(views, states, sums):
            for b in view.live:
                begin = rows.start[b] + view.first[b]
                view_sums[b, heads] = budget.weighted[b, heads, :, :view.length[b]] @ v[:, begin:begin + view.length[b]]
    evaluations = {}
    for view, (logits2, m, _, d, budget), o_sum, view_sums in zip(views, states, o_sums, sums):
        o, lse2 = state_to_output(m, d, o_sum, base=2)
        o, lse2 = o.reshape(batch, qo_heads, head_dim), lse2.reshape(batch, qo_heads)
        o_budget, lse_budget = budget.finish(x.qkv_dtype, view_sums, o, lse2)
        if not (np.isfinite(o_budget).all() and np.isfinite(lse_budget).all()):
            return None  # the plain budget decides what a non-finite term means
        evaluations[id(view)] = DecodeEvaluation(o, lse2, logits2, view.length, o_budget, lse_budget)
    if not parts:
        return evaluations[id(whole)]
    return [evaluations[id(whole)]] + [None if view is None else evaluations[id(view)] for view in found]
