"""What every WebGPU device verify opens offers, whichever implementation runs it.

`Device` is the interface (a Protocol): compile a pipeline from WGSL (cached by the text's hash),
bind numpy arrays to it by WGSL binding name, dispatch once and read every writable buffer back,
poisoned before and guarded past its end. wgpu (verify.gpu.wgpu_device), Dawn (verify.gpu.dawn) and
the instrumented wrappers (verify.instrument) implement it; kernels and checks use nothing else,
so a kernel runs unchanged on each. The types a run produces live here too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from verify.errors import FailureKind, KernelError

if TYPE_CHECKING:
    from verify.wgsl import Interface

#: Features requested whenever the adapter has them; kernels declare which they need.
OPTIONAL_FEATURES = ("shader-f16", "subgroup", "timestamp-query")
#: TVM's web runtime asks for 10 storage buffers (its decode kernel binds 9) and 32 KiB of
#: workgroup storage (a kernel's `limits` may hold it to less). Buffer sizes are the adapter's on
#: both implementations: wgpu-py gives every limit not named here at the adapter's value, and
#: Dawn's devices ask for the adapter's buffer sizes (verify.gpu.dawn.device.ADAPTER_BUFFER_LIMITS),
#: as TVM's and ORT's web runtimes do.
WANTED_LIMITS = {"max-storage-buffers-per-shader-stage": 10, "max-compute-workgroup-storage-size": 32768}
#: Subgroup widths WebGPU allows (subgroupMinSize >= 4, subgroupMaxSize <= 128, powers of two).
SUBGROUP_WIDTHS = (4, 8, 16, 32, 64, 128)


class ShaderCompileError(KernelError):
    """The WGSL under test does not compile or validate on this device.

    `compiler` names the WGSL compiler that refused it (the implementation's, e.g. "Naga" or
    "Tint") and the message is that compiler's own, in full.
    """

    kind = FailureKind.COMPILE_ERROR

    def __init__(self, message: str, compiler: str = ""):
        super().__init__(message)
        self.compiler = compiler


@dataclass
class Timing:
    """Seconds spent per stage of one run; gpu_ns from timestamp queries when available."""

    upload: float = 0.0
    dispatch: float = 0.0
    readback: float = 0.0
    gpu_ns: float | None = None


@dataclass
class Launched:
    """What one dispatch produced: the writable buffers read back (by binding name), whether each
    one's guard past its end is intact (False: the kernel wrote past the end), and the timing.

    `Device.run` returns one, and a kernel's `launch` returns one (the contract's name for it),
    renaming outputs to the contract's names where the WGSL's differ.
    """

    outputs: dict
    guard_intact: dict = field(default_factory=dict)
    timing: Timing = field(default_factory=Timing)


@dataclass(frozen=True)
class AdapterInfo:
    """What a user needs to know to interpret a result: which adapter, under which implementation.

    `backend` is the native graphics API under the implementation (Vulkan, Metal, D3D12, ...);
    `implementation` is the WebGPU implementation itself (verify.gpu.implementations: "wgpu",
    "dawn", ...). An adapter (the driver and device) and an implementation (the WGSL compiler and
    the WebGPU validation on top of it) fail independently, so results name both.
    """

    name: str
    vendor: str
    backend: str
    adapter_type: str
    driver: str
    features: tuple[str, ...] = field(default=())
    limits: dict = field(default_factory=dict, compare=False, hash=False)
    implementation: str = ""
    #: The implementation's own version, as its users name it (e.g. "wgpu-py 0.32.0, wgpu-native
    #: 29.0.1.1"): what a finding against the implementation is about, and what the semantics
    #: probes' answers are kept by (verify.gpu.semantics).
    implementation_version: str = ""

    @property
    def label(self) -> str:
        """Adapter and implementation as one name, e.g. "llvmpipe (LLVM 15.0.6, 256 bits) [Vulkan, dawn]"."""
        return f"{self.name} [{self.backend}, {self.implementation}]"

    def matches(self, text: str) -> bool:
        """Whether `text` (case-insensitive) occurs in the name, vendor, backend or driver."""
        return text.lower() in f"{self.name} {self.vendor} {self.backend} {self.driver}".lower()

    def as_record(self) -> dict:
        return {
            "name": self.name,
            "vendor": self.vendor,
            "backend": self.backend,
            "type": self.adapter_type,
            "driver": self.driver,
            "implementation": self.implementation,
            "implementation_version": self.implementation_version,
        }


@runtime_checkable
class Pipeline(Protocol):
    """A compiled compute pipeline: the WGSL under test, its hash, entry point and interface."""

    @property
    def wgsl(self) -> str: ...

    @property
    def sha256(self) -> str: ...

    @property
    def entry_point(self) -> str: ...

    @property
    def interface(self) -> Interface: ...


@runtime_checkable
class Device(Protocol):
    """A WebGPU device as kernels and checks use it.

    `pipeline(wgsl)` compiles (cached by the text's sha256; ShaderCompileError with the compiler's
    message); `run(pipeline, resources, workgroups)` binds `resources` by binding name (ndarray or
    bytes: inputs; verify.gpu.Output / InOut: read back), dispatches once and returns a Launched.
    `info` names the adapter and implementation; `features` and `limits` are what was granted;
    `subgroup_size`, `zeroes_workgroup_memory` and `semantics` are measured by dispatches
    (verify.gpu.probes, verify.gpu.semantics).
    """

    info: AdapterInfo
    features: frozenset
    limits: dict

    def pipeline(self, wgsl: str, entry_point: str | None = None) -> Pipeline: ...

    def run(self, pipeline, resources: dict, workgroups, *, timestamps: bool = False) -> Launched: ...

    def missing(self, features) -> list[str]: ...

    @property
    def subgroup_size(self) -> int | None: ...

    @property
    def zeroes_workgroup_memory(self) -> bool: ...

    @property
    def semantics(self): ...  # verify.gpu.semantics.Semantics
