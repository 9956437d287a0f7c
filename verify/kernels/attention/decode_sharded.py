"""`decode.sharded`: paged decode with the context cut into shards, one workgroup per query head.

The sequence-sharded thread nest of TVM PR #20426 (`_make_seq_sharded_decode_nest`, WebGPU only;
docs/tvm.md §10): decode attention is bound by memory latency per thread, so a workgroup spends all
its invocations on positions rather than on head dims. The context of one (sequence, query head)
is cut into up to 128 shards; each shard is owned by head_dim/64 lanes that keep 64 dims of q and
of the running output in registers, exchange partial dot products through workgroup memory
double-buffered by position parity (one barrier per position), and the shard states are merged
in two phases ((max, denominator), then the outputs CHUNK dims at a time). The layout is spelled
out at the top of decode_sharded.wgsl; `shard_layout` is its single source of numbers.

Everything else (bindings, uniform, reference, budget, cases) is the shared decode contract
(decode_common.py). The device is held to 16 KiB of workgroup storage, the seed's promise.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.kernels.attention.decode_common import DecodeKernel

#: WebGPU's portable maximum of invocations per workgroup.
MAX_INVOCATIONS = 256
#: The seed's cap on shards per (sequence, head).
MAX_SHARDS = 128
#: Dims of q and of the output one invocation keeps in registers (the seed's 64; fewer for D = 96).
MAX_DIMS_PER_LANE = 64
#: Floats of workgroup memory for staging weighted outputs in the merge (8 KiB).
STAGING_FLOATS = 2048
#: WebGPU's default maxComputeWorkgroupStorageSize, which the seed's layout fits.
WORKGROUP_STORAGE_LIMIT = 16384


@dataclass(frozen=True)
class ShardLayout:
    """How one workgroup's invocations cover a (sequence, head): SHARDS x LANES, CHUNK dims a merge round."""

    shards: int
    lanes: int
    chunk: int
    head_dim: int

    @property
    def dims_per_lane(self) -> int:
        return self.head_dim // self.lanes

    @property
    def invocations(self) -> int:
        return self.shards * self.lanes

    @property
    def workgroup_storage_bytes(self) -> int:
        """Bytes of the module's var<workgroup> arrays: partial_dots, shard_max, shard_denom, staged."""
        return 4 * (2 * self.shards * self.lanes + 2 * self.shards + self.shards * self.chunk)


def shard_layout(head_dim: int) -> ShardLayout:
    """The seed's layouts: 128x1 for D=64, 128x2 for D=128, 64x4 for D=256; D=96 takes 128 shards
    of 2 lanes x 48 dims (the fewest lanes that keep a lane within 64 dims)."""
    lanes = -(-head_dim // MAX_DIMS_PER_LANE)
    if head_dim % (4 * lanes):
        raise ValueError(f"head_dim={head_dim} does not split into {lanes} lanes of whole vec4s")
    shards = min(MAX_SHARDS, MAX_INVOCATIONS // lanes)
    chunk = STAGING_FLOATS // shards
    layout = ShardLayout(shards, lanes, chunk, head_dim)
    if layout.dims_per_lane % chunk or chunk % 4 or chunk > layout.invocations:
        raise ValueError(f"head_dim={head_dim}: merge chunk {chunk} does not tile {layout.dims_per_lane} dims per lane")
    return layout


class DecodeSharded(DecodeKernel):
    name = "decode.sharded"
    summary = ("paged decode, context cut into <= 128 shards of head_dim/64 lanes, one workgroup per "
               "(sequence, query head); parity double-buffered partial dots, two-phase shard merge")
    body_file = "decode_sharded.wgsl"
    limits = {"max-compute-workgroup-storage-size": WORKGROUP_STORAGE_LIMIT}
    checks = DecodeKernel.checks + ("differential", "toggles")
    #: The nest this one replaces at long contexts: on identical cases the two must agree.
    differential_partner = "decode.tiled"

    def layout_constants(self, config):
        layout = shard_layout(config["head_dim"])
        return {"SHARDS": layout.shards, "LANES": layout.lanes, "CHUNK": layout.chunk}

    def workgroups(self, config, case):
        batch = case["q"].shape[0]
        return (config["qo_heads"], batch)
