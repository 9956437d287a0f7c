// apache-tvm 0.27.0.post1, target webgpu: tree_attn(h_kv=8, h_q=32, d=128, dtype='float16', rope_scaling={})
// Function: batch_tree_attn_kernel
//----------------------------------------
// Function: batch_tree_attn_kernel
//----------------------------------------
enable f16;

@group(0) @binding(0) var<storage, read> k_ptr : array<f16>;
@group(0) @binding(1) var<storage, read> kv_indptr_ptr : array<i32>;
@group(0) @binding(2) var<storage, read_write> lse_ptr : array<f32>;
@group(0) @binding(3) var<storage, read> mask_ptr : array<i32>;
@group(0) @binding(4) var<storage, read> mn_indptr_ptr : array<i32>;
@group(0) @binding(5) var<storage, read_write> output_ptr : array<f16>;
@group(0) @binding(6) var<storage, read> q_ptr : array<f16>;
@group(0) @binding(7) var<storage, read> q_indptr_ptr : array<i32>;
@group(0) @binding(8) var<storage, read> q_rope_position_ptr : array<i32>;
@group(0) @binding(9) var<storage, read> v_ptr : array<f16>;

struct PODArgs {
  batch_size_plus_1: i32,
  kv_indptr_elem_offset: i32,
  mask_elem_offset: i32,
  mn_indptr_elem_offset: i32,
  q_indptr_elem_offset: i32,
  q_rope_position_elem_offset: i32,
  rope_scale: f32,
  rope_theta: f32,
  rotary_mode: i32,
  sm_scale: f32,
  packGridDimX: u32
}
@group(0) @binding(10) var<uniform> podArgs : PODArgs;

var<workgroup> m_smem : array<f32, 32>;
var<workgroup> d_smem : array<f32, 32>;
var<workgroup> Q_smem : array<f16, 4096>;
var<workgroup> K_smem : array<f16, 4096>;
var<workgroup> V_smem : array<f16, 4096>;
var<workgroup> S_smem : array<f32, 1024>;
var<workgroup> m_prev_smem : array<f32, 32>;
@compute @workgroup_size(32, 4, 1)
fn batch_tree_attn_kernel(
  @builtin(workgroup_id) blockIdx : vec3<u32>,
  @builtin(num_workgroups) gridDim : vec3<u32>,
  @builtin(local_invocation_id) threadIdx : vec3<u32>
) {
  if (blockIdx.z * gridDim.x + blockIdx.x > podArgs.packGridDimX) { return; }
  let v__1 : i32 = i32(blockIdx.z * gridDim.x + blockIdx.x);
  var tile_id : array<i32, 1>;
  var batch_idx : array<i32, 1>;
  var batch_rows : array<i32, 1>;
  var batch_tiles : array<i32, 1>;
  var kv_chunk_len : array<i32, 1>;
  var O_local : array<f32, 32>;
  var S_local : array<f32, 8>;
  var m_prev : array<f32, 1>;
  var m_new : array<f32, 1>;
  var d_new : array<f32, 1>;
  tile_id[0i] = v__1;
  batch_idx[0i] = 0i;
  batch_rows[0i] = ((q_indptr_ptr[(podArgs.q_indptr_elem_offset + 1i)] * 4i) - (q_indptr_ptr[podArgs.q_indptr_elem_offset] * 4i));
  batch_tiles[0i] = ((batch_rows[0i] + 31i)>>5u);
  while (true) {
    if (!((((batch_idx[0i] + 1i) < podArgs.batch_size_plus_1)))) { break; }
    while (true) {
      if (!(((batch_tiles[0i] <= tile_id[0i]) && ((batch_idx[0i] + 1i) < podArgs.batch_size_plus_1)))) { break; }
      tile_id[0i] = (tile_id[0i] - batch_tiles[0i]);
      batch_idx[0i] = (batch_idx[0i] + 1i);
      if ((batch_idx[0i] + 1i) < podArgs.batch_size_plus_1) {
        let b_idx : i32 = batch_idx[0i];
        let cse_v3 : i32 = (b_idx + podArgs.q_indptr_elem_offset);
        batch_rows[0i] = ((q_indptr_ptr[((b_idx + podArgs.q_indptr_elem_offset) + 1i)] * 4i) - (q_indptr_ptr[(b_idx + podArgs.q_indptr_elem_offset)] * 4i));
        batch_tiles[0i] = ((batch_rows[0i] + 31i)>>5u);
      }
    }
    if (((batch_idx[0i] + 1i) < podArgs.batch_size_plus_1)) {
      let b_idx_1 : i32 = batch_idx[0i];
      let LH_start : i32 = (tile_id[0i] * 32i);
      let cse_v4 : i32 = (b_idx_1 + podArgs.q_indptr_elem_offset);
      let q_indptr_val : i32 = q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)];
      let cse_v5 : i32 = (b_idx_1 + podArgs.kv_indptr_elem_offset);
      kv_chunk_len[0i] = (kv_indptr_ptr[((b_idx_1 + podArgs.kv_indptr_elem_offset) + 1i)] - kv_indptr_ptr[(b_idx_1 + podArgs.kv_indptr_elem_offset)]);
      workgroupBarrier();
      let cse_v26 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
      let row : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
      if (i32(threadIdx.y) < 1i) {
        m_smem[i32(threadIdx.x)] = -5.000000e+04f;
        d_smem[i32(threadIdx.x)] = 1.000000e+00f;
      }
      for (var li_1 : i32 = 0i; li_1 < 4i; li_1++) {
        for (var lj_1 : i32 = 0i; lj_1 < 8i; lj_1++) {
          O_local[((li_1 * 8i) + lj_1)] = 0.000000e+00f;
        }
      }
      workgroupBarrier();
      let cse_v7 : i32 = (i32(blockIdx.y) * 4i);
      let cse_v8 : i32 = (LH_start & 3i);
      let cse_v9 : i32 = (LH_start>>2u);
      let cse_v10 : i32 = (i32(blockIdx.y) * 512i);
      let cse_v11 : i32 = (i32(threadIdx.x) * 4i);
      let cse_v12 : i32 = (i32(threadIdx.y) * 128i);
      let cse_v29 : i32 = ((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i);
      let cse_v30 : i32 = ((i32(threadIdx.x) & 15i) * 8i);
      let cse_v31 : vec4<f32> = (vec4<f32>(vec4<i32>((((i32(threadIdx.x) & 15i) * 8i))+(2i*0), (((i32(threadIdx.x) & 15i) * 8i))+(2i*1), (((i32(threadIdx.x) & 15i) * 8i))+(2i*2), (((i32(threadIdx.x) & 15i) * 8i))+(2i*3))) / vec4<f32>(1.280000e+02f, 1.280000e+02f, 1.280000e+02f, 1.280000e+02f));
      for (var li_lj_fused_0 : i32 = 0i; li_lj_fused_0 < 8i; li_lj_fused_0++) {
        let cse_v6 : i32 = (LH_start + i32(threadIdx.y));
        let cse_v27 : i32 = ((LH_start + i32(threadIdx.y))>>2u);
        let cse_v48 : i32 = ((((LH_start + i32(threadIdx.y))>>2u) + q_indptr_val) + li_lj_fused_0);
        let cur_L : i32 = ((((LH_start + i32(threadIdx.y))>>2u) + q_indptr_val) + li_lj_fused_0);
        let cse_v28 : i32 = ((LH_start + i32(threadIdx.y)) & 3i);
        let cur_H_qo : i32 = ((i32(blockIdx.y) * 4i) + ((LH_start + i32(threadIdx.y)) & 3i));
        let cse_v43 : i32 = (((li_lj_fused_0 * 512i) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
        if (((((LH_start + i32(threadIdx.y))>>2u) + q_indptr_val) + li_lj_fused_0) < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          var condval : vec4<f16>;
          if ((podArgs.rotary_mode == 1i)) {
            let freq : vec4<f32> = (vec4<f32>((f32(q_rope_position_ptr[((((((i32(threadIdx.y) + (LH_start & 3i))>>2u) + (LH_start>>2u)) + li_lj_fused_0) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[((((((i32(threadIdx.y) + (LH_start & 3i))>>2u) + (LH_start>>2u)) + li_lj_fused_0) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[((((((i32(threadIdx.y) + (LH_start & 3i))>>2u) + (LH_start>>2u)) + li_lj_fused_0) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[((((((i32(threadIdx.y) + (LH_start & 3i))>>2u) + (LH_start>>2u)) + li_lj_fused_0) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale)) / pow(vec4<f32>(podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta), (vec4<f32>(vec4<i32>((((i32(threadIdx.x) & 15i) * 8i))+(2i*0), (((i32(threadIdx.x) & 15i) * 8i))+(2i*1), (((i32(threadIdx.x) & 15i) * 8i))+(2i*2), (((i32(threadIdx.x) & 15i) * 8i))+(2i*3))) / vec4<f32>(1.280000e+02f, 1.280000e+02f, 1.280000e+02f, 1.280000e+02f))));
            var condval_1 : vec4<f16>;
            if ((i32(threadIdx.x) < 16i)) {
              let v__2 : i32 = (((((((((LH_start + i32(threadIdx.y))>>2u) * 4096i) + (q_indptr_val * 4096i)) + (li_lj_fused_0 * 4096i)) + (i32(blockIdx.y) * 512i)) + (((LH_start + i32(threadIdx.y)) & 3i) * 128i)) + (i32(threadIdx.x) * 4i)) + 64i);
              condval_1 = (vec4<f16>(q_ptr[v__2 + 0], q_ptr[v__2 + 1], q_ptr[v__2 + 2], q_ptr[v__2 + 3]) * vec4<f16>(-1.000000e+00h, -1.000000e+00h, -1.000000e+00h, -1.000000e+00h));
} else {
              let v__3 : i32 = (((((((((LH_start + i32(threadIdx.y))>>2u) * 4096i) + (q_indptr_val * 4096i)) + (li_lj_fused_0 * 4096i)) + (i32(blockIdx.y) * 512i)) + (((LH_start + i32(threadIdx.y)) & 3i) * 128i)) + (i32(threadIdx.x) * 4i)) - 64i);
              condval_1 = vec4<f16>(q_ptr[v__3 + 0], q_ptr[v__3 + 1], q_ptr[v__3 + 2], q_ptr[v__3 + 3]);
}
            let v__4 : i32 = ((((((((LH_start + i32(threadIdx.y))>>2u) * 4096i) + (q_indptr_val * 4096i)) + (li_lj_fused_0 * 4096i)) + (i32(blockIdx.y) * 512i)) + (((LH_start + i32(threadIdx.y)) & 3i) * 128i)) + (i32(threadIdx.x) * 4i));
            condval = vec4<f16>(fma(sin(freq), vec4<f32>(condval_1), (cos(freq) * vec4<f32>(vec4<f16>(q_ptr[v__4 + 0], q_ptr[v__4 + 1], q_ptr[v__4 + 2], q_ptr[v__4 + 3])))));
} else {
            let v__5 : i32 = ((((((((LH_start + i32(threadIdx.y))>>2u) * 4096i) + (q_indptr_val * 4096i)) + (li_lj_fused_0 * 4096i)) + (i32(blockIdx.y) * 512i)) + (((LH_start + i32(threadIdx.y)) & 3i) * 128i)) + (i32(threadIdx.x) * 4i));
            condval = vec4<f16>(q_ptr[v__5 + 0], q_ptr[v__5 + 1], q_ptr[v__5 + 2], q_ptr[v__5 + 3]);
}
          let v__6 : i32 = (((li_lj_fused_0 * 512i) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
          Q_smem[v__6 + 0] = condval[0];
          Q_smem[v__6 + 1] = condval[1];
          Q_smem[v__6 + 2] = condval[2];
          Q_smem[v__6 + 3] = condval[3];
        } else {
          let v__7 : i32 = (((li_lj_fused_0 * 512i) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
          Q_smem[v__7 + 0] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[0];
          Q_smem[v__7 + 1] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[1];
          Q_smem[v__7 + 2] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[2];
          Q_smem[v__7 + 3] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[3];
        }
      }
      workgroupBarrier();
      let cse_v19 : i32 = (i32(threadIdx.y) * 8i);
      let cse_v20 : i32 = (LH_start + i32(threadIdx.x));
      let cse_v24 : i32 = (i32(threadIdx.x)>>4u);
      let cse_v37 : i32 = (i32(threadIdx.x) + (LH_start & 3i));
      let cse_v46 : i32 = ((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u));
      let cse_v47 : i32 = ((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i));
      for (var iterator : i32 = 0i; iterator < ((kv_chunk_len[0i] + 31i)>>5u); iterator++) {
        let cse_v13 : i32 = (iterator * 32i);
        let L_kv_start : i32 = (iterator * 32i);
        let L_kv_base : i32 = kv_indptr_ptr[(b_idx_1 + podArgs.kv_indptr_elem_offset)];
        let cse_v14 : i32 = (i32(threadIdx.y) * 1024i);
        workgroupBarrier();
        for (var lz_ly_fused_0 : i32 = 0i; lz_ly_fused_0 < 8i; lz_ly_fused_0++) {
          let cse_v32 : i32 = ((iterator * 32i) + (lz_ly_fused_0 * 4i));
          let cur_L_1 : i32 = ((((iterator * 32i) + (lz_ly_fused_0 * 4i)) + L_kv_base) + i32(threadIdx.y));
          let cse_v44 : i32 = (((iterator * 32i) + (lz_ly_fused_0 * 4i)) + i32(threadIdx.y));
          let cse_v45 : i32 = (((lz_ly_fused_0 * 512i) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
          if ((((iterator * 32i) + (lz_ly_fused_0 * 4i)) + i32(threadIdx.y)) < kv_chunk_len[0i]) {
            let cse_v51 : i32 = ((((((iterator * 32768i) + (lz_ly_fused_0 * 4096i)) + (L_kv_base * 1024i)) + (i32(threadIdx.y) * 1024i)) + (i32(blockIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
            var condval_2 : vec4<f16>;
            if ((podArgs.rotary_mode == 1i)) {
              let freq_1 : vec4<f32> = (vec4<f32>((f32(q_rope_position_ptr[(((((iterator * 32i) + (lz_ly_fused_0 * 4i)) + i32(threadIdx.y)) + L_kv_base) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[(((((iterator * 32i) + (lz_ly_fused_0 * 4i)) + i32(threadIdx.y)) + L_kv_base) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[(((((iterator * 32i) + (lz_ly_fused_0 * 4i)) + i32(threadIdx.y)) + L_kv_base) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[(((((iterator * 32i) + (lz_ly_fused_0 * 4i)) + i32(threadIdx.y)) + L_kv_base) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale)) / pow(vec4<f32>(podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta), (vec4<f32>(vec4<i32>((((i32(threadIdx.x) & 15i) * 8i))+(2i*0), (((i32(threadIdx.x) & 15i) * 8i))+(2i*1), (((i32(threadIdx.x) & 15i) * 8i))+(2i*2), (((i32(threadIdx.x) & 15i) * 8i))+(2i*3))) / vec4<f32>(1.280000e+02f, 1.280000e+02f, 1.280000e+02f, 1.280000e+02f))));
              var condval_3 : vec4<f16>;
              if ((i32(threadIdx.x) < 16i)) {
                let v__8 : i32 = (((((((iterator * 32768i) + (lz_ly_fused_0 * 4096i)) + (L_kv_base * 1024i)) + (i32(threadIdx.y) * 1024i)) + (i32(blockIdx.y) * 128i)) + (i32(threadIdx.x) * 4i)) + 64i);
                condval_3 = (vec4<f16>(k_ptr[v__8 + 0], k_ptr[v__8 + 1], k_ptr[v__8 + 2], k_ptr[v__8 + 3]) * vec4<f16>(-1.000000e+00h, -1.000000e+00h, -1.000000e+00h, -1.000000e+00h));
} else {
                let v__9 : i32 = (((((((iterator * 32768i) + (lz_ly_fused_0 * 4096i)) + (L_kv_base * 1024i)) + (i32(threadIdx.y) * 1024i)) + (i32(blockIdx.y) * 128i)) + (i32(threadIdx.x) * 4i)) - 64i);
                condval_3 = vec4<f16>(k_ptr[v__9 + 0], k_ptr[v__9 + 1], k_ptr[v__9 + 2], k_ptr[v__9 + 3]);
}
              let v__10 : i32 = ((((((iterator * 32768i) + (lz_ly_fused_0 * 4096i)) + (L_kv_base * 1024i)) + (i32(threadIdx.y) * 1024i)) + (i32(blockIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
              condval_2 = vec4<f16>(fma(sin(freq_1), vec4<f32>(condval_3), (cos(freq_1) * vec4<f32>(vec4<f16>(k_ptr[v__10 + 0], k_ptr[v__10 + 1], k_ptr[v__10 + 2], k_ptr[v__10 + 3])))));
} else {
              let v__11 : i32 = ((((((iterator * 32768i) + (lz_ly_fused_0 * 4096i)) + (L_kv_base * 1024i)) + (i32(threadIdx.y) * 1024i)) + (i32(blockIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
              condval_2 = vec4<f16>(k_ptr[v__11 + 0], k_ptr[v__11 + 1], k_ptr[v__11 + 2], k_ptr[v__11 + 3]);
}
            let v__12 : i32 = (((lz_ly_fused_0 * 512i) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
            K_smem[v__12 + 0] = condval_2[0];
            K_smem[v__12 + 1] = condval_2[1];
            K_smem[v__12 + 2] = condval_2[2];
            K_smem[v__12 + 3] = condval_2[3];
            let v__13 : i32 = ((((((iterator * 32768i) + (lz_ly_fused_0 * 4096i)) + (L_kv_base * 1024i)) + (i32(threadIdx.y) * 1024i)) + (i32(blockIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
            let v__14 : i32 = (((lz_ly_fused_0 * 512i) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
            V_smem[v__14 + 0] = vec4<f16>(v_ptr[v__13 + 0], v_ptr[v__13 + 1], v_ptr[v__13 + 2], v_ptr[v__13 + 3])[0];
            V_smem[v__14 + 1] = vec4<f16>(v_ptr[v__13 + 0], v_ptr[v__13 + 1], v_ptr[v__13 + 2], v_ptr[v__13 + 3])[1];
            V_smem[v__14 + 2] = vec4<f16>(v_ptr[v__13 + 0], v_ptr[v__13 + 1], v_ptr[v__13 + 2], v_ptr[v__13 + 3])[2];
            V_smem[v__14 + 3] = vec4<f16>(v_ptr[v__13 + 0], v_ptr[v__13 + 1], v_ptr[v__13 + 2], v_ptr[v__13 + 3])[3];
          } else {
            let v__15 : i32 = (((lz_ly_fused_0 * 512i) + (i32(threadIdx.y) * 128i)) + (i32(threadIdx.x) * 4i));
            K_smem[v__15 + 0] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[0];
            K_smem[v__15 + 1] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[1];
            K_smem[v__15 + 2] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[2];
            K_smem[v__15 + 3] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[3];
            V_smem[v__15 + 0] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[0];
            V_smem[v__15 + 1] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[1];
            V_smem[v__15 + 2] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[2];
            V_smem[v__15 + 3] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[3];
          }
        }
        workgroupBarrier();
        for (var li_1_init : i32 = 0i; li_1_init < 2i; li_1_init++) {
          for (var lj_1_init : i32 = 0i; lj_1_init < 4i; lj_1_init++) {
            S_local[((li_1_init * 4i) + lj_1_init)] = 0.000000e+00f;
          }
        }
        let cse_v15 : i32 = (i32(threadIdx.x)>>3u);
        let cse_v17 : i32 = (i32(threadIdx.x) & 7i);
        for (var lk_0 : i32 = 0i; lk_0 < 16i; lk_0++) {
          for (var li_1_1 : i32 = 0i; li_1_1 < 2i; li_1_1++) {
            for (var lj_1_1 : i32 = 0i; lj_1_1 < 4i; lj_1_1++) {
              for (var lk_1 : i32 = 0i; lk_1 < 8i; lk_1++) {
                let cse_v16 : i32 = (lk_0 * 8i);
                let cse_v33 : i32 = ((li_1_1 * 4i) + lj_1_1);
                S_local[((li_1_1 * 4i) + lj_1_1)] = fma(((f32(Q_smem[(((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (li_1_1 * 128i)) + (lk_0 * 8i)) + lk_1)]) * f32(K_smem[(((((i32(threadIdx.x) & 7i) * 512i) + (lj_1_1 * 128i)) + (lk_0 * 8i)) + lk_1)])) * podArgs.sm_scale), 1.442695e+00f, S_local[((li_1_1 * 4i) + lj_1_1)]);
              }
            }
          }
        }
        workgroupBarrier();
        let cse_v18 : i32 = (i32(threadIdx.y) * 256i);
        for (var li_1_2 : i32 = 0i; li_1_2 < 2i; li_1_2++) {
          for (var lj_1_2 : i32 = 0i; lj_1_2 < 4i; lj_1_2++) {
            S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>3u) * 64i)) + (li_1_2 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i)) + lj_1_2)] = S_local[((li_1_2 * 4i) + lj_1_2)];
          }
        }
        workgroupBarrier();
        let row_1 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        let cse_v21 : i32 = (b_idx_1 + podArgs.mn_indptr_elem_offset);
        let cse_v22 : i32 = (iterator * 64i);
        let cse_v23 : i32 = (i32(threadIdx.x) * 32i);
        let cse_v35 : i32 = ((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i);
        let cse_v50 : i32 = ((((i32(threadIdx.x) + (LH_start & 3i))>>2u) * 2i) + ((LH_start>>2u) * 2i));
        if (i32(threadIdx.y) < 1i) {
          m_prev[0i] = m_smem[i32(threadIdx.x)];
          m_new[0i] = m_smem[i32(threadIdx.x)];
          let row_ : i32 = ((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u));
          for (var j : i32 = 0i; j < 32i; j++) {
            let cse_v34 : i32 = ((iterator * 32i) + j);
            let cse_v36 : i32 = ((iterator * 64i) + (j * 2i));
            if ((((iterator * 32i) + j) < kv_chunk_len[0i]) && ((((iterator * 32i) + j) < ((kv_chunk_len[0i] + mn_indptr_ptr[(b_idx_1 + podArgs.mn_indptr_elem_offset)]) - mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)])) || ((mask_ptr[(((((iterator * 64i) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (j * 2i)) + podArgs.mask_elem_offset) - (kv_chunk_len[0i] * 2i))] <= mask_ptr[((((((((i32(threadIdx.x) + (LH_start & 3i))>>2u) * 2i) + ((LH_start>>2u) * 2i)) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.mask_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))]) && (mask_ptr[((((((((i32(threadIdx.x) + (LH_start & 3i))>>2u) * 2i) + ((LH_start>>2u) * 2i)) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.mask_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))] < mask_ptr[((((((iterator * 64i) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (j * 2i)) + podArgs.mask_elem_offset) + 1i) - (kv_chunk_len[0i] * 2i))])))) {
              m_new[0i] = max(m_new[0i], S_smem[((i32(threadIdx.x) * 32i) + j)]);
            }
          }
          d_new[0i] = (d_smem[i32(threadIdx.x)] * exp2((m_prev[0i] - m_new[0i])));
        }
        let row_2 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        for (var j_1 : i32 = 0i; j_1 < 32i; j_1++) {
          workgroupBarrier();
          if (i32(threadIdx.y) < 1i) {
            let row__1 : i32 = ((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u));
            let cse_v38 : i32 = ((iterator * 32i) + j_1);
            let cse_v39 : i32 = ((iterator * 64i) + (j_1 * 2i));
            let cse_v40 : i32 = ((i32(threadIdx.x) * 32i) + j_1);
            if ((((iterator * 32i) + j_1) < kv_chunk_len[0i]) && ((((iterator * 32i) + j_1) < ((kv_chunk_len[0i] + mn_indptr_ptr[(b_idx_1 + podArgs.mn_indptr_elem_offset)]) - mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)])) || ((mask_ptr[(((((iterator * 64i) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (j_1 * 2i)) + podArgs.mask_elem_offset) - (kv_chunk_len[0i] * 2i))] <= mask_ptr[((((((((i32(threadIdx.x) + (LH_start & 3i))>>2u) * 2i) + ((LH_start>>2u) * 2i)) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.mask_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))]) && (mask_ptr[((((((((i32(threadIdx.x) + (LH_start & 3i))>>2u) * 2i) + ((LH_start>>2u) * 2i)) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.mask_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))] < mask_ptr[((((((iterator * 64i) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (j_1 * 2i)) + podArgs.mask_elem_offset) + 1i) - (kv_chunk_len[0i] * 2i))])))) {
              S_smem[((i32(threadIdx.x) * 32i) + j_1)] = exp2((S_smem[((i32(threadIdx.x) * 32i) + j_1)] - m_new[0i]));
            } else {
              S_smem[((i32(threadIdx.x) * 32i) + j_1)] = exp2((-5.000000e+04f - m_new[0i]));
            }
          }
        }
        let row_3 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        workgroupBarrier();
        if (i32(threadIdx.y) < 1i) {
          for (var j_2 : i32 = 0i; j_2 < 32i; j_2++) {
            d_new[0i] = (d_new[0i] + S_smem[((i32(threadIdx.x) * 32i) + j_2)]);
          }
          m_smem[i32(threadIdx.x)] = m_new[0i];
          d_smem[i32(threadIdx.x)] = d_new[0i];
          m_prev_smem[i32(threadIdx.x)] = m_prev[0i];
        }
        workgroupBarrier();
        for (var li_1_init_1 : i32 = 0i; li_1_init_1 < 4i; li_1_init_1++) {
          for (var lj_1_init_1 : i32 = 0i; lj_1_init_1 < 8i; lj_1_init_1++) {
            let cse_v41 : i32 = ((li_1_init_1 * 8i) + lj_1_init_1);
            let cse_v49 : i32 = (((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_init_1);
            O_local[((li_1_init_1 * 8i) + lj_1_init_1)] = (O_local[((li_1_init_1 * 8i) + lj_1_init_1)] * exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_init_1)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_init_1)])));
          }
        }
        for (var lk_0_1 : i32 = 0i; lk_0_1 < 4i; lk_0_1++) {
          for (var lk_1_1 : i32 = 0i; lk_1_1 < 8i; lk_1_1++) {
            for (var li_1_3 : i32 = 0i; li_1_3 < 4i; li_1_3++) {
              for (var lj_1_3 : i32 = 0i; lj_1_3 < 8i; lj_1_3++) {
                let cse_v42 : i32 = ((li_1_3 * 8i) + lj_1_3);
                O_local[((li_1_3 * 8i) + lj_1_3)] = fma(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (li_1_3 * 32i)) + (lk_0_1 * 8i)) + lk_1_1)], f32(V_smem[((((lk_0_1 * 1024i) + (lk_1_1 * 128i)) + ((i32(threadIdx.x) & 15i) * 8i)) + lj_1_3)]), O_local[((li_1_3 * 8i) + lj_1_3)]);
              }
            }
          }
        }
      }
      for (var li_1_4 : i32 = 0i; li_1_4 < 4i; li_1_4++) {
        for (var lj_1_4 : i32 = 0i; lj_1_4 < 8i; lj_1_4++) {
          let cse_v25 : i32 = (LH_start + li_1_4);
          let cur_L_2 : i32 = ((((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) + ((LH_start + li_1_4)>>2u)) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]);
          let cur_H_qo_1 : i32 = ((i32(blockIdx.y) * 4i) + ((LH_start + li_1_4) & 3i));
          if (cur_L_2 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
            output_ptr[(((((cur_L_2 * 4096i) + (i32(blockIdx.y) * 512i)) + (((li_1_4 + (LH_start & 3i)) & 3i) * 128i)) + ((i32(threadIdx.x) & 15i) * 8i)) + lj_1_4)] = f16((O_local[((li_1_4 * 8i) + lj_1_4)] / d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_4)]));
          }
        }
      }
      if (i32(threadIdx.y) < 1i) {
        let cur_L_3 : i32 = (((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u)) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]);
        let cur_H_qo_2 : i32 = ((i32(blockIdx.y) * 4i) + ((LH_start + i32(threadIdx.x)) & 3i));
        if (cur_L_3 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          lse_ptr[(((cur_L_3 * 32i) + (i32(blockIdx.y) * 4i)) + ((i32(threadIdx.x) + (LH_start & 3i)) & 3i))] = (m_smem[i32(threadIdx.x)] + log2(d_smem[i32(threadIdx.x)]));
        }
      }
      tile_id[0i] = (tile_id[0i] + 16i);
    }
  }
}


