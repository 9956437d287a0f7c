"""mpmath twins of references.softmax at 50 digits, written for clarity: one plain loop per sum.

Inputs are small numpy arrays of floats (each converted exactly) or of mpf. Results are numpy
object arrays of mpf (compare with `.astype(np.float64)`); -inf marks an empty state.
"""

from __future__ import annotations

import mpmath
import numpy as np

DPS = 50
NEG_INF = mpmath.mpf("-inf")


def to_mpf(x) -> mpmath.mpf:
    """x as an mpf, exactly (a float64 converts without rounding)."""
    return x if isinstance(x, mpmath.mpf) else mpmath.mpf(float(x))


def _power(base, x):
    return mpmath.exp(x) if base == "e" else mpmath.power(2, x)


def _log(base, x):
    return mpmath.log(x) if base == "e" else mpmath.log(x, 2)


def _check_base(base) -> None:
    if base not in (2, "e"):
        raise ValueError(f"base must be 2 or 'e', got {base!r}")


def _logsumexp_row(row, base):
    finite = [to_mpf(s) for s in row if to_mpf(s) != NEG_INF]
    if not finite:
        return NEG_INF
    top = max(finite)
    return top + _log(base, mpmath.fsum(_power(base, s - top) for s in finite))


def logsumexp(x, base=2) -> np.ndarray:
    """log_base(sum_j base**x_j) over the last axis."""
    _check_base(base)
    x = np.asarray(x, dtype=object)
    out = np.empty(x.shape[:-1], dtype=object)
    with mpmath.workdps(DPS):
        for index in np.ndindex(out.shape):
            out[index] = _logsumexp_row(x[index], base)
    return out


def softmax_state(logits, values, base=2) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(m, d, o) of logits [..., n] and values [..., n, D] (same leading shape): the running form."""
    _check_base(base)
    logits = np.asarray(logits, dtype=object)
    values = np.asarray(values, dtype=object)
    lead, width = logits.shape[:-1], values.shape[-1]
    m, d, o = np.empty(lead, object), np.empty(lead, object), np.empty(lead + (width,), object)
    with mpmath.workdps(DPS):
        for index in np.ndindex(lead):
            row = [to_mpf(s) for s in logits[index]]
            finite = [j for j, s in enumerate(row) if s != NEG_INF]
            m[index] = max((row[j] for j in finite), default=NEG_INF)
            weight = {j: _power(base, row[j] - m[index]) for j in finite}
            d[index] = mpmath.fsum(weight.values())
            for c in range(width):
                o[index + (c,)] = mpmath.fsum(weight[j] * to_mpf(values[index + (j, c)]) for j in finite)
    return m, d, o


def softmax_output(logits, values, base=2) -> tuple[np.ndarray, np.ndarray]:
    """(o / d, lse = m + log_base d): the stored form; (0, -inf) for an empty state."""
    m, d, o = softmax_state(logits, values, base)
    with mpmath.workdps(DPS):
        for index in np.ndindex(m.shape):
            if d[index] == 0:
                m[index] = NEG_INF
                continue
            for c in range(o.shape[-1]):
                o[index + (c,)] = o[index + (c,)] / d[index]
            m[index] = m[index] + _log(base, d[index])
    return o, m


def merge_outputs(o_a, lse_a, o_b, lse_b, base=2) -> tuple[np.ndarray, np.ndarray]:
    """Merge two stored outputs: the output and LSE over the union of their logits."""
    _check_base(base)
    o_a, o_b = np.asarray(o_a, object), np.asarray(o_b, object)
    lse_a, lse_b = np.asarray(lse_a, object), np.asarray(lse_b, object)
    o, lse = np.empty(o_a.shape, object), np.empty(lse_a.shape, object)
    with mpmath.workdps(DPS):
        for index in np.ndindex(lse.shape):
            parts = [(to_mpf(s), o_x[index]) for s, o_x in ((lse_a[index], o_a), (lse_b[index], o_b))]
            parts = [(s, o_x) for s, o_x in parts if s != NEG_INF]
            lse[index] = _logsumexp_row([s for s, _ in parts], base)
            for c in range(o.shape[-1]):
                o[index + (c,)] = mpmath.fsum(
                    _power(base, s - lse[index]) * to_mpf(o_x[c]) for s, o_x in parts
                ) if parts else mpmath.mpf(0)
    return o, lse
