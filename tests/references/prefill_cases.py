"""Prefill cases for the reference tests: paged, ragged and token-tree batches drawn with Hypothesis.

Each case keeps its explicit per-sequence context (K/V rows in logical order) next to the layout
the kernels read: shuffled NaN-poisoned pages (paged_cases.lay_out) or ragged rows. A test can
therefore rebuild the attention from the explicit context without going through the layout.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import strategies as st
from paged_cases import lay_out

from verify.references import prefill
from verify.references.mp import prefill as mp_prefill
from verify.references.rope import Llama3Scaling


@dataclass
class PrefillCase:
    kind: str                        # "paged", "ragged", "tree" (ragged tree) or "paged_tree"
    q: np.ndarray                    # [total_q, Hq, D] f16
    q_indptr: np.ndarray             # [B+1] int32
    contexts: list                   # per sequence (k [Hkv, L, D], v [Hkv, L, Dv]) f16, logical order
    layout: dict                     # pages/page_indptr/page_values/length_info, or k/v/kv_indptr
    options: dict = field(default_factory=dict)  # keyword arguments of the reference function

    @property
    def function(self):
        name = f"{self.kind}_attention" if "tree" in self.kind else f"{self.kind}_prefill_attention"
        return getattr(prefill, name)

    @property
    def mp_function(self):
        return getattr(mp_prefill, self.function.__name__)

    def arguments(self) -> tuple:
        if self.kind in ("paged", "paged_tree"):
            paged = (self.layout[name] for name in ("pages", "page_indptr", "page_values", "length_info"))
            base = (self.q, self.q_indptr, *paged)
        else:
            base = (self.q, self.q_indptr, self.layout["k"], self.layout["v"], self.layout["kv_indptr"])
        if "tree" in self.kind:
            base += (self.layout["token_tree_parent_ptr"], self.layout["tree_order_indptr"])
        return base

    def keywords(self) -> dict:
        return dict(self.options)

    def run(self, **changes):
        return self.function(*self.arguments(), **dict(self.options, **changes))

    def run_mp(self):
        o, lse2 = self.mp_function(*self.arguments(), **self.options)
        return o.astype(np.float64), lse2.astype(np.float64)


def ragged_layout(contexts) -> dict:
    """k [total_kv, Hkv, D], v [total_kv, Hkv, Dv] and kv_indptr of the explicit contexts."""
    lengths = [k.shape[1] for k, _ in contexts]
    k = np.concatenate([k.transpose(1, 0, 2) for k, _ in contexts], axis=0)
    v = np.concatenate([v.transpose(1, 0, 2) for _, v in contexts], axis=0)
    return dict(k=k, v=v, kv_indptr=np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))


@st.composite
def parent_arrays(draw, size: int, forest: bool = True):
    """A valid parent array of `size` nodes: node n's parent drawn from -1 (if forests) or 0..n-1."""
    parents = []
    for n in range(size):
        lowest = -1 if (forest or n == 0) else 0
        parents.append(draw(st.integers(lowest, n - 1)) if n else -1)
    return parents


@st.composite
def prefill_cases(draw, *, kind=None, max_batch=3, min_q=0, max_q=5, max_history=10, head_dims=(2, 4, 8), causal=None,
                  sliding_window=None, windows=(0, 1, 2, 3, 5, 8), rotary_mode=None, rotary_dtype=st.just(None)):
    """A prefill batch: GQA ratio, lengths (empty sequences, page boundaries), causal or not, a
    sliding window with sinks and TVM's cross-window mask (paged), token trees with a prefix
    (trees), rotary positions and pairings, peaked or flat softmaxes. kind, causal,
    sliding_window and rotary_mode are drawn unless given; windows are the sliding-window sizes
    drawn for a causal sliding-window case; rotary_dtype is a strategy."""
    kind = draw(st.sampled_from(["paged", "ragged", "tree", "paged_tree"])) if kind is None else kind
    batch = draw(st.integers(1, max_batch))
    kv_heads = draw(st.sampled_from([1, 2]))
    group = draw(st.sampled_from([1, 2, 3]))
    head_dim = draw(st.sampled_from(head_dims))
    v_dim = draw(st.sampled_from(head_dims)) if kind == "ragged" else head_dim
    tree = "tree" in kind
    is_causal = True if tree else (draw(st.booleans()) if causal is None else causal)
    sliding = kind == "paged" and (draw(st.booleans()) if sliding_window is None else sliding_window)
    window = draw(st.sampled_from(windows)) if sliding and is_causal else 0
    qo_lens = draw(st.lists(st.integers(min_q, max_q), min_size=batch, max_size=batch))
    parents, tree_lens = [], []
    if tree:
        tree_lens = [n + draw(st.integers(0, 2)) if kind == "paged_tree" else n for n in qo_lens]
        parents = [draw(parent_arrays(n)) for n in tree_lens]
        prefixes = [draw(st.integers(0, max_history)) if kind == "paged_tree" else 0 for _ in qo_lens]
        kv_lens = [p + n for p, n in zip(prefixes, tree_lens)]
    elif is_causal and window == 0:
        kv_lens = [n + draw(st.integers(0, max_history)) for n in qo_lens]
    else:
        kv_lens = draw(st.lists(st.integers(0, max_history + max_q), min_size=batch, max_size=batch))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    contexts = [(rng.standard_normal((kv_heads, n, head_dim)).astype(np.float16),
                 rng.standard_normal((kv_heads, n, v_dim)).astype(np.float16)) for n in kv_lens]
    q_indptr = np.concatenate([[0], np.cumsum(qo_lens)]).astype(np.int32)
    q_scale = draw(st.sampled_from([0.0, 0.25, 1.0, 4.0]))
    q = (q_scale * rng.standard_normal((int(q_indptr[-1]), kv_heads * group, head_dim))).astype(np.float16)
    options = dict(sm_scale=draw(st.sampled_from([head_dim**-0.5, 1.0])))
    if kind in ("paged", "paged_tree"):
        page_size = draw(st.sampled_from([1, 2, 4, 16]))
        sinks = [draw(st.integers(0, min(n, 3))) if sliding else 0 for n in kv_lens]
        offsets = [s + draw(st.integers(0, page_size + 2)) if sliding else 0 for s in sinks]
        pages, indptr, values, info = lay_out(contexts, sinks, offsets, page_size, draw(st.integers(0, 3)), rng,
                                              sliding)
        layout = dict(pages=pages, page_indptr=indptr, page_values=values, length_info=info)
    else:
        layout = ragged_layout(contexts)
    if kind == "paged":
        options.update(causal=is_causal, sliding_window=sliding, sliding_window_size=window)
    elif kind == "ragged":
        options.update(causal=is_causal)
    if tree:
        layout.update(token_tree_parent_ptr=np.array([p for tree in parents for p in tree], np.int32),
                      tree_order_indptr=np.concatenate([[0], np.cumsum(tree_lens)]).astype(np.int32))
    if kind != "paged_tree" and (draw(st.booleans()) if rotary_mode is None else rotary_mode):
        options.update(
            rotary_mode=1,
            rope_theta=draw(st.sampled_from([1e4, 5e5])),
            rope_scale=draw(st.sampled_from([1.0, 0.25])),
            llama3=draw(st.sampled_from([None, Llama3Scaling(8.0, 1.0, 4.0, 64)])),
            rope_pairing=draw(st.sampled_from(["neox", "gptj"])),
            q_rope_position=np.array(draw(st.lists(st.integers(0, 100), min_size=len(q), max_size=len(q))),
                                     dtype=np.int32),
            rotary_dtype=draw(rotary_dtype),
        )
        if kind != "tree":
            options["k_rope_pos_offset"] = np.array(
                draw(st.lists(st.integers(0, 50), min_size=batch, max_size=batch)), dtype=np.int32)
    return PrefillCase(kind, q, q_indptr, contexts, layout, options)
