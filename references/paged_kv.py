"""TVM's paged KV cache addressing: which physical slot holds logical row r of sequence b.

Layout (docs/tvm.md §2; `_decode_kernels.py`, `_kernel_common.py` L155-170):

- pages [max_num_pages, 2, H_kv, page_size, D]; dim 1 is 0 = K, 1 = V.
- Sequence b owns pages page_values[page_indptr[b] : page_indptr[b+1]], in logical order.
- length_info is [B] (last_page_len) or, with a sliding window, [3, B]:
  rows last_page_len, sliding_window_offset, sink_size.
- A sliding-window sequence keeps its sink_size first rows in slots [0, sink_size) and its window
  in slots [sliding_window_offset, sliding_window_offset + L - sink_size) (the runtime, in
  `paged_kv_cache.cc` `SlideWindowForSequence`, starts the window after the sinks).

A sequence with no pages is empty whatever its length_info says (the kernel tests
indptr[b] != indptr[b+1] first; the runtime writes 0 there), so its length_info is not checked.
"""

from __future__ import annotations

import numpy as np


def _index_array(name: str, x, ndim: int) -> np.ndarray:
    arr = np.asarray(x)
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-d, got shape {arr.shape}")
    return arr.astype(np.int64)


def _length_fields(page_indptr, length_info, sliding_window: bool):
    """(indptr, pages per sequence, last_page_len, sliding_window_offset, sink_size) as int64."""
    indptr = _index_array("page_indptr", page_indptr, 1)
    if indptr.size == 0:
        raise ValueError("page_indptr must have B+1 >= 1 entries, got an empty array")
    batch = indptr.size - 1
    info = np.asarray(length_info)
    expected = (3, batch) if sliding_window else (batch,)
    if info.shape != expected:
        layout = "(3, B) (rows: last_page_len, sliding_window_offset, sink_size)" if sliding_window else "(B,)"
        raise ValueError(
            f"length_info must have shape {layout} = {expected} with sliding_window={sliding_window}; "
            f"got {info.shape}"
        )
    info = _index_array("length_info", info, len(expected))
    if sliding_window:
        last, offset, sink = info
    else:
        last, offset, sink = info, np.zeros(batch, np.int64), np.zeros(batch, np.int64)
    return indptr, np.diff(indptr), last, offset, sink


def _first_bad(mask: np.ndarray) -> int | None:
    bad = np.flatnonzero(mask)
    return int(bad[0]) if bad.size else None


def validate_page_table(page_indptr, page_values, length_info, num_pages: int, page_size: int,
                        sliding_window: bool = False) -> None:
    """Raise ValueError naming the first inconsistency of a page table; return None if it is valid."""
    if int(page_size) != page_size or page_size < 1:
        raise ValueError(f"page_size must be a positive integer, got {page_size!r}")
    if int(num_pages) != num_pages or num_pages < 0:
        raise ValueError(f"num_pages must be a non-negative integer, got {num_pages!r}")
    indptr, npages, last, offset, sink = _length_fields(page_indptr, length_info, sliding_window)
    values = _index_array("page_values", page_values, 1)
    if indptr[0] != 0:
        raise ValueError(f"page_indptr must start at 0; page_indptr[0]={indptr[0]}")
    if (b := _first_bad(npages < 0)) is not None:
        raise ValueError(
            f"page_indptr must be non-decreasing; page_indptr[{b}]={indptr[b]} > page_indptr[{b + 1}]={indptr[b + 1]}"
        )
    if indptr[-1] != values.size:
        raise ValueError(f"page_indptr[-1]={indptr[-1]} must equal len(page_values)={values.size}")
    if (i := _first_bad((values < 0) | (values >= num_pages))) is not None:
        raise ValueError(f"page_values[{i}]={values[i]} is not a page index in [0, {num_pages})")
    used = npages > 0
    if (b := _first_bad(used & ((last < 1) | (last > page_size)))) is not None:
        raise ValueError(
            f"last_page_len[{b}]={last[b]} is outside 1..{page_size} for sequence {b} with {npages[b]} pages"
        )
    if not sliding_window:
        return
    if (b := _first_bad(used & (sink < 0))) is not None:
        raise ValueError(f"sink_size[{b}]={sink[b]} must be >= 0")
    if (b := _first_bad(used & (offset < sink))) is not None:
        raise ValueError(
            f"sliding_window_offset[{b}]={offset[b]} < sink_size[{b}]={sink[b]}: "
            f"the window would overlap the sink slots"
        )
    window = (npages - 1) * page_size + last - offset
    if (b := _first_bad(used & (window < 0))) is not None:
        raise ValueError(
            f"sequence {b}: the window has negative length {window[b]} = (pages-1)*page_size + "
            f"last_page_len - sliding_window_offset = ({npages[b]}-1)*{page_size} + {last[b]} - {offset[b]}"
        )


def attended_length(page_indptr, length_info, page_size: int, sliding_window: bool = False) -> np.ndarray:
    """Rows attended per sequence, int64 [B]: TVM `_get_kv_chunk_len` (0 for a sequence without pages).

    (pages-1)*page_size + last_page_len, minus sliding_window_offset plus sink_size with a window.
    Assumes a valid table (see `validate_page_table`).
    """
    _, npages, last, offset, sink = _length_fields(page_indptr, length_info, sliding_window)
    return np.where(npages > 0, (npages - 1) * page_size + last - offset + sink, 0)


def row_to_slot(row, length_info, sliding_window: bool = False) -> np.ndarray:
    """Physical slot (index into the sequence's pages * page_size) of logical rows: TVM `_get_seq_offset`.

    `row` is an integer array whose leading axis is the sequence b. slot = r without a window;
    with one, r if r < sink_size[b] else r - sink_size[b] + sliding_window_offset[b].
    """
    row = np.asarray(row, np.int64)
    if not sliding_window:
        return row
    info = _index_array("length_info", length_info, 2)
    if info.shape[0] != 3 or row.ndim == 0 or row.shape[0] != info.shape[1]:
        raise ValueError(
            f"with a sliding window, length_info must be (3, B) and row (B, ...); got {info.shape}, {row.shape}"
        )
    per_seq = (info.shape[1],) + (1,) * (row.ndim - 1)
    offset, sink = info[1].reshape(per_seq), info[2].reshape(per_seq)
    return np.where(row < sink, row, row - sink + offset)


def gather_kv(pages, page_indptr, page_values, length_info, page_size: int | None = None,
              sliding_window: bool = False, stored: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K and V rows of every sequence in logical order: (k, v, length).

    k, v are float64 [B, H_kv, Lmax, D], exactly the stored values, zero past each length (so
    poison in unused slots never leaks); length is int64 [B]. One fancy-indexing gather, no loop.
    page_size defaults to pages.shape[3] and must equal it. stored=True keeps the pages' own dtype
    (the same values, for rebuilding a cache from them without a round trip through float64).
    """
    pages = np.asarray(pages)
    if pages.ndim != 5 or pages.shape[1] != 2:
        raise ValueError(f"pages must be [max_num_pages, 2, H_kv, page_size, D], got shape {pages.shape}")
    if page_size is None:
        page_size = pages.shape[3]
    elif page_size != pages.shape[3]:
        raise ValueError(f"page_size={page_size} differs from pages.shape[3]={pages.shape[3]}")
    validate_page_table(page_indptr, page_values, length_info, pages.shape[0], page_size, sliding_window)
    indptr = np.asarray(page_indptr, np.int64)
    values = np.asarray(page_values, np.int64)
    length = attended_length(indptr, length_info, page_size, sliding_window)
    batch, max_len = length.size, int(length.max(initial=0))
    rows = np.broadcast_to(np.arange(max_len), (batch, max_len))
    valid = rows < length[:, None]
    slot = np.where(valid, row_to_slot(rows, length_info, sliding_window), 0)
    entry = np.where(valid, indptr[:-1, None] + slot // page_size, 0)
    page = values[entry] if values.size else entry
    heads = np.arange(pages.shape[2])[None, :, None]
    page, offset = page[:, None, :], (slot % page_size)[:, None, :]

    def gather(kind: int) -> np.ndarray:
        rows = pages[page, kind, heads, offset]  # [B, H_kv, Lmax, D] in the stored dtype
        rows.transpose(0, 2, 1, 3)[~valid] = 0
        return rows if stored else rows.astype(np.float64)

    return gather(0), gather(1), length
