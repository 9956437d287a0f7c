// apache-tvm 0.27.0.post1, target webgpu: _attention_prefill(h_kv=1, h_q=32, d=128, dtype='float16', sliding_window=False, rope_scaling={}, page_size=16)
// Function: batch_prefill_paged_kv_kernel
//----------------------------------------
// Function: batch_prefill_paged_kv_kernel
//----------------------------------------
enable f16;

@group(0) @binding(0) var<storage, read> k_rope_pos_offset_ptr : array<i32>;
@group(0) @binding(1) var<storage, read> length_info_ptr : array<i32>;
@group(0) @binding(2) var<storage, read_write> lse_ptr : array<f32>;
@group(0) @binding(3) var<storage, read_write> output_ptr : array<f16>;
@group(0) @binding(4) var<storage, read> page_indptr_ptr : array<i32>;
@group(0) @binding(5) var<storage, read> page_values_ptr : array<i32>;
@group(0) @binding(6) var<storage, read> pages_ptr : array<f16>;
@group(0) @binding(7) var<storage, read> q_ptr : array<f16>;
@group(0) @binding(8) var<storage, read> q_indptr_ptr : array<i32>;
@group(0) @binding(9) var<storage, read> q_rope_position_ptr : array<i32>;

struct PODArgs {
  batch_size: i32,
  causal: i32,
  k_rope_pos_offset_elem_offset: i32,
  length_info_elem_offset: i32,
  page_indptr_elem_offset: i32,
  page_values_elem_offset: i32,
  pages_elem_offset: i32,
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
var<workgroup> V_smem : array<vec4<f16>, 1024>;
var<workgroup> S_smem : array<f32, 1024>;
var<workgroup> m_prev_smem : array<f32, 32>;
@compute @workgroup_size(32, 4, 1)
fn batch_prefill_paged_kv_kernel(
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
  var O_local : array<vec4<f32>, 8>;
  var S_local : array<vec4<f32>, 2>;
  var m_prev : array<f32, 1>;
  var m_new : array<f32, 1>;
  var d_new : array<f32, 1>;
  tile_id[0i] = v__1;
  batch_idx[0i] = 0i;
  batch_rows[0i] = ((q_indptr_ptr[(podArgs.q_indptr_elem_offset + 1i)] * 32i) - (q_indptr_ptr[podArgs.q_indptr_elem_offset] * 32i));
  batch_tiles[0i] = ((batch_rows[0i] + 31i)>>5u);
  while (true) {
    if (!(((batch_idx[0i] < podArgs.batch_size)))) { break; }
    while (true) {
      if (!(((batch_tiles[0i] <= tile_id[0i]) && (batch_idx[0i] < podArgs.batch_size)))) { break; }
      tile_id[0i] = (tile_id[0i] - batch_tiles[0i]);
      batch_idx[0i] = (batch_idx[0i] + 1i);
      if (batch_idx[0i] < podArgs.batch_size) {
        let b_idx : i32 = batch_idx[0i];
        let cse_v3 : i32 = (b_idx + podArgs.q_indptr_elem_offset);
        batch_rows[0i] = ((q_indptr_ptr[((b_idx + podArgs.q_indptr_elem_offset) + 1i)] * 32i) - (q_indptr_ptr[(b_idx + podArgs.q_indptr_elem_offset)] * 32i));
        batch_tiles[0i] = ((batch_rows[0i] + 31i)>>5u);
      }
    }
    if ((batch_idx[0i] < podArgs.batch_size)) {
      let b_idx_1 : i32 = batch_idx[0i];
      let LH_start : i32 = (tile_id[0i] * 32i);
      let cse_v4 : i32 = (b_idx_1 + podArgs.q_indptr_elem_offset);
      let q_indptr_val : i32 = q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)];
      let cse_v5 : i32 = (b_idx_1 + podArgs.page_indptr_elem_offset);
      let cur_page_indptr_begin : i32 = page_indptr_ptr[(b_idx_1 + podArgs.page_indptr_elem_offset)];
      let cur_page_indptr_end : i32 = page_indptr_ptr[((b_idx_1 + podArgs.page_indptr_elem_offset) + 1i)];
      var condval : i32;
      if ((cur_page_indptr_begin != cur_page_indptr_end)) {
        condval = ((((cur_page_indptr_end * 16i) + length_info_ptr[(b_idx_1 + podArgs.length_info_elem_offset)]) - (cur_page_indptr_begin * 16i)) - 16i);
} else {
        condval = 0i;
}
      kv_chunk_len[0i] = condval;
      workgroupBarrier();
      let cse_v24 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
      let row : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
      if (i32(threadIdx.y) < 1i) {
        m_smem[i32(threadIdx.x)] = -5.000000e+04f;
        d_smem[i32(threadIdx.x)] = 1.000000e+00f;
      }
      for (var li_1 : i32 = 0i; li_1 < 4i; li_1++) {
        let cse_v6 : i32 = (li_1 * 2i);
        O_local[(li_1 * 2i)] = vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f);
        O_local[((li_1 * 2i) + 1i)] = vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f);
      }
      workgroupBarrier();
      let cse_v7 : i32 = (i32(threadIdx.y) * 4i);
      let cse_v8 : i32 = (i32(threadIdx.x)>>3u);
      let cse_v9 : i32 = (LH_start & 31i);
      let cse_v10 : i32 = (i32(threadIdx.x) & 7i);
      let cse_v12 : i32 = (i32(threadIdx.y) * 512i);
      let cse_v25 : i32 = ((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i);
      let cse_v26 : i32 = ((i32(threadIdx.x) & 7i) * 8i);
      let cse_v27 : i32 = ((i32(threadIdx.x)>>3u) * 128i);
      let cse_v28 : i32 = ((i32(threadIdx.x) & 7i) * 4i);
      for (var li_0 : i32 = 0i; li_0 < 2i; li_0++) {
        for (var lj_0_0 : i32 = 0i; lj_0_0 < 4i; lj_0_0++) {
          let cse_v36 : i32 = (((li_0 * 16i) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
          let cse_v43 : i32 = ((((li_0 * 16i) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + LH_start);
          let cse_v57 : i32 = ((((((li_0 * 16i) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + LH_start)>>5u) + q_indptr_val);
          let cur_L : i32 = ((((((li_0 * 16i) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + LH_start)>>5u) + q_indptr_val);
          let cur_H_qo : i32 = (((((li_0 * 16i) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + LH_start) & 31i);
          let cse_v11 : i32 = (li_0 * 2048i);
          let cse_v13 : i32 = (lj_0_0 * 32i);
          let cse_v52 : i32 = (((((li_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
          if (((((((li_0 * 16i) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + LH_start)>>5u) + q_indptr_val) < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
            var condval_1 : vec4<f16>;
            if ((podArgs.rotary_mode == 1i)) {
              let freq : vec4<f32> = (vec4<f32>((f32(q_rope_position_ptr[((((((((li_0 * 16i) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + (LH_start & 31i))>>5u) + (LH_start>>5u)) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[((((((((li_0 * 16i) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + (LH_start & 31i))>>5u) + (LH_start>>5u)) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[((((((((li_0 * 16i) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + (LH_start & 31i))>>5u) + (LH_start>>5u)) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[((((((((li_0 * 16i) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + (LH_start & 31i))>>5u) + (LH_start>>5u)) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale)) / pow(vec4<f32>(podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta), (vec4<f32>(vec4<i32>(((((lj_0_0 & 1i) * 64i) + ((i32(threadIdx.x) & 7i) * 8i)))+(2i*0), ((((lj_0_0 & 1i) * 64i) + ((i32(threadIdx.x) & 7i) * 8i)))+(2i*1), ((((lj_0_0 & 1i) * 64i) + ((i32(threadIdx.x) & 7i) * 8i)))+(2i*2), ((((lj_0_0 & 1i) * 64i) + ((i32(threadIdx.x) & 7i) * 8i)))+(2i*3))) / vec4<f32>(1.280000e+02f, 1.280000e+02f, 1.280000e+02f, 1.280000e+02f))));
              var condval_2 : vec4<f16>;
              if ((lj_0_0 < 2i)) {
                let v__2 : i32 = ((((((((q_indptr_val * 4096i) + (li_0 * 2048i)) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (LH_start * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i)) + 64i);
                condval_2 = (vec4<f16>(q_ptr[v__2 + 0], q_ptr[v__2 + 1], q_ptr[v__2 + 2], q_ptr[v__2 + 3]) * vec4<f16>(-1.000000e+00h, -1.000000e+00h, -1.000000e+00h, -1.000000e+00h));
} else {
                let v__3 : i32 = ((((((((q_indptr_val * 4096i) + (li_0 * 2048i)) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (LH_start * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i)) - 64i);
                condval_2 = vec4<f16>(q_ptr[v__3 + 0], q_ptr[v__3 + 1], q_ptr[v__3 + 2], q_ptr[v__3 + 3]);
}
              let v__4 : i32 = (((((((q_indptr_val * 4096i) + (li_0 * 2048i)) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (LH_start * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
              condval_1 = vec4<f16>(fma(sin(freq), vec4<f32>(condval_2), (cos(freq) * vec4<f32>(vec4<f16>(q_ptr[v__4 + 0], q_ptr[v__4 + 1], q_ptr[v__4 + 2], q_ptr[v__4 + 3])))));
} else {
              let v__5 : i32 = (((((((q_indptr_val * 4096i) + (li_0 * 2048i)) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (LH_start * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
              condval_1 = vec4<f16>(q_ptr[v__5 + 0], q_ptr[v__5 + 1], q_ptr[v__5 + 2], q_ptr[v__5 + 3]);
}
            let v__6 : i32 = (((((li_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
            Q_smem[v__6 + 0] = condval_1[0];
            Q_smem[v__6 + 1] = condval_1[1];
            Q_smem[v__6 + 2] = condval_1[2];
            Q_smem[v__6 + 3] = condval_1[3];
          } else {
            let v__7 : i32 = (((((li_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
            Q_smem[v__7 + 0] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[0];
            Q_smem[v__7 + 1] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[1];
            Q_smem[v__7 + 2] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[2];
            Q_smem[v__7 + 3] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[3];
          }
        }
      }
      workgroupBarrier();
      let cse_v19 : i32 = (LH_start + i32(threadIdx.x));
      let cse_v21 : i32 = (i32(threadIdx.x)>>4u);
      let cse_v22 : i32 = (i32(threadIdx.x) & 15i);
      let cse_v31 : i32 = ((LH_start + i32(threadIdx.x))>>5u);
      let cse_v41 : i32 = ((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i));
      for (var iterator : i32 = 0i; iterator < ((kv_chunk_len[0i] + 31i)>>5u); iterator++) {
        let cse_v14 : i32 = (iterator * 32i);
        let L_kv_start : i32 = (iterator * 32i);
        let cse_v15 : i32 = (iterator * 2i);
        let cse_v16 : i32 = i32(threadIdx.x);
        let cse_v29 : i32 = ((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u));
        let cse_v30 : i32 = (i32(threadIdx.y) * 512i);
        let cse_v37 : i32 = ((i32(threadIdx.x)>>3u) * 128i);
        let cse_v38 : i32 = ((i32(threadIdx.x) & 7i) * 4i);
        for (var lz_0 : i32 = 0i; lz_0 < 2i; lz_0++) {
          for (var ly_0_0 : i32 = 0i; ly_0_0 < 4i; ly_0_0++) {
            let cse_v44 : i32 = ((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
            let cur_L_1 : i32 = ((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
            let cse_v53 : i32 = (((((lz_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
            if (((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) < kv_chunk_len[0i]) {
              let seq_offset : i32 = ((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
              let page_no : i32 = page_values_ptr[((((iterator * 2i) + lz_0) + cur_page_indptr_begin) + podArgs.page_values_elem_offset)];
              let page_offset : i32 = ((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u));
              var condval_3 : vec4<f16>;
              if ((podArgs.rotary_mode == 1i)) {
                let freq_1 : vec4<f32> = (vec4<f32>((f32((((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + k_rope_pos_offset_ptr[(b_idx_1 + podArgs.k_rope_pos_offset_elem_offset)])) * podArgs.rope_scale), (f32((((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + k_rope_pos_offset_ptr[(b_idx_1 + podArgs.k_rope_pos_offset_elem_offset)])) * podArgs.rope_scale), (f32((((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + k_rope_pos_offset_ptr[(b_idx_1 + podArgs.k_rope_pos_offset_elem_offset)])) * podArgs.rope_scale), (f32((((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) + k_rope_pos_offset_ptr[(b_idx_1 + podArgs.k_rope_pos_offset_elem_offset)])) * podArgs.rope_scale)) / pow(vec4<f32>(podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta, podArgs.rope_theta), (vec4<f32>(vec4<i32>(((((ly_0_0 & 1i) * 64i) + ((i32(threadIdx.x) & 7i) * 8i)))+(2i*0), ((((ly_0_0 & 1i) * 64i) + ((i32(threadIdx.x) & 7i) * 8i)))+(2i*1), ((((ly_0_0 & 1i) * 64i) + ((i32(threadIdx.x) & 7i) * 8i)))+(2i*2), ((((ly_0_0 & 1i) * 64i) + ((i32(threadIdx.x) & 7i) * 8i)))+(2i*3))) / vec4<f32>(1.280000e+02f, 1.280000e+02f, 1.280000e+02f, 1.280000e+02f))));
                var condval_4 : vec4<f16>;
                if ((ly_0_0 < 2i)) {
                  let v__8 : i32 = (((((((page_no * 4096i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i)) + podArgs.pages_elem_offset) + 64i);
                  condval_4 = (vec4<f16>(pages_ptr[v__8 + 0], pages_ptr[v__8 + 1], pages_ptr[v__8 + 2], pages_ptr[v__8 + 3]) * vec4<f16>(-1.000000e+00h, -1.000000e+00h, -1.000000e+00h, -1.000000e+00h));
} else {
                  let v__9 : i32 = (((((((page_no * 4096i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i)) + podArgs.pages_elem_offset) - 64i);
                  condval_4 = vec4<f16>(pages_ptr[v__9 + 0], pages_ptr[v__9 + 1], pages_ptr[v__9 + 2], pages_ptr[v__9 + 3]);
}
                let v__10 : i32 = ((((((page_no * 4096i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i)) + podArgs.pages_elem_offset);
                condval_3 = vec4<f16>(fma(sin(freq_1), vec4<f32>(condval_4), (cos(freq_1) * vec4<f32>(vec4<f16>(pages_ptr[v__10 + 0], pages_ptr[v__10 + 1], pages_ptr[v__10 + 2], pages_ptr[v__10 + 3])))));
} else {
                let v__11 : i32 = ((((((page_no * 4096i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i)) + podArgs.pages_elem_offset);
                condval_3 = vec4<f16>(pages_ptr[v__11 + 0], pages_ptr[v__11 + 1], pages_ptr[v__11 + 2], pages_ptr[v__11 + 3]);
}
              let v__12 : i32 = (((((lz_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
              K_smem[v__12 + 0] = condval_3[0];
              K_smem[v__12 + 1] = condval_3[1];
              K_smem[v__12 + 2] = condval_3[2];
              K_smem[v__12 + 3] = condval_3[3];
            } else {
              let v__13 : i32 = (((((lz_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
              K_smem[v__13 + 0] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[0];
              K_smem[v__13 + 1] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[1];
              K_smem[v__13 + 2] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[2];
              K_smem[v__13 + 3] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[3];
            }
          }
        }
        workgroupBarrier();
        for (var lz_0_1 : i32 = 0i; lz_0_1 < 2i; lz_0_1++) {
          for (var ly_0_0_1 : i32 = 0i; ly_0_0_1 < 4i; ly_0_0_1++) {
            let cse_v45 : i32 = ((((iterator * 32i) + (lz_0_1 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
            let cur_L_2 : i32 = ((((iterator * 32i) + (lz_0_1 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
            let cse_v54 : i32 = (((((lz_0_1 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>3u) * 32i)) + (ly_0_0_1 * 8i)) + (i32(threadIdx.x) & 7i));
            if (((((iterator * 32i) + (lz_0_1 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) < kv_chunk_len[0i]) {
              let seq_offset_1 : i32 = ((((iterator * 32i) + (lz_0_1 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
              let page_no_1 : i32 = page_values_ptr[((((iterator * 2i) + lz_0_1) + cur_page_indptr_begin) + podArgs.page_values_elem_offset)];
              let page_offset_1 : i32 = ((i32(threadIdx.y) * 4i) + (i32(threadIdx.x)>>3u));
              let v__14 : i32 = (((((((page_no_1 * 4096i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0_1 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i)) + podArgs.pages_elem_offset) + 2048i);
              V_smem[(((((lz_0_1 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>3u) * 32i)) + (ly_0_0_1 * 8i)) + (i32(threadIdx.x) & 7i))] = vec4<f16>(pages_ptr[v__14 + 0], pages_ptr[v__14 + 1], pages_ptr[v__14 + 2], pages_ptr[v__14 + 3]);
            } else {
              V_smem[(((((lz_0_1 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>3u) * 32i)) + (ly_0_0_1 * 8i)) + (i32(threadIdx.x) & 7i))] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h);
            }
          }
        }
        workgroupBarrier();
        S_local[0i] = vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f);
        S_local[1i] = vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f);
        for (var lk_0 : i32 = 0i; lk_0 < 8i; lk_0++) {
          let cse_v17 : i32 = (lk_0 * 16i);
          let cse_v39 : i32 = (((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i));
          let cse_v46 : i32 = (((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i));
          for (var lk_1 : i32 = 0i; lk_1 < 16i; lk_1++) {
            let v__15 : vec4<i32> = vec4<i32>((((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1))+(128i*0), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1))+(128i*1), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1))+(128i*2), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1))+(128i*3));
            S_local[0i] = fma(((vec4<f32>(f32(Q_smem[((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1)]), f32(Q_smem[((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1)]), f32(Q_smem[((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1)]), f32(Q_smem[((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1)])) * vec4<f32>(vec4<f16>(K_smem[v__15[0]], K_smem[v__15[1]], K_smem[v__15[2]], K_smem[v__15[3]]))) * vec4<f32>(podArgs.sm_scale, podArgs.sm_scale, podArgs.sm_scale, podArgs.sm_scale)), vec4<f32>(1.442695e+00f, 1.442695e+00f, 1.442695e+00f, 1.442695e+00f), S_local[0i]);
          }
          for (var lk_1_1 : i32 = 0i; lk_1_1 < 16i; lk_1_1++) {
            let v__16 : vec4<i32> = vec4<i32>((((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1_1))+(128i*0), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1_1))+(128i*1), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1_1))+(128i*2), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1_1))+(128i*3));
            S_local[1i] = fma(((vec4<f32>(f32(Q_smem[(((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1_1) + 128i)]), f32(Q_smem[(((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1_1) + 128i)]), f32(Q_smem[(((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1_1) + 128i)]), f32(Q_smem[(((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1_1) + 128i)])) * vec4<f32>(vec4<f16>(K_smem[v__16[0]], K_smem[v__16[1]], K_smem[v__16[2]], K_smem[v__16[3]]))) * vec4<f32>(podArgs.sm_scale, podArgs.sm_scale, podArgs.sm_scale, podArgs.sm_scale)), vec4<f32>(1.442695e+00f, 1.442695e+00f, 1.442695e+00f, 1.442695e+00f), S_local[1i]);
          }
        }
        workgroupBarrier();
        let cse_v18 : i32 = (i32(threadIdx.y) * 256i);
        for (var li_1_1 : i32 = 0i; li_1_1 < 2i; li_1_1++) {
          let v__17 : i32 = ((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>3u) * 64i)) + (li_1_1 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
          S_smem[v__17 + 0] = S_local[li_1_1][0];
          S_smem[v__17 + 1] = S_local[li_1_1][1];
          S_smem[v__17 + 2] = S_local[li_1_1][2];
          S_smem[v__17 + 3] = S_local[li_1_1][3];
        }
        workgroupBarrier();
        let row_1 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        let cse_v20 : i32 = (i32(threadIdx.x) * 32i);
        let cse_v40 : i32 = (((LH_start + i32(threadIdx.x))>>5u) + i32(threadIdx.y));
        if (i32(threadIdx.y) < 1i) {
          m_prev[0i] = m_smem[i32(threadIdx.x)];
          m_new[0i] = m_smem[i32(threadIdx.x)];
          let row_ : i32 = (((LH_start + i32(threadIdx.x))>>5u) + i32(threadIdx.y));
          for (var j : i32 = 0i; j < 32i; j++) {
            let cse_v32 : i32 = ((iterator * 32i) + j);
            var condval_5 : bool;
            if ((0i < podArgs.causal)) {
              condval_5 = (((iterator * 32i) + j) <= ((((((LH_start + i32(threadIdx.x))>>5u) + kv_chunk_len[0i]) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]) + i32(threadIdx.y)) - q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]));
} else {
              condval_5 = (((iterator * 32i) + j) < kv_chunk_len[0i]);
}
            if (condval_5) {
              m_new[0i] = max(m_new[0i], S_smem[((i32(threadIdx.x) * 32i) + j)]);
            }
          }
          d_new[0i] = (d_smem[i32(threadIdx.x)] * exp2((m_prev[0i] - m_new[0i])));
        }
        let row_2 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        for (var j_1 : i32 = 0i; j_1 < 32i; j_1++) {
          workgroupBarrier();
          if (i32(threadIdx.y) < 1i) {
            let row__1 : i32 = (((LH_start + i32(threadIdx.x))>>5u) + i32(threadIdx.y));
            let cse_v33 : i32 = ((iterator * 32i) + j_1);
            let cse_v34 : i32 = ((i32(threadIdx.x) * 32i) + j_1);
            var condval_6 : bool;
            if ((0i < podArgs.causal)) {
              condval_6 = (((iterator * 32i) + j_1) <= ((((((LH_start + i32(threadIdx.x))>>5u) + kv_chunk_len[0i]) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]) + i32(threadIdx.y)) - q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]));
} else {
              condval_6 = (((iterator * 32i) + j_1) < kv_chunk_len[0i]);
}
            if (condval_6) {
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
        O_local[0i] = (O_local[0i] * vec4<f32>(exp2((m_prev_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))] - m_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))])), exp2((m_prev_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))] - m_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))])), exp2((m_prev_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))] - m_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))])), exp2((m_prev_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))] - m_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))]))));
        O_local[1i] = (O_local[1i] * vec4<f32>(exp2((m_prev_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))] - m_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))])), exp2((m_prev_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))] - m_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))])), exp2((m_prev_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))] - m_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))])), exp2((m_prev_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))] - m_smem[((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i))]))));
        let cse_v47 : i32 = (((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i);
        O_local[2i] = (O_local[2i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)]))));
        O_local[3i] = (O_local[3i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)]))));
        let cse_v48 : i32 = (((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i);
        O_local[4i] = (O_local[4i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)]))));
        O_local[5i] = (O_local[5i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)]))));
        let cse_v49 : i32 = (((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i);
        O_local[6i] = (O_local[6i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)]))));
        O_local[7i] = (O_local[7i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)]))));
        for (var lk_0_1 : i32 = 0i; lk_0_1 < 2i; lk_0_1++) {
          for (var lk_1_2 : i32 = 0i; lk_1_2 < 16i; lk_1_2++) {
            let cse_v42 : i32 = (((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
            let cse_v55 : i32 = ((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2);
            O_local[0i] = fma(vec4<f32>(S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)]), vec4<f32>(V_smem[(((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i))]), O_local[0i]);
            let cse_v50 : i32 = ((((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i);
            O_local[1i] = fma(vec4<f32>(S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)]), vec4<f32>(V_smem[((((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)]), O_local[1i]);
            let cse_v58 : i32 = (((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i);
            O_local[2i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)]), vec4<f32>(V_smem[(((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i))]), O_local[2i]);
            O_local[3i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)]), vec4<f32>(V_smem[((((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)]), O_local[3i]);
            let cse_v59 : i32 = (((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i);
            O_local[4i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)]), vec4<f32>(V_smem[(((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i))]), O_local[4i]);
            O_local[5i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)]), vec4<f32>(V_smem[((((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)]), O_local[5i]);
            let cse_v60 : i32 = (((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i);
            O_local[6i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)]), vec4<f32>(V_smem[(((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i))]), O_local[6i]);
            O_local[7i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)]), vec4<f32>(V_smem[((((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)]), O_local[7i]);
          }
        }
      }
      for (var li_1_2 : i32 = 0i; li_1_2 < 4i; li_1_2++) {
        let cse_v56 : i32 = ((((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + LH_start) + li_1_2);
        let cse_v61 : i32 = (((((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + LH_start) + li_1_2)>>5u);
        let cur_L_3 : i32 = ((((((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + LH_start) + li_1_2)>>5u) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]);
        let cse_v62 : i32 = (((((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + LH_start) + li_1_2) & 31i);
        let cur_H_qo_1 : i32 = (((((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + LH_start) + li_1_2) & 31i);
        let cse_v23 : i32 = (li_1_2 * 2i);
        let cse_v35 : i32 = ((i32(threadIdx.x) & 15i) * 8i);
        let cse_v51 : i32 = (((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2);
        let cse_v63 : i32 = ((((((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2) + (LH_start & 31i)) & 31i) * 128i);
        if (cur_L_3 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          let v__18 : i32 = (((cur_L_3 * 4096i) + ((((((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2) + (LH_start & 31i)) & 31i) * 128i)) + ((i32(threadIdx.x) & 15i) * 8i));
          output_ptr[v__18 + 0] = vec4<f16>((O_local[(li_1_2 * 2i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[0];
          output_ptr[v__18 + 1] = vec4<f16>((O_local[(li_1_2 * 2i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[1];
          output_ptr[v__18 + 2] = vec4<f16>((O_local[(li_1_2 * 2i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[2];
          output_ptr[v__18 + 3] = vec4<f16>((O_local[(li_1_2 * 2i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[3];
        }
        let cur_L_4 : i32 = ((((((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + LH_start) + li_1_2)>>5u) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]);
        let cur_H_qo_2 : i32 = (((((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + LH_start) + li_1_2) & 31i);
        if (cur_L_4 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          let v__19 : i32 = ((((cur_L_4 * 4096i) + ((((((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2) + (LH_start & 31i)) & 31i) * 128i)) + ((i32(threadIdx.x) & 15i) * 8i)) + 4i);
          output_ptr[v__19 + 0] = vec4<f16>((O_local[((li_1_2 * 2i) + 1i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[0];
          output_ptr[v__19 + 1] = vec4<f16>((O_local[((li_1_2 * 2i) + 1i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[1];
          output_ptr[v__19 + 2] = vec4<f16>((O_local[((li_1_2 * 2i) + 1i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[2];
          output_ptr[v__19 + 3] = vec4<f16>((O_local[((li_1_2 * 2i) + 1i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[3];
        }
      }
      if (i32(threadIdx.y) < 1i) {
        let cur_L_5 : i32 = ((((LH_start + i32(threadIdx.x))>>5u) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]) + i32(threadIdx.y));
        let cur_H_qo_3 : i32 = ((LH_start + i32(threadIdx.x)) & 31i);
        if (cur_L_5 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          lse_ptr[((cur_L_5 * 32i) + ((i32(threadIdx.x) + (LH_start & 31i)) & 31i))] = (m_smem[i32(threadIdx.x)] + log2(d_smem[i32(threadIdx.x)]));
        }
      }
      tile_id[0i] = (tile_id[0i] + 16i);
    }
  }
}


