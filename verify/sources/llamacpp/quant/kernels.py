"""ggml-webgpu's Q8 activation path, program by program: `llamacpp.quant.quantize_q8` and
`llamacpp.quant.mul_mat_vec_q`.

For a mat-vec (at most 4 activation columns) with Q4_0, Q4_1, Q8_0, Q2_K or Q4_K weights on an
AMD, Intel or NVIDIA adapter with packed_4x8_integer_dot_product, ggml-webgpu quantizes the f32
activations to q8_1 blocks (quantize_q8.wgsl) and takes dot4I8Packed products against the weight
blocks (mul_mat_vec.wgsl with mul_mat_vec_q_acc.tmpl), ggml-webgpu.cpp L1620-1731. verify
instantiates both exactly as the shader library does for such an adapter
(verify.sources.llamacpp.selection) and launches them as the host code does (params in its
order, its grids), on whatever adapter runs the check: the WGSL is the same whatever the vendor
string, which only decides whether ggml-webgpu takes this path.

quantize_q8 is judged by legal intervals (verify.budgets.llamacpp_quant.quantize_legal): every
code, scale and block sum must be one a conforming implementation of its arithmetic may produce,
with nothing more. The mat-vec is judged against the exact product of the dequantized blocks
(references.ggml_quants.dot) within mmvq_budget.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.llamacpp_quant import mmvq_budget, quantize_legal
from verify.cases import Case
from verify.errors import FailureKind, UsageError
from verify.gpu import Output
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.references import ggml_quants as gq
from verify.results.record import KnownFinding
from verify.sources.llamacpp import programs, selection
from verify.sources.llamacpp.findings import QUANTIZE_NARROW_SUBGROUPS, READS_PAST_WEIGHTS, SUM_OVERFLOW
from verify.sources.llamacpp.launch import (
    SUBGROUP_MAX,
    SUBGROUP_MIN,
    Program,
    adapter_of,
    bind,
    check_width,
    header,
    upstream,
)
from verify.sources.llamacpp.quant.cases import mul_mat_vec_cases, overflowing_sum_case, quantize_cases

WEIGHT = ConfigKey("weight", "q4_0", selection.MMVQ_TYPES, "the weight type of the mat-vec (MUL_ACC_<TYPE>): "
                   "quantize_q8 writes the block sums s for q4_0, q4_1 and q4_K")
REDUCE = ConfigKey("reduce", "subgroup", ("subgroup", "workgroup"),
                   "USE_SUBGROUP_REDUCTION (an adapter with subgroups) or USE_WORKGROUP_REDUCTION")
COLS = ConfigKey("cols", 1, (1, 2, 3, 4), "activation columns (dst->ne[1], NUM_COLS): 1 for a decode step, "
                 "up to 4 on the mat-vec path")
#: The weight types whose quantize_q8 writes the block sum s (quantize_q8.wgsl's #if on MUL_ACC_*).
WRITES_SUM = ("q4_0", "q4_1", "q4_K")
CODE_DTYPE = "i8"


def _adapter(config: dict) -> selection.Adapter:
    return adapter_of(config, subgroups=config["reduce"] == "subgroup")


class _QuantKernel(Kernel):
    family = "llamacpp.quant"
    source = "llamacpp"
    checks = ("reference",)

    def requirements(self, config):
        # every program says `enable f16;` (the q8_1 block's d and s, the weights' scales)
        return frozenset({"subgroup", "shader-f16"} if config["reduce"] == "subgroup" else {"shader-f16"})

    def validate(self, config):
        if config["subgroup_min"] > config["subgroup_max"]:
            raise UsageError(f"subgroup_min={config['subgroup_min']} is above subgroup_max={config['subgroup_max']}")

    def instance(self, config) -> selection.Instance:
        raise NotImplementedError

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))


class QuantizeQ8(_QuantKernel):
    """quantize_q8: f32 activations [rows, K] -> q8_1 blocks (d, s, 32 int8 codes) per 32 values."""

    name = "llamacpp.quant.quantize_q8"
    summary = ("llama.cpp ggml-webgpu's quantize_q8: f32 activations to q8_1 blocks (f16 scale, f16 block sum, "
               "32 int8 codes) for the DP4A mat-vec")
    reference = "verify.references.ggml_quants.quantize_q8"
    config_keys = (WEIGHT, REDUCE, SUBGROUP_MIN, SUBGROUP_MAX)
    output_axes = {"codes": ("block", "value"), "d": ("row", "block"), "s": ("row", "block")}
    budget_function = staticmethod(quantize_legal)

    def instance(self, config):
        return selection.quantize_q8_instance(_adapter(config), config["weight"])

    def gate_configs(self, profile):
        return [self.config({"weight": w, "reduce": r}) for w, r in
                (("q4_0", "subgroup"), ("q8_0", "subgroup"), ("q4_K", "workgroup"))]

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, ("wgsl-shaders/quantize_q8.wgsl",
                                                                 "wgsl-shaders/common_decls.tmpl"))])

    def known_finding(self, check, config):
        if check == "reference" and config["reduce"] == "subgroup":
            return KnownFinding(QUANTIZE_NARROW_SUBGROUPS, outputs=("d", "codes", "s"), subgroup_widths=(4,),
                                finding_id="llamacpp-quantize-q8-subgroups-of-4")
        return None

    def cases(self, config, profile):
        return quantize_cases(profile)

    def corners(self, config):
        rng = np.random.default_rng(41)
        x = rng.standard_normal((2, 1056)).astype(np.float32)  # 33 blocks: one past a workgroup's 32
        x[0, :32] = 0  # an all-zero block: d = 0 and id = 0, codes 0
        x[1, 32:64] *= np.float32(2.0**22)  # a block at the top of q8_1's range (max|x| < 127 · 65504)
        x[1, 64:96] *= np.float32(2.0**-100)  # a block whose d flushes to 0 in f16 while its codes do not
        return [Case({"x": x}, {"rows": 2, "k": 1056, "values": "corner", "seed": 41})]

    def launch(self, device, wgsl, config, case):
        check_width(device, config)
        x = np.ascontiguousarray(case["x"], np.float32)
        rows, k = x.shape
        adapter = _adapter(config)
        pipeline = device.pipeline(wgsl)
        params = {"offset_src1": 0, "stride_11": k, "stride_12": rows * k, "stride_13": rows * k, "ne0": k,
                  "ne1": rows, "ne2": 1, "ne3": 1}
        resources = bind(pipeline, {"src1": x, "src1q": Output(np.uint8, (rows, k // 32, 36))}, params)
        run = device.run(pipeline, resources, selection.quantize_q8_grid(adapter, k, rows) + (1,))
        blocks = run.outputs["src1q"]
        outputs = {"d": gq.f16_field(blocks, 0), "codes": gq.codes("q8_1", blocks).astype(np.float64)}
        guard = run.guard_intact["src1q"]
        guards = {"d": guard, "codes": guard}
        if config["weight"] in WRITES_SUM:
            outputs["s"], guards["s"] = gq.f16_field(blocks, 2), guard
        return Launched(outputs, guards, run.timing)

    def expected(self, config, case):
        (d_lo, d_hi), (q_lo, q_hi), (s_lo, s_hi) = quantize_legal(case["x"])
        rows, blocks = d_lo.shape
        expected = [Expected("d", d_lo, d_hi, np.zeros_like(d_lo), "f16"),
                    Expected("codes", q_lo, q_hi, np.zeros_like(q_lo), CODE_DTYPE)]
        if config["weight"] in WRITES_SUM:
            expected.append(Expected("s", s_lo, s_hi, np.zeros_like(s_lo), "f16"))
        return expected

    def features(self, case):
        return {"k": case.params["k"], "rows": case.params["rows"]}


class MulMatVecQ(_QuantKernel):
    """mul_mat_vec on the MMVQ path: y[n, m] = Σ_k W[m, k] A[n, k] from weight blocks and q8_1 activations."""

    name = "llamacpp.quant.mul_mat_vec_q"
    summary = ("llama.cpp ggml-webgpu's mul_mat_vec with MMVQ: dot4I8Packed products of q8_1 activations with "
               "Q4_0/Q4_1/Q8_0/Q2_K/Q4_K weight blocks, f32 output")
    reference = "verify.references.ggml_quants.dot"
    #: native_width in place of reference: the subgroup reduction calls subgroupAdd in a loop that
    #: starts at subgroup_id, which verify cannot emulate at other widths (verify.sources.llamacpp.checks).
    checks = ("native_width",)
    config_keys = (WEIGHT, COLS, REDUCE, SUBGROUP_MIN, SUBGROUP_MAX)
    output_axes = {"y": ("column", "row")}
    budget_function = staticmethod(mmvq_budget)

    def instance(self, config):
        block = gq.block_values(config["weight"])
        return selection.mul_mat_vec_instance(_adapter(config), config["weight"], block, config["cols"])

    def gate_configs(self, profile):
        configs = [self.config({"weight": w}) for w in selection.MMVQ_TYPES]
        configs += [self.config({"weight": "q4_K", "cols": 3, "reduce": "workgroup"}),
                    self.config({"weight": "q4_0", "cols": 4})]
        return configs

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, (
            "wgsl-shaders/mul_mat_vec.wgsl", "wgsl-shaders/mul_mat_vec_q_acc.tmpl", "wgsl-shaders/common_decls.tmpl"))])

    def known_finding(self, check, config):
        """§19.3 under `sanitize` for the legacy formats (their 2-byte-offset blocks reach
        load_u32_at_src0's unaligned reads; the K formats read aligned words only); §19.2 under
        `native_width` for Q4_0, whose case (finding_examples) runs first: a q8_1 block sum past
        f16 turns y to inf or NaN. The drawn activations keep every block sum finite
        (cases.with_finite_sums), so the random examples judge everything else."""
        if check == "sanitize" and config["weight"] in ("q4_0", "q4_1", "q8_0"):
            return KnownFinding(READS_PAST_WEIGHTS, kinds=(FailureKind.SANITIZER,),
                                reasons=("out-of-bounds read of storage buffer src0:",), on_this_adapter=False,
                                finding_id="llamacpp-mmvq-reads-past-weights")
        if check == "native_width" and config["weight"] == "q4_0":
            return KnownFinding(SUM_OVERFLOW, outputs=("y",), finding_id="llamacpp-q8-1-sum-overflow")
        return None

    def finding_examples(self, check, config):
        """§19.2's case (cases.overflowing_sum_case) in the config's columns, first under `native_width`."""
        if check == "native_width" and config["weight"] == "q4_0":
            return [overflowing_sum_case(config["cols"])]
        return []

    def cases(self, config, profile):
        return mul_mat_vec_cases(config["weight"], config["cols"], profile)

    def corners(self, config):
        rng = np.random.default_rng(43)
        weight, cols = config["weight"], config["cols"]
        from verify.sources.llamacpp.quant.cases import weight_blocks

        block = gq.block_values(weight)
        k = block * (65 if block == 32 else 17)  # one block past what 256 lanes take in one step
        weights = weight_blocks(rng, weight, 5, k, "raw")  # 5 rows: a second workgroup with one row
        activations = gq.quantize("q8_1", rng.standard_normal((cols, k)).astype(np.float32))
        return [Case({"weights": weights, "activations": activations},
                     {"m": 5, "k": k, "cols": cols, "weights": "raw", "values": "corner", "seed": 43})]

    def launch(self, device, wgsl, config, case):
        check_width(device, config)
        weights, activations = case["weights"], case["activations"]
        m, blocks, _ = weights.shape
        cols = activations.shape[0]
        if cols != config["cols"]:
            raise UsageError(f"the case has {cols} activation columns; the program is instantiated for "
                             f"{config['cols']}")
        k = blocks * gq.block_values(config["weight"])
        pipeline = device.pipeline(wgsl)
        params = {"offset_src0": 0, "offset_src1": 0, "offset_dst": 0, "m": m, "n": cols, "k": k,
                  "stride_01": blocks, "stride_11": k, "stride_02": m * blocks, "stride_12": cols * k,
                  "stride_03": m * blocks, "stride_13": cols * k, "bs02": 1, "bs03": 1, "broadcast2": 1,
                  "broadcast3": 1}
        resources = bind(pipeline, {"src0": np.ascontiguousarray(weights).reshape(-1),
                                    "src1q": np.ascontiguousarray(activations),
                                    "dst": Output(np.float32, (cols, m))}, params)
        run = device.run(pipeline, resources, selection.mul_mat_vec_grid(_adapter(config), m) + (1,))
        return Launched({"y": run.outputs["dst"]}, {"y": run.guard_intact["dst"]}, run.timing)

    def expected(self, config, case):
        exact = gq.dot(config["weight"], case["weights"], case["activations"])
        budget = mmvq_budget(config["weight"], case["weights"], case["activations"], exact)
        return [Expected.around("y", exact, budget, "f32")]

    def features(self, case):
        return {"k": case.params["k"], "m": case.params["m"]}
