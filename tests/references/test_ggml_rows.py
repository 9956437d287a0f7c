"""references.ggml_rows: plain gathers and scatters, and the block-type gather against its mpmath twin
(each chosen row decoded byte by byte as exact rationals)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.references.ggml_rows import get_rows, get_rows_blocks, set_rows
from verify.references.mp import ggml_rows as mp
from verify.sources.llamacpp.ops.rows_cases import BLOCK_KINDS, blocks_of


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(("q8_0", "q4_0", "q4_1", "q2_K", "q4_K")), st.sampled_from(BLOCK_KINDS),
       st.integers(1, 2), st.integers(0, 2**32 - 1))
def test_block_gather_matches_its_mpmath_twin_exactly(kind, block_kind, blocks_per_row, seed):
    """Dequantization is exact in float64 (an f16 times small integers plus an f16): the twin's
    rationals and the float64 values are equal, element by element."""
    rng = np.random.default_rng(seed)
    blocks = blocks_of(rng, kind, block_kind, (2, 3, blocks_per_row))
    idx = rng.integers(0, 3, (2, 4))
    got = get_rows_blocks(kind, blocks, idx)
    twin = mp.get_rows_blocks(kind, blocks, idx)
    assert got.shape == twin.shape
    assert all(Fraction(float(g)) == t for g, t in zip(got.reshape(-1), twin.reshape(-1)))


def test_get_rows_gathers_per_batch_and_set_rows_leaves_other_rows():
    src = np.arange(2 * 3 * 2, dtype=np.float64).reshape(2, 3, 2)
    assert get_rows(src, [[2, 2, 0], [1, 0, 0]]).tolist() == [[[4, 5], [4, 5], [0, 1]], [[8, 9], [6, 7], [6, 7]]]
    dst = -np.ones((2, 3, 2))
    out = set_rows(dst, [[[1, 2]], [[3, 4]]], [[2], [0]])
    assert out.tolist() == [[[-1, -1], [-1, -1], [1, 2]], [[3, 4], [-1, -1], [-1, -1]]]
    assert (dst == -1).all()  # a copy
    with pytest.raises(ValueError, match="repeated"):
        set_rows(dst, np.zeros((2, 2, 2)), [[1, 1], [0, 1]])
    with pytest.raises(ValueError, match="row indices"):
        get_rows(src, [[3]])
