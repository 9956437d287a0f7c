"""Token trees for tree attention (speculative decoding), as TVM's KV cache encodes them.

A batch step may append, per sequence, a tree of draft tokens instead of a chain. The caller gives
the tree as a parent array (`token_tree_parent_ptr`, local indices): parent[n] is the node's
parent, -1 for a root, and every parent precedes its child (-1 <= parent[n] < n). Several roots
are allowed (a forest). TVM's runtime, `src/runtime/vm/paged_kv_cache.cc` at apache/tvm 5d4dc87,
`ConstructTokenTreeMask` (L1800-1927), turns it into what the kernels read:

- depth (L1890-1897): 0 for a root, depth[parent] + 1 otherwise. A node's RoPE position is the
  sequence's position before the tree plus its depth (L1152-1163, `q_rope_position_map`), so the
  siblings of a tree share a position, as they would in the chain they stand for.
- the tree order (L1900-1917): a depth-first preorder over the roots in index order, each node's
  children in index order; node n gets the pair (first[n], second[n]) = (its preorder number,
  1 + the largest preorder number in its subtree). These pairs are the kernels' `tree_attn_mask`
  ([tree_size, 2] int32 per sequence), delimited by `mn_indptr` (the kernels' `tree_order_indptr`).

Node j may attend to node i exactly when i is j or an ancestor of j; TVM tests it on the pairs
(`_check_tree_order`, tree_attn.py L47-64 in the apache-tvm 0.27 wheel): first[i] <= first[j] < second[i].
`ancestry` computes the same relation by walking the parent array, without the preorder, so that
each encoding checks the other.
"""

from __future__ import annotations

import numpy as np


def validate_parents(parents, name: str = "token_tree_parent_ptr") -> np.ndarray:
    """The parent array as int64, or ValueError naming the first node whose parent is invalid.

    TVM's runtime checks the same rule (`paged_kv_cache.cc` L1878-1884): -1 <= parent[n] < n.
    """
    parents = np.asarray(parents)
    if parents.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {parents.shape}")
    if parents.size and not np.issubdtype(parents.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array, got dtype {parents.dtype}")
    parents = parents.astype(np.int64)
    bad = np.flatnonzero((parents < -1) | (parents >= np.arange(parents.size)))
    if bad.size:
        n = int(bad[0])
        raise ValueError(
            f"{name}[{n}]={parents[n]} is not a valid parent: every node's parent must be -1 (a root) "
            f"or an earlier node, -1 <= parent[n] < n"
        )
    return parents


def tree_depths(parents) -> np.ndarray:
    """Depth of every node, int64 [n]: 0 for a root, depth[parent] + 1 otherwise."""
    parents = validate_parents(parents)
    depth = np.zeros(parents.size, np.int64)
    for n, parent in enumerate(parents):  # parents precede children, so one forward pass suffices
        depth[n] = 0 if parent < 0 else depth[parent] + 1
    return depth


def ancestry(parents) -> np.ndarray:
    """visible[j, i] (bool [n, n]): node i is node j or one of its ancestors.

    Built by following parent links, one level per step, from the identity: after k steps each
    row holds the node and its first k ancestors, and a tree of n nodes has depth < n.
    """
    parents = validate_parents(parents)
    size = parents.size
    visible = np.eye(size, dtype=bool)
    node = np.arange(size)
    for _ in range(size):
        has_parent = node >= 0
        if not has_parent.any():
            break
        node = np.where(has_parent, parents[np.maximum(node, 0)], -1)
        rows = np.flatnonzero(node >= 0)
        visible[rows, node[rows]] = True
    return visible


def tree_order(parents) -> np.ndarray:
    """TVM's `tree_attn_mask` for one tree: int32 [n, 2] of (preorder number, end of subtree).

    The runtime's depth-first walk (`paged_kv_cache.cc` L1900-1917), written iteratively: roots in
    index order, each node's children in index order.
    """
    parents = validate_parents(parents)
    size = parents.size
    children: list[list[int]] = [[] for _ in range(size)]
    roots: list[int] = []
    for n, parent in enumerate(parents):
        (roots if parent < 0 else children[parent]).append(n)
    order = np.zeros((size, 2), np.int64)
    counter = 0
    stack = [(root, False) for root in reversed(roots)]
    while stack:
        node, done = stack.pop()
        if done:
            last = max((order[c, 1] for c in children[node]), default=order[node, 0] + 1)
            order[node, 1] = max(order[node, 0] + 1, last)
            continue
        order[node, 0] = counter
        counter += 1
        stack.append((node, True))
        stack.extend((child, False) for child in reversed(children[node]))
    return order.astype(np.int32)
