"""ggml's GET_ROWS and SET_ROWS: gathering and scattering whole rows, in float64.

GET_ROWS (`ggml_compute_forward_get_rows`): for a source [B, R, n] and row indices idx [B, N],
dst[b, i] = src[b, idx[b, i]], the row dequantized to f32 when the source is a block type (as
references.ggml_quants decodes it, exactly) and widened when it is f16. An index must name a row
of the source (ggml's CPU asserts 0 <= idx < R).

SET_ROWS (`ggml_compute_forward_set_rows`): for a source [B, N, n], indices idx [B, N] and a
destination [B, R, n], dst[b, idx[b, i]] = convert(src[b, i]) and every other row of dst keeps
what it held. The conversion is the destination type's (f32: none; f16: rounding; a block type:
ggml's CPU quantizer, references.ggml_quants). Indices repeated within one batch leave the row
to whichever write comes last, which ggml's CPU takes in order; a GPU in any order, so the
references take each index once per batch.
"""

from __future__ import annotations

import numpy as np

from . import ggml_quants


def get_rows(src, idx) -> np.ndarray:
    """dst [B, N, n] = src[b, idx[b, i]] for src [B, R, n] and idx [B, N] (float64)."""
    src = np.asarray(src, np.float64)
    idx = np.asarray(idx, np.int64)
    if idx.min(initial=0) < 0 or idx.max(initial=0) >= src.shape[1]:
        raise ValueError(f"row indices must lie in [0, {src.shape[1]})")
    return np.stack([src[b][idx[b]] for b in range(src.shape[0])])


def get_rows_blocks(kind: str, blocks, idx) -> np.ndarray:
    """GET_ROWS of a block-quantized source [B, R, n / values, bytes]: the chosen rows dequantized
    (exactly), [B, N, n]."""
    return get_rows(ggml_quants.dequantize_row(kind, blocks), idx)


def set_rows(dst, src, idx) -> np.ndarray:
    """A copy of dst [B, R, n] with row idx[b, i] replaced by src[b, i] (src [B, N, n], already in
    dst's values: the conversion is the caller's). Each index at most once per batch."""
    out = np.array(dst, copy=True)
    idx = np.asarray(idx, np.int64)
    for b in range(idx.shape[0]):
        if len(set(idx[b].tolist())) != idx.shape[1]:
            raise ValueError("set_rows: an index repeated within a batch leaves the row to the last write")
        if idx[b].min(initial=0) < 0 or idx[b].max(initial=0) >= out.shape[1]:
            raise ValueError(f"row indices must lie in [0, {out.shape[1]})")
        out[b, idx[b]] = np.asarray(src)[b]
    return out
