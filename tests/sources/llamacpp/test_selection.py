"""verify.sources.llamacpp.selection follows ggml-webgpu's C++, rule by rule.

Each rule is held twice: to the line of the pinned C++ it cites (the line must still say what the
port does: run where `source.obtain()` has put the sources in the cache) and to worked
examples computed by hand from that C++.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from verify.sources.llamacpp import programs, selection, source
from verify.sources.llamacpp.preprocess import Preprocessor
from verify.sources.llamacpp.selection import Adapter, AttentionShape

S, C = "ggml-webgpu-shader-lib.hpp", "ggml-webgpu.cpp"
#: (rule, file, line, text the line holds)
CITED = [
    ("flash_attn_use_vec_path", C, 1969, "(Q->ne[1] < GGML_WEBGPU_FLASH_ATTN_VEC_MAX_SEQ_LEN)"),
    ("flash_attn_k_direct", S, 701,
     "K->type == GGML_TYPE_F16 || K->type == GGML_TYPE_Q8_0 || K->type == GGML_TYPE_Q4_0"),
    ("flash_attn_k_direct", S, 702, "(K->ne[1] % GGML_WEBGPU_KV_SEQ_PAD == 0)"),
    ("flash_attn_wg_mem_bytes", S, 894, "f32_elems += kv_tile * max_head_dim;"),
    ("flash_attn_vec_kv_tile", S, 937, "std::min(GGML_WEBGPU_FLASH_ATTN_VEC_MAX_KV_TILE, max_kv_tile)"),
    ("flash_attn_vec_kv_tile", S, 940, "while (GGML_WEBGPU_KV_SEQ_PAD % kv_tile != 0)"),
    ("vec_attention_plan (split WG_SIZE)", S, 2924, "decisions.wg_size = context.max_subgroup_size;"),
    ("flash_attn_d_split", S, 2938, "std::min(std::min(context.min_subgroup_size, 4u), std::max(D_lsb / 4u, 1u))"),
    ("vec_attention_plan (blk WG_SIZE)", S, 2966, "while ((wg_size << 1) <= context.max_wg_size)"),
    ("FLASH_ATTN_TILE_MAX_KV_TILE", S, 23, "#define GGML_WEBGPU_FLASH_ATTN_TILE_MAX_KV_TILE      64u"),
    ("FLASH_ATTN_PREFERRED_WG_SIZE", S, 24, "#define GGML_WEBGPU_FLASH_ATTN_PREFERRED_WG_SIZE     128u"),
    ("FLASH_ATTN_TILE_Q_TILE", S, 678, "GGML_WEBGPU_FLASH_ATTN_TILE_Q_TILE       = 4u;"),
    ("flash_attn_can_use_subgroup_matrix_path", S, 953,
     "return supports_subgroup_matrix && Q->ne[0] % sg_mat_k == 0 && V->ne[0] % sg_mat_n == 0;"),
    ("tile_attention_plan (Q_TILE)", S, 2836,
     "decisions.q_tile = decisions.use_sg_matrix ? context.sg_mat_m : GGML_WEBGPU_FLASH_ATTN_TILE_Q_TILE;"),
    ("tile_attention_plan (no direct loads)", S, 2841,
     "key.common.k_direct &= decisions.use_sg_matrix && key.common.k_type == GGML_TYPE_F16;"),
    ("tile_attention_plan (no direct loads)", S, 2842,
     "key.common.v_direct &= decisions.use_sg_matrix && key.common.v_type == GGML_TYPE_F16;"),
    ("flash_attn_tile_kv_tile", S, 2867, "std::min(GGML_WEBGPU_FLASH_ATTN_TILE_MAX_KV_TILE, max_kv_tile);"),
    ("flash_attn_tile_wg_size", S, 2871,
     "std::min(context.max_wg_size, std::max(GGML_WEBGPU_FLASH_ATTN_PREFERRED_WG_SIZE,"),
    ("flash_attn_tile_wg_size", S, 2872, "GGML_WEBGPU_FLASH_ATTN_TILE_Q_TILE * context.max_subgroup_size));"),
    ("tile_attention_plan (variant)", S, 2886,
     'std::string              variant = decisions.use_sg_matrix ? "flash_attn" : "flash_attn_tile";'),
    ("tile_attention_plan (MIN_SUBGROUP_SIZE)", S, 2892,
     'defines.push_back("MIN_SUBGROUP_SIZE=" + std::to_string(context.min_subgroup_size) + "u");'),
    ("tile_attention_plan (MAX_SUBGROUP_SIZE)", S, 2893,
     'defines.push_back("MAX_SUBGROUP_SIZE=" + std::to_string(context.max_subgroup_size) + "u");'),
    ("tile_attention_plan (grid)", C, 2083,
     "uint32_t        wg_per_head = CEIL_DIV(op.shader_lib_ctx.src0->ne[1], decisions->q_tile);"),
    ("tile_attention_plan (grid)", C, 2084,
     "uint32_t        wg_x        = wg_per_head * op.shader_lib_ctx.src0->ne[2] * op.shader_lib_ctx.src0->ne[3];"),
    ("flash_attn_uses_tile_path", C, 2281, "return ggml_webgpu_flash_attn_direct(ctx, op);"),
    ("flash_attn_tile_supported", C, 4567, "capabilities.limits.maxComputeInvocationsPerWorkgroup >="),
    ("flash_attn_tile_supported", C, 4568, "GGML_WEBGPU_FLASH_ATTN_TILE_Q_TILE * capabilities.max_subgroup_size;"),
    ("flash_attn_tile_supported", C, 4569,
     "const bool use_tile = !use_subgroup_matrix && capabilities.supports_subgroups && float_vec4_aligned &&"),
    ("flash_attn_tile_supported", C, 4586, "supports_op = max_kv_tile > 0;"),
    ("flash_attn_vec_nwg", C, 2074, "while ((2u * nwg * kv_span) < (uint64_t) seq_len_kv && nwg < vec_nwg_cap)"),
    ("flash_attn_vec_nwg (cap)", C, 2105,
     "const uint32_t vec_nwg_cap = ctx->global_ctx->capabilities.min_subgroup_size;"),
    ("vec_attention_plan (reduce WG_SIZE)", C, 2221,
     "const uint32_t reduce_sg_size = ctx->global_ctx->capabilities.max_subgroup_size;"),
    ("vec_attention_plan (split grid)", C, 2248, "const uint64_t split_wg_total = (uint64_t) wg_x * nwg;"),
    ("alibi", C, 1986, "float n_head_log2 = float(1u << (uint32_t) floor(log2(Q->ne[2])));"),
    ("can_use_mmvq", S, 1176, "if (src1->ne[1] <= 4) {"),
    ("can_use_mmvq", S, 1177, 'bool supports_dp4a = vendor == "amd" || vendor == "intel" || vendor == "nvidia";'),
    ("can_use_mmvq", S, 1187, "return src0->ne[0] % 4 == 0;"),
    ("quantize_q8_instance", S, 1944, 'defines.push_back("SRC1_INNER_TYPE=f32");'),
    ("quantize_q8_instance", S, 1956,
     'context.supports_subgroups ? "USE_SUBGROUP_REDUCTION" : "USE_WORKGROUP_REDUCTION"'),
    ("mul_mat_vec_instance", S, 2099, 'defines.push_back(std::string("NUM_COLS=") + std::to_string(key.num_cols));'),
    ("quantize_q8_grid", C, 1609, "const uint32_t wg_per_vec     = (src0->ne[0] / 4 + (q8_wg_size - 1)) / q8_wg_size;"),
    ("mul_mat_vec_grid", C, 1718, "uint32_t output_groups = CEIL_DIV(dst->ne[0], decisions->outputs_per_wg);"),
    ("uses_mat_vec", C, 1624, "bool use_mat_vec = (dst->ne[1] <= 4);"),
    ("mul_mat_vec_vectorized", S, 1972, "key.vectorized = (context.src0->ne[0] % 4 == 0 &&"),
    ("mul_mat_vec_vectorized", S, 1973,
     "(context.src0->type == GGML_TYPE_F32 || context.src0->type == GGML_TYPE_F16)) ?"),
    ("mul_mat_vec_dequant_instance", S, 1993, 'defines.push_back("SRC0_INNER_TYPE=f32");'),
    ("mul_mat_vec_dequant_instance", S, 1999, 'defines.push_back("MUL_ACC_FLOAT");'),
    ("mul_mat_vec_dequant_instance", S, 2014, 'defines.push_back("SRC0_INNER_TYPE=u32");'),
    ("mul_mat_vec_dequant_instance", S, 2019, "if (key.use_mmvq) {"),
    ("mul_mat_vec_dequant_instance", S, 2061, 'defines.push_back("SRC1_INNER_TYPE=f16");'),
    ("mul_mat_vec_dequant_instance", S, 2069, 'defines.push_back(key.vectorized ? "VEC" : "SCALAR");'),
    ("mul_mat_vec_dequant_instance", S, 2097, 'variant += "_vectorized";'),
    ("mul_mat_vec_dequant_instance (f16 activations)", C, 4445, "supports_op |= (src0->type == GGML_TYPE_F16);"),
    ("compute_2d_workgroups", C, 41, "wg_y = std::max(1u, CEIL_DIV(total_wg, max_per_dim));"),
    ("rms_norm_mul_instance", S, 2627, 'std::string              op_name = "RMS_NORM_MUL";'),
    ("rms_norm_mul_instance", S, 2630, "if (key.inplace) {"),
    ("rms_norm_mul_instance", S, 2631, 'defines.push_back("INPLACE");'),
    ("rms_norm_mul_instance", S, 2641, 'defines.push_back(std::string("WG_SIZE=") + std::to_string(context.max_wg_size));'),
    ("rms_norm_mul_instance", C, 2649,
     "shader_lib_ctx.max_wg_size = ctx->global_ctx->capabilities.limits.maxComputeInvocationsPerWorkgroup;"),
    ("rope_instance", S, 3156, "key.type                          = context.dst->type;"),
    ("rope_instance", S, 3157,
     "key.inplace                       = ggml_webgpu_tensor_equal(context.src0, context.dst);"),
    ("rope_instance", S, 3158, "key.has_ff                        = (context.src2 != nullptr);"),
    ("rope_instance", S, 3170, 'defines.push_back("TYPE_F32");'),
    ("rope_instance", S, 3174, 'defines.push_back("TYPE_F16");'),
    ("rope_instance", S, 3182, 'defines.push_back("INPLACE");'),
    ("rope_instance", S, 3187, 'defines.push_back("FF_FUNC");'),
    ("rope_instance", S, 3191, 'defines.push_back(std::string("WG_SIZE=") + std::to_string(context.max_wg_size));'),
    ("rope_instance", C, 2723,
     "shader_lib_ctx.max_wg_size = ctx->global_ctx->capabilities.limits.maxComputeInvocationsPerWorkgroup;"),
    ("rope_instance (types)", C, 4595, "supports_op = op->type == GGML_TYPE_F32 || op->type == GGML_TYPE_F16;"),
    ("rope_host_params", C, 2753, "float theta_scale = powf(freq_base, -2.0f / n_dims);"),
    ("rope_host_params", C, 2756,
     "ggml_rope_yarn_corr_dims(n_dims, n_ctx_orig, freq_base, beta_fast, beta_slow, corr_dims);"),
    ("rope_grid", C, 2769, "(uint32_t) ggml_nelements(src0) / 2,"),
    ("rope_grid", C, 2799, "uint32_t wg_x = CEIL_DIV(ggml_nelements(dst), decisions->wg_size);"),
    ("rms_norm_mul_grid", C, 2679, "return ggml_backend_webgpu_build(ctx, pipeline, params, entries, ggml_nrows(dst));"),
    ("get_rows_vectorized", S, 1562,
     "context.src0->type == GGML_TYPE_F32 && context.dst->ne[0] % 4 == 0 && vec4_aligned;"),
    ("get_rows_instance", S, 1580, 'defines.push_back("FLOAT_PARALLEL");'),
    ("get_rows_instance", S, 1596, 'defines.push_back("F16");'),
    ("get_rows_instance", S, 1617, "case GGML_TYPE_Q4_0:"),
    ("get_rows_instance", S, 1619, "case GGML_TYPE_Q8_0:"),
    ("get_rows_instance", S, 1633, 'defines.push_back("SRC_TYPE=u32");'),
    ("get_rows_instance", S, 1639, 'defines.push_back(std::string("SRC_TYPE=") + type_str);'),
    ("get_rows_instance", S, 1660, 'defines.push_back("BLOCK_SIZE=32u");'),
    ("get_rows_instance", S, 1664, 'defines.push_back("BLOCK_SIZE=256u");'),
    ("get_rows_instance", S, 1676, 'defines.push_back("WG_SIZE=" + std::to_string(context.max_wg_size));'),
    ("get_rows_vec4_aligned", C, 1528, "const bool vec4_aligned = offset_src % 4 == 0 && offset_dst % 4 == 0"),
    ("get_rows_grid", C, 1514, "const bool float_parallel = src->type == GGML_TYPE_F32 || src->type == GGML_TYPE_F16"),
    ("get_rows_grid", C, 1559, "uint32_t total_threads  = float_parallel ? blocks_per_row * total_rows : total_rows;"),
    ("get_rows_grid", C, 1562, "return ggml_backend_webgpu_build(ctx, pipeline, params, entries, wg_x);"),
    ("set_rows_vec4", S, 1392,
     "(context.dst->type == GGML_TYPE_F32 || context.dst->type == GGML_TYPE_F16) && context.src0->ne[0] % 4 == 0;"),
    ("set_rows_instance", S, 1393, "key.i64_idx     = context.src1->type == GGML_TYPE_I64;"),
    ("set_rows_instance", S, 1394, "key.pair_blocks = quantized && ((context.src0->ne[0] / ggml_blck_size("),
    ("set_rows_instance", S, 1406, 'defines.push_back("DST_F32");'),
    ("set_rows_instance", S, 1410, 'defines.push_back("DST_F16");'),
    ("set_rows_instance", S, 1414, 'defines.push_back("DST_Q8_0");'),
    ("set_rows_instance", S, 1418, 'defines.push_back("DST_Q4_0");'),
    ("set_rows_instance", S, 1434, 'defines.push_back("PAIR_BLOCKS");'),
    ("set_rows_instance", S, 1426, 'defines.push_back("VEC4");'),
    ("set_rows_instance", S, 1430, 'defines.push_back("I64_IDX");'),
    ("set_rows_instance", S, 1438, 'defines.push_back(std::string("WG_SIZE=") + std::to_string(context.max_wg_size));'),
    ("set_rows_instance", S, 1440, "const auto & shader_source      = quantized ? wgsl_set_rows_quant : wgsl_set_rows;"),
    ("set_rows_grid", C, 1490, "const uint32_t blocks_per_row = src->ne[0] / ggml_blck_size(dst->type);"),
    ("set_rows_grid", C, 1492, "* (decisions->pair_blocks ? (blocks_per_row / 2) : blocks_per_row);"),
    ("set_rows_grid", C, 1494, "threads = (src->ne[1] * src->ne[2] * src->ne[3]) * (src->ne[0] / 4);"),
    ("set_rows_grid", C, 1496, "threads = src->ne[0] * src->ne[1] * src->ne[2] * src->ne[3];"),
    ("set_rows_grid", C, 1499, "return ggml_backend_webgpu_build(ctx, pipeline, params, entries, wg_x, 1);"),
    ("soft_max_instance", S, 3206, "key.has_mask                          = (context.src1 != nullptr);"),
    ("soft_max_instance", S, 3207, "key.has_sink                          = (context.src2 != nullptr);"),
    ("soft_max_instance", S, 3208, "= ggml_webgpu_tensor_equal(context.src0, context.dst);"),
    ("soft_max_instance", S, 3219, 'defines.push_back("HAS_MASK");'),
    ("soft_max_instance", S, 3222, 'defines.push_back("MASK_F32");'),
    ("soft_max_instance", S, 3226, 'defines.push_back("MASK_F16");'),
    ("soft_max_instance", S, 3235, 'defines.push_back("HAS_SINK");'),
    ("soft_max_instance", S, 3240, 'defines.push_back("INPLACE");'),
    ("soft_max_instance", S, 3244, 'defines.push_back(std::string("WG_SIZE=") + std::to_string(context.max_wg_size));'),
    ("soft_max_instance", C, 2928,
     "shader_lib_ctx.max_wg_size = ctx->global_ctx->capabilities.limits.maxComputeInvocationsPerWorkgroup;"),
    ("soft_max_alibi", C, 2937, "float      n_head_log2 = float(1u << (uint32_t) floor(log2(src0->ne[2])));"),
    ("soft_max_alibi", C, 2938, "float      m0          = powf(2.0f, -(max_bias) / n_head_log2);"),
    ("soft_max_alibi", C, 2939, "float      m1          = powf(2.0f, -(max_bias / 2.0f) / n_head_log2);"),
    ("soft_max_grid", C, 2985, "return ggml_backend_webgpu_build(ctx, pipeline, params, entries, ggml_nrows(dst));"),
]


def _extracted_or_skip():
    folder = source.extracted()
    if folder is None:
        pytest.skip(f"the pinned ggml-webgpu sources are not in the cache ({source.INSTALL})")
    return folder


@pytest.mark.parametrize("rule, file, line, text", CITED, ids=[f"{r}-{f}:{n}" for r, f, n, _ in CITED])
def test_each_rule_cites_the_cpp_line_it_follows(rule, file, line, text):
    folder = _extracted_or_skip()
    lines = (folder / source.BACKEND / file).read_text().splitlines()
    assert text in lines[line - 1], f"{file}:{line} no longer reads {text!r}: {lines[line - 1].strip()!r}"


def test_the_vec_kv_tile_is_what_fits_the_workgroup_storage():
    # 16 KiB, head dim 128, a mask: q + o + 2 stats = 258 words, 130 per KV row: (4096 - 258) / 130 = 29
    shape = AttentionShape(128, 128, 1, 8, 2, 300, mask=True)
    assert selection.flash_attn_vec_kv_tile(Adapter(max_workgroup_storage=16384), shape) == 29
    assert selection.flash_attn_vec_kv_tile(Adapter(max_workgroup_storage=32768), shape) == 32
    # head dim 256: 514 words, 258 per row: (4096 - 514) / 258 = 13 rows, a tile that is not a power of two
    wide = AttentionShape(256, 256, 1, 8, 2, 300, mask=True)
    assert selection.flash_attn_vec_kv_tile(Adapter(max_workgroup_storage=16384), wide) == 13
    # the direct path (a KV length that is a multiple of 256) stages no K/V rows: 2 words a row, 32 fit,
    # and 32 divides 256
    direct = AttentionShape(256, 256, 1, 8, 2, 512, mask=True)
    assert selection.flash_attn_vec_kv_tile(Adapter(max_workgroup_storage=16384), direct) == 32


def test_d_split_is_the_lowest_head_dim_bit_over_four_capped_by_the_smallest_subgroup():
    worked = ((128, 32, 4), (72, 32, 2), (40, 32, 2), (64, 4, 4), (64, 8, 4), (36, 32, 1))
    for head_dim, min_subgroup, expected in worked:
        shape = AttentionShape(head_dim, head_dim, 1, 1, 1, 64)
        assert selection.flash_attn_d_split(Adapter(min_subgroup=min_subgroup, max_subgroup=max(min_subgroup, 32)),
                                            shape) == expected


def test_the_split_count_doubles_until_the_splits_cover_the_context_and_stops_at_the_smallest_subgroup():
    adapter = Adapter(min_subgroup=8, max_subgroup=32)
    assert [selection.flash_attn_vec_nwg(adapter, 32, n) for n in (1, 64, 65, 129, 257, 10_000)] == [1, 1, 2, 4, 8, 8]
    assert selection.flash_attn_vec_nwg(Adapter(min_subgroup=4, max_subgroup=128), 32, 10_000) == 4


def test_the_vec_plan_has_blk_with_a_mask_and_reduce_with_more_than_one_split():
    adapter = Adapter(min_subgroup=4, max_subgroup=128, max_workgroup_storage=32768)
    plan = selection.vec_attention_plan(adapter, AttentionShape(64, 64, 1, 8, 2, 300, mask=True))
    assert (plan.kv_tile, plan.nwg, plan.split_wg_size, plan.reduce_wg_size) == (32, 4, 128, 256)
    assert plan.blk is not None and plan.blk_grid == (10, 1)
    assert plan.split_grid == (32, 1) and plan.reduce_grid == (8, 1)
    assert "BLK" in plan.split.defines and "D_SPLIT=4" in plan.split.defines and "MASK" in plan.split.defines
    short = selection.vec_attention_plan(adapter, AttentionShape(64, 64, 1, 8, 2, 40, mask=False))
    assert short.nwg == 1 and short.reduce is None and short.blk is None
    quantized = selection.vec_attention_plan(Adapter(), AttentionShape(64, 64, 3, 4, 4, 512, "q8_0", "q8_0"))
    assert quantized.split.defines[:2] == ("K_Q8_0", "V_Q8_0")


def test_the_vec_path_is_refused_for_long_queries_and_unaligned_quantized_heads():
    assert not selection.flash_attn_use_vec_path(Adapter(), AttentionShape(64, 64, 20, 1, 1, 64))
    assert not selection.flash_attn_use_vec_path(Adapter(), AttentionShape(80, 80, 1, 1, 1, 64, "q8_0", "q8_0"))
    assert not selection.flash_attn_use_vec_path(Adapter(subgroups=False), AttentionShape(64, 64, 1, 1, 1, 64))
    with pytest.raises(ValueError, match="tiled path"):
        selection.vec_attention_plan(Adapter(), AttentionShape(64, 64, 20, 1, 1, 64))


def test_mmvq_is_taken_only_on_amd_intel_and_nvidia_with_dot_products_and_few_columns():
    assert selection.can_use_mmvq(Adapter(vendor="nvidia"), "q4_K", 512, 4)
    assert not selection.can_use_mmvq(Adapter(vendor="nvidia"), "q4_K", 512, 5)
    assert not selection.can_use_mmvq(Adapter(vendor="apple"), "q4_0", 512, 1)
    assert not selection.can_use_mmvq(Adapter(vendor="llvmpipe"), "q4_0", 512, 1)
    assert not selection.can_use_mmvq(Adapter(dot_product=False), "q4_0", 512, 1)
    assert not selection.can_use_mmvq(Adapter(), "q5_0", 512, 1)


def test_the_float_mat_vec_takes_vec4_for_float_rows_of_a_multiple_of_4_and_no_mmvq_defines():
    lavapipe = Adapter(vendor="mesa", min_subgroup=8, max_subgroup=8)
    vec = selection.mul_mat_vec_dequant_instance(lavapipe, "f16", "f32", 4096, 1)
    assert vec.defines == ("SRC0_INNER_TYPE=f16", "MUL_ACC_FLOAT", "SRC1_INNER_TYPE=f32", "VEC", "WG_SIZE=256",
                           "OUTPUTS_PER_WG=4", "USE_SUBGROUP_REDUCTION", "NUM_COLS=1")
    assert vec.variant == "mul_mat_vec_f16_f32_sg_reduce_vectorized"
    scalar = selection.mul_mat_vec_dequant_instance(Adapter(subgroups=False), "f32", "f32", 4097, 3)
    assert "SCALAR" in scalar.defines and scalar.variant == "mul_mat_vec_f32_f32_wg_reduce"
    q4 = selection.mul_mat_vec_dequant_instance(lavapipe, "q4_0", "f32", 4096, 2)
    assert q4.defines[:4] == ("BYTE_HELPERS", "MUL_ACC_Q4_0", "U32_DEQUANT_HELPERS", "SRC0_INNER_TYPE=u32")
    assert "SCALAR" in q4.defines and "MMVQ" not in q4.defines and "LEGACY_QUANTS" not in q4.defines
    assert q4.variant == "mul_mat_vec_q4_0_f32_sg_reduce"
    assert not selection.mul_mat_vec_vectorized("q8_0", 4096) and not selection.mul_mat_vec_vectorized("f32", 4094)
    assert selection.uses_mat_vec(4) and not selection.uses_mat_vec(5)


def test_the_float_mat_vec_refuses_what_ggml_sends_elsewhere():
    with pytest.raises(ValueError, match="MMVQ path"):  # an NVIDIA adapter with DP4A takes MMVQ for q4_0
        selection.mul_mat_vec_dequant_instance(Adapter(), "q4_0", "f32", 4096, 1)
    with pytest.raises(ValueError, match="f16 weights only"):
        selection.mul_mat_vec_dequant_instance(Adapter(), "f32", "f16", 4096, 1)
    with pytest.raises(ValueError, match="tiled programs"):
        selection.mul_mat_vec_dequant_instance(Adapter(), "f16", "f32", 4096, 5)
    # f16 x f16 never takes MMVQ, on any adapter (can_use_mmvq wants f32 activations)
    assert selection.mul_mat_vec_dequant_instance(Adapter(), "f16", "f16", 64, 1).variant.endswith("_vectorized")


def test_the_grids_fold_into_two_dimensions_as_compute_2d_workgroups_does():
    assert selection.compute_2d_workgroups(70_000, 65535) == (35_000, 2)
    assert selection.quantize_q8_grid(Adapter(), 4096, 3) == (12, 1)  # 4096/4 = 1024 lanes: 4 workgroups a row
    assert selection.mul_mat_vec_grid(Adapter(), 10) == (3, 1)


def _value_defines(getter_body: str) -> set[str]:
    return set(re.findall(r'"([A-Z_0-9]+)=', getter_body))


GETTERS = {"flash_attn_vec_split": "get_flash_attn_vec_pipeline", "flash_attn_vec_blk": "get_flash_attn_blk_pipeline",
           "flash_attn_vec_reduce": "get_flash_attn_vec_reduce_pipeline", "quantize_q8": "get_quantize_q8_pipeline",
           "mul_mat_vec": "get_mul_mat_vec_pipeline", "rms_norm_mul": "get_rms_norm_mul_pipeline",
           "rope": "get_rope_pipeline",
           "get_rows": "get_get_rows_pipeline", "soft_max": "get_soft_max_pipeline",
           "set_rows": "get_set_rows_pipeline"}


def _instances():
    adapter = Adapter(min_subgroup=4, max_subgroup=128, max_workgroup_storage=32768)
    plan = selection.vec_attention_plan(adapter, AttentionShape(64, 64, 1, 8, 2, 300, mask=True, sinks=True))
    return [plan.split, plan.blk, plan.reduce, selection.quantize_q8_instance(adapter, "q4_0"),
            selection.mul_mat_vec_instance(adapter, "q4_K", 512, 2), selection.rms_norm_mul_instance(adapter),
            selection.mul_mat_vec_dequant_instance(Adapter(vendor="mesa"), "q4_1", "f32", 512, 3),
            selection.mul_mat_vec_dequant_instance(adapter, "f16", "f16", 512, 1),
            selection.rms_norm_mul_instance(adapter, "inplace"),
            selection.rope_instance(adapter, "f16", inplace=True, freq_factors=True)] + [
        selection.get_rows_instance(adapter, t, v) for t in selection.GET_ROWS_TYPES
        for v in ((False, True) if t == "f32" else (False,))] + [
        selection.set_rows_instance(adapter, t, v, i) for t in ("f32", "f16") for v in (False, True)
        for i in (False, True)] + [
        selection.soft_max_instance(adapter, "f16", sinks=True),
        selection.soft_max_instance(adapter, "f32", inplace=True), selection.soft_max_instance(adapter)]


@pytest.mark.parametrize("instance", _instances(), ids=lambda i: i.template)
def test_every_value_define_the_cpp_passes_and_the_template_defaults_is_set(instance):
    """A template's `#define NAME default` (flash_attn_vec_split's HEAD_DIM_QK 64, KV_TILE 16,
    WG_SIZE 64) silently wins if the shader library's NAME=VALUE is forgotten: every NAME=VALUE the
    C++ getter (and the common-defines helper it calls) pushes is one the port sets."""
    folder = _extracted_or_skip()
    shader_lib = (folder / source.BACKEND / S).read_text()
    start = shader_lib.index(f"webgpu_pipeline {GETTERS[instance.template]}(")
    body = shader_lib[start:shader_lib.index("\n    }\n", start)]
    if "ggml_webgpu_flash_attn_common_defines" in body:
        common = shader_lib.index("inline std::vector<std::string> ggml_webgpu_flash_attn_common_defines(")
        body += shader_lib[common:shader_lib.index("\n}\n", common)]
    pushed = _value_defines(body)
    set_here = {d.split("=", 1)[0] for d in instance.defines if "=" in d}
    assert pushed <= set_here, f"{instance.template}: the C++ also sets {sorted(pushed - set_here)}"
    text = programs.embedded(instance.template)
    defaults = set(re.findall(r"^#define\s+([A-Z_0-9]+)\s+\S", text, re.M))
    assert defaults & pushed <= set_here


@pytest.mark.parametrize("instance", _instances(), ids=lambda i: i.template)
def test_an_instance_leaves_no_directive_and_no_unset_macro_behind(instance):
    _extracted_or_skip()
    text = Preprocessor().preprocess(programs.embedded(instance.template), instance.defines)
    assert not [line for line in text.splitlines() if line.lstrip().startswith("#")]
    for name in ("WG_SIZE", "HEAD_DIM_QK", "HEAD_DIM_V", "KV_TILE", "D_SPLIT", "NUM_COLS", "OUTPUTS_PER_WG",
                 "SRC1_INNER_TYPE", "SRC0_INNER_TYPE", "DST_TYPE", "K_TYPE", "V_TYPE", "Q_TYPE"):
        assert not re.search(rf"\b{name}\b", text), f"{name} left unexpanded in {instance.variant}"
def test_the_shipped_programs_are_what_the_preprocessor_makes_from_the_release():
    _extracted_or_skip()
    listed = [name for name in programs.SHIPPED.files if name.endswith(".wgsl")]
    assert listed, "no program is shipped"
    for name in listed:
        text = (programs.SHIPPED.folder / name).read_text()
        first = text.split("\n", 1)[0]
        match = re.search(r": wgsl_(\w+) \[(.*)\] -> (\S+)$", first)
        assert match, first
        instance = selection.Instance(match[1], tuple(match[2].split()), match[3])
        assert text == programs.provenance_line(instance) + "\n" + programs.instantiate(instance)


def test_rms_norm_mul_takes_the_binding_define_and_the_adapters_invocations_as_its_workgroup():
    """S L2630-2641: one of INPLACE, OVERLAP, SRC_OVERLAP (none for separate tensors), then
    WG_SIZE = maxComputeInvocationsPerWorkgroup (C L2649); one workgroup per row (C L2679)."""
    adapter = Adapter(max_invocations=256)
    assert selection.rms_norm_mul_instance(adapter) == selection.Instance("rms_norm_mul", ("WG_SIZE=256",),
                                                                          "RMS_NORM_MUL")
    inplace = selection.rms_norm_mul_instance(Adapter(max_invocations=1024), "inplace")
    assert inplace.defines == ("INPLACE", "WG_SIZE=1024") and inplace.variant == "RMS_NORM_MUL_inplace"
    assert selection.rms_norm_mul_grid(70000) == (70000, 1)  # no fold: past 65535 rows it cannot dispatch
    with pytest.raises(ValueError, match="one of separate, inplace"):
        selection.rms_norm_mul_instance(adapter, "fused")


def test_get_rows_takes_vec4_only_for_aligned_f32_views_and_one_invocation_per_element_or_row():
    """S L1562 and C L1528-1529: vec4 for an f32 table whose row length, offsets and strides are
    multiples of 4; S L1633/L1639: q4_0 and q8_0 read as u32 words, q4_1 and the K types as their
    structs; C L1559-1560: the float types one invocation per element (vec4), blocks one per row."""
    assert selection.get_rows_vec4_aligned(0, 0, 64, 640, 640)
    assert not selection.get_rows_vec4_aligned(2, 0, 64, 640, 640)
    assert not selection.get_rows_vec4_aligned(0, 0, 65, 650, 650)
    assert selection.get_rows_vectorized("f32", 64, True) and not selection.get_rows_vectorized("f16", 64, True)
    assert not selection.get_rows_vectorized("f32", 66, True)
    adapter = Adapter(max_invocations=256)
    vec = selection.get_rows_instance(adapter, "f32", True)
    assert vec.variant == "get_rows_f32_vec" and "SRC_TYPE=vec4<f32>" in vec.defines and "BLOCK_SIZE=4u" in vec.defines
    assert selection.get_rows_instance(adapter, "q4_0").defines[:2] == ("SRC_TYPE=u32", "U32_DEQUANT_HELPERS")
    q4k = selection.get_rows_instance(adapter, "q4_K")
    assert q4k.defines[0] == "SRC_TYPE=q4_K" and "Q4_K_SCALE_MIN" in q4k.defines and "BLOCK_SIZE=256u" in q4k.defines
    assert q4k.defines[-1] == "WG_SIZE=256" and q4k.variant == "get_rows_q4_K"
    assert selection.get_rows_grid(adapter, "f32", True, 1024, 3) == (3, 1)  # 256 vec4 a row, 3 rows
    assert selection.get_rows_grid(adapter, "f16", False, 1024, 3) == (12, 1)
    assert selection.get_rows_grid(adapter, "q8_0", False, 1024, 300) == (2, 1)  # one invocation a row
    with pytest.raises(ValueError, match="f32 source only"):
        selection.get_rows_instance(adapter, "f16", True)


def test_rope_is_keyed_by_type_binding_and_frequency_factors_and_takes_two_elements_an_invocation():
    """S L3156-3191: TYPE_F32/TYPE_F16, INPLACE (src0 is dst), FF_FUNC (src2 bound), WG_SIZE =
    maxComputeInvocationsPerWorkgroup (C L2723); the mode is no define. C L2799: ceil(nelements /
    WG_SIZE) workgroups, not folded, while n_threads = nelements / 2 (C L2769). C L2753-2756: the
    host's f32 theta_scale and YaRN correction dims."""
    adapter = Adapter(max_invocations=256)
    assert selection.rope_instance(adapter) == selection.Instance("rope", ("TYPE_F32", "WG_SIZE=256"), "rope_f32")
    both = selection.rope_instance(Adapter(max_invocations=64), "f16", inplace=True, freq_factors=True)
    assert both.defines == ("TYPE_F16", "INPLACE", "FF_FUNC", "WG_SIZE=64") and both.variant == "rope_f16_inplace_ff"
    with pytest.raises(ValueError, match="one of f32, f16"):
        selection.rope_instance(adapter, "q8_0")
    # 2 tokens x 32 heads x 128 channels = 8192 elements: 32 workgroups of 256, 4096 invocations at work
    assert selection.rope_grid(8192, 256) == (32, 1)
    assert selection.rope_grid(10 * 3 * 5, 64) == (3, 1)
    theta_scale, low, high = selection.rope_host_params(10000.0, 128, 4096, 32.0, 1.0)
    assert theta_scale == float(np.float32(np.float32(10000.0) ** np.float32(-2.0 / 128)))
    assert (low, high) == (20.0, 46.0)  # as references.ggml_rope.yarn_corr_dims in float64


def test_soft_max_takes_mask_sink_and_inplace_defines_in_the_getters_order():
    """S L3218-3244: HAS_MASK with MASK_F32 or MASK_F16, HAS_SINK, INPLACE, then WG_SIZE =
    maxComputeInvocationsPerWorkgroup (C L2928); the variant grows in the same order; one workgroup
    per row (C L2985); ALiBi's constants as flash attention's (C L2937-2939)."""
    adapter = Adapter(max_invocations=256)
    assert selection.soft_max_instance(adapter) == selection.Instance("soft_max", ("WG_SIZE=256",), "soft_max")
    full = selection.soft_max_instance(Adapter(max_invocations=1024), "f16", sinks=True, inplace=True)
    assert full.defines == ("HAS_MASK", "MASK_F16", "HAS_SINK", "INPLACE", "WG_SIZE=1024")
    assert full.variant == "soft_max_mask_f16_sink_inplace"
    assert selection.soft_max_instance(adapter, "f32").variant == "soft_max_mask_f32"
    assert selection.soft_max_grid(70000) == (70000, 1)  # no fold: past 65535 rows it cannot dispatch
    assert selection.soft_max_alibi(8.0, 12) == (8.0, 0.5, float(np.float32(2**-0.5)))
    with pytest.raises(ValueError, match="one of none, f32, f16"):
        selection.soft_max_instance(adapter, "bf16")


def test_set_rows_takes_vec4_for_float_rows_of_a_multiple_of_4_and_i64_indices_with_their_error_word():
    """S L1391-1394: VEC4 for f32/f16 destinations with ne0 % 4 == 0, I64_IDX for i64 indices,
    PAIR_BLOCKS for a block type with an even block count; C L1489-1499: one invocation per element,
    vec4 or block (pair)."""
    assert selection.set_rows_vec4("f16", 128) and not selection.set_rows_vec4("f16", 130)
    assert not selection.set_rows_vec4("q8_0", 128)
    adapter = Adapter(max_invocations=256)
    inst = selection.set_rows_instance(adapter, "f16", True, True)
    assert inst == selection.Instance("set_rows", ("DST_F16", "VEC4", "I64_IDX", "WG_SIZE=256"),
                                      "set_rows_dstf16_vec4_i64idx")
    quant = selection.set_rows_instance(adapter, "q8_0", pair_blocks=True)
    assert quant.template == "set_rows_quant" and quant.variant == "set_rows_dstq8_0_pair_blocks"
    assert selection.set_rows_grid(adapter, "f32", True, False, 1024, 3) == (3, 1)
    assert selection.set_rows_grid(adapter, "f32", False, False, 1025, 3) == (13, 1)
    assert selection.set_rows_grid(adapter, "q4_0", False, True, 1024, 32) == (2, 1)  # 16 pairs a row
    with pytest.raises(ValueError, match="vec4 is for f32 and f16"):
        selection.set_rows_instance(adapter, "q4_0", vec4=True)


# -- flash attention's tile path ---------------------------------------------------------------------
def test_the_tile_kv_tile_is_what_the_f32_estimate_fits_at_four_query_rows_up_to_64():
    # 16 KiB, head dim 128, a mask: 4·128 (q) + 4·128 (o) + 8 stats = 1032 words, 128 + 4 + 4 = 136
    # words a KV row: (4096 - 1032) / 136 = 22; head dim 64: (4096 - 520) / 72 = 49; 32 KiB: 64
    adapter = Adapter(min_subgroup=4, max_subgroup=64)
    assert selection.flash_attn_tile_kv_tile(adapter, AttentionShape(128, 128, 32, 8, 2, 300)) == 22
    assert selection.flash_attn_tile_kv_tile(adapter, AttentionShape(64, 64, 32, 8, 2, 300)) == 49
    assert selection.flash_attn_tile_kv_tile(Adapter(max_workgroup_storage=32768),
                                             AttentionShape(64, 64, 32, 8, 2, 300)) == 64
    assert selection.flash_attn_tile_kv_tile(Adapter(max_workgroup_storage=32768),
                                             AttentionShape(256, 256, 32, 8, 1, 300)) == 23


def test_the_tile_workgroup_holds_four_subgroups_of_the_widest_size():
    assert selection.flash_attn_tile_wg_size(Adapter(min_subgroup=4, max_subgroup=64)) == 256
    assert selection.flash_attn_tile_wg_size(Adapter(min_subgroup=8, max_subgroup=32)) == 128
    assert selection.flash_attn_tile_wg_size(Adapter(min_subgroup=8, max_subgroup=8)) == 128
    assert selection.flash_attn_tile_wg_size(Adapter(max_subgroup=128, max_invocations=1024)) == 512


def test_the_tile_path_is_taken_for_prefills_without_subgroup_matrices_and_refused_past_the_invocations():
    shape = AttentionShape(128, 128, 20, 8, 2, 300)
    adapter = Adapter(min_subgroup=4, max_subgroup=64)
    assert selection.flash_attn_uses_tile_path(adapter, shape)
    assert not selection.flash_attn_uses_tile_path(adapter, AttentionShape(128, 128, 19, 8, 2, 300))  # vec path
    assert not selection.flash_attn_uses_tile_path(adapter, shape, subgroup_matrix=(8, 8, 8))
    assert selection.flash_attn_uses_tile_path(adapter, AttentionShape(40, 40, 20, 8, 2, 300), (8, 16, 16))
    assert not selection.flash_attn_uses_tile_path(Adapter(min_subgroup=4, max_subgroup=128), shape)  # 4·128 > 256
    assert not selection.flash_attn_uses_tile_path(Adapter(subgroups=False), shape)
    assert selection.flash_attn_uses_tile_path(adapter, AttentionShape(128, 128, 20, 8, 2, 300, "q8_0", "f16"))
    assert not selection.flash_attn_uses_tile_path(adapter, AttentionShape(40, 40, 20, 8, 2, 300, "q8_0", "f16"))
    with pytest.raises(ValueError, match="tile path"):
        selection.tile_attention_plan(adapter, AttentionShape(128, 128, 8, 8, 2, 300))


def test_the_tile_plan_has_no_direct_loads_and_one_workgroup_per_four_rows_of_a_head():
    adapter = Adapter(min_subgroup=4, max_subgroup=64)
    plan = selection.tile_attention_plan(adapter, AttentionShape(64, 64, 33, 8, 2, 512, sinks=True, batch=2))
    assert plan.q_tile == 4 and plan.kv_tile == 49 and plan.wg_size == 256
    assert plan.grid == (9 * 8 * 2, 1)
    assert "K_DIRECT" not in plan.instance.defines and "V_DIRECT" not in plan.instance.defines  # KV of 512
    assert plan.instance.defines[-2:] == ("MIN_SUBGROUP_SIZE=4u", "MAX_SUBGROUP_SIZE=64u")
    assert plan.instance.variant == "flash_attn_tile_kf16_vf16_qf32_dstf32_mask_sinks_hsqk64_hsv64_tile_sg4_64"


def test_every_value_define_the_tile_getter_passes_is_set():
    """get_flash_attn_pipeline's NAME=VALUE defines on the tile branch (the common ones, MIN_ and
    MAX_SUBGROUP_SIZE; SG_MAT_* belong to the subgroup-matrix branch) are all set."""
    folder = _extracted_or_skip()
    shader_lib = (folder / source.BACKEND / S).read_text()
    start = shader_lib.index("webgpu_pipeline get_flash_attn_pipeline(")
    body = shader_lib[start:shader_lib.index("} else {\n            shader_src = wgsl_flash_attn;", start)]
    common = shader_lib.index("inline std::vector<std::string> ggml_webgpu_flash_attn_common_defines(")
    body += shader_lib[common:shader_lib.index("\n}\n", common)]
    instance = selection.tile_attention_plan(Adapter(min_subgroup=4, max_subgroup=64),
                                             AttentionShape(128, 128, 20, 8, 2, 300)).instance
    set_here = {d.split("=", 1)[0] for d in instance.defines if "=" in d}
    assert _value_defines(body) <= set_here
    text = Preprocessor().preprocess(programs.embedded("flash_attn_tile"), instance.defines)
    assert not [line for line in text.splitlines() if line.lstrip().startswith("#")]
    for name in ("WG_SIZE", "HEAD_DIM_QK", "HEAD_DIM_V", "KV_TILE", "Q_TILE", "MIN_SUBGROUP_SIZE", "K_TYPE", "Q_TYPE"):
        assert not re.search(rf"\b{name}\b", text), f"{name} left unexpanded"
