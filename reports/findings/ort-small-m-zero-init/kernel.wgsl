// kernel: ort.dp4a.matmul_small_m
// config: acc=f32 bits=4 block_size=32 dtype=f32 fp32_accumulation=0 has_bias=0 has_zero_points=0 k=0 m=0 mul=f32 n=0 program=DP4AMatMulNBitsSmallMProgram tile=small_m
// onnxruntime-web 1.30.0 on llvmpipe (vendor mesa): MatMulNBits(dtype=f32, bits=4, block_size=32, K=256, N=32, accuracy_level=4, zero_points=0, bias=0) at M=1
enable subgroups;
const workgroup_size_x: u32 = 128;
const workgroup_size_y: u32 = 1;
const workgroup_size_z: u32 = 1;
@group(0) @binding(0) var<storage, read> input_a: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> scales_a: array<f32>;
@group(0) @binding(2) var<storage, read> input_b: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read> scales_b: array<f32>;
@group(0) @binding(4) var<storage, read_write> output: array<f32>;
struct Uniforms {
  batch_count: u32,
  M: u32,
  N: u32,
  K: u32,
  K16: u32,
  K32: u32,
  block_size: u32,
  num_N_tile: u32,
  zero_blocks_per_col: u32,
  weight_idx: u32,
  dispatch_M: u32
};
@group(0) @binding(5) var<uniform> uniforms: Uniforms;

alias output_element_t = f32;

  alias output_type = i32;
  const default_zero_point = 8;
  const bit_mask = 0xFu;
  fn mm_read_zero(row : u32, col : u32, r_dim: u32, c_dim: u32) -> output_type {
    return output_type(default_zero_point);
  }
    alias mul_precision = output_element_t;
    fn DequantizedFrom4BitsTo8Bits(in: vec2<u32>, zero: i32) -> vec4<u32>
    {
        var out = vec4<u32>(0);
        var value_lower = vec4<i32>(unpack4xU8(in[0] & 0x0F0F0F0Fu)) - vec4<i32>(zero);
        var value_upper = vec4<i32>(unpack4xU8((in[0] >> 4) & 0x0F0F0F0Fu)) - vec4<i32>(zero);
        out[0] = pack4xI8(vec4<i32>(value_lower[0], value_upper[0], value_lower[1], value_upper[1]));
        out[1] = pack4xI8(vec4<i32>(value_lower[2], value_upper[2], value_lower[3], value_upper[3]));
        value_lower = vec4<i32>(unpack4xU8(in[1] & 0x0F0F0F0Fu)) - vec4<i32>(zero);
        value_upper = vec4<i32>(unpack4xU8((in[1] >> 4) & 0x0F0F0F0Fu)) - vec4<i32>(zero);
        out[2] = pack4xI8(vec4<i32>(value_lower[0], value_upper[0], value_lower[1], value_upper[1]));
        out[3] = pack4xI8(vec4<i32>(value_lower[2], value_upper[2], value_lower[3], value_upper[3]));
        return out;
    }
    fn SDP8AI(a1:vec4<u32>, b1:vec4<u32>, a2:vec4<u32>, b2:vec4<u32>, scale:output_element_t) -> output_element_t
    {
        var local_sum = dot4I8Packed(a1[0], b1[0]);
        local_sum += dot4I8Packed(a1[1], b1[1]);
        local_sum += dot4I8Packed(a1[2], b1[2]);
        local_sum += dot4I8Packed(a1[3], b1[3]);
        local_sum += dot4I8Packed(a2[0], b2[0]);
        local_sum += dot4I8Packed(a2[1], b2[1]);
        local_sum += dot4I8Packed(a2[2], b2[2]);
        local_sum += dot4I8Packed(a2[3], b2[3]);
        return output_element_t(mul_precision(local_sum) * mul_precision(scale));
    }
const double_tile_size_k_vec = 2 * 32;

var<workgroup> inter_results: array<array<output_element_t, 32>, 4>;

var<workgroup> tile_A : array<vec4<u32>, double_tile_size_k_vec>;

const scale_a_size_in_tile_a = double_tile_size_k_vec / 8;
var<workgroup> scale_A : array<output_element_t, scale_a_size_in_tile_a>;

fn loadSHMA(batch: u32, a_global: u32, kidx_v: u32, col: u32)
{
    let k_offset = kidx_v + col;
    if (k_offset >= uniforms.K16) {
    return;
    }

    tile_A[col] = input_a[batch*uniforms.M*uniforms.K16+a_global*uniforms.K16+k_offset];
    if (col < scale_a_size_in_tile_a)
    {

    scale_A[col] = scales_a[batch*uniforms.M*(uniforms.K/128) + a_global*(uniforms.K/128) + kidx_v/8 + col];
    }
}


@compute @workgroup_size(workgroup_size_x, workgroup_size_y, workgroup_size_z)
fn main(@builtin(global_invocation_id) global_id : vec3<u32>,
        @builtin(workgroup_id) workgroup_id : vec3<u32>,
        @builtin(local_invocation_index) local_idx : u32,
        @builtin(local_invocation_id) local_id : vec3<u32>,
        @builtin(subgroup_invocation_id) sg_id : u32,
        @builtin(subgroup_size) sg_size : u32,
        @builtin(num_workgroups) num_workgroups : vec3<u32>) {
  let workgroup_idx = workgroup_id.z * num_workgroups[0] * num_workgroups[1] + workgroup_id.y * num_workgroups[0] + workgroup_id.x;
  let global_idx = workgroup_idx * (workgroup_size_x * workgroup_size_y * workgroup_size_z) + local_idx;

    let batch = workgroup_idx / (uniforms.dispatch_M * uniforms.num_N_tile);
    if (batch >= uniforms.batch_count) {
        return;
    }
    let a_global = u32((workgroup_idx / uniforms.num_N_tile) % uniforms.dispatch_M);

    let a_row = a_global;
    let b_global_base = (workgroup_idx % uniforms.num_N_tile) * 4;

    let local_col = local_idx % 32;
    let local_row = local_idx / 32;

    for (var kidx_v:u32 = 0; kidx_v < uniforms.K32; kidx_v += 32)
    {

        if (local_idx < double_tile_size_k_vec)
        {
        loadSHMA(batch, a_row, kidx_v * 2, local_idx);
        }
        workgroupBarrier();
        var own_a: vec4<u32> = tile_A[local_col * 2];
        var own_a1: vec4<u32> = tile_A[local_col * 2 + 1];
        var own_scale_a = scale_A[local_col / 4];
        let k_offset = kidx_v + local_col;

        let block_idx = k_offset * 32 / uniforms.block_size;

        for (var row_offset = 0u; row_offset < 4; row_offset += 4) {
            let b_global = b_global_base + row_offset + local_row;
            if (b_global < uniforms.N && k_offset < uniforms.K32)
            {
                let b_offset = b_global * uniforms.K32 + k_offset;
                let own_scale_b = scales_b[b_global * uniforms.K / uniforms.block_size + block_idx];
                let zero = mm_read_zero(b_global, block_idx, uniforms.N, uniforms.zero_blocks_per_col);
                let b_value = input_b[b_offset];
                let own_b = DequantizedFrom4BitsTo8Bits(b_value.xy, zero);
                let own_b1 = DequantizedFrom4BitsTo8Bits(b_value.zw, zero);
                inter_results[row_offset + local_row][local_col] += SDP8AI(own_a, own_b, own_a1, own_b1, own_scale_a * own_scale_b);
            }
        }
        workgroupBarrier();
    }

    if (local_idx < 4) {

      var output_value = output_element_t(0);
      for (var b = 0u; b < 32; b++) {
        output_value += inter_results[local_idx][b];
      }
      let b_global =  b_global_base + local_idx;
      let output_idx = batch * uniforms.dispatch_M * uniforms.N + a_global * uniforms.N + b_global;
      if (b_global < uniforms.N) {
        output[output_idx]=output_value;;
      }
    }

}
