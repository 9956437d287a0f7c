"""Error budget of rotary embedding (RoPE) computed in f32: frequency, Llama 3 scaling, angle, rotation.

Conventions as in verify.budgets.attention: worst-case bounds, "r" the relative error of one
f32 operation rounded to either neighbour (2u), built-ins at the WGSL spec's accuracy
(verify.budgets.wgsl_accuracy), second-order products of relative errors covered by
inflating a total T to T(1+T).
"""

from __future__ import annotations

import math

import numpy as np

from verify.budgets.roundoff import faithful_rounding_bound, smallest_normal
from verify.budgets.wgsl_accuracy import (
    division_rel,
    exp2_rel,
    literal_rel,
    log2_abs,
    rounding_rel,
    trig_abs,
)

LN2 = math.log(2.0)
ACC = "f32"
FTZ_ABS = smallest_normal(ACC)
#: Fewest significant decimal digits a rope kernel's f32 literals are printed with: TVM's WGSL
#: printer writes them as %e (e.g. 4.345991e+02f for 8192/(2 pi 3)); our own WGSL writes a
#: float64 repr, which is more. Llama 3's constants (alpha, beta, 1/factor, 2 pi, the edges) err
#: by at most literal_rel(LITERAL_DIGITS).
LITERAL_DIGITS = 7


def _second_order(total):
    return total * (1.0 + total)


def exponents(head_dim: int, pairing: str = "neox") -> np.ndarray:
    """e_d of f_d = theta^(-e_d): ((2d) mod D)/D (NeoX) or 2(d//2)/D (GPT-J), per dim."""
    d = np.arange(head_dim)
    return (2 * d % head_dim) / head_dim if pairing == "neox" else 2 * (d // 2) / head_dim


def frequency_rel(head_dim: int, rope_theta: float, pairing: str = "neox") -> np.ndarray:
    """Relative error of the unscaled frequency f_d = theta^(-e_d) computed in f32, per dim.

    The exponent e = k/D is an f32 division (division_rel, even where the quotient is exact:
    the spec allows 2.5 ULP). theta^(-e) is WGSL pow, i.e. exp2(-e*log2(theta)) (spec:
    inherited): log2(theta) errs by log2_abs, the product by r, so y = e*log2(theta) errs by
    |y|(division_rel + r) + e*log2_abs, which exp2 turns into ln2 times that, relative; exp2
    adds exp2_rel(y). A kernel may form f as 1/pow(theta, e) (TVM) or divide the position by
    pow(theta, e): one more division_rel.
    """
    e = exponents(head_dim, pairing)
    y = e * math.log2(rope_theta)
    y_error = np.abs(y) * (division_rel(ACC) + rounding_rel(ACC)) + e * log2_abs(rope_theta, ACC)
    return exp2_rel(y, ACC) + LN2 * y_error + division_rel(ACC)


def llama3_frequency_rel(freq, freq_rel, llama3) -> np.ndarray:
    """Relative error of Llama 3's scaled frequency f' computed in f32 from f, which errs by freq_rel.

    With alpha = original/(2 pi (high - low)) and beta = low/(high - low), the exact map is
    s_u = alpha f - beta, s = clamp(s_u, 0, 1), f' = f (1/F + s (1 - 1/F)) (F = factor). Kernels
    write it two ways: TVM's clamp form s = clamp(alpha f - beta), f' = fma(s, f, (1 - s) f (1/F)),
    and the models' wavelength form: w = 2 pi/f kept (s = 1) below original/high, divided
    (s = 0) above original/low, else s = (original/w - low)/(high - low), f' = (1 - s) f/F + s f.

    Every constant (alpha, beta, 2 pi, 1/F, the edges, high - low) errs by c = literal_rel(7).
    The computed s errs, before its clamp or branch, by
      ds = alpha f (freq_rel + 2c + 2 division_rel + r) + beta c + |s_u| (r + c + division_rel)
    (alpha f = s_u + beta; the clamp form's product and subtraction, or the wavelength form's two
    divisions, its subtraction and its division by high - low). The branch at a band edge: the
    wavelength form keeps f where w_computed < original/high, so the exact s_u exceeds
    1 - (1 + beta)(2c + freq_rel + division_rel) >= 1 - ds, and divides where w_computed >
    original/low, so s_u < beta (2c + freq_rel + division_rel) <= ds. As the map is continuous
    (s = 0 gives f/F, s = 1 gives f), taking either branch there moves s by at most ds: one
    bound covers both sides of an edge, and the reference needs no interval. Conversely, where
    the band test lets a frequency in, its s (from the same computed w, unclamped) lies within
    (1 + beta)(2c + division_rel) + beta c + r + c + division_rel <= ds of [0, 1]; the clamp form
    clamps, which only moves s toward the exact clamped value. Outside [-ds, 1 + ds] both forms
    take the clamp or branch the exact map takes (s' = s exactly).
    Then f' = f_c (1/F + s'(1 - 1/F))(1 + blend): relative to the exact f', the shift ds of s
    weighs R = |F - 1|/(1 + s(F - 1)) (at most F - 1 for F > 1, at s = 0: the low edge, where a
    small error of s is a large one of f/F), f's own error passes through, and the blend's
    products, its subtraction 1 - s, the division by F (or product by 1/F, a constant) and the
    sum add 4r + division_rel + c:
      rel(f') = freq_rel + R ds + 4r + division_rel + c      (s_u within ds of [0, 1]).
    Beyond ds above the band both forms return f itself (fma(1, f, 0) is exact): freq_rel; beyond
    ds below it, f/F or f (1/F) in one operation: freq_rel + division_rel + c.
    Through alpha f, f's error reaches f' amplified by 1 + R (s + beta), up to 1 + beta(F - 1)
    at the low edge (11.3 for Llama 3.2's F = 32).
    """
    freq = np.asarray(freq, np.float64)
    r, div, c = rounding_rel(ACC), division_rel(ACC), literal_rel(LITERAL_DIGITS, ACC)
    lo, hi, factor = llama3.low_freq_factor, llama3.high_freq_factor, llama3.factor
    alpha = llama3.original_max_position_embeddings / (2 * math.pi * (hi - lo))
    beta = lo / (hi - lo)
    s_u = alpha * freq - beta
    ds = alpha * freq * (freq_rel + 2 * c + 2 * div + r) + beta * c + np.abs(s_u) * (r + c + div)
    s = np.clip(s_u, 0.0, 1.0)
    weight = abs(factor - 1) / (1 + s * (factor - 1))
    band = weight * ds + 4 * r + div + c
    own = np.where(s_u > 1 + ds, 0.0, np.where(s_u < -ds, div + c, band))
    return _second_order(freq_rel + own)


def rope_angle_rel(head_dim: int, rope_theta: float, llama3=None, pairing: str = "neox") -> np.ndarray:
    """Relative error of the angle t_d = (pos*scale)*f'_d computed in f32, per dim: the
    frequency's (frequency_rel, then llama3_frequency_rel with Llama 3 scaling), plus the two
    products (pos*scale, then times f; or a product and the division by pow), 2r."""
    from verify.references.rope import rope_frequencies

    rel = frequency_rel(head_dim, rope_theta, pairing)
    if llama3 is not None:
        rel = llama3_frequency_rel(rope_frequencies(head_dim, rope_theta, pairing=pairing), rel, llama3)
    return rel + 2 * rounding_rel(ACC)


def partner_dims(head_dim: int, pairing: str = "neox") -> np.ndarray:
    """The dim each dim rotates with: d +- D/2 (NeoX) or d xor 1 (GPT-J)."""
    d = np.arange(head_dim)
    return (d + head_dim // 2) % head_dim if pairing == "neox" else d ^ 1


def rope_error(x, angles, angle_rel, pairing: str = "neox") -> np.ndarray:
    """Bound on |f32 rope(x)[d] - rope(x)[d]| (d paired as `pairing` says).

    out[d] = cos(t) x[d] -+ sin(t) x[pair]: cos and sin err by trig_abs plus the angle error
    |t|*angle_rel (both are 1-Lipschitz), and the two products and the sum add 2r relative and
    up to three flushed subnormals.
    """
    magnitude = _pair_magnitude(np.abs(np.asarray(x, dtype=np.float64)), pairing)
    return (trig_abs(ACC) + np.abs(angles) * angle_rel + 2 * rounding_rel(ACC)) * magnitude + 3 * FTZ_ABS


def _pair_magnitude(ax: np.ndarray, pairing: str = "neox") -> np.ndarray:
    """ax[d] + ax[pair(d)] for every d: one sum per pair, written to both of its dims (a gather of
    the partners costs four times the sum at prefill's sizes)."""
    half = ax.shape[-1] // 2
    out = np.empty_like(ax)
    if pairing == "neox":
        np.add(ax[..., :half], ax[..., half:], out=out[..., :half])
        out[..., half:] = out[..., :half]
    else:
        np.add(ax[..., 0::2], ax[..., 1::2], out=out[..., 0::2])
        out[..., 1::2] = out[..., 0::2]
    return out


def rope_budget(x, positions, rope_theta: float, rope_scale: float, out_dtype: str, *, llama3=None,
                pairing: str = "neox"):
    """Budget of a rope kernel writing rope(x) in `out_dtype`: (exact float64 rotation, budget).

    Every element out[d] = cos(t_d) x[d] -+ sin(t_d) x[pair(d)] (pair: d +- D/2 for NeoX, d xor 1
    for GPT-J) is computed in f32 and stored:
    - frequency f_d = theta^(-e_d): the exponent's f32 division, WGSL pow = exp2(e log2 theta) at
      the spec's accuracy (log2 3 ULP, exp2 3 + 2|y| ULP: relative error grows with e log2 theta),
      and a division where the kernel forms 1/pow;
    - Llama 3 scaling (llama3_frequency_rel): the interpolation weight s = alpha f - beta errs by
      ds (f's error, the constants printed to 7 digits, the divisions and roundings of either the
      clamp form or the wavelength form); near a band edge either branch is legal, and because the
      map is continuous both land within ds; a shift of s moves f' by up to (F - 1) ds relative at
      the low edge; f's own error is amplified up to 1 + beta (F - 1) there;
    - angle t = (pos scale) f': two more roundings; its absolute error |t| rel(t) grows with the
      position, which is why the cases reach 128k positions;
    - cos and sin err by 2^-11 (spec) plus the angle's error (1-Lipschitz); the two products and the
      sum 2r on |x_d| + |x_pair|; three flushed subnormals;
    - the store: one ulp of the output format (either neighbour), or a flush to zero.
    """
    from verify.references.rope import rope_frequencies, rotate_gptj, rotate_neox

    x = np.asarray(x, dtype=np.float64)
    head_dim = x.shape[-1]
    freq = rope_frequencies(head_dim, rope_theta, llama3, pairing)
    angles = np.asarray(positions, dtype=np.float64)[..., None] * rope_scale * freq
    rotate = rotate_neox if pairing == "neox" else rotate_gptj
    exact = rotate(x, positions, rope_theta=rope_theta, rope_scale=rope_scale, llama3=llama3)
    angle_rel = rope_angle_rel(head_dim, rope_theta, llama3, pairing)
    return exact, rope_error(x, angles, angle_rel, pairing) + faithful_rounding_bound(exact, out_dtype)
