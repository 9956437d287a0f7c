"""TVM's attention kernels under verify's attention contracts (docs/tvm.md).

- `decode`: `tvm.decode`, `tvm.decode_sliding_window` and `tvm.merge_state`, bound and launched
  as TVM's web runtime does (PODArgs, packed grids), with TVM's -5e4 floor stated and checked.
- `prefill`: the prefill, ragged, token-tree and sequence-prefill kernels.
- `checks`: `below_floor`, `packed_grid`, `infinite_empty`.
"""
