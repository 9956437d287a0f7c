"""The llama.cpp attention budgets' sums as one matrix product per KV head (grouped_dots,
weighted_rows) are numpy's per-row forms: the same sums of the same products, to float64's
reassociation, for every way the values broadcast against the weights."""

from __future__ import annotations

import numpy as np
import pytest

from verify.budgets.llamacpp_attention import grouped_dots, weighted_rows

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("kv_heads,group", [(1, 1), (1, 6), (3, 2), (4, 3)])
def test_grouped_dots_are_the_query_heads_dot_products_with_their_kv_head(kv_heads, group):
    q = RNG.standard_normal((2, 5, kv_heads * group, 16))
    k = RNG.standard_normal((2, kv_heads, 9, 16))
    expected = np.einsum("bsnd,bnld->bsnl", q, np.repeat(k, group, axis=1))
    np.testing.assert_allclose(grouped_dots(q, k), expected, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("values_shape", [
    (2, 1, 6, 7, 4),        # one KV head's values for every query row (shared along rows)
    (2, 5, 6, 7, 4),        # nothing shared: numpy's own product
    (6, 7, 4),              # fewer leading axes
    (1, 1, 1, 7, 4),        # shared along every axis
    (2, 1, 3, 1, 7, 4),     # per KV head [B, 1, Nkv, 1, L, Dv] against [B, S, Nkv, G, L]
])
def test_weighted_rows_is_the_broadcast_product(values_shape):
    weights_shape = (2, 5, 3, 2, 7) if len(values_shape) == 6 else (2, 5, 6, 7)
    p = RNG.random(weights_shape)
    v = RNG.random(values_shape)
    expected = np.matmul(p[..., None, :], v)[..., 0, :]
    got = weighted_rows(p, v)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-13)
