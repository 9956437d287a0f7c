// apache-tvm 0.27.0.post1, target webgpu: tree_attn(h_kv=8, h_q=32, d=96, dtype='float32', rope_scaling={})
// Function: batch_tree_attn_kernel
//----------------------------------------
// Function: batch_tree_attn_kernel
//----------------------------------------
@group(0) @binding(0) var<storage, read> k_ptr : array<f32>;
@group(0) @binding(1) var<storage, read> kv_indptr_ptr : array<i32>;
@group(0) @binding(2) var<storage, read_write> lse_ptr : array<f32>;
@group(0) @binding(3) var<storage, read> mask_ptr : array<i32>;
@group(0) @binding(4) var<storage, read> mn_indptr_ptr : array<i32>;
@group(0) @binding(5) var<storage, read_write> output_ptr : array<f32>;
@group(0) @binding(6) var<storage, read> q_ptr : array<f32>;
@group(0) @binding(7) var<storage, read> q_indptr_ptr : array<i32>;
@group(0) @binding(8) var<storage, read> q_rope_position_ptr : array<i32>;
@group(0) @binding(9) var<storage, read> v_ptr : array<f32>;

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

var<workgroup> m_smem : array<f32, 16>;
var<workgroup> d_smem : array<f32, 16>;
var<workgroup> Q_smem : array<f32, 1536>;
var<workgroup> K_smem : array<f32, 1536>;
var<workgroup> V_smem : array<f32, 1536>;
var<workgroup> m_prev_smem : array<f32, 16>;
@compute @workgroup_size(32, 5, 1)
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
  var O_local : array<f32, 12>;
  var S_local : array<f32, 2>;
  var m_prev : array<f32, 1>;
  var m_new : array<f32, 1>;
  var d_new : array<f32, 1>;
  tile_id[0i] = v__1;
  batch_idx[0i] = 0i;
  batch_rows[0i] = ((q_indptr_ptr[(podArgs.q_indptr_elem_offset + 1i)] * 4i) - (q_indptr_ptr[podArgs.q_indptr_elem_offset] * 4i));
  batch_tiles[0i] = ((batch_rows[0i] + 15i)>>4u);
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
        batch_tiles[0i] = ((batch_rows[0i] + 15i)>>4u);
      }
    }
    if (((batch_idx[0i] + 1i) < podArgs.batch_size_plus_1)) {
      let b_idx_1 : i32 = batch_idx[0i];
      let LH_start : i32 = (tile_id[0i] * 16i);
      let cse_v4 : i32 = (b_idx_1 + podArgs.q_indptr_elem_offset);
      let q_indptr_val : i32 = q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)];
      let cse_v5 : i32 = (b_idx_1 + podArgs.kv_indptr_elem_offset);
      kv_chunk_len[0i] = (kv_indptr_ptr[((b_idx_1 + podArgs.kv_indptr_elem_offset) + 1i)] - kv_indptr_ptr[(b_idx_1 + podArgs.kv_indptr_elem_offset)]);
      workgroupBarrier();
      let cse_v20 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
      let row : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
      let cse_v6 : i32 = (i32(threadIdx.y) * 2i);
      let cse_v7 : i32 = (i32(threadIdx.x)>>4u);
      let cse_v21 : i32 = ((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u));
      if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
        m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = -5.000000e+04f;
        d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = 1.000000e+00f;
      }
      let cse_v8 : i32 = (i32(threadIdx.x)>>3u);
      let cse_v32 : i32 = (((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i);
      let cse_v35 : i32 = ((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i);
      for (var li_1 : i32 = 0i; li_1 < 3i; li_1++) {
        for (var lj_1 : i32 = 0i; lj_1 < 4i; lj_1++) {
          if (((((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + li_1) < 16i) && (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 9i)) {
            O_local[((li_1 * 4i) + lj_1)] = 0.000000e+00f;
          }
        }
      }
      workgroupBarrier();
      let cse_v9 : i32 = (i32(blockIdx.y) * 4i);
      let cse_v11 : i32 = (i32(threadIdx.y) * 64i);
      let cse_v12 : i32 = (i32(threadIdx.x) * 2i);
      let cse_v13 : i32 = (LH_start & 3i);
      let cse_v14 : i32 = (i32(blockIdx.y) * 384i);
      let cse_v22 : i32 = ((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i);
      for (var li_lj_fused_0 : i32 = 0i; li_lj_fused_0 < 6i; li_lj_fused_0++) {
        let cse_v40 : i32 = (((((li_lj_fused_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i) + LH_start);
        let cur_L : vec2<i32> = vec2<i32>((((((((li_lj_fused_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i) + LH_start)>>2u) + q_indptr_val), (((((((li_lj_fused_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i) + LH_start)>>2u) + q_indptr_val));
        let cur_H_qo : vec2<i32> = vec2<i32>(((i32(blockIdx.y) * 4i) + ((((((li_lj_fused_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i) + LH_start) & 3i)), ((i32(blockIdx.y) * 4i) + ((((((li_lj_fused_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i) + LH_start) & 3i)));
        for (var li_lj_fused_3_s : i32 = 0i; li_lj_fused_3_s < 2i; li_lj_fused_3_s++) {
          let cse_v10 : i32 = (li_lj_fused_0 * 256i);
          let cse_v36 : i32 = ((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s);
          let cse_v44 : i32 = ((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start);
          let cse_v47 : i32 = (((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start)>>2u);
          if (((((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start)>>2u) + q_indptr_val) < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
            var condval : f32;
            if ((podArgs.rotary_mode == 1i)) {
              let freq : f32 = ((f32(q_rope_position_ptr[(((((((((li_lj_fused_0 * 256i) + ((LH_start & 3i) * 96i)) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 384i) + (LH_start>>2u)) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale) / pow(podArgs.rope_theta, (f32(((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) % 48i) * 2i)) / 9.600000e+01f)));
              var condval_1 : f32;
              if (((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) % 96i) < 48i)) {
                condval_1 = (q_ptr[(((((((((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start)>>2u) * 3072i) + (q_indptr_val * 3072i)) + (i32(blockIdx.y) * 384i)) + ((((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start) & 3i) * 96i)) + (((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) % 96i)) + 48i)] * -1.000000e+00f);
} else {
                condval_1 = q_ptr[(((((((((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start)>>2u) * 3072i) + (q_indptr_val * 3072i)) + (i32(blockIdx.y) * 384i)) + ((((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start) & 3i) * 96i)) + (((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) % 96i)) - 48i)];
}
              condval = fma(sin(freq), condval_1, (cos(freq) * q_ptr[((((((((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start)>>2u) * 3072i) + (q_indptr_val * 3072i)) + (i32(blockIdx.y) * 384i)) + ((((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start) & 3i) * 96i)) + (((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) % 96i))]));
} else {
              condval = q_ptr[((((((((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start)>>2u) * 3072i) + (q_indptr_val * 3072i)) + (i32(blockIdx.y) * 384i)) + ((((((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) / 96i) + LH_start) & 3i) * 96i)) + (((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s) % 96i))];
}
            Q_smem[((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s)] = condval;
          } else {
            Q_smem[((((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + li_lj_fused_3_s)] = 0.000000e+00f;
          }
        }
      }
      workgroupBarrier();
      let cse_v17 : i32 = (LH_start + i32(threadIdx.x));
      let cse_v23 : i32 = ((LH_start + i32(threadIdx.x))>>2u);
      let cse_v33 : i32 = ((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u));
      let cse_v39 : i32 = ((((i32(threadIdx.y) * 32i) + i32(threadIdx.x)) % 24i) * 4i);
      for (var iterator : i32 = 0i; iterator < ((kv_chunk_len[0i] + 15i)>>4u); iterator++) {
        let cse_v15 : i32 = (iterator * 16i);
        let L_kv_start : i32 = (iterator * 16i);
        let L_kv_base : i32 = kv_indptr_ptr[(b_idx_1 + podArgs.kv_indptr_elem_offset)];
        workgroupBarrier();
        for (var lz_ly_fused_0 : i32 = 0i; lz_ly_fused_0 < 6i; lz_ly_fused_0++) {
          let cur_L_1 : vec2<i32> = vec2<i32>((((iterator * 16i) + ((((lz_ly_fused_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i)) + L_kv_base), (((iterator * 16i) + ((((lz_ly_fused_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i)) + L_kv_base));
          for (var lz_ly_fused_3_s : i32 = 0i; lz_ly_fused_3_s < 2i; lz_ly_fused_3_s++) {
            let cse_v37 : i32 = ((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s);
            let cse_v41 : i32 = (((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) / 96i);
            let cse_v45 : i32 = ((iterator * 16i) + (((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) / 96i));
            if (((iterator * 16i) + (((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) / 96i)) < kv_chunk_len[0i]) {
              let cse_v48 : i32 = (((((iterator * 12288i) + ((((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) / 96i) * 768i)) + (L_kv_base * 768i)) + (i32(blockIdx.y) * 96i)) + (((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) % 96i));
              var condval_2 : f32;
              if ((podArgs.rotary_mode == 1i)) {
                let freq_1 : f32 = ((f32(q_rope_position_ptr[((((iterator * 16i) + (((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) / 96i)) + L_kv_base) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale) / pow(podArgs.rope_theta, (f32(((((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) % 48i) * 2i)) / 9.600000e+01f)));
                var condval_3 : f32;
                if (((((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) % 96i) < 48i)) {
                  condval_3 = (k_ptr[((((((iterator * 12288i) + ((((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) / 96i) * 768i)) + (L_kv_base * 768i)) + (i32(blockIdx.y) * 96i)) + (((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) % 96i)) + 48i)] * -1.000000e+00f);
} else {
                  condval_3 = k_ptr[((((((iterator * 12288i) + ((((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) / 96i) * 768i)) + (L_kv_base * 768i)) + (i32(blockIdx.y) * 96i)) + (((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) % 96i)) - 48i)];
}
                condval_2 = fma(sin(freq_1), condval_3, (cos(freq_1) * k_ptr[(((((iterator * 12288i) + ((((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) / 96i) * 768i)) + (L_kv_base * 768i)) + (i32(blockIdx.y) * 96i)) + (((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) % 96i))]));
} else {
                condval_2 = k_ptr[(((((iterator * 12288i) + ((((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) / 96i) * 768i)) + (L_kv_base * 768i)) + (i32(blockIdx.y) * 96i)) + (((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) % 96i))];
}
              K_smem[((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s)] = condval_2;
              V_smem[((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s)] = v_ptr[(((((iterator * 12288i) + ((((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) / 96i) * 768i)) + (L_kv_base * 768i)) + (i32(blockIdx.y) * 96i)) + (((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s) % 96i))];
            } else {
              K_smem[((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s)] = 0.000000e+00f;
              V_smem[((((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + lz_ly_fused_3_s)] = 0.000000e+00f;
            }
          }
        }
        workgroupBarrier();
        for (var lj_1_init : i32 = 0i; lj_1_init < 2i; lj_1_init++) {
          S_local[lj_1_init] = 0.000000e+00f;
        }
        for (var lk_0 : i32 = 0i; lk_0 < 12i; lk_0++) {
          for (var lj_1_1 : i32 = 0i; lj_1_1 < 2i; lj_1_1++) {
            for (var lk_1 : i32 = 0i; lk_1 < 8i; lk_1++) {
              let cse_v16 : i32 = (lk_0 * 8i);
              S_local[lj_1_1] = fma(((Q_smem[((((i32(threadIdx.y) * 384i) + ((i32(threadIdx.x)>>3u) * 96i)) + (lk_0 * 8i)) + lk_1)] * K_smem[(((((i32(threadIdx.x) & 7i) * 192i) + (lj_1_1 * 96i)) + (lk_0 * 8i)) + lk_1)]) * podArgs.sm_scale), 1.442695e+00f, S_local[lj_1_1]);
            }
          }
        }
        workgroupBarrier();
        for (var lj_1_2 : i32 = 0i; lj_1_2 < 2i; lj_1_2++) {
          K_smem[(((i32(threadIdx.y) * 64i) + (i32(threadIdx.x) * 2i)) + lj_1_2)] = S_local[lj_1_2];
        }
        workgroupBarrier();
        let row_1 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        let cse_v18 : i32 = (b_idx_1 + podArgs.mn_indptr_elem_offset);
        let cse_v19 : i32 = (iterator * 32i);
        let cse_v25 : i32 = ((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i);
        let cse_v27 : i32 = ((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i));
        let cse_v38 : i32 = ((i32(threadIdx.y) * 16i) + (((LH_start + i32(threadIdx.x))>>2u) * 2i));
        if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
          m_prev[0i] = m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))];
          m_new[0i] = m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))];
          let row_ : i32 = ((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u));
          for (var j : i32 = 0i; j < 16i; j++) {
            let cse_v24 : i32 = ((iterator * 16i) + j);
            let cse_v26 : i32 = ((iterator * 32i) + (j * 2i));
            if ((((iterator * 16i) + j) < kv_chunk_len[0i]) && ((((iterator * 16i) + j) < ((kv_chunk_len[0i] + mn_indptr_ptr[(b_idx_1 + podArgs.mn_indptr_elem_offset)]) - mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)])) || ((mask_ptr[(((((iterator * 32i) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (j * 2i)) + podArgs.mask_elem_offset) - (kv_chunk_len[0i] * 2i))] <= mask_ptr[((((((i32(threadIdx.y) * 16i) + (((LH_start + i32(threadIdx.x))>>2u) * 2i)) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.mask_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))]) && (mask_ptr[((((((i32(threadIdx.y) * 16i) + (((LH_start + i32(threadIdx.x))>>2u) * 2i)) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.mask_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))] < mask_ptr[((((((iterator * 32i) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (j * 2i)) + podArgs.mask_elem_offset) + 1i) - (kv_chunk_len[0i] * 2i))])))) {
              m_new[0i] = max(m_new[0i], K_smem[(((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j)]);
            }
          }
          d_new[0i] = (d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] * exp2((m_prev[0i] - m_new[0i])));
        }
        let row_2 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        for (var j_1 : i32 = 0i; j_1 < 16i; j_1++) {
          workgroupBarrier();
          if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
            let row__1 : i32 = ((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u));
            let cse_v28 : i32 = ((iterator * 16i) + j_1);
            let cse_v29 : i32 = ((iterator * 32i) + (j_1 * 2i));
            let cse_v34 : i32 = (((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j_1);
            if ((((iterator * 16i) + j_1) < kv_chunk_len[0i]) && ((((iterator * 16i) + j_1) < ((kv_chunk_len[0i] + mn_indptr_ptr[(b_idx_1 + podArgs.mn_indptr_elem_offset)]) - mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)])) || ((mask_ptr[(((((iterator * 32i) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (j_1 * 2i)) + podArgs.mask_elem_offset) - (kv_chunk_len[0i] * 2i))] <= mask_ptr[((((((i32(threadIdx.y) * 16i) + (((LH_start + i32(threadIdx.x))>>2u) * 2i)) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.mask_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))]) && (mask_ptr[((((((i32(threadIdx.y) * 16i) + (((LH_start + i32(threadIdx.x))>>2u) * 2i)) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.mask_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))] < mask_ptr[((((((iterator * 32i) + (mn_indptr_ptr[((b_idx_1 + podArgs.mn_indptr_elem_offset) + 1i)] * 2i)) + (j_1 * 2i)) + podArgs.mask_elem_offset) + 1i) - (kv_chunk_len[0i] * 2i))])))) {
              K_smem[(((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j_1)] = exp2((K_smem[(((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j_1)] - m_new[0i]));
            } else {
              K_smem[(((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j_1)] = exp2((-5.000000e+04f - m_new[0i]));
            }
          }
        }
        let row_3 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        workgroupBarrier();
        if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
          for (var j_2 : i32 = 0i; j_2 < 16i; j_2++) {
            d_new[0i] = (d_new[0i] + K_smem[(((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j_2)]);
          }
          m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = m_new[0i];
          d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = d_new[0i];
          m_prev_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = m_prev[0i];
        }
        workgroupBarrier();
        for (var li_1_init : i32 = 0i; li_1_init < 3i; li_1_init++) {
          for (var lj_1_init_1 : i32 = 0i; lj_1_init_1 < 4i; lj_1_init_1++) {
            let cse_v42 : i32 = (((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + li_1_init);
            if (((((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + li_1_init) < 16i) && (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 9i)) {
              let cse_v30 : i32 = ((li_1_init * 4i) + lj_1_init_1);
              O_local[((li_1_init * 4i) + lj_1_init_1)] = (O_local[((li_1_init * 4i) + lj_1_init_1)] * exp2((m_prev_smem[(((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + li_1_init)] - m_smem[(((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + li_1_init)])));
            }
          }
        }
        for (var lk_0_1 : i32 = 0i; lk_0_1 < 2i; lk_0_1++) {
          for (var lk_1_1 : i32 = 0i; lk_1_1 < 8i; lk_1_1++) {
            for (var li_1_1 : i32 = 0i; li_1_1 < 3i; li_1_1++) {
              for (var lj_1_3 : i32 = 0i; lj_1_3 < 4i; lj_1_3++) {
                if (((((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + li_1_1) < 16i) && (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 9i)) {
                  let cse_v31 : i32 = ((li_1_1 * 4i) + lj_1_3);
                  O_local[((li_1_1 * 4i) + lj_1_3)] = fma(K_smem[(((((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 48i) + (li_1_1 * 16i)) + (lk_0_1 * 8i)) + lk_1_1)], V_smem[((((lk_0_1 * 768i) + (lk_1_1 * 96i)) + ((((i32(threadIdx.y) * 32i) + i32(threadIdx.x)) % 24i) * 4i)) + lj_1_3)], O_local[((li_1_1 * 4i) + lj_1_3)]);
                }
              }
            }
          }
        }
      }
      for (var li_1_2 : i32 = 0i; li_1_2 < 3i; li_1_2++) {
        for (var lj_1_4 : i32 = 0i; lj_1_4 < 4i; lj_1_4++) {
          let cse_v43 : i32 = (((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + li_1_2);
          if (((((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + li_1_2) < 16i) && (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 9i)) {
            let cse_v46 : i32 = ((((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + LH_start) + li_1_2);
            let cur_L_2 : i32 = ((((((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + LH_start) + li_1_2)>>2u) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]);
            let cur_H_qo_1 : i32 = ((i32(blockIdx.y) * 4i) + (((((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + LH_start) + li_1_2) & 3i));
            if (cur_L_2 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
              output_ptr[(((((cur_L_2 * 3072i) + (i32(blockIdx.y) * 384i)) + ((((((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + li_1_2) + (LH_start & 3i)) & 3i) * 96i)) + ((((i32(threadIdx.y) * 32i) + i32(threadIdx.x)) % 24i) * 4i)) + lj_1_4)] = (O_local[((li_1_2 * 4i) + lj_1_4)] / d_smem[(((((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u)) / 3i) * 3i) + li_1_2)]);
            }
          }
        }
      }
      if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
        let cur_L_3 : i32 = (((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u)) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]);
        let cur_H_qo_2 : i32 = ((i32(blockIdx.y) * 4i) + ((LH_start + i32(threadIdx.x)) & 3i));
        if (cur_L_3 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          lse_ptr[(((cur_L_3 * 32i) + (i32(blockIdx.y) * 4i)) + ((i32(threadIdx.x) + (LH_start & 3i)) & 3i))] = (m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] + log2(d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))]));
        }
      }
      tile_id[0i] = (tile_id[0i] + 16i);
    }
  }
}


