"""What verify found in llama.cpp's ggml-webgpu programs (docs/findings.md §19, docs/llamacpp.md §7), as data
(verify.findings).

The kernels attach each finding to the checks and outputs it shows in (Kernel.known_finding); the
evidence text names the test that reproduces it.
"""

from verify.findings import Finding, Layer
from verify.sources.llamacpp.source import BACKEND, PROJECT

QUANTIZE_NARROW_SUBGROUPS = (
    "ggml-webgpu's quantize_q8 assumes subgroups of at least 8 lanes: at 4 a block's scale is the max of half "
    "the block.\n"
    "With USE_SUBGROUP_REDUCTION (any adapter with the subgroups feature, ggml-webgpu-shader-lib.hpp L1956) "
    "cluster_max_8 takes each 32-value block's max over 8 lanes with subgroupShuffleXor(r, 1, 2, 4); at a "
    "subgroup size of 4 the XOR with 4 names a lane outside the subgroup, which WGSL leaves indeterminate, so "
    "the block's d comes from 16 of its 32 values (and its codes overflow int8 where the other half is larger), "
    "and cluster_add_i4x8's block sum s is wrong the same way. WebGPU allows subgroupMinSize 4 (SwiftShader "
    "runs 4), and nothing in ggml-webgpu checks it. Evidence: tests/sources/llamacpp/test_quant_kernels.py::"
    "test_quantize_q8_on_4_lane_subgroups_takes_the_max_of_half_a_block (strict xfail at width 4, "
    "passing at 8); docs/findings.md §19.1.")

SUM_OVERFLOW = (
    "ggml-webgpu's MMVQ reads the q8_1 block sum s as f16: for a block whose d·Σq passes 65504 the Q4_0, Q4_1 "
    "and Q4_K mat-vec returns inf or NaN where the product is finite.\n"
    "quantize_q8 stores s = f16(d · Σq) (as ggml's CPU quantize_row_q8_1_ref does), which is inf once a 32-value "
    "block's codes sum past 65504 / d: 32 activations of 3000 give d = 23.6, Σq = 4064, d·Σq = 96000. "
    "mul_mat_vec_q_acc.tmpl then subtracts 8·da·s/4 (Q4_0), adds m·s/4 (Q4_1) or dmin·m·s/2 (Q4_K): y is -inf or "
    "NaN. ggml's CPU takes q8_0 activations (no s) for Q4_0 and computes the same product finitely. Evidence: "
    "tests/sources/llamacpp/test_quant_kernels.py::test_the_q4_0_mat_vec_is_finite_where_a_blocks_sum_overflows_f16 "
    "(strict xfail); docs/findings.md §19.2.")

READS_PAST_WEIGHTS = (
    "ggml-webgpu's MMVQ reads one word past the weights for the legacy formats: load_u32_at_src0 loads the next "
    "word before it knows it needs it.\n"
    "load_u32_at_src0 (common_decls.tmpl) reads SRC0[word_idx + 1u] for every load and discards it with select() "
    "where the offset is word-aligned; the last block's last load then reads the word past the binding, which "
    "ggml-webgpu sizes to the tensor's bytes rounded up to 4 (ggml-webgpu.cpp L403-406): e.g. Q4_0 with an even "
    "number of blocks. The value is never used, so y is right; robust buffer access keeps the read inside the "
    "buffer, a runtime without it reads past the allocation. Evidence: the `sanitize` check of "
    "llamacpp.quant.mul_mat_vec_q ('out-of-bounds read of storage buffer src0 ... (src0[word_idx + 1u])'); "
    "docs/findings.md §19.3.")

SPLIT_READS_PAST_TILE = (
    "ggml-webgpu's flash_attn_vec_split reads its workgroup arrays inter_shmem and mask_shmem past KV_TILE wherever "
    "the subgroup size does not divide the KV tile.\n"
    "The online softmax walks a tile in steps of the subgroup size, kv_idx = kv_offset + subgroup_invocation_id, and "
    "calc_softmax_term reads `select(FLOAT_MIN, inter_shmem[kv_idx] * params.scale, kv_idx < KV_TILE)` and "
    "`select(0.0, mask_shmem[kv_idx], kv_idx < KV_TILE)`: WGSL evaluates both operands of select, so every lane "
    "past the tile's end reads the arrays past their length. That happens wherever KV_TILE is not a multiple of "
    "the subgroup size: the 29-row tile of head dim 128 with a mask in 16 KiB and the 13-row tile of head dim 256 "
    "at any width, and 32-row tiles on 64- and 128-lane subgroups. The value is discarded, so the output is right; "
    "WGSL bounds a workgroup array's out-of-bounds read to a value of the array (or zero). Evidence: the `sanitize` "
    "check of llamacpp.attention.flash_attn_vec_split ('out-of-bounds read of workgroup array inter_shmem: index 29 "
    "is not below the length 29 (inter_shmem[kv_idx])' at head dim 128, 8 lanes), passing at head dim 64 (KV_TILE "
    "32); docs/findings.md §19.4.")

REDUCE_READS_PAST_STATS = (
    "ggml-webgpu's flash_attn_vec_reduce reads every lane's split statistics, active or not: past the row's and, for "
    "the last row, past the scratch binding.\n"
    "Lane t of each subgroup reads `select(0.0, tmp[stats_base + 2u * thread + 0u], active_thread)` and the max "
    "likewise, active_thread = t < nwg; select evaluates both operands, so the lanes from nwg to the subgroup size "
    "read the next rows' statistics and, for the last row, up to 2 (subgroup size - nwg) floats past the scratch "
    "buffer ggml-webgpu binds (rows · nwg · (D + 2) floats, rounded to 4 bytes: ggml-webgpu.cpp L2120-2130). The "
    "values are discarded, so the output is right; robust buffer access keeps the read inside the buffer, a "
    "runtime without it reads past the binding. Evidence: the `sanitize` check of "
    "llamacpp.attention.flash_attn_vec_reduce ('out-of-bounds read of storage buffer tmp: ... "
    "(tmp[stats_base + 2u * thread + 0u])'); docs/findings.md §19.5.")

GET_ROWS_READS_PAST_TABLE = (
    "ggml-webgpu's get_rows reads one word past the table for q4_0, q8_0 and the other block types it reads as u32 "
    "words: load_u32_at_src loads the next word before it knows it needs it.\n"
    "load_u32_at_src (common_decls.tmpl L29-36, the src twin of §19.3's load_u32_at_src0) reads src[word_idx + 1u] "
    "for every load and discards it with select() where the offset is word-aligned; the last block's last load then "
    "reads the word past a binding ggml-webgpu sizes to the tensor's bytes rounded up to 4 (ggml-webgpu.cpp "
    "L403-406): e.g. q8_0 (34-byte blocks) with an even number of blocks after the last row gathered. The value is "
    "never used, so the rows are right; robust buffer access keeps the read inside the buffer, a runtime without "
    "it reads past the allocation. Evidence: the `sanitize` check of llamacpp.ops.get_rows ('out-of-bounds read of "
    "storage buffer src ... (src[word_idx + 1u])', q8_0); docs/findings.md §19.6.")

SOFT_MAX_FLOOR = (
    "ggml-webgpu's soft_max without sinks starts each row's max at -1e30: a row whose logits all lie below -1e30 "
    "comes out NaN where ggml's op defines its softmax.\n"
    "soft_max.wgsl's lower_max_bound returns -1e30 where the op has no sinks, and the row max is taken over it: "
    "for finite logits all below -1e30 the max stays -1e30, every exp(s - max) underflows to 0, the sum is 0 and "
    "each output 0 · (1/0) = NaN. ggml's CPU op starts its max at -INFINITY and returns the row's softmax (e.g. "
    "[0.5, 0, 0, 0.5] for [-2e30, -2.5e30, -3e30, -2e30]). With a sink the max starts at the sink and the output "
    "is right. Logits that low are legal f32 values of the op but far from what a model computes. Evidence: "
    "tests/sources/llamacpp/test_soft_max_kernel.py::test_logits_below_the_programs_floor_get_their_softmax "
    "(strict xfail without a sink, passing with one); the corner `below_floor` of llamacpp.ops.soft_max's "
    "`reference` check; docs/findings.md §19.7.")

SPLIT_READS_PAST_MASK = (
    "ggml-webgpu's flash_attn_vec_split loads the mask through select(): for the key columns of the last KV tile "
    "past seq_len_kv it reads the mask past the row, and for the last row past the binding.\n"
    "The mask tile is loaded as `mask_shmem[elem_idx] = select(0.0f, f32(mask[mask_idx]), mask_in_bounds)` with "
    "mask_idx = mask_global_offset + global_k_col and mask_in_bounds = q_row_start < seq_len_q && global_k_col < "
    "seq_len_kv; WGSL evaluates both operands of select, so where seq_len_kv is not a multiple of KV_TILE the last "
    "tile's columns past it read the next row's mask and, for the last row of the last batch, past the mask binding. "
    "The value is discarded, so the output is right; robust buffer access keeps the read inside the buffer, a "
    "runtime without it reads past the allocation. A mask whose key dimension is padded (kv_padded) past the last "
    "tile is never read past its end. Evidence: the `sanitize` check of llamacpp.attention.flash_attn_vec_split "
    "('out-of-bounds read of storage buffer mask: index 354 is not below the length 354 (mask[mask_idx])' at head "
    "dim 128, KV_TILE 29, seq_len_kv 59, 8 lanes), found beside §19.4 in the same check; docs/findings.md §19.8.")

SET_ROWS_QUANT_PAIR_MID_WORD = (
    "ggml-webgpu's set_rows into q8_0 or q4_0 writes each pair of blocks 2 bytes early where a destination view's "
    "pairs start mid-word (an odd block offset or row stride, with an even number of blocks a row).\n"
    "get_set_rows_pipeline chooses PAIR_BLOCKS by the number of blocks a row alone (ggml-webgpu-shader-lib.hpp "
    "L1394), and supports_op takes any destination view (ggml-webgpu.cpp L4429-4433); the pair program then calls "
    "quantize_block(src_block, dst_word_idx, 0u) and (.., BLOCK_BYTES) with dst_word_idx = dst_block_byte / 4u "
    "(set_rows_quant.wgsl L217-220), dropping dst_block_byte & 3. Blocks of 34 (q8_0) and 18 (q4_0) bytes make that "
    "2 at every odd block, so a pair starting there is written from the word's start: the previous block's last 2 "
    "bytes are overwritten and the pair's own last 2 are left stale. The one-block program (an odd number of blocks "
    "a row) passes the offset on and is right at every alignment; a contiguous destination with an even number of "
    "blocks a row (llama.cpp's quantized KV cache, test-backend-ops' SET_ROWS cases) starts every pair on a word. "
    "Evidence: tests/sources/llamacpp/test_rows_quant_kernel.py::"
    "test_the_pair_program_writes_a_view_whose_pairs_start_mid_word (strict xfail at an odd offset and an odd row "
    "stride, q8_0 and q4_0: the bytes before the written blocks, their scales and codes fail; the packed and even "
    "views pass); docs/findings.md §19.10.")

TILE_READS_PAST_Q = (
    "ggml-webgpu's flash_attn_tile loads Q through select(): for the query rows of the last 4-row tile past "
    "seq_len_q it reads the next head's rows and, for the last head of the last batch, past the Q binding.\n"
    "Each workgroup stages Q_TILE = 4 query rows as `q_shmem[elem_idx] = select(0.0, Q_TYPE(Q[global_q_row_offset "
    "+ q_col]) * params.scale, head_q_row < params.seq_len_q)`; WGSL evaluates both operands of select, so where "
    "seq_len_q is not a multiple of 4 the rows past it are read anyway: the next head's Q (in bounds, discarded) "
    "and, for the last head of the last batch, up to 3 rows past the binding, which ggml-webgpu sizes to the "
    "tensor. The value is discarded (the row is inactive: its subgroup writes nothing), so the output is right; "
    "robust buffer access keeps the read inside the buffer, a runtime without it reads past the allocation. "
    "Evidence: the `sanitize` check of llamacpp.attention.flash_attn_tile ('out-of-bounds read of storage buffer "
    "Q: index 21632 is not below the length 21504 (Q[global_q_row_offset + q_col])' at head dim 128, 8 heads, 21 "
    "query rows: 384 reads, 3 rows of 128), its first corner; tests/sources/llamacpp/"
    "test_flash_attn_tile_kernel.py::test_q_is_read_past_its_binding_only_where_the_rows_leave_a_partial_tile; "
    "docs/findings.md §19.11.")

F16_DOT_OVERFLOW = (
    "ggml-webgpu's mat-vec takes f16 x f16 dot products in f16: where a vec4 of products passes 65504 y is inf or "
    "NaN while ggml's f32 result is finite.\n"
    "For f16 weights and f16 activations (MUL_MAT's f16 x f16, ggml-webgpu.cpp L4443-4446) whose rows are a "
    "multiple of 4 long, get_mul_mat_vec_pipeline takes VEC (ggml-webgpu-shader-lib.hpp L1972-1975), and "
    "mul_mat_vec_acc.tmpl's inner_dot returns f32(dot(vec4<f16>(w), x)) with x a vec4<f16>: WGSL computes that dot "
    "in f16, so four products of 256 x 256 (65536 each) overflow to inf, and y with them, where ggml's op gives "
    "4 x 65536 = 262144 in its f32 dst. The SCALAR program (rows not a multiple of 4) converts each value to f32 "
    "first and is right on the same values; the f32-activation programs are unaffected. Below the overflow the f16 "
    "dot also rounds each product and partial sum to f16 (11 bits), which the budget admits as the program's "
    "declared arithmetic. Evidence: tests/sources/llamacpp/test_mul_mat_vec_kernel.py::"
    "test_the_f16_mat_vec_is_finite_where_its_products_pass_f16s_range (strict xfail: y = inf for K = 8, expected "
    "524288; the SCALAR control at K = 7 gives 458752); the finding example of llamacpp.quant.mul_mat_vec's "
    "`native_width` check with f16 activations; docs/findings.md §19.9.")

FINDINGS = (
    Finding("llamacpp-quantize-q8-subgroups-of-4", "quantize_q8 assumes subgroups of at least 8 lanes: at 4 a block's "
            "scale and sum come from half the block", "§19.1", Layer.KERNEL, PROJECT,
            f"{BACKEND}/wgsl-shaders/quantize_q8.wgsl L28-45 (cluster_max_8, cluster_add_i4x8)"),
    Finding("llamacpp-q8-1-sum-overflow", "MMVQ's Q4_0, Q4_1 and Q4_K mat-vec returns inf or NaN where a q8_1 block's "
            "sum d·Σq passes f16's 65504", "§19.2", Layer.KERNEL, PROJECT,
            f"{BACKEND}/wgsl-shaders/quantize_q8.wgsl L118, L171; mul_mat_vec_q_acc.tmpl L132, L136, L287"),
    Finding("llamacpp-mmvq-reads-past-weights", "MMVQ reads one word past the weight binding in load_u32_at_src0",
            "§19.3", Layer.KERNEL, PROJECT, f"{BACKEND}/wgsl-shaders/common_decls.tmpl L65-72 (load_u32_at_src0)"),
    Finding("llamacpp-vec-split-reads-past-tile", "flash_attn_vec_split reads inter_shmem and mask_shmem past KV_TILE "
            "where the subgroup size does not divide the tile", "§19.4", Layer.KERNEL, PROJECT,
            f"{BACKEND}/wgsl-shaders/flash_attn_vec_split.wgsl L47-61 (calc_softmax_term), L278-299"),
    Finding("llamacpp-vec-reduce-reads-past-stats", "flash_attn_vec_reduce reads the split statistics of inactive "
            "lanes, past the scratch binding for the last row", "§19.5", Layer.KERNEL, PROJECT,
            f"{BACKEND}/wgsl-shaders/flash_attn_vec_reduce.wgsl L57-60"),
    Finding("llamacpp-get-rows-reads-past-table", "get_rows reads one word past the table binding in "
            "load_u32_at_src", "§19.6", Layer.KERNEL, PROJECT,
            f"{BACKEND}/wgsl-shaders/common_decls.tmpl L29-36 (load_u32_at_src)"),
    Finding("llamacpp-soft-max-floor", "soft_max without sinks returns NaN for a row of logits all below -1e30, "
            "where ggml's op defines its softmax", "§19.7", Layer.KERNEL, PROJECT,
            f"{BACKEND}/wgsl-shaders/soft_max.wgsl L114-116 (lower_max_bound), L144"),
    Finding("llamacpp-vec-split-reads-past-mask", "flash_attn_vec_split's mask load reads past the mask binding "
            "for key columns past seq_len_kv", "§19.8", Layer.KERNEL, PROJECT,
            f"{BACKEND}/wgsl-shaders/flash_attn_vec_split.wgsl L259-265 (the mask tile's load)"),
    Finding("llamacpp-set-rows-quant-pair-mid-word", "set_rows into q8_0 or q4_0 writes each pair of blocks 2 bytes "
            "early where a destination view's pairs start mid-word", "§19.10", Layer.KERNEL, PROJECT,
            f"{BACKEND}/wgsl-shaders/set_rows_quant.wgsl L217-220 (PAIR_BLOCKS's quantize_block calls)"),
    Finding("llamacpp-mul-mat-vec-f16-dot", "the mat-vec takes f16 x f16 dot products in f16: y is inf where a vec4 "
            "of products passes 65504", "§19.9", Layer.KERNEL, PROJECT,
            f"{BACKEND}/wgsl-shaders/mul_mat_vec_acc.tmpl L26-28 (inner_dot)"),
    Finding("llamacpp-tile-reads-past-q", "flash_attn_tile's Q load reads past the Q binding for the rows of the "
            "last 4-row tile past seq_len_q", "§19.11", Layer.KERNEL, PROJECT,
            f"{BACKEND}/wgsl-shaders/flash_attn_tile.wgsl L80-89 (the Q tile's load)"),
)
