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
from typing import TYPE_CHECKING, cast

import numpy as np

from verify.checks.context import check_contract
from verify.errors import UsageError
from verify.export.recording import GUARD_BYTES, RecordingDevice, guard_offset
from verify.gpu.binding import buffer_binding_type
from verify.gpu.device import WANTED_LIMITS
from verify.gpu.dialect import for_tint

if TYPE_CHECKING:
    from verify.instrument import EmulatingDevice

#: verify's feature names (wgpu's) -> WebGPU's, where they differ.
WEBGPU_FEATURES = {"subgroup": "subgroups"}
#: Element types a reproduction decodes (numpy name -> the name the scripts use). No 64-bit type:
#: WebGPU has none, so no buffer holds one (conform, _refuse_wide).
DTYPES = {"float16": "f16", "float32": "f32", "int8": "i8", "uint8": "u8", "int16": "i16", "uint16": "u16",
          "int32": "i32", "uint32": "u32"}
#: WGSL's scalar types -> the numpy types whose bytes they are.
WGSL_NUMPY: dict[str, type[np.number]] = {"f16": np.float16, "f32": np.float32, "i32": np.int32, "u32": np.uint32}
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
    return _ORT_PROVENANCE.sub(_ort_adapter, _SOURCE_LINE.sub("// source: ", _KERNEL_LINE.sub("// kernel: ", compiled)))


#: The line naming where onnxruntime-web generated a program (verify.sources.ort.cache): its
#: version, the adapter it ran on (`llvmpipe: Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6) 0.0.1 (vendor mesa)`)
#: and the run (`MatMulNBits(...)`, `GroupQueryAttention(...)`).
_ORT_PROVENANCE = re.compile(r"^(// onnxruntime-web \S+ on )(.*?)(: [A-Z]\w*\(.*)$", re.M)


def _ort_adapter(found: re.Match) -> str:
    """The provenance line with the adapter's name and vendor only: ORT's program follows the
    adapter's vendor and features (verify.sources.ort.dp4a.captures), not the driver's version, which
    names the machine whose cache it came from and would make the same export differ elsewhere."""
    adapter = found[2]
    vendor = re.search(r" \(vendor [^)]*\)$", adapter)
    return f"{found[1]}{adapter.split(':', 1)[0].strip()}{vendor[0] if vendor else ''}{found[3]}"


def capture(kernel, config: dict, wgsl: str, case, *, limits: dict | None = None, width: int | None = None) -> Capture:
    """The launch of `kernel` (config, WGSL, case) as WebGPU calls, and its outputs' intervals.

    `limits` are the device limits the check holds the kernel to; `width` a subgroup width the
    case was run at by emulation (the emulated WGSL is what is recorded then). UsageError where a
    launch cannot be replayed on its own: it dispatches nothing through the device, or feeds one
    dispatch's output into another through the host, or returns an output that is no buffer's bytes.
    """
    features, recorder, launched = _record(kernel, config, wgsl, case, limits, width)
    if not recorder.runs:
        raise UsageError(f"{kernel.name}'s launch dispatches nothing through the WebGPU device (it runs elsewhere), "
                         "so there are no WebGPU calls to reproduce")
    _refuse_wide(kernel, recorder.runs)
    expected = kernel.expected(config, case)
    check_contract(kernel, expected, launched)

    buffers: list[Buffer] = []
    dispatches: list[Dispatch] = []
    where: dict[tuple[int, str], int] = {}
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


def _record(kernel, config: dict, wgsl: str, case, limits: dict | None, width: int | None):
    """(features, recorder, launched): the kernel's launch of `case`, run on a recording device."""
    features = set(kernel.requirements(config))
    if width:
        features.discard("subgroup")  # emulated in workgroup memory: the adapter's subgroups are not used
    recorder = RecordingDevice(features, dict(WANTED_LIMITS, **(limits or {})), subgroup_size=width)
    device: RecordingDevice | EmulatingDevice = recorder
    if width:
        from verify.instrument import EmulatingDevice

        device = EmulatingDevice(recorder, width)
    return features, recorder, kernel.launch(device, wgsl, config, case)


def _wide(dtype) -> bool:
    """A numeric type of 8 bytes (float64, int64, uint64): WGSL has none."""
    dtype = np.dtype(dtype)
    return dtype.kind in "fiu" and dtype.itemsize == 8


def _refuse_wide(kernel, runs) -> None:
    """UsageError where the launch bound an array of a 64-bit type: the kernel reads its bytes as
    twice as many 32-bit values, so the reproduction would replay garbage and judge it as float64."""
    for run in runs:
        for name, dtype in run.dtypes.items():
            if _wide(dtype):
                raise UsageError(f"{kernel.name}'s launch binds {name!r} as {dtype}, a type WebGPU does not have "
                                 f"(the kernel would read its bytes as twice as many 32-bit values), so there is no "
                                 "reproduction of it; give the case the kernel's own dtypes")


def element_type(binding) -> str | None:
    """The WGSL scalar type a buffer binding's elements are made of (`array<vec4<f16>>` -> f16),
    or None for a struct or a type verify does not model."""
    from verify.wgsl.types import Array, Atomic, Matrix, Scalar, Vector

    store = binding.store
    while isinstance(store, (Array, Atomic, Matrix, Vector)):
        store = store.element
    if isinstance(store, Scalar) and store.wgsl in WGSL_NUMPY:
        return store.wgsl
    found = re.fullmatch(r"\s*array<\s*(?:(?:vec[234]|mat[234]x[234]|atomic)<\s*)?(f16|f32|i32|u32)\b.*", binding.type)
    return found[1] if found else None


def conform(kernel, config: dict, wgsl: str, case, *, limits: dict | None = None,
            width: int | None = None) -> tuple:
    """(case, notes): `case` with each array of a 64-bit type (float64, int64, uint64) that the
    launch binds as it is converted to the element type the WGSL declares for that binding, and
    a note per conversion.

    WebGPU has no 64-bit types. A case file written by hand or by another tool may hold float64
    arrays; bound as they are, the kernel reads their bytes as twice as many f32 values, and the
    reproduction would replay that garbage (and judge outputs read back as float64). Converted, the
    kernel gets the case's values (floats rounded to nearest), and the reference is computed from
    the values it gets. UsageError (one line) where the conversion would change what the case is:
    a float past the type's range, an integer outside it, or an array whose binding's type is not
    one element type (a struct).
    """
    wide = {name: array for name, array in case.arrays.items() if _wide(array.dtype) and array.size}
    if not wide:
        return case, []
    _, recorder, _ = _record(kernel, config, wgsl, case, limits, width)
    targets: dict = {}
    for run in recorder.runs:
        for bound in run.buffers:
            for name, array in wide.items():
                raw = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
                if bound.data[:len(raw)] == raw:
                    targets.setdefault(name, set()).add(element_type(bound.binding))
    converted, notes = {}, []
    for name, found in targets.items():
        array = wide[name]
        if len(found) != 1 or None in found:
            raise UsageError(f"{kernel.name}: the case's {name} is {array.dtype}, which WebGPU has no type for, and "
                             f"the launch binds it as {' and '.join(sorted(map(str, found)))}, not one element type "
                             "to convert it to; give the case the kernel's own dtypes")
        [scalar] = found
        target = np.dtype(WGSL_NUMPY[scalar])
        if array.dtype.kind == "f" or target.kind == "f":  # floats, and integers bound as a float type
            with np.errstate(over="ignore"):
                value = array.astype(target)
            if (np.isfinite(array) & ~np.isfinite(value)).any():
                raise UsageError(f"{kernel.name}: the case's {name} is {array.dtype} and holds values past {scalar}'s "
                                 f"range, the type the kernel binds it as (WebGPU has no {array.dtype})")
        else:
            limits_of = np.iinfo(cast("np.dtype[np.integer]", target))  # an integer to i32 or u32
            if array.min() < limits_of.min or array.max() > limits_of.max:
                raise UsageError(f"{kernel.name}: the case's {name} is {array.dtype} and holds values outside "
                                 f"{scalar}, the type the kernel binds it as (WebGPU has no {array.dtype})")
            value = array.astype(target)
        converted[name] = value
        notes.append(f"{name} {array.dtype} -> {scalar}")
    if not converted:
        return case, []
    return case.replace(converted), notes


def _judged(kernel, item, value, runs, where) -> Judged:
    """`item` (an Expected) with the buffer its output is read from: the one whose marker bytes
    the output's bytes begin (latest run first, as a later dispatch's output wins)."""
    array = np.ascontiguousarray(value)
    if array.dtype.name not in DTYPES:
        raise UsageError(f"{kernel.name}: output {item.name!r} is {array.dtype}, which a reproduction cannot decode "
                         "(WebGPU has no 64-bit types)")
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
