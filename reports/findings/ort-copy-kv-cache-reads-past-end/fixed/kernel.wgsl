// kernel: ort.attention.copy_kv_cache
// config: dtype=f32 head_size=64 kv_num_heads=2 max_past=160 num_heads=4 phase=decode
// onnxruntime-web 1.30.0 on llvmpipe: GroupQueryAttention(dtype=f32, num_heads=4, kv_num_heads=2, head_size=64, packed_qkv=False, do_rotary=False, rotary_interleaved=False, rotary_dim=0, local_window_size=-1, softcap=0.0, scale=0.0, has_head_sink=False, smooth_softmax=False), batch=1 new=1 past=[0] capacity=1 q_spread=0.25 seed=0 path=split | query[1, 1, 256] key[1, 1, 128] value[1, 1, 128] past_key[1, 2, 1, 64] past_value[1, 2, 1, 64] seqlens_k[1] total_sequence_length[] (past_key/past_value not bound to present_key/present_value)
enable subgroups;
const workgroup_size_x: u32 = 64;
const workgroup_size_y: u32 = 1;
const workgroup_size_z: u32 = 1;
@group(0) @binding(0) var<storage, read> key: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> value: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> seqlen_k: array<i32>;
@group(0) @binding(3) var<storage, read> past_key: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> past_value: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> present_key: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> present_value: array<vec4<f32>>;
struct Uniforms {
  key_shape: vec4<u32>,
  key_stride: vec3<u32>,
  past_key_shape: vec4<u32>,
  past_key_stride: vec3<u32>,
  present_key_shape: vec4<u32>,
  present_key_stride: vec3<u32>,
  copy_kv_shape_shape: vec4<u32>,
  copy_kv_shape_stride: vec3<u32>,
  copy_size: u32,
  total_sequence_length: u32,
  kv_sequence_length: u32,
  tile_size: u32,
  num_heads: u32,
  batch_size: u32,
  num_q_tiles: u32
};
@group(0) @binding(7) var<uniform> uniforms: Uniforms;

alias key_value_t = vec4<f32>;
alias key_indices_t = vec4<u32>;
alias key_element_t = f32;
fn i2o_key(indices : key_indices_t)->u32 {
  return indices[0] * uniforms.key_stride[0] + indices[1] * uniforms.key_stride[1] + indices[2] * uniforms.key_stride[2] + indices[3];
}
alias past_key_value_t = vec4<f32>;
alias past_key_indices_t = vec4<u32>;
alias past_key_element_t = f32;
fn i2o_past_key(indices : past_key_indices_t)->u32 {
  return indices[0] * uniforms.past_key_stride[0] + indices[1] * uniforms.past_key_stride[1] + indices[2] * uniforms.past_key_stride[2] + indices[3];
}
alias present_key_indices_t = vec4<u32>;
fn i2o_present_key(indices : present_key_indices_t)->u32 {
  return indices[0] * uniforms.present_key_stride[0] + indices[1] * uniforms.present_key_stride[1] + indices[2] * uniforms.present_key_stride[2] + indices[3];
}
fn o2i_copy_kv_shape(offset : u32)->vec4<u32> {
  var indices: vec4<u32>;
  var current = offset;
  indices[0] = current / uniforms.copy_kv_shape_stride[0];
  current = current % uniforms.copy_kv_shape_stride[0];
  indices[1] = current / uniforms.copy_kv_shape_stride[1];
  current = current % uniforms.copy_kv_shape_stride[1];
  indices[2] = current / uniforms.copy_kv_shape_stride[2];
  current = current % uniforms.copy_kv_shape_stride[2];
  indices[3] = current;
  return indices;
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
  if (global_idx >= uniforms.copy_size) { return; }
  let output_indices = o2i_copy_kv_shape(global_idx);
  let head_size_id = output_indices[3];
  let sequence_id = output_indices[2];
  let num_head_id = output_indices[1];
  let batch = output_indices[0];
  let total_seq_length = u32(seqlen_k[batch]) + 1u;
  let past_sequence_length = select(total_seq_length - uniforms.kv_sequence_length, 0u, total_seq_length <= uniforms.kv_sequence_length);
  let present_offset = i2o_present_key(present_key_indices_t(batch, num_head_id, sequence_id, head_size_id));
if (sequence_id < past_sequence_length) {
  let pastOffset = i2o_past_key(past_key_indices_t(batch, num_head_id, sequence_id, head_size_id));
  present_key[present_offset]=past_key[pastOffset];;
  present_value[present_offset]=past_value[pastOffset];;
} else if (sequence_id < total_seq_length) {
  let offset = i2o_key(key_indices_t(batch, sequence_id - past_sequence_length, num_head_id, head_size_id));
  present_key[present_offset]=key[offset];;
  present_value[present_offset]=value[offset];;
} else {
  present_key[present_offset] = key_value_t();
  present_value[present_offset] = key_value_t();
}
}
