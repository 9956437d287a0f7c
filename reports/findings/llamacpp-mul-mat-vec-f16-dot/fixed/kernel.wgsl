// kernel: llamacpp.quant.mul_mat_vec
// config: activation=f16 cols=1 reduce=subgroup subgroup_max=128 subgroup_min=4 vec4=True weight=f16
// llama.cpp ggml-webgpu (llama-cpp-python 0.3.36 sdist, sha256 832db0699007f1be): wgsl_mul_mat_vec [SRC0_INNER_TYPE=f16 MUL_ACC_FLOAT SRC1_INNER_TYPE=f16 VEC WG_SIZE=256 OUTPUTS_PER_WG=4 USE_SUBGROUP_REDUCTION NUM_COLS=1] -> mul_mat_vec_f16_f16_sg_reduce_vectorized
enable subgroups;
enable f16;































fn inner_dot(src0_val: vec4<f16>, src1_val: vec4<f16>) -> f32 {
    return dot(vec4<f32>(src0_val), vec4<f32>(src1_val));
}


fn accumulate_vec_dot(thread_id: u32, row_base: u32, src0_batch_offset: u32, src1_idx_base: u32) -> array<array<f32, 4>, 1> {
    var acc: array<array<f32, 4>, 1>;

    let k_vec = params.k / 4u;
    let src1_idx_base_vec = src1_idx_base / 4u;

    // Each thread walks K, loads from the vector, and updates
    // a small block of output rows held in registers.
    for (var k = thread_id; k < k_vec; k += 256) {
        var x_vals: array<vec4<f16>, 1>;
        for (var col = 0u;col < 1;col += 1) {
            x_vals[col] = src1[src1_idx_base_vec + col * (params.stride_11 / 4u) + k];
        }
        for (var row = 0u; row < 4; row++) {
            let output_row = row_base + row;
            if (output_row < params.m) {
                let src0_idx = (src0_batch_offset + output_row * params.stride_01) / 4u + k;
                let w = src0[src0_idx];
                for (var col = 0u;col < 1;col += 1) {
                    acc[col][row] += inner_dot(w, x_vals[col]);
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

@group(0) @binding(0) var<storage, read_write> src0: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read_write> src1: array<vec4<f16>>;

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
