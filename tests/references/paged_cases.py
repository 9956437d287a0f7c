"""Paged decode cases for the reference tests, built from explicit (non-paged) per-sequence K/V.

`lay_out` writes each sequence's logical rows into a shuffled set of physical pages the way TVM's
runtime stores them (sinks in slots [0, sink), the window from sliding_window_offset on), with
every unused slot and spare page poisoned with NaN. It is written as a plain loop over rows, on
purpose independent of references.paged_kv. `decode_cases` draws whole cases with Hypothesis.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st

from verify.references.rope import Llama3Scaling


@dataclass
class PagedCase:
    q: np.ndarray                    # [B, Hq, D] f16
    pages: np.ndarray                # [num_pages, 2, Hkv, page_size, D] f16, NaN where unused
    page_indptr: np.ndarray          # [B+1] int32
    page_values: np.ndarray          # [nnz] int32, shuffled
    length_info: np.ndarray          # [B] or [3, B] int32
    sliding_window: bool
    contexts: list                   # per sequence (k [Hkv, L, D], v [Hkv, L, D]) f16, logical order
    options: dict = field(default_factory=dict)  # decode_attention keyword arguments

    def arguments(self) -> tuple:
        return self.q, self.pages, self.page_indptr, self.page_values, self.length_info

    def keywords(self) -> dict:
        return dict(self.options, sliding_window=self.sliding_window)


def lay_out(contexts, sinks, offsets, page_size: int, spare_pages: int, rng: np.random.Generator,
            sliding_window: bool):
    """(pages, page_indptr, page_values, length_info) holding `contexts` in shuffled pages."""
    kv_heads, head_dim = contexts[0][0].shape[0], contexts[0][0].shape[2]
    slots = [offsets[b] + len_b - sinks[b] if sliding_window else len_b
             for b, len_b in enumerate(k.shape[1] for k, _ in contexts)]
    pages_per_seq = [-(-n // page_size) for n in slots]
    num_pages = sum(pages_per_seq) + spare_pages
    pages = np.full((num_pages, 2, kv_heads, page_size, head_dim), np.nan, np.float16)
    physical = rng.permutation(num_pages)[: sum(pages_per_seq)]
    indptr = np.concatenate([[0], np.cumsum(pages_per_seq)]).astype(np.int32)
    last = np.array([(n - 1) % page_size + 1 if n else 0 for n in slots], np.int32)
    for b, (k, v) in enumerate(contexts):
        for r in range(k.shape[1]):
            slot = r if not sliding_window or r < sinks[b] else r - sinks[b] + offsets[b]
            page = physical[indptr[b] + slot // page_size]
            pages[page, 0, :, slot % page_size] = k[:, r]
            pages[page, 1, :, slot % page_size] = v[:, r]
    length_info = np.stack([last, offsets, sinks]).astype(np.int32) if sliding_window else last
    return pages, indptr, physical.astype(np.int32), length_info


@st.composite
def decode_cases(draw, *, max_batch=3, max_len=20, head_dims=(2, 4, 8), sliding_window=None,
                 rotary_mode=None, rotary_dtype=st.just(None)):
    """A paged decode case: GQA ratio, page size, lengths (0, page boundaries, odd tails), spare
    pages, optional sliding window with sinks, rotary positions, and peaked or flat softmaxes.
    sliding_window and rotary_mode are drawn unless given; rotary_dtype is a strategy."""
    batch = draw(st.integers(1, max_batch))
    kv_heads = draw(st.sampled_from([1, 2]))
    group = draw(st.sampled_from([1, 2, 3]))
    head_dim = draw(st.sampled_from(head_dims))
    page_size = draw(st.sampled_from([1, 2, 4, 16]))
    sliding = draw(st.booleans()) if sliding_window is None else sliding_window
    lengths = draw(st.lists(st.integers(0, max_len), min_size=batch, max_size=batch))
    sinks = [draw(st.integers(0, min(n, 3))) if sliding else 0 for n in lengths]
    offsets = [s + draw(st.integers(0, page_size + 2)) if sliding else 0 for s in sinks]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    q_scale = draw(st.sampled_from([0.0, 0.25, 1.0, 4.0]))
    contexts = [
        tuple(rng.standard_normal((kv_heads, n, head_dim)).astype(np.float16) for _ in range(2))
        for n in lengths
    ]
    pages, indptr, values, length_info = lay_out(
        contexts, sinks, offsets, page_size, draw(st.integers(0, 3)), rng, sliding)
    options = dict(sm_scale=draw(st.sampled_from([head_dim**-0.5, 1.0])))
    if (draw(st.booleans()) if rotary_mode is None else rotary_mode):
        options.update(
            rotary_mode=1,
            rope_theta=draw(st.sampled_from([1e4, 5e5])),
            rope_scale=draw(st.sampled_from([1.0, 0.25])),
            llama3=draw(st.sampled_from([None, Llama3Scaling(8.0, 1.0, 4.0, 64)])),
            k_rope_pos_offset=np.array(draw(st.lists(st.integers(0, 50), min_size=batch, max_size=batch))),
            q_rope_position=np.array(draw(st.lists(st.integers(0, 100), min_size=batch, max_size=batch))),
            rotary_dtype=draw(rotary_dtype),
        )
    q = (q_scale * rng.standard_normal((batch, kv_heads * group, head_dim))).astype(np.float16)
    return PagedCase(q, pages, indptr, values, length_info, sliding, contexts, options)
