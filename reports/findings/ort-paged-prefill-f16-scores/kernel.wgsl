// kernel: ort.attention.paged_prefill
// config: block_size=32 dtype=f16 head_size=64 kv_num_heads=1 max_past=160 num_heads=4
// onnxruntime-web 1.30.0 on llvmpipe: PagedAttention(dtype=f16, num_heads=4, kv_num_heads=1, head_size=64, packed_qkv=False, do_rotary=False, rotary_interleaved=False, rotary_dim=0, local_window_size=-1, softcap=0.0, scale=0.0, has_head_sink=False, block_size=32), batch=1 new=[32] past=[0] q_spread=0.25 seed=0 path=paged_prefill | query[32, 256] key[32, 64] value[32, 64] key_cache[2, 32, 1, 64] value_cache[2, 32, 1, 64] cumulative_sequence_length[2] past_seqlens[1] block_table[1, 1]
enable f16;
enable subgroups;
const workgroup_size_x: u32 = 64;
const workgroup_size_y: u32 = 1;
const workgroup_size_z: u32 = 1;
@group(0) @binding(0) var<storage, read> q: array<vec4<f16>>;
@group(0) @binding(1) var<storage, read> key_cache: array<vec4<f16>>;
@group(0) @binding(2) var<storage, read> value_cache: array<vec4<f16>>;
@group(0) @binding(3) var<storage, read> block_table: array<i32>;
@group(0) @binding(4) var<storage, read> seqlens_k: array<i32>;
@group(0) @binding(5) var<storage, read> seqlens_q: array<i32>;
@group(0) @binding(6) var<storage, read_write> output: array<vec4<f16>>;
struct Uniforms {
  block_table_shape: vec2<u32>,
  block_table_stride: u32,
  new_sequence_length: u32,
  total_sequence_length: u32,
  batch_size: u32,
  n_reps: u32,
  alpha: f32,
  num_seq_tile: u32,
  block_size: u32,
  kv_num_heads: u32
};
@group(0) @binding(7) var<uniform> uniforms: Uniforms;

alias q_value_t = vec4<f16>;
alias q_element_t = f16;
alias key_cache_value_t = vec4<f16>;
alias value_cache_value_t = vec4<f16>;
fn i2o_block_table(indices : vec2<u32>)->u32 {
  return indices[0] * uniforms.block_table_stride + indices[1];
}
fn get_block_table_by_indices(indices_fnarg: vec2<u32>)->i32 {
  return block_table[i2o_block_table(indices_fnarg)];
}
alias output_value_t = vec4<f16>;

const head_size : u32 = 64;
const num_heads : u32 = 4;

const min_value = q_element_t(-65504.0);
const max_k_step : u32 = 32;
const vec_factor : u32 = 4u;
const head_size_vec : u32 = head_size / vec_factor;

var<workgroup> k_tile : array<array<q_value_t, head_size_vec>, max_k_step>;
var<workgroup> v_tile : array<array<q_value_t, head_size_vec>, max_k_step>;

var<private> q_tile : array<q_value_t, head_size_vec>;
var<private> o_tile : array<q_value_t, head_size_vec>;
var<private> qk_scores : array<q_element_t, max_k_step>;

fn loadq(batch_idx : u32, q_idx_global : u32, head_idx : u32, alpha : q_element_t) {
  let offset = batch_idx * uniforms.new_sequence_length * head_size_vec * num_heads +
               q_idx_global * head_size_vec * num_heads +
               head_idx * head_size_vec;
  for (var idx : u32 = 0; idx < head_size_vec; idx++) {
    q_tile[idx] = q[idx + offset] * alpha;
  }
}

fn loadk(k_start : u32, batch_idx : u32, head_idx : u32, local_idx : u32, total_seq : u32) {

  let kv_head_idx = head_idx / uniforms.n_reps;
  let block_slot_in_batch = k_start / uniforms.block_size;
  let base_slot = k_start % uniforms.block_size;
  let block_id = u32(get_block_table_by_indices(vec2<u32>(batch_idx, block_slot_in_batch)));
  let block_row_stride = uniforms.kv_num_heads * head_size_vec;
  let base_offset = (block_id * uniforms.block_size + base_slot) * block_row_stride +
                    kv_head_idx * head_size_vec;
  for (var idx : u32 = local_idx; idx < head_size_vec * max_k_step; idx += workgroup_size_x) {
    let slot = idx / head_size_vec;
    let vec_idx = idx % head_size_vec;
    let offset = base_offset + slot * block_row_stride + vec_idx;
    k_tile[slot][vec_idx] = select(q_value_t(0), key_cache[offset], k_start + slot < total_seq);
  }
}

fn loadv(v_start : u32, batch_idx : u32, head_idx : u32, local_idx : u32, total_seq : u32) {
  let kv_head_idx = head_idx / uniforms.n_reps;
  let block_slot_in_batch = v_start / uniforms.block_size;
  let base_slot = v_start % uniforms.block_size;
  let block_id = u32(get_block_table_by_indices(vec2<u32>(batch_idx, block_slot_in_batch)));
  let block_row_stride = uniforms.kv_num_heads * head_size_vec;
  let base_offset = (block_id * uniforms.block_size + base_slot) * block_row_stride +
                    kv_head_idx * head_size_vec;
  for (var idx : u32 = local_idx; idx < head_size_vec * max_k_step; idx += workgroup_size_x) {
    let slot = idx / head_size_vec;
    let vec_idx = idx % head_size_vec;
    let offset = base_offset + slot * block_row_stride + vec_idx;
    v_tile[slot][vec_idx] = select(q_value_t(0), value_cache[offset], v_start + slot < total_seq);
  }
}

fn writeo(batch_idx : u32, o_idx_global : u32, head_idx : u32) {
  let offset = batch_idx * uniforms.new_sequence_length * num_heads * head_size_vec +
               o_idx_global * num_heads * head_size_vec + head_idx * head_size_vec;
  for (var idx : u32 = 0; idx < head_size_vec; idx++) {
    output[offset + idx]=o_tile[idx];;
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

  let batch_head_idx = u32(workgroup_idx / uniforms.num_seq_tile);
  let head_idx = batch_head_idx % num_heads;
  let batch_idx = batch_head_idx / num_heads;

  if (batch_idx >= uniforms.batch_size) {
    return;
  }

  let q_idx_global = (workgroup_idx % uniforms.num_seq_tile) * workgroup_size_x + local_idx;
  let valid_q = q_idx_global < uniforms.new_sequence_length;
  if (valid_q) {
    loadq(batch_idx, q_idx_global, head_idx, q_element_t(uniforms.alpha));
  }

  var previous_max : q_element_t = min_value;
  var previous_denom : q_element_t = 0;

  let total_sequence_length = u32(seqlens_k[batch_idx]) + 1u;

  let q_len_b = u32(seqlens_q[batch_idx]);
  let past_sequence_length = total_sequence_length - q_len_b;
  let max_causal_len_for_workgroup = past_sequence_length +
                                     (workgroup_idx % uniforms.num_seq_tile + 1) * workgroup_size_x;
  let loop_bound = min(total_sequence_length, max_causal_len_for_workgroup);
  let seq_causal_length = past_sequence_length + q_idx_global + 1;
  for (var k_start = 0u; k_start < loop_bound; k_start += max_k_step) {
    workgroupBarrier();
    loadk(k_start, batch_idx, head_idx, local_idx, total_sequence_length);
    loadv(k_start, batch_idx, head_idx, local_idx, total_sequence_length);
    workgroupBarrier();

    for (var k = 0u; k < max_k_step; k++) {
      var score = q_element_t(0);
      for (var i = 0u; i < head_size_vec; i++) {
        score += dot(q_tile[i], k_tile[k][i]);
      }
      qk_scores[k] = select(min_value, score, k_start + k < seq_causal_length);
    }

    var local_max = min_value;
    for (var k = 0u; k < max_k_step; k++) {
      local_max = max(local_max, qk_scores[k]);
    }
    let new_max = max(previous_max, local_max);

    var sum = q_element_t(0);
    for (var k = 0u; k < max_k_step; k++) {
      let exp_val = q_element_t(exp(f32(qk_scores[k]) - f32(new_max)));
      qk_scores[k] = exp_val;
      sum += exp_val;
    }

    let dleft = previous_denom * q_element_t(exp(f32(previous_max) - f32(new_max)));
    var d = dleft + sum;
    d = select(d, q_element_t(0.0000001), d == 0);

    for (var k = 0u; k < max_k_step; k++) {
      qk_scores[k] = qk_scores[k] / d;
    }
    previous_max = new_max;
    previous_denom = d;
    let o_ratio = dleft / d;

    for (var i : u32 = 0; i < head_size_vec; i++) {
      var acc = q_value_t(0);
      for (var k = 0u; k < max_k_step; k++) {
        acc += v_tile[k][i] * qk_scores[k];
      }
      o_tile[i] = o_tile[i] * o_ratio + acc;
    }
  }

  if (valid_q) {
    writeo(batch_idx, q_idx_global, head_idx);
  }

}
