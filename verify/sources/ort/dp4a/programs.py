"""ONNX Runtime's own DP4A kernels, launched by verify under the contracts of dp4a.quantize and dp4a.matmul.

The WGSL is ORT's, exactly as onnxruntime-web generated it for the config (verify.sources.ort
.programs); what verify supplies is what ORT's host code would: the bindings by ORT's names
(inputs in AddInput order, then outputs, then `uniforms`), the uniform struct read from the WGSL
and filled field by field (as ORT's ProgramManager packs it), and ORT's dispatch sizes, normalised
as ORT normalises them. tests/sources/ort/test_ort.py holds these launches to ORT's own: on inputs
captured from an ORT run, each reproduces ORT's outputs bit for bit.

Each kernel's cases are drawn in the domain where ORT runs its program: the tile program for
M >= 4, the small-M program for M < 4 and f32 outputs (f16 models with M < 4 take ORT's non-DP4A
MatMulNBits, except on Qualcomm adapters). The contracts are ours; two facts of ORT's arithmetic
enter the budgets: it accumulates in the output type (no f32 accumulation option in 1.30), and
its 2- and 4-bit programs multiply I_c by the scale in the output type (`mul_precision =
output_element_t`), so for f16 models I_c is rounded to f16 first (verify.budgets.dp4a).
"""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from verify.budgets.dp4a import matmul_budget
from verify.budgets.expected import Expected
from verify.budgets.roundoff import numpy_dtype
from verify.cases import Case
from verify.checks.finding_cases import first_drawn
from verify.errors import FailureKind, UsageError
from verify.gpu import Output
from verify.kernels.contract import ConfigKey, Launched, Upstream
from verify.kernels.dp4a.common import (
    A_BLOCK,
    BLOCK_SIZE,
    DTYPE,
    check_pinned_shape,
    check_shape,
)
from verify.kernels.dp4a.matmul import (
    HAS_BIAS,
    HAS_ZERO_POINTS,
    MAX_PINNED_ELEMENTS,
    K,
    M,
    Matmul,
    N,
    centred_weights,
    dp4a_exact,
)
from verify.kernels.dp4a.matmul_cases import matmul_cases
from verify.kernels.dp4a.quantize import Quantize
from verify.kernels.dp4a.quantize_cases import quantize_cases
from verify.references.dp4a_quant import ACTIVATION_BLOCK, unpack_codes
from verify.results.record import KnownFinding
from verify.sources.ort.capture import PROGRAM_FILES, QUANTIZE, SMALL_M, SOURCE_FOLDER, TILE
from verify.sources.ort.dp4a.captures import CaptureConfig, captured_programs, provenance
from verify.sources.ort.launch import (
    MIN_TILE_M,
    QUANTIZE_LANES,
    SMALL_M_COLS,
    TILE_COLS,
    TILE_ROWS,
    DerivedConfig,
    bind,
    case_profile,
    header,
    ort_grid,
    zero_blocks_per_col,
)

#: ORT's WebGPU provider takes 2-, 4- and 8-bit weights, all three on its DP4A path (2-bit through a
#: lookup table of int8 weights in workgroup memory; with zero points, one table per zero point).
BITS = ConfigKey("bits", 4, (2, 4, 8), "weight bits")


#: onnxruntime-web's session option for f32 accumulation in its matmul programs (ORT PR #29599,
#: docs/ort-dp4a.md §9.5): from 1.31.1; ORT's default is still the output type.
FP32_ACCUMULATION = ConfigKey("fp32_accumulation", 0, (0, 1),
                              "1: the session option ep.webgpuexecutionprovider.enableMatmulFp32Accumulation "
                              "(onnxruntime-web 1.31.1 and later), ORT's matmuls accumulate in f32 (acc=f32); 0: "
                              "ORT's default, the output type")


def accumulator(config: dict) -> str:
    """The type ORT's matmul programs accumulate in (`acc_element_t`): f32 with the session option
    enableMatmulFp32Accumulation, else the output type."""
    return "f32" if config.get("fp32_accumulation") else config["dtype"]


def check_fp32_accumulation(config: dict) -> None:
    """A config asking for the f32-accumulation option of an onnxruntime-web without it is a usage
    error (1.30.0 would ignore the option silently and accumulate in f16)."""
    from verify.sources.ort import runtime as ort_runtime

    if config.get("fp32_accumulation") and not ort_runtime.has_fp32_accumulation_option():
        raise UsageError(f"fp32_accumulation=1: onnxruntime-web {ort_runtime.selected_version()} has no "
                         "enableMatmulFp32Accumulation option (it has from "
                         f"{ort_runtime.FP32_ACCUMULATION_SINCE}: --ort-version "
                         f"{ort_runtime.FP32_ACCUMULATION_SINCE})")


def product_precision(config: dict) -> str:
    """The type ORT's DP4A programs multiply I_c by the scale in (`mul_precision`): the output type
    for 2- and 4-bit weights, f32 for 8-bit (dp4a_matmul_nbits.cc)."""
    return "f32" if config["bits"] == 8 else config["dtype"]


def ort_upstream(program: str, wgsl: str) -> Upstream | None:
    """ORT's program `program` as the run that generated `wgsl` dispatched it, with its host code
    and templates in microsoft/onnxruntime."""
    found = provenance(wgsl)
    if found is None:
        return None
    version, model = found
    files = tuple(f"{SOURCE_FOLDER}/{name}" for name in PROGRAM_FILES.get(program, ()))
    return Upstream("ONNX Runtime Web (microsoft/onnxruntime; npm onnxruntime-web), WebGPU execution provider",
                    version, f"program `{program}`, as a session of {model} dispatches it (generated from "
                    + ", ".join(f"`{f.rsplit('/', 1)[-1]}`" for f in files) + f" in `{SOURCE_FOLDER}`)", files)


# -- quantize --------------------------------------------------------------------------------------------
#: Known finding of ort.dp4a.quantize under `zero_blocks` (Kernel.known_finding).
ZERO_BLOCK_CODES = (
    "ORT's quantizer divides an all-zero block by its max, 0/0: the block's codes are pack4x8snorm(NaN), "
    "which WGSL leaves to the implementation.\n"
    "DP4AMatMulQuantize computes `norm_a = local_a / scale` with scale = the block's max |a| and stores "
    "pack4x8snorm(norm_a) with no guard for scale = 0 (dp4a_quantize.wgsl.template). The stored scale is 0, so "
    "ORT's own matmul multiplies those codes by 0 and Y is unaffected (ort.matmul_nbits passes on zero blocks), "
    "but a consumer that reads the codes, or a weight scale that is Inf or NaN, sees them. dp4a.quantize's contract "
    "requires codes 0 there (it divides by 1). Evidence: tests/sources/ort/test_ort.py::"
    "test_ort_quantizer_writes_code_zero_for_an_all_zero_block (strict xfail); docs/findings.md §13.")


def _block_is_zero(a: np.ndarray) -> np.ndarray:
    return ~np.any(np.asarray(a).reshape(-1, ACTIVATION_BLOCK) != 0, axis=-1)


def without_zero_blocks(case: Case) -> Case:
    """`case` with every all-zero 128-value block given one nonzero value (a lone block max):
    zero blocks are the `zero_blocks` check's cases."""
    a = case["a"]
    zero = _block_is_zero(a)
    if not zero.any():
        return case
    blocks = a.reshape(-1, ACTIVATION_BLOCK).copy()
    rng = np.random.default_rng([int(case.params["seed"]), 5])
    where = rng.integers(0, ACTIVATION_BLOCK, int(zero.sum()))
    blocks[np.flatnonzero(zero), where] = a.dtype.type(rng.choice([-1.0, 1.0]) * 2.0 ** rng.integers(-8, 8))
    return case.replace({"a": blocks.reshape(a.shape)})


def with_zero_blocks(case: Case) -> Case:
    """`case` with a random nonempty set of its 128-value blocks set to zero."""
    a = case["a"]
    blocks = a.reshape(-1, ACTIVATION_BLOCK).copy()
    rng = np.random.default_rng([int(case.params["seed"]), 6])
    chosen = rng.random(blocks.shape[0]) < 0.5
    chosen[rng.integers(0, blocks.shape[0])] = True
    blocks[chosen] = 0
    return case.replace({"a": blocks.reshape(a.shape)}, zero_blocks=int(chosen.sum()))


class OrtQuantize(DerivedConfig, Quantize):
    """ORT's DP4AMatMulQuantize under dp4a.quantize's contract (legal codes and scales, budget 0)."""

    name = "ort.dp4a.quantize"
    source = "ort"
    summary = "ONNX Runtime Web 1.30's DP4AMatMulQuantize: A [..., K] -> int8 codes and a scale per 128 values"
    config_keys = (DTYPE,)
    checks = ("reference", "zero_blocks", "toggles")
    derived_keys = ("program",)

    def derive(self, config):
        return {"program": QUANTIZE}

    def validate(self, config):
        pass

    def requirements(self, config):
        return frozenset({"subgroup", "shader-f16"} if config["dtype"] == "f16" else {"subgroup"})

    def gate_configs(self, profile):
        """f16 and f32. The gate captures them while it plans, so a machine without ORT skips the
        kernel (SetupError)."""
        return [self.config({"dtype": dtype}) for dtype in ("f16", "f32")]

    def upstream(self, config, wgsl):
        return ort_upstream(QUANTIZE, wgsl)

    def known_finding(self, check, config):
        return (KnownFinding(ZERO_BLOCK_CODES, outputs=("codes",), finding_id="ort-quantize-zero-block")
                if check == "zero_blocks" else None)

    def finding_examples(self, check, config):
        """zero_blocks' first case (one row of K = 128, its one block all zero): the finding's codes."""
        return [first_drawn(self, check, config)] if check == "zero_blocks" else []

    def wgsl(self, config):
        return header(self.name, config) + captured_programs(CaptureConfig(config["dtype"])).wgsl(QUANTIZE)

    def cases(self, config, profile):
        return quantize_cases(config["dtype"], case_profile(profile)).map(without_zero_blocks)

    def zero_blocks_cases(self, config, profile):
        return quantize_cases(config["dtype"], case_profile(profile)).map(with_zero_blocks)

    def launch(self, device, wgsl, config, case):
        a = case["a"]
        if a.ndim < 2:
            raise UsageError(f"A must be [..., M, K], got shape {a.shape}")
        rows, k = int(np.prod(a.shape[:-1])), a.shape[-1]
        check_shape(m=rows, k=k)
        vec4_count = rows * k // 4
        pipeline = device.pipeline(wgsl)
        resources = bind(pipeline, {
            "input_a": a,
            "output": Output(np.uint32, (*a.shape[:-1], k // 4)),
            "scales": Output(a.dtype, (*a.shape[:-1], k // A_BLOCK)),
        }, {"output_size": vec4_count})
        run = device.run(pipeline, resources, ort_grid(-(-vec4_count // QUANTIZE_LANES)))
        names = {"output": "codes", "scales": "scales"}
        outputs = {names[n]: v for n, v in run.outputs.items()}
        outputs["codes"] = unpack_codes(outputs["codes"])
        return Launched(outputs, {names[n]: v for n, v in run.guard_intact.items()}, run.timing)


# -- matmul -----------------------------------------------------------------------------------------------
F16_ACCUMULATION = (
    "ORT accumulates in the output type: for f16 models the running sums overflow to Inf where Y is finite.\n"
    "DP4AMatMulNBits keeps lane_output1..4 as vec4<output_element_t> (f16 for f16 models) and adds each chunk "
    "product to them; onnxruntime-web 1.30 has no f32-accumulation option. The f16 accumulation overflow of "
    "docs/findings.md §7 (onnxruntime#29599, #29611), reproduced here in ORT's own WGSL. Evidence: "
    "tests/sources/ort/test_ort.py::test_ort_tile_program_keeps_large_same_sign_sums_finite (strict xfail); "
    "docs/findings.md §13.")


NAGA_REFUSES_TILE = (
    "Naga refuses ORT's tile program: subgroupShuffle with an abstract-int lane, valid WGSL Tint accepts.\n"
    "DP4AMatMulNBits broadcasts B with `subgroupShuffle(own_b0, 0)`; Naga (wgpu, Firefox) reports \"Subgroup "
    "operation is invalid\" for the literal lane, Tint (Dawn, Chrome) compiles it, so the program does not run in "
    "wgpu whatever the adapter. Evidence: tests/sources/ort/test_ort.py::"
    "test_naga_refusing_orts_tile_program_is_a_compile_divergence; docs/findings.md §13.5.")
UNLOADED_TILE_ROWS = (
    "ORT's tile program reads workgroup tiles it never loaded: the rows of A past M and of B past N in a partial "
    "64x64 tile.\n"
    "loadSHMA and loadSHMB return early for a row >= M (>= N), yet every lane then reads its tile_A/scale_A row "
    "and tile_B/scale_B column; sanitize reports uninitialised reads of workgroup memory there (e.g. M = 5: "
    "tile_A[0][5..63] read by lanes 5..63). Their products go only to outputs that are never stored, and WGSL "
    "zero-initialises workgroup memory, so Y is right; the reads are wasted, not wrong. Evidence: tests/sources/"
    "test_ort.py::test_orts_matmul_programs_read_only_workgroup_memory_they_wrote (strict xfail); "
    "docs/findings.md §13.")
SMALL_M_READS = (
    "ORT's small-M program reads A scales past its row (past the buffer for the last row) and sums onto "
    "zero-initialised workgroup memory.\n"
    "loadSHMA loads 8 A scales per 1024 values of K guarded only by the vec4 index, so with K/128 % 8 != 0 it reads "
    "the next rows' scales and, for the last row, past the end of scales_a (K = 256: index 2..7 of a 2-scale row; "
    "the values are never used, but ORT turns Dawn's robustness off natively). inter_results is only ever added to "
    "(`+=`), so the sums start from WGSL's zero-initialisation of workgroup memory: where an implementation does "
    "not zero it (Mesa 22.3 lavapipe under wgpu, docs/findings.md §8) Y is wrong (err/budget 1.7e7), and zeroing "
    "inter_results first makes it right. Evidence: tests/sources/ort/test_ort.py::"
    "test_orts_small_m_program_reads_no_a_scale_past_its_row, ::test_orts_matmul_programs_read_only_workgroup_"
    "memory_they_wrote (strict xfails), ::test_orts_small_m_result_rests_on_zero_initialised_workgroup_memory; "
    "docs/findings.md §13.")


class OrtMatmul(DerivedConfig, Matmul):
    """ORT's DP4AMatMulNBits (the 64x64 tile program) under dp4a.matmul's contract."""

    name = "ort.dp4a.matmul"
    source = "ort"
    summary = ("ONNX Runtime Web 1.30's DP4AMatMulNBits (64x64 tile, M >= 4): Y from int8 A codes and N-bit weights")
    config_keys = (DTYPE, BITS, BLOCK_SIZE, HAS_ZERO_POINTS, HAS_BIAS, M, N, K, FP32_ACCUMULATION)
    derived_keys = ("program", "tile", "acc", "mul")
    program = TILE
    tile = "64x64"
    #: M of the ORT run that dispatches the program.
    capture_m = MIN_TILE_M

    def derive(self, config):
        return {"program": self.program, "tile": self.tile, "acc": accumulator(config),
                "mul": product_precision(config)}

    def validate(self, config):
        check_pinned_shape(config)
        check_fp32_accumulation(config)
        if config["m"] and self.tile == "small_m" and not self.runs_at(config["m"]):
            raise UsageError(f"m={config['m']}: ORT runs {self.program} only for {self.domain}")
        largest = max((config["m"] or 1) * (config["k"] or 1), (config["n"] or 1) * (config["k"] or 1),
                      (config["m"] or 1) * (config["n"] or 1))
        if largest > MAX_PINNED_ELEMENTS:
            raise UsageError(f"m={config['m']}, n={config['n']}, k={config['k']}: a case would hold {largest} "
                             f"elements in one matrix, more than the {MAX_PINNED_ELEMENTS} verify draws")

    #: Where ORT dispatches the program, in A's rows batch·M.
    domain = f"batch·M >= {MIN_TILE_M}"

    def runs_at(self, rows: int) -> bool:
        return rows >= MIN_TILE_M

    def requirements(self, config):
        return frozenset({"subgroup", "shader-f16"} if config["dtype"] == "f16" else {"subgroup"})

    def gate_configs(self, profile):
        return [self.config(c) for c in self.gate_shapes]

    #: Two configs (each costs a cold compile of its sanitized module on lavapipe, minutes): f16 with
    #: ORT's f16 product and accumulator, and 8-bit f32 with zero points (ORT's zero-point correction)
    #: and bias; ort.matmul_nbits covers the other combinations end to end.
    gate_shapes = (dict(dtype="f16", bits=4, block_size=32, has_zero_points=1),
                   dict(dtype="f32", bits=8, block_size=128, has_zero_points=1, has_bias=1))

    #: The sanitize check's findings (every config: a partial tile, or K/128 % 8 != 0, is drawn):
    #: (evidence, what each of the sanitizer's messages of it names, the finding's id).
    sanitize_findings: tuple[tuple[str, str, str], ...] = (
        (UNLOADED_TILE_ROWS, "uninitialised read of workgroup array", "ort-tile-reads-unloaded-rows"),)
    #: The finding the outputs show where the implementation does not zero workgroup memory, or None.
    zero_init_finding: str | None = None
    #: Naga refuses this program (docs/findings.md §13.5): a compile divergence on any check run on
    #: wgpu, and the `implementations` check's preflight wherever it runs.
    naga_refuses = True

    def upstream(self, config, wgsl):
        return ort_upstream(self.program, wgsl)

    def known_finding(self, check, config):
        """Each finding with its signature: the sanitizer's reads, the f16 accumulator's overflow of
        y, and Naga's refusal as a compile divergence (only where wgpu compiles it)."""
        findings = []
        if check == "sanitize":
            # The sanitizer reads the program's own accesses: whatever this adapter's probes say.
            findings += [KnownFinding(text, kinds=(FailureKind.SANITIZER,), reasons=(reason,), finding_id=finding_id,
                                      on_this_adapter=False)
                         for text, reason, finding_id in self.sanitize_findings]
        elif self.zero_init_finding is not None:
            # Only where the adapter's workgroup-zero-init probe deviates (verify.findings): on an
            # implementation that zeroes workgroup memory as WGSL says, a wrong y is news.
            findings.append(KnownFinding(outputs=("y",), finding_id=self.zero_init_finding))
        if check == "accumulator_range" and config["acc"] == "f16":
            findings.append(KnownFinding(F16_ACCUMULATION, outputs=("y",), finding_id="ort-f16-accumulation"))
        if self.naga_refuses:
            findings.append(KnownFinding(NAGA_REFUSES_TILE, kinds=(FailureKind.COMPILE_DIVERGENCE,),
                                         implementations=() if check == "implementations" else ("wgpu",),
                                         finding_id="ort-tile-naga-refuses"))
        return tuple(findings)

    def finding_examples(self, check, config):
        """accumulator_range's first case at acc=f16 (Matmul's), and the program's first case under
        `sanitize`, whose accesses show the sanitizer's findings on every case (the uninitialised
        reads of tile_A, the reads of scales_a past the end): a budgeted gate's first part runs them."""
        if check == "sanitize" and self.sanitize_findings:
            return [first_drawn(self, check, config)]
        return super().finding_examples(check, config)

    def wgsl(self, config):
        capture = CaptureConfig(config["dtype"], config["bits"], config["block_size"], bool(config["has_zero_points"]),
                                bool(config["has_bias"]), m=self.capture_m,
                                fp32_accumulation=bool(config.get("fp32_accumulation")))
        return header(self.name, config) + captured_programs(capture).wgsl(self.program)

    def cases(self, config, profile):
        """dp4a.matmul's cases where ORT runs the program: its rows are batch·M (ORT folds the batch
        into M, B being 2-D)."""
        return matmul_cases(config, case_profile(profile)).filter(
            lambda case: self.runs_at(case.params["batch"] * case.params["m"]))

    def grid(self, rows: int, n: int) -> tuple[int, int, int]:
        return ort_grid(-(-rows // TILE_ROWS) * -(-n // TILE_COLS))

    def uniforms(self, rows: int, n: int, k: int, config: dict) -> dict:
        """Every field ORT's tile and small-M programs declare (each reads the ones it names), for
        A as ORT binds it: batch_count 1 and M = batch·M rows."""
        k_blocks = k // config["block_size"]
        return {"batch_count": 1, "M": rows, "N": n, "K": k, "K8": k // 8, "K16": k // 16, "K32": k // 32,
                "block_size": config["block_size"], "num_M_tile": -(-rows // TILE_ROWS),
                "num_N_tile": -(-n // (SMALL_M_COLS if self.tile == "small_m" else TILE_COLS)),
                "zero_blocks_per_col": zero_blocks_per_col(k_blocks, config["bits"]), "weight_idx": 0,
                "dispatch_M": rows}

    def launch(self, device, wgsl, config, case):
        batch, m, k4 = case["a_codes"].shape
        k, n = 4 * k4, case["b"].shape[0]
        check_shape(m=m, n=n, k=k, block_size=config["block_size"])
        t_type = numpy_dtype(config["dtype"])
        pipeline = device.pipeline(wgsl)
        arrays = {"input_a": case["a_codes"], "scales_a": case["a_scales"], "input_b": case["b"],
                  "scales_b": case["b_scales"], "output": Output(t_type, (batch, m, n))}
        if config["has_zero_points"]:
            arrays["zero_points"] = case["zero_points"]
        if config["has_bias"]:
            arrays["bias"] = case["bias"]
        resources = bind(pipeline, arrays, self.uniforms(batch * m, n, k, config))
        run = device.run(pipeline, resources, self.grid(batch * m, n))
        return Launched({"y": run.outputs["output"]}, {"y": run.guard_intact["output"]}, run.timing)

    def expected(self, config, case):
        """dp4a.matmul's: the DP4A-exact Y with matmul_budget, for ORT's accumulator and product precision."""
        y, codes = dp4a_exact(case, config)
        bias = case["bias"].astype(np.float64) if config["has_bias"] else None
        budget = matmul_budget(codes, case["a_scales"], centred_weights(case, config), case["b_scales"], bias, y,
                               dtype=config["dtype"], acc=config["acc"], block_size=config["block_size"],
                               mul=config["mul"])
        exact = np.ones(y.shape, dtype=bool) if case.params.get("exact_arithmetic") else None
        return [Expected.around("y", y, budget, config["dtype"], exact=exact)]


class OrtMatmulSmallM(OrtMatmul):
    """ORT's DP4AMatMulNBitsSmallMProgram (one A row per workgroup, M < 4, f32 outputs)."""

    name = "ort.dp4a.matmul_small_m"
    summary = ("ONNX Runtime Web 1.30's DP4AMatMulNBitsSmallMProgram (M < 4, f32): Y from int8 A codes and "
               "N-bit weights")
    checks = ("reference", "integer_sums", "quantization_error", "toggles")
    program = SMALL_M
    tile = "small_m"
    capture_m = 1
    sanitize_findings = ((SMALL_M_READS, "out-of-bounds read of storage buffer scales_a",
                          "ort-small-m-scales-past-row"),
                         (SMALL_M_READS, "uninitialised read of workgroup array", "ort-small-m-zero-init"))
    zero_init_finding = "ort-small-m-zero-init"
    naga_refuses = False  # the small-M program compiles under Naga (docs/findings.md §13.5)
    config_keys = (ConfigKey("dtype", "f32", ("f16", "f32"), "type of A, the scales, bias and the output (ORT runs "
                             "this program only for f32)"),) + OrtMatmul.config_keys[1:]
    domain = f"batch·M < {MIN_TILE_M}"
    gate_shapes = (dict(dtype="f32", bits=4, block_size=32, has_zero_points=1, has_bias=1),
                   dict(dtype="f32", bits=2, block_size=64, has_zero_points=1))

    def validate(self, config):
        if config["dtype"] != "f32":
            raise UsageError("ORT runs DP4AMatMulNBitsSmallMProgram only for f32 outputs (and on Qualcomm "
                             "adapters): f16 models with M < 4 take its non-DP4A MatMulNBits; use dtype=f32")
        super().validate(config)

    def runs_at(self, rows: int) -> bool:
        return rows < MIN_TILE_M

    def cases(self, config, profile):
        """Cases with batch·M below 4 (ORT's domain of the program): M drawn from 1-3 unless pinned."""
        if config["m"]:
            return super().cases(config, profile)
        return st.integers(1, MIN_TILE_M - 1).flatmap(
            lambda m: matmul_cases(dict(config, m=m), case_profile(profile))).filter(
            lambda case: self.runs_at(case.params["batch"] * case.params["m"]))

    def grid(self, rows: int, n: int) -> tuple[int, int, int]:
        return ort_grid(rows * -(-n // SMALL_M_COLS))
