"""How ORT's host code launches its programs, for verify's launches of ORT's WGSL.

ORT binds a program's inputs in AddInput order, then its outputs, then one uniform struct
`uniforms` whose fields the program declares; it dispatches a program's workgroups normalised to
WebGPU's per-dimension limit; and for MatMulNBits it folds A's batch into M (B is 2-D). These
helpers reproduce that (tests/sources/ort/test_ort.py compares them with captured ORT dispatches),
and `DerivedConfig` adds to a kernel's config what ORT's program fixes.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from verify.errors import UsageError
from verify.gpu.uniforms import pack_struct
from verify.kernels.specialize import config_line
from verify.profiles import Profile, get_profile

if TYPE_CHECKING:
    from verify.kernels.contract import Kernel

    _KernelMixin = Kernel  # DerivedConfig is mixed into a Kernel: its config() extends the kernel's
else:
    _KernelMixin = object

#: Why a kernel that runs ORT's session leaves the sanitizer out (Kernel.leaves_out).
SESSION_LEAVES_OUT = {
    "sanitize": "ONNX Runtime's session dispatches its programs, where verify cannot instrument them; each program "
                "is sanitized on its own as an ort.attention.* or ort.dp4a.* kernel",
}

#: WebGPU's default maxComputeWorkgroupsPerDimension, which ORT normalises its dispatches to.
MAX_GROUPS = 65535
#: Lanes of ORT's quantize workgroup, one vec4 of A each (DP4AMatMulQuantizeProgram).
QUANTIZE_LANES = 64
#: Output rows and columns of one workgroup of the tile program (tile_size = 64).
TILE_ROWS, TILE_COLS = 64, 64
#: B rows of one workgroup of the small-M program (its `b_global_base` step in ORT 1.30).
SMALL_M_COLS = 4
#: Smallest M ORT sends to the tile program (kMinMForTileOptimization).
MIN_TILE_M = 4


#: The case sizes ORT's kernels draw under each profile scale: one step below the toolkit's own (a
#: launch on Dawn, or an ORT session run, costs more per case than a wgpu launch), so that the ci
#: gate covers them within minutes; nightly draws the ci sizes.
CASE_SIZES = {"quick": "quick", "ci": "quick", "nightly": "ci"}


def case_profile(profile) -> Profile:
    """The profile ORT's kernels draw their cases from under `profile`: the same profile (a user's
    own keeps its name, examples and family sizes) one scale below, by the profile's scale, never
    by its name (a profile of one's own called "mine" at scale ci draws as ci does)."""
    chosen = get_profile(profile)
    return replace(chosen, scale=CASE_SIZES.get(chosen.scale, chosen.scale))


def ort_grid(groups: int, limit: int = MAX_GROUPS) -> tuple[int, int, int]:
    """ORT's dispatch of `groups` workgroups (ProgramManager::NormalizeDispatchGroupSize) on a device
    whose maxComputeWorkgroupsPerDimension is `limit`: as is up to the limit, else a ceil(sqrt)
    square, else a ceil(cbrt) cube. Programs rebuild their workgroup index as z·nx·ny + y·nx + x
    and return from the surplus ones."""
    if groups <= limit:
        return groups, 1, 1
    side = int(np.ceil(np.sqrt(groups)))
    if side <= limit:
        return side, side, 1
    side = int(np.ceil(np.cbrt(groups)))
    if side > limit:
        raise UsageError(f"{groups} workgroups exceed what ORT can dispatch")
    return side, side, side


#: How a case dispatches ORT's programs (its `grid` parameter): "flat" under WebGPU's default limit,
#: as every size verify draws is, or "square" and "cube" under a lowered limit (lowered_limit) that
#: makes ORT's normalisation pack the same workgroups into its 2-D or 3-D grid, as it does past
#: 65535 workgroups: a program that reads a raw workgroup_id.x instead of rebuilding its index
#: from every dimension leaves rows unwritten there.
GRIDS = ("flat", "square", "cube")


def lowered_limit(groups: int, grid: str = "flat") -> int:
    """The maxComputeWorkgroupsPerDimension under which ort_grid packs `groups` workgroups as
    `grid` asks (GRIDS): the square's side ceil(sqrt(groups)), or the cube's ceil(cbrt(groups))
    where that is below the square's side (else the square's); MAX_GROUPS for "flat", and for a
    grid too small to pack (1 or 2 workgroups: no square has fewer)."""
    if grid not in GRIDS:
        raise UsageError(f"grid={grid!r} is not one of {', '.join(GRIDS)}")
    square, cube = int(np.ceil(np.sqrt(groups))), int(np.ceil(np.cbrt(groups)))
    if grid == "flat" or groups <= square:
        return MAX_GROUPS
    return cube if grid == "cube" and cube < square else square


def packed_grid(groups: int, grid: str = "flat") -> tuple[int, int, int]:
    """ORT's dispatch of `groups` workgroups under the limit a case's `grid` lowers to (lowered_limit)."""
    return ort_grid(groups, lowered_limit(groups, grid))


def with_grids(cases):
    """`cases` (a strategy) with a drawn `grid` parameter (GRIDS) for the launch to dispatch by."""
    from hypothesis import strategies as st

    return st.tuples(cases, st.sampled_from(GRIDS)).map(lambda pair: pair[0].replace(grid=pair[1]))


def zero_blocks_per_col(k_blocks: int, bits: int) -> int:
    """Zero points per B row as ORT addresses them: the row's blocks rounded up to whole bytes
    (a multiple of 8 / bits), since packed zero points start each row on a byte."""
    per_byte = 8 // bits
    return -(-k_blocks // per_byte) * per_byte


def bind(pipeline, arrays: dict, uniforms: dict) -> dict:
    """Resources by the WGSL's binding names: storage bindings from `arrays`, the uniform struct
    (ORT's `uniforms`) packed field by field from `uniforms`."""
    resources = {}
    for binding in pipeline.interface.bindings:
        if binding.address_space == "uniform":
            struct = pipeline.interface.struct_of(binding)
            if struct is None:
                raise UsageError(f"the uniform {binding.name!r} is not a struct the WGSL declares")
            unknown = [name for name, _ in struct.members if name not in uniforms]
            if unknown:
                raise UsageError(f"uniform field(s) {', '.join(unknown)} are none the ORT launch supplies "
                                 f"({', '.join(uniforms)})")
            resources[binding.name] = pack_struct(struct, uniforms)
        elif binding.name in arrays:
            resources[binding.name] = arrays[binding.name]
        else:
            raise UsageError(f"binding {binding.name!r} is none the ORT launch supplies ({', '.join(arrays)})")
    return resources


def header(kernel: str, config: dict) -> str:
    return f"// verify kernel: {kernel}\n{config_line(config)}\n"


class DerivedConfig(_KernelMixin):
    """Config entries fixed by ORT's program (e.g. its accumulator type) rather than chosen, and
    the WebGPU implementation ORT's kernels are written for (Dawn, whose Tint compiles ORT's WGSL in Chrome).

    They are added to every config, so the shared checks and the records read them, and a
    config that states them (a record, a case file, a `verify show` header) must state them right.
    """

    derived_keys: tuple = ()
    implementations = ("dawn",)

    def derive(self, config: dict) -> dict:
        return {}

    def config(self, overrides: dict | None = None) -> dict:
        overrides = dict(overrides or {})
        stated = {key: overrides.pop(key) for key in self.derived_keys if key in overrides}
        config = super().config(overrides)
        derived = self.derive(config)
        wrong = [f"{key}={value} (ORT's program has {derived[key]})" for key, value in stated.items()
                 if str(value) != str(derived[key])]
        if wrong:
            raise UsageError(f"{self.name}: {'; '.join(wrong)}")
        return {**config, **derived}
