"""What one ONNX Runtime run did on the GPU: the programs it dispatched and what each dispatch bound.

A run of a session (verify.sources.ort.runtime) comes back as an `OrtRun`: the session's
outputs, and its `dispatches` in order, each naming its `Program` (ORT labels a shader module
after its program, e.g. DP4AMatMulQuantize, and the WGSL is exactly what ORT handed to Dawn), its
workgroup counts, and the buffer range of every binding, with the range's bytes when the run
was asked for snapshots (taken right after the dispatch's compute pass).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The programs of ORT's DP4A path (contrib_ops/webgpu/quantization/dp4a_matmul_nbits.cc).
QUANTIZE = "DP4AMatMulQuantize"
TILE = "DP4AMatMulNBits"
SMALL_M = "DP4AMatMulNBitsSmallMProgram"
DP4A_PROGRAMS = (QUANTIZE, TILE, SMALL_M)
#: Where each program's WGSL is generated in microsoft/onnxruntime: its host code and templates.
SOURCE_FOLDER = "onnxruntime/contrib_ops/webgpu/quantization"
PROGRAM_FILES = {
    QUANTIZE: ("dp4a_matmul_nbits.cc", "dp4a_quantize.wgsl.template"),
    TILE: ("dp4a_matmul_nbits.cc", "dp4a_matmul.wgsl.template", "dp4a_matmul_common.wgsl.template"),
    SMALL_M: ("dp4a_matmul_nbits.cc", "dp4a_matmul_small_m.wgsl.template", "dp4a_matmul_common.wgsl.template"),
}


@dataclass(frozen=True)
class Program:
    """A compute pipeline ORT created: its shader module's label, entry point and WGSL."""

    label: str
    entry_point: str
    wgsl: str


@dataclass(frozen=True)
class BoundRange:
    """One binding of a dispatch: which buffer (ORT's, numbered by creation), the bound range,
    its usage flags as ORT asked for them, and its bytes right after the dispatch (if taken)."""

    group: int
    binding: int
    buffer: int
    offset: int
    size: int
    usage: int
    data: bytes | None

    def array(self, dtype, count: int | None = None) -> np.ndarray:
        """The snapshot as `count` elements of `dtype` from the start of the range."""
        if self.data is None:
            raise ValueError("this run was not asked for snapshots")
        values = np.frombuffer(self.data, dtype=dtype)
        return values if count is None else values[:count]


@dataclass(frozen=True)
class Dispatch:
    program: Program
    workgroups: tuple[int, int, int]
    bindings: tuple[BoundRange, ...]

    def binding(self, number: int, group: int = 0) -> BoundRange:
        for bound in self.bindings:
            if (bound.group, bound.binding) == (group, number):
                return bound
        raise KeyError(f"{self.program.label} has no binding {group}:{number}")


@dataclass(frozen=True)
class OrtRun:
    """A session's outputs by name, and the dispatches the run made, in order."""

    outputs: dict
    dispatches: tuple[Dispatch, ...]

    @property
    def labels(self) -> tuple[str, ...]:
        """The programs dispatched, in order."""
        return tuple(d.program.label for d in self.dispatches)

    def dispatch(self, label: str) -> Dispatch:
        """The first dispatch of the program called `label`."""
        for dispatch in self.dispatches:
            if dispatch.program.label == label:
                return dispatch
        raise KeyError(f"the run dispatched no {label} (it dispatched {', '.join(self.labels) or 'nothing'})")

    def program(self, label: str) -> Program:
        return self.dispatch(label).program


def parse_run(reply: dict, blobs: list[bytes]) -> OrtRun:
    """An OrtRun from the runner's reply (verify/sources/ort/runner.mjs) and its blobs."""
    outputs = {}
    for i, spec in enumerate(reply["outputs"]):
        dtype = np.dtype(spec["type"])
        outputs[spec["name"]] = np.frombuffer(blobs[i], dtype=dtype).reshape(spec["dims"]).copy()
    programs = [Program(p["label"], p["entry_point"], p["wgsl"]) for p in reply["programs"]]
    dispatches = []
    for raw in reply["dispatches"]:
        if raw["program"] < 0:
            raise ValueError("a dispatch used a pipeline created before the recording hooks")
        bindings = tuple(BoundRange(b["group"], b["binding"], b["buffer"], b["offset"], b["size"], b["usage"],
                                    None if b["blob"] is None else blobs[b["blob"]]) for b in raw["bindings"])
        dispatches.append(Dispatch(programs[raw["program"]], tuple(raw["workgroups"]), bindings))
    return OrtRun(outputs, tuple(dispatches))
