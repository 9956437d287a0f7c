"""ggml-webgpu's SOFT_MAX: `llamacpp.ops.soft_max`.

soft_max.wgsl computes ggml's `ggml_soft_max_ext` on f32 logits: per row,
`s = src * scale + slope * mask` (the mask f32 or f16, broadcast over heads and batches by index;
slope 1, or ALiBi's `pow(m0, h + 1)` / `pow(m1, 2(h - n_head_log2) + 1)` where max_bias > 0), the
row's max (starting from the head's sink, else -1e30) by a tree over the lanes, exp(s - max) and
their sum by a second tree (plus exp(sink - max)), then each exp times 1/sum. One workgroup of
maxComputeInvocationsPerWorkgroup lanes per row; lanes keep their first 16 columns in a private
cache, the rest go through dst (src when INPLACE). verify instantiates it as the shader library
does (verify.sources.llamacpp.selection.soft_max_instance, S L3203-3253), launches it as the host
does (ggml-webgpu.cpp L2918-2986: the params in its order, strides in elements, the host's f32
ALiBi constants, one workgroup per row), and judges it against
references.ggml_softmax.soft_max_ext within verify.budgets.llamacpp_ops.soft_max_budget.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.llamacpp_ops import soft_max_budget, soft_max_logit_errors
from verify.errors import FailureKind
from verify.gpu import InOut, Output
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.references.ggml_softmax import logits, soft_max_ext
from verify.results.record import KnownFinding
from verify.sources.llamacpp import programs, selection
from verify.sources.llamacpp.findings import SOFT_MAX_FLOOR
from verify.sources.llamacpp.launch import Program, adapter_of, bind, header, upstream
from verify.sources.llamacpp.ops.soft_max_cases import make_case, soft_max_cases

MASK = ConfigKey("mask", "f16", selection.SOFT_MAX_MASKS,
                 "the mask's type (HAS_MASK with MASK_F32 or MASK_F16), or none")
SINKS = ConfigKey("sinks", True, (False, True), "one f32 sink logit per head in the denominator (HAS_SINK)")
MODE = ConfigKey("mode", "separate", ("separate", "inplace"),
                 "dst its own binding, or the softmax written over its logits (INPLACE, src0 == dst)")
WG_SIZE = ConfigKey("wg_size", 256, (64, 128, 256),
                    "the adapter's maxComputeInvocationsPerWorkgroup, which ggml-webgpu takes as WG_SIZE")


def alibi_of(case) -> tuple[float, float, float]:
    """(n_head_log2, m0, m1) as the host passes them for the case's heads and max_bias (C L2936-2939)."""
    return selection.soft_max_alibi(case.params["max_bias"], case.params["heads"])


class SoftMax(Kernel):
    """y = softmax(scale · x + slope_h · mask) per row, each head's sink in the denominator."""

    name = "llamacpp.ops.soft_max"
    family = "llamacpp.ops"
    source = "llamacpp"
    summary = ("llama.cpp ggml-webgpu's soft_max: ggml_soft_max_ext with scale, an f32/f16 mask broadcast over "
               "heads and batches, ALiBi slopes and sinks, one workgroup a row")
    reference = "verify.references.ggml_softmax.soft_max_ext"
    checks = ("reference",)
    config_keys = (MASK, SINKS, MODE, WG_SIZE)
    output_axes = {"y": ("batch", "head", "row", "column")}
    budget_function = staticmethod(soft_max_budget)

    def requirements(self, config):
        return frozenset({"shader-f16"})  # soft_max.wgsl starts with `enable f16;`, whatever the mask's type

    def instance(self, config) -> selection.Instance:
        adapter = adapter_of({"subgroup_min": 4, "subgroup_max": 128}, max_invocations=config["wg_size"])
        return selection.soft_max_instance(adapter, config["mask"], config["sinks"], config["mode"] == "inplace")

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))

    def gate_configs(self, profile):
        """Every define drawn at random: an f16 mask with sinks; an f32 mask in place without sinks at
        64 lanes; no mask with sinks at 128. The op without mask or sinks is where §19.7 lives: its
        corners (the last one the floor's) are its config's record, KNOWN at the floor."""
        return [self.config({}), self.config({"mask": "f32", "sinks": False, "mode": "inplace", "wg_size": 64}),
                self.config({"mask": "none", "sinks": True, "wg_size": 128}),
                self.config({"mask": "none", "sinks": False})]

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, ("wgsl-shaders/soft_max.wgsl",))])

    def cases(self, config, profile):
        return soft_max_cases(config, profile)

    def corners(self, config):
        """One column; 17 columns (one past the private cache) in 12 heads with ALiBi over a mask
        shared by the heads; a row one past the lanes with rows hidden entirely; large logits two
        lanes' worth long with a per-head mask padded by 2 rows; for the op without mask or sinks,
        last, logits all below the program's -1e30 floor (§19.7: the check stops there, so the
        configs with a mask or sinks do not take it and keep their drawn examples)."""
        lanes, mask, sinks = config["wg_size"], config["mask"], config["sinks"]
        return [make_case(mask, sinks, batch=1, heads=1, rows=1, n=1, seed=81),
                make_case(mask, sinks, batch=1, heads=12, rows=2, n=17, mask_kind="alibi", max_bias=8.0,
                          scale=0.125, seed=82),
                make_case(mask, sinks, batch=2, heads=2, rows=3, n=lanes + 1, mask_kind="hidden_rows", mask_batch=2,
                          seed=83),
                make_case(mask, sinks, batch=1, heads=4, rows=2, n=2 * lanes - 1, logits="large", mask_kind="uniform",
                          mask_heads=4, pad=2, seed=84)] + ([
                make_case(mask, sinks, batch=1, heads=2, rows=1, n=lanes // 2 + 3, logits="below_floor", seed=85)]
            if mask == "none" and not sinks else [])

    def known_finding(self, check, config):
        """§19.7 under `reference` without sinks: a row of logits all below -1e30 (the corner
        `below_floor`, or a case of the user's) comes out NaN where ggml's op defines its softmax."""
        if check == "reference" and not config["sinks"]:
            return KnownFinding(SOFT_MAX_FLOOR, outputs=("y",), kinds=(FailureKind.NAN,),
                                finding_id="llamacpp-soft-max-floor")
        return None

    def launch(self, device, wgsl, config, case):
        x = np.ascontiguousarray(case["x"], np.float32)
        batch, heads, rows, n = x.shape
        mask, sinks = case.arrays.get("mask"), case.arrays.get("sinks")
        n_head_log2, m0, m1 = alibi_of(case)
        m3, m2, padded = mask.shape[:3] if mask is not None else (0, 0, 0)
        params = {"offset_src0": 0, "offset_src1": 0, "offset_sinks": 0, "offset_dst": 0,
                  "stride_src01": n, "stride_src02": rows * n, "stride_src03": heads * rows * n,
                  "stride_src11": n if mask is not None else 0, "stride_src12": padded * n,
                  "stride_src13": m2 * padded * n,
                  "stride_dst1": n, "stride_dst2": rows * n, "stride_dst3": heads * rows * n,
                  "ne0": n, "ne1": rows, "ne2": heads, "ne12": m2, "ne13": m3,
                  "scale": float(np.float32(case.params["scale"])), "max_bias": float(case.params["max_bias"]),
                  "n_head_log2": n_head_log2, "m0": m0, "m1": m1}
        arrays: dict = {}
        if mask is not None:
            arrays["mask"] = mask
        if sinks is not None:
            arrays["sinks"] = np.ascontiguousarray(sinks, np.float32)
        if config["mode"] == "inplace":  # dst is src0: the softmax overwrites the logits
            arrays["src"] = InOut(x.copy())
            out = "src"
        else:
            arrays["src"] = x
            arrays["dst"] = Output(np.float32, x.shape)
            out = "dst"
        pipeline = device.pipeline(wgsl)
        run = device.run(pipeline, bind(pipeline, arrays, params),
                         selection.soft_max_grid(batch * heads * rows) + (1,))
        y = run.outputs[out].reshape(x.shape)
        return Launched({"y": y}, {"y": run.guard_intact[out]}, run.timing)

    def expected(self, config, case):
        mask, sinks = case.arrays.get("mask"), case.arrays.get("sinks")
        scale, max_bias, alibi = float(np.float32(case.params["scale"])), case.params["max_bias"], alibi_of(case)
        exact = soft_max_ext(case["x"], mask, sinks, scale=scale, max_bias=max_bias, alibi=alibi)
        s = logits(case["x"], mask, scale=scale, max_bias=max_bias, alibi=alibi)
        delta = soft_max_logit_errors(case["x"], mask, scale=scale, max_bias=max_bias, alibi=alibi)
        budget = soft_max_budget(s, delta, sinks, exact)
        # a row of -inf logits without a sink: ggml's op defines no value; the program's arithmetic,
        # as ggml's CPU code in a release build, is exp(-inf) = 0 over a zero sum: NaN, held exactly
        undefined = np.isnan(exact)
        return [Expected.around("y", exact, budget, "f32", exact=undefined if undefined.any() else None)]

    def features(self, case):
        return {"n": case.params["n"], "heads": case.params["heads"], "rows": case.params["rows"],
                "max_bias": case.params["max_bias"]}
