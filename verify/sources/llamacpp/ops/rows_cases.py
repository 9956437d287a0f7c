"""Cases of ggml-webgpu's GET_ROWS and SET_ROWS: row tables, row indices, and how the tables sit in
their buffers.

A table is [B, R, n] (B batches along ggml's dim 2, R rows of n values; for a block type n values
are n / QK blocks). It is laid in its binding as ggml hands a view to the program: `offset`
elements (blocks) before it and rows `pad` elements (blocks) longer than n, so the program's
offset and stride arithmetic is exercised, not only a packed table; for an f32 source the
vec4 path needs both multiples of 4 (selection.get_rows_vec4_aligned), the scalar path takes the
rest. Indices [B, N] are drawn shuffled (a permutation's prefix), with repeats, all one row, or
the table's first and last rows (get_rows; set_rows takes each destination row at most once per
batch, references.ggml_rows). Values: verify's value kinds, f16's subnormals, and for block
types random bytes whose f16 fields are finite (normal, some subnormal, some zero).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.cases import Case
from verify.cases.values import VALUE_KINDS, make_values
from verify.profiles import FamilySizes
from verify.references import ggml_quants as gq


@dataclass(frozen=True)
class RowsSizes:
    """Largest batches, table rows, index count, row length (float types) and blocks a row."""

    max_batches: int
    max_rows: int
    max_indices: int
    max_n: int
    max_blocks: int


SIZES = FamilySizes("llamacpp.rows", quick=RowsSizes(2, 8, 8, 300, 3), ci=RowsSizes(2, 24, 24, 1100, 6),
                    nightly=RowsSizes(3, 64, 64, 4200, 16))
INDEX_KINDS = ("shuffled", "repeated", "one_row", "ends")
FLOAT_KINDS = VALUE_KINDS + ("subnormal",)
BLOCK_KINDS = ("random", "subnormal_scales", "zero_scales")
F16_FIELDS = {"q8_0": (0,), "q4_0": (0,), "q4_1": (0, 2), "q4_K": (0, 2), "q2_K": (80, 82)}


def float_values(rng: np.random.Generator, kind: str, shape, dtype: str) -> np.ndarray:
    """f32, f16 or i32 values of `kind`: verify's value kinds; `subnormal`, normal values with a
    quarter of them replaced by the type's subnormals; i32 draws the whole i32 range."""
    if dtype == "i32":
        return rng.integers(-2**31, 2**31, shape, dtype=np.int64).astype(np.int32)
    if kind == "subnormal":
        x = make_values(rng, "normal", shape, dtype)
        smallest = 2.0**-24 if dtype == "f16" else 2.0**-149
        tiny = (rng.integers(1, 1024, shape) * smallest * rng.choice([-1, 1], shape)).astype(x.dtype)
        return np.where(rng.random(shape) < 0.25, tiny, x)
    return make_values(rng, kind, shape, dtype)


def blocks_of(rng: np.random.Generator, kind: str, block_kind: str, shape) -> np.ndarray:
    """Random blocks [*shape, bytes] of `kind`, every code legal, the f16 fields set finite: N(0,1)
    times 2^-8..2^2 (`random`), a third of them subnormal (`subnormal_scales`) or zero
    (`zero_scales`)."""
    blocks = rng.integers(0, 256, tuple(shape) + (gq.block_bytes(kind),), dtype=np.uint8)
    for offset in F16_FIELDS[kind]:
        field = np.ldexp(rng.standard_normal(shape), rng.integers(-8, 3, shape))
        if block_kind == "subnormal_scales":
            field = np.where(rng.random(shape) < 1 / 3, rng.integers(1, 1024, shape) * 2.0**-24, field)
        elif block_kind == "zero_scales":
            field = np.where(rng.random(shape) < 1 / 3, 0.0, field)
        blocks[..., offset:offset + 2] = field.astype("<f2")[..., None].view(np.uint8)
    return blocks


def row_indices(rng: np.random.Generator, kind: str, batches: int, count: int, rows: int,
                unique: bool = False) -> np.ndarray:
    """Indices [batches, count] into `rows` rows (count <= rows when unique)."""
    out = np.empty((batches, count), np.int32)
    for b in range(batches):
        if unique:
            if count > rows:
                raise ValueError(f"{count} distinct indices into {rows} rows")
            out[b] = rng.permutation(rows)[:count]
        elif kind == "shuffled":  # a permutation, cycled where more indices than rows are drawn
            out[b] = np.resize(rng.permutation(rows), count)
        elif kind == "repeated":
            out[b] = rng.integers(0, rows, count)
        elif kind == "one_row":
            out[b] = rng.integers(0, rows)
        else:  # ends: the first and the last row of the table
            out[b] = rng.choice([0, rows - 1], count)
    return out


def table_layout(rng: np.random.Generator, vec4: bool) -> tuple[int, int]:
    """(offset, pad) of a table's view in its buffer: multiples of 4 for the vec4 path."""
    offset, pad = int(rng.integers(0, 6)), int(rng.integers(0, 6))
    return (4 * (offset // 2), 4 * (pad // 2)) if vec4 else (offset, pad)


def get_rows_case(src_type: str, vec4: bool, batches: int, rows: int, count: int, n: int, values: str,
                  indices: str, seed: int) -> Case:
    """A GET_ROWS case: `src` [B, R, n] (or blocks [B, R, n / QK, bytes]), `idx` [B, N]; n is
    rounded to the vec4 path's multiple of 4 and to whole blocks as the type needs; the scalar
    f32 path with n % 4 == 0 gets a layout that is not vec4-aligned."""
    rng = np.random.default_rng(seed)
    if src_type in F16_FIELDS:
        per_block = gq.block_values(src_type)
        n = max(1, n // per_block) * per_block
        src = blocks_of(rng, src_type, values if values in BLOCK_KINDS else "random",
                        (batches, rows, n // per_block))
    else:
        if vec4:
            n = max(4, n - n % 4)
        src = float_values(rng, values, (batches, rows, n), src_type)
    offset, pad = table_layout(rng, vec4)
    if src_type == "f32" and not vec4 and n % 4 == 0 and (offset % 4, pad % 4) == (0, 0):
        pad += 1  # ggml takes the vec4 path for an aligned view: this one is not
    idx = row_indices(rng, indices, batches, count, rows)
    return Case({"src": src, "idx": idx}, {"batches": batches, "rows": rows, "count": count, "n": n,
                                           "offset": offset, "pad": pad, "values": values, "indices": indices,
                                           "seed": seed})


def row_lengths(max_n: int, vec4: bool):
    corners = sorted({n for n in (1, 3, 4, 5, 255, 256, 257, 1023, 1024, 1025) if n <= max_n})
    return st.one_of(st.sampled_from(corners), st.integers(1, max_n))


@st.composite
def get_rows_cases(draw, profile, src_type: str, vec4: bool) -> Case:
    sizes = SIZES(profile)
    if src_type in F16_FIELDS:
        per_block = gq.block_values(src_type)
        cap = max(1, sizes.max_blocks if per_block == 32 else sizes.max_blocks // 2)
        n = draw(st.integers(1, cap)) * per_block
        values = draw(st.sampled_from(BLOCK_KINDS))
    else:
        n = draw(row_lengths(sizes.max_n, vec4))
        values = draw(st.sampled_from(FLOAT_KINDS if src_type != "i32" else ("normal",)))
    return get_rows_case(src_type, vec4, draw(st.integers(1, sizes.max_batches)), draw(st.integers(1, sizes.max_rows)),
                         draw(st.integers(1, sizes.max_indices)), n, values, draw(st.sampled_from(INDEX_KINDS)),
                         draw(st.integers(0, 2**32 - 1)))


#: Value kinds of SET_ROWS sources: verify's, without `large` for an f16 destination (f32 values past
#: f16's range have no f16 to round to: WGSL leaves the conversion's result unspecified there).
SET_KINDS = {"f32": FLOAT_KINDS, "f16": tuple(k for k in FLOAT_KINDS if k != "large")}
#: Where a case's indices come from: rows of the destination, or (i64 only) some with a non-zero high
#: word (-1, 2^32 + r), which set_rows.wgsl flags in its error word and does not write.
SET_INDEX_KINDS = ("in_range", "high_word")


def set_rows_case(dst_type: str, vec4: bool, i64: bool, batches: int, rows: int, count: int, n: int, values: str,
                  indices: str, seed: int) -> Case:
    """A SET_ROWS case: `dst` [B, R, n] (what the destination holds before), `src` [B, N, n] f32, `idx`
    [B, N] distinct rows (i32, or i64 with `high_word` entries); n rounded to the vec4 path's multiple
    of 4 or away from it."""
    rng = np.random.default_rng(seed)
    if vec4:
        n = max(4, n - n % 4)
    elif n % 4 == 0:
        n += 1  # ggml takes the vec4 path for rows of a multiple of 4
    count = min(count, rows)
    dst = float_values(rng, "normal", (batches, rows, n), dst_type)
    src = float_values(rng, values, (batches, count, n), "f32")
    idx = row_indices(rng, "shuffled", batches, count, rows, unique=True).astype(np.int64 if i64 else np.int32)
    if i64 and indices == "high_word":
        wrong = rng.random(idx.shape) < 0.3
        wrong.flat[rng.integers(0, wrong.size)] = True
        idx = np.where(wrong, np.where(rng.random(idx.shape) < 0.5, -1, 2**32 + idx), idx)
    return Case({"dst": dst, "src": src, "idx": idx},
                {"batches": batches, "rows": rows, "count": count, "n": n, "values": values,
                 "indices": indices if i64 else "in_range", "seed": seed})


@st.composite
def set_rows_cases(draw, profile, dst_type: str, vec4: bool, i64: bool) -> Case:
    sizes = SIZES(profile)
    return set_rows_case(dst_type, vec4, i64, draw(st.integers(1, sizes.max_batches)),
                         draw(st.integers(1, sizes.max_rows)), draw(st.integers(1, sizes.max_indices)),
                         draw(row_lengths(sizes.max_n, vec4)), draw(st.sampled_from(SET_KINDS[dst_type])),
                         draw(st.sampled_from(SET_INDEX_KINDS if i64 else ("in_range",))),
                         draw(st.integers(0, 2**32 - 1)))
