"""decode.sharded and the `decode` host switch: layout limits, the switch rule, and the corner
cases the sharding creates (empty contexts, contexts shorter than the shard count)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from verify.budgets.metrics import compare
from verify.kernels.attention.cases import explicit_decode_case as decode_case
from verify.kernels.attention.decode_sharded import DecodeSharded, shard_layout
from verify.kernels.attention.decode_switch import DecodeSwitch, use_sharded

HEAD_DIMS = (64, 96, 128, 256)
#: The seed's layouts (shards x lanes); D = 96 is ours: two lanes of 48 dims.
SEED_LAYOUTS = {64: (128, 1), 96: (128, 2), 128: (128, 2), 256: (64, 4)}
NEG_INF_BITS = 0xFF800000


def judge(kernel, config, case, outputs):
    """The outputs' metrics against the reference and budget (each must pass)."""
    return [compare(outputs[e.name], e) for e in kernel.expected(config, case)]


# -- layout --------------------------------------------------------------------------------------
def _workgroup_floats(wgsl: str, constants: dict) -> int:
    """Floats of every var<workgroup> array<f32, N> of a module; N is a product of literals and constants."""
    total = 0
    for size in re.findall(r"var<workgroup>\s+\w+\s*:\s*array<f32,\s*([^>]+)>;", wgsl):
        factors = [f.strip() for f in size.split("*")]
        total += int(np.prod([int(f.rstrip("u")) if f[0].isdigit() else constants[f] for f in factors]))
    return total


@pytest.mark.parametrize("head_dim", HEAD_DIMS)
def test_layout_fits_webgpu_defaults(head_dim):
    """<= 256 invocations, <= 64 dims of q and o per lane, and <= 16 KiB of workgroup storage,
    counted both from the layout and from the module's own var<workgroup> declarations."""
    kernel = DecodeSharded()
    config = kernel.config({"head_dim": head_dim, "qo_heads": 8, "kv_heads": 2})
    layout = shard_layout(head_dim)
    assert (layout.shards, layout.lanes) == SEED_LAYOUTS[head_dim]
    assert layout.invocations <= 256
    assert layout.dims_per_lane <= 64
    assert layout.workgroup_storage_bytes <= 16384 == kernel.limits["max-compute-workgroup-storage-size"]
    constants = kernel.layout_constants(config)
    assert 4 * _workgroup_floats(kernel.wgsl(config), constants) == layout.workgroup_storage_bytes


@pytest.mark.webgpu
def test_every_layout_compiles_within_16_kib():
    """The device is opened with 16 KiB of workgroup storage, so pipeline creation enforces it."""
    from verify.gpu import open_device

    kernel = DecodeSharded()
    device = open_device(limits=kernel.limits)
    assert device.limits["max-compute-workgroup-storage-size"] == 16384
    for head_dim in HEAD_DIMS:
        config = kernel.config({"head_dim": head_dim, "qo_heads": 8, "kv_heads": 2, "dtype": "f32"})
        device.pipeline(kernel.wgsl(config))


# -- the host switch -------------------------------------------------------------------------------
@pytest.mark.parametrize("batch", [1, 3])
def test_switch_rule_flips_one_page_past_the_boundary(batch):
    boundary = batch * 256 // 16
    assert not use_sharded(boundary, batch, 16)
    assert use_sharded(boundary + 1, batch, 16)


def test_switch_reads_the_page_count_of_the_case():
    """Two sequences of 256 rows hold exactly 2*256/16 pages (tiled); one more row adds a page."""
    switch = DecodeSwitch()
    config = switch.config({"head_dim": 64, "qo_heads": 4, "kv_heads": 2, "dtype": "f32"})
    at_boundary = decode_case(config, [256, 256])
    past_boundary = decode_case(config, [256, 257])
    assert at_boundary["page_values"].size == 32 and past_boundary["page_values"].size == 33
    assert switch.branch(at_boundary) == "tiled" and switch.features(at_boundary)["sharded"] == 0
    assert switch.branch(past_boundary) == "sharded" and switch.features(past_boundary)["sharded"] == 1


def test_switch_text_splits_into_both_modules():
    switch = DecodeSwitch()
    config = switch.config({"head_dim": 128})
    wgsl = switch.wgsl(config)
    tiled, sharded = (kernel.wgsl(config) for kernel in switch.branches.values())
    assert switch.modules(wgsl) == [tiled, sharded]


@pytest.mark.webgpu
def test_switch_launches_the_kernel_the_rule_picks(webgpu_device):
    """At the boundary the switch's outputs are bitwise the tiled kernel's; one page past, the sharded one's."""
    switch = DecodeSwitch()
    config = switch.config({"head_dim": 64, "qo_heads": 4, "kv_heads": 2, "dtype": "f32"})
    wgsl = switch.wgsl(config)
    branches = switch.branches
    for lengths, picked in (([256, 256], "tiled"), ([256, 257], "sharded")):
        case = decode_case(config, lengths, seed=3)
        got = switch.launch(webgpu_device, wgsl, config, case).outputs
        kernel = branches[picked]
        direct = kernel.launch(webgpu_device, kernel.wgsl(config), config, case).outputs
        other = branches["sharded" if picked == "tiled" else "tiled"]
        via_other = other.launch(webgpu_device, other.wgsl(config), config, case).outputs
        assert all(np.array_equal(got[name], direct[name]) for name in got)
        assert not np.array_equal(got["output"], via_other["output"])
        assert all(m.passed for m in judge(switch, config, case, got))


# -- corner cases of the sharding --------------------------------------------------------------------
@pytest.mark.webgpu
@pytest.mark.parametrize("lengths", [[0], [37, 0, 300], [0, 0]], ids=["one_empty", "empty_between", "all_empty"])
def test_empty_context_is_zero_and_minus_infinity_bit_exact(webgpu_device, lengths):
    kernel = DecodeSharded()
    config = kernel.config({"head_dim": 128, "qo_heads": 8, "kv_heads": 2, "dtype": "f16"})
    case = decode_case(config, lengths, seed=1)
    out = kernel.launch(webgpu_device, kernel.wgsl(config), config, case).outputs
    empty = np.asarray(lengths) == 0
    assert np.all(out["output"][empty].view(np.uint16) == 0)
    assert np.all(out["lse"][empty].view(np.uint32) == NEG_INF_BITS)
    assert all(m.passed for m in judge(kernel, config, case, out))


@pytest.mark.webgpu
@pytest.mark.parametrize("length", [1, 2, 5, 127, 128, 129])
@pytest.mark.parametrize("rotary_mode", [0, 1])
def test_context_shorter_than_the_shard_count(webgpu_device, length, rotary_mode):
    """With fewer rows than shards most shards hold nothing and must not enter the merge."""
    kernel = DecodeSharded()
    config = kernel.config({"head_dim": 96, "qo_heads": 6, "kv_heads": 2, "dtype": "f32"})
    assert length <= shard_layout(96).shards + 1
    case = decode_case(config, [length, 3], seed=length, rotary_mode=rotary_mode)
    out = kernel.launch(webgpu_device, kernel.wgsl(config), config, case).outputs
    metrics = judge(kernel, config, case, out)
    assert all(m.passed for m in metrics), [m.as_record() for m in metrics]
