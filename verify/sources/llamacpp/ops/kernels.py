"""ggml-webgpu's row ops: `llamacpp.ops.rms_norm_mul`.

ggml-webgpu fuses an RMS_NORM whose result feeds a MUL (f32 tensors, rows contiguous,
ggml-webgpu.cpp L3197-3223) into one program, rms_norm_mul.wgsl: one workgroup of
maxComputeInvocationsPerWorkgroup lanes per row, each lane summing `pow(x, 2.0)` over its columns,
a tree over the lanes in workgroup memory, then `y = scale * x * w` with
`scale = 1.0/sqrt(sum/f32(ne0) + eps)`. verify instantiates it as the shader library does
(verify.sources.llamacpp.selection.rms_norm_mul_instance) and launches it as the host does
(ggml-webgpu.cpp L2598-2679: the params in its order, strides in elements, one workgroup per row),
and judges it against references.ggml_norm.rms_norm_mul within
verify.budgets.llamacpp_ops.rms_norm_mul_budget.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.llamacpp_ops import rms_norm_mul_budget
from verify.gpu import InOut, Output
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.references.ggml_norm import rms_norm_mul
from verify.sources.llamacpp import programs, selection
from verify.sources.llamacpp.launch import Program, adapter_of, bind, header, upstream
from verify.sources.llamacpp.ops.cases import make_case, rms_norm_mul_cases

MODE = ConfigKey("mode", "separate", ("separate", "inplace"),
                 "how the tensors share bindings: each its own, or the norm's output written over its source "
                 "(INPLACE, rn_src == dst)")
WG_SIZE = ConfigKey("wg_size", 256, (64, 128, 256),
                    "the adapter's maxComputeInvocationsPerWorkgroup, which ggml-webgpu takes as WG_SIZE")


class RmsNormMul(Kernel):
    """RMS_NORM then MUL: y[r, j] = x[r, j] / sqrt(mean_k x[r, k]² + eps) · w[j]."""

    name = "llamacpp.ops.rms_norm_mul"
    family = "llamacpp.ops"
    source = "llamacpp"
    summary = ("llama.cpp ggml-webgpu's rms_norm_mul: RMS_NORM fused with the MUL by the norm weight, one "
               "workgroup a row")
    reference = "verify.references.ggml_norm.rms_norm_mul"
    checks = ("reference",)
    config_keys = (MODE, WG_SIZE)
    output_axes = {"y": ("row", "column")}
    budget_function = staticmethod(rms_norm_mul_budget)

    def instance(self, config) -> selection.Instance:
        adapter = adapter_of({"subgroup_min": 4, "subgroup_max": 128}, max_invocations=config["wg_size"])
        return selection.rms_norm_mul_instance(adapter, config["mode"])

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))

    def gate_configs(self, profile):
        return [self.config({}), self.config({"mode": "inplace", "wg_size": 64})]

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, ("wgsl-shaders/rms_norm_mul.wgsl",))])

    def cases(self, config, profile):
        return rms_norm_mul_cases(profile)

    def corners(self, config):
        """A row of one value; rows one past and one short of the lanes, an all-zero row among
        them; a row at each end of f32's range."""
        lanes = config["wg_size"]
        return [make_case(1, 1, "normal", 1e-6, 61), make_case(3, lanes + 1, "zero_rows", 1e-5, 62),
                make_case(2, 2 * lanes - 1, "huge", 1e-6, 63), make_case(2, lanes, "minute", 1e-5, 64)]

    def launch(self, device, wgsl, config, case):
        x = np.ascontiguousarray(case["x"], np.float32)
        w = np.ascontiguousarray(case["w"], np.float32)
        rows, n = x.shape
        pipeline = device.pipeline(wgsl)
        params = {"offset_rn_src": 0, "offset_mul_src": 0, "offset_dst": 0,
                  "stride_rn_src1": n, "stride_rn_src2": rows * n, "stride_rn_src3": rows * n,
                  "stride_mul_src1": n, "stride_mul_src2": n, "stride_mul_src3": n,
                  "stride_dst1": n, "stride_dst2": rows * n, "stride_dst3": rows * n,
                  "mul_src_ne0": n, "mul_src_ne1": 1, "mul_src_ne2": 1, "mul_src_ne3": 1,
                  "ne0": n, "ne1": rows, "ne2": 1, "eps": float(case.params["eps"])}
        if config["mode"] == "inplace":  # dst is rn_src: the norm's output overwrites its source
            arrays = {"rn_src": InOut(x), "mul_src": w}
            out = "rn_src"
        else:
            arrays = {"rn_src": x, "mul_src": w, "dst": Output(np.float32, (rows, n))}
            out = "dst"
        run = device.run(pipeline, bind(pipeline, arrays, params), selection.rms_norm_mul_grid(rows) + (1,))
        y = run.outputs[out].reshape(rows, n)
        return Launched({"y": y}, {"y": run.guard_intact[out]}, run.timing)

    def expected(self, config, case):
        eps = np.float32(case.params["eps"])  # the host passes eps's f32 bits
        exact = rms_norm_mul(case["x"], case["w"], float(eps))
        return [Expected.around("y", exact, rms_norm_mul_budget(case["x"], case["w"], float(eps), exact), "f32")]

    def features(self, case):
        return {"n": case.params["n"], "rows": case.params["rows"]}
