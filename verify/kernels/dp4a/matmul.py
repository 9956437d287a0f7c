"""`dp4a.matmul`: ORT's DP4A MatMulNBits product of int8-quantized A and N-bit block weights.

Inputs are what dp4a.quantize writes (int8 codes packed four per u32, one T scale per 128
values of A) and MatMulNBits' packed weights, scales, optional zero points and bias; the
output is Y [batch, M, N] in T (docs/ort-dp4a.md §2, §5). Per 32-value chunk the
kernel forms the exact integer sum I_c with dot4I8Packed and adds
p_c = T(f32(I_c) · f32(T(s_a·s_b))) to an accumulator of type `acc`; bias is added once at the end.

Three tiles, one contract: "64x64" (ORT's tile kernel), "128x32" (the wide-subgroup tile of
microsoft/onnxruntime#33560, in workgroup memory) and "small_m" (ORT's M < 4 kernel, here for
any M). `acc=f16` accumulates in the output type as ORT ships it for f16 models; `acc=f32` is
its enableMatmulFp32Accumulation fix (#29599).

Checks: reference (the DP4A-exact product within a derived budget), determinism,
integer_sums (bit-exact integer arithmetic), accumulator_range (running sums past 65504) and
quantization_error (informational: the error against the unquantized float64 MatMulNBits).
"""

from __future__ import annotations

import numpy as np

from verify.budgets.dp4a import matmul_budget
from verify.budgets.expected import Expected
from verify.budgets.roundoff import numpy_dtype
from verify.checks.finding_cases import first_drawn
from verify.errors import UsageError
from verify.gpu import Output
from verify.gpu.buffers import INT_SENTINEL
from verify.gpu.uniforms import pack_struct
from verify.kernels.contract import ConfigKey, Kernel, Launched
from verify.kernels.dp4a.common import (
    BITS,
    BLOCK_SIZE,
    DTYPE,
    check_pinned_shape,
    check_shape,
)
from verify.kernels.dp4a.fastpath import MatmulInputs, remembered
from verify.kernels.dp4a.matmul_cases import matmul_cases
from verify.kernels.specialize import body, specialize
from verify.references.dp4a_quant import unpack_codes
from verify.references.nbits import (
    default_zero_point,
    dp4a_product,
    unpack_weights,
    unpack_zero_points,
)
from verify.results.record import KnownFinding

TILE = ConfigKey("tile", "64x64", ("64x64", "128x32", "small_m"),
                 "64x64: ORT's tile kernel; 128x32: the wide-subgroup tile of onnxruntime#33560; "
                 "small_m: ORT's one-row kernel (any M here)")
ACC = ConfigKey("acc", "f32", ("f32", "f16"),
                "accumulator type; f16 = the output type, as ORT ships it for f16 models (needs dtype=f16)")
HAS_ZERO_POINTS = ConfigKey("has_zero_points", 0, (0, 1), "packed uint8 zero points (else 2^(bits-1))")
HAS_BIAS = ConfigKey("has_bias", 0, (0, 1), "bias [N], added once at the end")
#: Largest pinned M, N, K: LLM shapes (Llama 3.1 405B: hidden 16384, FFN 53248) with room.
MAX_DIM = 65536
#: Elements of the largest matrix a pinned shape may ask for (A [M, K], B [N, K], Y [M, N]):
#: 2^28 (1 GiB of f32) keeps a case within a CI machine's memory.
MAX_PINNED_ELEMENTS = 1 << 28
M = ConfigKey("m", 0, (), "pin every case's M (0: drawn)", bounds=(0, MAX_DIM))
N = ConfigKey("n", 0, (), "pin every case's N, a multiple of 16 (0: drawn)", bounds=(0, MAX_DIM))
K = ConfigKey("k", 0, (), "pin every case's K, a multiple of 128 and of block_size (0: drawn)", bounds=(0, MAX_DIM))

#: Keys the WGSL is specialised on; m, n and k only shape the cases.
WGSL_KEYS = ("dtype", "bits", "block_size", "tile", "acc", "has_zero_points", "has_bias")
#: Output rows and columns of one workgroup, and the body file, per tile.
TILES = {"64x64": (64, 64, "matmul_64x64.wgsl"), "128x32": (128, 32, "matmul_128x32.wgsl"),
         "small_m": (1, 32, "matmul_small_m.wgsl")}
F16_ACCUMULATION = (
    "acc=f16 keeps the running sums in f16, as ORT's DP4A kernels do for f16 models: sums past 65504 overflow to "
    "Inf where Y is finite.\n"
    "ORT accumulates lane_output (dp4a_matmul.wgsl.template@096d680b) and inter_results "
    "(dp4a_matmul_small_m.wgsl.template@02b0534c) in output_element_t; reported on Intel Iris Xe at K = 3072 "
    "(onnxruntime#29599, #29611) and fixed by enableMatmulFp32Accumulation, which is acc=f32 here. Reproduced on "
    "lavapipe by every tile: Inf once a running sum passes ~8.2e4 while |Y| <= 1.1e4, and acc=f32 passes the "
    "same cases. Evidence: docs/findings.md §7; "
    "`verify check dp4a.matmul --config acc=f16 --checks accumulator_range`.")
#: WebGPU's maxComputeWorkgroupsPerDimension default.
MAX_GROUPS = 65535


def _gate(tile, dtype, bits, block_size, acc, zero_points, bias) -> dict:
    return {"tile": tile, "dtype": dtype, "bits": bits, "block_size": block_size, "acc": acc,
            "has_zero_points": zero_points, "has_bias": bias}


#: Every tile with 4- and 8-bit weights, block sizes 32/64/128, zero points, bias, f16/f32 and
#: both accumulators; batch (1-3) is drawn per case.
GATE_CONFIGS = (
    _gate("64x64", "f16", 4, 32, "f16", 0, 0),
    _gate("64x64", "f16", 4, 128, "f32", 1, 1),
    _gate("64x64", "f32", 8, 64, "f32", 1, 0),
    _gate("64x64", "f16", 8, 32, "f16", 1, 1),
    _gate("128x32", "f16", 4, 32, "f32", 0, 0),
    _gate("128x32", "f16", 4, 32, "f16", 1, 1),
    _gate("128x32", "f32", 8, 128, "f32", 1, 1),
    _gate("128x32", "f16", 4, 64, "f32", 1, 0),
    _gate("small_m", "f16", 4, 32, "f16", 1, 1),
    _gate("small_m", "f32", 4, 128, "f32", 1, 1),
    _gate("small_m", "f16", 8, 64, "f32", 0, 1),
    _gate("small_m", "f32", 8, 32, "f32", 0, 0),
)


def centred_weights(case, config) -> np.ndarray:
    """q - zp per weight, int16 [N, K], from the case's packed B and zero points."""
    bits, block_size = config["bits"], config["block_size"]
    n, k_blocks, _ = case["b"].shape
    k = k_blocks * block_size
    q = unpack_weights(case["b"], bits, k).astype(np.int16)
    if config["has_zero_points"]:
        zp = unpack_zero_points(case["zero_points"], bits, k_blocks).astype(np.int16)
    else:
        zp = np.full((n, k_blocks), default_zero_point(bits), dtype=np.int16)
    return q - np.repeat(zp, block_size, axis=-1)


def dp4a_exact(case, config):
    """The DP4A-exact product of a case (references.nbits.dp4a_product) and its int8 codes."""
    codes = unpack_codes(case["a_codes"])
    return dp4a_product(
        (codes, case["a_scales"].astype(np.float64)), case["b"], case["b_scales"].astype(np.float64),
        case["zero_points"] if config["has_zero_points"] else None,
        case["bias"].astype(np.float64) if config["has_bias"] else None,
        bits=config["bits"], block_size=config["block_size"]).y, codes


class Matmul(Kernel):
    name = "dp4a.matmul"
    family = "dp4a"
    summary = "Y = bias + sum_c T(I_c · T(s_a s_b)) over int8 A codes and N-bit weights, as ORT's DP4A MatMulNBits"
    reference = "verify.references.nbits.dp4a_product"
    config_keys: tuple[ConfigKey, ...] = (DTYPE, BITS, BLOCK_SIZE, TILE, ACC, HAS_ZERO_POINTS, HAS_BIAS, M, N, K)
    checks: tuple[str, ...] = ("reference", "integer_sums", "accumulator_range", "quantization_error",
                               "implementations", "toggles")
    output_axes = {"y": ("m", "n"), "dp4a_exact": ("m", "n")}
    budget_function = staticmethod(matmul_budget)

    def validate(self, config):
        check_pinned_shape(config)
        if config["acc"] == "f16" and config["dtype"] != "f16":
            raise UsageError("acc=f16 accumulates in the output type, so it needs dtype=f16 "
                             "(with dtype=f32 the output type is f32: use acc=f32)")
        largest = max((config["m"] or 1) * (config["k"] or 1), (config["n"] or 1) * (config["k"] or 1),
                      (config["m"] or 1) * (config["n"] or 1))
        if largest > MAX_PINNED_ELEMENTS:
            raise UsageError(f"m={config['m']}, n={config['n']}, k={config['k']}: a case would hold {largest} "
                             f"elements in one matrix, more than the {MAX_PINNED_ELEMENTS} verify draws "
                             "(pin smaller shapes)")
        rows, cols, _ = TILES[config["tile"]]
        if -(-config["m"] // rows) > MAX_GROUPS or -(-config["n"] // cols) > MAX_GROUPS:
            raise UsageError(f"m={config['m']}, n={config['n']}: tile {config['tile']} covers {rows} rows x {cols} "
                             f"columns per workgroup, and WebGPU dispatches at most {MAX_GROUPS} per dimension")

    def requirements(self, config):
        return frozenset({"shader-f16"}) if config["dtype"] == "f16" else frozenset()

    def gate_configs(self, profile):
        return [self.config(c) for c in GATE_CONFIGS]

    def known_finding(self, check, config):
        """acc=f16 is ORT's shipped accumulation: accumulator_range fails by design (verdict "known")."""
        if check == "accumulator_range" and config["acc"] == "f16":
            return KnownFinding(F16_ACCUMULATION, outputs=("y",), finding_id="dp4a-f16-accumulation")
        return None

    def finding_examples(self, check, config):
        """accumulator_range's first case (its simplest: K = 512, or 2048 for small_m, running sums
        to about 81880), which overflows an f16 accumulator on every seed and budget."""
        if check != "accumulator_range" or config["acc"] != "f16":
            return []
        return [first_drawn(self, check, config)]

    def wgsl(self, config):
        source = body(__package__, "matmul_common.wgsl") + "\n" + body(__package__, TILES[config["tile"]][2])
        return specialize(
            self.name, source, {k: config[k] for k in WGSL_KEYS},
            enables=("f16",) if config["dtype"] == "f16" else (),
            aliases={"T": config["dtype"], "acc_t": config["acc"]},
            constants={"BITS": config["bits"], "BLOCK_SIZE": config["block_size"],
                       "HAS_ZERO_POINTS": bool(config["has_zero_points"]), "HAS_BIAS": bool(config["has_bias"])},
        )

    def cases(self, config, profile):
        return matmul_cases(config, profile)

    def launch(self, device, wgsl, config, case):
        batch, m, k = case["a_codes"].shape[0], case["a_codes"].shape[1], case["a_codes"].shape[2] * 4
        n = case["b"].shape[0]
        check_shape(m=m, n=n, k=k, block_size=config["block_size"])
        t_type = numpy_dtype(config["dtype"])
        pipeline = device.pipeline(wgsl)
        uniform = pack_struct(pipeline.interface.structs["MatmulParams"], {"batch": batch, "m": m, "n": n, "k": k})
        rows, cols, _ = TILES[config["tile"]]
        grid = (-(-n // cols), -(-m // rows), batch)
        run = device.run(pipeline, {
            "input_a": case["a_codes"],
            "scales_a": case["a_scales"],
            "input_b": case["b"],
            "scales_b": case["b_scales"],
            "zero_points": case["zero_points"] if config["has_zero_points"] else np.array([INT_SENTINEL], np.uint32),
            "bias": case["bias"] if config["has_bias"] else np.array([np.nan], t_type),
            "output": Output(t_type, (batch, m, n)),
            "params": uniform,
        }, grid)
        return Launched({"y": run.outputs["output"]}, {"y": run.guard_intact["output"]}, run.timing)

    def matmul_inputs(self, config, case) -> MatmulInputs:
        """What the reference and budget of `case` read, under this config."""
        return MatmulInputs(case["a_codes"], case["a_scales"], case["b"], case["b_scales"],
                            case["zero_points"] if config["has_zero_points"] else None,
                            case["bias"] if config["has_bias"] else None, bits=config["bits"],
                            block_size=config["block_size"], dtype=config["dtype"], acc=config["acc"])

    def expected(self, config, case):
        """The DP4A-exact Y with matmul_budget (verify.kernels.dp4a.fastpath computes both, bit for bit, once
        per case); bit-exact where the case says its arithmetic is exact."""
        result = remembered(self.matmul_inputs(config, case))
        exact = np.ones(result.y.shape, dtype=bool) if case.params.get("exact_arithmetic") else None
        return [Expected.around("y", result.y, result.budget, config["dtype"], exact=exact)]

    def features(self, case):
        batch, m, k4 = case["a_codes"].shape
        n = case["b"].shape[0]
        return {"batch": batch, "m": m, "n": n, "k": 4 * k4, "macs": batch * m * n * 4 * k4}
