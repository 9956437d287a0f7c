"""verify.gpu: bindings by name, poison, guards, uniform layout, compile errors."""

from __future__ import annotations

import numpy as np
import pytest

from verify.errors import UsageError
from verify.gpu import InOut, Output, ShaderCompileError
from verify.gpu.buffers import (
    GUARD_BYTES,
    INT_SENTINEL,
    array_bytes,
    guard_bytes,
    output_bytes,
    poison_bytes,
    split_guard,
    to_array,
    with_guard,
)
from verify.gpu.uniforms import pack_struct
from verify.wgsl import read_interface

COPY = """
struct Params { count: u32, scale: f32 }
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
  if (id.x < params.count) { dst[id.x + OFFSET] = src[id.x] * params.scale; }
}
"""


def _copy(offset: int) -> str:
    return f"const OFFSET: u32 = {offset}u;\n" + COPY


def _uniform(webgpu_device, pipeline, count, scale=2.0):
    return pack_struct(pipeline.interface.structs["Params"], {"count": count, "scale": scale})


def test_interface_reads_bindings_structs_and_entry_points():
    interface = read_interface(_copy(0))
    assert [(b.binding, b.name, b.access) for b in interface.bindings] == [
        (0, "src", "read"), (1, "dst", "read_write"), (2, "params", "read")]
    assert interface.structs["Params"].fields == [("count", "u32"), ("scale", "f32")]
    assert [(e.name, e.workgroup_size) for e in interface.entry_points] == [("main", (64, 1, 1))]


def test_interface_evaluates_constant_expressions_in_attributes():
    interface = read_interface("""
const BASE: u32 = 2u;
const WG: u32 = 8u * 4u;
@group(0) @binding(BASE + 1u) var<storage, read_write> dst: array<f32>;
@compute @workgroup_size(WG, BASE)
fn main() { dst[0] = 1.0; }
""")
    assert [(b.binding, b.name) for b in interface.bindings] == [(3, "dst")]
    assert interface.entry_points[0].workgroup_size == (32, 2, 1)


def test_commented_out_bindings_do_not_count():
    interface = read_interface("// @group(0) @binding(3) var<storage, read> ghost: array<f32>;\n" + _copy(0))
    assert "ghost" not in interface.names


def _struct(body: str):
    return read_interface(f"struct S {{ {body} }}\n@compute @workgroup_size(1) fn main() {{}}").structs["S"]


def test_uniform_layout_aligns_vectors_and_pads_to_16_bytes():
    packed = pack_struct(_struct("a: u32, b: vec4<f32>, c: f32"), {"a": 1, "b": [1, 2, 3, 4], "c": 5})
    assert len(packed) == 48  # a at 0, b at 16 (16-byte aligned), c at 32, size rounded to 16
    assert np.frombuffer(packed[16:32], "<f4").tolist() == [1, 2, 3, 4]


def test_uniform_layout_follows_align_and_size_attributes():
    packed = pack_struct(_struct("a: u32, @align(16) b: f32, @size(8) c: u32, d: vec2<f32>"),
                         {"a": 1, "b": 2.0, "c": 3, "d": [4, 5]})
    # a at 0; b at 16 (@align(16)); c at 20 taking 8 bytes; d (8-byte aligned) at 32; the struct
    # aligns to 16, so 40 rounds up to 48.
    assert len(packed) == 48
    assert np.frombuffer(packed[16:20], "<f4")[0] == 2.0
    assert np.frombuffer(packed[20:24], "<u4")[0] == 3
    assert np.frombuffer(packed[32:40], "<f4").tolist() == [4, 5]


def test_uniform_packing_names_a_member_it_cannot_pack():
    with pytest.raises(ValueError, match="field m: type mat2x2<f32> is not supported"):
        pack_struct(_struct("m: mat2x2<f32>"), {"m": [1, 2, 3, 4]})


@pytest.mark.webgpu
def test_unwritten_outputs_stay_poisoned(webgpu_device):
    pipeline = webgpu_device.pipeline(_copy(0))
    src = np.arange(8, dtype=np.float32)
    run = webgpu_device.run(pipeline, {"src": src, "dst": Output(np.float32, (10,)), "params": _uniform(webgpu_device, pipeline, 8)}, 1)
    out = run.outputs["dst"]
    assert out[:8].tolist() == (src * 2).tolist()
    assert np.isnan(out[8:]).all()
    assert run.guard_intact["dst"]


@pytest.mark.webgpu
def test_write_past_the_end_breaks_the_guard(webgpu_device):
    pipeline = webgpu_device.pipeline(_copy(2))
    run = webgpu_device.run(pipeline, {"src": np.ones(8, np.float32), "dst": Output(np.float32, (8,)),
                                "params": _uniform(webgpu_device, pipeline, 8)}, 1)
    assert not run.guard_intact["dst"]


@pytest.mark.webgpu
def test_inout_buffers_are_read_back(webgpu_device):
    source = COPY.replace("var<storage, read_write> dst", "var<storage, read_write> dst").replace(
        "dst[id.x + OFFSET] = src[id.x] * params.scale;", "dst[id.x] = dst[id.x] + src[id.x];")
    pipeline = webgpu_device.pipeline("const OFFSET: u32 = 0u;\n" + source)
    run = webgpu_device.run(pipeline, {"src": np.ones(4, np.float32), "dst": InOut(np.full(4, 3.0, np.float32)),
                                "params": _uniform(webgpu_device, pipeline, 4)}, 1)
    assert run.outputs["dst"].tolist() == [4.0] * 4


THREE_OUTPUTS = """
@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read_write> b: array<u32>;
@group(0) @binding(3) var<storage, read_write> c: array<i32>;
@compute @workgroup_size(1)
fn main() {
  for (var i = 0u; i < 3u; i++) { a[i] = f32(src[i]) + 0.5; }
  for (var i = 0u; i < 6u; i++) { b[i] = src[i] * 7u; }
  c[0] = c[0] - 1;
}
"""


@pytest.mark.webgpu
def test_each_of_several_outputs_comes_back_whole_with_its_own_guard(webgpu_device):
    """The writable buffers are read back through one staging buffer, each at its own offset:
    outputs of different lengths and types, an InOut among them, and a write past the end of
    one (b's sixth element lands in its guard) that breaks that output's guard only."""
    pipeline = webgpu_device.pipeline(THREE_OUTPUTS)
    src = np.array([1, 2, 3, 4, 5, 6], np.uint32)
    run = webgpu_device.run(pipeline, {"a": Output(np.float32, (3,)), "src": src, "b": Output(np.uint32, (5,)),
                                       "c": InOut(np.array([10, 20, 30], np.int32))}, 1)
    assert run.outputs["a"].tolist() == [1.5, 2.5, 3.5]
    assert run.outputs["b"].tolist() == [7, 14, 21, 28, 35]
    assert run.outputs["c"].tolist() == [9, 20, 30]
    assert run.guard_intact == {"a": True, "b": False, "c": True}


@pytest.mark.webgpu
def test_missing_or_extra_resources_are_a_usage_error(webgpu_device):
    pipeline = webgpu_device.pipeline(_copy(0))
    with pytest.raises(UsageError, match="bindings mismatch"):
        webgpu_device.run(pipeline, {"src": np.ones(4, np.float32)}, 1)


@pytest.mark.webgpu
def test_compile_errors_carry_the_compiler_message_and_line(webgpu_device):
    with pytest.raises(ShaderCompileError) as info:
        webgpu_device.pipeline(_copy(0).replace("* params.scale", "* 1u"))
    assert "wgsl:" in str(info.value) and "Validation Error" not in str(info.value)


@pytest.mark.webgpu
def test_pipelines_are_cached_by_source_hash(webgpu_device):
    assert webgpu_device.pipeline(_copy(0)) is webgpu_device.pipeline(_copy(0))


@pytest.mark.webgpu
def test_timestamps_measure_the_dispatch(webgpu_device):
    if "timestamp-query" not in webgpu_device.features:
        pytest.skip("adapter has no timestamp queries")
    pipeline = webgpu_device.pipeline(_copy(0))
    run = webgpu_device.run(pipeline, {"src": np.ones(64, np.float32), "dst": Output(np.float32, (64,)),
                                "params": _uniform(webgpu_device, pipeline, 64)}, 1, timestamps=True)
    assert run.timing.gpu_ns is not None and run.timing.gpu_ns >= 0


def test_poison_patterns():
    assert np.isnan(np.frombuffer(poison_bytes(np.float16, 8), np.float16)).all()
    assert np.isnan(np.frombuffer(poison_bytes(np.float32, 8), np.float32)).all()
    assert (np.frombuffer(poison_bytes(np.int32, 8), "<u4") == INT_SENTINEL).all()
    assert GUARD_BYTES % 4 == 0


def _bytes_before(array, min_bytes=4) -> bytes:
    """array_bytes as it was built before it could hand out a view: a copy, then the padding."""
    data = np.ascontiguousarray(array)
    if data.dtype.byteorder == ">":
        data = data.byteswap().view(data.dtype.newbyteorder("<"))
    raw = data.tobytes()
    return raw + poison_bytes(data.dtype, max(min_bytes, -(-len(raw) // 4) * 4) - len(raw))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.int32, np.uint32, np.uint8, np.uint16, ">f4"])
@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 5, 8, 33])
def test_buffer_bytes_are_the_padded_poisoned_guarded_layout(dtype, count):
    """An input's bytes (a view of the array where it needs no padding) and an output's initial
    bytes (built as one array where it can be) are byte for byte the layout of the copies they
    replace: the payload, poison to a multiple of 4, the guard."""
    array = (np.arange(count) * 7 + 3).astype(dtype)
    for min_bytes in (4, 16):
        data = array_bytes(array, min_bytes)
        assert bytes(data) == _bytes_before(array, min_bytes)
        if array.nbytes % 4 == 0 and array.nbytes >= min_bytes and np.dtype(dtype).byteorder != ">":
            assert isinstance(data, memoryview) and np.shares_memory(np.frombuffer(data, np.uint8), array)
    nbytes = array.nbytes
    assert bytes(output_bytes(dtype, nbytes)) == with_guard(poison_bytes(dtype, nbytes), dtype)
    assert bytes(output_bytes(dtype, nbytes))[-GUARD_BYTES:] == guard_bytes()


def test_a_readback_becomes_writable_arrays_without_a_copy():
    """to_array of a writable readback (a view of wgpu's own copy) is a view of it, writable; of
    read-only bytes, a writable copy."""
    raw = memoryview(bytearray(np.arange(6, dtype="<f4").tobytes() + guard_bytes()))
    payload, intact = split_guard(raw, 24, np.float32)
    array = to_array(payload, np.float32, (2, 3))
    assert intact and array.flags.writeable and np.shares_memory(array, np.frombuffer(raw, np.uint8))
    assert array.tolist() == [[0, 1, 2], [3, 4, 5]]
    copied = to_array(bytes(payload), np.float32, (2, 3))
    assert copied.flags.writeable and copied.tolist() == array.tolist()


# The zero-initialisation probe and the other WGSL semantics probes: tests/framework/test_semantics.py


def _counting_enumerations(monkeypatch):
    """wgpu's enumerate_adapters_sync, counted; the process's kept adapters dropped first."""
    from verify.gpu import wgpu_adapters
    from verify.gpu.wgpu_types import load_wgpu

    gpu = load_wgpu().gpu
    real = gpu.enumerate_adapters_sync
    calls = []

    def counted():
        calls.append(1)
        return real()

    monkeypatch.setattr(gpu, "enumerate_adapters_sync", counted)
    wgpu_adapters.forget_adapters()
    return calls


@pytest.mark.webgpu
def test_wgpu_devices_of_different_limits_share_one_enumeration(webgpu_device, monkeypatch):
    from verify.gpu.wgpu_device import WgpuDevice

    calls = _counting_enumerations(monkeypatch)
    small = WgpuDevice(None, {"max-compute-workgroup-storage-size": 8192})
    large = WgpuDevice(None, {})
    assert len(calls) == 1
    assert small.limits["max-compute-workgroup-storage-size"] == 8192
    assert large.limits["max-compute-workgroup-storage-size"] > 8192
    pipeline = small.pipeline(_copy(0))
    src = np.arange(8, dtype=np.float32)
    out = small.run(pipeline, {"src": src, "dst": Output(np.float32, (8,)),
                               "params": _uniform(small, pipeline, 8)}, 1).outputs
    np.testing.assert_array_equal(out["dst"], src * 2)


@pytest.mark.webgpu
def test_a_kept_adapter_that_refuses_a_device_is_enumerated_again(webgpu_device, monkeypatch):
    """Should wgpu spend an adapter on its first device (as WebGPU says), the next open enumerates
    afresh instead of failing."""
    from verify.gpu import wgpu_adapters
    from verify.gpu.wgpu_device import WgpuDevice

    calls = _counting_enumerations(monkeypatch)
    WgpuDevice(None, {})
    spent = wgpu_adapters.enumerate_adapters()[0]

    def refuse(*args, **kwargs):
        raise RuntimeError("adapter already used")

    monkeypatch.setattr(spent, "request_device_sync", refuse, raising=False)
    assert WgpuDevice(None, {}).wgpu_device is not None
    assert len(calls) == 2
