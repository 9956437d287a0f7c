"""`decode.tiled`: our WGSL of TVM's classic paged decode nest, under the shared decode contract.

The workgroup shape is TVM's (relax/frontend/nn/llm/_decode_kernels.py `_attention_decode`, as
built for WebGPU: 256 invocations, 32 KiB of workgroup storage; docs/tvm.md §6):
bdx = D/4 lanes across the head dim, bdy query heads of a GQA group (halved while bdx*bdy > 256,
gdz = ceil(group/bdy) head slices across the grid), bdz = 256/(bdx*bdy) KV-row slices, and
tile = 2 rows per invocation when the group is a single head. One difference: where halving
leaves bdy not dividing the group (e.g. 9 heads over 4), the last head slice is partial and
its spare invocations write nothing, where TVM's gdz = group // bdy would drop heads.
The WGSL (decode_tiled.wgsl) states the row mapping.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.errors import UsageError
from verify.kernels.attention.decode_common import DecodeKernel

#: WebGPU's default maxComputeInvocationsPerWorkgroup and TVM's max_num_threads for webgpu.
MAX_INVOCATIONS = 256
#: TVM's max_shared_memory_per_block for webgpu; the device is opened with this limit.
MAX_WORKGROUP_BYTES = 32768
#: WebGPU's default maxComputeWorkgroupSizeZ.
MAX_SIZE_Z = 64
_STORAGE_BYTES = {"f16": 2, "f32": 4}


@dataclass(frozen=True)
class TiledLayout:
    """Workgroup (bdx, bdy, bdz), head slices gdz and rows per invocation of one config."""

    bdx: int
    bdy: int
    bdz: int
    gdz: int
    tile: int

    @property
    def invocations(self) -> int:
        return self.bdx * self.bdy * self.bdz

    @property
    def slice_rows(self) -> int:
        """Rows one KV-row slice (one tz) consumes per iteration."""
        return self.bdy * self.tile

    @property
    def tile_rows(self) -> int:
        """Rows the workgroup stages per iteration."""
        return self.bdz * self.slice_rows

    def workgroup_bytes(self, dtype: str) -> int:
        """Bytes of the WGSL's var<workgroup> arrays: K and V tiles (qkv_t), q.k partials and
        logits (f32), the slice states' o (vec4<f32>) and (m, d) (vec2<f32>)."""
        head_dim = 4 * self.bdx
        heads = self.bdz * self.bdy
        kv_tiles = 2 * self.tile_rows * head_dim * _STORAGE_BYTES[dtype]
        partials = heads * self.slice_rows * self.bdx * 4
        logits = heads * self.slice_rows * 4
        merge = heads * self.bdx * 16 + heads * 8
        return kv_tiles + partials + logits + merge


def tiled_layout(head_dim: int, group: int) -> TiledLayout:
    """TVM's schedule for head_dim and GQA group size (docs/tvm.md §6)."""
    bdx = head_dim // 4
    bdy = group
    while bdx * bdy > MAX_INVOCATIONS and bdy > 1:
        bdy //= 2
    return TiledLayout(bdx=bdx, bdy=bdy, bdz=MAX_INVOCATIONS // (bdx * bdy), gdz=-(-group // bdy),
                       tile=2 if group == 1 else 1)


class DecodeTiled(DecodeKernel):
    name = "decode.tiled"
    summary = ("paged decode with TVM's nest: lanes across the head dim, GQA heads and KV-row slices per "
               "workgroup, K/V tiles in workgroup memory, online softmax, slices merged at the end")
    body_file = "decode_tiled.wgsl"
    limits = {"max-compute-workgroup-storage-size": MAX_WORKGROUP_BYTES}
    checks = DecodeKernel.checks + ("toggles",)

    def layout(self, config) -> TiledLayout:
        return tiled_layout(config["head_dim"], config["qo_heads"] // config["kv_heads"])

    def validate(self, config):
        super().validate(config)
        layout = self.layout(config)
        size = layout.workgroup_bytes(config["dtype"])
        if layout.bdz > MAX_SIZE_Z or size > MAX_WORKGROUP_BYTES:
            raise UsageError(f"decode.tiled cannot lay out {config}: workgroup {layout.bdx}x{layout.bdy}x{layout.bdz}, "
                             f"{size} bytes of workgroup storage (limits: z <= {MAX_SIZE_Z}, "
                             f"{MAX_WORKGROUP_BYTES} bytes)")

    def layout_constants(self, config):
        layout = self.layout(config)
        return {"BDY": layout.bdy, "BDZ": layout.bdz, "TILE": layout.tile}

    def workgroups(self, config, case):
        return (case["q"].shape[0], config["kv_heads"] * self.layout(config).gdz)
