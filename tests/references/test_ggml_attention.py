"""references.ggml_attention: agreement with the literal mpmath twin (ggml's CPU flash attention)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from reference_bounds import U64, assert_within, softmax_bounds

from verify.budgets.roundoff import gamma
from verify.references.ggml_attention import alibi_slopes, flash_attn_ext
from verify.references.mp import ggml_attention as mp
from verify.references.softmax import logsumexp


@st.composite
def problems(draw):
    """1-2 batches of 1-3 query rows, N/Nkv heads (GQA up to 3), head dims 4 or 8 (Dv may differ),
    1-12 keys, an f16 mask of 0, -inf and finite values (or none), ALiBi, softcap and sinks."""
    kv_heads = draw(st.sampled_from([1, 2]))
    heads = kv_heads * draw(st.sampled_from([1, 3]))
    dk, dv = draw(st.sampled_from([4, 8])), draw(st.sampled_from([4, 8]))
    batch, rows, length = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    spread = draw(st.sampled_from([0.25, 1.0, 4.0]))
    arrays = {"q": rng.standard_normal((batch, rows, heads, dk)) * spread,
              "k": rng.standard_normal((batch, kv_heads, length, dk)).astype(np.float16).astype(np.float64),
              "v": rng.standard_normal((batch, kv_heads, length, dv)).astype(np.float16).astype(np.float64)}
    mask = draw(st.sampled_from(["none", "causal", "values"]))
    if mask != "none":
        m = np.zeros((draw(st.sampled_from([1, batch])), rows, length))
        if mask == "values":
            m = rng.uniform(-2, 2, m.shape)
        m[rng.random(m.shape) < 0.3] = -np.inf
        arrays["mask"] = m.astype(np.float16)
    options = {"scale": dk ** -0.5, "softcap": draw(st.sampled_from([0.0, 2.0]))}
    if mask != "none" and draw(st.booleans()):  # ALiBi with max_bias 8: m0, m1 as f32, as the host passes them
        n_head_log2 = 2.0 ** np.floor(np.log2(heads))
        options["alibi"] = (float(np.float32(2.0 ** (-8.0 / n_head_log2))),
                            float(np.float32(2.0 ** (-4.0 / n_head_log2))), n_head_log2)
    if draw(st.booleans()):
        arrays["sinks"] = rng.standard_normal(heads) * 2
    return arrays, options


@settings(max_examples=40, deadline=None)  # mpmath loops take longer than the default deadline
@given(problem=problems())
def test_flash_attn_ext_matches_the_literal_mpmath_twin(problem):
    """Bound as references.group_query's: a logit errs by E = scale (γ_Dk + 3u) Σ|q k| from the dot
    product and the scaling; the softcap's division, tanh and product add 5u (|s| + c); the mask's
    slope (float64 power: 2u) and product add 3u |slope·mask|, its addition u (|s| + |slope·mask|);
    the sink's base-2 logit 2u|sink|. Moving every logit by E moves o by at most 2.01 E A_d;
    softmax_bounds adds the float64 softmax's own rounding."""
    arrays, options = problem
    alibi = options.get("alibi")
    slopes = alibi_slopes(arrays["q"].shape[2], *alibi) if alibi else None
    o, logits2 = flash_attn_ext(arrays["q"], arrays["k"], arrays["v"], arrays.get("mask"), scale=options["scale"],
                                softcap=options["softcap"], slopes=slopes, sinks=arrays.get("sinks"))
    exact = mp.flash_attn_ext(arrays["q"], arrays["k"], arrays["v"], arrays.get("mask"), scale=options["scale"],
                              softcap=options["softcap"], alibi=alibi, sinks=arrays.get("sinks")).astype(np.float64)
    q, k, v = arrays["q"], arrays["k"], arrays["v"]
    batch, rows, heads, dk = q.shape
    group = heads // k.shape[1]
    kk = np.repeat(k, group, axis=1)[:, None]  # [B, 1, N, L, Dk]
    abs_dot = np.sum(np.abs(q[:, :, :, None, :] * kk), -1)  # [B, S, N, L]
    err = (gamma(dk, U64) + 3 * U64) * options["scale"] * abs_dot
    s = np.minimum(options["scale"] * abs_dot, options["softcap"] or np.inf)
    if options["softcap"]:
        err = err + 5 * U64 * (s + options["softcap"])
    if "mask" in arrays:
        m = np.asarray(arrays["mask"], np.float64)
        m = np.broadcast_to(m, (batch,) + m.shape[1:])[:, :, None, :]
        bias = np.abs(np.where(np.isfinite(m), m, 0.0) * (1.0 if slopes is None else slopes[None, None, :, None]))
        err = err + 3 * U64 * bias + U64 * (s + bias)
    length = k.shape[2]
    valid = np.isfinite(logits2[..., :length])
    logit_err = np.max(np.where(valid, err, 0.0), axis=-1, initial=0.0)
    values = np.repeat(v, group, axis=1)[:, None]  # [B, 1, N, L, Dv]
    if "sinks" in arrays:
        logit_err = np.maximum(logit_err, 2 * U64 * np.abs(arrays["sinks"]))
        values = np.concatenate([values, np.zeros(values.shape[:3] + (1, values.shape[-1]))], axis=3)
    o_bound, _ = softmax_bounds(logits2, values, o, logsumexp(logits2, base=2), 2)
    top = np.max(logits2, axis=-1, initial=-np.inf, keepdims=True)
    p = np.exp2(logits2 - np.where(np.isfinite(top), top, 0.0))
    p /= np.where(p.sum(-1, keepdims=True) == 0, 1.0, p.sum(-1, keepdims=True))
    spread = np.matmul(p[..., None, :], np.abs(values))[..., 0, :]
    assert_within(o, exact, o_bound + 2.01 * logit_err[..., None] * spread, "o")


def test_alibi_slopes_follow_ggmls_two_geometric_series():
    """N = 6: n_head_log2 = 4, heads 0-3 take m0^1..m0^4, heads 4-5 take m1^1 and m1^3."""
    slopes = alibi_slopes(6, 0.5, 0.25, 4.0)
    assert slopes.tolist() == [0.5, 0.25, 0.125, 0.0625, 0.25, 0.25**3]


def test_a_row_that_sees_no_key_attends_to_zero_and_a_sink_alone_too():
    q = np.ones((1, 1, 2, 4))
    k = v = np.ones((1, 1, 3, 4))
    mask = np.full((1, 1, 3), -np.inf)
    for sinks in (None, np.array([0.5, -1.0])):
        o, _ = flash_attn_ext(q, k, v, mask, scale=0.5, sinks=sinks)
        assert not o.any()
