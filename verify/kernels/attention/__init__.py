"""Attention kernels: paged decode (tiled, sequence-sharded, host switch), merge_state, rope."""
