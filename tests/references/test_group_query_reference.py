"""references.group_query: agreement with the literal mpmath twin (ORT's rotation, window and sink formulas)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_bounds import U64, assert_within, softmax_bounds

from verify.references.group_query import attend, rotate_with_tables, visible_keys
from verify.references.mp.group_query import attend_sequence
from verify.references.softmax import logsumexp
from verify.budgets.roundoff import gamma


@st.composite
def sequences(draw):
    """One sequence: 1-4 new tokens after 0-12 cached ones, N/Nkv heads, H in {4, 8}, optional
    rotary (either pairing), window, softcap and sink, flat to sharp queries."""
    kv_heads = draw(st.sampled_from([1, 2]))
    heads = kv_heads * draw(st.sampled_from([1, 2]))
    head_size = draw(st.sampled_from([4, 8]))
    new, past = draw(st.integers(1, 4)), draw(st.integers(0, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spread = draw(st.sampled_from([0.25, 1.0, 4.0]))
    options = {"scale": head_size ** -0.5, "local_window_size": draw(st.sampled_from([-1, 0, 1, 3, 6])),
               "softcap": draw(st.sampled_from([0.0, 2.0])), "interleaved": draw(st.booleans())}
    arrays = {"q": rng.standard_normal((new, heads, head_size)) * spread,
              "k_new": rng.standard_normal((new, kv_heads, head_size)),
              "v_new": rng.standard_normal((new, kv_heads, head_size)),
              "k_past": rng.standard_normal((kv_heads, past, head_size)),
              "v_past": rng.standard_normal((kv_heads, past, head_size))}
    if draw(st.booleans()):
        angles = np.arange(past + new)[:, None] * 1e4 ** (-np.arange(head_size // 2) / (head_size // 2))
        arrays["cos"], arrays["sin"] = np.cos(angles), np.sin(angles)
    if draw(st.booleans()):
        arrays["sink"] = rng.standard_normal(heads) * 2
    if draw(st.booleans()):  # an attention bias: N(0, 2²), or a mask of 0 and -1e4
        shape = (new, heads, past + new)
        arrays["bias"] = (rng.standard_normal(shape) * 2 if draw(st.booleans())
                          else np.where(rng.random(shape) < 0.3, -1e4, 0.0))
    return arrays, options


def _float64(arrays, options):
    """references.group_query composed as verify.sources.ort.attention.sessions does: (o, logits2,
    values with the sink's zero row, rotated q and keys, and their rotation error bounds)."""
    past, new = arrays["k_past"].shape[1], arrays["q"].shape[0]
    positions = (past + np.arange(new))[:, None]
    q, k_new = arrays["q"], arrays["k_new"]
    e_q, e_k = np.zeros(q.shape), np.zeros(k_new.shape)
    if "cos" in arrays:
        for x, e in ((q, e_q), (k_new, e_k)):
            c = arrays["cos"][np.broadcast_to(positions, x.shape[:-1])]
            s = arrays["sin"][np.broadcast_to(positions, x.shape[:-1])]
            if options["interleaved"]:
                c, s = np.repeat(c, 2, -1), np.repeat(s, 2, -1)
                partner = np.empty_like(x)
                partner[..., 0::2], partner[..., 1::2] = x[..., 1::2], x[..., 0::2]
            else:
                c, s = np.concatenate([c, c], -1), np.concatenate([s, s], -1)
                half = x.shape[-1] // 2
                partner = np.concatenate([x[..., half:], x[..., :half]], -1)
            e[...] = gamma(2, U64) * (np.abs(x * c) + np.abs(partner * s))
        q = rotate_with_tables(q, arrays["cos"], arrays["sin"], positions, options["interleaved"])
        k_new = rotate_with_tables(k_new, arrays["cos"], arrays["sin"], positions, options["interleaved"])
    keys = np.concatenate([arrays["k_past"], k_new.transpose(1, 0, 2)], axis=1)
    e_keys = np.concatenate([np.zeros(arrays["k_past"].shape), e_k.transpose(1, 0, 2)], axis=1)
    values = np.concatenate([arrays["v_past"], arrays["v_new"].transpose(1, 0, 2)], axis=1)
    visible = visible_keys(past + new, new, options["local_window_size"])
    o, logits2 = attend(q, keys, values, visible, scale=options["scale"], softcap=options["softcap"],
                        sink=arrays.get("sink"), bias=arrays.get("bias"))
    if "sink" in arrays:
        values = np.concatenate([values, np.zeros((values.shape[0], 1, values.shape[-1]))], axis=1)
    return o, logits2, values, q, e_q, keys, e_keys


@settings(max_examples=40, deadline=None)  # mpmath loops take longer than the default deadline
@given(sequence=sequences())
def test_attention_matches_the_literal_mpmath_twin(sequence):
    """Bound as decode's (tests/references/test_decode_reference.py::decode_bounds): a logit errs
    by E = scale (Σ e_q|k| + |q|e_k + e_q e_k + (γ_H + 3u) Σ|q k|) from the rotations (γ₂ of each
    product pair, from the stored tables), the dot product and the scalings; the softcap's
    division, tanh and product add 5u (|s| + c) (its derivative is at most 1); the bias's
    addition u (|s| + |b|); the sink's base-2 logit 2u|sink|. Moving every logit by E moves o by at most 2.01 E A_d; softmax_bounds adds the
    float64 softmax's own rounding."""
    arrays, options = sequence
    o, logits2, values, q, e_q, keys, e_keys = _float64(arrays, options)
    exact = attend_sequence(arrays["q"], arrays["k_new"], arrays["v_new"], arrays["k_past"], arrays["v_past"],
                            scale=options["scale"], cos=arrays.get("cos"), sin=arrays.get("sin"),
                            interleaved=options["interleaved"], local_window_size=options["local_window_size"],
                            softcap=options["softcap"], sink=arrays.get("sink"),
                            bias=arrays.get("bias")).astype(np.float64)
    new, heads, head_size = q.shape
    group = heads // keys.shape[0]
    k, e_k = np.repeat(keys, group, axis=0)[None], np.repeat(e_keys, group, axis=0)[None]  # [1, N, L, H]
    qq, eq = q[:, :, None, :], e_q[:, :, None, :]
    dot = ((gamma(head_size, U64) + 3 * U64) * np.sum(np.abs(qq * k), -1)
           + np.sum(eq * np.abs(k) + np.abs(qq) * e_k + eq * e_k, -1)) * options["scale"]
    if options["softcap"]:
        dot = dot + 5 * U64 * (options["scale"] * np.sum(np.abs(qq * k), -1) + options["softcap"])
    if "bias" in arrays:  # one more addition: u (|s| + |b|), |s| below scale Σ|q k| or the cap
        cap = options["softcap"] or np.inf
        dot = dot + U64 * (np.minimum(options["scale"] * np.sum(np.abs(qq * k), -1), cap) + np.abs(arrays["bias"]))
    valid = np.isfinite(logits2[..., :keys.shape[1]])
    logit_err = np.max(np.where(valid, dot, 0.0), axis=-1, initial=0.0)
    if "sink" in arrays:
        logit_err = np.maximum(logit_err, 2 * U64 * np.abs(arrays["sink"])[None, :])
    v = np.repeat(values, group, axis=0)[None]
    o_bound, _ = softmax_bounds(logits2, v, o, logsumexp(logits2, base=2), 2)
    top = np.max(logits2, axis=-1, initial=-np.inf, keepdims=True)
    p = np.exp2(logits2 - np.where(np.isfinite(top), top, 0.0))
    p /= np.where(p.sum(-1, keepdims=True) == 0, 1.0, p.sum(-1, keepdims=True))
    spread = np.matmul(p[..., None, :], np.abs(v))[..., 0, :]
    assert_within(o, exact, o_bound + 2.01 * logit_err[..., None] * spread, "o")
