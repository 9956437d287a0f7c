"""mpmath twin of references.ggml_rows for block-quantized sources: each chosen row decoded value
by value from its bytes (references.mp.ggml_quants, exact rationals), one index at a time."""

from __future__ import annotations

import numpy as np

from .ggml_quants import row_values


def get_rows_blocks(kind: str, blocks, idx) -> np.ndarray:
    """dst (object array of Fractions, [B, N, n]): row idx[b][i] of source batch b, decoded."""
    blocks = np.asarray(blocks, np.uint8)
    out = []
    for b, indices in enumerate(np.asarray(idx).tolist()):
        out.append([row_values(kind, [[int(v) for v in block] for block in blocks[b, r]]) for r in indices])
    return np.array(out, dtype=object)
