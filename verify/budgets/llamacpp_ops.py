"""Error budgets of ggml-webgpu's row ops (verify.sources.llamacpp.ops), derived from their WGSL.

rms_norm_mul.wgsl, per row of n values with WG_SIZE lanes: each lane adds `pow(x, 2.0)` of its
columns, the lanes' sums are added by a tree in workgroup memory, then
`scale = 1.0/sqrt(sum/f32(ne0) + eps)` and `y = scale * x * w` (left to right).
"""

from __future__ import annotations

import numpy as np

from verify.budgets.llamacpp_attention import pow_rel  # soft_max's ALiBi slope, as the vec attention's
from verify.budgets.roundoff import faithful_rounding_bound, gamma, smallest_normal, unit_roundoff
from verify.budgets.wgsl_accuracy import division_rel, exp2_rel, exp_rel, inverse_sqrt_rel, log2_abs, rounding_rel


def _compose(*rels) -> np.ndarray:
    """The relative error of a chain of operations with relative errors `rels`: Π(1 + r) - 1."""
    total = np.ones(np.broadcast(*[np.asarray(r) for r in rels]).shape)
    for r in rels:
        total = total * (1.0 + np.asarray(r, np.float64))
    return total - 1.0


def square_rel(x) -> np.ndarray:
    """Relative error bound of WGSL `pow(x, 2.0)` for x != 0, whose accuracy the spec inherits
    from exp2(2 log2 x): log2's absolute error a (2^-21 on [0.5, 2], else 3 ULP of the result),
    doubled, moves the exponent by 2a, a factor 2^(2a); exp2 adds (3 + 2|2 log2 x|) ULP. The bound
    is taken on |x|: for x < 0 log2 has no value and the spec bounds nothing; what such a lane
    computes is judged against x² as ggml's op defines it."""
    a = np.abs(np.asarray(x, np.float64))
    safe = np.where(a > 0, a, 1.0)
    exponent = 2.0 * np.log2(safe)
    shift = np.exp2(2.0 * log2_abs(safe)) - 1.0
    return np.where(a > 0, _compose(shift, exp2_rel(exponent)), 0.0)


def rms_norm_mul_budget(x, w, eps: float, y_exact) -> np.ndarray:
    """Budget [..., n] of ggml-webgpu's rms_norm_mul against references.ggml_norm.rms_norm_mul.

    With r = 2u_f32 (either neighbour) and q_j the squares' bound (square_rel, each square may also
    flush to zero when below f32's smallest normal 2^-126: n of those at most):
    - sum: S = Σ fl(x_j²) in any order (each lane's running sum, then the tree): |Ŝ - Σx²| <=
      Σ q_j x_j² + gamma_{n-1}(r) Σ (1 + q_j) x_j² + n 2^-126 =: e_S;
    - mean: Ŝ / f32(n) (n exact below 2^24) within division_rel (2.5 ULP), then + eps within r:
      the argument m̂ of sqrt errs relatively by rel_m = (e_S / n) / (Σx²/n + eps) composed with
      the division and the addition;
    - sqrt(m̂): the spec inherits its accuracy from 1/inverseSqrt(m̂): halves rel_m, then
      inverse_sqrt_rel (2 ULP) and the division (2.5 ULP); `1.0/sqrt(...)` one more division:
      scale errs relatively by rel_s;
    - y = (scale·x)·w: two products, r each, and each may flush a subnormal (2 · 2^-126 |w| + 2^-126);
    - WGSL lets an implementation flush a subnormal *input* too (NVIDIA's drivers do): where x_j or
      w_j is below 2^-126, a product sees 0 and ŷ_j may be 0 whatever y_j is. scale amplifies
      (up to 1/sqrt(eps)), so no absolute floor covers it: such a column may lose all of |y_j|.
    So |ŷ_j - y_j| <= |y_j| ((1 + rel_s)(1 + r)² - 1) + 2^-126 (1 + 2|w_j|) (+ |y_j| where x_j or w_j
    is subnormal), plus the float64 reference's own error, 8 u_64 |y_j| (n-term sum, sqrt,
    quotient, two products)."""
    x64 = np.asarray(x, np.float64)
    n = x64.shape[-1]
    r = rounding_rel("f32")
    squares = x64 * x64
    q = square_rel(x64)
    tiny = smallest_normal("f32")
    e_sum = (q * squares).sum(-1) + gamma(max(n - 1, 1), r) * ((1 + q) * squares).sum(-1) + n * tiny
    mean = squares.sum(-1) / n + float(eps)
    rel_mean = _compose(np.where(mean > 0, (e_sum / n) / np.where(mean > 0, mean, 1.0), np.inf),
                        division_rel("f32"), r)
    rel_sqrt = _compose(rel_mean / 2.0 + rel_mean**2, inverse_sqrt_rel("f32"), division_rel("f32"))
    rel_scale = _compose(rel_sqrt, division_rel("f32"))
    y = np.abs(np.asarray(y_exact, np.float64))
    w64 = np.abs(np.asarray(w, np.float64))
    budget = y * _compose(rel_scale[..., None], r, r) + tiny * (1.0 + 2.0 * w64)
    abs_x = np.abs(x64)
    flushable = ((abs_x > 0) & (abs_x < tiny)) | ((w64 > 0) & (w64 < tiny))
    return budget + np.where(flushable, y, 0.0) + 8 * unit_roundoff("f64") * y


# -- GET_ROWS / SET_ROWS ----------------------------------------------------------------------------------
#: Byte offsets of each block type's f16 fields (d, and m / dmin), references.ggml_quants' layouts.
F16_FIELDS = {"q8_0": (0,), "q4_0": (0,), "q4_1": (0, 2), "q4_K": (0, 2), "q2_K": (80, 82)}
#: Block types whose dequantization ends in one rounded addition (d q + m, d sc q - dmin mn).
ROUNDED_ONCE = frozenset({"q4_1", "q4_K", "q2_K"})


def flush_f16_fields(kind: str, blocks) -> np.ndarray:
    """The blocks with every subnormal f16 field set to zero: what an implementation that flushes
    f16 subnormals on unpack2x16float / f32(f16) decodes."""
    out = np.array(blocks, np.uint8, copy=True)
    for offset in F16_FIELDS[kind]:
        bits = out[..., offset].astype(np.uint16) | (out[..., offset + 1].astype(np.uint16) << 8)
        subnormal = (bits & 0x7C00) == 0
        out[..., offset] = np.where(subnormal, 0, out[..., offset])
        out[..., offset + 1] = np.where(subnormal, out[..., offset + 1] & 0x80, out[..., offset + 1])
    return out


def get_rows_budget(src_type: str, exact, flushed=None) -> tuple[np.ndarray, np.ndarray]:
    """(budget, exact mask) of ggml-webgpu's get_rows against references.ggml_rows: a copy, so
    every element is bit for bit where the arithmetic allows, and the budget names each way it
    may not be.

    - f32 and i32: `dst = src`, a load and a store: bit for bit.
    - f16: `f32(src)` is exact for every f16 value (f32 holds all of them), but WGSL lets an
      implementation flush a subnormal f16 to zero: there the element may be 0 or x (budget |x|),
      everywhere else bit for bit.
    - q8_0, q4_0: `f32(q) * d` (q4_0: `(f32(q) - 8.0) * d`) with |q| <= 128 and d an f16 (11
      significant bits): at most 19 significant bits, which f32 holds, so the product is exact
      and never subnormal (|d| >= 2^-24): bit for bit.
    - q4_1 (`f32(q) * d + m`), q4_K and q2_K (`f32(q) * (d * sc) - dmin * mn`, sc and mn at most 6
      and 4 bits): every product exact (at most 4 + 11 + 6 = 21 bits), the final sum rounded once,
      to either neighbour: one f32 ulp of the result (faithful_rounding_bound). The result is a
      multiple of 2^-24 · 2^-24 at worst, far above f32's subnormals, so nothing flushes.
    - Any block type: a subnormal f16 field (d, m, dmin) may be flushed to zero when decoded; the
      values `flushed` (the same rows decoded from flush_f16_fields) are then as legal as the
      exact ones, so the budget adds |exact - flushed| and the exact mask drops those elements.
    The float64 reference is exact for all of them (products of an f16 and small integers plus an
    f16)."""
    exact = np.asarray(exact, np.float64)
    if src_type in ("f32", "i32"):
        return np.zeros(exact.shape), np.ones(exact.shape, bool)
    if src_type == "f16":
        subnormal = (exact != 0) & (np.abs(exact) < smallest_normal("f16"))
        return np.where(subnormal, np.abs(exact), 0.0), ~subnormal
    if src_type not in F16_FIELDS:
        raise ValueError(f"get_rows budget for {src_type!r}: one of f32, f16, i32, {', '.join(F16_FIELDS)}")
    other = exact if flushed is None else np.asarray(flushed, np.float64)
    spread = np.abs(exact - other)
    budget = spread.copy()
    if src_type in ROUNDED_ONCE:
        budget = budget + faithful_rounding_bound(np.maximum(np.abs(exact), np.abs(other)), "f32")
    return budget, (spread == 0) & (src_type not in ROUNDED_ONCE)


def rope_budget(x, positions, n_dims: int, mode: int, *, theta_scale: float, freq_scale: float, ext_factor: float,
                attn_factor: float, corr_dims, freq_factors, n_offs: int, exact, dtype: str) -> np.ndarray:
    """Budget [..., tokens, heads, ne0] of ggml-webgpu's rope.wgsl against references.ggml_rope.rope
    (its f32 params as the host passes them: theta_scale, freq_scale, ext_factor, attn_factor and
    the correction dims are the f32 values both sides take).

    Per pair k of a token at position p, all in f32 with r = 2u_f32 (either neighbour), built-ins
    at the WGSL spec's accuracy (verify.budgets.wgsl_accuracy) as verify.budgets.rope bounds them:
    - `pow(theta_scale, f32(k))`, inherited from exp2(k log2 ts): log2's absolute error
      (log2_abs: 2^-21 on [0.5, 2], else 3 ULP) times k, and the product's r|z|, move the exponent
      z = k log2 ts by dz, a relative 2^dz - 1; exp2 adds (3 + 2|z|) ULP;
    - `f32(p) * pow(...)` (p exact below 2^24): r; `/ freq_factor(iw)`: 2.5 ULP (also the
      program's division by 1.0 without FF_FUNC: the spec grants it the same); theta_extrap errs
      relatively by rel_e;
    - theta = freq_scale theta_extrap: r. With ext_factor != 0, YaRN's ramp
      y = (f32(k) - low) / max(0.001, high - low) (the correction dims are small integers: the
      subtractions are exact) errs by 2.5 ULP |y|, the clamp is 1-Lipschitz, 1 - c and the
      product by ext_factor round (r each): the mix m errs by dm; theta = theta_i (1 - m) +
      theta_e m = theta_e (fs (1 - m) + m) then errs by
      |theta_e| ((fs |1 - m| + |m|) T + |1 - fs| dm (1 + T)), T the relative error of either
      term (rel_e and four roundings), and the sum's r;
    - mscale = attn_factor, or with ext_factor != 0 attn_factor (1 + 0.1 log(1/fs)): the
      division 2.5 ULP, log's absolute error (log_abs) plus the quotient's relative one, the
      literal 0.1f (literal_rel), the product, the sum and the last product r each: dms;
    - cos and sin of the computed angle err by 2^-11 (the spec's bound on [-pi, pi], taken on
      the reduced argument as verify.budgets.rope does) plus the angle's error (both are
      1-Lipschitz), Tc; times mscale: |ms| Tc + dms (|cos| + Tc), one more r, and a product that
      flushes below 2^-126;
    - y_a = x_a c - x_b s, y_b = x_a s + x_b c: the errors of c and s times |x|, two products and
      a sum (r each, second order kept), three flushed subnormals;
    - an f16 dst: the store rounds once more (one f16 ulp of |y| + the error above, or a flush).
    Channels outside the rotated window are copied (f32(src) then DataType(...), exact): budget 0.
    The float64 reference's own error, 64 u_64 (1 + |theta|) mscale (|x_a| + |x_b|), is added to the
    rotated ones (tests/references/test_ggml_rope.py holds it to its mpmath twin at that bound)."""
    from verify.budgets.wgsl_accuracy import literal_rel, log_abs, trig_abs
    from verify.references.ggml_rope import pair_channels, rope_angles, yarn_mscale

    x64 = np.asarray(x, np.float64)
    r, div, trig, tiny = rounding_rel("f32"), division_rel("f32"), trig_abs("f32"), smallest_normal("f32")
    pairs = n_dims // 2
    k = np.arange(pairs, dtype=np.float64)
    ts, fs, ext = float(theta_scale), float(freq_scale), float(ext_factor)
    # pow(ts, k) = exp2(k log2 ts)
    z = k * np.log2(ts)
    dz = k * log2_abs(ts) + r * (np.abs(z) + k * log2_abs(ts))
    rel_pow = _compose(np.exp2(dz) - 1.0, exp2_rel(np.abs(z) + dz))
    rel_e = _compose(rel_pow, r, div)  # theta_extrap = (p * pow) / freq_factor
    extrap = np.abs(rope_angles(positions, n_dims, ts, 1.0, 0.0, corr_dims, freq_factors))  # [tokens, pairs]
    theta = np.abs(rope_angles(positions, n_dims, ts, fs, ext, corr_dims, freq_factors))
    if ext != 0.0:
        low, high = float(corr_dims[0]), float(corr_dims[1])
        y = (k - low) / max(0.001, high - low)
        ramp = 1.0 - np.clip(y, 0.0, 1.0)
        d_ramp = div * np.abs(y) + r * ramp
        mix = ramp * ext
        d_mix = abs(ext) * d_ramp + r * abs(ext) * (ramp + d_ramp)
        term = _compose(rel_e, r, r, r, r)
        d_theta = extrap * ((fs * np.abs(1.0 - mix) + np.abs(mix)) * term + abs(1.0 - fs) * d_mix * (1.0 + term))
        d_theta = d_theta + r * (theta + d_theta)
        inv = 1.0 / fs
        d_log = log_abs(inv) * (1.0 + div) + div * (1.0 + div)
        t = 0.1 * np.log(inv)
        d_t = 0.1 * d_log + abs(t) * _compose(literal_rel(None), r) + r * 0.1 * d_log
        s = 1.0 + t
        d_s = d_t + r * (abs(s) + d_t)
        d_ms = abs(attn_factor) * d_s + r * abs(attn_factor) * (abs(s) + d_s)
    else:
        d_theta = theta * _compose(rel_e, r)
        d_ms = 0.0
    ms = abs(yarn_mscale(fs, ext, attn_factor))
    t_c = np.minimum(trig + d_theta, 2.0 + trig)
    signed = rope_angles(positions, n_dims, ts, fs, ext, corr_dims, freq_factors)

    def scaled_error(f):
        mag = np.abs(f(signed))
        return ms * t_c + d_ms * (mag + t_c) + r * (ms + d_ms) * (mag + t_c) + tiny, (ms + d_ms) * (mag + t_c)

    d_c, c_max = scaled_error(np.cos)
    d_s_, s_max = scaled_error(np.sin)
    d_c, c_max, d_s_, s_max = (v[:, None, :] for v in (d_c, c_max, d_s_, s_max))  # [tokens, 1, pairs]
    a, b = pair_channels(n_dims, mode, n_offs)
    xa, xb = np.abs(x64[..., a]), np.abs(x64[..., b])
    rounding = (2 * r + r * r) * (xa * c_max + xb * s_max)
    rounding_b = (2 * r + r * r) * (xa * s_max + xb * c_max)
    reference = 64 * unit_roundoff("f64") * ((1.0 + theta) * ms)[:, None, :] * (xa + xb)
    budget = np.zeros(x64.shape)
    budget[..., a] = xa * d_c + xb * d_s_ + rounding + 3 * tiny + reference
    budget[..., b] = xa * d_s_ + xb * d_c + rounding_b + 3 * tiny + reference
    if dtype == "f16":
        rotated = np.zeros(x64.shape, bool)
        rotated[..., a] = rotated[..., b] = True
        stored = faithful_rounding_bound(np.abs(np.asarray(exact, np.float64)) + budget, "f16")
        budget = np.where(rotated, budget + stored, 0.0)
    return budget


# -- SOFT_MAX -----------------------------------------------------------------------------------------
def soft_max_logit_errors(x, mask=None, *, scale: float, max_bias: float = 0.0, alibi=None) -> np.ndarray:
    """Bound on |ŝ - s| [B, H, R, n] of soft_max.wgsl's logits `src * scale + slope * mask_val`
    against references.ggml_softmax.logits (x, mask as stored: f32, or f16 read exactly into f32).

    With t1 = |scale x| and t2 = |slope m|: the product rounds (r t1); the slope is 1 exactly
    without ALiBi (`select(1, ...)`), else WGSL's `pow(m0, h + 1)` or `pow(m1, 2(h - n_head_log2) + 1)`
    on the f32 m0, m1 the host passes, within pow_rel (inherited from exp2(y log2 x)) of the
    reference's slope from the same m0, m1; slope times mask rounds (r); the sum rounds
    (r (|â| + |b̂|)); each of the three may flush a subnormal (3 FTZ). A -inf mask value gives a
    -inf logit in both (error 0)."""
    r = rounding_rel("f32")
    tiny = smallest_normal("f32")
    x64 = np.asarray(x, np.float64)
    batch, heads, rows, _ = x64.shape
    t1 = np.abs(float(scale) * x64)
    if mask is None:
        return r * t1 + tiny
    m = np.asarray(mask, np.float64)
    m = m[np.arange(batch) % m.shape[0]][:, np.arange(heads) % m.shape[1], :rows]
    hidden = np.isneginf(m)
    rho = np.zeros(heads)
    slopes = np.ones(heads)
    if max_bias > 0:
        n_head_log2, m0, m1 = alibi
        h = np.arange(heads, dtype=np.float64)
        base = np.where(h < n_head_log2, m0, m1)
        power = np.where(h < n_head_log2, h + 1.0, 2.0 * (h - n_head_log2) + 1.0)
        rho = pow_rel(base, power)
        slopes = base**power
    rho = rho[None, :, None, None]
    t2 = slopes[None, :, None, None] * np.abs(np.where(hidden, 0.0, m))
    slope_mask = _compose(rho, r)
    delta = r * t1 + slope_mask * t2 + r * (t1 * (1 + r) + t2 * (1 + slope_mask)) + 3 * tiny
    return np.where(hidden, 0.0, delta)


def soft_max_budget(s, delta, sinks, y_exact) -> np.ndarray:
    """See _soft_max_budget; logits so large that their errors overflow the bound's exponentials
    (|s| near 1e30: exp(max delta) is inf) take the range bound."""
    with np.errstate(over="ignore", invalid="ignore"):
        return _soft_max_budget(s, delta, sinks, y_exact)


def _soft_max_budget(s, delta, sinks, y_exact) -> np.ndarray:
    """Budget [B, H, R, n] of ggml-webgpu's soft_max against references.ggml_softmax.soft_max_ext,
    from the exact logits s (-inf where masked), their errors delta (soft_max_logit_errors), the
    sinks [H] or None and the exact result.

    soft_max.wgsl is a two-pass softmax: M̂ = the max of the computed logits ŝ_j (and the sink;
    without one, of -1e30), exactly (max does not round); then w_j = exp(ŝ_j - M̂), Σ̂ = their sum
    in any order (each lane's, then the tree) plus exp(sink - M̂), and y_j = w_j · (1.0 / Σ̂).
    Shifting every logit by M̂ leaves the softmax unchanged, so only relative errors matter. Per
    term, with X_j = |s_j - max| + 2 max_k delta_k bounding the argument |ŝ_j - M̂|:
    - the logit error moves w_j by a factor exp(±delta_j), at most expm1(delta_j) relative (the
      sink is read exactly, delta 0);
    - the subtraction rounds, moving the argument by r X_j: expm1(r X_j) relative; exp adds
      exp_rel(X_j), WGSL's (3 + 2|x|) ULP at its own argument: together A_j = (1 +
      expm1(delta_j))(1 + expm1(r X_j))(1 + exp_rel(X_j)) - 1;
    - a w_j below f32's smallest normal may be flushed, or holds exp's ULP bound in subnormal units
      ((3 + 2X_j) 2^-149): phi_j = FTZ (1 + 2u (3 + 2X_j)) absolute.
    Σ' = Σ_k exp(s_k - M̂) >= exp(-max delta) (the largest logit's own term; M̂ <= max s + max
    delta), so Σ̂ = Σ' (1 + θ)(1 + e) with |θ| <= gamma_{T-1}(r) over the T terms (n unmasked
    columns and the sink) and |e| <= E = Σ_k p_k A_k + T phi exp(max delta) (p_k the exact weights,
    the sink's included). Then y_j = p_j (1 + a_j)(1 + d)(1 + r') / ((1 + θ)(1 + e)) with the
    division's 2.5 ULP (d) and the product's rounding (r'), so
        |ŷ_j - p_j| <= p_j ((1 + A_j)(1 + d)(1 + r) / ((1 - E)(1 - gamma)) - 1)
                       + phi_j exp(max delta) (1 + d)(1 + r) / ((1 - E)(1 - gamma)) + FTZ
    (the last: the product's flush). Where E >= 1 the bound is ŷ_j's range instead: Σ̂ >= w_j
    (1 - gamma) gives ŷ_j <= (1 + d)(1 + r) / (1 - gamma), so |ŷ_j - p_j| <= that + p_j. A masked
    column is exactly 0 (exp(-inf) times anything finite): budget 0; a row with no finite logit and
    no sink has none (its NaN is held exactly by the kernel's expected). Plus the float64
    reference's own error, (T + 10) u_64 p_j."""
    r = rounding_rel("f32")
    u = unit_roundoff("f32")
    tiny = smallest_normal("f32")
    s = np.asarray(s, np.float64)
    p = np.asarray(y_exact, np.float64)
    valid = np.isfinite(s)
    delta = np.where(valid, np.asarray(delta, np.float64), 0.0)
    d_max = delta.max(axis=-1, initial=0.0)[..., None]
    top = np.max(np.where(valid, s, -np.inf), axis=-1, initial=-np.inf)
    terms = valid.sum(-1).astype(np.float64)
    if sinks is not None:
        sink = np.broadcast_to(np.asarray(sinks, np.float64)[None, :, None], top.shape)
        top = np.maximum(top, sink)
        terms = terms + 1
    nonempty = np.isfinite(top)
    top_safe = np.where(nonempty, top, 0.0)[..., None]
    with np.errstate(invalid="ignore"):
        x_col = np.where(valid, np.abs(s - top_safe), 0.0) + 2 * d_max
    a_col = _compose(np.expm1(delta), np.expm1(r * x_col), exp_rel(x_col))
    p_safe = np.where(valid & nonempty[..., None], p, 0.0)
    spread = (p_safe * a_col).sum(-1)
    phi_col = tiny * (1 + 2 * u * (3 + 2 * x_col))
    phi_max = phi_col.max(axis=-1, initial=tiny)
    if sinks is not None:
        x_sink = np.abs(sink - top_safe[..., 0]) + d_max[..., 0]
        denominator = np.where(valid, np.exp(np.where(valid, s, 0.0) - top_safe), 0.0).sum(-1) + np.exp(sink - top_safe[
            ..., 0])
        p_sink = np.exp(sink - top_safe[..., 0]) / denominator
        spread = spread + p_sink * _compose(np.expm1(r * x_sink), exp_rel(x_sink))
        phi_max = np.maximum(phi_max, tiny * (1 + 2 * u * (3 + 2 * x_sink)))
    grow = np.exp(d_max[..., 0])
    e_total = spread + terms * phi_max * grow
    g = gamma(np.maximum(terms - 1, 1), r)
    finish = (1 + division_rel("f32")) * (1 + r)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where((e_total < 1) & (g < 1), finish / ((1 - e_total) * (1 - g)), np.inf)[..., None]
        bound = p_safe * ((1 + a_col) * scale - 1) + phi_col * grow[..., None] * scale + tiny
        cap = finish / (1 - np.minimum(g, 0.5))[..., None] + p_safe
    budget = np.where(np.isfinite(bound), np.minimum(bound, cap), cap)
    budget = budget + (terms[..., None] + 10) * unit_roundoff("f64") * p_safe
    return np.where(valid & nonempty[..., None], budget, 0.0)


def set_rows_budget(dst_type: str, expected, written) -> tuple[np.ndarray, np.ndarray]:
    """(budget, exact mask) of ggml-webgpu's set_rows (set_rows.wgsl) against references.ggml_rows:
    `dst[row] = DST_TYPE(src[...])`, element by element (or vec4 by vec4), and nothing else.

    - Rows no index names (`written` False), and rows an i64 index with a non-zero high word would
      name (the program flags them and returns before writing): the destination's own bits, bit for
      bit.
    - Rows written into an f32 destination: a load and a store, bit for bit.
    - Rows written into an f16 destination: `f16(x)` of an f32 within f16's range, which WGSL
      rounds to either neighbour (not necessarily ggml's CPU round-to-nearest-even), and a result
      below f16's smallest normal may be flushed: faithful_rounding_bound(x, "f16"). The float64
      reference holds the f32 source exactly.
    """
    expected = np.asarray(expected, np.float64)
    written = np.broadcast_to(np.asarray(written, bool), expected.shape)
    if dst_type == "f32":
        return np.zeros(expected.shape), np.ones(expected.shape, bool)
    if dst_type != "f16":
        raise ValueError(f"set_rows budget for {dst_type!r}: f32 or f16")
    return np.where(written, faithful_rounding_bound(expected, "f16"), 0.0), ~written
