"""`sanitize` finds races, out-of-bounds accesses and uninitialised reads from the kernel's own log
of its accesses, names both source lines of a race, stays silent on legitimate sharing, and leaves
every output of the kernel as it was."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from tests.fixtures.mutants.regenerate import HERE as MUTANTS
from verify.errors import SetupError
from verify.gpu import Output
from verify.instrument import (
    EmulatingDevice,
    OutOfBounds,
    Race,
    RedundantWrites,
    SanitizingDevice,
    UninitializedRead,
    sanitize,
)
from verify.instrument.sanitize import AccessKind
from verify.kernels.attention.cases import explicit_decode_case
from verify.kernels.registry import get_kernel

pytestmark = pytest.mark.webgpu
WGSL = Path(__file__).resolve().parent / "wgsl"
GROUPS = 2
#: The zero-initialisation probe verify.gpu.probes ran before verify.gpu.semantics replaced it
#: (3816304): each lane reads its workgroup's memory before any write, then writes a marker.
_ZERO_INIT_PROBE = """
var<workgroup> scratch: array<u32, 64>;
@group(0) @binding(0) var<storage, read_write> seen: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) i: u32) {
  seen[group.x * 64u + i] = scratch[i];
  workgroupBarrier();
  scratch[i] = 0xA5A50000u + group.x;
}
"""


@pytest.fixture(scope="module")
def sanitizing(webgpu_device):
    return SanitizingDevice(webgpu_device)


def run_fixture(webgpu_device, sanitizing, source: str):
    """Run a test module (f32 `input`, f32 outputs) plainly and sanitized: (plain, sanitized, report)."""
    pipeline = sanitizing.pipeline(source)
    resources = {}
    for binding in pipeline.interface.bindings:
        if binding.access == "read":
            resources[binding.name] = np.arange(64 * GROUPS, dtype=np.float32)
        else:
            resources[binding.name] = Output(np.float32, (64 * GROUPS * 4,))
    plain = webgpu_device.run(webgpu_device.pipeline(source), resources, GROUPS)
    checked = sanitizing.run(pipeline, resources, GROUPS)
    return plain, checked, sanitizing.take_report()


def same_outputs(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)


# -- small modules, one pattern each -------------------------------------------------------------
def test_legitimate_sharing_is_clean(webgpu_device, sanitizing):
    """Broadcast by lane 0 after a barrier, parity double buffering, an invocation reading its own
    write, components of one vector written by different lanes, atomics, pointers, user functions."""
    plain, checked, report = run_fixture(webgpu_device, sanitizing, (WGSL / "clean_patterns.wgsl").read_text())
    assert report.clean, report.messages()
    assert report.accesses > 0 and same_outputs(plain.outputs, checked.outputs)


def test_a_neighbour_read_without_a_barrier_is_a_race_naming_both_lines(webgpu_device, sanitizing):
    _, _, report = run_fixture(webgpu_device, sanitizing, (WGSL / "race_in_epoch.wgsl").read_text())
    [race] = report.findings
    assert isinstance(race, Race) and race.ordering == "epoch" and race.variable == "tile"
    assert {race.first.site.line, race.second.site.line} == {10, 11}
    assert {race.first.site.kind, race.second.site.kind} == {AccessKind.WRITE, AccessKind.READ}
    assert race.first.lane != race.second.lane and race.first.group == race.second.group
    assert 'line 10 "tile[lane] = input[group.x * 64u + lane];"' in race.message()
    assert 'line 11 "let right = tile[(lane + 1u) % 64u];"' in race.message()


def test_a_storage_write_read_across_only_a_workgroup_barrier_is_unsynchronised(webgpu_device, sanitizing):
    _, _, report = run_fixture(webgpu_device, sanitizing, (WGSL / "storage_needs_storage_barrier.wgsl").read_text())
    [race] = report.findings
    assert isinstance(race, Race) and race.ordering == "memory" and race.variable == "out"
    assert (race.first.epoch, race.second.epoch) == (0, 1) and "storageBarrier" in race.message()


def test_workgroups_updating_one_storage_address_race(webgpu_device, sanitizing):
    _, _, report = run_fixture(webgpu_device, sanitizing, (WGSL / "race_between_workgroups.wgsl").read_text())
    [race] = report.findings
    assert isinstance(race, Race) and race.ordering == "workgroups" and race.first.group != race.second.group


def test_a_write_a_million_elements_past_the_end_is_reported_and_not_performed(webgpu_device, sanitizing):
    plain, checked, report = run_fixture(webgpu_device, sanitizing, (WGSL / "far_out_of_bounds_write.wgsl").read_text())
    [finding] = report.findings
    length = 64 * GROUPS * 4
    assert isinstance(finding, OutOfBounds) and finding.access.site.kind == AccessKind.WRITE
    assert (finding.index, finding.length) == (70 + 1_000_000, length)
    assert finding.access.site.line == 13 and (finding.access.group, finding.access.lane) == (1, 6)
    # The plain run's guard bytes cannot see a write that far; the sanitized run never made it.
    assert all(plain.guard_intact.values()) and all(checked.guard_intact.values())
    assert same_outputs(plain.outputs, checked.outputs)


def test_the_zero_initialisation_probe_reads_workgroup_memory_it_never_wrote(webgpu_device, sanitizing):
    pipeline = sanitizing.pipeline(_ZERO_INIT_PROBE)
    sanitizing.run(pipeline, {"seen": Output(np.uint32, (4 * 64,))}, 4)
    [finding] = sanitizing.take_report().findings
    assert isinstance(finding, UninitializedRead) and finding.access.site.variable == "scratch"
    assert finding.count == 4 * 64 and finding.access.epoch == 0
    assert "relies on zero-initialisation" in finding.message()


def test_every_access_site_of_a_module_is_found_with_its_kind():
    sanitized = sanitize((WGSL / "clean_patterns.wgsl").read_text())
    kinds = {(s.variable, s.kind) for s in sanitized.sites}
    assert {("own", AccessKind.WRITE), ("own", AccessKind.READ), ("counter", AccessKind.ATOMIC_STORE),
            ("counter", AccessKind.ATOMIC_RMW), ("counter", AccessKind.ATOMIC_LOAD),
            ("pairs", AccessKind.WRITE), ("parts", AccessKind.WRITE)} <= kinds
    compound = [s for s in sanitized.sites if s.line == 47]
    assert [s.kind for s in compound] == [AccessKind.READ, AccessKind.WRITE]  # own[lane] += 1.0
    # Lines of the rewritten module are the original's: the kernel is untouched above its end.
    original = (WGSL / "clean_patterns.wgsl").read_text().splitlines()
    rewritten = sanitized.wgsl.splitlines()
    assert len(rewritten) > len(original)
    assert all(rewritten[s.line - 1].strip() for s in sanitized.sites)


def test_a_device_without_a_free_storage_binding_is_told_which_limit(webgpu_device):
    class Limited:
        def __init__(self, wrapped):
            self.wrapped = wrapped
            self.limits = {"max-storage-buffers-per-shader-stage": 2}

        def __getattr__(self, name):
            return getattr(self.wrapped, name)

    with pytest.raises(SetupError, match="max-storage-buffers-per-shader-stage"):
        SanitizingDevice(Limited(webgpu_device)).pipeline((WGSL / "race_in_epoch.wgsl").read_text())


def test_the_log_asks_for_room_beyond_the_defaults_granted_up_to_the_adapters_own():
    """The sanitize check asks the device for storage bindings up to LOG_BINDING_BYTES while it
    runs (a dispatch of many heads logs more than WebGPU's default 128 MiB holds), granted up to
    the adapter's limit; a reproduction never carries that request (device_limits does not)."""
    from verify.checks import get_check
    from verify.checks.sanitize import LOG_BINDING_BYTES
    from verify.gpu.wgpu_device import WgpuDevice
    from verify.instrument.devices import RECORD_WORDS as WORDS
    from verify.kernels.registry import get_kernel

    check, kernel = get_check("sanitize"), get_kernel("merge_state")
    config = kernel.config({})
    asked = check.instrument_limits(kernel, config)
    assert asked["max-storage-buffer-binding-size"] == LOG_BINDING_BYTES > 128 << 20
    assert "max-storage-buffer-binding-size" not in check.device_limits(kernel, config)
    try:
        device = WgpuDevice(limits=dict(check.device_limits(kernel, config), **asked))
    except SetupError as exc:
        pytest.skip(str(exc))
    granted = device.limits["max-storage-buffer-binding-size"]
    assert 128 << 20 <= granted <= LOG_BINDING_BYTES
    assert SanitizingDevice(device)._max_capacity() >= (granted - (1 << 16)) // (4 * WORDS)


# -- the toolkit's kernels -----------------------------------------------------------------------
def test_tvms_merge_state_races_on_s_naming_the_read_and_the_write(webgpu_device, sanitizing):
    kernel = get_kernel("tvm.merge_state")
    try:
        config = kernel.config()
        wgsl = kernel.wgsl(config)
    except SetupError as exc:
        pytest.skip(str(exc))
    source = wgsl.splitlines()
    read_line = next(i for i, line in enumerate(source, 1) if "= S_ptr[" in line)
    write_line = next(i for i, line in enumerate(source, 1) if line.lstrip().startswith("S_ptr["))

    @settings(max_examples=3, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(kernel.cases(config, "quick"))
    def every_case_races(case):
        kernel.launch(sanitizing, wgsl, config, case)
        races = [f for f in sanitizing.take_report().findings if isinstance(f, Race) and f.variable == "S_ptr"]
        assert races, "no race on S"
        lines = {(a.site.line, a.site.kind) for r in races for a in (r.first, r.second)}
        assert (read_line, AccessKind.READ) in lines and (write_line, AccessKind.WRITE) in lines
        assert all(r.ordering == "epoch" for r in races)

    every_case_races()


CLEAN = [
    ("decode.tiled", {}), ("decode.sharded", {}), ("decode", {}), ("merge_state", {}), ("rope", {}),
    ("dp4a.quantize", {"reduce": "subgroup"}), ("dp4a.quantize", {"reduce": "workgroup"}),
    ("dp4a.quantize", {"reduce": "emulated", "width": 8}), ("dp4a.quantize", {"reduce": "emulated", "width": 128}),
    ("dp4a.matmul", {"tile": "64x64"}), ("dp4a.matmul", {"tile": "128x32"}), ("dp4a.matmul", {"tile": "small_m"}),
    ("tvm.decode", {}), ("tvm.decode_sliding_window", {}),
]


@pytest.mark.parametrize("name,overrides", CLEAN, ids=[f"{n}{o or ''}" for n, o in CLEAN])
def test_kernel_is_clean_under_sanitize_and_computes_the_same_outputs(webgpu_device, sanitizing, name, overrides):
    kernel = get_kernel(name)
    try:
        config = kernel.config(overrides)
        wgsl = kernel.wgsl(config)
    except SetupError as exc:
        pytest.skip(str(exc))
    if kernel.requirements(config) - webgpu_device.features:
        pytest.skip(f"the adapter lacks {sorted(kernel.requirements(config) - webgpu_device.features)}")

    @settings(max_examples=3, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(kernel.cases(config, "quick"))
    def clean(case):
        plain = kernel.launch(webgpu_device, wgsl, config, case)
        checked = kernel.launch(sanitizing, wgsl, config, case)
        report = sanitizing.take_report()
        assert report.clean, report.messages()
        assert report.accesses > 0
        assert same_outputs(plain.outputs, checked.outputs)

    clean()


@pytest.mark.parametrize("mutant", ["no_position_barrier", "single_buffer"])
def test_a_missing_barrier_in_decode_sharded_is_a_race_on_the_partial_dots(sanitizing, mutant):
    kernel = get_kernel("decode.sharded")
    config = kernel.config({"head_dim": 128, "dtype": "f16"})
    wgsl = (MUTANTS / "decode.sharded" / f"{mutant}.wgsl").read_text()
    case = explicit_decode_case(config, [300, 1])  # 300 rows: three positions per shard
    kernel.launch(sanitizing, wgsl, config, case)
    races = [f for f in sanitizing.take_report().findings if isinstance(f, Race)]
    assert races and all(r.variable == "partial_dots" and r.ordering == "epoch" for r in races)
    lines = {wgsl.splitlines()[a.site.line - 1].strip() for r in races for a in (r.first, r.second)}
    assert "partial_dots[parity + shard * LANES + lane] = partial;" in lines
    assert "dot_qk += partial_dots[parity + shard * LANES + l];" in lines


def test_the_correct_decode_sharded_on_the_same_case_is_clean(sanitizing):
    kernel = get_kernel("decode.sharded")
    config = kernel.config({"head_dim": 128, "dtype": "f16"})
    kernel.launch(sanitizing, kernel.wgsl(config), config, explicit_decode_case(config, [300, 1]))
    report = sanitizing.take_report()
    assert report.clean and report.accesses > 0, report.messages()


def test_tvms_decode_stores_each_output_from_every_slice_a_note_not_a_finding(sanitizing):
    """Every slice (threadIdx.z) of a workgroup writes the same output: unordered, nothing lost."""
    kernel = get_kernel("tvm.decode")
    try:
        config = kernel.config()
        wgsl = kernel.wgsl(config)
    except SetupError as exc:
        pytest.skip(str(exc))
    kernel.launch(sanitizing, wgsl, config, explicit_decode_case(config, [40]))
    report = sanitizing.take_report()
    assert report.clean, report.messages()
    notes = {(n.variable, n.first.site.line) for n in report.notes if isinstance(n, RedundantWrites)}
    assert any(variable == "output_ptr" for variable, _ in notes), report.notes


def test_sanitize_runs_on_top_of_subgroup_emulation(webgpu_device):
    """The two wrappers compose: the kernel's own accesses are checked at an emulated width,
    the emulation's exchange arrays are not (they are added after the sanitizer's rewrite)."""
    kernel = get_kernel("dp4a.quantize")
    config = kernel.config({"reduce": "subgroup", "dtype": "f32"})
    both = SanitizingDevice(EmulatingDevice(webgpu_device, 64))
    case = next(iter(quantize_examples(kernel, config)))
    plain = kernel.launch(EmulatingDevice(webgpu_device, 64), kernel.wgsl(config), config, case)
    checked = kernel.launch(both, kernel.wgsl(config), config, case)
    report = both.take_report()
    assert report.clean and report.accesses > 0, report.messages()
    assert {s.variable for s in both.pipeline(kernel.wgsl(config)).sanitized.sites} == {
        "a", "codes", "scales", "subgroup_max", "width_of_subgroups"}
    assert same_outputs(plain.outputs, checked.outputs)


def quantize_examples(kernel, config, count: int = 1) -> list:
    found = []

    @settings(max_examples=count, database=None, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(kernel.cases(config, "quick"))
    def collect(case):
        found.append(case)

    collect()
    return found


#: Each lane merges its bit into a shared word with a compare-exchange loop (set_rows_quant.wgsl's
#: merge_store_dst_word); lane 0 of group 1 also tries a word a million past the end.
_COMPARE_EXCHANGE = """
@group(0) @binding(0) var<storage, read_write> words: array<atomic<u32>>;
fn merge(word: u32, bits: u32) {
  loop {
    let old = atomicLoad(&words[word]);
    let result = atomicCompareExchangeWeak(&words[word], old, old | bits);
    if (result.exchanged) { return; }
  }
}
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  merge(group.x * 2u + lane / 32u, 1u << (lane % 32u));
  if (FAR && group.x == 1u && lane == 0u) { merge(1000000u, 1u); }
}
"""


@pytest.mark.parametrize("far", [False, True])
def test_compare_exchange_loops_are_instrumented_and_one_past_the_end_is_reported(webgpu_device, sanitizing, far):
    """atomicCompareExchangeWeak is rewritten as the other atomics are (its result a struct of the
    same members the instrumentation declares): merging bits into shared words is clean and
    computes what the plain run does; a compare-exchange past the buffer is an OutOfBounds finding,
    not performed, and its loop still ends (the stopped access reports `exchanged`)."""
    source = _COMPARE_EXCHANGE.replace("FAR", "true" if far else "false")
    resources = {"words": Output(np.uint32, (2 * GROUPS,))}
    plain = webgpu_device.run(webgpu_device.pipeline(source), resources, GROUPS)
    checked = sanitizing.run(sanitizing.pipeline(source), resources, GROUPS)
    report = sanitizing.take_report()
    assert np.all(checked.outputs["words"] == 0xFFFFFFFF) and same_outputs(plain.outputs, checked.outputs)
    if not far:
        assert report.clean, report.messages()
        return
    kinds = {type(f) for f in report.findings}
    assert OutOfBounds in kinds, report.messages()
    bad = [f for f in report.findings if isinstance(f, OutOfBounds)]
    assert {f.index for f in bad} == {1000000} and {f.access.site.kind for f in bad} <= {AccessKind.ATOMIC_LOAD,
                                                                                           AccessKind.ATOMIC_RMW}
