"""ggml-webgpu's float and dequantizing mat-vec: `llamacpp.quant.mul_mat_vec`.

For a MUL_MAT with at most 4 activation columns (C L1624) that does not take MMVQ (f32 or f16
weights on any adapter; block weights on an adapter without DP4A or of another vendor, as
lavapipe's: selection.can_use_mmvq), ggml-webgpu runs mul_mat_vec.wgsl with
mul_mat_vec_acc.tmpl on the f32 (or, with f16 weights, f16) activations themselves: 256 threads
walk K, each adding w·x (vec4 dot products for f32/f16 rows of a multiple of 4: VEC; one value at
a time otherwise: SCALAR; a legacy block's 8 values a thread, decoded from its bytes, for q4_0,
q4_1 and q8_0) into a private sum per output row, then the lanes' sums meet by subgroupAdd or a
workgroup tree; a workgroup writes 4 rows. verify instantiates it as the shader library does
(selection.mul_mat_vec_dequant_instance, S L1968-2111), launches it as the host does (C L1660-1720:
the params in order, element offsets and row strides of the views, ceil(M/4) workgroups folded
into 2-D) and judges y against references.ggml_mul_mat.mul_mat_vec (W decoded exactly) within
verify.budgets.llamacpp_quant.mul_mat_vec_budget.
"""

from __future__ import annotations

import numpy as np

from verify.budgets.expected import Expected
from verify.budgets.llamacpp_quant import mul_mat_vec_budget
from verify.errors import FailureKind, UsageError
from verify.gpu import Output
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.references import ggml_quants as gq
from verify.references.ggml_mul_mat import mul_mat_vec
from verify.results.record import KnownFinding
from verify.sources.llamacpp import programs, selection
from verify.sources.llamacpp.findings import F16_DOT_OVERFLOW
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
from verify.sources.llamacpp.quant.mul_mat_vec_cases import make_case, mul_mat_vec_cases, overflow_case

WEIGHT = ConfigKey("weight", "f16", selection.MUL_MAT_VEC_WEIGHTS,
                   "the weight type (src0): f32/f16 (MUL_ACC_FLOAT) or a legacy block format (MUL_ACC_<TYPE>)")
ACTIVATION = ConfigKey("activation", "f32", selection.MUL_MAT_VEC_ACTIVATIONS,
                       "the activations' type (src1, SRC1_INNER_TYPE): f16 only with f16 weights (C L4443-4446)")
VEC4 = ConfigKey("vec4", True, (True, False),
                 "VEC (f32/f16 weights whose rows are a multiple of 4 long, S L1972-1975) or SCALAR; the cases "
                 "draw K to match")
COLS = ConfigKey("cols", 1, (1, 2, 3, 4), "activation columns (dst->ne[1], NUM_COLS): at most 4 on the mat-vec path")
REDUCE = ConfigKey("reduce", "subgroup", ("subgroup", "workgroup"),
                   "USE_SUBGROUP_REDUCTION (an adapter with subgroups) or USE_WORKGROUP_REDUCTION")
#: §19.3 as this program shows it: the legacy blocks go through the same load_u32_at_src0.
READS_PAST_WEIGHTS_NO_MMVQ = (
    "ggml-webgpu's mat-vec without MMVQ reads one word past the weights for the legacy formats, through the same "
    "load_u32_at_src0 (common_decls.tmpl) as MMVQ (docs/findings.md §19.3).\n"
    "Evidence: the `sanitize` check of llamacpp.quant.mul_mat_vec for q4_0, q4_1 and q8_0 weights ('out-of-bounds "
    "read of storage buffer src0 ... (src0[word_idx + 1u])'); the value is discarded, so y is right.")
#: The adapter the programs are made for: lavapipe-like (no DP4A vendor), so block weights take
#: this program rather than MMVQ, as they do on every adapter but AMD's, Intel's and NVIDIA's.
VENDOR = "mesa"


def _adapter(config: dict) -> selection.Adapter:
    return adapter_of(config, subgroups=config["reduce"] == "subgroup", vendor=VENDOR)


def _k_for(config: dict) -> int:
    """A row length of the config's program, for instantiating it: VEC needs K % 4 == 0, SCALAR
    float weights K % 4 != 0; the program's text depends on nothing else of K."""
    if config["weight"] in ("f32", "f16"):
        return 4 if config["vec4"] else 1
    return gq.block_values(config["weight"])


def _layout(values: np.ndarray, offset: int, pad: int, fill) -> np.ndarray:
    """Rows [R, n, ...] laid as a ggml view: `offset` units before the first, each row followed by
    `pad` units, every unit not the tensor's filled with `fill` (NaN: a read of it shows)."""
    rows = values.shape[0]
    padded = np.full((rows, values.shape[1] + pad) + values.shape[2:], fill, values.dtype)
    padded[:, :values.shape[1]] = values
    head = np.full((offset,) + values.shape[2:], fill, values.dtype)
    return np.concatenate([head.reshape(-1), padded.reshape(-1)])


class MulMatVec(Kernel):
    """y[n, m] = Σ_k W[m, k] x[n, k] for f32, f16, q4_0, q4_1 or q8_0 weights and f32 (f16) activations."""

    name = "llamacpp.quant.mul_mat_vec"
    family = "llamacpp.quant"
    source = "llamacpp"
    summary = ("llama.cpp ggml-webgpu's mul_mat_vec without MMVQ: f32/f16 weights (vec4 or scalar) and q4_0/q4_1/"
               "q8_0 blocks decoded in place, times f32 (f16) activation columns, f32 output")
    reference = "verify.references.ggml_mul_mat.mul_mat_vec"
    #: native_width in place of reference: the subgroup reduction calls subgroupAdd in a loop that
    #: starts at subgroup_id, which verify cannot emulate at other widths (verify.sources.llamacpp.checks).
    checks = ("native_width",)
    config_keys = (WEIGHT, ACTIVATION, VEC4, COLS, REDUCE, SUBGROUP_MIN, SUBGROUP_MAX)
    output_axes = {"y": ("column", "row")}
    budget_function = staticmethod(mul_mat_vec_budget)

    def requirements(self, config):
        # every program says `enable f16;`
        return frozenset({"subgroup", "shader-f16"} if config["reduce"] == "subgroup" else {"shader-f16"})

    def validate(self, config):
        if config["subgroup_min"] > config["subgroup_max"]:
            raise UsageError(f"subgroup_min={config['subgroup_min']} is above subgroup_max={config['subgroup_max']}")
        if config["activation"] == "f16" and config["weight"] != "f16":
            raise UsageError("ggml-webgpu's MUL_MAT takes f16 activations with f16 weights only (C L4443-4446)")
        if config["vec4"] and config["weight"] not in ("f32", "f16"):
            raise UsageError(f"{config['weight']} weights are never vectorized (S L1972-1975): vec4=False")

    def instance(self, config) -> selection.Instance:
        return selection.mul_mat_vec_dequant_instance(_adapter(config), config["weight"], config["activation"],
                                                      _k_for(config), config["cols"])

    def wgsl(self, config):
        return header(self.name, config) + programs.load(self.instance(config))

    def gate_configs(self, profile):
        """f16 weights (llama.cpp's usual float weights) vec4 and scalar, f32 weights vec4 with 3
        columns by the workgroup tree, f16 x f16, and the three legacy formats (2 or 4 columns)."""
        return [self.config({}), self.config({"vec4": False, "cols": 2}),
                self.config({"weight": "f32", "cols": 3, "reduce": "workgroup"}),
                self.config({"weight": "f32", "vec4": False}),
                self.config({"activation": "f16"}), self.config({"activation": "f16", "vec4": False, "cols": 4}),
                self.config({"weight": "q4_0", "vec4": False}),
                self.config({"weight": "q8_0", "vec4": False, "cols": 2}),
                self.config({"weight": "q4_1", "vec4": False, "cols": 4, "reduce": "workgroup"})]

    def upstream(self, config, wgsl):
        return upstream([Program(self.instance(config).variant, (
            "wgsl-shaders/mul_mat_vec.wgsl", "wgsl-shaders/mul_mat_vec_acc.tmpl", "wgsl-shaders/common_decls.tmpl"))])

    def known_finding(self, check, config):
        """§19.9 under `native_width` for f16 x f16 as VEC: a vec4 of products past 65504 makes y inf
        (or NaN); §19.3's read past the weights under `sanitize` for the legacy formats: this program
        reads their blocks through the same load_u32_at_src0 (common_decls.tmpl) as MMVQ."""
        if check == "native_width" and config["activation"] == "f16" and config["vec4"]:
            return KnownFinding(F16_DOT_OVERFLOW, outputs=("y",), kinds=(FailureKind.OVER_BUDGET, FailureKind.NAN),
                                finding_id="llamacpp-mul-mat-vec-f16-dot")
        if check == "sanitize" and config["weight"] in ("q4_0", "q4_1", "q8_0"):
            return KnownFinding(READS_PAST_WEIGHTS_NO_MMVQ, kinds=(FailureKind.SANITIZER,),
                                reasons=("out-of-bounds read of storage buffer src0:",), on_this_adapter=False,
                                finding_id="llamacpp-mmvq-reads-past-weights")
        return None

    def finding_examples(self, check, config):
        """§19.9's case, run first under `native_width` for f16 x f16 as VEC whatever the seed draws
        (the drawn cases keep each vec4's products inside f16): weights and activations of 256."""
        if check != "native_width" or config["activation"] != "f16" or not config["vec4"]:
            return []
        return [overflow_case(8, config["cols"])]

    def cases(self, config, profile):
        return mul_mat_vec_cases(config, profile)

    def corners(self, config):
        """Rows one past the workgroup's step (a thread with one term more) in 5 rows (a second
        workgroup with one row), laid as a padded view, all-positive values (no cancellation); then
        9 rows of extremes (f32 weights near 2^60 against activations near 2^-60, f16 weights at
        65504, raw block bytes) one below the step; 4 rows of one constant (every lane's sums round
        alike)."""
        w, a, vec, cols = config["weight"], config["activation"], config["vec4"], config["cols"]
        if w in ("f32", "f16"):
            k, k2 = (1028, 2044) if vec else (257, 511)
        else:
            k, k2 = 65 * gq.block_values(w), 2 * gq.block_values(w)
        layout = (4, 8, 4, 4) if vec else (1, 3, 2, 1)
        return [make_case(w, a, vec, cols, 5, k, "positive", 61, layout),
                make_case(w, a, vec, cols, 9, k2, "extreme", 62), make_case(w, a, vec, cols, 4, k, "constant", 63)]

    def launch(self, device, wgsl, config, case):
        check_width(device, config)
        weights, x = case["weights"], case["x"]
        p = case.params
        m, k, cols = p["m"], p["k"], p["cols"]
        if cols != config["cols"] or x.shape != (cols, k):
            raise UsageError(f"the case has activations {x.shape}; the program is instantiated for {config['cols']} "
                             f"columns of K = {k}")
        vec = config["vec4"]
        if config["weight"] in ("f32", "f16"):
            if vec != (k % 4 == 0):
                raise UsageError(f"K = {k}: ggml-webgpu takes {'VEC' if k % 4 == 0 else 'SCALAR'} for it "
                                 "(S L1972-1975)")
            src0 = _layout(np.asarray(weights, selection_dtype(config["weight"])), p["offset_w"], p["pad_w"], np.nan)
            if src0.dtype == np.float16 and src0.size % 2:  # the tensor's bytes rounded up to 4 (C L403-406)
                src0 = np.concatenate([src0, np.zeros(1, np.float16)])
            stride_01 = k + p["pad_w"]
        else:
            blocks = np.asarray(weights, np.uint8)
            flat = _layout(blocks.reshape(m, blocks.shape[1], -1), p["offset_w"], p["pad_w"], 0xFF)
            src0 = np.zeros(-(-flat.size // 4) * 4, np.uint8)  # the bytes rounded up to 4 (C L403-406)
            src0[:flat.size] = flat
            stride_01 = blocks.shape[1] + p["pad_w"]
        src1 = _layout(np.asarray(x, selection_dtype(config["activation"])), p["offset_x"], p["pad_x"], np.nan)
        if src1.dtype == np.float16 and src1.size % 2:
            src1 = np.concatenate([src1, np.zeros(1, np.float16)])
        stride_11 = k + p["pad_x"]
        params = {"offset_src0": p["offset_w"], "offset_src1": p["offset_x"], "offset_dst": 0, "m": m, "n": cols,
                  "k": k, "stride_01": stride_01, "stride_11": stride_11, "stride_02": m * stride_01,
                  "stride_12": cols * stride_11, "stride_03": m * stride_01, "stride_13": cols * stride_11,
                  "bs02": 1, "bs03": 1, "broadcast2": 1, "broadcast3": 1}
        pipeline = device.pipeline(wgsl)
        resources = bind(pipeline, {"src0": src0, "src1": src1, "dst": Output(np.float32, (cols, m))}, params)
        run = device.run(pipeline, resources, selection.mul_mat_vec_grid(_adapter(config), m) + (1,))
        return Launched({"y": run.outputs["dst"]}, {"y": run.guard_intact["dst"]}, run.timing)

    def expected(self, config, case):
        weight = config["weight"]
        exact = mul_mat_vec(weight, case["weights"], case["x"])
        budget = mul_mat_vec_budget(weight, config["activation"], config["vec4"], case["weights"], case["x"], exact)
        return [Expected.around("y", exact, budget, "f32")]

    def features(self, case):
        return {"k": case.params["k"], "m": case.params["m"], "values": case.params["values"]}


def selection_dtype(kind: str):
    return {"f32": np.float32, "f16": np.float16}[kind]

