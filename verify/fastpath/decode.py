"""Paged decode's float64 reference and error budget, evaluated fast: the numbers of
references.decode.decode_attention and verify.budgets.attention.decode_budget.

The plain pair pads every sequence to the longest, works on K as [B, Hkv, Lmax, D] float64
arrays (rotary error terms elementwise, a float16 round trip for every ulp) and sums o with a
vector-matrix product per query head. Here the same numbers come from:

- a ragged gather: only attended rows, one fancy index for K and V of all sequences;
- the same elementwise rotation (cos and sin of the padded angle table the plain path takes
  them from), so the rotated, rounded q and k are bit for bit the plain ones;
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
  R = sqrt2 |f| rel V.

Why this cannot weaken a check: the budget's delta, spread and A_d are sums of non-negative
products of the same float64 inputs as the plain path's, only associated differently; each
computed value is within a factor (1 +- u)^N of the exact sum (N roundings on any term's path,
N <= 2D + 64 for delta, 2 Lmax + 8 for the sums over rows), so multiplying ours by
1 + 2 gamma_N makes it >= the plain value, and everything downstream is the plain formula on
bit-identical inputs and is monotone in them (sums and products of non-negative terms, which
round monotonically). The one input not bit-identical downstream is o, in the store's rounding
term faithful_rounding_bound(o), a step function of |o|: it is taken at its largest over
|o| +- e with e >= |o - o_plain| (see _o_difference_bound). So every budget element is >= the
plain one; tests/fastpath/test_decode_fastpath.py checks that, and that it is not larger by
more than rounding, on drawn cases.

Inputs the fast path does not take (invalid page tables, non-finite or +inf logits, rotated
values at the top of their format's range) go to the plain pair, which decides them as before.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from references.decode import LOG2E, DecodeResult, decode_attention
from references.paged_kv import attended_length, validate_page_table
from references.rope import Llama3Scaling, rope_frequencies, rotate_neox
from references.softmax import state_to_output
from verify.budgets.attention import ACC, FTZ_ABS, LN2, decode_budget
from verify.budgets.rope import partner_dims, rope_angle_rel, rope_error
from verify.budgets.roundoff import gamma, numpy_dtype, ulp as plain_ulp, unit_roundoff
from verify.budgets.wgsl_accuracy import division_rel, exp2_rel, log2_abs, rounding_rel, trig_abs
from verify.fastpath import floats
from verify.fastpath.memo import CaseMemo

_U64 = unit_roundoff("f64")
_SQRT2 = math.sqrt(2.0)


def inflation(roundings: int) -> float:
    """A factor that lifts a float64 sum of non-negative terms, computed with at most `roundings`
    roundings on any term's path, above any other such evaluation of the same exact sum:
    ours >= exact (1 - u)^N, theirs <= exact (1 + u)^N, and fl(ours (1 + 2 gamma_N)) >= theirs."""
    return 1.0 + 2.0 * float(gamma(roundings, _U64))


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

    def span(self, b: int) -> slice:
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


#: Elements of one block of heads the key preparation works on at a time: small enough for its
#: temporaries to stay in cache (and in memory the allocator reuses), large enough for few calls.
_BLOCK_ELEMENTS = 1 << 16


def _head_blocks(kv_heads: int, rows: int, head_dim: int):
    step = max(1, _BLOCK_ELEMENTS // max(1, rows * head_dim))
    return [slice(h, min(h + step, kv_heads)) for h in range(0, kv_heads, step)]


def _keys(x: DecodeInputs, rows: _Rows, k_stored: np.ndarray, keys: np.ndarray):
    """Write the keys the plain reference attends with into keys[:, :T] (rotated and rounded with
    rotary_mode 1); return |k| and, with rotary_mode 1, ulp(k) in the qkv dtype ([Hkv, T, D] each).

    The rotation is rotate_neox's elementwise operations (the same angles, cos and sin, products
    and sums, in the same order) on the attended rows only, on contiguous half-width blocks of
    heads. numpy's float64 cos and sin are elementwise (libm's), so taking them of the attended
    rows' angles alone gives the values the plain path takes of its whole [B, 1, Lmax, D/2] table.
    """
    kv_heads, total, head_dim = k_stored.shape
    k = keys[:, :total]
    abs_k = np.empty(k.shape)
    if x.rotary_mode == 0:
        k[...] = k_stored
        np.abs(k, out=abs_k)
        return abs_k, None
    half = head_dim // 2
    positions = np.asarray(x.k_rope_pos_offset).astype(np.int64)[rows.sequence] + rows.row  # [T]
    freq = rope_frequencies(head_dim, x.rope_theta, x.llama3, "neox")[:half]
    angles = (positions.astype(np.float64) * x.rope_scale)[..., None] * freq  # rotate_neox's _angles
    cos, sin = np.cos(angles), np.sin(angles)  # [T, D/2], broadcast over heads
    dtype = numpy_dtype(x.qkv_dtype)
    ulp_k = np.empty(k.shape)
    for heads in _head_blocks(kv_heads, total, head_dim):
        lower = k_stored[heads, :, :half].astype(np.float64)
        upper = k_stored[heads, :, half:].astype(np.float64)
        scratch = sin * upper
        rotated = np.multiply(cos, lower)
        np.subtract(rotated, scratch, out=rotated)
        with np.errstate(over="ignore"):  # beyond the dtype's range it stores inf, as the plain rounder does
            k[heads, :, :half] = rotated.astype(dtype)
            np.multiply(sin, lower, out=scratch)
            np.multiply(cos, upper, out=rotated)
            np.add(rotated, scratch, out=rotated)
            k[heads, :, half:] = rotated.astype(dtype)
        np.abs(k[heads], out=abs_k[heads])
        floats.ulp(abs_k[heads], x.qkv_dtype, out=ulp_k[heads])
    return abs_k, ulp_k


def _evaluate_fast(x: DecodeInputs) -> DecodeEvaluation | None:
    q_stored = np.asarray(x.q)
    batch, qo_heads, head_dim = q_stored.shape
    kv_heads = np.asarray(x.pages).shape[2]
    group = qo_heads // kv_heads
    rows = _rows(x)
    longest, total = rows.longest, rows.total
    live = [b for b in range(batch) if rows.length[b] > 0]
    k_stored, v_stored = _gather(x, rows)

    # Keys (rotated and rounded with rotary_mode 1) with `longest` zero rows after the last
    # sequence, so every sequence has an Lmax-row window for the plain path's logits product.
    keys = np.empty((kv_heads, total + longest, head_dim))
    keys[:, total:] = 0.0
    k = keys[:, :total]
    q = np.asarray(q_stored, np.float64)
    abs_k, ulp_k = _keys(x, rows, k_stored, keys)
    if x.rotary_mode == 1:
        q_positions = np.asarray(x.q_rope_position).astype(np.int64)
        q = _round_in_place(rotate_neox(q, q_positions[:, None], rope_theta=x.rope_theta, rope_scale=x.rope_scale,
                                        llama3=x.llama3), numpy_dtype(x.qkv_dtype))
    qg = q.reshape(batch, kv_heads, group, head_dim)

    # Logits: the plain path's product for each (sequence, kv head), on the same [Lmax, D] rows.
    scores = np.zeros((batch, kv_heads, group, longest))
    for b in live:
        window = keys[:, rows.start[b]:rows.start[b] + longest]
        scores[b] = qg[b] @ window.transpose(0, 2, 1)
    valid = (np.arange(longest) < rows.length[:, None])[:, None, None, :]
    logits2 = np.where(valid, scores * (x.sm_scale * LOG2E), -np.inf)
    if np.isnan(logits2).any() or np.isposinf(logits2).any():
        return None  # the plain reference rejects these logits

    # references.softmax.softmax_state's m, weights and d; o over the attended rows only.
    m = np.max(logits2, axis=-1, initial=-np.inf)
    weights = np.exp2(logits2 - np.where(np.isfinite(m), m, 0.0)[..., None])
    d = weights.sum(axis=-1)
    v = v_stored.astype(np.float64)
    o_sum = np.zeros((batch, kv_heads, group, head_dim))
    for b in live:
        o_sum[b] = weights[b, :, :, :rows.length[b]] @ v[:, rows.span(b)]
    o, lse2 = state_to_output(m, d, o_sum, base=2)
    o, lse2 = o.reshape(batch, qo_heads, head_dim), lse2.reshape(batch, qo_heads)
    logits2 = logits2.reshape(batch, qo_heads, longest)

    abs_v = np.abs(v, out=v)  # the budget needs |v| only
    delta = _logit_errors(x, rows, qg, abs_k, ulp_k, live)
    if delta is None:
        return None
    o_budget, lse_budget = _budget(x, rows, logits2, delta, o, lse2, abs_v, live)
    if not (np.isfinite(o_budget).all() and np.isfinite(lse_budget).all()):
        return None  # the plain budget decides what a non-finite term means
    return DecodeEvaluation(o, lse2, logits2, rows.length, o_budget, lse_budget)


def _logit_errors(x: DecodeInputs, rows: _Rows, qg: np.ndarray, abs_k: np.ndarray, ulp_k: np.ndarray | None,
                  live: list) -> np.ndarray | None:
    """decode_budget's delta (before masking), [B, Hkv, G, Lmax], >= the plain one (module docstring)."""
    batch, kv_heads, group, head_dim = qg.shape
    r, u = rounding_rel(ACC), unit_roundoff(ACC)
    c = x.sm_scale * math.log2(math.e)
    dot_rel = gamma(head_dim + 3, r) + u
    abs_q = np.abs(qg)
    delta = np.zeros((batch, kv_heads, group, rows.longest))
    if x.rotary_mode == 0:
        for b in live:
            delta[b, ..., :rows.length[b]] = (dot_rel * c) * (abs_q[b] @ abs_k[:, rows.span(b)].transpose(0, 2, 1))
        return delta * inflation(2 * head_dim + 64)

    q_positions = np.asarray(x.q_rope_position).astype(np.int64)
    angle_rel = rope_angle_rel(head_dim, x.rope_theta, x.llama3)
    freq = rope_frequencies(head_dim, x.rope_theta, x.llama3) * x.rope_scale
    partner = partner_dims(head_dim)
    slope = np.abs(freq) * angle_rel  # |angle| rel = |pos| slope
    if not np.array_equal(slope, slope[partner]):
        return None  # the regrouping needs pair-symmetric angle errors (NeoX frequencies are)
    q = qg.reshape(batch, -1, head_dim)
    e_q = (_SQRT2 * rope_error(q, q_positions[:, None, None] * freq, angle_rel)
           + plain_ulp(q, x.qkv_dtype)).reshape(qg.shape)
    w = abs_q + e_q
    paired = w + w[..., partner]
    constant = trig_abs(ACC) + 2 * rounding_rel(ACC)
    by_magnitude = np.concatenate([dot_rel * abs_q + e_q + (_SQRT2 * constant) * paired,
                                   (_SQRT2 * slope) * paired], axis=2)  # [B, Hkv, 2G, D]
    flushed = (3 * _SQRT2 * FTZ_ABS) * w.sum(axis=-1)  # [B, Hkv, G]
    k_offset = np.asarray(x.k_rope_pos_offset).astype(np.int64)
    for b in live:
        span = rows.span(b)
        magnitude_terms = by_magnitude[b] @ abs_k[:, span].transpose(0, 2, 1)  # [Hkv, 2G, L]
        ulp_terms = w[b] @ ulp_k[:, span].transpose(0, 2, 1)
        position = np.abs(k_offset[b] + np.arange(rows.length[b])).astype(np.float64)
        delta[b, ..., :rows.length[b]] = c * (magnitude_terms[:, :group] + position * magnitude_terms[:, group:]
                                              + ulp_terms + flushed[b][..., None])
    return delta * inflation(2 * head_dim + 64)


def _o_difference_bound(a_d: np.ndarray, longest: int) -> np.ndarray:
    """e >= |o - o_plain|: both are float64 sums over the same weights p_j (bit-identical) of
    p_j v_jd, in some order over at most Lmax terms, divided by the same d >= 1, so each is within
    gamma_{Lmax+1} sum_j p_j |v_jd| / d (+ one underflow per term) of the exact quotient, and
    sum_j p_j |v_jd| / d <= A_d (ours, inflated above the exact value)."""
    return 4.0 * float(gamma(longest + 2, _U64)) * a_d + longest * 2.0**-1072


def _rounding_term(o: np.ndarray, a_d: np.ndarray, longest: int, dtype: str) -> np.ndarray:
    """faithful_rounding_bound at its largest over |o| +- e: the bound is constant below the
    smallest normal and non-decreasing above it, so its largest value on an interval is at one of
    the ends."""
    e = _o_difference_bound(a_d, longest)
    magnitude = np.abs(o)
    return np.maximum(floats.faithful_rounding_bound(np.maximum(magnitude - e, 0.0), dtype),
                      floats.faithful_rounding_bound(magnitude + e, dtype))


def _budget(x: DecodeInputs, rows: _Rows, logits: np.ndarray, delta4: np.ndarray, o: np.ndarray,
            lse2: np.ndarray, abs_v: np.ndarray, live: list):
    """decode_budget from delta on: the plain formula line for line (verify.budgets.attention),
    with its two products over rows (spread, A_d) done per sequence on attended rows."""
    r = rounding_rel(ACC)
    u = unit_roundoff(ACC)
    batch, qo_heads, longest = logits.shape
    kv_heads, group = delta4.shape[1], delta4.shape[2]
    n = rows.length.astype(np.float64)[:, None]
    valid = np.isfinite(logits)
    delta = np.where(valid, delta4.reshape(batch, qo_heads, -1), 0.0)

    m = np.max(np.where(valid, logits, -np.inf), axis=-1, initial=-np.inf)
    nonempty = np.isfinite(m)
    m_safe = np.where(nonempty, m, 0.0)
    x_ = np.where(valid, logits - m_safe[..., None], 0.0)
    w = np.where(valid, np.exp2(x_), 0.0)
    d = np.where(nonempty, w.sum(-1), 1.0)
    p = w / d[..., None]
    kappa = np.where(valid, exp2_rel(x_) + LN2 * r * np.abs(x_), 0.0)
    logit_range = np.where(nonempty, m - np.min(np.where(valid, logits, np.inf), axis=-1, initial=np.inf), 0.0)
    events = 2.0 * n
    eps_chain = 2 * u * (3 * events + 2 * logit_range) + events * r + LN2 * r * logit_range
    gamma_n = gamma(n, r)
    mean_kappa = (p * kappa).sum(-1)
    mean_delta = (p * delta).sum(-1)
    pi = kappa + mean_kappa[..., None] + LN2 * (delta + mean_delta[..., None]) + (2 * eps_chain + gamma_n)[..., None]
    pi = pi + (gamma_n + r)[..., None]
    pi = pi * (1.0 + pi)

    pg = p.reshape(batch, kv_heads, group, -1)
    weighted = np.concatenate([pg * pi.reshape(pg.shape), pg], axis=2)  # [B, Hkv, 2G, Lmax]
    sums = np.zeros((batch, kv_heads, 2 * group, o.shape[-1]))
    for b in live:
        sums[b] = weighted[b, :, :, :rows.length[b]] @ abs_v[:, rows.span(b)]
    sums *= inflation(2 * longest + 8)
    spread = sums[:, :, :group].reshape(o.shape)
    a_d = sums[:, :, group:].reshape(o.shape)
    o_budget = spread + division_rel(ACC) * a_d + (2 * n[..., None] + 4) * FTZ_ABS + \
        _rounding_term(o, a_d, longest, x.qkv_dtype)

    eps_d = mean_kappa + eps_chain + gamma_n
    eps_d = eps_d * (1.0 + eps_d)
    lse_budget = mean_delta + (-np.log2(1.0 - np.minimum(eps_d, 0.5))) + log2_abs(d) + \
        r * np.abs(np.where(nonempty, lse2, 0.0))
    return np.where(nonempty[..., None], o_budget, 0.0), np.where(nonempty, lse_budget, 0.0)
