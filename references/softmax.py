"""Online-softmax state, in the running form (m, d, o) and the stored form (o, lse), and its merges.

A softmax-weighted sum of values v_j under logits s_j is carried by attention kernels as

    m = max_j s_j,   d = sum_j base**(s_j - m),   o = sum_j base**(s_j - m) * v_j   (unnormalised)

and stored as (o / d, lse = m + log_base d). States over disjoint sets of logits merge exactly
(Milakov & Gimelshein 2018, "Online normalizer calculation for softmax"; the split-KV merge of
FlashAttention and TVM's `_merge_state_inplace`, docs/tvm.md §5). TVM-style kernels scale
logits by log2(e) and work in base 2 (docs/tvm.md §3), so base 2 is the default; base "e" is the textbook form.
A base-2 LSE is the natural LSE divided by ln 2.

The empty state (no logits, or all -inf) is m = lse = -inf, d = 0, o = 0: never a large negative
constant such as TVM's -5e4. It is the identity of every merge, bit for bit, and no NaN arises
from (-inf) - (-inf). +inf logits are not supported (base**(s - m) would be NaN) and raise.
Values must be finite: a zero weight times NaN is still NaN.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

_BASES = {2: (np.exp2, np.log2), "e": (np.exp, np.log)}


class SoftmaxState(NamedTuple):
    """Running state over a set of logits: m [...], d [...], o [..., D], all float64."""

    m: np.ndarray
    d: np.ndarray
    o: np.ndarray


def _exp_log(base):
    try:
        return _BASES[base]
    except (KeyError, TypeError):
        raise ValueError(f"base must be 2 or 'e', got {base!r}") from None


def _shift(m: np.ndarray) -> np.ndarray:
    """The max to subtract before exponentiating: m itself, or 0 where m = -inf (empty state).

    Subtracting 0 leaves every logit at -inf, whose power is exactly 0, instead of a NaN.
    """
    return np.where(np.isfinite(m), m, 0.0)


def _check_logits(name: str, x: np.ndarray) -> None:
    if np.isnan(x).any():
        raise ValueError(f"{name} contains NaN")
    if np.isposinf(x).any():
        raise ValueError(f"{name} contains +inf, which the softmax state cannot represent")


def logsumexp(x, axis: int = -1, base=2) -> np.ndarray:
    """log_base(sum base**x) along `axis`, in the given base; -inf for an empty axis or all -inf."""
    exp, log = _exp_log(base)
    x = np.asarray(x, np.float64)
    _check_logits("x", x)
    m = _shift(np.max(x, axis=axis, keepdims=True, initial=-np.inf))
    total = np.sum(exp(x - m), axis=axis)
    with np.errstate(divide="ignore"):
        return np.squeeze(m, axis=axis) + log(total)


def softmax_state(logits, values, base=2) -> SoftmaxState:
    """(m, d, o) of logits [..., n] and values [..., n, D], in the given base.

    Leading axes broadcast as in np.matmul. Empty or all -inf logits give (-inf, 0, 0). Values
    shared by every row of the last leading axis (shape [..., 1, n, D]: one key-value head for
    its query rows) are summed as one matrix product [rows, n] @ [n, D], the same sums.
    """
    exp, _ = _exp_log(base)
    s = np.asarray(logits, np.float64)
    v = np.asarray(values, np.float64)
    _check_logits("logits", s)
    if v.ndim < 2 or v.shape[-2] != s.shape[-1]:
        raise ValueError(
            f"values must have shape [..., n, D] with n = logits.shape[-1] = {s.shape[-1]}; "
            f"got values.shape={v.shape}"
        )
    m = np.max(s, axis=-1, initial=-np.inf)
    p = exp(s - _shift(m)[..., None])
    if v.ndim == s.ndim + 1 and v.shape[-3] == 1:
        o = np.matmul(p, v[..., 0, :, :])
    else:
        o = np.matmul(p[..., None, :], v)[..., 0, :]
    return SoftmaxState(m, p.sum(axis=-1), o)


def state_to_output(m, d, o, base=2) -> tuple[np.ndarray, np.ndarray]:
    """(o / d, lse = m + log_base d): the stored form, lse in the given base; (0, -inf) if empty."""
    _, log = _exp_log(base)
    m, d, o = (np.asarray(a, np.float64) for a in (m, d, o))
    empty = d == 0
    o_normalized = np.where(empty[..., None], 0.0, o / np.where(empty, 1.0, d)[..., None])
    with np.errstate(divide="ignore"):
        return o_normalized, m + log(d)


def output_to_state(o, lse) -> SoftmaxState:
    """The running state (m = lse, d = 1, o) of a stored output; (-inf, 0, 0) where lse = -inf.

    Valid in whichever base lse is in: base**(lse - m) = 1 for any base.
    """
    o = np.asarray(o, np.float64)
    lse = np.asarray(lse, np.float64)
    _check_logits("lse", lse)
    empty = np.isneginf(lse)
    return SoftmaxState(lse, np.where(empty, 0.0, 1.0), np.where(empty[..., None], 0.0, o))


def _select(a_empty, b_empty, from_a, from_b, merged, empty):
    """`merged`, except `from_a` where only b is empty, `from_b` where only a is, `empty` where both are.

    Selecting instead of recomputing keeps the non-empty input bit for bit (1*o + 0*0 would turn
    -0.0 into +0.0) and never reads the o of an empty input, which a kernel may leave unwritten.
    """
    return np.where(a_empty & b_empty, empty, np.where(b_empty, from_a, np.where(a_empty, from_b, merged)))


def merge_states(a, b, base=2) -> SoftmaxState:
    """The (m, d, o) state over the union of the logits of two (m, d, o) states, in their base.

    Merging with an empty state returns the other state bit for bit; merging two empties gives
    the empty state (-inf, 0, 0).
    """
    exp, _ = _exp_log(base)
    (ma, da, oa), (mb, db, ob) = ([np.asarray(x, np.float64) for x in st] for st in (a, b))
    m = np.maximum(ma, mb)
    wa, wb = exp(ma - _shift(m)), exp(mb - _shift(m))
    d = da * wa + db * wb
    o = oa * wa[..., None] + ob * wb[..., None]
    a_empty, b_empty = np.isneginf(ma), np.isneginf(mb)
    d = _select(a_empty, b_empty, da, db, d, 0.0)
    o = _select(a_empty[..., None], b_empty[..., None], oa, ob, o, 0.0)
    return SoftmaxState(m, d, o)


def merge_outputs(o_a, lse_a, o_b, lse_b, base=2) -> tuple[np.ndarray, np.ndarray]:
    """Merge two stored outputs: TVM's `_merge_state_inplace` formula (docs/tvm.md §5).

    M = max(lse_a, lse_b), w_x = base**(lse_x - M); o = (o_a w_a + o_b w_b) / (w_a + w_b),
    lse = M + log_base(w_a + w_b), in the base of the inputs. An empty input (lse = -inf) returns
    the other bit for bit, whatever the empty one's o holds; two empties give (0, -inf).
    """
    exp, log = _exp_log(base)
    o_a, lse_a, o_b, lse_b = (np.asarray(x, np.float64) for x in (o_a, lse_a, o_b, lse_b))
    _check_logits("lse_a", lse_a)
    _check_logits("lse_b", lse_b)
    big = np.maximum(lse_a, lse_b)
    wa, wb = exp(lse_a - _shift(big)), exp(lse_b - _shift(big))
    total = wa + wb
    safe_total = np.where(total == 0, 1.0, total)
    o = o_a * (wa / safe_total)[..., None] + o_b * (wb / safe_total)[..., None]
    with np.errstate(divide="ignore"):
        lse = big + log(total)
    a_empty, b_empty = np.isneginf(lse_a), np.isneginf(lse_b)
    o = _select(a_empty[..., None], b_empty[..., None], o_a, o_b, o, 0.0)
    return o, _select(a_empty, b_empty, lse_a, lse_b, lse, -np.inf)


def _normalize_axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for the {ndim}-d stack of states")
    return axis % ndim


def merge_many_outputs(o, lse, axis: int = 0, base=2) -> tuple[np.ndarray, np.ndarray]:
    """Merge N stored outputs stacked on `axis` of lse (o has one more trailing axis, D).

    Returns (o, lse) with that axis removed, lse in the base of the inputs. Empty inputs have weight
    exactly 0 and their o is never read; if all are empty the result is (0, -inf).
    """
    exp, log = _exp_log(base)
    o = np.asarray(o, np.float64)
    lse = np.asarray(lse, np.float64)
    _check_logits("lse", lse)
    if o.shape[:-1] != lse.shape:
        raise ValueError(f"o must have shape lse.shape + (D,); got o {o.shape}, lse {lse.shape}")
    axis = _normalize_axis(axis, lse.ndim)
    big = np.max(lse, axis=axis, keepdims=True, initial=-np.inf)
    w = exp(lse - _shift(big))
    total = np.sum(w, axis=axis)
    weighted = np.sum(np.where(np.isneginf(lse)[..., None], 0.0, o) * w[..., None], axis=axis)
    empty = (total == 0)[..., None]
    o_merged = np.where(empty, 0.0, weighted / np.where(empty, 1.0, total[..., None]))
    with np.errstate(divide="ignore"):
        return o_merged, np.squeeze(_shift(big), axis=axis) + log(total)


def merge_many_states(m, d, o, axis: int = 0, base=2) -> SoftmaxState:
    """Merge N (m, d, o) states stacked on `axis` of m and d (o has one more trailing axis, D).

    Returns the (m, d, o) state with that axis removed; empty states' d and o are never read.
    """
    exp, _ = _exp_log(base)
    m, d, o = (np.asarray(x, np.float64) for x in (m, d, o))
    _check_logits("m", m)
    if d.shape != m.shape or o.shape[:-1] != m.shape:
        raise ValueError(
            f"need d.shape == m.shape and o.shape == m.shape + (D,); got m {m.shape}, d {d.shape}, o {o.shape}"
        )
    axis = _normalize_axis(axis, m.ndim)
    big = np.max(m, axis=axis, keepdims=True, initial=-np.inf)
    w = exp(m - _shift(big))
    empty = np.isneginf(m)
    d_merged = np.sum(np.where(empty, 0.0, d) * w, axis=axis)
    o_merged = np.sum(np.where(empty[..., None], 0.0, o) * w[..., None], axis=axis)
    return SoftmaxState(np.squeeze(big, axis=axis), d_merged, o_merged)
