"""Where TVM's web runtime puts an attention call's arrays: views into shared buffers, at offsets.

TVM's `PagedKVCache` keeps a step's small int32 arrays (page indptr, page values, length info,
the rope offsets and positions; for prefill also q_indptr, kv_indptr and the token-tree arrays)
as views into one merged auxiliary buffer (`paged_kv_cache.cc` `CopyVecDataToArray` into
`aux_data_manager_`), and the pages
as a view into the KV pool; the kernel receives each view's start as `<name>_elem_offset` in
PODArgs and adds it to every index (docs/tvm.md §7). A launcher that always binds one buffer per
array at offset 0 never tests that addition. So the cases draw a layout — the order of the small
arrays in the shared buffer, a gap of poison before each, and an offset before the pages — and
the launch builds exactly that buffer, binding it (as the runtime binds views of one buffer) to
every small array's parameter with the matching offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from verify.gpu.buffers import INT_SENTINEL

#: The decode call's small int32 arrays (TVM's parameter names) and their PODArgs offset fields.
#: (Decode's page-table parameters keep the prefill kernels' field names; every other array P
#: has the field `P_elem_offset`, see `offset_field`.)
AUX_OFFSET_FIELDS = {
    "page_table_indptr": "page_indptr_elem_offset",
    "page_table_values": "page_values_elem_offset",
    "length_info": "length_info_elem_offset",
    "k_rope_pos_offset": "k_rope_pos_offset_elem_offset",
    "q_rope_position": "q_rope_position_elem_offset",
}
PAGES_OFFSET_FIELD = "pages_elem_offset"
#: Poison between the views: an index that forgets its offset reads this (or another array).
_GAP = np.int32(np.uint32(INT_SENTINEL).view(np.int32))


def offset_field(name: str) -> str:
    """The PODArgs field holding the element offset of TVM parameter `name`."""
    return AUX_OFFSET_FIELDS.get(name, f"{name}_elem_offset")


@dataclass(frozen=True)
class ArgumentLayout:
    """The small arrays' order in the shared buffer, the poison before each, and the pages' offset."""

    order: tuple[str, ...] = tuple(AUX_OFFSET_FIELDS)
    gaps: tuple[int, ...] = (0,) * len(AUX_OFFSET_FIELDS)
    pages_offset: int = 0
    #: False: one buffer per array at offset 0 (the layout verify used before drawing one).
    shared: bool = False

    @classmethod
    def of(cls, params: dict) -> ArgumentLayout:
        """The layout a case drew (see `layouts`), or one buffer per array at offset 0."""
        if "aux_order" not in params:
            return cls()
        return cls(tuple(params["aux_order"]), tuple(params["aux_gaps"]), int(params["pages_offset"]), True)

    @property
    def launch_path(self) -> str:
        return "arrays as views of one buffer, at offsets" if self.shared else "one buffer per array, offset 0"

    def bind(self, arrays: dict, pages: np.ndarray | None = None) -> tuple[dict, dict]:
        """(arrays by parameter name, PODArgs offsets by field) for `arrays` (by TVM parameter name;
        the small ones named in `order` become views of one shared buffer, bound to each of their
        parameters; others pass through) and `pages` (None: a kernel without a paged cache)."""
        if not self.shared:
            return (dict(arrays) if pages is None else dict(arrays, pages=pages)), {}
        pieces, offsets, position = [], {}, 0
        for name, gap in zip(self.order, self.gaps):
            pieces.append(np.full(gap, _GAP, np.int32))
            position += gap
            offsets[offset_field(name)] = position
            data = np.ascontiguousarray(arrays[name], dtype=np.int32).ravel()
            pieces.append(data)
            position += data.size
        shared = np.concatenate(pieces)
        bound = dict(arrays, **{name: shared for name in self.order})
        if pages is not None:
            if self.pages_offset:
                poison = np.full(self.pages_offset, np.nan, dtype=pages.dtype)
                bound["pages"] = np.concatenate([poison, np.ascontiguousarray(pages).ravel()])
            else:  # the same bytes without a copy (the buffer holds the pages in C order either way)
                bound["pages"] = pages
            offsets[PAGES_OFFSET_FIELD] = self.pages_offset
        return bound, offsets


def layouts(names=tuple(AUX_OFFSET_FIELDS), pages_offsets=(0, 1, 7)):
    """Layout parameters for a case: one buffer per array at offset 0 now and then (TVM's
    runtime with fresh arrays), else the small arrays `names` (TVM parameter names; decode's by
    default) shuffled into a shared buffer with gaps of 0-5 elements, and a pages offset drawn from
    `pages_offsets` (decode's: 0, 1 or 7 elements, odd so it is not a whole vector; (0,) for a kernel
    whose pages have no element offset)."""
    names = list(names)
    shared = st.fixed_dictionaries({
        "aux_order": st.permutations(names),
        "aux_gaps": st.lists(st.integers(0, 5), min_size=len(names), max_size=len(names)),
        "pages_offset": st.sampled_from(list(pages_offsets)),
    })
    return st.one_of(st.just({}), shared)
