// llama.cpp ggml-webgpu (llama-cpp-python 0.3.36 sdist, sha256 832db0699007f1be): wgsl_mul_mat_vec [BYTE_HELPERS MUL_ACC_Q4_0 U32_DEQUANT_HELPERS SRC0_INNER_TYPE=u32 SRC1_INNER_TYPE=f32 SCALAR WG_SIZE=256 OUTPUTS_PER_WG=4 USE_SUBGROUP_REDUCTION NUM_COLS=1] -> mul_mat_vec_q4_0_f32_sg_reduce
enable subgroups;
enable f16;




fn get_byte(value: u32, index: u32) -> u32 {
    return (value >> (index * 8)) & 0xFF;
}

fn get_byte_i32(value: u32, index: u32) -> i32 {
    return bitcast<i32>(((value >> (index * 8)) & 0xFF) << 24) >> 24;
}


fn f16_from_u16(bits: u32) -> f16 {
    let packed = unpack2x16float(bits);
    return f16(packed[0]);
}


fn load_u16_at_src0(byte_offset: u32) -> u32 {
    let word = src0[byte_offset / 4u];
    let shift = (byte_offset & 0x2u) * 8u;
    return (word >> shift) & 0xFFFFu;
}

// Always reads the 4-byte-aligned word containing byte_offset.
// Caller extracts the 16-bit half it needs via & 0xFFFFu or >> 16u.
// this is used in k-quants for better performance
fn load_u32_at_src0_aligned(byte_offset: u32) -> u32 {
    return src0[(byte_offset & ~3u) / 4u];
}

fn load_u32_at_src0(byte_offset: u32) -> u32 {
    let word_idx = byte_offset / 4u;
    let shift = (byte_offset & 0x3u) * 8u;
    let lo = src0[word_idx];
    let hi = src0[word_idx + 1u];
    let shifted = (lo >> shift) | (hi << (32u - shift));
    return select(shifted, lo, shift == 0u);
}

fn load_f16_at_src0(byte_offset: u32) -> f16 {
    let packed = unpack2x16float(load_u16_at_src0(byte_offset));
    return f16(packed[0]);
}

fn load_f16_as_f32_at_src0(byte_offset: u32) -> f32 {
    let word = src0[byte_offset / 4u];
    let shift = (byte_offset & 0x2u) * 8u;
    let d_bits = (word >> shift) & 0xFFFFu;
    return unpack2x16float(d_bits)[0];
}




























fn byte_of(v: u32, b: u32) -> u32 {
    return (v >> (b * 8u)) & 0xFFu;
}

fn sbyte_of(v: u32, b: u32) -> i32 {
    let raw = i32((v >> (b * 8u)) & 0xFFu);
    return select(raw, raw - 256, raw >= 128);
}



fn inner_dot(src0_val: u32, src1_val: f32) -> f32 {
    return f32(src0_val) * f32(src1_val);
}



fn accumulate_vec_dot(thread_id: u32, row_base: u32, src0_batch_offset: u32, src1_idx_base: u32) -> array<array<f32, 4>, 1> {
    var acc: array<array<f32, 4>, 1>;

    let num_blocks = params.k / 32;
    let thread_within_block = thread_id % 4;
    for (var block = thread_id/4; block < num_blocks; block += 256/4) {
        let x_base = src1_idx_base + block * 32 + thread_within_block * 4;
        var x_block: array<array<f32, (32/4)>, 1>;
        for (var col = 0u; col < 1;col += 1) {
            for (var i = 0u; i < (32/4) / 2; i++) {
                x_block[col][i]     = f32(src1[x_base + col * params.stride_11 + i]);
                x_block[col][i + 4] = f32(src1[x_base + col * params.stride_11 + i + 16]);
            }
        }
        for (var row = 0u; row < 4; row++) {
            let output_row = row_base + row;
            if (output_row < params.m) {
                let block_byte_base = (src0_batch_offset + output_row * params.stride_01 + block) * 18;
                let d = f32(load_f16_at_src0(block_byte_base));
                let q_packed = load_u32_at_src0(block_byte_base + 2u + 4u * thread_within_block);
                for (var col = 0u;col < 1;col += 1) {
                    var row_sum = 0.0;
                    for (var byte_idx = 0u; byte_idx < 4u; byte_idx++) {
                        let q_byte = get_byte(q_packed, byte_idx);
                        let q_lo = (f32(q_byte & 0xFu) - 8.0) * d;
                        let q_hi = (f32((q_byte >> 4u) & 0xFu) - 8.0) * d;
                        row_sum += q_lo * x_block[col][byte_idx];
                        row_sum += q_hi * x_block[col][byte_idx + 4u];
                    }
                    acc[col][row] += row_sum;
                }
            }
        }
    }

    return acc;
}























struct MulMatParams {
    offset_src0: u32,
    offset_src1: u32,
    offset_dst: u32,
    m: u32,
    n: u32,
    k: u32,
    stride_01: u32,
    stride_11: u32,
    stride_02: u32,
    stride_12: u32,
    stride_03: u32,
    stride_13: u32,
    bs02: u32,
    bs03: u32,
    broadcast2: u32,
    broadcast3: u32
};

@group(0) @binding(0) var<storage, read_write> src0: array<u32>;
@group(0) @binding(1) var<storage, read_write> src1: array<f32>;

@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
// "mul_mat_vec_acc.tmpl" requires params.k, params.m, params.stride_01
@group(0) @binding(2 + 1) var<uniform> params: MulMatParams;

// Flattened as [row][thread] to keep each row's reduction contiguous in memory.
var<workgroup> partial_sums: array<f32, 4 * 256>;

fn partial_index(row: u32, thread: u32) -> u32 {
    return row * 256 + thread;
}

@compute @workgroup_size(256)
fn main(
    @builtin(local_invocation_id) local_id: vec3<u32>,
    @builtin(workgroup_id) wg_id: vec3<u32>,
    @builtin(num_workgroups) num_wg: vec3<u32>
  , @builtin(subgroup_id) subgroup_id: u32,
    @builtin(subgroup_invocation_id) subgroup_invocation_id: u32,
    @builtin(num_subgroups) num_subgroups: u32,
    @builtin(subgroup_size) subgroup_size: u32
) {
    let thread_id = local_id.x;

    let total_batches = params.bs02 * params.broadcast2 * params.bs03 * params.broadcast3;
    let wg_linear = wg_id.y * num_wg.x + wg_id.x;
    let output_groups = (params.m + 4 - 1u) / 4;
    let batch_idx = wg_linear / output_groups;
    if (batch_idx >= total_batches) {
        return;
    }

    let row_base = (wg_linear % output_groups) * 4;

    let dst2_stride = params.m * params.n;
    let dst2_idx = batch_idx % (params.bs02 * params.broadcast2);
    let dst3_stride = dst2_stride * params.bs02 * params.broadcast2;
    let dst3_idx = batch_idx / (params.bs02 * params.broadcast2);
    let src03_idx = dst3_idx / params.broadcast3;
    let src13_idx = dst3_idx;
    let src02_idx = dst2_idx / params.broadcast2;
    let src12_idx = dst2_idx;

    let src0_batch_offset = params.offset_src0 + src03_idx * params.stride_03 + src02_idx * params.stride_02;
    let dst_idx_base = params.offset_dst + dst3_idx * dst3_stride + dst2_idx * dst2_stride + row_base;

    let src1_idx_base = params.offset_src1 + src13_idx * params.stride_13 + src12_idx * params.stride_12;
    let acc = accumulate_vec_dot(thread_id, row_base, src0_batch_offset, src1_idx_base);

    for (var col = 0u;col < 1;col += 1) {

            for (var row = 0u; row < 4; row++) {
                let subgroup_total = subgroupAdd(acc[col][row]);
                if (subgroup_invocation_id == 0u) {
                    partial_sums[partial_index(row, subgroup_id)] = subgroup_total;
                }
            }

            workgroupBarrier();

            for (var row = subgroup_id; (row < 4) && (row_base + row < params.m); row += num_subgroups) {
                let output_row = row_base + row;
                var row_acc = 0.0f;
                for (var k = subgroup_invocation_id; k < num_subgroups; k += subgroup_size) {
                    row_acc += partial_sums[partial_index(row, k)];
                }
                let row_total = subgroupAdd(row_acc);
                if (subgroup_invocation_id == 0) {
                    dst[dst_idx_base + col * params.m + row] = row_total;
                }
            }


    workgroupBarrier();

    }
}
