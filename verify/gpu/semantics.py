"""WGSL semantics probes: what an implementation and adapter actually do where WGSL says what they
must do, measured by small dispatches, so a finding blames the right layer.

A kernel that fails only where an implementation deviates from the specification (workgroup
memory not zeroed, a loop-body `var` not re-zeroed each iteration) is the implementation's bug,
with a robustness note for the kernel; a kernel that fails where every probe conforms is the
kernel's. Each probe names the specification clause it tests and answers:

- `conforms`: the implementation does what the clause requires;
- `deviates`: it does not (the observed values say how);
- `allowed`: the clause leaves a choice (an out-of-bounds read may return zero or a value from
  the buffer; f16 overflow is indeterminate) and the observation records which was made;
- `not run`: the adapter lacks what the probe needs (`shader-f16`, subgroups).

Probes run through the `Device` protocol (pipeline, run), so every implementation, wrapper and
fake answers the same questions with the same WGSL. Results are kept on disk per implementation
version, adapter and driver (`$VERIFY_CACHE/semantics`), so a gate measures them once per machine.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from verify.gpu import buffers


class Conformance(str, enum.Enum):
    CONFORMS = "conforms"
    DEVIATES = "deviates"
    ALLOWED = "allowed"
    NOT_RUN = "not run"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class ProbeResult:
    """One probe's answer on one device: its verdict and what was seen, in one line."""

    probe: str
    verdict: Conformance
    observed: str


@dataclass(frozen=True)
class Probe:
    """A question the specification answers: `id`, a title, the clause it tests, and how to ask."""

    id: str
    title: str
    clause: str
    ask: Callable[[object], ProbeResult]
    needs: tuple = ()


# -- workgroup memory ----------------------------------------------------------------------------
#: The largest workgroup array WebGPU's default limits allow (16 KiB), as kernels use it.
WORKGROUP_WORDS = 4096
#: Workgroups per dispatch: many more than a GPU runs at once, so workgroups land on memory
#: earlier workgroups (of this and of other pipelines) used.
WORKGROUPS = 512
MARKER = 0xA5A50000

#: Fills every word of a 16 KiB workgroup array with markers: what another kernel leaves behind.
_DIRTY = f"""
var<workgroup> dirt: array<u32, {WORKGROUP_WORDS}>;
@group(0) @binding(0) var<storage, read_write> sink: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {{
  for (var k = lane; k < {WORKGROUP_WORDS}u; k += 64u) {{ dirt[k] = {MARKER:#x}u | group.x; }}
  workgroupBarrier();
  if (lane == 0u) {{ sink[group.x] = dirt[(group.x * 7u) % {WORKGROUP_WORDS}u]; }}
}}
"""

#: Readers of workgroup memory before any write, in the shapes kernels declare: each lane counts
#: the nonzero words it reads, then writes markers of its own (a second dispatch finds them where
#: nothing zeroes). `READ(k)` is the word k of the shape.
_READER = """
DECLARATION
@group(0) @binding(0) var<storage, read_write> nonzero: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  var count = 0u;
  for (var k = lane; k < WORDSu; k += 64u) { if (READ(k) != 0u) { count += 1u; } }
  nonzero[group.x * 64u + lane] = count;
  workgroupBarrier();
  for (var k = lane; k < WORDSu; k += 64u) { WRITE(k); }
}
"""
_SHAPES = {
    "flat array<u32, 4096>": (f"var<workgroup> wg: array<u32, {WORKGROUP_WORDS}>;", "wg[k]",
                              f"wg[k] = {MARKER:#x}u | group.x"),
    "nested array<array<u32, 64>, 64>": ("var<workgroup> wg: array<array<u32, 64>, 64>;", "wg[k / 64u][k % 64u]",
                                         f"wg[k / 64u][k % 64u] = {MARKER:#x}u | group.x"),
    "struct of vec4 array": ("struct Tile { head: u32, body: array<vec4<u32>, 1023>, }\nvar<workgroup> wg: Tile;",
                             "select(wg.body[(max(k, 1u) - 1u) / 4u][(max(k, 1u) - 1u) % 4u], wg.head, k == 0u)",
                             f"if (k == 0u) {{ wg.head = {MARKER:#x}u; }} else {{ "
                             "wg.body[(k - 1u) / 4u][(k - 1u) % 4u] = "
                             f"{MARKER:#x}u | group.x; }}"),
}


def _reader(shape: str) -> str:
    declaration, read, write = _SHAPES[shape]
    words = WORKGROUP_WORDS if shape != "struct of vec4 array" else 1 + 1023 * 4
    return (_READER.replace("DECLARATION", declaration).replace("READ(k)", read).replace("WRITE(k)", write)
            .replace("WORDS", str(words)))


def _zero_init(device) -> ProbeResult:
    """Each reader runs twice after the 16 KiB marker kernel: one dispatch of fresh memory proves
    nothing (a GPU may hand out memory no workgroup used yet), stale words from another pipeline
    or the reader's own earlier dispatch are what a kernel meets."""
    dirty = device.pipeline(_DIRTY)
    seen = {}
    for shape in _SHAPES:
        reader = device.pipeline(_reader(shape))
        counts = 0
        for _ in range(2):
            device.run(dirty, {"sink": buffers.Output(np.uint32, (WORKGROUPS,))}, WORKGROUPS)
            out = device.run(reader, {"nonzero": buffers.Output(np.uint32, (WORKGROUPS * 64,))}, WORKGROUPS)
            counts += int(out.outputs["nonzero"].sum())
        seen[shape] = counts
    stale = {shape: n for shape, n in seen.items() if n}
    if not stale:
        return ProbeResult("workgroup-zero-init", Conformance.CONFORMS,
                           f"every word read before written was 0 ({len(_SHAPES)} shapes, 2 dispatches each, after "
                           "a kernel that filled 16 KiB of workgroup memory)")
    return ProbeResult("workgroup-zero-init", Conformance.DEVIATES,
                       "stale words read before any write: " + ", ".join(f"{shape}: {n}" for shape, n in stale.items()))


# -- function and loop scope ---------------------------------------------------------------------
_LOOP_VAR = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
fn fresh(k: u32) -> u32 {
  var x: u32;
  x += k;
  return x;
}
@compute @workgroup_size(1)
fn main() {
  for (var it = 0u; it < 4u; it++) {
    var x: u32;
    x += 1u;
    var v: vec4<f32>;
    v += vec4<f32>(1.0);
    var a: array<u32, 2>;
    a[1] += 1u;
    out[it] = x;
    out[4u + it] = u32(v.w);
    out[8u + it] = a[1];
  }
  out[12] = fresh(5u);
  out[13] = fresh(7u);
}
"""


def _loop_vars(device) -> ProbeResult:
    out = device.run(device.pipeline(_LOOP_VAR), {"out": buffers.Output(np.uint32, (14,))}, 1).outputs["out"]
    loop = {"u32": out[0:4].tolist(), "vec4<f32>": out[4:8].tolist(), "array<u32, 2>": out[8:12].tolist()}
    calls = out[12:14].tolist()
    wrong = {kind: values for kind, values in loop.items() if values != [1, 1, 1, 1]}
    observed = "; ".join(f"loop-body var {kind} over 4 iterations: {values}" for kind, values in loop.items())
    observed += f"; function var over two calls: {calls}"
    if wrong or calls != [5, 7]:
        return ProbeResult("var-zero-init", Conformance.DEVIATES, observed + " (spec: 1,1,1,1 and 5,7)")
    return ProbeResult("var-zero-init", Conformance.CONFORMS, observed)


# -- select ----------------------------------------------------------------------------------------
_SELECT = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
var<private> calls: u32;
fn counted(v: u32) -> u32 {
  calls += 1u;
  return v;
}
@compute @workgroup_size(1)
fn main() {
  let picked = select(counted(1u), counted(2u), out[0] == 0u);
  out[1] = picked;
  out[2] = calls;
}
"""


def _select(device) -> ProbeResult:
    out = device.run(device.pipeline(_SELECT), {"out": buffers.InOut(np.zeros(3, np.uint32))}, 1).outputs["out"]
    observed = f"select(counted(1), counted(2), true) = {out[1]}, calls = {out[2]}"
    ok = out[1] == 2 and out[2] == 2
    return ProbeResult("select-evaluates-both", Conformance.CONFORMS if ok else Conformance.DEVIATES,
                       observed + ("" if ok else " (spec: 2, both operands evaluated: 2 calls)"))


# -- out-of-bounds reads --------------------------------------------------------------------------
_OUT_OF_BOUNDS = """
@group(0) @binding(0) var<storage, read> data: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1)
fn main() {
  let far = data[0] + 1048576u;
  out[0] = data[far];
  out[1] = data[arrayLength(&data) + data[1]];
}
"""
#: The input: distinct values, none of them zero or the guard pattern.
_OOB_DATA = np.arange(16, dtype=np.uint32) * 7 + 1000


def _out_of_bounds(device) -> ProbeResult:
    out = device.run(device.pipeline(_OUT_OF_BOUNDS),
                     {"data": _OOB_DATA, "out": buffers.Output(np.uint32, (2,))}, 1).outputs["out"]
    inside = set(_OOB_DATA.tolist()) | {buffers.GUARD_WORD}

    def kind(value: int) -> str:
        if value == 0:
            return "zero"
        if value == int(_OOB_DATA[-1]):
            return "the last element (clamped)"
        return "another element of the buffer" if value in inside else f"{value:#x}, from outside the buffer"

    observed = f"far past the end: {kind(int(out[0]))}; just past it: {kind(int(out[1]))}"
    outside = any(int(v) != 0 and int(v) not in inside for v in out)
    return ProbeResult("out-of-bounds-read", Conformance.DEVIATES if outside else Conformance.ALLOWED, observed)


# -- subgroups ---------------------------------------------------------------------------------------
_SUBGROUP = """
enable subgroups;
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lane: u32, @builtin(subgroup_size) size: u32) {
  let counted = subgroupAdd(1u);
  if (lane == 0u) { out[0] = size; out[1] = counted; }
}
"""


def _subgroup_size(device) -> ProbeResult:
    limits = device.limits
    out = device.run(device.pipeline(_SUBGROUP), {"out": buffers.Output(np.uint32, (2,))}, 1).outputs["out"]
    reported, counted = int(out[0]), int(out[1])
    observed = f"@builtin(subgroup_size) = {reported}, lanes counted by subgroupAdd(1) = {counted}"
    low, high = limits.get("subgroup-min-size"), limits.get("subgroup-max-size")
    if low and high:
        observed += f", adapter range {low}..{high}"
    ok = reported == counted and reported & (reported - 1) == 0 and 4 <= reported <= 128
    return ProbeResult("subgroup-size", Conformance.CONFORMS if ok else Conformance.DEVIATES, observed)


# -- f16 ---------------------------------------------------------------------------------------------
_F16 = """
enable f16;
@group(0) @binding(0) var<storage, read> data: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@compute @workgroup_size(1)
fn main() {
  let big = f16(data[0]);
  let tiny = f16(data[1]);
  out[0] = f32(big * big);
  out[1] = f32(tiny * f16(0.5));
  out[2] = f32(f16(data[2]));
}
"""


def _f16(device) -> ProbeResult:
    data = np.array([300.0, 6.103515625e-05, 70000.0], np.float32)
    out = device.run(device.pipeline(_F16), {"data": data, "out": buffers.Output(np.float32, (3,))},
                     1).outputs["out"]
    overflow, subnormal, converted = (float(x) for x in out)
    observed = (f"300h * 300h = {overflow:g}; 2^-14 * 0.5 = {subnormal:g} "
                f"({'kept subnormal' if subnormal else 'flushed to zero'}); f16(70000.0) = {converted:g}")
    return ProbeResult("f16-overflow-subnormal", Conformance.ALLOWED, observed)


# -- loops -------------------------------------------------------------------------------------------
_LOOP_TRIPS = 70000
_LOOP_CAP = """
@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@compute @workgroup_size(1)
fn main() {
  var trips = 0u;
  for (var i = 0u; i < out[1]; i++) { trips += 1u; }
  var second = 0u;
  for (var j = 0u; j < 16u; j++) { second += 1u; }
  out[0] = trips;
  out[2] = second;
}
"""


def _loop_cap(device) -> ProbeResult:
    out = device.run(device.pipeline(_LOOP_CAP),
                     {"out": buffers.InOut(np.array([0, _LOOP_TRIPS, 0], np.uint32))}, 1).outputs["out"]
    observed = f"a loop of {_LOOP_TRIPS} trips ran {int(out[0])}, a loop of 16 after it ran {int(out[2])}"
    ok = int(out[0]) == _LOOP_TRIPS and int(out[2]) == 16
    return ProbeResult("loop-trip-count", Conformance.CONFORMS if ok else Conformance.DEVIATES, observed)


# -- barriers ----------------------------------------------------------------------------------------
_BARRIER = """
var<workgroup> slots: array<u32, 256>;
@group(0) @binding(0) var<storage, read_write> wrong: array<u32>;
@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  slots[lane] = lane * 3u + group.x;
  workgroupBarrier();
  let peer = (lane * 97u + 1u) % 256u;
  wrong[group.x * 256u + lane] = select(0u, 1u, slots[peer] != peer * 3u + group.x);
}
"""


def _barrier(device) -> ProbeResult:
    out = device.run(device.pipeline(_BARRIER), {"wrong": buffers.Output(np.uint32, (64 * 256,))}, 64).outputs["wrong"]
    stale = int(out.sum())
    return ProbeResult("barrier-visibility", Conformance.CONFORMS if not stale else Conformance.DEVIATES,
                       f"{stale} of {out.size} reads after workgroupBarrier() missed another invocation's write")


PROBES = (
    Probe("workgroup-zero-init", "workgroup memory starts at zero",
          "WGSL §7.3 (var declarations): a workgroup variable is zero-initialised at the start of each workgroup",
          _zero_init),
    Probe("var-zero-init", "a `var` without initializer is zero each time its declaration runs",
          "WGSL §7.3: a function-scope variable without an initializer holds the zero value when its declaration "
          "executes (in a loop body: every iteration)", _loop_vars),
    Probe("select-evaluates-both", "select() evaluates both operands",
          "WGSL §17.3 (select) with §6.4 (function calls evaluate every argument)", _select),
    Probe("out-of-bounds-read", "what an out-of-bounds read returns",
          "WGSL §14.5.2 (out-of-bounds access): a read returns zero or a value from the same buffer", _out_of_bounds),
    Probe("subgroup-size", "the subgroup size reported is the one lanes run in",
          "WGSL §13.3 (subgroup_size builtin) and §17.14 (subgroupAdd over the active lanes)", _subgroup_size,
          ("subgroup",)),
    Probe("f16-overflow-subnormal", "f16 overflow and subnormals",
          "WGSL §15.7 (floating point evaluation): overflow is indeterminate, subnormals may be flushed", _f16,
          ("shader-f16",)),
    Probe("loop-trip-count", "a loop runs every trip it is given",
          "WGSL §9.4 (loop statements): a loop runs until its condition fails; the spec sets no trip limit", _loop_cap),
    Probe("barrier-visibility", "workgroupBarrier() makes workgroup writes visible",
          "WGSL §17.11 (synchronization built-ins): workgroupBarrier orders workgroup memory for the whole workgroup",
          _barrier),
)
PROBE_IDS = tuple(probe.id for probe in PROBES)


def _probes_digest() -> str:
    """What the probes ask, as text: a kept answer is stale once a probe's WGSL or clause changes."""
    texts = [_DIRTY, _READER, json.dumps(_SHAPES), _LOOP_VAR, _SELECT, _OUT_OF_BOUNDS, _SUBGROUP, _F16, _LOOP_CAP,
             _BARRIER, json.dumps([(p.id, p.clause, p.needs) for p in PROBES])]
    return hashlib.sha256("\0".join(texts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Semantics:
    """Every probe's answer on one (implementation, adapter): what results and the report carry."""

    results: tuple[ProbeResult, ...]

    def of(self, probe: str) -> ProbeResult | None:
        return next((r for r in self.results if r.probe == probe), None)

    def deviates(self, probe: str) -> bool:
        found = self.of(probe)
        return found is not None and found.verdict is Conformance.DEVIATES

    def as_record(self) -> dict:
        """{probe id: {"verdict": ..., "observed": ...}} as results files keep it."""
        return {r.probe: {"verdict": r.verdict.value, "observed": r.observed} for r in self.results}

    @classmethod
    def from_record(cls, data: dict) -> Semantics:
        return cls(tuple(ProbeResult(probe, Conformance(entry["verdict"]), entry.get("observed", ""))
                         for probe, entry in data.items()))


def run_probes(device, only: tuple[str, ...] = PROBE_IDS) -> Semantics:
    """Ask `device` every probe (those its features allow); a probe that cannot compile or run is
    `not run`, with why: the probes must never stop a check."""
    from verify.gpu.device import ShaderCompileError

    results = []
    for probe in PROBES:
        if probe.id not in only:
            continue
        missing = device.missing(probe.needs) if probe.needs else []
        if missing:
            results.append(ProbeResult(probe.id, Conformance.NOT_RUN, f"the adapter lacks {', '.join(missing)}"))
            continue
        try:
            results.append(probe.ask(device))
        except ShaderCompileError as exc:
            results.append(ProbeResult(probe.id, Conformance.NOT_RUN,
                                       f"its WGSL does not compile here: {str(exc).splitlines()[0][:200]}"))
    return Semantics(tuple(results))


def semantics_key(info) -> str:
    """The cache key of an (implementation and its version, adapter, driver) and the probes' text."""
    text = json.dumps([info.implementation, getattr(info, "implementation_version", ""), info.name, info.vendor,
                       info.backend, info.driver, _probes_digest()])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def measured_semantics(device) -> Semantics:
    """`device`'s probe answers, kept in `$VERIFY_CACHE/semantics` by semantics_key (measured once
    per machine: workers and later runs read them back). A cache that cannot be read or written
    only costs the seconds of measuring again."""
    from verify._cache import cache_dir
    from verify._files import made_once
    from verify.errors import SetupError

    path = cache_dir() / "semantics" / f"{semantics_key(device.info)}.json"

    def measure() -> str:
        return json.dumps({"info": asdict(device.info) | {"limits": None},
                           "results": run_probes(device).as_record()}, indent=1, default=str)

    try:
        text = made_once(path, measure)
        return Semantics.from_record(json.loads(text)["results"])
    except (SetupError, ValueError, KeyError, TypeError):
        return run_probes(device)


def describe(semantics: Semantics) -> list[str]:
    """Lines for `verify adapters`: each probe's verdict, title and what was seen."""
    titles = {p.id: p for p in PROBES}
    lines = []
    for result in semantics.results:
        probe = titles.get(result.probe)
        mark = {"conforms": "conforms", "deviates": "DEVIATES", "allowed": "allowed", "not run": "not run"}[
            result.verdict.value]
        lines.append(f"{mark:9} {result.probe}: {result.observed}")
        if result.verdict is Conformance.DEVIATES and probe is not None:
            lines.append(f"          ({probe.clause})")
    return lines
