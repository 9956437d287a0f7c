"""`merge_state`: in-place merge of two base-2 (o, lse) attention states."""

from __future__ import annotations

import numpy as np

from verify.budgets.attention import merge_budget
from verify.budgets.expected import Expected
from verify.cases.values import with_grid_limit, wrapped_grid
from verify.gpu import InOut
from verify.gpu.uniforms import pack_struct
from verify.kernels.attention.cases import merge_cases, merge_corners
from verify.kernels.attention.common import (
    DTYPE,
    HEAD_DIM,
    dtype_enables,
    dtype_features,
)
from verify.kernels.contract import ConfigKey, Kernel
from verify.kernels.specialize import body, specialize
from verify.profiles import get_profile
from verify.references.softmax import merge_outputs

#: Invocations per workgroup the layout aims for (WebGPU's portable limit is 256).
TARGET_INVOCATIONS = 64
MAX_GROUPS_X = 32768


def rows_per_group(head_dim: int) -> int:
    return max(1, TARGET_INVOCATIONS // (head_dim // 4))


class MergeState(Kernel):
    name = "merge_state"
    family = "attention"
    summary = "v, s <- merge((v, s), (v_other, s_other)) for base-2 LSE states, in place; -inf = empty"
    reference = "verify.references.softmax.merge_outputs"
    config_keys: tuple[ConfigKey, ...] = (HEAD_DIM, DTYPE)
    checks = ("reference", "implementations", "toggles")
    budget_function = staticmethod(merge_budget)
    output_axes = {"v": ("head", "dim"), "s": ("token", "head")}

    def requirements(self, config):
        return dtype_features(config)

    def gate_configs(self, profile):
        return [self.config({"head_dim": d, "dtype": t})
                for d, t in ((128, "f16"), (64, "f32"), (96, "f16"), (256, "f32"))]

    def wgsl(self, config):
        return specialize(
            self.name, body(__package__, "merge_state.wgsl"), config,
            enables=dtype_enables(config),
            aliases={"v_t": config["dtype"]},
            constants={"HEAD_DIM": config["head_dim"], "ROWS_PER_GROUP": rows_per_group(config["head_dim"])},
        )

    def cases(self, config, profile):
        return with_grid_limit(merge_cases(config["head_dim"], config["dtype"],
                                           max_tokens=get_profile(profile).max_tokens))

    def corners(self, config):
        return merge_corners(config["head_dim"], config["dtype"])

    def launch_paths(self, config, case):
        groups = -(-case["s"].size // rows_per_group(config["head_dim"]))
        return ("grid wrapped into y",) if groups > (case.params.get("grid_limit") or MAX_GROUPS_X) else ("flat grid",)

    def launch(self, device, wgsl, config, case):
        pipeline = device.pipeline(wgsl)
        tokens, heads, _ = case["v"].shape
        rows = tokens * heads
        groups = -(-rows // rows_per_group(config["head_dim"]))
        grid = wrapped_grid(groups, case.params.get("grid_limit") or MAX_GROUPS_X)
        uniform = pack_struct(pipeline.interface.structs["MergeParams"], {"rows": rows})
        run = device.run(pipeline, {
            "v": InOut(case["v"]), "s": InOut(case["s"]),
            "v_other": case["v_other"], "s_other": case["s_other"], "params": uniform,
        }, grid)
        return run

    def expected(self, config, case):
        v, s, v_other, s_other = (np.asarray(case[n], np.float64) for n in ("v", "s", "v_other", "s_other"))
        v_ref, s_ref = merge_outputs(v, s, v_other, s_other, base=2)
        v_budget, s_budget = merge_budget(v, s, v_other, s_other, v_ref, s_ref, config["dtype"])
        empty = np.isinf(s) & np.isinf(s_other)
        return [
            Expected.around("v", v_ref, v_budget, config["dtype"], exact=np.broadcast_to(empty[..., None], v.shape)),
            Expected.around("s", s_ref, s_budget, "f32", exact=empty),
        ]

    def features(self, case):
        s, s_other = case["s"].astype(np.float64), case["s_other"].astype(np.float64)
        both = np.isfinite(s) & np.isfinite(s_other)
        gap = np.abs(np.where(both, s, 0.0) - np.where(both, s_other, 0.0))
        return {"rows": int(s.size), "lse_gap": float(gap.max(initial=0.0))}
