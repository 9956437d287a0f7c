"""How ggml-webgpu's host code binds and launches a program, for verify's launches of its WGSL.

ggml-webgpu binds each program's tensors at the binding numbers its WGSL declares and passes one
uniform struct `params` of u32 words (f32 values by their bits) in the order its host code pushes
them (ggml-webgpu.cpp, e.g. L2021-2064 for flash attention). verify binds by the WGSL's names
and packs `params` by the struct the program declares, field by field (verify.gpu.uniforms), so
a field the launch does not supply, or one the program no longer declares, is an error, not a
silently shifted word.
"""

from __future__ import annotations

from dataclasses import dataclass

from verify.errors import UsageError
from verify.gpu.uniforms import pack_struct
from verify.kernels.contract import ConfigKey, Upstream
from verify.kernels.specialize import config_line
from verify.sources.llamacpp import programs, source
from verify.sources.llamacpp.selection import Adapter, Instance

#: The adapter's subgroup size range the programs are instantiated for (selection.Adapter): the
#: gate takes 4..128, the widest an adapter may report, so the program must be right at every
#: width a dispatch may get, and every emulated width is one such an adapter may run at.
SUBGROUP_MIN = ConfigKey("subgroup_min", 4, (4, 8, 16, 32, 64, 128), "the adapter's subgroupMinSize ggml-webgpu reads")
SUBGROUP_MAX = ConfigKey("subgroup_max", 128, (4, 8, 16, 32, 64, 128),
                         "the adapter's subgroupMaxSize ggml-webgpu reads")


def adapter_of(config: dict, **more) -> Adapter:
    """The adapter a config instantiates the programs for: an NVIDIA-like adapter (the MMVQ path
    needs an AMD, Intel or NVIDIA vendor string) with the config's subgroup range and verify's
    device limits (32 KiB of workgroup storage unless the config says otherwise, 256 invocations)."""
    try:
        return Adapter(min_subgroup=config["subgroup_min"], max_subgroup=config["subgroup_max"], **more)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def check_width(device, config: dict) -> None:
    """A run on subgroups outside the range the program was instantiated for tests an adapter that
    cannot exist (ggml-webgpu sizes the program by subgroupMinSize and subgroupMaxSize)."""
    width = getattr(device, "subgroup_size", None)
    if width and not config["subgroup_min"] <= width <= config["subgroup_max"]:
        from verify.errors import SetupError

        raise SetupError(f"this config instantiates ggml-webgpu's program for subgroups of {config['subgroup_min']} to "
                         f"{config['subgroup_max']} lanes; the device runs {width}")


def bind(pipeline, arrays: dict, params: dict) -> dict:
    """Resources by the WGSL's binding names: storage bindings from `arrays`, the struct `params`
    packed from `params`."""
    resources = {}
    for binding in pipeline.interface.bindings:
        if binding.address_space == "uniform":
            struct = pipeline.interface.struct_of(binding)
            missing = [name for name, _ in struct.members if name not in params]
            if missing:
                raise UsageError(f"params field(s) {', '.join(missing)} are none the launch supplies")
            resources[binding.name] = pack_struct(struct, params)
        elif binding.name in arrays:
            resources[binding.name] = arrays[binding.name]
        else:
            raise UsageError(f"binding {binding.name!r} is none the launch supplies ({', '.join(arrays)})")
    return resources


def header(kernel: str, config: dict) -> str:
    return f"// verify kernel: {kernel}\n{config_line(config)}\n"


MODULE = "// ---- module: {} ----\n"


def modules_text(kernel: str, config: dict, instances: list[Instance]) -> str:
    """The header, then each program as its own module (`// ---- module: <variant> ----`)."""
    return header(kernel, config) + "".join(MODULE.format(i.variant) + programs.load(i) for i in instances)


def split_modules(wgsl: str) -> dict[str, str]:
    """The modules of a text modules_text wrote, by variant (the header kept on each)."""
    head, *parts = wgsl.split("// ---- module: ")
    found = {}
    for part in parts:
        name, text = part.split(" ----\n", 1)
        found[name] = head + text
    if not found:
        found[""] = wgsl
    return found


@dataclass(frozen=True)
class Program:
    """One program of a kernel's text: its variant name and its files upstream."""

    variant: str
    files: tuple[str, ...]


def upstream(programs_used: list[Program]) -> Upstream:
    files = tuple(f"{source.BACKEND}/{name}" for program in programs_used for name in program.files)
    return Upstream(source.PROJECT, f"{source.DISTRIBUTION} {source.VERSION} (vendored llama.cpp)",
                    "programs " + ", ".join(f"`{p.variant}`" for p in programs_used)
                    + " as ggml-webgpu's shader library instantiates them (ggml-webgpu-shader-lib.hpp)", files)
