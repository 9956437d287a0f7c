"""Cases of ggml-webgpu's SET_ROWS into block-quantized tables (set_rows_quant.wgsl).

A case is a destination table of q8_0 or q4_0 blocks [B, R, nb, bytes] (what it holds before:
random bytes with finite scales, rows_cases.blocks_of), f32 source rows [B, N, n] (n = 32 nb) and
distinct row indices [B, N] (i32, or i64 with some high words set, as set_rows's cases). The
table sits in its binding as a view: `offset` blocks before it and rows `pad` blocks longer than
nb, so blocks of 18 or 34 bytes start at either half of a word and share words with their
neighbours and with rows no index names. The program's pair path (PAIR_BLOCKS, an even nb) writes
two blocks (a whole number of words) per invocation; its offset and pad are even (see
`set_rows_quant_case`).

Source values: verify's normal, uniform and spiky kinds; `subnormal` (a quarter f32 subnormals);
`ties`, each block its max at a power of two times 127 (q8_0) or -8 (q4_0) and the rest halfway
between two codes, where ggml's roundf and WGSL's round() part ways; `zero_blocks`, a third of
the blocks all zero (d = 0, id = 0 by the program's select).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from verify.cases import Case
from verify.profiles import FamilySizes
from verify.sources.llamacpp.ops.rows_cases import RowsSizes, blocks_of, float_values, row_indices

SIZES = FamilySizes("llamacpp.rows_quant", quick=RowsSizes(2, 8, 8, 0, 5), ci=RowsSizes(2, 16, 16, 0, 17),
                    nightly=RowsSizes(3, 48, 48, 0, 64))
QUANT_KINDS = ("normal", "uniform", "spiky", "subnormal", "ties", "zero_blocks")
INDEX_KINDS = ("in_range", "high_word")


def source_values(rng: np.random.Generator, dst_type: str, kind: str, shape) -> np.ndarray:
    """f32 source rows [..., n] of `kind` (n a multiple of 32)."""
    if kind == "ties":
        blocks = shape[:-1] + (shape[-1] // 32, 32)
        scale = np.ldexp(1.0, rng.integers(-20, 12, blocks[:-1]))[..., None]
        top = 127 if dst_type == "q8_0" else 8
        halves = rng.integers(-top, top - 1, blocks) + 0.5  # |k + 1/2| < top: the peak stays first
        peak = np.where(rng.random(blocks[:-1]) < 0.5, -top, top)
        where = rng.integers(0, 32, blocks[:-1])
        np.put_along_axis(halves, where[..., None], peak[..., None], axis=-1)
        return (halves * scale).astype(np.float32).reshape(shape)
    if kind == "zero_blocks":
        x = float_values(rng, "normal", shape, "f32").reshape(shape[:-1] + (shape[-1] // 32, 32))
        x[rng.random(x.shape[:-1]) < 1 / 3] = 0
        return x.reshape(shape)
    return float_values(rng, kind, shape, "f32")


def set_rows_quant_case(dst_type: str, i64: bool, pair: bool, batches: int, rows: int, count: int, blocks: int,
                        values: str, indices: str, seed: int, offset: int | None = None,
                        pad: int | None = None) -> Case:
    """A case of `blocks` blocks a row (made even for the pair path, odd else: ggml chooses the
    program by it), the view's offset and pad drawn in [0, 5] blocks unless given (even for the
    pair path, whose two-block stores assume word-aligned pairs)."""
    rng = np.random.default_rng(seed)
    blocks = max(1, blocks)
    if pair != (blocks % 2 == 0):
        blocks += 1
    count = min(count, rows)
    offset = int(rng.integers(0, 6)) if offset is None else offset
    pad = int(rng.integers(0, 6)) if pad is None else pad
    if pair:
        offset, pad = offset - offset % 2, pad - pad % 2
    dst = blocks_of(rng, dst_type, "random", (batches, rows, blocks))
    src = source_values(rng, dst_type, values, (batches, count, 32 * blocks))
    idx = row_indices(rng, "shuffled", batches, count, rows, unique=True).astype(np.int64 if i64 else np.int32)
    if i64 and indices == "high_word":
        wrong = rng.random(idx.shape) < 0.3
        wrong.flat[rng.integers(0, wrong.size)] = True
        idx = np.where(wrong, np.where(rng.random(idx.shape) < 0.5, -1, 2**32 + idx), idx)
    return Case({"dst": dst, "src": src, "idx": idx},
                {"batches": batches, "rows": rows, "count": count, "blocks": blocks, "offset": offset, "pad": pad,
                 "values": values, "indices": indices if i64 else "in_range", "seed": seed})


@st.composite
def set_rows_quant_cases(draw, profile, dst_type: str, i64: bool, pair: bool) -> Case:
    sizes = SIZES(profile)
    return set_rows_quant_case(dst_type, i64, pair, draw(st.integers(1, sizes.max_batches)),
                               draw(st.integers(1, sizes.max_rows)), draw(st.integers(1, sizes.max_indices)),
                               draw(st.integers(1, sizes.max_blocks)), draw(st.sampled_from(QUANT_KINDS)),
                               draw(st.sampled_from(INDEX_KINDS if i64 else ("in_range",))),
                               draw(st.integers(0, 2**32 - 1)))
