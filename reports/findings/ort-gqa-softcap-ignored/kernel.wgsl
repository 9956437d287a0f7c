// kernel: ort.attention.decode_qkv
// config: dtype=f32 head_size=64 kv_num_heads=2 m_tile=1 max_past=160 num_heads=4 softcap=2.0
// onnxruntime-web 1.30.0 on llvmpipe: GroupQueryAttention(dtype=f32, num_heads=4, kv_num_heads=2, head_size=64, packed_qkv=False, do_rotary=False, rotary_interleaved=False, rotary_dim=0, local_window_size=-1, softcap=2.0, scale=0.0, has_head_sink=False, smooth_softmax=False), batch=1 new=1 past=[0] capacity=1 q_spread=0.25 seed=0 path=split | query[1, 1, 256] key[1, 1, 128] value[1, 1, 128] past_key[1, 2, 1, 64] past_value[1, 2, 1, 64] seqlens_k[1] total_sequence_length[]
enable subgroups;
const workgroup_size_x: u32 = 128;
const workgroup_size_y: u32 = 1;
const workgroup_size_z: u32 = 1;
@group(0) @binding(0) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> present_key: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> present_value: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> seqlens_k: array<i32>;
@group(0) @binding(4) var<storage, read_write> out_split_vx: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> metadata: array<vec2<f32>>;
struct Uniforms {
  head_size_vec: u32,
  total_sequence_length: u32,
  alpha: f32,
  present_sequence_length: u32,
  n_reps: u32,
  num_present_sequence_length_tile: u32,
  num_heads: u32,
  batch_size: u32,
  attn_bias_dim0: u32,
  attn_bias_dim1: u32,
  attn_bias_dim3: u32,
  new_sequence_length: u32
};
@group(0) @binding(6) var<uniform> uniforms: Uniforms;

alias q_value_t = vec4<f32>;
alias q_element_t = f32;
alias present_key_value_t = vec4<f32>;
alias present_key_element_t = f32;
alias present_value_value_t = vec4<f32>;
alias present_value_element_t = f32;
alias metadata_value_t = vec2<f32>;

var<workgroup> tile_q: array<array<q_value_t, 32>, 1>;
var<workgroup> inner_qk_values: array<array<array<f32, 32>, 64>, 1>;
var<workgroup> tile_qk: array<array<f32, 64>, 1>;
var<workgroup> tile_output: array<array<q_value_t, 16>, 1>;
var<workgroup> qkv_values: array<array<array<q_value_t, 32>, 4>, 1>;
var<workgroup> tile_max: array<f32, 1>;
var<workgroup> tile_sum: array<f32, 1>;

  fn loadAttentionBias(batch_idx: u32, head_idx: u32, q_idx: u32, k_idx: u32) -> q_element_t
  {
    return q_element_t(0);
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

  let local_row = u32(local_idx / 32);
  let local_col = local_idx % 32;

  let global_total_sequence_length = uniforms.total_sequence_length;
  let num_total_seq_length_tile = (global_total_sequence_length + 64 - 1) / 64;
  let num_q_tiles = (uniforms.new_sequence_length + 1 - 1) / 1;

  let total_seq_offset = (workgroup_idx % num_total_seq_length_tile) * 64;
  let q_tile_idx = (workgroup_idx / num_total_seq_length_tile) % num_q_tiles;
  let q_base = q_tile_idx * 1;
  let batch_head_idx = u32(workgroup_idx / (num_total_seq_length_tile * num_q_tiles));
  let head_idx = batch_head_idx % uniforms.num_heads;
  let batch_idx = batch_head_idx / uniforms.num_heads;
  if (batch_idx >= uniforms.batch_size) {
    return;
  }

  let total_sequence_length = u32(seqlens_k[batch_idx]) + 1u;
  let present_key_offset = batch_head_idx / uniforms.n_reps * uniforms.present_sequence_length * uniforms.head_size_vec;
  let present_value_offset = u32(batch_head_idx / uniforms.n_reps) * 16 * uniforms.present_sequence_length;

  if (total_seq_offset >= total_sequence_length) {
    if (local_idx == 0u) {
      for (var m = 0u; m < 1 && q_base + m < uniforms.new_sequence_length; m++) {
        let q_idx_local = q_base + m;
        let meta_offset = (batch_head_idx * uniforms.new_sequence_length + q_idx_local) * uniforms.num_present_sequence_length_tile + workgroup_idx % num_total_seq_length_tile;
        metadata[meta_offset]=metadata_value_t(-3.4028234663852886e+38f, 0.0f);;
      }
    }
    return;
  }

  for (var k: u32 = 0u; k < uniforms.head_size_vec; k += 32) {
    for (var m = 0u; m < 1 && q_base + m < uniforms.new_sequence_length; m++) {
      if (local_idx < 32 && k + local_idx < uniforms.head_size_vec) {
        let q_idx = q_base + m;
        let q_offset = batch_idx * uniforms.new_sequence_length * uniforms.num_heads * uniforms.head_size_vec +
                       q_idx * uniforms.num_heads * uniforms.head_size_vec +
                       head_idx * uniforms.head_size_vec;
        tile_q[m][local_idx] = q[q_offset + k + local_idx];
      }
    }
    workgroupBarrier();
    if (k + local_col < uniforms.head_size_vec) {
      for (var row_offset = 0u; row_offset < 64; row_offset += 4) {
        if (total_seq_offset + row_offset + local_row < total_sequence_length) {
          let k_data = present_key[present_key_offset + (total_seq_offset + row_offset + local_row) * uniforms.head_size_vec + k + local_col];
          for (var m = 0u; m < 1 && q_base + m < uniforms.new_sequence_length; m++) {
            let q_data = tile_q[m][local_col] * q_element_t(uniforms.alpha);
            inner_qk_values[m][row_offset + local_row][local_col] +=
                dot(vec4<f32>(k_data), vec4<f32>(q_data));
          }
        }
      }
    }
    workgroupBarrier();
  }
  let past_sequence_length = select(total_sequence_length - uniforms.new_sequence_length,
                                    0u,
                                    total_sequence_length <= uniforms.new_sequence_length);
  for (var m = 0u; m < 1 && q_base + m < uniforms.new_sequence_length; m++) {
    let q_idx = q_base + m;
    if (local_idx < 64 && total_seq_offset + local_idx < total_sequence_length) {
      var sum = f32(0);
      for (var i = 0u; i < 32; i++) {
        sum += inner_qk_values[m][local_idx][i];
      }

      sum += f32(loadAttentionBias(batch_idx, head_idx, q_idx, total_seq_offset + local_idx));
      if (total_seq_offset + local_idx > past_sequence_length + q_idx) {
        sum = f32(-3.4028234663852886e+38f);
      }
      tile_qk[m][local_idx] = sum;
    }
    workgroupBarrier();

    if (local_idx == 0u) {
      let valid_key_end = min(total_sequence_length, past_sequence_length + q_idx + 1u);
      var l_max = f32(-3.4028234663852886e+38f);
      var l_sum = f32(0);
      for (var i = 0u; i < 64 && (total_seq_offset + i) < valid_key_end; i++) {
        l_max = max(l_max, f32(tile_qk[m][i]));
      }
      for (var i = 0u; i < 64 && (total_seq_offset + i) < valid_key_end; i++) {
        l_sum += exp(f32(tile_qk[m][i]) - l_max);
      }
      tile_max[m] = l_max;
      tile_sum[m] = l_sum;
      let meta_offset = (batch_head_idx * uniforms.new_sequence_length + q_idx) * uniforms.num_present_sequence_length_tile + workgroup_idx % num_total_seq_length_tile;
      metadata[meta_offset]=metadata_value_t(l_max, l_sum);;
    }
  }
  workgroupBarrier();

  for (var m = 0u; m < 1 && q_base + m < uniforms.new_sequence_length; m++) {
    if (local_idx < 64 && total_seq_offset + local_idx < total_sequence_length) {
      let valid_key_end = min(total_sequence_length, past_sequence_length + q_base + m + 1u);
      if (total_seq_offset + local_idx < valid_key_end && tile_sum[m] > 0.0f) {
        tile_qk[m][local_idx] = exp(f32(tile_qk[m][local_idx]) - tile_max[m]) / tile_sum[m];
      } else {
        tile_qk[m][local_idx] = 0;
      }
    }
  }
  workgroupBarrier();

  for (var k: u32 = 0u; k < 16; k += 32) {
    for (var m = 0u; m < 1 && q_base + m < uniforms.new_sequence_length; m++) {
      qkv_values[m][local_row][local_col] = q_value_t(0);
    }
    workgroupBarrier();

    if (k + local_col < 16) {
      for (var row_offset = 0u; row_offset < 64; row_offset += 4) {
        if (total_seq_offset + row_offset + local_row < total_sequence_length) {
          let v_data = present_value[present_value_offset + (total_seq_offset + row_offset + local_row) * 16 + k + local_col];
          for (var m = 0u; m < 1 && q_base + m < uniforms.new_sequence_length; m++) {
            qkv_values[m][local_row][local_col] +=
                v_data * q_element_t(tile_qk[m][row_offset + local_row]);
          }
        }
      }
    }
    workgroupBarrier();

    if (local_idx < 32 && k + local_idx < 16) {
      for (var m = 0u; m < 1 && q_base + m < uniforms.new_sequence_length; m++) {
        for (var i = 0u; i < 4; i++) {
          tile_output[m][k + local_idx] += qkv_values[m][i][local_idx];
        }
      }
    }
    workgroupBarrier();
  }
  let tile_idx = workgroup_idx % num_total_seq_length_tile;
  for (var m = 0u; m < 1 && q_base + m < uniforms.new_sequence_length; m++) {
    let q_idx = q_base + m;
    let out_base = (batch_head_idx * uniforms.new_sequence_length + q_idx) * uniforms.num_present_sequence_length_tile * 16;
    for (var i = local_idx; i < 16; i += workgroup_size_x) {
      out_split_vx[out_base + tile_idx * 16 + i]=tile_output[m][i];;
    }
  }

}
