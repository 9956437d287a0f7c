"""The decode budget's terms for verify.kernels.attention.fastpath: decode_budget's formula
(verify.budgets.attention), with its logit error regrouped into matrix products and its sums over
rows taken per sequence, lifted just enough to be never below the plain evaluation
(verify.kernels.attention.fastpath's docstring has the argument). Internal to verify.fastpath.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from verify.budgets.attention import ACC, FTZ_ABS, LN2, _second_order
from verify.budgets.rope import partner_dims, rope_angle_rel, rope_error
from verify.budgets.roundoff import gamma, unit_roundoff
from verify.budgets.roundoff import ulp as plain_ulp
from verify.budgets.wgsl_accuracy import (
    division_rel,
    exp2_rel,
    log2_abs,
    rounding_rel,
    trig_abs,
)
from verify.fastpath import floats
from verify.references.rope import rope_frequencies

_U64 = unit_roundoff("f64")
_SQRT2 = math.sqrt(2.0)


def inflation(roundings: int) -> float:
    """A factor that lifts a float64 sum of non-negative terms, computed with at most `roundings`
    roundings on any term's path, above any other such evaluation of the same exact sum:
    ours >= exact (1 - u)^N, theirs <= exact (1 + u)^N, and fl(ours (1 + 2 gamma_N)) >= theirs."""
    return 1.0 + 2.0 * float(gamma(roundings, _U64))


@dataclass
class LogitError:
    """decode_budget's logit error delta_j, regrouped (verify.kernels.attention.fastpath's docstring)
    into products of fixed left-hand matrices with |k| and ulp(k):

        delta_j = c (P.|k_j| + |pos_j| R.|k_j| + W.ulp(k_j) + flushed)

    `by_magnitude` stacks P and R ([B, Hkv, 2G, D]; just P = (gamma_{D+3} + u)|q| without rotation),
    `by_ulp` is W ([B, Hkv, G, D]) and `flushed` 3 sqrt2 FTZ sum_d W_d ([B, Hkv, G])."""

    by_magnitude: np.ndarray
    by_ulp: np.ndarray | None
    flushed: np.ndarray | None

    @classmethod
    def of(cls, x, qg: np.ndarray) -> LogitError | None:
        head_dim = qg.shape[-1]
        r, u = rounding_rel(ACC), unit_roundoff(ACC)
        dot_rel = gamma(head_dim + 3, r) + u
        abs_q = np.abs(qg)
        if x.rotary_mode == 0:
            return cls(dot_rel * abs_q, None, None)
        q_positions = np.asarray(x.q_rope_position).astype(np.int64)
        angle_rel = rope_angle_rel(head_dim, x.rope_theta, x.llama3)
        freq = rope_frequencies(head_dim, x.rope_theta, x.llama3) * x.rope_scale
        partner = partner_dims(head_dim)
        slope = np.abs(freq) * angle_rel  # |angle| rel = |pos| slope
        if not np.array_equal(slope, slope[partner]):
            return None  # the regrouping needs pair-symmetric angle errors (NeoX frequencies are)
        q = qg.reshape(qg.shape[0], -1, head_dim)
        e_q = (_SQRT2 * rope_error(q, q_positions[:, None, None] * freq, angle_rel)
               + plain_ulp(q, x.qkv_dtype)).reshape(qg.shape)
        w = abs_q + e_q
        paired = w + w[..., partner]
        constant = trig_abs(ACC) + 2 * rounding_rel(ACC)
        by_magnitude = np.concatenate([dot_rel * abs_q + e_q + (_SQRT2 * constant) * paired,
                                       (_SQRT2 * slope) * paired], axis=2)
        return cls(by_magnitude, w, (3 * _SQRT2 * FTZ_ABS) * w.sum(axis=-1))

    def combine(self, x, longest: int, magnitude_terms, ulp_terms) -> np.ndarray:
        """delta [B, Hkv, G, Lmax] from the products with |k| and ulp(k), lifted by `inflation`."""
        c = x.sm_scale * math.log2(math.e)
        group = ulp_terms.shape[2] if ulp_terms is not None else magnitude_terms.shape[2]
        if self.by_ulp is None:
            delta = c * magnitude_terms
        else:
            assert self.flushed is not None  # LogitError.of sets flushed with by_ulp (rotary_mode 1)
            k_offset = np.asarray(x.k_rope_pos_offset).astype(np.int64)
            position = np.abs(k_offset[:, None] + np.arange(longest)).astype(np.float64)[:, None, None, :]
            delta = c * (magnitude_terms[:, :, :group] + position * magnitude_terms[:, :, group:] + ulp_terms
                         + self.flushed[..., None])
        return delta * inflation(2 * self.by_magnitude.shape[-1] + 64)


def o_difference_bound(a_d: np.ndarray, longest: int) -> np.ndarray:
    """e >= |o - o_plain|: both are float64 sums over the same weights p_j (bit-identical) of
    p_j v_jd, in some order over at most Lmax terms, divided by the same d >= 1, so each is within
    gamma_{Lmax+1} sum_j p_j |v_jd| / d (+ one underflow per term) of the exact quotient, and
    sum_j p_j |v_jd| / d <= A_d (ours, inflated above the exact value)."""
    return 4.0 * float(gamma(longest + 2, _U64)) * a_d + longest * 2.0**-1072


def rounding_term(o: np.ndarray, a_d: np.ndarray, longest: int, dtype: str) -> np.ndarray:
    """faithful_rounding_bound at its largest over |o| +- e: the bound is constant below the
    smallest normal and non-decreasing above it, so its largest value on an interval is at one of
    the ends."""
    e = o_difference_bound(a_d, longest)
    magnitude = np.abs(o)
    return np.maximum(floats.faithful_rounding_bound(np.maximum(magnitude - e, 0.0), dtype),
                      floats.faithful_rounding_bound(magnitude + e, dtype))


@dataclass
class Budget:
    """decode_budget from delta on: the plain formula line for line (verify.budgets.attention),
    with its two products over rows (spread, A_d) done per sequence on attended rows (`weighted`
    stacks their left-hand sides, p pi and p, [B, Hkv, 2G, Lmax])."""

    n: np.ndarray
    nonempty: np.ndarray
    d: np.ndarray
    mean_kappa: np.ndarray
    mean_delta: np.ndarray
    eps_chain: np.ndarray
    gamma_n: np.ndarray
    weighted: np.ndarray

    @classmethod
    def of(cls, length: np.ndarray, logits: np.ndarray, delta4: np.ndarray, d: np.ndarray) -> Budget:
        """weight_errors's terms (verify.budgets.attention) on each sequence's attended rows only,
        where the plain code works on every sequence padded to the longest: `d` [B, Hkv, G] is the
        softmax's sum of weights over the padded row (the fast path's, which is weight_errors's
        own sum of the same padded weights, bit for bit), so p = w / d, kappa, the logit range,
        eps_chain, gamma_n, pi's elementwise terms and d are the plain values. The two sums over
        rows, mean_kappa and mean_delta (non-negative terms), are taken over the attended rows in
        another order and lifted by `inflation`; everything that reads them (pi, eps_d, the lse
        budget) is non-decreasing in them, so the budget stays >= the plain one."""
        r = rounding_rel(ACC)
        u = unit_roundoff(ACC)
        batch, qo_heads, longest = logits.shape
        kv_heads, group = delta4.shape[1], delta4.shape[2]
        n = length.astype(np.float64)[:, None]
        d = d.reshape(batch, qo_heads)
        nonempty = np.zeros((batch, qo_heads), bool)
        d_budget = np.ones((batch, qo_heads))
        mean_kappa, mean_delta, logit_range = (np.zeros((batch, qo_heads)) for _ in range(3))
        weighted = np.zeros((batch, kv_heads, 2 * group, longest))
        live = [b for b in range(batch) if length[b] > 0]
        rows_of = [(b, int(length[b])) for b in live]
        pi_of = []
        for b, rows in rows_of:
            own = logits[b, :, :rows]
            valid = np.isfinite(own)
            m = np.max(np.where(valid, own, -np.inf), axis=-1, initial=-np.inf)
            nonempty[b] = np.isfinite(m)
            x = np.where(valid, own - np.where(nonempty[b], m, 0.0)[:, None], 0.0)
            w = np.where(valid, np.exp2(x), 0.0)
            d_budget[b] = np.where(nonempty[b], d[b], 1.0)
            p = w / d_budget[b][:, None]
            kappa = np.where(valid, exp2_rel(x) + LN2 * r * np.abs(x), 0.0)
            logit_range[b] = np.where(nonempty[b], m - np.min(np.where(valid, own, np.inf), axis=-1, initial=np.inf),
                                      0.0)
            delta = np.where(valid, delta4[b].reshape(qo_heads, -1)[:, :rows], 0.0)
            lift = inflation(2 * longest + 8)
            mean_kappa[b] = (p * kappa).sum(-1) * lift
            mean_delta[b] = (p * delta).sum(-1) * lift
            pi_of.append((p, kappa, delta))
        events = 2.0 * n
        eps_chain = 2 * u * (3 * events + 2 * logit_range) + events * r + LN2 * r * logit_range
        gamma_n = gamma(n, r)
        for (b, rows), (p, kappa, delta) in zip(rows_of, pi_of):
            pi = kappa + mean_kappa[b][:, None] + LN2 * (delta + mean_delta[b][:, None]) + \
                (2 * eps_chain[b] + gamma_n[b])[:, None]
            pi = _second_order(pi + (gamma_n[b] + r)[:, None])
            weighted[b, :, :group, :rows] = (p * pi).reshape(kv_heads, group, rows)
            weighted[b, :, group:, :rows] = p.reshape(kv_heads, group, rows)
        return cls(n, nonempty, d_budget, mean_kappa, mean_delta, eps_chain, gamma_n, weighted)

    def finish(self, qkv_dtype: str, sums: np.ndarray, o: np.ndarray, lse2: np.ndarray):
        """The budgets from the sums over rows ([B, Hkv, 2G, D]: spread, then A_d) and o, lse2."""
        r = rounding_rel(ACC)
        group = sums.shape[2] // 2
        longest = self.weighted.shape[-1]
        sums = sums * inflation(2 * longest + 8)
        spread = sums[:, :, :group].reshape(o.shape)
        a_d = sums[:, :, group:].reshape(o.shape)
        o_budget = spread + division_rel(ACC) * a_d + (2 * self.n[..., None] + 4) * FTZ_ABS + \
            rounding_term(o, a_d, longest, qkv_dtype)
        eps_d = self.mean_kappa + self.eps_chain + self.gamma_n
        eps_d = eps_d * (1.0 + eps_d)
        lse_budget = self.mean_delta + (-np.log2(1.0 - np.minimum(eps_d, 0.5))) + log2_abs(self.d) + \
            r * np.abs(np.where(self.nonempty, lse2, 0.0))
        return np.where(self.nonempty[..., None], o_budget, 0.0), np.where(self.nonempty, lse_budget, 0.0)
