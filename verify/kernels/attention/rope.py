"""`rope`: standalone rotary embedding of q [T, Hq, D] and k [T, Hkv, D], in place.

Bindings (rope.wgsl):
  0 q [T, Hq, D]      qkv_t  read_write (rotated in place)
  1 k [T, Hkv, D]     qkv_t  read_write (rotated in place)
  2 positions [T]     i32    read (one position per token, shared by its q and k heads)
  3 params            uniform RopeParams {tokens, rope_scale, rope_theta}
Semantics: references.rope.rotate_neox (rope_pairing=neox) or rotate_gptj (gptj) with TVM's
default frequencies or Llama 3's scaling (rope_scaling=llama3 and its parameters; see
rope_variant.py), f32 math, results stored in the storage type.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.rope import rope_budget
from verify.cases.values import with_grid_limit, wrapped_grid
from verify.errors import UsageError
from verify.gpu import InOut
from verify.gpu.uniforms import pack_struct
from verify.kernels.attention.common import (
    DTYPE,
    HEAD_DIM,
    KV_HEADS,
    QO_HEADS,
    dtype_enables,
    dtype_features,
)
from verify.kernels.attention.rope_cases import rope_cases
from verify.kernels.attention.rope_variant import (
    LLAMA_3_1,
    LLAMA_3_2,
    ROPE_PAIRING,
    SCALING_KEYS,
    RopeVariant,
    trim_config,
    validate_variant,
)
from verify.kernels.contract import Kernel
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
    summary = "q, k <- rotary embedding (NeoX or GPT-J pairs, Llama 3 scaling) at each token's position, in place"
    reference = "verify.references.rope.rotate_neox | rotate_gptj (rope_pairing)"
    config_keys = (HEAD_DIM, QO_HEADS, KV_HEADS, DTYPE, ROPE_PAIRING) + SCALING_KEYS
    checks = ("reference", "implementations", "toggles")
    budget_function = staticmethod(rope_budget)
    output_axes = {"q": ("head", "dim"), "k": ("head", "dim")}

    def config(self, overrides=None):
        return trim_config(super().config(overrides), overrides)

    def validate(self, config):
        for key in ("qo_heads", "kv_heads"):
            if config[key] <= 0:
                raise UsageError(f"{key}={config[key]} must be positive")
        validate_variant(config)

    def requirements(self, config):
        return dtype_features(config)

    def gate_configs(self, profile):
        """Llama-3.1-8B (D = 128, 32/8 heads, factor 8) and Llama-3.2-1B (D = 64, 32/8, factor 32)
        with their scaling, a GPT-J-paired D = 96, and an unscaled D = 256."""
        shapes = [
            dict(head_dim=128, qo_heads=32, kv_heads=8, dtype="f16", **LLAMA_3_1),
            dict(head_dim=64, qo_heads=32, kv_heads=8, dtype="f32", **LLAMA_3_2),
            dict(head_dim=96, qo_heads=6, kv_heads=2, dtype="f16", rope_pairing="gptj"),
            dict(head_dim=256, qo_heads=4, kv_heads=4, dtype="f32"),
        ]
        return [self.config(s) for s in shapes]

    def wgsl(self, config):
        variant = RopeVariant.from_config(config)
        source = body(__package__, "rope.wgsl") + "\n" + body(__package__, variant.frequency_file)
        return specialize(
            self.name, source, config,
            enables=dtype_enables(config),
            aliases={"qkv_t": config["dtype"]},
            constants={"HEAD_DIM": config["head_dim"], "QO_HEADS": config["qo_heads"],
                       "KV_HEADS": config["kv_heads"], "ROWS_PER_GROUP": rows_per_group(config["head_dim"]),
                       "ROPE_GPTJ": variant.pairing == "gptj", **variant.frequency_constants()},
        )

    def cases(self, config, profile):
        return with_grid_limit(rope_cases(config, profile, llama3=RopeVariant.from_config(config).llama3))

    def launch_paths(self, config, case):
        rows = case["positions"].shape[0] * (config["qo_heads"] + config["kv_heads"])
        groups = -(-rows // rows_per_group(config["head_dim"]))
        return ("grid wrapped into y",) if groups > (case.params.get("grid_limit") or MAX_GROUPS_X) else ("flat grid",)

    def launch(self, device, wgsl, config, case):
        pipeline = device.pipeline(wgsl)
        tokens = case["positions"].shape[0]
        rows = tokens * (config["qo_heads"] + config["kv_heads"])
        groups = -(-rows // rows_per_group(config["head_dim"]))
        grid = wrapped_grid(groups, case.params.get("grid_limit") or MAX_GROUPS_X)
        uniform = pack_struct(pipeline.interface.structs["RopeParams"], {
            "tokens": tokens, "rope_scale": case.params["rope_scale"], "rope_theta": case.params["rope_theta"],
        })
        run = device.run(pipeline, {
            "q": InOut(case["q"]), "k": InOut(case["k"]), "positions": case["positions"], "params": uniform,
        }, grid)
        return run

    def expected(self, config, case):
        positions = case["positions"].astype(np.int64)[:, None]
        theta, scale = case.params["rope_theta"], case.params["rope_scale"]
        variant = RopeVariant.from_config(config)
        out = []
        for name in ("q", "k"):
            exact, budget = rope_budget(case[name], positions, theta, scale, config["dtype"],
                                        llama3=variant.llama3, pairing=variant.pairing)
            out.append(Expected.around(name, exact, budget, config["dtype"]))
        return out

    def features(self, case):
        return {"tokens": int(case["positions"].shape[0]), "max_position": int(case["positions"].max(initial=0)),
                "max_angle": float(case["positions"].max(initial=0) * case.params["rope_scale"])}
