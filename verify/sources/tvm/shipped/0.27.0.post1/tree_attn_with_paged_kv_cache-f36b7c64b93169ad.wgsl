// apache-tvm 0.27.0.post1, target webgpu: tree_attn_with_paged_kv_cache(h_kv=2, h_q=8, d=64, dtype='float32', rope_scaling={})
// Function: tree_attn_paged_kv_kernel
//----------------------------------------
// Function: tree_attn_paged_kv_kernel
//----------------------------------------
@group(0) @binding(0) var<storage, read> length_info_ptr : array<i32>;
@group(0) @binding(1) var<storage, read_write> lse_ptr : array<f32>;
@group(0) @binding(2) var<storage, read_write> output_ptr : array<f32>;
@group(0) @binding(3) var<storage, read> page_indptr_ptr : array<i32>;
@group(0) @binding(4) var<storage, read> page_values_ptr : array<i32>;
@group(0) @binding(5) var<storage, read> pages_ptr : array<f32>;
@group(0) @binding(6) var<storage, read> q_ptr : array<f32>;
@group(0) @binding(7) var<storage, read> q_indptr_ptr : array<i32>;
@group(0) @binding(8) var<storage, read> tree_order_ptr : array<i32>;
@group(0) @binding(9) var<storage, read> tree_order_indptr_ptr : array<i32>;

struct PODArgs {
  batch_size: i32,
  length_info_elem_offset: i32,
  page_indptr_elem_offset: i32,
  page_values_elem_offset: i32,
  q_indptr_elem_offset: i32,
  sm_scale: f32,
  tree_order_elem_offset: i32,
  tree_order_indptr_elem_offset: i32,
  packGridDimX: u32
}
@group(0) @binding(10) var<uniform> podArgs : PODArgs;

var<workgroup> m_smem : array<f32, 16>;
var<workgroup> d_smem : array<f32, 16>;
var<workgroup> Q_smem : array<f32, 1024>;
var<workgroup> K_smem : array<f32, 1024>;
var<workgroup> V_smem : array<f32, 1024>;
var<workgroup> m_prev_smem : array<f32, 16>;
@compute @workgroup_size(32, 4, 1)
fn tree_attn_paged_kv_kernel(
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
  var O_local : array<f32, 8>;
  var S_local : array<f32, 2>;
  var m_prev : array<f32, 1>;
  var m_new : array<f32, 1>;
  var d_new : array<f32, 1>;
  tile_id[0i] = v__1;
  batch_idx[0i] = 0i;
  batch_rows[0i] = ((q_indptr_ptr[(podArgs.q_indptr_elem_offset + 1i)] * 4i) - (q_indptr_ptr[podArgs.q_indptr_elem_offset] * 4i));
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
        batch_rows[0i] = ((q_indptr_ptr[((b_idx + podArgs.q_indptr_elem_offset) + 1i)] * 4i) - (q_indptr_ptr[(b_idx + podArgs.q_indptr_elem_offset)] * 4i));
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
      var condval : i32;
      if ((cur_page_indptr_begin != cur_page_indptr_end)) {
        condval = ((((cur_page_indptr_end * 16i) + length_info_ptr[(b_idx_1 + podArgs.length_info_elem_offset)]) - (cur_page_indptr_begin * 16i)) - 16i);
} else {
        condval = 0i;
}
      kv_chunk_len[0i] = condval;
      workgroupBarrier();
      let cse_v23 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
      let row : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
      let cse_v6 : i32 = (i32(threadIdx.x)>>4u);
      let cse_v24 : i32 = ((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u));
      if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
        m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = -5.000000e+04f;
        d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = 1.000000e+00f;
      }
      for (var li_1 : i32 = 0i; li_1 < 2i; li_1++) {
        for (var lj_1 : i32 = 0i; lj_1 < 4i; lj_1++) {
          O_local[((li_1 * 4i) + lj_1)] = 0.000000e+00f;
        }
      }
      workgroupBarrier();
      let cse_v8 : i32 = (i32(blockIdx.y) * 4i);
      let cse_v9 : i32 = (i32(blockIdx.y) * 256i);
      let cse_v10 : i32 = (i32(threadIdx.x) * 2i);
      let cse_v11 : i32 = (i32(threadIdx.y) * 64i);
      let cse_v27 : i32 = ((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i);
      for (var li_lj_fused_0 : i32 = 0i; li_lj_fused_0 < 4i; li_lj_fused_0++) {
        let cse_v7 : i32 = (LH_start + i32(threadIdx.y));
        let cse_v25 : i32 = ((LH_start + i32(threadIdx.y))>>2u);
        let cse_v48 : i32 = ((((LH_start + i32(threadIdx.y))>>2u) + q_indptr_val) + li_lj_fused_0);
        let cur_L : i32 = ((((LH_start + i32(threadIdx.y))>>2u) + q_indptr_val) + li_lj_fused_0);
        let cse_v26 : i32 = ((LH_start + i32(threadIdx.y)) & 3i);
        let cur_H_qo : i32 = ((i32(blockIdx.y) * 4i) + ((LH_start + i32(threadIdx.y)) & 3i));
        let cse_v40 : i32 = (((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i));
        if (((((LH_start + i32(threadIdx.y))>>2u) + q_indptr_val) + li_lj_fused_0) < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          let v__2 : i32 = ((((((((LH_start + i32(threadIdx.y))>>2u) * 512i) + (q_indptr_val * 512i)) + (li_lj_fused_0 * 512i)) + (i32(blockIdx.y) * 256i)) + (((LH_start + i32(threadIdx.y)) & 3i) * 64i)) + (i32(threadIdx.x) * 2i));
          let v__3 : i32 = (((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i));
          Q_smem[v__3 + 0] = vec2<f32>(q_ptr[v__2 + 0], q_ptr[v__2 + 1])[0];
          Q_smem[v__3 + 1] = vec2<f32>(q_ptr[v__2 + 0], q_ptr[v__2 + 1])[1];
        } else {
          let v__4 : i32 = (((li_lj_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i));
          Q_smem[v__4 + 0] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[0];
          Q_smem[v__4 + 1] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[1];
        }
      }
      workgroupBarrier();
      let cse_v19 : i32 = (LH_start + i32(threadIdx.x));
      let cse_v29 : i32 = ((LH_start + i32(threadIdx.x))>>2u);
      let cse_v37 : i32 = ((i32(threadIdx.x)>>4u) * 2i);
      let cse_v39 : i32 = ((i32(threadIdx.x) & 15i) * 4i);
      let cse_v45 : i32 = ((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u));
      let cse_v47 : i32 = ((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i));
      for (var iterator : i32 = 0i; iterator < ((kv_chunk_len[0i] + 15i)>>4u); iterator++) {
        let cse_v12 : i32 = (iterator * 16i);
        let L_kv_start : i32 = (iterator * 16i);
        let cse_v14 : i32 = (i32(blockIdx.y) * 1024i);
        let cse_v28 : i32 = ((iterator + cur_page_indptr_begin) + podArgs.page_values_elem_offset);
        workgroupBarrier();
        for (var lz_ly_fused_0 : i32 = 0i; lz_ly_fused_0 < 4i; lz_ly_fused_0++) {
          let cse_v13 : i32 = (lz_ly_fused_0 * 4i);
          let cse_v41 : i32 = (((iterator * 16i) + (lz_ly_fused_0 * 4i)) + i32(threadIdx.y));
          let cur_L_1 : i32 = (((iterator * 16i) + (lz_ly_fused_0 * 4i)) + i32(threadIdx.y));
          let cse_v15 : i32 = (lz_ly_fused_0 * 256i);
          let cse_v42 : i32 = (((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i));
          if ((((iterator * 16i) + (lz_ly_fused_0 * 4i)) + i32(threadIdx.y)) < kv_chunk_len[0i]) {
            let seq_offset : i32 = (((iterator * 16i) + (lz_ly_fused_0 * 4i)) + i32(threadIdx.y));
            let page_no : i32 = page_values_ptr[((iterator + cur_page_indptr_begin) + podArgs.page_values_elem_offset)];
            let page_offset : i32 = ((lz_ly_fused_0 * 4i) + i32(threadIdx.y));
            let v__5 : i32 = (((((page_no * 4096i) + (i32(blockIdx.y) * 1024i)) + (lz_ly_fused_0 * 256i)) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i));
            let v__6 : i32 = (((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i));
            K_smem[v__6 + 0] = vec2<f32>(pages_ptr[v__5 + 0], pages_ptr[v__5 + 1])[0];
            K_smem[v__6 + 1] = vec2<f32>(pages_ptr[v__5 + 0], pages_ptr[v__5 + 1])[1];
          } else {
            let v__7 : i32 = (((lz_ly_fused_0 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i));
            K_smem[v__7 + 0] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[0];
            K_smem[v__7 + 1] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[1];
          }
        }
        workgroupBarrier();
        for (var lz_ly_fused_0_1 : i32 = 0i; lz_ly_fused_0_1 < 4i; lz_ly_fused_0_1++) {
          let cse_v16 : i32 = (lz_ly_fused_0_1 * 4i);
          let cse_v43 : i32 = (((iterator * 16i) + (lz_ly_fused_0_1 * 4i)) + i32(threadIdx.y));
          let cur_L_2 : i32 = (((iterator * 16i) + (lz_ly_fused_0_1 * 4i)) + i32(threadIdx.y));
          let cse_v17 : i32 = (lz_ly_fused_0_1 * 256i);
          let cse_v44 : i32 = (((lz_ly_fused_0_1 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i));
          if ((((iterator * 16i) + (lz_ly_fused_0_1 * 4i)) + i32(threadIdx.y)) < kv_chunk_len[0i]) {
            let seq_offset_1 : i32 = (((iterator * 16i) + (lz_ly_fused_0_1 * 4i)) + i32(threadIdx.y));
            let page_no_1 : i32 = page_values_ptr[((iterator + cur_page_indptr_begin) + podArgs.page_values_elem_offset)];
            let page_offset_1 : i32 = ((lz_ly_fused_0_1 * 4i) + i32(threadIdx.y));
            let v__8 : i32 = ((((((page_no_1 * 4096i) + (i32(blockIdx.y) * 1024i)) + (lz_ly_fused_0_1 * 256i)) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i)) + 2048i);
            let v__9 : i32 = (((lz_ly_fused_0_1 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i));
            V_smem[v__9 + 0] = vec2<f32>(pages_ptr[v__8 + 0], pages_ptr[v__8 + 1])[0];
            V_smem[v__9 + 1] = vec2<f32>(pages_ptr[v__8 + 0], pages_ptr[v__8 + 1])[1];
          } else {
            let v__10 : i32 = (((lz_ly_fused_0_1 * 256i) + (i32(threadIdx.y) * 64i)) + (i32(threadIdx.x) * 2i));
            V_smem[v__10 + 0] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[0];
            V_smem[v__10 + 1] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[1];
          }
        }
        workgroupBarrier();
        for (var lj_1_init : i32 = 0i; lj_1_init < 2i; lj_1_init++) {
          S_local[lj_1_init] = 0.000000e+00f;
        }
        for (var lk_0 : i32 = 0i; lk_0 < 8i; lk_0++) {
          for (var lj_1_1 : i32 = 0i; lj_1_1 < 2i; lj_1_1++) {
            for (var lk_1 : i32 = 0i; lk_1 < 8i; lk_1++) {
              let cse_v18 : i32 = (lk_0 * 8i);
              S_local[lj_1_1] = fma(((Q_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>3u) * 64i)) + (lk_0 * 8i)) + lk_1)] * K_smem[(((((i32(threadIdx.x) & 7i) * 128i) + (lj_1_1 * 64i)) + (lk_0 * 8i)) + lk_1)]) * podArgs.sm_scale), 1.442695e+00f, S_local[lj_1_1]);
            }
          }
        }
        workgroupBarrier();
        for (var lj_1_2 : i32 = 0i; lj_1_2 < 2i; lj_1_2++) {
          K_smem[(((i32(threadIdx.y) * 64i) + (i32(threadIdx.x) * 2i)) + lj_1_2)] = S_local[lj_1_2];
        }
        workgroupBarrier();
        let row_1 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
        let cse_v20 : i32 = (b_idx_1 + podArgs.tree_order_indptr_elem_offset);
        let cse_v21 : i32 = (iterator * 32i);
        let cse_v31 : i32 = ((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i);
        let cse_v33 : i32 = ((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i));
        let cse_v49 : i32 = ((i32(threadIdx.y) * 16i) + (((LH_start + i32(threadIdx.x))>>2u) * 2i));
        if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
          m_prev[0i] = m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))];
          m_new[0i] = m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))];
          let row_ : i32 = ((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u));
          for (var j : i32 = 0i; j < 16i; j++) {
            let cse_v30 : i32 = ((iterator * 16i) + j);
            let cse_v32 : i32 = ((iterator * 32i) + (j * 2i));
            if ((((iterator * 16i) + j) < kv_chunk_len[0i]) && ((((iterator * 16i) + j) < ((kv_chunk_len[0i] + tree_order_indptr_ptr[(b_idx_1 + podArgs.tree_order_indptr_elem_offset)]) - tree_order_indptr_ptr[((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i)])) || ((tree_order_ptr[(((((iterator * 32i) + (tree_order_indptr_ptr[((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i)] * 2i)) + (j * 2i)) + podArgs.tree_order_elem_offset) - (kv_chunk_len[0i] * 2i))] <= tree_order_ptr[((((((i32(threadIdx.y) * 16i) + (((LH_start + i32(threadIdx.x))>>2u) * 2i)) + (tree_order_indptr_ptr[((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.tree_order_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))]) && (tree_order_ptr[((((((i32(threadIdx.y) * 16i) + (((LH_start + i32(threadIdx.x))>>2u) * 2i)) + (tree_order_indptr_ptr[((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.tree_order_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))] < tree_order_ptr[((((((iterator * 32i) + (tree_order_indptr_ptr[((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i)] * 2i)) + (j * 2i)) + podArgs.tree_order_elem_offset) + 1i) - (kv_chunk_len[0i] * 2i))])))) {
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
            let cse_v34 : i32 = ((iterator * 16i) + j_1);
            let cse_v35 : i32 = ((iterator * 32i) + (j_1 * 2i));
            let cse_v46 : i32 = (((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j_1);
            if ((((iterator * 16i) + j_1) < kv_chunk_len[0i]) && ((((iterator * 16i) + j_1) < ((kv_chunk_len[0i] + tree_order_indptr_ptr[(b_idx_1 + podArgs.tree_order_indptr_elem_offset)]) - tree_order_indptr_ptr[((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i)])) || ((tree_order_ptr[(((((iterator * 32i) + (tree_order_indptr_ptr[((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i)] * 2i)) + (j_1 * 2i)) + podArgs.tree_order_elem_offset) - (kv_chunk_len[0i] * 2i))] <= tree_order_ptr[((((((i32(threadIdx.y) * 16i) + (((LH_start + i32(threadIdx.x))>>2u) * 2i)) + (tree_order_indptr_ptr[((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.tree_order_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))]) && (tree_order_ptr[((((((i32(threadIdx.y) * 16i) + (((LH_start + i32(threadIdx.x))>>2u) * 2i)) + (tree_order_indptr_ptr[((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i)] * 2i)) + (q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)] * 2i)) + podArgs.tree_order_elem_offset) - (q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)] * 2i))] < tree_order_ptr[((((((iterator * 32i) + (tree_order_indptr_ptr[((b_idx_1 + podArgs.tree_order_indptr_elem_offset) + 1i)] * 2i)) + (j_1 * 2i)) + podArgs.tree_order_elem_offset) + 1i) - (kv_chunk_len[0i] * 2i))])))) {
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
        for (var li_1_init : i32 = 0i; li_1_init < 2i; li_1_init++) {
          for (var lj_1_init_1 : i32 = 0i; lj_1_init_1 < 4i; lj_1_init_1++) {
            let cse_v36 : i32 = ((li_1_init * 4i) + lj_1_init_1);
            let cse_v50 : i32 = (((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_init);
            O_local[((li_1_init * 4i) + lj_1_init_1)] = (O_local[((li_1_init * 4i) + lj_1_init_1)] * exp2((m_prev_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_init)] - m_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_init)])));
          }
        }
        for (var lk_0_1 : i32 = 0i; lk_0_1 < 2i; lk_0_1++) {
          for (var lk_1_1 : i32 = 0i; lk_1_1 < 8i; lk_1_1++) {
            for (var li_1_1 : i32 = 0i; li_1_1 < 2i; li_1_1++) {
              for (var lj_1_3 : i32 = 0i; lj_1_3 < 4i; lj_1_3++) {
                let cse_v38 : i32 = ((li_1_1 * 4i) + lj_1_3);
                O_local[((li_1_1 * 4i) + lj_1_3)] = fma(K_smem[(((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + (li_1_1 * 16i)) + (lk_0_1 * 8i)) + lk_1_1)], V_smem[((((lk_0_1 * 512i) + (lk_1_1 * 64i)) + ((i32(threadIdx.x) & 15i) * 4i)) + lj_1_3)], O_local[((li_1_1 * 4i) + lj_1_3)]);
              }
            }
          }
        }
      }
      let cse_v22 : i32 = (LH_start & 3i);
      for (var li_1_2 : i32 = 0i; li_1_2 < 2i; li_1_2++) {
        for (var lj_1_4 : i32 = 0i; lj_1_4 < 4i; lj_1_4++) {
          let cur_L_3 : i32 = (((((i32(threadIdx.x)>>4u) + ((LH_start + li_1_2)>>1u))>>1u) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]) + i32(threadIdx.y));
          let cur_H_qo_1 : i32 = ((i32(blockIdx.y) * 4i) + (((((i32(threadIdx.x)>>4u) * 2i) + LH_start) + li_1_2) & 3i));
          if (cur_L_3 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
            output_ptr[(((((cur_L_3 * 512i) + (i32(blockIdx.y) * 256i)) + ((((((i32(threadIdx.x)>>4u) * 2i) + li_1_2) + (LH_start & 3i)) & 3i) * 64i)) + ((i32(threadIdx.x) & 15i) * 4i)) + lj_1_4)] = (O_local[((li_1_2 * 4i) + lj_1_4)] / d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_2)]);
          }
        }
      }
      if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
        let cur_L_4 : i32 = (((i32(threadIdx.y) * 8i) + ((LH_start + i32(threadIdx.x))>>2u)) + q_indptr_ptr[(b_idx_1 + podArgs.q_indptr_elem_offset)]);
        let cur_H_qo_2 : i32 = ((i32(blockIdx.y) * 4i) + ((LH_start + i32(threadIdx.x)) & 3i));
        if (cur_L_4 < q_indptr_ptr[((b_idx_1 + podArgs.q_indptr_elem_offset) + 1i)]) {
          lse_ptr[(((cur_L_4 * 8i) + (i32(blockIdx.y) * 4i)) + ((i32(threadIdx.x) + (LH_start & 3i)) & 3i))] = (m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] + log2(d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))]));
        }
      }
      tile_id[0i] = (tile_id[0i] + 16i);
    }
  }
}


