"""decode.tiled: TVM's schedule and WebGPU's limits for every head_dim and group, the dispatch
grid, and explicit corner cases (empty contexts, sliding window with sinks, a partial head slice)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from verify.budgets.metrics import compare
from verify.cases import Case
from verify.kernels.attention.cases import explicit_decode_case as decode_case
from verify.kernels.attention.decode_tiled import MAX_WORKGROUP_BYTES, DecodeTiled, tiled_layout

HEAD_DIMS = (64, 96, 128, 256)
GROUPS = (1, 2, 3, 4, 5, 6, 8, 9, 12, 16, 32)
NEG_INF_BITS = 0xFF800000


def run_and_judge(webgpu_device, config: dict, case: Case):
    """Launch once; every output must be within its budget of the reference."""
    kernel = DecodeTiled()
    launched = kernel.launch(webgpu_device, kernel.wgsl(config), config, case)
    metrics = [compare(launched.outputs[e.name], e) for e in kernel.expected(config, case)]
    assert all(m.passed for m in metrics), [m.as_record() for m in metrics]
    return launched


# -- layout ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("head_dim,group,shape,gdz,tile", [
    (64, 4, (16, 4, 4), 1, 1), (128, 4, (32, 4, 2), 1, 1), (64, 1, (16, 1, 16), 1, 2),
    (128, 8, (32, 8, 1), 1, 1), (128, 32, (32, 8, 1), 4, 1),
])
def test_layout_is_tvms_webgpu_schedule(head_dim, group, shape, gdz, tile):
    """The workgroups TVM 0.27 emits for WebGPU (docs/tvm.md §6, observed @workgroup_size)."""
    layout = tiled_layout(head_dim, group)
    assert ((layout.bdx, layout.bdy, layout.bdz), layout.gdz, layout.tile) == (shape, gdz, tile)


def _evaluate(expr: str, consts: dict) -> int:
    """A WGSL u32 const-expression of names and literals joined by * and / (left to right)."""
    tokens = expr.split()
    operand = lambda t: consts[t] if t in consts else int(t.rstrip("u"), 0)  # noqa: E731
    value = operand(tokens[0])
    for op, token in zip(tokens[1::2], tokens[2::2]):
        value = value * operand(token) if op == "*" else value // operand(token)
    return value


def _module_workgroup_bytes(wgsl: str, dtype: str) -> int:
    """Bytes of the module's var<workgroup> arrays, sizes evaluated from its own const lines."""
    consts: dict = {}
    for name, expr in re.findall(r"^const (\w+): u32 = ([^;]+);", wgsl, re.M):
        consts[name] = _evaluate(expr, consts)
    element = {"f32": 4, "vec2<f32>": 8, "vec4<f32>": 16, "vec4<qkv_t>": 4 * {"f16": 2, "f32": 4}[dtype]}
    return sum(element[kind] * _evaluate(size, consts)
               for kind, size in re.findall(r"var<workgroup> \w+: array<(.+), ([\w *]+)>;", wgsl))


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
@pytest.mark.parametrize("dtype", ["f16", "f32"])
def test_every_layout_fits_webgpu_limits(head_dim, dtype):
    """<= 256 invocations, z <= 64, <= 32 KiB of workgroup storage (counted from the layout and
    from the module's declarations), every head of the group covered, and a slice's rows no more
    than its lanes (lane j finishes row j's q.k sum)."""
    kernel = DecodeTiled()
    for group in GROUPS:
        config = kernel.config({"head_dim": head_dim, "qo_heads": 2 * group, "kv_heads": 2, "dtype": dtype})
        layout = kernel.layout(config)
        assert layout.invocations <= 256 and layout.bdz <= 64
        assert layout.bdy * layout.gdz >= group > layout.bdy * (layout.gdz - 1)
        assert layout.slice_rows <= layout.bdx
        size = layout.workgroup_bytes(dtype)
        assert size <= MAX_WORKGROUP_BYTES
        assert _module_workgroup_bytes(kernel.wgsl(config), dtype) == size


@pytest.mark.webgpu
def test_every_layout_compiles_within_the_kernels_limits():
    """Pipeline creation enforces the workgroup size and storage limits the kernel declares."""
    from verify.gpu import open_device

    kernel = DecodeTiled()
    device = open_device(limits=kernel.limits)
    assert device.limits["max-compute-workgroup-storage-size"] == MAX_WORKGROUP_BYTES
    for head_dim in HEAD_DIMS:
        for group in (1, 3, 16):
            config = kernel.config({"head_dim": head_dim, "qo_heads": group, "kv_heads": 1, "dtype": "f32"})
            device.pipeline(kernel.wgsl(config))


@pytest.mark.parametrize("qo_heads,kv_heads,grid_y", [(32, 8, 8), (32, 1, 4), (9, 1, 3), (4, 4, 4)])
def test_grid_is_batch_by_kv_heads_times_head_slices(qo_heads, kv_heads, grid_y):
    kernel = DecodeTiled()
    config = kernel.config({"head_dim": 128, "qo_heads": qo_heads, "kv_heads": kv_heads})
    case = decode_case(config, [5, 0, 17])
    assert kernel.workgroups(config, case) == (3, grid_y)


# -- corner cases on the device -----------------------------------------------------------------------
@pytest.mark.webgpu
@pytest.mark.parametrize("lengths", [[0], [37, 0, 300], [0, 0]], ids=["one_empty", "empty_between", "all_empty"])
def test_empty_context_is_zero_and_minus_infinity_bit_exact(webgpu_device, lengths):
    kernel = DecodeTiled()
    config = kernel.config({"head_dim": 128, "qo_heads": 8, "kv_heads": 2, "dtype": "f16"})
    out = run_and_judge(webgpu_device, config, decode_case(config, lengths, seed=1)).outputs
    empty = np.asarray(lengths) == 0
    assert np.all(out["output"][empty].view(np.uint16) == 0)
    assert np.all(out["lse"][empty].view(np.uint32) == NEG_INF_BITS)


@pytest.mark.webgpu
@pytest.mark.parametrize("rotary_mode", [0, 1])
def test_sliding_window_with_sinks(webgpu_device, rotary_mode):
    """Sinks in slots [0, sink), the window from slot `offset` on; K is rotated at its logical row.
    Lengths straddle the tile (16 rows here) and page boundaries; one sequence has no sinks."""
    kernel = DecodeTiled()
    config = kernel.config({"head_dim": 64, "qo_heads": 4, "kv_heads": 2, "dtype": "f32", "sliding_window": 1})
    sinks = [4, 3, 0, 8]
    offsets = [s + gap for s, gap in zip(sinks, (37, 16, 1, 15))]
    run_and_judge(webgpu_device, config, decode_case(config, [40, 3, 70, 17], seed=7, rotary_mode=rotary_mode,
                                              sliding=(offsets, sinks)))


@pytest.mark.webgpu
def test_partial_head_slice_writes_every_head_once(webgpu_device):
    """9 heads over bdy = 4 leave the third head slice one head wide: all 9 heads are right and
    nothing is written past the output."""
    kernel = DecodeTiled()
    config = kernel.config({"head_dim": 128, "qo_heads": 9, "kv_heads": 1, "dtype": "f16"})
    assert (kernel.layout(config).bdy, kernel.layout(config).gdz) == (4, 3)
    launched = run_and_judge(webgpu_device, config, decode_case(config, [33, 1], seed=5, rotary_mode=1))
    assert all(launched.guard_intact.values())
