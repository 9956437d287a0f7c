"""One case of one kernel as plain WebGPU calls and plain numbers: what a reproduction replays.

`capture` runs the kernel's own `launch` once against a recording device (verify.export.recording)
and keeps what it asked for: each pipeline's WGSL, each buffer's bytes and usage, the dispatches
in order, and for every output the contract judges, the buffer it is read from and, element by
element, the acceptable interval (the reference with its budget, the bit-exact mask) from the
kernel's own `expected`. Nothing of verify is needed to replay it: a browser, wgpu or Dawn creates
the buffers from the bytes, dispatches, reads the outputs back and compares.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from verify.checks.context import check_contract
from verify.errors import UsageError
from verify.export.recording import GUARD_BYTES, RecordingDevice, guard_offset
from verify.gpu.binding import buffer_binding_type
from verify.gpu.device import WANTED_LIMITS
from verify.gpu.dialect import for_tint

#: verify's feature names (wgpu's) -> WebGPU's, where they differ.
WEBGPU_FEATURES = {"subgroup": "subgroups"}
#: Element types a reproduction decodes (numpy name -> the name the scripts use).
DTYPES = {"float16": "f16", "float32": "f32", "float64": "f64", "int8": "i8", "uint8": "u8", "int16": "i16",
          "uint16": "u16", "int32": "i32", "uint32": "u32"}
#: The header line specialised modules start with, and the markers of their body files: a
#: reproduction names the kernel and its files alone.
_KERNEL_LINE = re.compile(r"^// verify kernel: ", re.M)
_SOURCE_LINE = re.compile(r"^// source: verify/kernels/", re.M)


@dataclass
class Buffer:
    """One GPU buffer: its binding's name, usage, initial bytes (poison, guard and padding
    included) and, for a buffer read back, the bytes of its payload."""

    name: str
    usage: str
    data: bytes
    readback: int | None = None

    @property
    def guard(self) -> tuple[int, int] | None:
        """(offset, length) of the guard past a read-back buffer's payload."""
        return None if self.readback is None else (guard_offset(self.readback), GUARD_BYTES)


@dataclass
class Dispatch:
    pipeline: int
    bindings: list  # [(binding number, buffer index)]
    workgroups: tuple


@dataclass
class Judged:
    """One output as the contract judges it: read from `buffer` as `dtype` elements of `shape`;
    an element v passes where lo - budget <= v <= hi + budget, and, where `exact`, only bit for bit."""

    name: str
    buffer: int
    dtype: str
    shape: tuple
    format: str
    lo: np.ndarray
    hi: np.ndarray
    budget: np.ndarray
    exact: np.ndarray | None = None


@dataclass
class Capture:
    pipelines: list  # [(wgsl, entry point, [(binding number, buffer type)])]
    buffers: list[Buffer]
    dispatches: list[Dispatch]
    outputs: list[Judged]
    features: list = field(default_factory=list)
    limits: dict = field(default_factory=dict)


def webgpu_limit(name: str) -> str:
    """verify's limit names (wgpu's kebab case) -> WebGPU's camel case."""
    head, *rest = name.split("-")
    return head + "".join(word.title() for word in rest)


def readable(wgsl: str) -> str:
    """The WGSL as a browser compiles it: `enable subgroups;` where the module uses subgroups
    (WGSL requires it; verify.gpu.dialect), and the header naming the kernel only. Line numbers
    are kept, so lines cited from the module run elsewhere are the same lines here."""
    compiled, _ = for_tint(wgsl)
    return _SOURCE_LINE.sub("// source: ", _KERNEL_LINE.sub("// kernel: ", compiled))


def capture(kernel, config: dict, wgsl: str, case, *, limits: dict | None = None, width: int | None = None) -> Capture:
    """The launch of `kernel` (config, WGSL, case) as WebGPU calls, and its outputs' intervals.

    `limits` are the device limits the check holds the kernel to; `width` a subgroup width the
    case was run at by emulation (the emulated WGSL is what is recorded then). UsageError where a
    launch cannot be replayed on its own: it dispatches nothing through the device, or feeds one
    dispatch's output into another through the host, or returns an output that is no buffer's bytes.
    """
    features = set(kernel.requirements(config))
    if width:
        features.discard("subgroup")  # emulated in workgroup memory: the adapter's subgroups are not used
    recorder = RecordingDevice(features, dict(WANTED_LIMITS, **(limits or {})), subgroup_size=width)
    device = recorder
    if width:
        from verify.instrument import EmulatingDevice

        device = EmulatingDevice(recorder, width)
    launched = kernel.launch(device, wgsl, config, case)
    if not recorder.runs:
        raise UsageError(f"{kernel.name}'s launch dispatches nothing through the WebGPU device (it runs elsewhere), "
                         "so there are no WebGPU calls to reproduce")
    expected = kernel.expected(config, case)
    check_contract(kernel, expected, launched)

    buffers, dispatches, where = [], [], {}
    for number, run in enumerate(recorder.runs):
        _refuse_host_round_trip(kernel, number, run, recorder.runs[:number])
        bindings = []
        for bound in run.buffers:
            where[number, bound.name] = len(buffers)
            bindings.append((bound.binding.binding, len(buffers)))
            buffers.append(Buffer(bound.name, buffer_binding_type(bound.binding), bound.data,
                                  bound.readback.nbytes if bound.readback else None))
        dispatches.append(Dispatch(run.pipeline.index, bindings, run.workgroups))

    outputs = [_judged(kernel, item, launched.outputs[item.name], recorder.runs, where) for item in expected]
    pipelines = [(readable(p.wgsl), p.entry_point, [(b.binding, buffer_binding_type(b)) for b in p.interface.bindings])
                 for p in recorder.pipelines]
    return Capture(pipelines, buffers, dispatches, outputs,
                   sorted(WEBGPU_FEATURES.get(f, f) for f in features),
                   {webgpu_limit(k): v for k, v in recorder.limits.items()})


def _judged(kernel, item, value, runs, where) -> Judged:
    """`item` (an Expected) with the buffer its output is read from: the one whose marker bytes
    the output's bytes begin (latest run first, as a later dispatch's output wins)."""
    array = np.ascontiguousarray(value)
    if array.dtype.name not in DTYPES:
        raise UsageError(f"{kernel.name}: output {item.name!r} is {array.dtype}, which a reproduction cannot decode")
    array = array.astype(array.dtype.newbyteorder("<"), copy=False)
    data = array.tobytes()
    for number in reversed(range(len(runs))):
        for name, marker in runs[number].markers.items():
            if data and marker[:len(data)] == data:
                shape = tuple(array.shape)
                lo = np.broadcast_to(np.asarray(item.lo, np.float64), shape)
                hi = np.broadcast_to(np.asarray(item.hi, np.float64), shape)
                budget = np.broadcast_to(np.asarray(item.budget, np.float64), shape)
                exact = None if item.exact is None else np.broadcast_to(np.asarray(item.exact, bool), shape)
                return Judged(item.name, where[number, name], DTYPES[array.dtype.name], shape, item.dtype,
                              lo, hi, budget, exact)
    raise UsageError(f"{kernel.name}: output {item.name!r} is not the bytes of any buffer the launch read back "
                     "(launch computes it on the host), so a reproduction cannot read it from the GPU")


def _refuse_host_round_trip(kernel, number: int, run, earlier) -> None:
    """A dispatch whose input holds an earlier dispatch's output came there through the host; the
    recorded bytes would then be the recording's markers, not the kernel's values."""
    for before in earlier:
        for name, marker in before.markers.items():
            probe = marker[:32]
            if len(probe) >= 16 and any(probe in bound.data for bound in run.buffers):
                raise UsageError(f"{kernel.name}'s launch feeds the output {name!r} of one dispatch into dispatch "
                                 f"{number + 1} through the host; a reproduction replays recorded bytes and cannot")
