"""`dp4a.quantize`: ORT's DP4A activation quantization, with a block max that holds for any subgroup width.

A [..., K] (f16 or f32, K % 128 == 0; leading axes are rows) becomes int8 codes packed four per
u32 in K order and one scale per 128-value block, in A's dtype, by exactly ORT's arithmetic
(docs/ort-dp4a.md §4). The design is PR microsoft/onnxruntime#33560's: each lane
reduces its own vec4 first, then an XOR butterfly finds the block max, stopping below 32 lanes
so subgroups of 64 or 128 lanes never mix blocks; subgroups narrower than a block (16 on Intel,
8 on lavapipe, 4 on SwiftShader) combine their maxima through workgroup memory.

`reduce` picks how lanes combine: native subgroup operations; a tree in workgroup memory for
adapters without subgroups; or subgroups emulated in workgroup memory at a chosen `width`, with
the native variant's butterfly, so the block independence that matters at 64 and 128 lanes is
checked on an adapter that only has 8.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.cases.values import with_grid_limit, wrapped_grid
from verify.errors import UsageError
from verify.gpu import Output
from verify.gpu.device import SUBGROUP_WIDTHS
from verify.gpu.uniforms import pack_struct
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.kernels.dp4a.common import A_BLOCK, DTYPE, check_shape
from verify.kernels.dp4a.quantize_cases import quantize_cases
from verify.kernels.dp4a.quantize_fastpath import legal_sets
from verify.kernels.specialize import body, specialize
from verify.references.dp4a_quant import unpack_codes

REDUCE = ConfigKey("reduce", "subgroup", ("subgroup", "workgroup", "emulated"),
                   "how lanes find a block's max: native subgroup ops (needs the subgroup feature), a "
                   "workgroup-memory tree, or subgroups of `width` lanes emulated in workgroup memory")
WIDTH = ConfigKey("width", 0, (), "lanes per emulated subgroup, reduce=emulated only: 4, 8, 16, 32, 64 or 128 "
                  "(0: no emulation)")

#: Lanes (vec4s of A) per 128-value block.
BLOCK_LANES = A_BLOCK // 4
#: Lanes per workgroup: four blocks, and room for the widest subgroup WebGPU allows (128).
WORKGROUP_LANES = 128
MAX_GROUPS_X = 65535
#: The WGSL files of each variant, in module order: lanes and their shuffle, the block max, the body.
SOURCES = {
    "subgroup": ("quantize_subgroup.wgsl", "quantize_butterfly.wgsl", "quantize.wgsl"),
    "emulated": ("quantize_emulated.wgsl", "quantize_butterfly.wgsl", "quantize.wgsl"),
    "workgroup": ("quantize_workgroup.wgsl", "quantize.wgsl"),
}
#: The label of the unpacked int8 codes: not a float format, so metrics count errors in codes.
CODE_DTYPE = "i8"


def legal_outputs(a: np.ndarray, dtype: str) -> list[Expected]:
    """Codes and scales must lie in the legal sets of references.dp4a_quant, with no budget.

    Nothing is approximate here, so the budget is 0: a kernel passes only if every code and
    every scale is one a conforming WGSL implementation of ORT's formula may produce.
    quantize_blocks derives those sets from the WGSL spec: t = a/m is any T-value within 2.5 ULP
    of a/m (m inside the divisor range [2^-14, 2^14] for f16, [2^-126, 2^126] for f32), the
    f32 product 127 t may round either way, the snorm rounding may break ties either way
    (lavapipe rounds half to even: pack4x8snorm(-0.5) = -64, where the spec's floor(0.5 + x)
    gives -63), and subnormals may flush to zero. The scale m/127 is any T-value within 2.5 ULP,
    or 0 where it is subnormal.

    One narrowing: where a block is all zeros this contract requires codes 0. ORT divides 0/0
    there and pack4x8snorm(NaN) is any byte (the reference allows -128..127; lavapipe gives -127).
    That is harmless only while the scale multiplying the codes is exactly 0, so the guard
    (divisor 1 for a zero block) is part of this kernel's promise.
    """
    code_lo, code_hi, scale_lo, scale_hi = legal_sets(a, dtype)  # quantize_blocks's, fast
    block_max = np.abs(a).reshape(*a.shape[:-1], -1, A_BLOCK).max(axis=-1)
    zero_block = np.repeat(block_max == 0, A_BLOCK, axis=-1)
    code_lo = np.where(zero_block, 0, code_lo)
    code_hi = np.where(zero_block, 0, code_hi)
    no_budget = np.zeros(())
    return [
        Expected("codes", code_lo.astype(np.float64), code_hi.astype(np.float64), no_budget, CODE_DTYPE),
        Expected("scales", scale_lo, scale_hi, no_budget, dtype),
    ]


def _activation_shape(a: np.ndarray) -> tuple[int, int]:
    """(rows, K) of A [..., K], with DP4A's shape rules checked."""
    if a.ndim < 2:
        raise UsageError(f"A must be [..., M, K], got shape {a.shape}")
    k = a.shape[-1]
    rows = int(np.prod(a.shape[:-1]))
    check_shape(m=rows, k=k)
    return rows, k


class Quantize(Kernel):
    name = "dp4a.quantize"
    family = "dp4a"
    summary = "A [..., K] -> int8 codes (4 per u32) and an A-dtype scale per 128 values, as ORT's DP4A path"
    reference = "verify.references.dp4a_quant.quantize_blocks"
    config_keys: tuple[ConfigKey, ...] = (DTYPE, REDUCE, WIDTH)
    checks = ("reference", "implementations", "toggles")
    output_axes = {"codes": ("row", "k"), "scales": ("row", "block")}
    budget_function = staticmethod(legal_outputs)

    def validate(self, config):
        reduce, width = config["reduce"], config["width"]
        if reduce == "emulated" and width == 0:
            raise UsageError("reduce=emulated needs width=W, the emulated subgroup width "
                             f"({', '.join(map(str, SUBGROUP_WIDTHS))})")
        if reduce != "emulated" and width != 0:
            raise UsageError(f"width={width} applies only to reduce=emulated (reduce={reduce} "
                             "uses the adapter's own subgroups or none)")
        if width and width & (width - 1):
            raise UsageError(f"width={width}: an emulated subgroup width must be a power of two, as WebGPU's are")
        if width and width not in SUBGROUP_WIDTHS:
            raise UsageError(f"width={width}: WebGPU subgroups have 4 to 128 lanes "
                             f"({', '.join(map(str, SUBGROUP_WIDTHS))})")

    def requirements(self, config):
        needs = {"shader-f16"} if config["dtype"] == "f16" else set()
        if config["reduce"] == "subgroup":
            needs.add("subgroup")
        return frozenset(needs)

    def gate_configs(self, profile):
        configs = [{"dtype": t, "reduce": r} for r in ("subgroup", "workgroup") for t in ("f16", "f32")]
        configs += [{"dtype": ("f32", "f16")[i % 2], "reduce": "emulated", "width": w}
                    for i, w in enumerate(SUBGROUP_WIDTHS)]
        return [self.config(c) for c in configs]

    def wgsl(self, config):
        constants = {"BLOCK_LANES": BLOCK_LANES, "WORKGROUP_LANES": WORKGROUP_LANES}
        if config["reduce"] == "emulated":
            constants["WIDTH"] = config["width"]
        source = "\n".join(body(__package__, name) for name in SOURCES[config["reduce"]])
        return specialize(self.name, source, config, enables=("f16",) if config["dtype"] == "f16" else (),
                          aliases={"a_t": config["dtype"]}, constants=constants)

    def cases(self, config, profile):
        return with_grid_limit(quantize_cases(config["dtype"], profile))

    def launch_paths(self, config, case):
        rows, k = _activation_shape(case["a"])
        groups = -(-(rows * k // 4) // WORKGROUP_LANES)
        return ("grid wrapped into y",) if groups > (case.params.get("grid_limit") or MAX_GROUPS_X) else ("flat grid",)

    def launch(self, device, wgsl, config, case):
        a = case["a"]
        rows, k = _activation_shape(a)
        vec4_count = rows * k // 4
        groups = -(-vec4_count // WORKGROUP_LANES)
        grid = wrapped_grid(groups, case.params.get("grid_limit") or MAX_GROUPS_X)
        pipeline = device.pipeline(wgsl)
        uniform = pack_struct(pipeline.interface.structs["QuantizeParams"], {"vec4_count": vec4_count})
        run = device.run(pipeline, {
            "a": a,
            "codes": Output(np.uint32, (*a.shape[:-1], k // 4)),
            "scales": Output(a.dtype, (*a.shape[:-1], k // A_BLOCK)),
            "params": uniform,
        }, grid)
        outputs = dict(run.outputs, codes=unpack_codes(run.outputs["codes"]))
        return Launched(outputs, run.guard_intact, run.timing)

    def expected(self, config, case):
        _activation_shape(case["a"])
        return legal_outputs(case["a"], config["dtype"])

    def features(self, case):
        rows, k = _activation_shape(case["a"])
        return {"rows": rows, "k": k, "blocks": rows * k // A_BLOCK}
