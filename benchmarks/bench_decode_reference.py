"""Wall time of the float64 decode-attention reference at a Llama-3-8B-like decode shape.

B=8 sequences of 4096 rows each, Hq=32, Hkv=8, D=128, f16 inputs, page size 16, a shuffled page
table with spare pages; rotary_mode 0 and 1. Prints the median of a few repeats.

    python3 -m benchmarks.bench_decode_reference [--repeats N]     (from the repository root)
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from verify.references.decode import decode_attention

BATCH, QO_HEADS, KV_HEADS, HEAD_DIM, CONTEXT, PAGE_SIZE, SPARE_PAGES = 8, 32, 8, 128, 4096, 16, 64


def make_case(rng: np.random.Generator) -> dict:
    pages_per_seq = -(-CONTEXT // PAGE_SIZE)
    num_pages = BATCH * pages_per_seq + SPARE_PAGES
    pages = rng.standard_normal((num_pages, 2, KV_HEADS, PAGE_SIZE, HEAD_DIM)).astype(np.float16)
    return dict(
        q=rng.standard_normal((BATCH, QO_HEADS, HEAD_DIM)).astype(np.float16),
        pages=pages,
        page_indptr=np.arange(BATCH + 1, dtype=np.int32) * pages_per_seq,
        page_values=rng.permutation(num_pages)[: BATCH * pages_per_seq].astype(np.int32),
        length_info=np.full(BATCH, (CONTEXT - 1) % PAGE_SIZE + 1, np.int32),
        k_rope_pos_offset=np.zeros(BATCH, np.int32),
        q_rope_position=np.full(BATCH, CONTEXT, np.int32),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    case = make_case(np.random.default_rng(0))
    print(f"B={BATCH} Hq={QO_HEADS} Hkv={KV_HEADS} D={HEAD_DIM} context={CONTEXT} page_size={PAGE_SIZE} f16")
    for rotary_mode in (0, 1):
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            decode_attention(**case, sm_scale=HEAD_DIM**-0.5, rotary_mode=rotary_mode, rotary_dtype=np.float16)
            times.append(time.perf_counter() - start)
        print(f"rotary_mode={rotary_mode}: median {statistics.median(times) * 1e3:.0f} ms "
              f"(min {min(times) * 1e3:.0f}, max {max(times) * 1e3:.0f}, {args.repeats} repeats)")


if __name__ == "__main__":
    main()
