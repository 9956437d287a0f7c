"""Error budget of prefill attention (many query rows per sequence), against references/prefill.py.

A prefill row is a decode: one query attends a sequence's context through an online softmax in
f32. TVM's prefill kernels (`_attention_prefill`, `_attention_prefill_ragged`, `tree_attn`,
`tree_attn_with_paged_kv_cache`, `_attention_sequence_prefill`; `_kernel_common.py` L229-334 in the
apache-tvm 0.27 wheel) compute, per row and KV tile of tile_z columns:

    S_c  = sum_d fma((q_d * k_cd) * sm_scale, 1.442695, S)        f32, sequential over d
    m'   = max(m, S_c over the visible columns of the tile)
    d'   = d * exp2(m - m') + sum_c w_c,   w_c = exp2(S_c - m') visible, exp2(-5e4 - m') hidden
    O'   = O * exp2(m - m') + sum_c w_c V_c                          (fma, sequential over c)

from m = -5e4, d = 1, O = 0 (`init_states` L229-234), then o = O / d stored in the qkv dtype and
lse = m + log2(d) in f32 (`_attention_sequence_prefill` stores it in the qkv dtype, L414). So
decode_budget's derivation (verify.budgets.attention) holds row by row, with three differences,
all of which only make the budget larger:

- A row walks every tile of its sequence's context, hidden columns included (a causal row's
  future, a window's far past, a tree's other branches, tile padding): `processed` columns L_b,
  not just the n it sees. Each walked column may start a rescale (an exp2 of m - m', 3 ulp even
  at 0, and a product), and takes part in the sums. So the rescale chain gets N_e = 2 L_b events
  and the sums gamma_{L_b}(r), where decode has n: weight_errors is called with L_b.
- A hidden column is not -inf but -5e4. Inside TVM's domain (every row that sees anything has a
  largest base-2 logit m > -5e4 + 150, verify.sources.tvm.attention.decode.FLOOR_MARGIN) its weight, and
  that of the initial state d = 1, ends at most 2^(-5e4 - m) relative to the final max, below
  f32's smallest subnormal; WGSL's exp2 may still return (3 + 2|x|) subnormal ulps there (x =
  -5e4 - m'), and the rescale by exp2(m - m') can only shrink it. So each of the L_b + 1 stand-ins
  weighs at most h = 2 (4 + 2 (m - EMPTY_MAX)) 2^-149 (twice, for the rescale's rounding), and
  moves O by at most h sum_c |V_c|, d by at most (L_b + 1) h (d >= 1/2: it holds exp2(0) of the
  row's max, 3 ulp from 1): o by 2h (sum_c |V_cd| + (L_b + 1)|o_d|), lse by 2 (L_b + 1) h / ln 2.
- Rows use their own positions: with rotary_mode 1 the query of row t rotates at q_positions[t],
  key c of sequence b at k_positions[b, c] (k_rope_pos_offset[b] + c for paged and ragged
  prefill, q_rope_position[kv_indptr[b] + c] for the ragged tree), and the rotated inputs err as
  decode's do (verify.budgets.attention._rotated_input_error).

The logit error is decode's: each term q_d k_cd goes through the product, the sm_scale product and
the fma with log2(e) (TVM prints 1.442695, which rounds to the f32 nearest log2(e), so the constant
costs u), then at most D - 1 more roundings of the running sum: (gamma_{D+3}(r) + u) c sum_d |q_d k_cd|.
An lse stored in f16 (the sequence kernel) adds the store's faithful rounding.

Rows that see nothing get budget 0 here; the contracts state TVM's convention for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from verify.budgets.attention import (
    ACC,
    FTZ_ABS,
    LN2,
    _rotated_input_error,
    _second_order,
    per_kv_head,
    weight_errors,
)
from verify.budgets.roundoff import faithful_rounding_bound, gamma, unit_roundoff
from verify.budgets.wgsl_accuracy import division_rel, log2_abs, rounding_rel

#: TVM's stand-in for -inf (its running max starts there and hidden columns get this logit).
EMPTY_MAX = -5e4
#: Smallest f32 subnormal, the unit of WGSL exp2's error below the normal range.
SUBNORMAL = 2.0**-149
#: Query rows budgeted at once: keeps each [rows, Hq, L] float64 work array at 16 MB, under the
#: 32 MiB above which glibc's malloc maps every allocation afresh (and the kernel zeroes its pages
#: on first touch) instead of reusing freed memory (verify.session's worker tuning).
ROW_BLOCK_CELLS = 2_000_000


@dataclass(frozen=True)
class ContextTerms:
    """One sequence's context as prefill_budget reads it: the right-hand sides of the logit error's
    two products, delta / c = |q|.k_q + e_q.k_e (see prefill_budget), and |V|. They depend on
    the context alone, so a caller budgeting a sequence's rows a block at a time forms them once
    (`context_terms`); a block that sees only the first L' rows reads their first L' columns."""

    k_q: np.ndarray          # [Hkv, D, L] (gamma_{D+3}(r) + u) |k| (+ e_k with rotary)
    k_e: np.ndarray | None   # [Hkv, D, L] |k| + e_k with rotary, else None
    v_abs: np.ndarray        # [Hkv, L, Dv]


def context_terms(k, v, qkv_dtype: str, *, rotary_mode: int = 0, rope_theta: float = 1e4, rope_scale: float = 1.0,
                  k_positions=None, llama3=None) -> ContextTerms:
    """ContextTerms of one sequence's (rotated, stored) K [Hkv, L, D] and V [Hkv, L, Dv]; with
    rotary_mode 1, k_positions [L] holds each K row's position."""
    head_dim = k.shape[-1]
    r, u = rounding_rel(ACC), unit_roundoff(ACC)
    kt = np.abs(k).transpose(0, 2, 1)  # [Hkv, D, L]
    k_q, k_e = (gamma(head_dim + 3, r) + u) * kt, None
    if rotary_mode == 1:
        from verify.budgets.rope import rope_angle_rel
        from verify.references.rope import rope_frequencies

        freq = rope_frequencies(head_dim, rope_theta, llama3) * rope_scale
        angles = np.asarray(k_positions)[:, None] * freq
        angle_rel = rope_angle_rel(head_dim, rope_theta, llama3)
        e_kt = _rotated_input_error(k, angles, angle_rel, qkv_dtype).transpose(0, 2, 1)
        k_q, k_e = k_q + e_kt, kt + e_kt
    return ContextTerms(k_q, k_e, np.abs(v))


def prefill_budget(result, qkv_dtype: str, *, sm_scale: float, rotary_mode: int = 0, rope_theta: float = 1e4,
                   rope_scale: float = 1.0, q_positions=None, k_positions=None, llama3=None,
                   lse_dtype: str = "f32", processed=None, hidden_v=None, contexts=None):
    """Budgets (for o [T, Hq, Dv], for lse2 [T, Hq]) of a prefill kernel: see the module docstring.

    `result` is references.prefill.PrefillResult. q_positions [T] and k_positions [B, Lmax] give
    each rotated row's position (rotary_mode 1). `processed` [B] is the number of context columns
    the kernel walks for each sequence's rows (default: its kv_len) and `hidden_v` [B, Hkv, Dv]
    sum_c |V_c| over them (default: over the result's rows); a caller that evaluates a sequence's
    rows on a truncated context (an equal sub-problem) passes the whole sequence's. `contexts`
    holds each sequence's ContextTerms where the caller formed them already (over at least its
    kv_len rows); by default they are formed here.
    """
    q, k, v = result.q, result.k, result.v
    total, qo_heads, head_dim = q.shape
    batch, kv_heads = k.shape[:2]
    v_dim = v.shape[-1]
    group = qo_heads // kv_heads
    c = sm_scale * math.log2(math.e)
    r = rounding_rel(ACC)
    kv_len = np.asarray(result.kv_len, np.int64)
    processed = kv_len if processed is None else np.asarray(processed, np.int64)
    hidden_v = np.abs(v).sum(axis=2) if hidden_v is None else np.asarray(hidden_v, np.float64)
    o_budget = np.zeros((total, qo_heads, v_dim))
    lse_budget = np.zeros((total, qo_heads))
    rotary = rotary_mode == 1
    if rotary:
        from verify.budgets.rope import rope_angle_rel
        from verify.references.rope import rope_frequencies

        angle_rel = rope_angle_rel(head_dim, rope_theta, llama3)
        freq = rope_frequencies(head_dim, rope_theta, llama3) * rope_scale
    indptr = np.asarray(result.q_indptr, np.int64)
    for b in range(batch):
        begin, end, length = int(indptr[b]), int(indptr[b + 1]), int(kv_len[b])
        if begin == end:
            continue
        # delta / c = (gamma + u) |q|.|k| + e_q.|k| + |q|.e_k + e_q.e_k (rotary) = |q|.k_q + e_q.k_e:
        # two products of non-negative terms, their right-hand sides formed once per sequence.
        terms = contexts[b] if contexts is not None else context_terms(
            k[b, :, :length], v[b, :, :length], qkv_dtype, rotary_mode=rotary_mode, rope_theta=rope_theta,
            rope_scale=rope_scale, k_positions=None if k_positions is None else np.asarray(k_positions)[b, :length],
            llama3=llama3)
        k_q, vb = terms.k_q[..., :length], terms.v_abs[:, :length]  # [Hkv, D, L], [Hkv, L, Dv]
        k_e = None if terms.k_e is None else terms.k_e[..., :length]  # formed exactly with rotary_mode 1
        step = max(1, ROW_BLOCK_CELLS // max(1, qo_heads * max(length, 1)))
        for start in range(begin, end, step):
            stop = min(end, start + step)
            rows = stop - start
            logits = result.logits2[start:stop, :, :length]  # [rows, Hq, L]
            qg = np.abs(q[start:stop]).reshape(rows, kv_heads, group, head_dim)
            delta = per_kv_head(qg, k_q)  # [rows, Hkv, G, L]
            if k_e is not None:
                e_q = _rotated_input_error(q[start:stop], np.asarray(q_positions)[start:stop, None, None] * freq,
                                           angle_rel, qkv_dtype).reshape(rows, kv_heads, group, head_dim)
                delta = delta + per_kv_head(e_q, k_e)
            delta = np.where(np.isfinite(logits), c * delta.reshape(rows, qo_heads, length), 0.0)
            walked = float(processed[b])
            w = weight_errors(logits, delta, np.full((rows, 1), walked))
            pg = w.p.reshape(rows, kv_heads, group, length)
            spread = per_kv_head(pg * w.pi.reshape(pg.shape), vb).reshape(rows, qo_heads, v_dim)
            a_d = per_kv_head(pg, vb).reshape(rows, qo_heads, v_dim)
            o_ref = result.o[start:stop]
            top = np.where(w.nonempty, logits.max(axis=-1, initial=-np.inf), 0.0)
            with np.errstate(invalid="ignore"):
                base = np.where(w.nonempty, top + delta.max(axis=-1, initial=0.0) - EMPTY_MAX, 0.0)
            stand_in = 2.0 * (4.0 + 2.0 * np.maximum(base, 0.0)) * SUBNORMAL  # [rows, Hq]
            hidden = np.repeat(hidden_v[b], group, axis=0)[None]  # [1, Hq, Dv]
            hidden_o = 2.0 * stand_in[..., None] * (hidden + (walked + 1.0) * np.abs(o_ref))
            o_rows = spread + division_rel(ACC) * a_d + (2 * walked + 4) * FTZ_ABS + hidden_o + \
                faithful_rounding_bound(o_ref, qkv_dtype)
            eps_d = _second_order(w.mean_kappa + w.eps_chain + w.gamma_n)
            lse_ref = np.where(w.nonempty, result.lse2[start:stop], 0.0)
            lse_rows = w.mean_delta + (-np.log2(1.0 - np.minimum(eps_d, 0.5))) + log2_abs(w.d) + r * np.abs(lse_ref) + \
                2.0 * (walked + 1.0) * stand_in / LN2
            if lse_dtype != "f32":
                lse_rows = lse_rows + faithful_rounding_bound(np.abs(lse_ref) + lse_rows, lse_dtype)
            o_budget[start:stop] = np.where(w.nonempty[..., None], o_rows, 0.0)
            lse_budget[start:stop] = np.where(w.nonempty, lse_rows, 0.0)
    return o_budget, lse_budget
