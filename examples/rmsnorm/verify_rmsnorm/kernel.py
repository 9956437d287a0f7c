"""The RMSNorm kernel's contract: what verify needs to run it and judge its outputs.

Bindings (rmsnorm.wgsl):
  0 x [rows, hidden]   io_t  read
  1 weight [hidden]    io_t  read
  2 y [rows, hidden]   io_t  read_write
  3 params             uniform NormParams {rows, hidden, eps}
Semantics: verify_rmsnorm.reference.rms_norm in float64; budget: verify_rmsnorm.budget.
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

import verify
import verify.strategies as vs
from verify.extend import pack_struct, specialize, wgsl_file
from verify_rmsnorm.budget import rms_norm_budget
from verify_rmsnorm.reference import rms_norm

_STORAGE = {"f16": np.float16, "f32": np.float32}
#: Largest hidden size the cases draw (Llama-3-8B's is 4096).
MAX_HIDDEN = 4096


class RmsNorm(verify.Kernel):
    name = "rmsnorm"
    family = "normalization"
    source = "package"
    summary = "fused RMSNorm, one row per workgroup: y = x * inverseSqrt(mean(x^2) + eps) * w"
    reference = "verify_rmsnorm.reference.rms_norm"
    config_keys = (
        verify.ConfigKey("dtype", "f32", ("f16", "f32"), "storage type of x, weight and y; math is f32"),
        verify.ConfigKey("workgroup", 64, (32, 64, 256), "lanes per row (a power of two)"),
    )
    checks = ("reference", "implementations")  # and the default ones: determinism, sanitize
    budget_function = staticmethod(rms_norm_budget)
    output_axes = {"y": ("row", "hidden")}

    def requirements(self, config):
        return frozenset({"shader-f16"}) if config["dtype"] == "f16" else frozenset()

    def gate_configs(self, profile):
        return [self.config({"dtype": "f32", "workgroup": 64}), self.config({"dtype": "f16", "workgroup": 256})]

    def wgsl(self, config):
        body = wgsl_file(__package__, "rmsnorm.wgsl")
        return specialize(self.name, body, config, enables=("f16",) if config["dtype"] == "f16" else (),
                          aliases={"io_t": config["dtype"]}, constants={"WORKGROUP": config["workgroup"]})

    def cases(self, config, profile):
        rows = st.integers(1, profile.max_tokens)
        hidden = vs.tile_tails(config["workgroup"], MAX_HIDDEN)
        eps = st.sampled_from([1e-6, 1e-5, 1e-2])
        return st.tuples(rows, hidden, eps).flatmap(lambda shape: st.builds(
            lambda x, w: verify.Case({"x": x, "weight": w}, {"rows": shape[0], "hidden": shape[1], "eps": shape[2]}),
            vs.values((shape[0], shape[1]), config["dtype"]), vs.values((shape[1],), config["dtype"])))

    def launch(self, device, wgsl, config, case):
        pipeline = device.pipeline(wgsl)
        rows, hidden = case["x"].shape
        uniform = pack_struct(pipeline.interface.structs["NormParams"],
                              {"rows": rows, "hidden": hidden, "eps": case.params["eps"]})
        run = device.run(pipeline, {"x": case["x"], "weight": case["weight"],
                                    "y": verify.Output(_STORAGE[config["dtype"]], (rows, hidden)), "params": uniform},
                         rows)
        return run

    def expected(self, config, case):
        # The kernel reads eps from an f32 uniform: the reference uses that stored value.
        eps = float(np.float32(case.params["eps"]))
        exact = rms_norm(case["x"], case["weight"], eps)
        return [verify.Expected.around("y", exact, rms_norm_budget(case["x"], case["weight"], eps, exact,
                                                                   config["dtype"]), config["dtype"])]

    def features(self, case):
        return {"hidden": int(case["x"].shape[1]), "rows": int(case["x"].shape[0])}
