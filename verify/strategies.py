"""Hypothesis strategies for your own ``@given`` tests of WebGPU LLM kernels.

The building blocks verify's own checks draw from, with their adversarial corners built in:

- ``values(shape, dtype)``: tensors of a drawn value kind (normal, uniform, large, tiny,
  spiky), exactly representable in ``dtype``;
- ``context_lengths(page_size, max_context)``: attended lengths that favour 1, page and shard
  boundaries, odd tails and the empty context;
- ``paged_kv_caches(...)``: a paged KV cache with a shuffled page table, NaN-poisoned unused
  slots and spare pages, as TVM's runtime lays it out (``PagedKV``);
- ``lse_pairs(shape)``: two log-sum-exp states per row (close, far apart, large offsets, one or
  both empty = -inf);
- ``dp4a_activations(rows, k, dtype)``: activations whose 128-value blocks include ties at
  +-1/2 of a quantization step, all-zero blocks, outliers, subnormal and huge maxima;
- ``tile_tails(tile, max_size)``: sizes at and around multiples of a tile (tails of 1, tile-1);
- and whole cases as the built-in kernels take them: ``decode_cases``, ``merge_cases``,
  ``rope_cases``, ``quantize_cases``, ``matmul_cases``.

Tensors are drawn as a *kind* and a seed and built by numpy, so big arrays stay cheap to draw
and shrink toward the simplest kind and small seeds. Arguments are checked when the strategy is
built: a bad one raises ValueError saying what was expected.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from hypothesis import strategies as st

from verify.budgets.roundoff import numpy_dtype
from verify.cases.values import VALUE_KINDS, make_values, seeds
from verify.kernels.attention import cases as _attention
from verify.kernels.dp4a import matmul_cases as _matmul
from verify.kernels.dp4a import quantize_cases as _quantize
from verify.profiles import Profile, get_profile

__all__ = [
    "BLOCK_KINDS", "LSE_KINDS", "PagedKV", "VALUE_KINDS", "context_lengths", "decode_cases", "dp4a_activations",
    "lse_pairs", "matmul_cases", "merge_cases", "paged_kv_caches", "quantize_cases", "rope_cases", "tile_tails",
    "values",
]

LSE_KINDS = _attention.LSE_KINDS
BLOCK_KINDS = _quantize.BLOCK_KINDS
_DTYPES = ("f16", "f32", "float16", "float32")


def _check_dtype(dtype) -> np.dtype | type:
    try:
        chosen = numpy_dtype(dtype) if isinstance(dtype, str) else np.dtype(dtype)
    except (KeyError, TypeError, ValueError):
        chosen = None
    if chosen not in (np.dtype(np.float16), np.dtype(np.float32)):
        raise ValueError(f"dtype must be one of {', '.join(_DTYPES)} (got {dtype!r})")
    return chosen


def _check_kinds(kinds, known, what: str) -> tuple:
    kinds = tuple(kinds)
    unknown = [k for k in kinds if k not in known]
    if not kinds or unknown:
        raise ValueError(f"{what} must be a non-empty subset of {known} (got {kinds!r})")
    return kinds


def _check_positive(**named) -> None:
    for name, value in named.items():
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f"{name} must be a positive integer (got {value!r})")


# -- tensors ---------------------------------------------------------------------------------------
def values(shape, dtype="f32", kinds=VALUE_KINDS):
    """Arrays of `shape` in `dtype` whose values are one drawn kind (see VALUE_KINDS).

    The same arguments give the same strategy object: a case strategy that asks for values of
    its drawn shape (`st.flatmap`, `draw(values(...))`) would otherwise build, and Hypothesis
    validate, a new one for every example (the rmsnorm example's checks: 5.6-6.1 s -> 5.2 s)."""
    shape = tuple(int(s) for s in shape)
    return _values(shape, _check_dtype(dtype), _check_kinds(kinds, VALUE_KINDS, "kinds"))


@lru_cache(maxsize=1024)
def _values(shape: tuple, chosen: np.dtype, kinds: tuple):
    return st.tuples(st.sampled_from(kinds), seeds).map(
        lambda pair: make_values(np.random.default_rng(pair[1]), pair[0], shape, chosen))


def lse_pairs(shape, kinds=LSE_KINDS):
    """(lse, lse_other) f32 arrays of `shape`: two attention states per row whose LSEs are close,
    far apart (one dominates, up to 2^-200), both large (as after long contexts), or empty (-inf
    on one side or both)."""
    shape = tuple(int(s) for s in shape)
    kinds = _check_kinds(kinds, LSE_KINDS, "kinds")
    return st.tuples(st.sampled_from(kinds), seeds).map(
        lambda pair: _attention._lse_pair(np.random.default_rng(pair[1]), pair[0], shape))


def dp4a_activations(rows: int, k: int, dtype="f16", kinds=("mixed",) + BLOCK_KINDS):
    """Activations [rows, k] for DP4A block quantization (k a multiple of 128): each 128-value
    block is one of BLOCK_KINDS (ties at +-1/2 a step, zero blocks, outliers, tiny or huge
    maxima, a negative maximum), or "mixed": a kind drawn per block."""
    _check_positive(rows=rows, k=k)
    if k % 128:
        raise ValueError(f"k must be a multiple of 128, the DP4A activation block (got {k})")
    chosen = _check_dtype(dtype)
    name = "f16" if chosen == np.float16 else "f32"
    kinds = _check_kinds(kinds, ("mixed",) + BLOCK_KINDS, "kinds")
    mixes = tuple("plain" if kind == "values" else kind for kind in kinds)
    return st.tuples(st.sampled_from(mixes), st.sampled_from(VALUE_KINDS), seeds).map(
        lambda t: _quantize.make_activation(np.random.default_rng(t[2]), (rows, k), t[1], t[0], name))


# -- sizes -----------------------------------------------------------------------------------------
def context_lengths(page_size: int = 16, max_context: int = 520, *, allow_empty: bool = True):
    """Attended context lengths up to `max_context`: mostly 1, page boundaries (p-1, p, p+1,
    2p+-1), 128-row shard and tile boundaries and their neighbours, else anything; and 0 (an
    empty context) unless `allow_empty` is False."""
    _check_positive(page_size=page_size, max_context=max_context)
    limits = _attention.DecodeLimits(1, max_context, _attention.special_lengths(page_size, max_context))
    lengths = _attention.context_lengths(limits)
    return lengths.filter(lambda n: n > 0) if not allow_empty else lengths


def tile_tails(tile: int, max_size: int, *, min_size: int = 1):
    """Sizes in [min_size, max_size] that stress a tiled kernel's tails: multiples of `tile`
    and one either side (a tail of 1, of tile-1), 1, and anything else now and then."""
    _check_positive(tile=tile, max_size=max_size, min_size=min_size)
    if min_size > max_size:
        raise ValueError(f"min_size {min_size} exceeds max_size {max_size}")
    edges = sorted({n for m in range(tile, max_size + tile + 1, tile) for n in (m - 1, m, m + 1)} | {1, tile})
    edges = [n for n in edges if min_size <= n <= max_size]
    anything = st.integers(min_size, max_size)
    return st.one_of(st.sampled_from(edges), anything) if edges else anything


# -- paged KV caches -------------------------------------------------------------------------------
@dataclass(frozen=True)
class PagedKV:
    """A paged KV cache as TVM's runtime lays it out.

    pages [P, 2, kv_heads, page_size, head_dim] (dim 1: 0 = K, 1 = V; unused slots and spare
    pages NaN); page_indptr [B+1] and page_values [nnz] (a shuffled physical page per logical
    page); last_page_len [B]; lengths [B] attended rows; k_rows, v_rows [B, kv_heads, Lmax,
    head_dim] the logical rows before paging (the reference reads these)."""

    pages: np.ndarray
    page_indptr: np.ndarray
    page_values: np.ndarray
    last_page_len: np.ndarray
    lengths: np.ndarray
    k_rows: np.ndarray
    v_rows: np.ndarray
    page_size: int


def paged_kv_caches(head_dim: int, kv_heads: int = 1, dtype="f16", *, page_size: int = 16, max_batch: int = 4,
                    max_context: int = 520, spare_pages: int = 3):
    """PagedKV caches of 1..max_batch sequences with context_lengths(page_size, max_context),
    values of a drawn kind, pages shuffled, and up to `spare_pages` NaN pages in the pool."""
    _check_positive(head_dim=head_dim, kv_heads=kv_heads, page_size=page_size, max_batch=max_batch,
                    max_context=max_context)
    chosen = _check_dtype(dtype)

    @st.composite
    def build(draw):
        batch = draw(st.integers(1, max_batch))
        lengths = np.array(draw(st.lists(context_lengths(page_size, max_context), min_size=batch, max_size=batch)),
                           dtype=np.int64)
        kind = draw(st.sampled_from(VALUE_KINDS))
        spare = draw(st.integers(0, spare_pages))
        rng = np.random.default_rng(draw(seeds))
        shape = (batch, kv_heads, int(lengths.max(initial=0)), head_dim)
        k_rows, v_rows = make_values(rng, kind, shape, chosen), make_values(rng, kind, shape, chosen)
        pages, indptr, physical, last = _attention.build_paged_cache(rng, k_rows, v_rows, lengths, page_size,
                                                                    spare_pages=spare)
        return PagedKV(pages, indptr, physical, last, lengths, k_rows, v_rows, page_size)

    return build()


# -- whole cases of the built-in kernels -----------------------------------------------------------
def decode_cases(config: dict, profile: str | Profile = "ci"):
    """Cases of the decode contract (decode.tiled, decode.sharded, tvm.decode): q, pages, page
    table, length_info, rope offsets; `config` as `verify list` shows for those kernels (missing
    keys take their defaults; rope_scaling=llama3 draws positions up to 128k)."""
    from verify.kernels.attention.decode_tiled import DecodeTiled

    kernel = DecodeTiled()
    return kernel.cases(kernel.config(config), get_profile(profile))


def merge_cases(head_dim: int, dtype="f16", *, max_tokens: int = 16, heads: int | None = None, kinds=LSE_KINDS):
    """Cases of the merge_state contract: v, s, v_other, s_other."""
    _check_positive(head_dim=head_dim, max_tokens=max_tokens)
    name = "f16" if _check_dtype(dtype) == np.float16 else "f32"
    return _attention.merge_cases(head_dim, name, max_tokens, heads=heads,
                                  lse_kinds=_check_kinds(kinds, LSE_KINDS, "kinds"))


def rope_cases(config: dict, profile: str | Profile = "ci"):
    """Cases of the rope contract: q, k and a position per token (`config` as `verify list`
    shows for rope; rope_scaling=llama3 draws positions up to 128k and band-edge bases)."""
    from verify.kernels.attention.rope import Rope

    kernel = Rope()
    return kernel.cases(kernel.config(config), get_profile(profile))


def quantize_cases(dtype="f16", profile: str | Profile = "ci"):
    """Cases of the dp4a.quantize contract: activations with their block kinds."""
    name = "f16" if _check_dtype(dtype) == np.float16 else "f32"
    return _quantize.quantize_cases(name, get_profile(profile))


def matmul_cases(config: dict, profile: str | Profile = "ci"):
    """Cases of the dp4a.matmul contract: quantized A, packed N-bit B, scales, zero points, bias."""
    return _matmul.matmul_cases(config, get_profile(profile))

