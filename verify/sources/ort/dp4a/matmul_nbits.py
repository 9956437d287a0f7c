"""`ort.matmul_nbits`: ONNX Runtime Web's MatMulNBits, end to end, from float A to Y.

Each case becomes the feeds of a one-node MatMulNBits model (verify.sources.ort.dp4a.model) run by
ORT's own WebGPU execution provider on Dawn (verify.sources.ort.runtime), on the adapter of the
check's dawn device. Nothing of ORT is re-implemented: it quantizes A, picks its programs and
dispatches them itself. The cases are dp4a.matmul's (M/N/K tails, small M, block sizes 32-128,
4/8 bits, zero points, bias, f16/f32, ties, all-zero blocks, outliers, tiny and huge blocks), and
`accumulator_range` adds large same-sign sums.

Which arithmetic a case gets is ORT's dispatch rule (docs/ort-dp4a.md §3): with accuracy_level
4, an adapter with subgroups, and M >= 4 or f32 outputs, the DP4A programs (quantize, then the
tile program for M >= 4 or the small-M program below); otherwise ORT's floating-point
programs. `expected` follows the rule, and `launch` checks that ORT dispatched what the rule says,
so a change of ORT's rule cannot pass unnoticed under the wrong budget. The budgets are
verify.budgets.end_to_end's: every legal quantization of A plus ORT's arithmetic on the DP4A
path, the float arithmetic of K products on the other.
"""

from __future__ import annotations

import time

import numpy as np

from verify.budgets.end_to_end import dp4a_budget, float_budget
from verify.budgets.expected import Expected
from verify.checks.finding_cases import first_drawn
from verify.errors import SetupError
from verify.gpu.device import Timing
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.kernels.dp4a.common import BLOCK_SIZE, DTYPE, check_pinned_shape
from verify.kernels.dp4a.matmul import (
    HAS_BIAS,
    HAS_ZERO_POINTS,
    K,
    M,
    Matmul,
    N,
    centred_weights,
)
from verify.kernels.dp4a.matmul_cases import matmul_cases
from verify.results.record import KnownFinding
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.capture import DP4A_PROGRAMS, QUANTIZE, SMALL_M, TILE
from verify.sources.ort.dp4a.captures import CaptureConfig, captured_programs
from verify.sources.ort.dp4a.model import MatMulNBitsModel
from verify.sources.ort.dp4a.programs import (
    BITS,
    F16_ACCUMULATION,
    FP32_ACCUMULATION,
    accumulator,
    check_fp32_accumulation,
    product_precision,
)
from verify.sources.ort.launch import MIN_TILE_M, SESSION_LEAVES_OUT, DerivedConfig, case_profile, header
from verify.sources.ort.runtime import require_pinned_ort

ACCURACY_LEVEL = ConfigKey("accuracy_level", 4, (4, 0),
                           "MatMulNBits' accuracy_level: 4 lets ORT quantize A to int8 (its DP4A path); 0 keeps A "
                           "in floating point (its MatMulNBits programs: the control)")


def uses_dp4a(config: dict, rows: int) -> bool:
    """ORT's rule (WouldApplyDP4AMatMulNBitsInCurrentDispatch, for an adapter with subgroups that
    is neither Apple's nor Qualcomm's): accuracy_level 4, and M >= 4 or f32 outputs, where M is
    A's rows with the batch folded in (B is 2-D, so ORT's matmul helper flattens A [batch, M, K]
    to [batch·M, K]). The shape conditions (K % 128, N % 16, block_size % 32) hold for every case
    verify draws."""
    return config["accuracy_level"] == 4 and (rows >= MIN_TILE_M or config["dtype"] == "f32")


def dp4a_programs(config: dict, rows: int) -> tuple[str, ...]:
    """The DP4A programs ORT dispatches for A's `rows` (batch·M), in order (none off the DP4A path)."""
    if not uses_dp4a(config, rows):
        return ()
    return (QUANTIZE, TILE if rows >= MIN_TILE_M else SMALL_M)


class OrtMatmulNBits(DerivedConfig, Kernel):
    """ORT's session output Y against the float64 references, under budgets for ORT's quantization."""

    name = "ort.matmul_nbits"
    family = "dp4a"
    source = "ort"
    summary = ("ONNX Runtime Web 1.30 (WebGPU provider on Dawn) running one com.microsoft.MatMulNBits node: "
               "Y from float A, ORT quantizing A itself")
    reference = "verify.references.nbits.dp4a_product (DP4A path), verify.references.nbits.matmul_nbits (float path)"
    config_keys = (DTYPE, BITS, BLOCK_SIZE, ACCURACY_LEVEL, HAS_ZERO_POINTS, HAS_BIAS, M, N, K, FP32_ACCUMULATION)
    checks = ("reference", "accumulator_range", "quantization_error")
    leaves_out = SESSION_LEAVES_OUT
    derived_keys = ("acc",)
    output_axes = {"y": ("m", "n"), "dp4a_exact": ("m", "n")}
    budget_function = staticmethod(dp4a_budget)
    #: Few configs keep the ci gate's cost down: 2-, 4- and 8-bit, f16 and f32, zero points, bias, both paths.
    gate_shapes = (dict(dtype="f16", bits=4, block_size=32, has_zero_points=1),
                   dict(dtype="f32", bits=8, block_size=64, has_bias=1),
                   dict(dtype="f32", bits=2, block_size=128, has_zero_points=1, has_bias=1),
                   dict(dtype="f16", bits=4, block_size=64, has_bias=1, accuracy_level=0))

    #: With an onnxruntime-web that has the f32-accumulation option, the gate also runs the f16
    #: config of §13.1 with it (the accumulator_range cases that overflow f16 must then pass).
    fp32_gate_shape = dict(dtype="f16", bits=4, block_size=32, has_zero_points=1, fp32_accumulation=1)

    def derive(self, config):
        """ORT accumulates in the output type on every path, unless the session asks for f32
        (fp32_accumulation, onnxruntime-web 1.31.1 and later)."""
        return {"acc": accumulator(config)}

    def validate(self, config):
        check_pinned_shape(config)
        check_fp32_accumulation(config)

    def requirements(self, config):
        return frozenset({"shader-f16"}) if config["dtype"] == "f16" else frozenset()

    def gate_configs(self, profile):
        shapes = list(self.gate_shapes)
        if ort_runtime.has_fp32_accumulation_option():
            shapes.append(self.fp32_gate_shape)
        return [self.config(c) for c in shapes]

    def known_finding(self, check, config):
        if check == "accumulator_range" and config["acc"] == "f16":
            return KnownFinding(F16_ACCUMULATION, outputs=("y",), finding_id="ort-f16-accumulation")
        return None

    def finding_examples(self, check, config):
        """accumulator_range's first case at acc=f16 (K = 512, running sums to about 81880): the
        overflow on every seed and budget."""
        if check != "accumulator_range" or config["acc"] != "f16":
            return []
        return [first_drawn(self, check, config)]

    # -- what ORT runs -------------------------------------------------------------------------------
    def captures(self, config) -> list[CaptureConfig]:
        """The ORT runs whose programs cover this config: M = 4 (the tile program, or the float
        one) and M = 1 (the small-M program, or the float one)."""
        keys = dict(dtype=config["dtype"], bits=config["bits"], block_size=config["block_size"],
                    has_zero_points=bool(config["has_zero_points"]), has_bias=bool(config["has_bias"]),
                    accuracy_level=config["accuracy_level"],
                    fp32_accumulation=bool(config.get("fp32_accumulation")))
        return [CaptureConfig(**keys, m=m) for m in (MIN_TILE_M, 1)]

    def wgsl(self, config):
        """Every program ORT dispatches for this config (at M = 4 and M = 1), in order, each after
        its provenance line. For reading and for the record's hash: ORT compiles them itself. The
        session runs in the pinned onnxruntime-web, so a machine without it (or with another
        version) is refused here, while planning (SetupError), whatever the cache holds."""
        require_pinned_ort()
        parts, seen = [header(self.name, config)], set()
        for capture in self.captures(config):
            programs = captured_programs(capture)
            for label in programs.programs:
                if label not in seen:
                    seen.add(label)
                    parts.append(f"// ---- program {label} ----\n{programs.wgsl(label)}")
        return "\n".join(parts)

    def modules(self, wgsl):
        """None: ORT compiles its programs in its own session; the check's device compiles nothing."""
        return []

    def cases(self, config, profile):
        return matmul_cases(config, case_profile(profile))

    def model(self, config, k: int, n: int) -> MatMulNBitsModel:
        return MatMulNBitsModel(config["dtype"], config["bits"], config["block_size"], k, n,
                                config["accuracy_level"], bool(config["has_zero_points"]), bool(config["has_bias"]),
                                bool(config.get("fp32_accumulation")))

    def launch(self, device, wgsl, config, case):
        """One run of ORT's session on the case; Timing.dispatch is the run's wall time.

        ORT runs on the Vulkan driver of the check's dawn device and requests its adapter there
        itself, as it does in a browser."""
        runtime = ort_runtime.shared_runtime(getattr(device, "driver", None))
        if config["accuracy_level"] == 4 and "subgroups" not in runtime.adapter.get("features", ()):
            raise SetupError("ORT's DP4A path needs the subgroups feature, which the adapter ORT runs on lacks "
                             f"({runtime.adapter.get('description')})")
        a = case["a"]
        batch, m, k = a.shape
        n = case["b"].shape[0]
        model = self.model(config, k, n)
        feeds = model.feeds(a, case["b"], case["b_scales"],
                            case["zero_points"] if config["has_zero_points"] else None,
                            case["bias"] if config["has_bias"] else None)
        started = time.perf_counter()
        run = runtime.run(model, feeds)
        elapsed = time.perf_counter() - started
        ran = tuple(label for label in run.labels if label in DP4A_PROGRAMS)
        want = dp4a_programs(config, batch * m)
        if ran != want or not run.dispatches:
            raise OrtDispatchRuleError(f"ORT dispatched {', '.join(run.labels) or 'nothing'} "
                                       f"for batch·M = {batch * m}, where the rule verify judges by gives "
                                       f"{', '.join(want) or 'its float programs'}")
        return Launched({"y": run.outputs["Y"]}, {}, Timing(dispatch=elapsed))

    # -- what it must give ------------------------------------------------------------------------------
    def expected(self, config, case):
        """The DP4A-exact product of A's nominal quantization, or the float64 product, by ORT's rule;
        budgets from verify.budgets.end_to_end (their docstrings derive them)."""
        a = case["a"]
        bias = case["bias"] if config["has_bias"] else None
        zero_points = case["zero_points"] if config["has_zero_points"] else None
        if uses_dp4a(config, int(np.prod(a.shape[:-1]))):
            centre, budget = dp4a_budget(a, centred_weights(case, config), case["b_scales"], bias,
                                         dtype=config["dtype"], acc=config["acc"], mul=product_precision(config),
                                         block_size=config["block_size"])
        else:
            centre, budget = float_budget(a, case["b"], case["b_scales"].astype(np.float64), zero_points, bias,
                                          dtype=config["dtype"], bits=config["bits"], block_size=config["block_size"])
        return [Expected.around("y", centre, budget, config["dtype"])]

    def features(self, case):
        return Matmul.features(self, case)

    def budget_doc(self) -> str:
        import inspect

        return "\n\n".join(inspect.getdoc(f) or "" for f in (dp4a_budget, float_budget))


class OrtDispatchRuleError(RuntimeError):
    """ORT ran other programs than the rule verify's budgets assume: verify's model of ORT is out of date."""
