"""DP4A activation block quantization, as ONNX Runtime's WebGPU MatMulNBits defines it.

With accuracy_level 4, ORT quantizes A to int8 in 128-value blocks along K before its packed
int8 dot-product kernels run (onnxruntime/contrib_ops/webgpu/quantization/
dp4a_quantize.wgsl.template@aa82e20e; docs/ort-dp4a.md §4). With T = A's dtype:

    m   = max_i |a_i|                                   exact in T
    t_i = a_i / m                                       a division in T
    q_i = pack4x8snorm(t_i) = floor(0.5 + 127 * min(1, max(-1, t_i)))    (WGSL #pack4x8snorm-builtin)
    s   = m / 127                                       a division in T, stored in T

The block is fixed at 128 values whatever the weights' block_size; it never crosses a row
because K % 128 == 0. Codes lie in [-127, 127]; -128 never occurs.

`quantize_blocks` returns the nominal result (divisions correctly rounded to nearest, the spec's
floor(0.5 + x) for the code) and, per element, every result a conforming implementation may
produce. WGSL fixes no rounding mode, grants `/` 2.5 ULP for a divisor within [2^-14, 2^14] (f16)
or [2^-126, 2^126] (f32) and nothing outside, makes the `127 * t` inside pack4x8snorm a correctly
rounded f32 product (either neighbour), and lets subnormal inputs and outputs flush to zero
(WGSL spec #floating-point-accuracy, #concrete-float-accuracy, #differences-from-ieee754,
gpuweb/gpuweb@da251f90). Backends also round the tie differently: the spec's floor(0.5 + x)
rounds up, Tint's HLSL polyfill rounds half to even, SPIR-V's native packing leaves it open.

The all-zero block: ORT's shader divides 0/0 there, so its codes are implementation-defined (any
byte); the stored scale is 0, so the product is unaffected. Here its nominal codes are 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Values of A per quantization block, fixed by ORT's shader.
ACTIVATION_BLOCK = 128
#: Largest code magnitude: pack4x8snorm maps [-1, 1] onto [-127, 127].
CODE_MAX = 127
#: Accuracy WGSL grants `x / y` in f16 and f32 (#concrete-float-accuracy).
DIVISION_ULPS = 2.5

#: Significand bits (implicit bit included) and smallest normal exponent of each format.
_PRECISION = {"f16": 11, "f32": 24}
_MIN_EXPONENT = {"f16": -14, "f32": -126}
_NUMPY = {"f16": np.float16, "f32": np.float32}


@dataclass(frozen=True)
class QuantizedActivation:
    """A quantized in 128-value blocks: the nominal codes and scales and what a kernel may produce.

    codes               int8    [..., K]      nominal codes
    scales              float64 [..., K/128]  nominal scale, the value stored in T, exactly
    code_lo, code_hi    int16   [..., K]      inclusive range of codes a conforming kernel may
                                              produce (the whole byte, -128..127, where the spec
                                              bounds nothing: the zero block, m outside the
                                              division's range)
    scale_lo, scale_hi  float64 [..., K/128]  inclusive range of legal stored scales
    dtype               "f16" | "f32"         A's dtype T
    """

    codes: np.ndarray
    scales: np.ndarray
    code_lo: np.ndarray
    code_hi: np.ndarray
    scale_lo: np.ndarray
    scale_hi: np.ndarray
    dtype: str


def _check_dtype(dtype) -> str:
    if dtype not in _PRECISION:
        raise ValueError(f"dtype must be 'f16' or 'f32', got {dtype!r}")
    return dtype


def _smallest_normal(dtype: str) -> float:
    return 2.0 ** _MIN_EXPONENT[dtype]


def _binade_spacing(x: np.ndarray, dtype: str) -> np.ndarray:
    """Gap between consecutive T-values around |x|: 2^(e-p+1) for |x| in [2^e, 2^(e+1)).

    Below the smallest normal (0 included) the gap is that of the subnormals, 2^(emin-p+1).
    """
    _, exponent = np.frexp(np.abs(x))  # |x| = f * 2**exponent, f in [0.5, 1); frexp(0) = (0, 0)
    binade = np.where(x == 0, _MIN_EXPONENT[dtype], np.maximum(exponent - 1, _MIN_EXPONENT[dtype]))
    return np.ldexp(1.0, binade - _PRECISION[dtype] + 1)


def _wgsl_ulp(x: np.ndarray, representable: np.ndarray, dtype: str) -> np.ndarray:
    """WGSL's ULP(x): the smallest b - a over T-values a <= x <= b, a != b (#floating-point-accuracy).

    That is the binade spacing, except at a representable power of two above the smallest
    normal, where the gap below is half the gap above and is the one that counts. `x` may be a
    float64 approximation of the exact value as long as it lies in the same binade.
    """
    spacing = _binade_spacing(x, dtype)
    fraction, _ = np.frexp(np.abs(x))
    gap_below_is_smaller = representable & (fraction == 0.5) & (np.abs(x) > _smallest_normal(dtype))
    return np.where(gap_below_is_smaller, spacing / 2, spacing)


def _round_into(x: np.ndarray, t_type, up: bool) -> np.ndarray:
    """x rounded up (or down) to a T-value; x in float64."""
    rounded = x.astype(t_type)
    wide = rounded.astype(np.float64)
    if up:
        return np.where(wide < x, np.nextafter(rounded, t_type(np.inf)), rounded)
    return np.where(wide > x, np.nextafter(rounded, t_type(-np.inf)), rounded)


def _settle(estimate: np.ndarray, holds, least: bool) -> np.ndarray:
    """The least (or greatest) T-value v with holds(v), from an estimate at most one T-value off.

    `holds` is monotone: true from some T-value upward (for least) or downward (for greatest).
    """
    t_type = estimate.dtype.type
    toward_end = np.nextafter(estimate, t_type(-np.inf if least else np.inf))
    away = np.nextafter(estimate, t_type(np.inf if least else -np.inf))
    return np.where(holds(toward_end), toward_end, np.where(holds(estimate), estimate, away))


def _quotient_interval(num: np.ndarray, den: np.ndarray, dtype: str):
    """(lo, hi): the least and greatest T-values within 2.5 ULP of num/den, for T-valued num, den > 0.

    These are the results WGSL allows `num / den` in T (#concrete-float-accuracy). Decided exactly:
    v >= num/den - w  <=>  (v + w) * den >= num, and v + w carries at most p + 4 significant bits
    and den p, so float64 evaluates it without rounding (2p + 4 <= 52). The float64 quotient lies
    in the exact quotient's binade (a ratio of T-values is never within 2^-53 of a power of two
    without being one), so its ULP is the exact one, and each end estimated in float64 and rounded
    into T is at most one T-value off.
    """
    t_type = _NUMPY[dtype]
    quotient = num / den
    representable = quotient.astype(t_type).astype(np.float64) * den == num
    half_width = DIVISION_ULPS * _wgsl_ulp(quotient, representable, dtype)

    def reaches_down(v):  # v >= num/den - half_width
        return (v.astype(np.float64) + half_width) * den >= num

    def reaches_up(v):  # v <= num/den + half_width
        return (v.astype(np.float64) - half_width) * den <= num

    lo = _settle(_round_into(quotient - half_width, t_type, up=True), reaches_down, least=True)
    hi = _settle(_round_into(quotient + half_width, t_type, up=False), reaches_up, least=False)
    return lo.astype(np.float64), hi.astype(np.float64)


def _f32_product_interval(exact: np.ndarray):
    """(lo, hi): the f32 neighbours of an exact product; WGSL's `*` may return either.

    `exact` must be exact in float64 (here 127 * t: at most 31 significant bits).
    """
    rounded = exact.astype(np.float32)
    above = rounded.astype(np.float64) > exact
    below = rounded.astype(np.float64) < exact
    lo = np.where(above, np.nextafter(rounded, np.float32(-np.inf)), rounded)
    hi = np.where(below, np.nextafter(rounded, np.float32(np.inf)), rounded)
    return lo.astype(np.float64), hi.astype(np.float64)


def _as_activation(a, dtype: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim < 1 or a.shape[-1] == 0:
        raise ValueError(f"A must have shape [..., K] with K > 0, got shape {a.shape}")
    if a.shape[-1] % ACTIVATION_BLOCK:
        raise ValueError(f"K = {a.shape[-1]} must be a multiple of {ACTIVATION_BLOCK} for DP4A quantization")
    if not np.issubdtype(a.dtype, np.floating) and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"A must hold real numbers, got dtype {a.dtype}")
    a = a.astype(np.float64)
    if not np.isfinite(a).all():
        raise ValueError("A holds inf or NaN; ORT's quantizer then yields an infinite scale and NaN output")
    with np.errstate(over="ignore"):
        if (a.astype(_NUMPY[dtype]).astype(np.float64) != a).any():
            raise ValueError(f"A holds values not representable in {dtype}")
    return a


def quantize_nominal(a, dtype: str = "f16") -> tuple[np.ndarray, np.ndarray]:
    """The nominal codes (int8 [..., K]) and scales (float64 [..., K/128]) of quantize_blocks,
    without the legal ranges: s = fl_T(m/127), q = floor(0.5 + 127 * fl_T(a/m)).

    What a case needs to hand a matmul the activation dp4a.quantize writes; the ranges cost
    more than the rounding and only the quantizer's own checks read them.
    """
    dtype = _check_dtype(dtype)
    a = _as_activation(a, dtype)
    return _nominal(a.reshape(*a.shape[:-1], -1, ACTIVATION_BLOCK), a.shape, dtype)


def _nominal(blocks: np.ndarray, shape, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    t_type = _NUMPY[dtype]
    block_max = np.abs(blocks).max(axis=-1)
    divisor = np.where(block_max > 0, block_max, 1.0)[..., None]
    t = (blocks / divisor).astype(t_type).astype(np.float64)
    codes = np.floor(0.5 + CODE_MAX * t)
    scales = (block_max / CODE_MAX).astype(t_type).astype(np.float64)
    return codes.reshape(shape).astype(np.int8), scales


def quantize_blocks(a, dtype: str = "f16") -> QuantizedActivation:
    """Quantize A [..., K] (exact T-values, K % 128 == 0) the way ORT's DP4A path does.

    Nominal: s = fl_T(m/127), q = floor(0.5 + 127 * fl_T(a/m)), each division rounded to nearest.
    float64 division rounded to T gives that correctly: double rounding is innocuous when the
    wider format has at least 2p + 2 bits (Figueroa 1995), and 53 >= 2 * 24 + 2.

    Legal codes: t' is any T-value within 2.5 ULP of a/m, clamped to [-1, 1]; x' is either f32
    neighbour of 127 * t'; the code is x' rounded to nearest with either tie direction. A code k
    is reachable iff [k - 1/2, k + 1/2] meets [x'_lo, x'_hi]. A subnormal a may be flushed to 0,
    adding code 0. Subnormal quotients all give code 0 (127 * 2^-14 < 1/2), so flushing them
    changes nothing. Where m lies outside the divisor range WGSL bounds (m = 0 included), any
    byte is legal. Legal scales: T-values within 2.5 ULP of m/127, and 0 where one is subnormal.
    """
    dtype = _check_dtype(dtype)
    a = _as_activation(a, dtype)
    blocks = a.reshape(*a.shape[:-1], -1, ACTIVATION_BLOCK)
    block_max = np.abs(blocks).max(axis=-1)
    codes, scales = _nominal(blocks, a.shape, dtype)
    code_lo, code_hi = legal_codes(blocks, np.broadcast_to(block_max[..., None], blocks.shape), dtype)
    scale_lo, scale_hi = legal_scales(block_max, dtype)

    return QuantizedActivation(
        codes=codes,
        scales=scales,
        code_lo=code_lo.reshape(a.shape).astype(np.int16),
        code_hi=code_hi.reshape(a.shape).astype(np.int16),
        scale_lo=scale_lo,
        scale_hi=scale_hi,
        dtype=dtype,
    )


def legal_codes(a: np.ndarray, block_max: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """quantize_blocks's legal codes (float64 code_lo, code_hi) of values a (float64 T-values) in
    blocks whose largest |a| is block_max (an array of a's shape), element by element: each
    element's range depends on its value and its block's max only (see quantize_blocks)."""
    divisor = np.where(block_max > 0, block_max, 1.0)
    t_lo, t_hi = _quotient_interval(a, divisor, dtype)
    x_lo, _ = _f32_product_interval(CODE_MAX * np.clip(t_lo, -1.0, 1.0))
    _, x_hi = _f32_product_interval(CODE_MAX * np.clip(t_hi, -1.0, 1.0))
    code_lo = np.clip(np.ceil(x_lo - 0.5), -CODE_MAX, CODE_MAX)
    code_hi = np.clip(np.floor(x_hi + 0.5), -CODE_MAX, CODE_MAX)
    subnormal = (a != 0) & (np.abs(a) < _smallest_normal(dtype))
    code_lo = np.where(subnormal, np.minimum(code_lo, 0), code_lo)
    code_hi = np.where(subnormal, np.maximum(code_hi, 0), code_hi)
    emin = _MIN_EXPONENT[dtype]
    unbounded = (block_max < 2.0**emin) | (block_max > 2.0**-emin)
    code_lo = np.where(unbounded, -CODE_MAX - 1, code_lo)
    code_hi = np.where(unbounded, CODE_MAX, code_hi)
    return code_lo, code_hi


def legal_scales(block_max: np.ndarray, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """quantize_blocks's legal scales (scale_lo, scale_hi) of blocks whose largest |a| is block_max:
    the T-values within 2.5 ULP of block_max / 127, and 0 where one is subnormal."""
    scale_lo, scale_hi = _quotient_interval(block_max, np.full_like(block_max, CODE_MAX), dtype)
    scale_lo = np.where(scale_lo < _smallest_normal(dtype), np.minimum(scale_lo, 0.0), scale_lo)
    return scale_lo, scale_hi


def dequantize_activation(codes, scales) -> np.ndarray:
    """codes [..., K] * scales [..., K/128] repeated over each block: float64, exact (<= 32 bits)."""
    codes, scales = np.asarray(codes), np.asarray(scales, dtype=np.float64)
    if codes.shape[:-1] != scales.shape[:-1] or codes.shape[-1] != ACTIVATION_BLOCK * scales.shape[-1]:
        raise ValueError(f"codes {codes.shape} and scales {scales.shape} do not match: need [..., K] and [..., K/128]")
    blocks = codes.astype(np.float64).reshape(*scales.shape, ACTIVATION_BLOCK)
    return (blocks * scales[..., None]).reshape(codes.shape)


def pack_codes(codes) -> np.ndarray:
    """int8 codes [..., K] -> uint32 [..., K/4]: code 4j+i in bits 8i..8i+7 of word j, two's complement.

    The layout of ORT's quantized A (`output: array<u32>`, pack4x8snorm's byte order).
    """
    codes = np.asarray(codes)
    if codes.ndim < 1 or codes.shape[-1] % 4:
        raise ValueError(f"codes must have shape [..., K] with K a multiple of 4, got {codes.shape}")
    if not np.issubdtype(codes.dtype, np.integer) or codes.min(initial=0) < -128 or codes.max(initial=0) > 127:
        raise ValueError("codes must be integers in [-128, 127]")
    octets = codes.astype(np.int8).view(np.uint8).astype(np.uint32)
    octets = octets.reshape(*codes.shape[:-1], -1, 4)
    return np.bitwise_or.reduce(octets << (8 * np.arange(4, dtype=np.uint32)), axis=-1)


def unpack_codes(packed) -> np.ndarray:
    """uint32 [..., K/4] -> int8 codes [..., K]; the inverse of `pack_codes`."""
    packed = np.asarray(packed)
    if packed.ndim < 1 or not np.issubdtype(packed.dtype, np.unsignedinteger) or packed.dtype.itemsize != 4:
        raise ValueError(f"packed codes must be uint32 [..., K/4], got {packed.dtype} {packed.shape}")
    octets = (packed[..., None] >> (8 * np.arange(4, dtype=np.uint32))) & 0xFF
    return octets.astype(np.uint8).view(np.int8).reshape(*packed.shape[:-1], -1)
