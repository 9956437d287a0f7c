// apache-tvm 0.27.0.post1, target webgpu: _attention_prefill(h_kv=2, h_q=6, d=64, dtype='float32', sliding_window=True, rope_scaling={}, page_size=16, sliding_window_size=16)
// Function: batch_prefill_paged_kv_sliding_window_kernel
//----------------------------------------
// Function: batch_prefill_paged_kv_sliding_window_kernel
//----------------------------------------
@group(0) @binding(0) var<storage, read> k_rope_pos_offset_ptr : array<i32>;
@group(0) @binding(1) var<storage, read> length_info_ptr : array<i32>;
@group(0) @binding(2) var<storage, read_write> lse_ptr : array<f32>;
@group(0) @binding(3) var<storage, read_write> output_ptr : array<f32>;
@group(0) @binding(4) var<storage, read> page_indptr_ptr : array<i32>;
@group(0) @binding(5) var<storage, read> page_values_ptr : array<i32>;
@group(0) @binding(6) var<storage, read> pages_ptr : array<f32>;
@group(0) @binding(7) var<storage, read> q_ptr : array<f32>;
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

var<workgroup> m_smem : array<f32, 16>;
var<workgroup> d_smem : array<f32, 16>;
var<workgroup> Q_smem : array<f32, 1024>;
var<workgroup> K_smem : array<f32, 1024>;
var<workgroup> V_smem : array<vec2<f32>, 512>;
var<workgroup> m_prev_smem : array<f32, 16>;
@compute @workgroup_size(32, 4, 1)
fn batch_prefill_paged_kv_sliding_window_kernel(
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
  var O_local : array<vec2<f32>, 4>;
  var S_local : array<vec2<f32>, 1>;
  var m_prev : array<f32, 1>;
  var m_new : array<f32, 1>;
  var d_new : array<f32, 1>;
  tile_id[0i] = v__1;
  batch_idx[0i] = 0i;
  batch_rows[0i] = ((q_indptr_ptr[(podArgs.q_indptr_elem_offset + 1i)] * 3i) - (q_indptr_ptr[podArgs.q_indptr_elem_offset] * 3i));
  batch_tiles[0i] = ((batch_rows[0i] + 15i)>>4u);
  while (true) {
    if (!(((batch_idx[0i] < podArgs.batch_size)))) { break; }
    while (true) {
      if (!(((batch_tiles[0i] <= tile_id[0i]) && (batch_idx[0i] < podArgs.batch_size)))) { break; }
      tile_id[0i] = (tile_id[0i] - batch_tiles[0i]);
      batch_idx[0i] = (batch_idx[0i] + 1i);
      if (batch_idx[0i] < podArgs.batch_size) {
        let b_idx : i32 = batch_idx[0i];
        let cse_v3 : i32 = (b_idx + podArgs.q_indptr_elem_offset);
        batch_rows[0i] = ((q_indptr_ptr[((b_idx + podArgs.q_indptr_elem_offset) + 1i)] * 3i) - (q_indptr_ptr[(b_idx + podArgs.q_indptr_elem_offset)] * 3i));
        batch_tiles[0i] = ((batch_rows[0i] + 15i)>>4u);
      }
    }
    if ((batch_idx[0i] < podArgs.batch_size)) {
      let b_idx_1 : i32 = batch_idx[0i];
      let LH_start : i32 = (tile_id[0i] * 16i);
      let cse_v4 : i32 = (b_idx_1 + podArgs.q_indptr_elem_offset);
      let q_indptr_val : i32 = q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)];
      let cse_v5 : i32 = (b_idx_1 + podArgs.page_indptr_elem_offset);
      let cur_page_indptr_begin : i32 = page_indptr_ptr[(b_idx_1 + podArgs.page_indptr_elem_offset)];
      let cur_page_indptr_end : i32 = page_indptr_ptr[((b_idx_1 + podArgs.page_indptr_elem_offset) + 1i)];
      let cse_v20 : i32 = ((podArgs.batch_size + b_idx_1) + podArgs.length_info_elem_offset);
      let cse_v33 : i32 = (((podArgs.batch_size * 2i) + b_idx_1) + podArgs.length_info_elem_offset);
      var condval : i32;
      if ((cur_page_indptr_begin != cur_page_indptr_end)) {
        condval = ((((((cur_page_indptr_end * 16i) + length_info_ptr[(b_idx_1 + podArgs.length_info_elem_offset)]) + length_info_ptr[(((podArgs.batch_size * 2i) + b_idx_1) + podArgs.length_info_elem_offset)]) - length_info_ptr[((podArgs.batch_size + b_idx_1) + podArgs.length_info_elem_offset)]) - (cur_page_indptr_begin * 16i)) - 16i);
} else {
        condval = 0i;
}
      kv_chunk_len[0i] = condval;
      workgroupBarrier();
      let cse_v6 : i32 = (i32(threadIdx.y) * 32i);
      let cse_v21 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
      let row : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
      let cse_v7 : i32 = (i32(threadIdx.y) * 2i);
      let cse_v8 : i32 = (i32(threadIdx.x)>>4u);
      let cse_v22 : i32 = ((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u));
      if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
        m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = -5.000000e+04f;
        d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = 1.000000e+00f;
      }
      for (var li_1 : i32 = 0i; li_1 < 2i; li_1++) {
        let cse_v9 : i32 = (li_1 * 2i);
        O_local[(li_1 * 2i)] = vec2<f32>(0.000000e+00f, 0.000000e+00f);
        O_local[((li_1 * 2i) + 1i)] = vec2<f32>(0.000000e+00f, 0.000000e+00f);
      }
      workgroupBarrier();
      let cse_v10 : i32 = (i32(blockIdx.y) * 3i);
      let cse_v11 : i32 = ((LH_start % 3i) + (3i & ((LH_start % 3i)>>31u)));
      let cse_v12 : i32 = (i32(threadIdx.x) & 15i);
      let cse_v13 : i32 = (i32(blockIdx.y) * 192i);
      let cse_v15 : i32 = (i32(threadIdx.y) * 128i);
      let cse_v23 : i32 = ((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i);
      let cse_v24 : i32 = ((i32(threadIdx.x) & 15i) * 4i);
      let cse_v25 : vec2<f32> = (vec2<f32>(vec2<i32>((((i32(threadIdx.x) & 15i) * 4i))+(2i*0), (((i32(threadIdx.x) & 15i) * 4i))+(2i*1))) / vec2<f32>(6.400000e+01f, 6.400000e+01f));
      let cse_v26 : i32 = ((i32(threadIdx.x) & 15i) * 2i);
      let cse_v27 : i32 = ((i32(threadIdx.x)>>4u) * 64i);
      for (var li_0 : i32 = 0i; li_0 < 2i; li_0++) {
        for (var lj_0_0 : i32 = 0i; lj_0_0 < 2i; lj_0_0++) {
          let cse_v34 : i32 = (((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
          let cse_v40 : i32 = ((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start);
          let cse_v48 : i32 = ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) / 3i) + ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u));
          let cse_v55 : i32 = (((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) / 3i) + ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u)) + q_indptr_val);
          let cur_L : i32 = (((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) / 3i) + ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u)) + q_indptr_val);
          let cse_v49 : i32 = ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i) + (3i & ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u)));
          let cur_H_qo : i32 = ((i32(blockIdx.y) * 3i) + ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i) + (3i & ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u))));
          let cse_v14 : i32 = (lj_0_0 * 32i);
          let cse_v50 : i32 = (((((li_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
          if ((((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) / 3i) + ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u)) + q_indptr_val) < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
            var condval_1 : vec2<f32>;
            if ((podArgs.rotary_mode == 1i)) {
              let freq : vec2<f32> = (vec2<f32>((f32(q_rope_position_ptr[((((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + ((LH_start % 3i) + (3i & ((LH_start % 3i)>>31u)))) / 3i) + ((LH_start / 3i) + ((LH_start % 3i)>>31u))) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale), (f32(q_rope_position_ptr[((((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + ((LH_start % 3i) + (3i & ((LH_start % 3i)>>31u)))) / 3i) + ((LH_start / 3i) + ((LH_start % 3i)>>31u))) + q_indptr_val) + podArgs.q_rope_position_elem_offset)]) * podArgs.rope_scale)) / pow(vec2<f32>(podArgs.rope_theta, podArgs.rope_theta), (vec2<f32>(vec2<i32>((((i32(threadIdx.x) & 15i) * 4i))+(2i*0), (((i32(threadIdx.x) & 15i) * 4i))+(2i*1))) / vec2<f32>(6.400000e+01f, 6.400000e+01f))));
              var condval_2 : vec2<f32>;
              if ((lj_0_0 < 1i)) {
                let v__2 : i32 = (((((((((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) / 3i) + ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u)) * 384i) + (q_indptr_val * 384i)) + (i32(blockIdx.y) * 192i)) + (((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i) + (3i & ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u))) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 32i);
                condval_2 = (vec2<f32>(q_ptr[v__2 + 0], q_ptr[v__2 + 1]) * vec2<f32>(-1.000000e+00f, -1.000000e+00f));
} else {
                let v__3 : i32 = (((((((((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) / 3i) + ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u)) * 384i) + (q_indptr_val * 384i)) + (i32(blockIdx.y) * 192i)) + (((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i) + (3i & ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u))) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) - 32i);
                condval_2 = vec2<f32>(q_ptr[v__3 + 0], q_ptr[v__3 + 1]);
}
              let v__4 : i32 = ((((((((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) / 3i) + ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u)) * 384i) + (q_indptr_val * 384i)) + (i32(blockIdx.y) * 192i)) + (((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i) + (3i & ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u))) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
              condval_1 = fma(sin(freq), condval_2, (cos(freq) * vec2<f32>(q_ptr[v__4 + 0], q_ptr[v__4 + 1])));
} else {
              let v__5 : i32 = ((((((((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) / 3i) + ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u)) * 384i) + (q_indptr_val * 384i)) + (i32(blockIdx.y) * 192i)) + (((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i) + (3i & ((((((li_0 * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + LH_start) % 3i)>>31u))) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
              condval_1 = vec2<f32>(q_ptr[v__5 + 0], q_ptr[v__5 + 1]);
}
            let v__6 : i32 = (((((li_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
            Q_smem[v__6 + 0] = condval_1[0];
            Q_smem[v__6 + 1] = condval_1[1];
          } else {
            let v__7 : i32 = (((((li_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
            Q_smem[v__7 + 0] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[0];
            Q_smem[v__7 + 1] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[1];
          }
        }
      }
      workgroupBarrier();
      let cse_v36 : i32 = (((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x));
      let cse_v38 : i32 = ((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i));
      let cse_v43 : i32 = (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) % 3i)>>31u));
      for (var iterator : i32 = 0i; iterator < ((kv_chunk_len[0i] + 15i)>>4u); iterator++) {
        let cse_v16 : i32 = (iterator * 16i);
        let L_kv_start : i32 = (iterator * 16i);
        let cse_v28 : i32 = (i32(blockIdx.y) * 1024i);
        let cse_v35 : i32 = ((i32(threadIdx.x) & 15i) * 2i);
        workgroupBarrier();
        for (var lz_0 : i32 = 0i; lz_0 < 2i; lz_0++) {
          for (var ly_0_0 : i32 = 0i; ly_0_0 < 2i; ly_0_0++) {
            let cse_v41 : i32 = ((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
            let cur_L_1 : i32 = ((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
            let cse_v51 : i32 = (((((lz_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
            if (((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) < kv_chunk_len[0i]) {
                            var condval_3 : i32;
              if ((((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) < length_info_ptr[(((podArgs.batch_size * 2i) + b_idx_1) + podArgs.length_info_elem_offset)])) {
                condval_3 = ((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
} else {
                condval_3 = ((((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + length_info_ptr[((podArgs.batch_size + b_idx_1) + podArgs.length_info_elem_offset)]) - length_info_ptr[(((podArgs.batch_size * 2i) + b_idx_1) + podArgs.length_info_elem_offset)]);
}
let seq_offset : i32 = condval_3;
              let page_no : i32 = page_values_ptr[(((seq_offset>>4u) + cur_page_indptr_begin) + podArgs.page_values_elem_offset)];
              let page_offset : i32 = (seq_offset & 15i);
              var condval_4 : vec2<f32>;
              if ((podArgs.rotary_mode == 1i)) {
                let freq_1 : vec2<f32> = (vec2<f32>((f32((((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + k_rope_pos_offset_ptr[(b_idx_1 + podArgs.k_rope_pos_offset_elem_offset)])) * podArgs.rope_scale), (f32((((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + k_rope_pos_offset_ptr[(b_idx_1 + podArgs.k_rope_pos_offset_elem_offset)])) * podArgs.rope_scale)) / pow(vec2<f32>(podArgs.rope_theta, podArgs.rope_theta), (vec2<f32>(vec2<i32>((((i32(threadIdx.x) & 15i) * 4i))+(2i*0), (((i32(threadIdx.x) & 15i) * 4i))+(2i*1))) / vec2<f32>(6.400000e+01f, 6.400000e+01f))));
                var condval_5 : vec2<f32>;
                if ((ly_0_0 < 1i)) {
                  let v__8 : i32 = (((((((page_no * 4096i) + (i32(blockIdx.y) * 1024i)) + ((seq_offset & 15i) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + podArgs.pages_elem_offset) + 32i);
                  condval_5 = (vec2<f32>(pages_ptr[v__8 + 0], pages_ptr[v__8 + 1]) * vec2<f32>(-1.000000e+00f, -1.000000e+00f));
} else {
                  let v__9 : i32 = (((((((page_no * 4096i) + (i32(blockIdx.y) * 1024i)) + ((seq_offset & 15i) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + podArgs.pages_elem_offset) - 32i);
                  condval_5 = vec2<f32>(pages_ptr[v__9 + 0], pages_ptr[v__9 + 1]);
}
                let v__10 : i32 = ((((((page_no * 4096i) + (i32(blockIdx.y) * 1024i)) + ((seq_offset & 15i) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + podArgs.pages_elem_offset);
                condval_4 = fma(sin(freq_1), condval_5, (cos(freq_1) * vec2<f32>(pages_ptr[v__10 + 0], pages_ptr[v__10 + 1])));
} else {
                let v__11 : i32 = ((((((page_no * 4096i) + (i32(blockIdx.y) * 1024i)) + ((seq_offset & 15i) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + podArgs.pages_elem_offset);
                condval_4 = vec2<f32>(pages_ptr[v__11 + 0], pages_ptr[v__11 + 1]);
}
              let v__12 : i32 = (((((lz_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
              K_smem[v__12 + 0] = condval_4[0];
              K_smem[v__12 + 1] = condval_4[1];
            } else {
              let v__13 : i32 = (((((lz_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
              K_smem[v__13 + 0] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[0];
              K_smem[v__13 + 1] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[1];
            }
          }
        }
        workgroupBarrier();
        let cse_v17 : i32 = (i32(threadIdx.y) * 64i);
        let cse_v29 : i32 = ((i32(threadIdx.x)>>4u) * 32i);
        for (var lz_0_1 : i32 = 0i; lz_0_1 < 2i; lz_0_1++) {
          for (var ly_0_0_1 : i32 = 0i; ly_0_0_1 < 2i; ly_0_0_1++) {
            let cse_v42 : i32 = ((((iterator * 16i) + (lz_0_1 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
            let cur_L_2 : i32 = ((((iterator * 16i) + (lz_0_1 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
            let cse_v52 : i32 = (((((lz_0_1 * 256i) + (i32(threadIdx.y) * 64i)) + ((i32(threadIdx.x)>>4u) * 32i)) + (ly_0_0_1 * 16i)) + (i32(threadIdx.x) & 15i));
            if (((((iterator * 16i) + (lz_0_1 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) < kv_chunk_len[0i]) {
                            var condval_6 : i32;
              if ((((((iterator * 16i) + (lz_0_1 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) < length_info_ptr[(((podArgs.batch_size * 2i) + b_idx_1) + podArgs.length_info_elem_offset)])) {
                condval_6 = ((((iterator * 16i) + (lz_0_1 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
} else {
                condval_6 = ((((((iterator * 16i) + (lz_0_1 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) + length_info_ptr[((podArgs.batch_size + b_idx_1) + podArgs.length_info_elem_offset)]) - length_info_ptr[(((podArgs.batch_size * 2i) + b_idx_1) + podArgs.length_info_elem_offset)]);
}
let seq_offset_1 : i32 = condval_6;
              let page_no_1 : i32 = page_values_ptr[(((seq_offset_1>>4u) + cur_page_indptr_begin) + podArgs.page_values_elem_offset)];
              let page_offset_1 : i32 = (seq_offset_1 & 15i);
              let v__14 : i32 = (((((((page_no_1 * 4096i) + (i32(blockIdx.y) * 1024i)) + ((seq_offset_1 & 15i) * 64i)) + (ly_0_0_1 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + podArgs.pages_elem_offset) + 2048i);
              V_smem[(((((lz_0_1 * 256i) + (i32(threadIdx.y) * 64i)) + ((i32(threadIdx.x)>>4u) * 32i)) + (ly_0_0_1 * 16i)) + (i32(threadIdx.x) & 15i))] = vec2<f32>(pages_ptr[v__14 + 0], pages_ptr[v__14 + 1]);
            } else {
              V_smem[(((((lz_0_1 * 256i) + (i32(threadIdx.y) * 64i)) + ((i32(threadIdx.x)>>4u) * 32i)) + (ly_0_0_1 * 16i)) + (i32(threadIdx.x) & 15i))] = vec2<f32>(0.000000e+00f, 0.000000e+00f);
            }
          }
        }
        workgroupBarrier();
        S_local[0i] = vec2<f32>(0.000000e+00f, 0.000000e+00f);
        for (var lk_0 : i32 = 0i; lk_0 < 4i; lk_0++) {
          for (var lk_1 : i32 = 0i; lk_1 < 16i; lk_1++) {
            let cse_v18 : i32 = (lk_0 * 16i);
            let v__15 : vec2<i32> = vec2<i32>((((((i32(threadIdx.x) & 7i) * 128i) + (lk_0 * 16i)) + lk_1))+(64i*0), (((((i32(threadIdx.x) & 7i) * 128i) + (lk_0 * 16i)) + lk_1))+(64i*1));
            S_local[0i] = fma(((vec2<f32>(Q_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>3u) * 64i)) + (lk_0 * 16i)) + lk_1)], Q_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>3u) * 64i)) + (lk_0 * 16i)) + lk_1)]) * vec2<f32>(K_smem[v__15[0]], K_smem[v__15[1]])) * vec2<f32>(podArgs.sm_scale, podArgs.sm_scale)), vec2<f32>(1.442695e+00f, 1.442695e+00f), S_local[0i]);
          }
        }
        workgroupBarrier();
        let v__16 : i32 = ((i32(threadIdx.y) * 64i) + (i32(threadIdx.x) * 2i));
        K_smem[v__16 + 0] = S_local[0i][0];
        K_smem[v__16 + 1] = S_local[0i][1];
        workgroupBarrier();
        let row_1 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        let cse_v31 : i32 = ((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i));
        let cse_v56 : i32 = max((15i - (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) % 3i)>>31u))), 0i);
        if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
          m_prev[0i] = m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))];
          m_new[0i] = m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))];
          let row_ : i32 = (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) % 3i)>>31u));
          for (var j : i32 = 0i; j < 16i; j++) {
            let cse_v30 : i32 = ((iterator * 16i) + j);
            var condval_7 : bool;
            if ((0i < podArgs.causal)) {
              condval_7 = ((((iterator * 16i) + j) < kv_chunk_len[0i]) && ((kv_chunk_len[0i] - max((15i - (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) % 3i)>>31u))), 0i)) <= ((iterator * 16i) + j)));
} else {
              condval_7 = (((iterator * 16i) + j) < kv_chunk_len[0i]);
}
            if (condval_7) {
              m_new[0i] = max(m_new[0i], K_smem[(((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j)]);
            }
          }
          d_new[0i] = (d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] * exp2((m_prev[0i] - m_new[0i])));
        }
        let row_2 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        for (var j_1 : i32 = 0i; j_1 < 16i; j_1++) {
          workgroupBarrier();
          if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
            let row__1 : i32 = (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) % 3i)>>31u));
            let cse_v32 : i32 = ((iterator * 16i) + j_1);
            let cse_v37 : i32 = (((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j_1);
            var condval_8 : bool;
            if ((0i < podArgs.causal)) {
              condval_8 = ((((iterator * 16i) + j_1) < kv_chunk_len[0i]) && ((kv_chunk_len[0i] - max((15i - (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) % 3i)>>31u))), 0i)) <= ((iterator * 16i) + j_1)));
} else {
              condval_8 = (((iterator * 16i) + j_1) < kv_chunk_len[0i]);
}
            if (condval_8) {
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
        O_local[0i] = (O_local[0i] * vec2<f32>(exp2((m_prev_smem[((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i))] - m_smem[((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i))])), exp2((m_prev_smem[((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i))] - m_smem[((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i))]))));
        O_local[1i] = (O_local[1i] * vec2<f32>(exp2((m_prev_smem[((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i))] - m_smem[((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i))])), exp2((m_prev_smem[((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i))] - m_smem[((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i))]))));
        let cse_v44 : i32 = (((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i);
        O_local[2i] = (O_local[2i] * vec2<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)]))));
        O_local[3i] = (O_local[3i] * vec2<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)]))));
        for (var lk_1_1 : i32 = 0i; lk_1_1 < 16i; lk_1_1++) {
          let cse_v39 : i32 = ((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i));
          let cse_v45 : i32 = (((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1);
          O_local[0i] = fma(vec2<f32>(K_smem[(((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1)], K_smem[(((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1)]), V_smem[((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i))], O_local[0i]);
          let cse_v46 : i32 = (((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i);
          O_local[1i] = fma(vec2<f32>(K_smem[(((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1)], K_smem[(((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1)]), V_smem[(((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)], O_local[1i]);
          let cse_v53 : i32 = ((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1) + 16i);
          O_local[2i] = fma(vec2<f32>(K_smem[((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1) + 16i)], K_smem[((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1) + 16i)]), V_smem[((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i))], O_local[2i]);
          O_local[3i] = fma(vec2<f32>(K_smem[((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1) + 16i)], K_smem[((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1) + 16i)]), V_smem[(((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)], O_local[3i]);
        }
      }
      for (var li_1_1 : i32 = 0i; li_1_1 < 2i; li_1_1++) {
        let cse_v54 : i32 = ((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1);
        let cse_v57 : i32 = ((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) / 3i) + ((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) % 3i)>>31u));
        let cur_L_3 : i32 = (((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) / 3i) + ((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) % 3i)>>31u)) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]);
        let cse_v58 : i32 = ((i32(blockIdx.y) * 3i) + ((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) % 3i) + (3i & ((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) % 3i)>>31u))));
        let cur_H_qo_1 : i32 = ((i32(blockIdx.y) * 3i) + ((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) % 3i) + (3i & ((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) % 3i)>>31u))));
        let cse_v19 : i32 = (li_1_1 * 2i);
        let cse_v47 : i32 = (((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1);
        let cse_v59 : i32 = (((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) + ((LH_start % 3i) + (3i & ((LH_start % 3i)>>31u)))) + 3i) % 3i) * 64i);
        if (cur_L_3 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          let v__17 : i32 = ((((cur_L_3 * 384i) + (i32(blockIdx.y) * 192i)) + (((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) + ((LH_start % 3i) + (3i & ((LH_start % 3i)>>31u)))) + 3i) % 3i) * 64i)) + ((i32(threadIdx.x) & 15i) * 4i));
          output_ptr[v__17 + 0] = (O_local[(li_1_1 * 2i)] / vec2<f32>(d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)], d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)]))[0];
          output_ptr[v__17 + 1] = (O_local[(li_1_1 * 2i)] / vec2<f32>(d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)], d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)]))[1];
        }
        let cur_L_4 : i32 = (((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) / 3i) + ((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) % 3i)>>31u)) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]);
        let cur_H_qo_2 : i32 = ((i32(blockIdx.y) * 3i) + ((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) % 3i) + (3i & ((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + LH_start) + li_1_1) % 3i)>>31u))));
        if (cur_L_4 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          let v__18 : i32 = (((((cur_L_4 * 384i) + (i32(blockIdx.y) * 192i)) + (((((((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) + ((LH_start % 3i) + (3i & ((LH_start % 3i)>>31u)))) + 3i) % 3i) * 64i)) + ((i32(threadIdx.x) & 15i) * 4i)) + 2i);
          output_ptr[v__18 + 0] = (O_local[((li_1_1 * 2i) + 1i)] / vec2<f32>(d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)], d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)]))[0];
          output_ptr[v__18 + 1] = (O_local[((li_1_1 * 2i) + 1i)] / vec2<f32>(d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)], d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)]))[1];
        }
      }
      if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
        let cur_L_5 : i32 = ((((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) % 3i)>>31u)) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]);
        let cur_H_qo_3 : i32 = ((i32(blockIdx.y) * 3i) + (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) % 3i) + (3i & (((((i32(threadIdx.y) * 32i) + LH_start) + i32(threadIdx.x)) % 3i)>>31u))));
        if (cur_L_5 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          lse_ptr[(((cur_L_5 * 6i) + (i32(blockIdx.y) * 3i)) + (((((i32(threadIdx.y) * 32i) + i32(threadIdx.x)) + ((LH_start % 3i) + (3i & ((LH_start % 3i)>>31u)))) + 3i) % 3i))] = (m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] + log2(d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))]));
        }
      }
      tile_id[0i] = (tile_id[0i] + 16i);
    }
  }
}


