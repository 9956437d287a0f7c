"""Reference values and derived budgets as `Expected`, from plain arrays.

For tests of kernels that are not written against a verify contract: hand over the inputs the
kernel saw (as stored, e.g. float16), get the float64 reference and the a-priori budget of an
f32 implementation, and compare with verify.testing.assert_within_budget. The budgets are the
ones the built-in kernels are held to (verify.budgets.attention; the derivations are there).
"""

from __future__ import annotations

import math

import numpy as np

from verify.budgets.attention import decode_budget, merge_budget
from verify.budgets.expected import Expected
from verify.budgets.rope import rope_budget
from verify.budgets.roundoff import dtype_name
from verify.references.decode import DecodeResult
from verify.references.softmax import merge_outputs, softmax_state, state_to_output

LOG2E = 1.0 / math.log(2.0)


def _dtype(name_or_dtype) -> str:
    name = dtype_name(name_or_dtype)
    if name not in ("f16", "f32"):
        raise ValueError(f"dtype must be f16 or f32 (got {name_or_dtype!r})")
    return name


def decode_expected(q, k, v, lengths=None, *, dtype="f16", sm_scale: float | None = None) -> tuple[Expected, Expected]:
    """(output, lse) Expected of one-token decode attention over dense, unrotated K and V.

    q [B, Hq, D]; k, v [B, Hkv, L, D] (Hq a multiple of Hkv: grouped-query attention); lengths
    [B] rows attended per sequence (default: all L). sm_scale defaults to 1/sqrt(D). The output
    is o [B, Hq, D] stored in `dtype`; lse [B, Hq] is base 2 (log2 of the softmax denominator
    of sm_scale·q·k), f32. An empty context must give output 0 and lse -inf bit for bit. The
    budget is verify.budgets.attention.decode_budget's (any summation order, f32 arithmetic,
    WGSL's exp2/log2/division accuracy, flushed subnormals, the store to `dtype`).
    """
    q64, k64, v64 = (np.asarray(x, np.float64) for x in (q, k, v))
    if q64.ndim != 3 or k64.ndim != 4 or v64.shape != k64.shape:
        raise ValueError(f"expected q [B, Hq, D] and k, v [B, Hkv, L, D]; got q {q64.shape}, k {k64.shape}, "
                         f"v {v64.shape}")
    batch, qo_heads, head_dim = q64.shape
    kb, kv_heads, rows, kd = k64.shape
    if kb != batch or kd != head_dim or qo_heads % kv_heads:
        raise ValueError(f"q {q64.shape} and k {k64.shape} do not fit: same B and D, Hq a multiple of Hkv")
    length = np.full(batch, rows, np.int64) if lengths is None else np.asarray(lengths, np.int64)
    if length.shape != (batch,) or (length < 0).any() or (length > rows).any():
        raise ValueError(f"lengths must be [B] = [{batch}] integers in [0, {rows}]")
    sm_scale = 1.0 / math.sqrt(head_dim) if sm_scale is None else float(sm_scale)
    attended = np.arange(rows)[None, :] < length[:, None]  # [B, L]
    k64 = np.where(attended[:, None, :, None], k64, 0.0)
    v64 = np.where(attended[:, None, :, None], v64, 0.0)
    group = qo_heads // kv_heads
    qg = q64.reshape(batch, kv_heads, group, head_dim)
    logits = (qg @ k64.transpose(0, 1, 3, 2)).reshape(batch, qo_heads, rows) * (sm_scale * LOG2E)
    logits = np.where(attended[:, None, :], logits, -np.inf)
    state = softmax_state(logits, np.repeat(v64, group, axis=1), base=2)
    o, lse2 = state_to_output(state.m, state.d, state.o, base=2)
    result = DecodeResult(o=o, lse2=lse2, q=q64, k=k64, v=v64, length=length, logits2=logits)
    name = _dtype(dtype)
    o_budget, lse_budget = decode_budget(result, name, sm_scale=sm_scale)
    empty = length == 0
    return (Expected.around("output", o, o_budget, name, exact=np.broadcast_to(empty[:, None, None], o.shape)),
            Expected.around("lse", lse2, lse_budget, "f32", exact=np.broadcast_to(empty[:, None], lse2.shape)))


def merge_expected(v, s, v_other, s_other, *, dtype="f16") -> tuple[Expected, Expected]:
    """(v, s) Expected of merging two base-2 attention states (v [..., D] in `dtype`, s [...]
    f32 LSEs; -inf = an empty state), as merge_state computes it in f32. Two empty states must
    give v 0 and s -inf bit for bit. Budget: verify.budgets.attention.merge_budget."""
    name = _dtype(dtype)
    v, s, v_other, s_other = (np.asarray(x, np.float64) for x in (v, s, v_other, s_other))
    v_ref, s_ref = merge_outputs(v, s, v_other, s_other, base=2)
    v_budget, s_budget = merge_budget(v, s, v_other, s_other, v_ref, s_ref, name)
    empty = np.isinf(s) & np.isinf(s_other)
    return (Expected.around("v", v_ref, v_budget, name, exact=np.broadcast_to(empty[..., None], v.shape)),
            Expected.around("s", s_ref, s_budget, "f32", exact=empty))


def rope_expected(x, positions, *, rope_theta: float = 1e4, rope_scale: float = 1.0, dtype="f16",
                  name: str = "x", llama3=None, pairing: str = "neox") -> Expected:
    """Expected of rotary embedding of x [T, H, D] at positions [T], computed in f32 and stored in
    `dtype`: frequencies theta^(-2d/D) (scaled as Llama 3 does with `llama3`, a
    references.rope.Llama3Scaling), angle position·rope_scale·frequency, pairs d +- D/2 (NeoX) or
    (2i, 2i+1) (`pairing="gptj"`). Budget: verify.budgets.rope.rope_budget."""
    exact, budget = rope_budget(np.asarray(x, np.float64), np.asarray(positions), rope_theta, rope_scale, _dtype(dtype),
                                llama3=llama3, pairing=pairing)
    return Expected.around(name, exact, budget, _dtype(dtype))
