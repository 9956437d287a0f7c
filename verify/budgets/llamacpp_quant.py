"""Error budgets of ggml-webgpu's Q8 activation path: quantize_q8's legal outputs and the MMVQ mat-vec.

quantize_q8 (wgsl-shaders/quantize_q8.wgsl) computes, per 32-value block, d = amax / 127 and
id = 1/d in f32, the codes round(x id), the stored d = f16(d) and, for Q4_0/Q4_1/Q4_K weights,
s = f16(d · Σ q). Nothing there is approximate but the division and the roundings, so its
budget is an interval of legal values per output with no further tolerance (`quantize_legal`).

mul_mat_vec with MMVQ (mul_mat_vec_q_acc.tmpl) forms each block's integer dot products exactly
with dot4I8Packed and scales them in f32 (`mmvq_budget`).
"""

from __future__ import annotations

import numpy as np

from verify.budgets.roundoff import faithful_rounding_bound, gamma, smallest_normal, unit_roundoff
from verify.budgets.wgsl_accuracy import division_rel, rounding_rel
from verify.references import ggml_mul_mat
from verify.references import ggml_quants as gq

F32_MAX = float(np.finfo(np.float32).max)


def _f16_interval(lo, hi):
    """The f16 values a conforming implementation may store for any real in [lo, hi] (either
    neighbour, or 0 below f16's smallest normal): [down(lo) - 0, up(hi)] as float64."""
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    return lo - faithful_rounding_bound(lo, "f16"), hi + faithful_rounding_bound(hi, "f16")


def quantize_legal(x):
    """Legal (d, codes, s) intervals of quantize_q8 for activation rows x [rows, K] (f32 values).

    Per block with m = max |x|: the f32 quotient d' = m / 127 errs by division_rel (2.5 ULP, WGSL
    §15.7.4) plus its rounding; id' = 1/d' by division_rel again; the product x id' rounds in f32
    (r = 2u, either neighbour). So x id' lies within t (1 ± e), t = x / (m/127) exactly, with
    e = (1 + division_rel)^2 (1 + r) (1 + r)^2 - 1 to second order, and round() returns an integer
    within 1/2 of it: the legal codes are the integers in [t_lo - 1/2, t_hi + 1/2] (a tie may go
    either way: ggml's CPU rounds half away from zero, WGSL's round() half to even; both are legal).
    The stored d is f16 of d' (either neighbour). s = f16(d' · Σq): with Σq over the legal code
    range, d' over its range, the f32 product (r) and the f16 store. A zero block has d = 0,
    codes 0 and s = 0 exactly (id = 0 by the kernel's select)."""
    x = np.asarray(x, np.float64)
    rows, k = x.shape
    blocks = x.reshape(rows, k // 32, 32)
    m = np.abs(blocks).max(-1)
    r = rounding_rel("f32")
    e_div = division_rel("f32") + r
    d_lo, d_hi = m / 127 * (1 - e_div), m / 127 * (1 + e_div)
    zero = m == 0
    e = (1 + e_div) ** 2 * (1 + r) ** 3 - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(zero[..., None], 0.0, blocks / np.where(zero, 1.0, m / 127)[..., None])
    t_lo, t_hi = t - e * np.abs(t), t + e * np.abs(t)
    codes_lo, codes_hi = np.ceil(t_lo - 0.5), np.floor(t_hi + 0.5)
    stored_d_lo, stored_d_hi = _f16_interval(d_lo, d_hi)
    stored_d_lo, stored_d_hi = np.where(zero, 0.0, np.maximum(stored_d_lo, 0.0)), np.where(zero, 0.0, stored_d_hi)
    sum_lo, sum_hi = codes_lo.sum(-1), codes_hi.sum(-1)
    corners = np.stack([d_lo * sum_lo, d_lo * sum_hi, d_hi * sum_lo, d_hi * sum_hi])
    s_lo, s_hi = corners.min(0), corners.max(0)
    s_lo, s_hi = s_lo - r * np.abs(s_lo), s_hi + r * np.abs(s_hi)
    s_lo, s_hi = _f16_interval(s_lo, s_hi)
    s_lo, s_hi = np.where(zero, 0.0, s_lo), np.where(zero, 0.0, s_hi)
    return (stored_d_lo, stored_d_hi), (codes_lo, codes_hi), (s_lo, s_hi)


def _block_parts(weight_kind: str, weights, activations):
    """Per (activation row n, weight row r, q8 block b): the magnitudes (main, low) of the two
    f32 products each block's threads add, and the coefficient of the stored sum s's error.

    main: the integer dot products times their scales (|.| summed over the block's values):
      q8_0 da db Σ|qa qb|; q4_0 and q4_1 da db Σ qa |qb| (raw nibbles 0..15); q4_K db d sc Σ qa |qb|;
      q2_K db d sc Σ qa |qb|.
    low: the min (offset) term: q4_0 8 da |s|; q4_1 |m| |s|; q4_K dmin mn |s|; q2_K db dmin mn Σ|qb|.
    s_coeff: what an error in the stored s costs: 8 da, |m|, dmin mn (0 for q8_0 and q2_K, which do
    not read s). Where the stored s is inf (d Σq past f16's range, docs/findings.md §19.2) the
    low part's magnitude is that of d Σq, the value s stands for."""
    ad, a_s, aq = gq.q8_1_fields(activations)  # [N, B8], [N, B8], [N, B8, 32]
    a_s = np.where(np.isfinite(a_s), a_s, ad * aq.sum(-1))
    n_rows = aq.shape[0]
    if weight_kind in ("q8_0", "q4_0", "q4_1"):
        q = gq.codes(weight_kind, weights).astype(np.float64)  # [R, B, 32]
        d = gq.f16_field(weights, 0)  # [R, B]
        mag = np.einsum("rbj,nbj->nrb", np.abs(q), np.abs(aq).astype(np.float64))
        main = mag * np.abs(d)[None] * np.abs(ad)[:, None, :]
        if weight_kind == "q8_0":
            return main, np.zeros_like(main), np.zeros_like(main), ad, a_s, aq
        coeff = 8 * np.abs(d) if weight_kind == "q4_0" else np.abs(gq.f16_field(weights, 2))
        coeff = np.broadcast_to(coeff[None], main.shape)
        return main, coeff * np.abs(a_s)[:, None, :], coeff, ad, a_s, aq
    q = gq.codes(weight_kind, weights).astype(np.float64).reshape(weights.shape[0], -1, 32)  # per q8 block
    raw = weights.reshape(-1, gq.block_bytes(weight_kind))
    if weight_kind == "q4_K":
        d, dmin = gq.f16_field(raw, 0), gq.f16_field(raw, 2)
        sc, mn = gq.k_scale_min(raw[:, 4:16])  # [R*B, 8]: one per 32 values
        scale = (d[:, None] * sc).reshape(weights.shape[0], -1)
        low_coeff = (dmin[:, None] * mn).reshape(weights.shape[0], -1)
        mag = np.einsum("rbj,nbj->nrb", q, np.abs(aq).astype(np.float64))
        main = mag * np.abs(scale)[None] * np.abs(ad)[:, None, :]
        coeff = np.broadcast_to(np.abs(low_coeff)[None], main.shape)
        return main, coeff * np.abs(a_s)[:, None, :], coeff, ad, a_s, aq
    d, dmin = gq.f16_field(raw, 80), gq.f16_field(raw, 82)  # q2_K: one scale per 16 values
    sc = raw[:, :16].astype(np.int64)
    scale = np.repeat((d[:, None] * (sc & 0xF)).reshape(weights.shape[0], -1), 16, axis=-1)
    low = np.repeat((dmin[:, None] * (sc >> 4)).reshape(weights.shape[0], -1), 16, axis=-1)
    values = np.abs(aq).astype(np.float64).reshape(n_rows, -1)  # [N, K]
    qk = q.reshape(q.shape[0], -1)
    main = np.einsum("rk,nk->nrk", qk * np.abs(scale), values).reshape(n_rows, qk.shape[0], -1, 32).sum(-1)
    main = main * np.abs(ad)[:, None, :]
    lows = np.einsum("rk,nk->nrk", np.abs(low), values).reshape(n_rows, qk.shape[0], -1, 32).sum(-1)
    lows = lows * np.abs(ad)[:, None, :]
    return main, lows, np.zeros_like(main), ad, a_s, aq


#: f32 operations on each part of one thread's term before the accumulation (mul_mat_vec_q_acc.tmpl):
#: q8_0 f32(I)·(da·db): 2 products; q4_0 I·(da·db) and 8·da·s/4: 2 products and a division each;
#: q4_1 I·(dx·bx) and dy·by/4; q4_K bx·dx·sx·I (3) and dy·sy·(by/2) (2 and a division);
#: q2_K b·(dx·Id - dy·Im): 2 products a part; then the part's difference.
_OPERATIONS = {"q8_0": (2, 0), "q4_0": (2, 2), "q4_1": (2, 1), "q4_K": (3, 2), "q2_K": (2, 2)}
#: Threads that share one weight block (THREADS_PER_BLOCK): each adds one term.
_THREADS = {"q8_0": 4, "q4_0": 4, "q4_1": 4, "q4_K": 16, "q2_K": 16}


def mmvq_budget(weight_kind: str, weights, activations, exact):
    """Budget [N, M] of ggml-webgpu's MMVQ mat-vec against the exact product of the dequantized
    weights [M, K/values, bytes] and q8_1 activations [N, K/32, 36] (references.ggml_quants.dot).

    Every integer sum is exact (dot4I8Packed, |I| < 2^24). Each of a block's THREADS_PER_BLOCK
    threads adds one term: a main part (its integer dot product times the scales, p_main f32
    products) and, for the offset formats, a low part (the weights' offset times the activations'
    stored sum s, or q2_K's mins, p_low products and a division by a constant). With r = 2u_f32
    (either neighbour) each part errs by gamma_{p+1}(r) (division_rel more for the division), their
    difference by r: |term error| <= (gamma_{p_main+1}(r) + r) main + (gamma_{p_low+1}(r) + division_rel
    + r) low, summed over the block's threads, which the per-block magnitudes bound (_block_parts).
    The T = (K / values) THREADS_PER_BLOCK terms are then summed in f32 in any order (each thread's
    running sum, the subgroup or workgroup tree): gamma_{T-1}(r) times the sum of the terms'
    magnitudes (their bound plus their error).

    The kernel reads the activations' stored s = f16(d Σq) where the exact product has d Σq: that
    difference, |s - d Σq| per block, times what it is multiplied by (8 da, |m|, dmin mn), is part
    of its arithmetic and is added exactly from the case's bytes, where s is finite. Where d Σq
    passes f16's range s is inf (docs/findings.md §19.2): no rounding makes that, so the budget
    takes the f16 rounding of d Σq there (u_f16 |d Σq|), and an output made inf or NaN by it
    fails, as it must where the exact product is finite. Each f32 operation may flush a
    subnormal (8 per term), and the float64 reference errs by gamma_{K+1}(u64) Σ|w a|."""
    main, low, s_coeff, ad, _, aq = _block_parts(weight_kind, weights, activations)
    a_s = gq.q8_1_fields(activations)[1]  # the stored s, inf where d Σq passes f16's range
    r = rounding_rel("f32")
    p_main, p_low = _OPERATIONS[weight_kind]
    term_error = (gamma(p_main + 1, r) + r) * main + (gamma(p_low + 1, r) + division_rel("f32") + r) * low
    magnitude = main + low + term_error
    terms = weights.shape[1] * _THREADS[weight_kind]
    sums = ad * aq.sum(-1)
    with np.errstate(invalid="ignore"):
        s_error = np.where(np.isfinite(a_s), np.abs(a_s - sums), rounding_rel("f16") * np.abs(sums))  # [N, B8]
    s_term = (s_coeff * s_error[:, None, :]).sum(-1)
    budget = term_error.sum(-1) + gamma(max(terms - 1, 1), r) * magnitude.sum(-1) + s_term
    budget = budget + 8 * terms * smallest_normal("f32")
    w = np.abs(gq.dequantize_row(weight_kind, weights))
    a = np.abs(gq.dequantize_row("q8_1", activations))
    budget = budget + gamma(w.shape[-1] + 1, unit_roundoff("f64")) * (a @ w.T)
    return np.where(np.abs(np.asarray(exact)) > F32_MAX, np.inf, budget)


# -- the float and dequantizing mat-vec (mul_mat_vec.wgsl with mul_mat_vec_acc.tmpl) ------------------------
#: Values each thread adds into its block's row_sum (ELEMS_PER_THREAD of the legacy formats).
_LEGACY_ELEMS_PER_THREAD = 8
#: Threads that share a legacy weight block (THREADS_PER_BLOCK).
_LEGACY_THREADS = 4
#: f32 roundings in decoding a legacy block value: q4_0 (q - 8) d and q8_0 q d are exact in f32
#: (4 or 8 bits times f16's 11); q4_1's q d + m rounds once (q d is exact; fused or not, one rounding).
_DEQUANT_ROUNDINGS = {"q4_0": 0, "q8_0": 0, "q4_1": 1}


def _weight_flush(weight_kind: str, weights) -> np.ndarray:
    """[M, K]: how far each weight value may move if the program flushes a subnormal it reads. An
    f32 weight below 2^-126 or an f16 weight below 2^-14 may read as 0 (|w|); a block's f16 scale d
    below 2^-14 may read as 0, taking |q d| (all of q4_0's and q8_0's values), and q4_1's minimum m
    likewise |m|. WGSL lets an implementation flush subnormals wherever it computes with them."""
    if weight_kind in ("f32", "f16"):
        w = np.abs(np.asarray(weights, np.float64))
        return np.where(w < smallest_normal(weight_kind), w, 0.0)
    w = gq.dequantize(weight_kind, weights)  # [M, B, 32]
    d = np.abs(gq.f16_field(weights, 0))[..., None]

    def tiny(v):
        return (v > 0) & (v < smallest_normal("f16"))

    if weight_kind == "q4_1":
        m = np.abs(gq.f16_field(weights, 2))[..., None]
        scaled = np.abs(w - gq.f16_field(weights, 2)[..., None])
        moved = np.where(tiny(d), scaled, 0.0) + np.where(tiny(m), m, 0.0)
    else:
        moved = np.where(tiny(d), np.abs(w), 0.0)
    return moved.reshape(moved.shape[0], -1)


def mul_mat_vec_depth(weight_kind: str, activation_kind: str, vectorized: bool, k: int, lanes: int = 256) -> int:
    """The most f32 roundings one product w_k x_k passes on its way to y in mul_mat_vec.wgsl with
    mul_mat_vec_acc.tmpl (a workgroup of `lanes` threads writing OUTPUTS_PER_WG rows):

    - its product: f32 x f32 and f16 x f32 round once (24 + 24 or 11 + 24 significant bits);
      f16 x f16 (SCALAR with f16 activations) is exact in f32: 11 + 11 = 22 bits, and every such
      nonzero product lies in [2^-48, 65504^2], inside f32's normal range, so 0 roundings. The
      legacy formats add their decoding's roundings (_DEQUANT_ROUNDINGS);
    - VEC (f32/f16 weights, K a multiple of 4): dot(vec4, vec4), four products summed in an order
      WGSL leaves open, 3 additions (f16 x f16 takes its dot in f16: mul_mat_vec_budget counts it
      apart, so 0 f32 roundings here);
    - each thread's running sum over the terms it takes, k = thread, thread + lanes, ...:
      ceil(K / width / lanes) additions into acc (the first, into 0, is exact: counted anyway); the
      legacy formats first add a block's 8 values into row_sum (8 additions), and a thread takes
      ceil(blocks / (lanes / 4)) blocks;
    - the lanes' sums: the subgroup reduction (subgroupAdd, the partial sums per subgroup, a lane's
      loop over them, subgroupAdd again) or the workgroup tree; whichever, the 256 lane sums meet in
      a tree of two-input additions, in which no leaf passes more than lanes - 1 of them. An order
      WGSL leaves open (subgroupAdd's) is any such tree, so lanes - 1 bounds every width.
    """
    if weight_kind in ("f32", "f16"):
        width = 4 if vectorized else 1
        f16_dot = vectorized and activation_kind == "f16"
        product = 0 if (activation_kind == "f16" and weight_kind == "f16") else 1
        inner = 0 if f16_dot else product + width - 1
        per_thread = -(-(k // width) // lanes)
        return inner + per_thread + lanes - 1
    blocks = k // gq.block_values(weight_kind)
    per_thread = -(-blocks // (lanes // _LEGACY_THREADS))
    return _DEQUANT_ROUNDINGS[weight_kind] + 1 + _LEGACY_ELEMS_PER_THREAD + per_thread + lanes - 1


def mul_mat_vec_budget(weight_kind: str, activation_kind: str, vectorized: bool, weights, x, exact,
                       lanes: int = 256):
    """Budget [N, M] of ggml-webgpu's float/dequantizing mat-vec against references.ggml_mul_mat.

    With r = 2u_f32 (WGSL rounds either way), each product w_k x_k reaches y through at most D f32
    roundings (mul_mat_vec_depth), so |y - ŷ| <= gamma_D(r) Σ_k |w_k x_k| (Higham §3.1: each term
    carries a factor Π(1 + δ) of at most D roundings whatever the order of the sums). This is the
    order the program fixes per lane (a thread's chain) and the worst any lane reduction allows
    across lanes, far below gamma_{K-1} for long rows (K = 4096: D = 271 against 4095).

    VEC with f16 activations (f16 weights, the only f16 activations MUL_MAT takes) computes
    `dot(vec4<f16>, vec4<f16>)` in f16, as WGSL types it, then f32(): four f16-rounded products and
    three f16 additions, gamma_7(2u_f16) of the four |w x|, and each of those seven operations may
    flush below 2^-14 (at most min(2^-14, its magnitude)); the f32 roundings after it act on those
    terms. A vec4 whose products or partial sums pass 65504 overflows f16 where ggml's f32 result is
    finite: no rounding makes that, so the budget does not admit it.

    Flushes: an activation below f32's (f16's) smallest normal may read as 0 (|w x|), a weight as
    _weight_flush says, and each f32 product or sum may flush (2^-126 each, 3K + 2 lanes of them).
    The float64 reference errs by gamma_{K+1}(u_64) Σ|w x|. Where |exact| passes f32's range the
    budget is inf (the output may be anything an f32 can hold, or inf)."""
    w = ggml_mul_mat.weight_values(weight_kind, weights)
    x = np.asarray(x, np.float64)
    k = w.shape[-1]
    aw, ax = np.abs(w), np.abs(x)
    magnitude = ax @ aw.T
    r = rounding_rel("f32")
    depth = mul_mat_vec_depth(weight_kind, activation_kind, vectorized, k, lanes)
    budget = np.zeros_like(magnitude)
    if vectorized and activation_kind == "f16":
        tiny16 = smallest_normal("f16")
        products = ax[:, None, :] * aw[None, :, :]  # [N, M, K]
        quads = products.reshape(products.shape[:2] + (-1, 4))
        quad_mag = quads.sum(-1)
        quad_error = gamma(7, rounding_rel("f16")) * quad_mag
        quad_error = quad_error + np.minimum(quads, tiny16).sum(-1) + 3 * np.minimum(tiny16, quad_mag + quad_error)
        budget = budget + quad_error.sum(-1)
        magnitude_f32 = magnitude + quad_error.sum(-1)
    else:
        magnitude_f32 = magnitude
    budget = budget + gamma(depth, r) * magnitude_f32
    x_tiny = ax < smallest_normal(activation_kind)
    budget = budget + np.where(x_tiny, ax, 0.0) @ aw.T
    budget = budget + ax @ _weight_flush(weight_kind, weights).T
    budget = budget + (3 * k + 2 * lanes) * smallest_normal("f32")
    budget = budget + gamma(k + 1, unit_roundoff("f64")) * magnitude
    return np.where(np.abs(np.asarray(exact)) > F32_MAX, np.inf, budget)
