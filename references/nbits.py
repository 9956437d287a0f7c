"""N-bit block-quantized weights and the com.microsoft.MatMulNBits product, float64.

MatMulNBits (onnxruntime docs/ContribOperators.md; docs/ort-dp4a.md §2) computes
Y = A · dequant(B)^T + bias, with A [..., M, K] and N x K weights quantized per block of
`block_size` values along K:

    w[n, k] = (q[n, k] - zp[n, k // block_size]) * scale[n, k // block_size]

zp defaults to 2^(bits-1). Codes are bit-packed low bits first: element e of a block sits at
bit (e * bits) % 8 of byte (e * bits) // 8 of the block's blob ("the first 4 bits are stored in
the lower 4 bits of a byte"; ORT's WebGPU unpacks 4-bit words this way in
dp4a_matmul_common.wgsl.template@1ce6307 and reads zero points so for 2, 4 and 8 bits in
matmul_nbits_zero_pt.wgsl.template@0fd948ff). Packed zero points follow the same rule, each row
starting on a byte boundary. The WebGPU provider supports bits 2, 4 and 8, so these do.

K must be a multiple of block_size. The operator pads a last partial block, but ORT's WebGPU DP4A
kernels address such weights as if K / block_size blocks were whole (docs/ort-dp4a.md §9.8), so a
reference for that case would describe no kernel.

`dp4a_product` is the "DP4A-exact" reference: the product ORT's integer kernels compute from the
quantized A (references.dp4a_quant) before any rounding of their own, sum_c s_a s_b I_c + bias
over 32-value chunks c (docs/ort-dp4a.md §5).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .dp4a_quant import ACTIVATION_BLOCK, QuantizedActivation, dequantize_activation

#: Weight bit widths the WebGPU provider implements.
SUPPORTED_BITS = (2, 4, 8)
#: K values one SDP8AI step of ORT's kernels covers: 8 packed dot4I8 products.
DP4A_CHUNK = 32


@dataclass(frozen=True)
class DP4AProduct:
    """The DP4A-exact product and, when asked for, its integer chunk sums.

    y             float64 [..., M, N]        sum_c chunk_scales * chunk_sums + bias
    chunk_sums    int64   [..., M, N, K/32]  I_c = sum_{k in c} a_code_k * (q_k - zp), exact
    chunk_scales  float64 [..., M, N, K/32]  s_a[m, c // 4] * s_b[n, 32c // block_size], exact
    """

    y: np.ndarray
    chunk_sums: np.ndarray | None = None
    chunk_scales: np.ndarray | None = None


def default_zero_point(bits: int) -> int:
    """2^(bits-1): the zero point MatMulNBits assumes when none is given (2, 8 or 128)."""
    _check_bits(bits)
    return 2 ** (bits - 1)


def _check_bits(bits) -> None:
    if bits not in SUPPORTED_BITS:
        raise ValueError(f"bits must be one of {SUPPORTED_BITS}, got {bits!r}")


def _check_block_size(block_size) -> None:
    if not isinstance(block_size, (int, np.integer)) or block_size < 16 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two >= 16, got {block_size!r}")


def _check_codes(name: str, values: np.ndarray, bits: int) -> None:
    if not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"{name} must be integers, got dtype {values.dtype}")
    if values.size and (values.min() < 0 or values.max() >= 2**bits):
        raise ValueError(f"{name} out of range: {bits}-bit values lie in [0, {2**bits - 1}]")


def _pack_bits(values: np.ndarray, bits: int) -> np.ndarray:
    """[..., L] values < 2^bits -> uint8 [..., ceil(L * bits / 8)], low bits first, zero padded."""
    per_byte = 8 // bits
    length = values.shape[-1]
    padded = np.zeros((*values.shape[:-1], -(-length // per_byte) * per_byte), dtype=np.uint8)
    padded[..., :length] = values
    fields = padded.reshape(*values.shape[:-1], -1, per_byte)
    octets = np.zeros(fields.shape[:-1], dtype=np.uint8)
    for i in range(per_byte):  # one pass per field of a byte, not per element
        octets |= fields[..., i] << np.uint8(bits * i)
    return octets


def _unpack_bits(octets: np.ndarray, bits: int, length: int) -> np.ndarray:
    """uint8 [..., B] -> [..., length] fields of `bits` bits, low bits first; the inverse of `_pack_bits`."""
    per_byte = 8 // bits
    fields = np.empty((*octets.shape, per_byte), dtype=np.uint8)
    for i in range(per_byte):
        fields[..., i] = (octets >> np.uint8(bits * i)) & np.uint8(2**bits - 1)
    return fields.reshape(*octets.shape[:-1], -1)[..., :length]


def pack_weights(q, bits: int, block_size: int) -> np.ndarray:
    """Codes q [N, K] (each < 2^bits) -> B uint8 [N, K / block_size, block_size * bits / 8]."""
    _check_bits(bits)
    _check_block_size(block_size)
    q = np.asarray(q)
    if q.ndim != 2:
        raise ValueError(f"weight codes must be [N, K], got shape {q.shape}")
    if q.shape[1] % block_size:
        raise ValueError(f"K = {q.shape[1]} must be a multiple of block_size = {block_size}")
    _check_codes("weight codes", q, bits)
    blocks = q.reshape(q.shape[0], -1, block_size)
    return _pack_bits(blocks, bits)


def _weight_blocks(packed: np.ndarray, bits: int, block_size: int | None = None) -> tuple[int, int, int]:
    """Validate B's layout; return (N, k_blocks, block_size)."""
    _check_bits(bits)
    if packed.dtype != np.uint8 or packed.ndim != 3:
        raise ValueError(f"packed weights must be uint8 [N, k_blocks, blob_size], got {packed.dtype} {packed.shape}")
    if block_size is None:
        block_size = packed.shape[2] * 8 // bits
        if block_size < 16 or block_size & (block_size - 1):
            raise ValueError(f"packed weights' blobs of {packed.shape[2]} bytes hold {block_size} values; "
                             "a block holds a power of two >= 16")
    if packed.shape[2] != block_size * bits // 8:
        raise ValueError(
            f"packed weights have blobs of {packed.shape[2]} bytes; block_size {block_size} "
            f"at {bits} bits needs {block_size * bits // 8}"
        )
    return packed.shape[0], packed.shape[1], block_size


def unpack_weights(packed, bits: int, K: int) -> np.ndarray:
    """B uint8 [N, k_blocks, blob_size] -> codes uint8 [N, K]; the inverse of `pack_weights`."""
    packed = np.asarray(packed)
    n, k_blocks, block_size = _weight_blocks(packed, bits)
    if K != k_blocks * block_size:
        raise ValueError(f"K = {K} does not match packed weights of {k_blocks} blocks of {block_size}")
    return _unpack_bits(packed.reshape(n, -1), bits, K)


def pack_zero_points(zp, bits: int) -> np.ndarray:
    """Zero points [N, k_blocks] (each < 2^bits) -> uint8 [N, ceil(k_blocks * bits / 8)]."""
    _check_bits(bits)
    zp = np.asarray(zp)
    if zp.ndim != 2:
        raise ValueError(f"zero points must be [N, k_blocks], got shape {zp.shape}")
    _check_codes("zero points", zp, bits)
    return _pack_bits(zp, bits)


def unpack_zero_points(packed, bits: int, k_blocks: int) -> np.ndarray:
    """uint8 [N, ceil(k_blocks * bits / 8)] -> zero points uint8 [N, k_blocks]."""
    _check_bits(bits)
    packed = np.asarray(packed)
    expected = -(-k_blocks * bits // 8)
    if packed.dtype != np.uint8 or packed.ndim != 2 or packed.shape[1] != expected:
        raise ValueError(
            f"packed zero points must be uint8 [N, {expected}] for {k_blocks} blocks at {bits} bits, "
            f"got {packed.dtype} {packed.shape}"
        )
    return _unpack_bits(packed, bits, k_blocks)


def _centered_weights(packed, zero_points, bits: int, block_size: int, K: int) -> np.ndarray:
    """q - zp per block: int16 [N, K], the integers ORT's kernels feed to dot4I8Packed."""
    n, k_blocks, _ = _weight_blocks(packed, bits, block_size)
    q = unpack_weights(packed, bits, K).astype(np.int16).reshape(n, k_blocks, block_size)
    if zero_points is None:
        zp = np.full((n, k_blocks), default_zero_point(bits), dtype=np.int16)
    else:
        zp = unpack_zero_points(zero_points, bits, k_blocks).astype(np.int16)
        if zp.shape[0] != n:
            raise ValueError(f"zero points have {zp.shape[0]} rows, weights {n}")
    return (q - zp[..., None]).reshape(n, K)


def _check_stored_scales(name: str, scales: np.ndarray) -> None:
    """Scales are stored in A's dtype (f16, bf16 or f32), so they are f32 values; that keeps
    every scaled code exact in float64."""
    if not np.isfinite(scales).all():
        raise ValueError(f"{name} hold inf or NaN")
    if (scales.astype(np.float32) != scales).any():
        raise ValueError(f"{name} must be stored f16/bf16/f32 values, exactly; some are not f32 values")


def _weight_scales(scales, n: int, k_blocks: int) -> np.ndarray:
    scales = np.asarray(scales, dtype=np.float64)
    if scales.shape != (n, k_blocks):
        raise ValueError(f"scales must be [N, k_blocks] = [{n}, {k_blocks}], got {scales.shape}")
    _check_stored_scales("scales", scales)
    return scales


def _scaled(centered: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """(q - zp) * scale per block, float64 [N, K]; exact: at most 9 + 24 significant bits."""
    n, k_blocks = scales.shape
    blocks = centered.reshape(n, k_blocks, -1).astype(np.float64)
    blocks *= scales[..., None]
    return blocks.reshape(centered.shape)


def dequantize_weights(packed, scales, zero_points=None, *, bits: int, block_size: int, K: int) -> np.ndarray:
    """w = (q - zp) * scale, float64 [N, K] (exact), from MatMulNBits' packed B, scales and zero points."""
    _check_block_size(block_size)
    packed = np.asarray(packed)
    if K % block_size:
        raise ValueError(f"K = {K} must be a multiple of block_size = {block_size}")
    centered = _centered_weights(packed, zero_points, bits, block_size, K)
    return _scaled(centered, _weight_scales(scales, *packed.shape[:2]))


def _product(a: np.ndarray, w: np.ndarray, bias) -> np.ndarray:
    """a [..., M, K] @ w[N, K]^T + bias [N], as one float64 matmul over all rows."""
    n = w.shape[0]
    y = (a.reshape(-1, a.shape[-1]) @ w.T).reshape(*a.shape[:-1], n)
    if bias is not None:
        bias = np.asarray(bias, dtype=np.float64)
        if bias.shape != (n,):
            raise ValueError(f"bias must be [N] = [{n}], got {bias.shape}")
        y += bias
    return y


def _as_matrix_input(a) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim < 2:
        raise ValueError(f"A must be [..., M, K], got shape {a.shape}")
    if not np.isfinite(a).all():
        raise ValueError("A holds inf or NaN")
    return a


def matmul_nbits(a, packed, scales, zero_points=None, bias=None, *, bits: int, block_size: int) -> np.ndarray:
    """MatMulNBits in float64: Y [..., M, N] = A [..., M, K] · dequant(B)^T + bias.

    The ideal output for unquantized A. Its float64 error is at most gamma_{K+1}(2^-53) times
    sum_k |a_k w_k| + |bias| (any summation order, Higham 2002 §3.1): dequantized weights are exact.
    """
    a = _as_matrix_input(a)
    w = dequantize_weights(packed, scales, zero_points, bits=bits, block_size=block_size, K=a.shape[-1])
    return _product(a, w, bias)


def dp4a_chunk_sums(a_codes, w_codes_centered) -> np.ndarray:
    """I_c = sum_{k in chunk c} a_k * (q_k - zp): int64 [..., M, N, K/32], exact integers.

    A [..., M, K] int codes, W [N, K] centered int codes. These are the i32 sums ORT's SDP8AI
    accumulates with dot4I8Packed before any float arithmetic (docs/ort-dp4a.md §5); |I_c| is at most
    32 * 127 * (2^bits - 1), far inside i32.
    """
    a_codes, w = np.asarray(a_codes), np.asarray(w_codes_centered)
    if not (np.issubdtype(a_codes.dtype, np.integer) and np.issubdtype(w.dtype, np.integer)):
        raise ValueError("chunk sums need integer codes")
    if a_codes.ndim < 2 or w.ndim != 2 or a_codes.shape[-1] != w.shape[1]:
        raise ValueError(f"need A codes [..., M, K] and W codes [N, K], got {a_codes.shape} and {w.shape}")
    if w.shape[1] % DP4A_CHUNK:
        raise ValueError(f"K = {w.shape[1]} must be a multiple of {DP4A_CHUNK}")
    a_chunks = a_codes.astype(np.int64).reshape(*a_codes.shape[:-1], -1, DP4A_CHUNK)
    w_chunks = w.astype(np.int64).reshape(w.shape[0], -1, DP4A_CHUNK)
    return np.einsum("...mcj,ncj->...mnc", a_chunks, w_chunks)


def _activation_operands(qa) -> tuple[np.ndarray, np.ndarray]:
    if isinstance(qa, QuantizedActivation):
        return qa.codes, qa.scales
    try:
        codes, scales = qa
    except (TypeError, ValueError):
        raise ValueError("qa must be a QuantizedActivation or a (codes, scales) pair") from None
    codes, scales = np.asarray(codes), np.asarray(scales, dtype=np.float64)
    if not np.issubdtype(codes.dtype, np.integer) or (codes.size and (codes.min() < -128 or codes.max() > 127)):
        raise ValueError("activation codes must be integers in [-128, 127]")
    _check_stored_scales("activation scales", scales)
    return codes, scales


def dp4a_product(
    qa, packed, scales, zero_points=None, bias=None, *, bits: int, block_size: int, return_chunks: bool = False
) -> DP4AProduct:
    """The DP4A-exact MatMulNBits product: y = sum_c s_a[m, c//4] s_b[n, 32c // bs] I_c + bias.

    qa: a QuantizedActivation, or (codes [..., M, K], scales [..., M, K/128]). A 32-value chunk
    must lie inside one weight block, so block_size >= 32 (ORT's feasibility check demands
    block_size % 32 == 0, docs/ort-dp4a.md §3).

    Because both scales are constant on a chunk, the sum equals sum_k (s_a a_k)(s_b (q_k - zp))
    exactly, and both factors are exact in float64 (<= 32 and 33 bits). So y is one float64
    matmul of the dequantized operands, with error at most gamma_{K+1}(2^-53) times
    sum_k |s_a a_k s_b w_k| + |bias|, and no [M, N, K/32] array is formed. return_chunks=True
    also materialises chunk_sums and chunk_scales (M * N * K/32 * 16 bytes: small shapes only).
    """
    _check_bits(bits)
    _check_block_size(block_size)
    if block_size < DP4A_CHUNK:
        raise ValueError(f"the DP4A product needs block_size >= {DP4A_CHUNK}, got {block_size}")
    codes, a_scales = _activation_operands(qa)
    if codes.ndim < 2:
        raise ValueError(f"activation codes must be [..., M, K], got shape {codes.shape}")
    a_deq = dequantize_activation(codes, a_scales)
    K = codes.shape[-1]
    packed = np.asarray(packed)
    if K % block_size:
        raise ValueError(f"K = {K} must be a multiple of block_size = {block_size}")
    centered = _centered_weights(packed, zero_points, bits, block_size, K)
    w_scales = _weight_scales(scales, *packed.shape[:2])
    y = _product(a_deq, _scaled(centered, w_scales), bias)
    if not return_chunks:
        return DP4AProduct(y=y)
    chunks = np.arange(K // DP4A_CHUNK)
    a_chunk_scales = a_scales[..., chunks * DP4A_CHUNK // ACTIVATION_BLOCK]
    w_chunk_scales = w_scales[:, chunks * DP4A_CHUNK // block_size]
    return DP4AProduct(
        y=y,
        chunk_sums=dp4a_chunk_sums(codes, centered),
        chunk_scales=a_chunk_scales[..., :, None, :] * w_chunk_scales,
    )
