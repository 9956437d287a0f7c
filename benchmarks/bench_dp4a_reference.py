"""Time the float64 MatMulNBits and DP4A references at a prefill-sized shape.

M=128 tokens, N=4096, K=4096, 4-bit weights, block_size 32, with zero points and bias, f16 inputs
(values drawn as in ORT's matmul_4bits_test.cc: A ~ N(0, 0.25), bias ~ U(1, 5)). Prints the
median wall time of a few repeats of each step:

    python3 -m benchmarks.bench_dp4a_reference [--repeats 5]     (from the repository root)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from verify.references.dp4a_quant import quantize_blocks
from verify.references.nbits import dp4a_product, matmul_nbits, pack_weights, pack_zero_points

M, N, K, BITS, BLOCK_SIZE = 128, 4096, 4096, 4, 32


def _f16(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float16).astype(np.float64)


def _median_seconds(step, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    rng = np.random.default_rng(1234)
    a = _f16(rng.normal(0.0, 0.25, (M, K)))
    k_blocks = K // BLOCK_SIZE
    packed = pack_weights(rng.integers(0, 2**BITS, (N, K), dtype=np.uint8), BITS, BLOCK_SIZE)
    scales = _f16(rng.uniform(0.005, 0.05, (N, k_blocks)))
    zero_points = pack_zero_points(rng.integers(0, 2**BITS, (N, k_blocks), dtype=np.uint8), BITS)
    bias = _f16(rng.uniform(1.0, 5.0, N))
    qa = quantize_blocks(a, "f16")

    steps = {
        "quantize_blocks (f16)": lambda: quantize_blocks(a, "f16"),
        "matmul_nbits": lambda: matmul_nbits(a, packed, scales, zero_points, bias, bits=BITS, block_size=BLOCK_SIZE),
        "dp4a_product": lambda: dp4a_product(qa, packed, scales, zero_points, bias, bits=BITS, block_size=BLOCK_SIZE),
    }
    print(f"M={M} N={N} K={K} bits={BITS} block_size={BLOCK_SIZE}, zero points and bias, f16 inputs; "
          f"median of {args.repeats}")
    for name, step in steps.items():
        print(f"  {name:24s} {_median_seconds(step, args.repeats) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
