"""A prefill case's float64 reference and error budget (references/prefill.py,
verify.budgets.prefill), computed once per case and in row blocks when the case is long.

The reference holds base-2 logits for every (query row, head, context row), [T, Hq, Lmax] float64:
a 4096-token prompt on an 8192-row context with 32 heads would be 8.6 GB. A query row's reference
and budget depend only on its own query, position and mask row, on its sequence's context, and on
how many columns the kernel walks for it, so a long case is evaluated sequence by sequence:

- each sequence's context is gathered and rotated once (references.prefill.rotated), and the
  budget's terms of it are formed once (verify.budgets.prefill.ContextTerms);
- its rows are attended a block at a time (references.prefill.attend) with their rows of the
  sequence's mask (references.prefill.prefill_mask) over the context rows they can see: with the
  causal mask rows [s, e) see the first kv_len - qo_len + e rows; without it, and under the
  sliding-window cross mask, the whole context (rows past W - 1 see nothing under that mask: a
  block of them alone is not evaluated);
- every block's budget is given the whole sequence's walked columns (kv_len) and sum |V|
  (verify.budgets.prefill's `processed` and `hidden_v`), since the kernel walks the whole context
  for every row.

Token trees are evaluated whole (the tree kernels' cases keep queries x context small enough:
verify.kernels.attention.prefill_cases.tree_cases).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from verify.budgets.prefill import context_terms, prefill_budget
from verify.budgets.roundoff import numpy_dtype
from verify.fastpath.memo import CaseMemo
from verify.references import prefill as reference
from verify.references.paged_kv import attended_length, gather_kv

#: (query rows x heads x context rows, or x V's head dim where that is larger: the outputs and
#: their budgets) evaluated in one reference call or row block: 2e6 float64 values, 16 MB an
#: array. Above 32 MiB glibc's malloc maps each array afresh and the kernel zeroes its pages on
#: first touch: with 8e6 a long case spent more time there than in the arithmetic.
PLAIN_CELLS = 2_000_000
#: The fewest query rows in a block: each block's matrix products read the whole context once
#: (K, its error terms and V), so a long context's blocks need rows enough to pay for that read.
MIN_BLOCK_ROWS = 16
KINDS = ("paged", "ragged", "tree", "paged_tree")


@dataclass(frozen=True)
class PrefillProblem:
    """What a prefill case's reference and budget read: the reference function's arrays (by its
    argument names) and keyword options, the storage type, and the lse's."""

    kind: str  # one of KINDS
    arrays: dict
    options: dict = field(default_factory=dict)
    qkv_dtype: str = "f32"
    lse_dtype: str = "f32"

    _POSITIONAL = {
        "paged": ("q", "q_indptr", "pages", "page_indptr", "page_values", "length_info"),
        "ragged": ("q", "q_indptr", "k", "v", "kv_indptr"),
        "tree": ("q", "q_indptr", "k", "v", "kv_indptr", "token_tree_parent_ptr", "tree_order_indptr"),
        "paged_tree": ("q", "q_indptr", "pages", "page_indptr", "page_values", "length_info", "token_tree_parent_ptr",
                       "tree_order_indptr"),
    }
    _KEYWORD_ARRAYS = ("k_rope_pos_offset", "q_rope_position")
    _FUNCTIONS = {"paged": "paged_prefill_attention", "ragged": "ragged_prefill_attention", "tree": "tree_attention",
                  "paged_tree": "paged_tree_attention"}

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"prefill problem kind {self.kind!r}: expected one of {', '.join(KINDS)}")

    def key(self) -> tuple:
        arrays = tuple(self.arrays[name] for name in sorted(self.arrays))
        scalars = (self.kind, tuple(sorted(self.arrays)), tuple(sorted(self.options.items())), self.qkv_dtype,
                   self.lse_dtype)
        return arrays, scalars

    @property
    def rotary(self) -> bool:
        return int(self.options.get("rotary_mode", 0)) == 1

    def reference(self):
        """references.prefill's result for this problem, rotated rows rounded to the storage type."""
        function = getattr(reference, self._FUNCTIONS[self.kind])
        options = dict(self.options)
        if self.kind != "paged_tree":
            options["rotary_dtype"] = numpy_dtype(self.qkv_dtype) if self.rotary else None
            options.update({name: self.arrays[name] for name in self._KEYWORD_ARRAYS if name in self.arrays})
        return function(*(self.arrays[name] for name in self._POSITIONAL[self.kind]), **options)

    def positions(self, result) -> tuple:
        """(q_positions [T], k_positions [B, Lmax]) of the rotated rows, or (None, None)."""
        if not self.rotary:
            return None, None
        q_pos = np.asarray(self.arrays["q_rope_position"], np.int64)
        columns = np.arange(result.k.shape[2])
        if self.kind == "tree":  # K row c of sequence b at q_rope_position[kv_indptr[b] + c] (tree_attn.py L404-408)
            kv_indptr = np.asarray(self.arrays["kv_indptr"], np.int64)
            rows = np.minimum(kv_indptr[:-1, None] + columns, max(q_pos.size - 1, 0))
            return q_pos, q_pos[rows] if q_pos.size else np.zeros_like(rows)
        return q_pos, np.asarray(self.arrays["k_rope_pos_offset"], np.int64)[:, None] + columns

    def budget(self, result, processed=None, hidden_v=None):
        q_positions, k_positions = self.positions(result)
        o = self.options
        return prefill_budget(result, self.qkv_dtype, sm_scale=o["sm_scale"], rotary_mode=int(o.get("rotary_mode", 0)),
                              rope_theta=o.get("rope_theta", 1e4), rope_scale=o.get("rope_scale", 1.0),
                              q_positions=q_positions, k_positions=k_positions, llama3=o.get("llama3"),
                              lse_dtype=self.lse_dtype, processed=processed, hidden_v=hidden_v)


@dataclass(frozen=True)
class PrefillEvaluation:
    """A case's reference outputs and budgets, and what the contracts' conventions read: which
    rows see nothing, each row's largest base-2 logit, and the range of each sequence's V (rows
    that see nothing get a convex combination of hidden V rows from TVM's kernels). The range is
    kept per sequence: a row's copy of it ([T, Hq, Dv], twice) cost as much to write as a long
    prompt's outputs, and only the rows that see nothing read it."""

    o: np.ndarray            # [T, Hq, Dv]
    lse2: np.ndarray         # [T, Hq], -inf where the row sees nothing
    o_budget: np.ndarray     # [T, Hq, Dv]
    lse_budget: np.ndarray   # [T, Hq]
    top_logit2: np.ndarray   # [T, Hq], -inf where the row sees nothing
    sequence_v_low: np.ndarray   # [B, Hq, Dv] min(0, min_c V_c) over each sequence's context
    sequence_v_high: np.ndarray  # [B, Hq, Dv] max(0, max_c V_c)
    sequence: np.ndarray     # [T] the sequence of each row
    walked: np.ndarray       # [T] context columns the kernel walks for the row (its sequence's kv_len)

    @property
    def sees_nothing(self) -> np.ndarray:
        return np.isneginf(self.lse2)

    @property
    def v_low(self) -> np.ndarray:
        """[T, Hq, Dv]: each row's sequence's sequence_v_low."""
        return self.sequence_v_low[self.sequence]

    @property
    def v_high(self) -> np.ndarray:
        return self.sequence_v_high[self.sequence]


def _v_range(v, kv_len, group: int):
    """Per sequence [B, Hq, Dv]: min(0, min_c V_c) and max(0, max_c V_c) over c < kv_len."""
    if np.all(np.asarray(kv_len) == v.shape[2]):  # no padding to mask (a sequence's own context)
        low, high = v.min(axis=2, initial=0.0), v.max(axis=2, initial=0.0)
    else:
        valid = (np.arange(v.shape[2]) < np.asarray(kv_len)[:, None])[:, None, :, None]
        low = np.where(valid, v, 0.0).min(axis=2, initial=0.0)
        high = np.where(valid, v, 0.0).max(axis=2, initial=0.0)
    return np.repeat(low, group, axis=1), np.repeat(high, group, axis=1)


def evaluate_plain(problem: PrefillProblem) -> PrefillEvaluation:
    """One reference call for the whole case, and its budget."""
    result = problem.reference()
    o_budget, lse_budget = problem.budget(result)
    group = result.q.shape[1] // result.k.shape[1]
    low, high = _v_range(result.v, result.kv_len, group)
    sequence = np.repeat(np.arange(result.kv_len.size), result.qo_len)
    top = result.logits2.max(axis=-1, initial=-np.inf)
    return PrefillEvaluation(result.o, result.lse2, o_budget, lse_budget, top, low, high, sequence,
                             result.kv_len[sequence])


def _chunkable(problem: PrefillProblem) -> bool:
    return problem.kind in ("paged", "ragged")


def _window(problem: PrefillProblem) -> int:
    """The cross mask's W, or 0 where the mask is causal or none."""
    o = problem.options
    return int(o.get("sliding_window_size", 0)) if o.get("causal", True) else 0


def _context_lengths(problem: PrefillProblem) -> np.ndarray:
    """Every sequence's kv_len [B], from the indptr or page table alone (no gather)."""
    a = problem.arrays
    if problem.kind == "ragged":
        return np.diff(np.asarray(a["kv_indptr"], np.int64))
    page_size = int(problem.options.get("page_size") or a["pages"].shape[3])
    return attended_length(np.asarray(a["page_indptr"], np.int64), a["length_info"], page_size,
                           bool(problem.options.get("sliding_window", False)))


def _mostly_padding(problem: PrefillProblem, kv_len: np.ndarray, plain_cells: int) -> bool:
    """Whether one reference call would spend most of its work on padding: it lays every sequence
    out to the longest context (logits [T, Hq, Lmax], K and V [B, Hkv, Lmax, D]), so a batch of one
    long context beside short ones computes, rotates and budgets the long one's length for every
    row and gathers it for every sequence. Sequence by sequence the same rows cost their own
    contexts only. kv_len: _context_lengths(problem)."""
    q = problem.arrays["q"]
    qo_len = np.diff(np.asarray(problem.arrays["q_indptr"], np.int64))
    longest, heads = int(kv_len.max(initial=0)), q.shape[1]
    row_values = 2 * q.shape[2]  # a context row's K and V values per kv head (D = Dv for the paged kernels)
    kv_heads = problem.arrays["k"].shape[1] if problem.kind == "ragged" else problem.arrays["pages"].shape[2]
    padded = int(qo_len.sum()) * longest * heads + kv_len.size * longest * kv_heads * row_values
    useful = int(qo_len @ kv_len) * heads + int(kv_len.sum()) * kv_heads * row_values
    return padded > plain_cells // 8 and padded > 2 * useful


def _v_dim(problem: PrefillProblem) -> int:
    return (problem.arrays["v"] if problem.kind == "ragged" else problem.arrays["pages"]).shape[-1]


def _sequence_context(problem: PrefillProblem, b: int):
    """(kv_len, K [1, Hkv, L, D], V [1, Hkv, L, Dv]) of sequence b, float64 as stored (not rotated)."""
    a = problem.arrays
    if problem.kind == "ragged":
        indptr = np.asarray(a["kv_indptr"], np.int64)
        k, v = (np.asarray(a[name][indptr[b]:indptr[b + 1]], np.float64).transpose(1, 0, 2)[None] for name in "kv")
        return int(indptr[b + 1] - indptr[b]), k, v
    sliding = bool(problem.options.get("sliding_window", False))
    info = np.asarray(a["length_info"])
    info_b = info[:, b:b + 1] if sliding else info[b:b + 1]
    indptr = np.asarray(a["page_indptr"], np.int64)
    values = np.asarray(a["page_values"])[indptr[b]:indptr[b + 1]]
    k, v, length = gather_kv(a["pages"], np.array([0, values.size]), values, info_b,
                             problem.options.get("page_size"), sliding)
    return int(length[0]), k, v


def evaluate(problem: PrefillProblem, plain_cells: int = PLAIN_CELLS,
             min_rows: int = MIN_BLOCK_ROWS) -> PrefillEvaluation:
    """The reference and budget of a case: one call when the case is small (or its mask cannot be
    cut into row blocks), else sequence by sequence in row blocks of about `plain_cells` values and
    at least `min_rows` rows; also sequence by sequence when one call's work would be mostly
    padding (`_mostly_padding`)."""
    if not _chunkable(problem):
        return evaluate_plain(problem)
    q, kv_len = problem.arrays["q"], _context_lengths(problem)
    cells = q.shape[0] * q.shape[1] * max(int(kv_len.max(initial=0)), _v_dim(problem), 1)
    if cells <= plain_cells and not _mostly_padding(problem, kv_len, plain_cells):
        return evaluate_plain(problem)
    return _by_sequence(problem, plain_cells, min_rows)


def _by_sequence(problem: PrefillProblem, plain_cells: int, min_rows: int = MIN_BLOCK_ROWS) -> PrefillEvaluation:
    """Each sequence's rows on its own context, in row blocks of about `plain_cells` logits.

    A sequence's context is gathered and rotated once, and so are the budget's terms of it
    (verify.budgets.prefill.ContextTerms); each block attends its rows' slice of the sequence's
    mask over the context rows it can see (references.prefill.attend). Forming the context again
    for every block cost more than the block itself once the context was long: a 4096-row prompt on
    8192 rows re-gathered and re-rotated 268 MB of K and V per block of 7 rows."""
    a, o = problem.arrays, problem.options
    q = a["q"]
    total, heads = q.shape[0], q.shape[1]
    q_indptr = np.asarray(a["q_indptr"], np.int64)
    causal, window = bool(o.get("causal", True)), _window(problem)
    rope = dict(rotary_mode=int(o.get("rotary_mode", 0)), rope_theta=o.get("rope_theta", 1e4),
                rope_scale=o.get("rope_scale", 1.0), llama3=o.get("llama3"))
    rounding = numpy_dtype(problem.qkv_dtype) if problem.rotary else None
    v_dim = _v_dim(problem)
    o_, o_budget = np.zeros((total, heads, v_dim)), np.zeros((total, heads, v_dim))
    lse2, lse_budget, top = np.full((total, heads), -np.inf), np.zeros((total, heads)), np.full((total, heads), -np.inf)
    batch = q_indptr.size - 1
    v_low, v_high = np.zeros((batch, heads, v_dim)), np.zeros((batch, heads, v_dim))
    sequence, walked = np.repeat(np.arange(batch), np.diff(q_indptr)), np.zeros(total, np.int64)
    for b in range(q_indptr.size - 1):
        begin, end = int(q_indptr[b]), int(q_indptr[b + 1])
        if begin == end:
            continue
        kv_len, k, v = _sequence_context(problem, b)
        q_pos = k_pos = None
        if problem.rotary:
            q_pos = np.asarray(a["q_rope_position"], np.int64)[begin:end]
            k_pos = int(np.asarray(a["k_rope_pos_offset"], np.int64)[b]) + np.arange(kv_len)
            k = reference.rotated(k, k_pos[None, None, :], rotary_dtype=rounding, **rope)
        q_b = reference.rotated(np.asarray(q[begin:end], np.float64), None if q_pos is None else q_pos[:, None],
                                rotary_dtype=rounding, **rope)
        terms = context_terms(k[0], v[0], problem.qkv_dtype, k_positions=k_pos, **rope)
        hidden_v = np.abs(v).sum(axis=2)  # [1, Hkv, Dv]
        low, high = _v_range(v, [kv_len], heads // v.shape[1])
        mask = reference.prefill_mask(end - begin, kv_len, causal=causal, sliding_window_size=window)
        step = max(min_rows, plain_cells // (heads * max(kv_len, v_dim, 1)))
        for start in range(0, end - begin, step):
            stop = min(end - begin, start + step)
            if window and start >= window:
                continue  # past the window: o 0, lse -inf, budget 0, as initialised
            visible = kv_len - (end - begin) + stop if causal and not window else kv_len
            result = reference.attend(q_b[start:stop], np.array([0, stop - start]), k[:, :, :visible],
                                      v[:, :, :visible], np.array([visible]), [mask[start:stop, :visible]],
                                      o["sm_scale"])
            ob, lb = prefill_budget(result, problem.qkv_dtype, sm_scale=o["sm_scale"],
                                    q_positions=None if q_pos is None else q_pos[start:stop],
                                    k_positions=None if k_pos is None else k_pos[None, :visible],
                                    lse_dtype=problem.lse_dtype, processed=[kv_len], hidden_v=hidden_v,
                                    contexts=[terms], **rope)
            rows = slice(begin + start, begin + stop)
            o_[rows], lse2[rows], o_budget[rows], lse_budget[rows] = result.o, result.lse2, ob, lb
            top[rows] = result.logits2.max(axis=-1, initial=-np.inf)
        v_low[b], v_high[b], walked[begin:end] = low[0], high[0], kv_len
    return PrefillEvaluation(o_, lse2, o_budget, lse_budget, top, v_low, v_high, sequence, walked)


_MEMO = CaseMemo()


def remembered(problem: PrefillProblem) -> PrefillEvaluation:
    """evaluate(problem), computed once for the same input arrays and options (verify.fastpath.memo)."""
    arrays, scalars = problem.key()
    return _MEMO.get(arrays, scalars, lambda: evaluate(problem))
