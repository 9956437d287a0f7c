// apache-tvm 0.27.0.post1, target webgpu: _attention_decode(num_kv_heads=8, num_qo_heads=32, head_dim=128, qkv_dtype='float16', sliding_window=False, rope_scaling={'rope_type': 'llama3', 'factor': 8.0, 'low_freq_factor': 1.0, 'high_freq_factor': 4.0, 'original_max_position_embeddings': 8192}, page_size=16)
// Function: batch_decode_paged_kv_kernel
//----------------------------------------
// Function: batch_decode_paged_kv_kernel
//----------------------------------------
enable f16;

@group(0) @binding(0) var<storage, read> Q_ptr : array<f16>;
@group(0) @binding(1) var<storage, read> k_rope_pos_offset_ptr : array<i32>;
@group(0) @binding(2) var<storage, read> length_info_ptr : array<i32>;
@group(0) @binding(3) var<storage, read_write> lse_ptr : array<f32>;
@group(0) @binding(4) var<storage, read_write> output_ptr : array<f16>;
@group(0) @binding(5) var<storage, read> page_table_indptr_ptr : array<i32>;
@group(0) @binding(6) var<storage, read> page_table_values_ptr : array<i32>;
@group(0) @binding(7) var<storage, read> pages_ptr : array<f16>;
@group(0) @binding(8) var<storage, read> q_rope_position_ptr : array<i32>;

struct PODArgs {
  B: i32,
  k_rope_pos_offset_elem_offset: i32,
  length_info_elem_offset: i32,
  page_indptr_elem_offset: i32,
  page_values_elem_offset: i32,
  pages_elem_offset: i32,
  q_rope_position_elem_offset: i32,
  rope_scale: f32,
  rope_theta: f32,
  rotary_mode: i32,
  sm_scale: f32,
  packGridDimX: u32
}
@group(0) @binding(9) var<uniform> podArgs : PODArgs;

var<workgroup> K_smem : array<vec4<f16>, 256>;
var<workgroup> V_smem : array<vec4<f16>, 256>;
var<workgroup> red_buf0 : array<f32, 256>;
var<workgroup> O_allreduce : array<vec4<f32>, 256>;
var<workgroup> md_allreduce : array<f32, 16>;
@compute @workgroup_size(32, 4, 2)
fn batch_decode_paged_kv_kernel(
  @builtin(workgroup_id) blockIdx : vec3<u32>,
  @builtin(num_workgroups) gridDim : vec3<u32>,
  @builtin(local_invocation_id) threadIdx : vec3<u32>
) {
  if (blockIdx.z * gridDim.x + blockIdx.x > podArgs.packGridDimX) { return; }
  let v__1 : i32 = i32(blockIdx.z * gridDim.x + blockIdx.x);
  var kv_chunk_len : array<i32, 1>;
  var st_m : array<f32, 1>;
  var st_d : array<f32, 1>;
  var O_local : array<vec4<f32>, 1>;
  var Q_local : array<vec4<f16>, 1>;
  var m_prev : array<f32, 1>;
  var S_local : array<f32, 4>;
  var QK_local : array<vec4<f32>, 1>;
  var S_reduce_local : array<f32, 1>;
  var V_local : array<vec4<f16>, 1>;
  var d_prev : array<f32, 1>;
  var other_m : array<f32, 1>;
  var other_d : array<f32, 1>;
  var other_o : array<vec4<f32>, 1>;
  var exp_mprev : array<f32, 1>;
  let by : i32 = i32(blockIdx.y);
  let bz : i32 = 0i;
  let batch_idx : i32 = v__1;
  let cse_v2 : i32 = (v__1 + podArgs.page_indptr_elem_offset);
  let cur_page_indptr_begin : i32 = page_table_indptr_ptr[(v__1 + podArgs.page_indptr_elem_offset)];
  let cur_page_indptr_end : i32 = page_table_indptr_ptr[((v__1 + podArgs.page_indptr_elem_offset) + 1i)];
  var condval : i32;
  if ((cur_page_indptr_begin != cur_page_indptr_end)) {
    condval = ((((cur_page_indptr_end * 16i) + length_info_ptr[(v__1 + podArgs.length_info_elem_offset)]) - (cur_page_indptr_begin * 16i)) - 16i);
} else {
    condval = 0i;
}
  kv_chunk_len[0i] = condval;
  st_m[0i] = -5.000000e+04f;
  st_d[0i] = 1.000000e+00f;
  O_local[0i] = vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f);
  let cse_v7 : i32 = ((i32(threadIdx.x) & 15i) * 8i);
  let cse_v8 : vec4<f32> = (vec4<f32>(vec4<i32>((((i32(threadIdx.x) & 15i) * 8i))+(2i*0), (((i32(threadIdx.x) & 15i) * 8i))+(2i*1), (((i32(threadIdx.x) & 15i) * 8i))+(2i*2), (((i32(threadIdx.x) & 15i) * 8i))+(2i*3))) / vec4<f32>(1.280000e+02f, 1.280000e+02f, 1.280000e+02f, 1.280000e+02f));
  let cse_v14 : i32 = ((((v__1 * 4096i) + (i32(blockIdx.y) * 512i)) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
  var condval_1 : vec4<f16>;
  if ((podArgs.rotary_mode == 1i)) {
    let orig_freq : vec4<f32> = (vec4<f32>(1.000000e+00f, 1.000000e+00f, 1.000000e+00f, 1.000000e+00f) / pow(vec4<f32>(podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta), (vec4<f32>(vec4<i32>((((i32(threadIdx.x) & 15i) * 8i))+(2i*0), (((i32(threadIdx.x) & 15i) * 8i))+(2i*1), (((i32(threadIdx.x) & 15i) * 8i))+(2i*2), (((i32(threadIdx.x) & 15i) * 8i))+(2i*3))) / vec4<f32>(1.280000e+02f, 1.280000e+02f, 1.280000e+02f, 1.280000e+02f))));
    let smoothed_freq : vec4<f32> = (vec4<f32>((f32(q_rope_position_ptr[(v__1 + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[(v__1 + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[(v__1 + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[(v__1 + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale)) * fma(max(vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f), min(vec4<f32>(1.000000e+00f, 1.000000e+00f, 1.000000e+00f, 1.000000e+00f), ((vec4<f32>(4.345991e+02f, 4.345991e+02f, 4.345991e+02f, 4.345991e+02f) * orig_freq) - vec4<f32>(3.333333e-01f, 3.333333e-01f, 3.333333e-01f, 3.333333e-01f)))), orig_freq, (((vec4<f32>(1.000000e+00f, 1.000000e+00f, 1.000000e+00f, 1.000000e+00f) - max(vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f), min(vec4<f32>(1.000000e+00f, 1.000000e+00f, 1.000000e+00f, 1.000000e+00f), ((vec4<f32>(4.345991e+02f, 4.345991e+02f, 4.345991e+02f, 4.345991e+02f) * orig_freq) - vec4<f32>(3.333333e-01f, 3.333333e-01f, 3.333333e-01f, 3.333333e-01f))))) * orig_freq) * vec4<f32>(1.250000e-01f, 1.250000e-01f, 1.250000e-01f, 1.250000e-01f))));
    var condval_2 : vec4<f16>;
    if ((i32(threadIdx.x) < 16i)) {
      let v__2 : i32 = (((((v__1 * 4096i) + (i32(blockIdx.y) * 512i)) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i)) + 64i);
      condval_2 = (vec4<f16>(Q_ptr[v__2 + 0], Q_ptr[v__2 + 1], Q_ptr[v__2 + 2], Q_ptr[v__2 + 3]) * vec4<f16>(-1.000000e+00h, -1.000000e+00h, -1.000000e+00h, -1.000000e+00h));
} else {
      let v__3 : i32 = (((((v__1 * 4096i) + (i32(blockIdx.y) * 512i)) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i)) - 64i);
      condval_2 = vec4<f16>(Q_ptr[v__3 + 0], Q_ptr[v__3 + 1], Q_ptr[v__3 + 2], Q_ptr[v__3 + 3]);
}
    let v__4 : i32 = ((((v__1 * 4096i) + (i32(blockIdx.y) * 512i)) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
    condval_1 = vec4<f16>(fma(sin(smoothed_freq), vec4<f32>(condval_2), (cos(smoothed_freq) * vec4<f32>(vec4<f16>(Q_ptr[v__4 + 0], Q_ptr[v__4 + 1], Q_ptr[v__4 + 2], Q_ptr[v__4 + 3])))));
} else {
    let v__5 : i32 = ((((v__1 * 4096i) + (i32(blockIdx.y) * 512i)) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
    condval_1 = vec4<f16>(Q_ptr[v__5 + 0], Q_ptr[v__5 + 1], Q_ptr[v__5 + 2], Q_ptr[v__5 + 3]);
}
  Q_local[0i] = condval_1;
  let cse_v4 : i32 = (i32(threadIdx.z) * 128i);
  let cse_v5 : i32 = (i32(threadIdx.y) * 32i);
  let cse_v13 : i32 = (((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x));
  for (var iterator : i32 = 0i; iterator < ((kv_chunk_len[0i] + 7i)>>3u); iterator++) {
    let cse_v3 : i32 = (i32(threadIdx.z) * 4i);
    let tile_start_s : i32 = ((i32(threadIdx.z) * 4i) + i32(threadIdx.y));
    let cse_v9 : i32 = ((iterator * 8i) + (i32(threadIdx.z) * 4i));
    let cse_v12 : i32 = (((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y));
    let tile_start_g : i32 = (((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y));
    let row_g : i32 = (((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y));
    workgroupBarrier();
    if ((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y)) < kv_chunk_len[0i]) {
      let seq_offset : i32 = (((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y));
      let page_no : i32 = page_table_values_ptr[(((iterator>>1u) + cur_page_indptr_begin) + podArgs.page_values_elem_offset)];
      let page_offset : i32 = ((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y)) & 15i);
      let cse_v15 : i32 = (((((page_no * 32768i) + (i32(blockIdx.y) * 2048i)) + (((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y)) & 15i) * 128i)) + (i32(threadIdx.x) * 4i)) + podArgs.pages_elem_offset);
      var condval_3 : vec4<f16>;
      if ((podArgs.rotary_mode == 1i)) {
        let orig_freq_1 : vec4<f32> = (vec4<f32>(1.000000e+00f, 1.000000e+00f, 1.000000e+00f, 1.000000e+00f) / pow(vec4<f32>(podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta), (vec4<f32>(vec4<i32>((((i32(threadIdx.x) & 15i) * 8i))+(2i*0), (((i32(threadIdx.x) & 15i) * 8i))+(2i*1), (((i32(threadIdx.x) & 15i) * 8i))+(2i*2), (((i32(threadIdx.x) & 15i) * 8i))+(2i*3))) / vec4<f32>(1.280000e+02f, 1.280000e+02f, 1.280000e+02f, 1.280000e+02f))));
        let smoothed_freq_1 : vec4<f32> = (vec4<f32>((f32(((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + k_rope_pos_offset_ptr[(v__1 + podArgs.k_rope_pos_offset_elem_offset)]) + i32(threadIdx.y))) * podArgs.rope_scale), (f32(((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + k_rope_pos_offset_ptr[(v__1 + podArgs.k_rope_pos_offset_elem_offset)]) + i32(threadIdx.y))) * podArgs.rope_scale), (f32(((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + k_rope_pos_offset_ptr[(v__1 + podArgs.k_rope_pos_offset_elem_offset)]) + i32(threadIdx.y))) * podArgs.rope_scale), (f32(((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + k_rope_pos_offset_ptr[(v__1 + podArgs.k_rope_pos_offset_elem_offset)]) + i32(threadIdx.y))) * podArgs.rope_scale)) * fma(max(vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f), min(vec4<f32>(1.000000e+00f, 1.000000e+00f, 1.000000e+00f, 1.000000e+00f), ((vec4<f32>(4.345991e+02f, 4.345991e+02f, 4.345991e+02f, 4.345991e+02f) * orig_freq_1) - vec4<f32>(3.333333e-01f, 3.333333e-01f, 3.333333e-01f, 3.333333e-01f)))), orig_freq_1, (((vec4<f32>(1.000000e+00f, 1.000000e+00f, 1.000000e+00f, 1.000000e+00f) - max(vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f), min(vec4<f32>(1.000000e+00f, 1.000000e+00f, 1.000000e+00f, 1.000000e+00f), ((vec4<f32>(4.345991e+02f, 4.345991e+02f, 4.345991e+02f, 4.345991e+02f) * orig_freq_1) - vec4<f32>(3.333333e-01f, 3.333333e-01f, 3.333333e-01f, 3.333333e-01f))))) * orig_freq_1) * vec4<f32>(1.250000e-01f, 1.250000e-01f, 1.250000e-01f, 1.250000e-01f))));
        var condval_4 : vec4<f16>;
        if ((i32(threadIdx.x) < 16i)) {
          let v__6 : i32 = ((((((page_no * 32768i) + (i32(blockIdx.y) * 2048i)) + (((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y)) & 15i) * 128i)) + (i32(threadIdx.x) * 4i)) + podArgs.pages_elem_offset) + 64i);
          condval_4 = (vec4<f16>(pages_ptr[v__6 + 0], pages_ptr[v__6 + 1], pages_ptr[v__6 + 2], pages_ptr[v__6 + 3]) * vec4<f16>(-1.000000e+00h, -1.000000e+00h, -1.000000e+00h, -1.000000e+00h));
} else {
          let v__7 : i32 = ((((((page_no * 32768i) + (i32(blockIdx.y) * 2048i)) + (((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y)) & 15i) * 128i)) + (i32(threadIdx.x) * 4i)) + podArgs.pages_elem_offset) - 64i);
          condval_4 = vec4<f16>(pages_ptr[v__7 + 0], pages_ptr[v__7 + 1], pages_ptr[v__7 + 2], pages_ptr[v__7 + 3]);
}
        let v__8 : i32 = (((((page_no * 32768i) + (i32(blockIdx.y) * 2048i)) + (((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y)) & 15i) * 128i)) + (i32(threadIdx.x) * 4i)) + podArgs.pages_elem_offset);
        condval_3 = vec4<f16>(fma(sin(smoothed_freq_1), vec4<f32>(condval_4), (cos(smoothed_freq_1) * vec4<f32>(vec4<f16>(pages_ptr[v__8 + 0], pages_ptr[v__8 + 1], pages_ptr[v__8 + 2], pages_ptr[v__8 + 3])))));
} else {
        let v__9 : i32 = (((((page_no * 32768i) + (i32(blockIdx.y) * 2048i)) + (((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y)) & 15i) * 128i)) + (i32(threadIdx.x) * 4i)) + podArgs.pages_elem_offset);
        condval_3 = vec4<f16>(pages_ptr[v__9 + 0], pages_ptr[v__9 + 1], pages_ptr[v__9 + 2], pages_ptr[v__9 + 3]);
}
      K_smem[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = condval_3;
      let v__10 : i32 = ((((((page_no * 32768i) + (i32(blockIdx.y) * 2048i)) + (((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + i32(threadIdx.y)) & 15i) * 128i)) + (i32(threadIdx.x) * 4i)) + podArgs.pages_elem_offset) + 16384i);
      V_smem[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = vec4<f16>(pages_ptr[v__10 + 0], pages_ptr[v__10 + 1], pages_ptr[v__10 + 2], pages_ptr[v__10 + 3]);
    } else {
      K_smem[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h);
      V_smem[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h);
    }
    workgroupBarrier();
    m_prev[0i] = st_m[0i];
    for (var j : i32 = 0i; j < 4i; j++) {
      QK_local[0i] = (((vec4<f32>(Q_local[0i]) * vec4<f32>(K_smem[(((i32(threadIdx.z) * 128i) + (j * 32i)) + i32(threadIdx.x))])) * vec4<f32>(podArgs.sm_scale, podArgs.sm_scale, podArgs.sm_scale, podArgs.sm_scale)) * vec4<f32>(1.442695e+00f, 1.442695e+00f, 1.442695e+00f, 1.442695e+00f));
      S_reduce_local[0i] = 0.000000e+00f;
      S_reduce_local[0i] = (S_reduce_local[0i] + (QK_local[0i])[0]);
      S_reduce_local[0i] = (S_reduce_local[0i] + (QK_local[0i])[1]);
      S_reduce_local[0i] = (S_reduce_local[0i] + (QK_local[0i])[2]);
      S_reduce_local[0i] = (S_reduce_local[0i] + (QK_local[0i])[3]);
      workgroupBarrier();
      red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = S_reduce_local[0i];
      workgroupBarrier();
      if (i32(threadIdx.x) < 16i) {
        red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = (red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] + red_buf0[((((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x)) + 16i)]);
      }
      workgroupBarrier();
      if (i32(threadIdx.x) < 8i) {
        red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = (red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] + red_buf0[((((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x)) + 8i)]);
      }
      workgroupBarrier();
      if (i32(threadIdx.x) < 4i) {
        red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = (red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] + red_buf0[((((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x)) + 4i)]);
      }
      workgroupBarrier();
      if (i32(threadIdx.x) < 2i) {
        red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = (red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] + red_buf0[((((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x)) + 2i)]);
      }
      workgroupBarrier();
      if (i32(threadIdx.x) < 1i) {
        red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = (red_buf0[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] + red_buf0[((((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x)) + 1i)]);
      }
      workgroupBarrier();
      S_local[j] = -5.000000e+04f;
      if ((((iterator * 8i) + (i32(threadIdx.z) * 4i)) + j) < kv_chunk_len[0i]) {
        S_local[j] = red_buf0[((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i))];
      }
      st_m[0i] = max(st_m[0i], S_local[j]);
    }
    let o_scale : f32 = exp2((m_prev[0i] - st_m[0i]));
    st_d[0i] = (st_d[0i] * o_scale);
    for (var j_1 : i32 = 0i; j_1 < 4i; j_1++) {
      S_local[j_1] = exp2((S_local[j_1] - st_m[0i]));
      st_d[0i] = (st_d[0i] + S_local[j_1]);
    }
    O_local[0i] = (O_local[0i] * vec4<f32>(o_scale, o_scale, o_scale, o_scale));
    for (var j_2 : i32 = 0i; j_2 < 4i; j_2++) {
      V_local[0i] = V_smem[(((i32(threadIdx.z) * 128i) + (j_2 * 32i)) + i32(threadIdx.x))];
      O_local[0i] = fma(vec4<f32>(V_local[0i]), vec4<f32>(S_local[j_2], S_local[j_2], S_local[j_2], S_local[j_2]), O_local[0i]);
    }
  }
  O_allreduce[(((i32(threadIdx.z) * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))] = O_local[0i];
  let cse_v6 : i32 = (i32(threadIdx.y) * 2i);
  let cse_v10 : i32 = ((i32(threadIdx.z) * 8i) + (i32(threadIdx.y) * 2i));
  md_allreduce[((i32(threadIdx.z) * 8i) + (i32(threadIdx.y) * 2i))] = st_m[0i];
  md_allreduce[(((i32(threadIdx.z) * 8i) + (i32(threadIdx.y) * 2i)) + 1i)] = st_d[0i];
  workgroupBarrier();
  st_m[0i] = -5.000000e+04f;
  st_d[0i] = 1.000000e+00f;
  O_local[0i] = vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f);
  for (var j_3 : i32 = 0i; j_3 < 2i; j_3++) {
    m_prev[0i] = st_m[0i];
    d_prev[0i] = st_d[0i];
    let cse_v11 : i32 = ((j_3 * 8i) + (i32(threadIdx.y) * 2i));
    other_m[0i] = md_allreduce[((j_3 * 8i) + (i32(threadIdx.y) * 2i))];
    other_d[0i] = md_allreduce[(((j_3 * 8i) + (i32(threadIdx.y) * 2i)) + 1i)];
    other_o[0i] = O_allreduce[(((j_3 * 128i) + (i32(threadIdx.y) * 32i)) + i32(threadIdx.x))];
    st_m[0i] = max(st_m[0i], other_m[0i]);
    st_d[0i] = fma(other_d[0i], exp2((other_m[0i] - st_m[0i])), (d_prev[0i] * exp2((m_prev[0i] - st_m[0i]))));
    exp_mprev[0i] = exp2((m_prev[0i] - st_m[0i]));
    other_m[0i] = exp2((other_m[0i] - st_m[0i]));
    O_local[0i] = fma(other_o[0i], vec4<f32>(other_m[0i], other_m[0i], other_m[0i], other_m[0i]), (O_local[0i] * vec4<f32>(exp_mprev[0i], exp_mprev[0i], exp_mprev[0i], exp_mprev[0i])));
  }
  O_local[0i] = (O_local[0i] / vec4<f32>(st_d[0i], st_d[0i], st_d[0i], st_d[0i]));
  let v__11 : i32 = ((((v__1 * 4096i) + (i32(blockIdx.y) * 512i)) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
  output_ptr[v__11 + 0] = vec4<f16>(O_local[0i])[0];
  output_ptr[v__11 + 1] = vec4<f16>(O_local[0i])[1];
  output_ptr[v__11 + 2] = vec4<f16>(O_local[0i])[2];
  output_ptr[v__11 + 3] = vec4<f16>(O_local[0i])[3];
  lse_ptr[(((v__1 * 32i) + (i32(blockIdx.y) * 4i)) + i32(threadIdx.y))] = (st_m[0i] + log2(st_d[0i]));
}


