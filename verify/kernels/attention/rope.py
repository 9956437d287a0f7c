"""`rope`: standalone NeoX rotary embedding of q [T, Hq, D] and k [T, Hkv, D], in place.

Bindings (rope.wgsl):
  0 q [T, Hq, D]      qkv_t  read_write (rotated in place)
  1 k [T, Hkv, D]     qkv_t  read_write (rotated in place)
  2 positions [T]     i32    read (one position per token, shared by its q and k heads)
  3 params            uniform RopeParams {tokens, rope_scale, rope_theta}
Semantics: references.rope.rotate_neox with TVM's default frequencies (docs/tvm.md §4),
f32 math, results stored in the storage type. Llama 3 frequency scaling is not offered: its
clamp-and-interpolate in f32 adds error terms that verify.budgets.attention.rope_budget does
not derive.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.attention import rope_budget
from verify.cases.attention import rope_cases
from verify.errors import UsageError
from verify.gpu import InOut
from verify.gpu.uniforms import pack_struct
from verify.kernels.attention.common import DTYPE, HEAD_DIM, KV_HEADS, QO_HEADS, dtype_enables, dtype_features
from verify.kernels.contract import Expected, Kernel, Launched
from verify.kernels.specialize import body, specialize

#: Invocations per workgroup the layout aims for (WebGPU's portable limit is 256).
TARGET_INVOCATIONS = 128
#: Workgroups along x before the grid wraps into y (WebGPU's default limit is 65535).
MAX_GROUPS_X = 32768


def rows_per_group(head_dim: int) -> int:
    """Rows (token, head) per workgroup: one lane per rotated pair, head_dim/2 lanes a row."""
    return max(1, TARGET_INVOCATIONS // (head_dim // 2))


class Rope(Kernel):
    name = "rope"
    family = "attention"
    summary = "q, k <- NeoX rotary embedding at each token's position, in place; f32 math"
    reference = "references.rope.rotate_neox"
    config_keys = (HEAD_DIM, QO_HEADS, KV_HEADS, DTYPE)
    checks = ("reference", "determinism", "sanitize")
    budget_function = staticmethod(rope_budget)
    output_axes = {"q": ("head", "dim"), "k": ("head", "dim")}

    def validate(self, config):
        for key in ("qo_heads", "kv_heads"):
            if config[key] <= 0:
                raise UsageError(f"{key}={config[key]} must be positive")

    def requirements(self, config):
        return dtype_features(config)

    def gate_configs(self, profile):
        shapes = [
            dict(head_dim=128, qo_heads=32, kv_heads=8, dtype="f16"),
            dict(head_dim=64, qo_heads=8, kv_heads=1, dtype="f32"),
            dict(head_dim=96, qo_heads=6, kv_heads=2, dtype="f16"),
            dict(head_dim=256, qo_heads=4, kv_heads=4, dtype="f32"),
        ]
        return [self.config(s) for s in shapes]

    def wgsl(self, config):
        return specialize(
            self.name, body(__package__, "rope.wgsl"), config,
            enables=dtype_enables(config),
            aliases={"qkv_t": config["dtype"]},
            constants={"HEAD_DIM": config["head_dim"], "QO_HEADS": config["qo_heads"],
                       "KV_HEADS": config["kv_heads"], "ROWS_PER_GROUP": rows_per_group(config["head_dim"])},
        )

    def cases(self, config, profile):
        return rope_cases(config, profile)

    def launch(self, device, wgsl, config, case):
        pipeline = device.pipeline(wgsl)
        tokens = case["positions"].shape[0]
        rows = tokens * (config["qo_heads"] + config["kv_heads"])
        groups = -(-rows // rows_per_group(config["head_dim"]))
        grid = (min(groups, MAX_GROUPS_X), -(-groups // MAX_GROUPS_X))
        uniform = pack_struct(pipeline.interface.structs["RopeParams"], {
            "tokens": tokens, "rope_scale": case.params["rope_scale"], "rope_theta": case.params["rope_theta"],
        })
        run = device.run(pipeline, {
            "q": InOut(case["q"]), "k": InOut(case["k"]), "positions": case["positions"], "params": uniform,
        }, grid)
        return Launched(run.outputs, run.guard_intact, run.timing)

    def expected(self, config, case):
        positions = case["positions"].astype(np.int64)[:, None]
        theta, scale = case.params["rope_theta"], case.params["rope_scale"]
        out = []
        for name in ("q", "k"):
            exact, budget = rope_budget(case[name], positions, theta, scale, config["dtype"])
            out.append(Expected.around(name, exact, budget, config["dtype"]))
        return out

    def features(self, case):
        return {"tokens": int(case["positions"].shape[0]), "max_position": int(case["positions"].max(initial=0)),
                "max_angle": float(case["positions"].max(initial=0) * case.params["rope_scale"])}
