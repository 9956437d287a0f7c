"""ggml-webgpu's ROPE: `llamacpp.ops.rope`.

rope.wgsl is one program for every rope mode (the mode is a param): each invocation takes two
elements of dst, the pair a normal rope rotates (2k, 2k + 1) or, for NeoX, the pair (k,
k + n_dims/2) that its even index names; channels outside the window [n_offs, n_offs + n_dims)
are copied. The angle is `f32(pos) * pow(theta_scale, f32(k))`, divided by the frequency factor
(FF_FUNC), scaled by freq_scale with YaRN's ramp (`rope_yarn`), and cos/sin are scaled by
mscale. verify instantiates it as the shader library does (selection.rope_instance: TYPE_F32 or
TYPE_F16, INPLACE, FF_FUNC, WG_SIZE) and launches it as the host does (ggml-webgpu.cpp
L2713-2800: theta_scale and the YaRN correction dims computed in f32 on the host, strides in
elements, ceil(nelements / WG_SIZE) workgroups), and judges it against references.ggml_rope.rope
(given the host's f32 params) within verify.budgets.llamacpp_ops.rope_budget. Modes covered:
normal and NeoX, with YaRN, frequency factors and a moved window; not the multi-section
(mrope, imrope) and vision modes.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.llamacpp_ops import rope_budget
from verify.gpu import InOut, Output
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.references.ggml_rope import rope
from verify.sources.llamacpp import programs, selection
from verify.sources.llamacpp.launch import Program, adapter_of, bind, header, upstream
from verify.sources.llamacpp.ops.rope_cases import MODES, make_case, rope_cases

DTYPE = ConfigKey("dtype", "f32", selection.ROPE_TYPES, "src0's and dst's type (TYPE_F32, TYPE_F16)")
BINDING = ConfigKey("binding", "separate", ("separate", "inplace"),
                    "dst its own tensor, or written over src0 (INPLACE, ggml_rope_ext_inplace)")
FREQ_FACTORS = ConfigKey("freq_factors", False, (False, True),
                         "a frequency-factor tensor src2 divides each pair's angle (FF_FUNC)")
WG_SIZE = ConfigKey("wg_size", 256, (64, 128, 256),
                    "the adapter's maxComputeInvocationsPerWorkgroup, which ggml-webgpu takes as WG_SIZE")


def f32(value: float) -> float:
    """A float as the f32 op param ggml stores and the host passes."""
    return float(np.float32(value))


class Rope(Kernel):
    """ROPE: each pair of the window rotated by p theta_scale^k (YaRN-scaled), times mscale."""

    name = "llamacpp.ops.rope"
    family = "llamacpp.ops"
    source = "llamacpp"
    summary = ("llama.cpp ggml-webgpu's rope: ROPE (normal and NeoX; YaRN, frequency factors, a moved window), "
               "two elements an invocation")
    reference = "verify.references.ggml_rope.rope"
    checks = ("reference",)
    config_keys = (DTYPE, BINDING, FREQ_FACTORS, WG_SIZE)
    output_axes = {"y": ("batch", "token", "head", "channel")}
    budget_function = staticmethod(rope_budget)

    def requirements(self, config):
        return frozenset({"shader-f16"})  # the program says `enable f16;` for either type

    def instance(self, config) -> selection.Instance:
        adapter = adapter_of({"subgroup_min": 4, "subgroup_max": 128}, max_invocations=config["wg_size"])
        return selection.rope_instance(adapter, config["dtype"], config["binding"] == "inplace",
                                       config["freq_factors"])

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))

    def gate_configs(self, profile):
        return [self.config({}), self.config({"dtype": "f16", "binding": "inplace", "freq_factors": True,
                                              "wg_size": 64}),
                self.config({"binding": "inplace", "freq_factors": True, "wg_size": 128}),
                self.config({"dtype": "f16"})]

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, ("wgsl-shaders/rope.wgsl",))])

    def cases(self, config, profile):
        return rope_cases(config, profile)

    def corners(self, config):
        """A llama head (128, normal) and a NeoX head (64) at long positions; YaRN's ramp inside
        the pairs with attn_factor; a partial window moved by n_offs; a head dim of 10 whose
        element count is not a multiple of the workgroup."""
        dtype, ff = config["dtype"], config["freq_factors"]
        return [make_case(dtype, ff, (128, 128, 0), "normal", (1, 3, 4), "normal", 81, max_position=32768),
                make_case(dtype, ff, (64, 64, 0), "neox", (2, 2, 3), "uniform", 82, max_position=8192,
                          freq_base=500000.0, ff_kind="llama3"),
                make_case(dtype, ff, (128, 128, 0), "neox", (1, 2, 2), "normal", 83, max_position=4096,
                          freq_scale=1.0 / 1.4245, ext_factor=0.7465, attn_factor=1.4245, n_ctx_orig=4096),
                make_case(dtype, ff, (128, 32, 96), "normal", (1, 2, 3), "spiky", 84, max_position=2048,
                          freq_scale=0.25, ext_factor=1.0, n_ctx_orig=2048),
                make_case(dtype, ff, (10, 10, 0), "neox", (1, 5, 3), "large", 85, max_position=512)]

    @staticmethod
    def host_params(case) -> dict:
        """The f32 values the host computes and passes (C L2731-2756)."""
        p = case.params
        theta_scale, corr0, corr1 = selection.rope_host_params(p["freq_base"], p["n_dims"], p["n_ctx_orig"],
                                                                p["beta_fast"], p["beta_slow"])
        return {"theta_scale": theta_scale, "freq_scale": f32(p["freq_scale"]), "ext_factor": f32(p["ext_factor"]),
                "attn_factor": f32(p["attn_factor"]), "corr_dims": (corr0, corr1)}

    def launch(self, device, wgsl, config, case):
        storage = np.float16 if config["dtype"] == "f16" else np.float32
        x = np.ascontiguousarray(case["x"], storage)
        batch, tokens, heads, ne0 = x.shape
        host = self.host_params(case)
        pipeline = device.pipeline(wgsl)
        row, plane, volume = ne0, ne0 * heads, ne0 * heads * tokens
        params = {"offset_src0": 0, "offset_src1": 0, "offset_src2": 0, "offset_dst": 0,
                  "stride_src01": row, "stride_src02": plane, "stride_src03": volume,
                  "stride_dst1": row, "stride_dst2": plane, "stride_dst3": volume,
                  "n_threads": x.size // 2, "ne0": ne0, "ne1": heads, "ne2": tokens,
                  "n_dims": case.params["n_dims"], "mode": MODES[case.params["mode"]],
                  "theta_scale": host["theta_scale"], "attn_factor": host["attn_factor"],
                  "freq_scale": host["freq_scale"], "ext_factor": host["ext_factor"],
                  "corr_dim0": host["corr_dims"][0], "corr_dim1": host["corr_dims"][1],
                  "sections0": 0, "sections1": 0, "sections2": 0, "sections3": 0, "n_offs": case.params["n_offs"]}
        arrays = {"src1": np.ascontiguousarray(case["positions"], np.int32)}
        if config["freq_factors"]:
            arrays["src2"] = np.ascontiguousarray(case["freq_factors"], np.float32)
        if config["binding"] == "inplace":  # dst is src0
            arrays["src0"], out = InOut(x), "src0"
        else:
            arrays["src0"], arrays["dst"], out = x, Output(storage, x.shape), "dst"
        grid = selection.rope_grid(x.size, config["wg_size"])
        run = device.run(pipeline, bind(pipeline, arrays, params), grid + (1,))
        return Launched({"y": run.outputs[out].reshape(x.shape)}, {"y": run.guard_intact[out]}, run.timing)

    def expected(self, config, case):
        p = case.params
        host = self.host_params(case)
        ff = case["freq_factors"] if config["freq_factors"] else None
        args = (case["x"], case["positions"], p["n_dims"], MODES[p["mode"]])
        exact = rope(*args, freq_factors=ff, n_offs=p["n_offs"], **host)
        budget = rope_budget(*args, freq_factors=ff, n_offs=p["n_offs"], exact=exact, dtype=config["dtype"], **host)
        return [Expected.around("y", exact, budget, config["dtype"])]

    def features(self, case):
        p = case.params
        return {"mode": p["mode"], "ne0": p["ne0"], "n_dims": p["n_dims"], "n_offs": p["n_offs"],
                "ext_factor": p["ext_factor"], "max_position": int(np.max(case["positions"]))}
