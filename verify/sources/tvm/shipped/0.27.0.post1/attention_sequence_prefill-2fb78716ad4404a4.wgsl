// apache-tvm 0.27.0.post1, target webgpu: _attention_sequence_prefill(h_kv=2, h_q=6, d=64, dtype='float32', causal=0, sm_scale=0.125)
// Function: batch_sequence_prefill_kv_kernel
//----------------------------------------
// Function: batch_sequence_prefill_kv_kernel
//----------------------------------------
@group(0) @binding(0) var<storage, read> k_ptr : array<f32>;
@group(0) @binding(1) var<storage, read_write> lse_ptr : array<f32>;
@group(0) @binding(2) var<storage, read_write> output_ptr : array<f32>;
@group(0) @binding(3) var<storage, read> q_ptr : array<f32>;
@group(0) @binding(4) var<storage, read> v_ptr : array<f32>;

struct PODArgs {
  batch_size: i32,
  cse_v30: i32,
  kv_len: i32,
  qo_len: i32,
  packGridDimX: u32
}
@group(0) @binding(5) var<uniform> podArgs : PODArgs;

var<workgroup> m_smem : array<f32, 16>;
var<workgroup> d_smem : array<f32, 16>;
var<workgroup> Q_smem : array<f32, 1024>;
var<workgroup> K_smem : array<f32, 1024>;
var<workgroup> V_smem : array<vec2<f32>, 512>;
var<workgroup> m_prev_smem : array<f32, 16>;
@compute @workgroup_size(32, 4, 1)
fn batch_sequence_prefill_kv_kernel(
  @builtin(workgroup_id) blockIdx : vec3<u32>,
  @builtin(num_workgroups) gridDim : vec3<u32>,
  @builtin(local_invocation_id) threadIdx : vec3<u32>
) {
  if (blockIdx.z * gridDim.x + blockIdx.x > podArgs.packGridDimX) { return; }
  let v__1 : i32 = i32(blockIdx.z * gridDim.x + blockIdx.x);
  var O_local : array<vec2<f32>, 4>;
  var S_local : array<vec2<f32>, 1>;
  var m_prev : array<f32, 1>;
  var m_new : array<f32, 1>;
  var d_new : array<f32, 1>;
    let rmod : i32 = (v__1 % podArgs.cse_v30);
  let rdiv : i32 = (v__1 / podArgs.cse_v30);
let cse_v34 : i32 = select((rdiv - 1i), rdiv, (((podArgs.cse_v30 >= 0i) && (rmod >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod <= 0i))));
    let rmod_1 : i32 = (v__1 % podArgs.cse_v30);
  let rdiv_1 : i32 = (v__1 / podArgs.cse_v30);
let b_idx : i32 = select((rdiv_1 - 1i), rdiv_1, (((podArgs.cse_v30 >= 0i) && (rmod_1 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_1 <= 0i))));
    let rmod_2 : i32 = (v__1 % podArgs.cse_v30);
let cse_v35 : i32 = select((rmod_2 + podArgs.cse_v30), rmod_2, (((podArgs.cse_v30 >= 0i) && (rmod_2 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_2 <= 0i))));
    let rmod_3 : i32 = (v__1 % podArgs.cse_v30);
let tile_id : i32 = select((rmod_3 + podArgs.cse_v30), rmod_3, (((podArgs.cse_v30 >= 0i) && (rmod_3 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_3 <= 0i))));
    let rmod_4 : i32 = (v__1 % podArgs.cse_v30);
let cse_v42 : i32 = (select((rmod_4 + podArgs.cse_v30), rmod_4, (((podArgs.cse_v30 >= 0i) && (rmod_4 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_4 <= 0i)))) * 16i);
    let rmod_5 : i32 = (v__1 % podArgs.cse_v30);
let LH_start : i32 = (select((rmod_5 + podArgs.cse_v30), rmod_5, (((podArgs.cse_v30 >= 0i) && (rmod_5 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_5 <= 0i)))) * 16i);
  workgroupBarrier();
  let cse_v2 : i32 = (i32(threadIdx.y) * 32i);
  let cse_v22 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
  let row : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
  let cse_v3 : i32 = (i32(threadIdx.y) * 2i);
  let cse_v4 : i32 = (i32(threadIdx.x)>>4u);
  let cse_v23 : i32 = ((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u));
  if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
    m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = -5.000000e+04f;
    d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] = 1.000000e+00f;
  }
  for (var li_1 : i32 = 0i; li_1 < 2i; li_1++) {
    let cse_v5 : i32 = (li_1 * 2i);
    O_local[(li_1 * 2i)] = vec2<f32>(0.000000e+00f, 0.000000e+00f);
    O_local[((li_1 * 2i) + 1i)] = vec2<f32>(0.000000e+00f, 0.000000e+00f);
  }
  workgroupBarrier();
  let cse_v6 : i32 = (i32(blockIdx.y) * 3i);
  let cse_v7 : i32 = (i32(blockIdx.y) * 192i);
  let cse_v9 : i32 = (i32(threadIdx.x) & 15i);
  let cse_v10 : i32 = (i32(threadIdx.y) * 128i);
  let cse_v24 : i32 = ((i32(threadIdx.x) & 15i) * 2i);
  let cse_v25 : i32 = ((i32(threadIdx.x)>>4u) * 64i);
    let rmod_6 : i32 = (v__1 % podArgs.cse_v30);
  let rdiv_2 : i32 = (v__1 / podArgs.cse_v30);
let cse_v43 : i32 = (select((rdiv_2 - 1i), rdiv_2, (((podArgs.cse_v30 >= 0i) && (rmod_6 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_6 <= 0i)))) * podArgs.qo_len);
    let rmod_7 : i32 = (v__1 % podArgs.cse_v30);
  let rdiv_3 : i32 = (v__1 / podArgs.cse_v30);
let cse_v48 : i32 = ((select((rdiv_3 - 1i), rdiv_3, (((podArgs.cse_v30 >= 0i) && (rmod_7 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_7 <= 0i)))) * podArgs.qo_len) * 384i);
  for (var li_0 : i32 = 0i; li_0 < 2i; li_0++) {
    for (var lj_0_0 : i32 = 0i; lj_0_0 < 2i; lj_0_0++) {
            let rmod_8 : i32 = (v__1 % podArgs.cse_v30);
let cse_v51 : i32 = ((((select((rmod_8 + podArgs.cse_v30), rmod_8, (((podArgs.cse_v30 >= 0i) && (rmod_8 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_8 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
            let rmod_9 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_10 : i32 = (v__1 % podArgs.cse_v30);
let cse_v55 : i32 = ((((((select((rmod_9 + podArgs.cse_v30), rmod_9, (((podArgs.cse_v30 >= 0i) && (rmod_9 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_9 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i) + ((((((select((rmod_10 + podArgs.cse_v30), rmod_10, (((podArgs.cse_v30 >= 0i) && (rmod_10 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_10 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) % 3i)>>31u));
            let rmod_11 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_12 : i32 = (v__1 % podArgs.cse_v30);
let cur_L : i32 = ((((((select((rmod_11 + podArgs.cse_v30), rmod_11, (((podArgs.cse_v30 >= 0i) && (rmod_11 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_11 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i) + ((((((select((rmod_12 + podArgs.cse_v30), rmod_12, (((podArgs.cse_v30 >= 0i) && (rmod_12 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_12 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) % 3i)>>31u));
            let rmod_13 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_14 : i32 = (v__1 % podArgs.cse_v30);
let cse_v56 : i32 = ((((((select((rmod_13 + podArgs.cse_v30), rmod_13, (((podArgs.cse_v30 >= 0i) && (rmod_13 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_13 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) % 3i) + (3i & ((((((select((rmod_14 + podArgs.cse_v30), rmod_14, (((podArgs.cse_v30 >= 0i) && (rmod_14 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_14 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) % 3i)>>31u)));
            let rmod_15 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_16 : i32 = (v__1 % podArgs.cse_v30);
let cur_H_qo : i32 = ((i32(blockIdx.y) * 3i) + ((((((select((rmod_15 + podArgs.cse_v30), rmod_15, (((podArgs.cse_v30 >= 0i) && (rmod_15 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_15 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) % 3i) + (3i & ((((((select((rmod_16 + podArgs.cse_v30), rmod_16, (((podArgs.cse_v30 >= 0i) && (rmod_16 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_16 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) % 3i)>>31u))));
      let cse_v8 : i32 = (lj_0_0 * 32i);
      let cse_v44 : i32 = (((((li_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
      let rmod_17 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_18 : i32 = (v__1 % podArgs.cse_v30);
      if (((((((select((rmod_17 + podArgs.cse_v30), rmod_17, (((podArgs.cse_v30 >= 0i) && (rmod_17 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_17 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i) + ((((((select((rmod_18 + podArgs.cse_v30), rmod_18, (((podArgs.cse_v30 >= 0i) && (rmod_18 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_18 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) % 3i)>>31u)) < podArgs.qo_len) {
        let rmod_19 : i32 = (v__1 % podArgs.cse_v30);
        let rmod_20 : i32 = (v__1 % podArgs.cse_v30);
        let rmod_21 : i32 = (v__1 % podArgs.cse_v30);
        let rdiv_4 : i32 = (v__1 / podArgs.cse_v30);
        let rmod_22 : i32 = (v__1 % podArgs.cse_v30);
        let rmod_23 : i32 = (v__1 % podArgs.cse_v30);
        let v__2 : i32 = ((((((((((((select((rmod_19 + podArgs.cse_v30), rmod_19, (((podArgs.cse_v30 >= 0i) && (rmod_19 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_19 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) / 3i) + ((((((select((rmod_20 + podArgs.cse_v30), rmod_20, (((podArgs.cse_v30 >= 0i) && (rmod_20 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_20 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) % 3i)>>31u)) * 384i) + ((select((rdiv_4 - 1i), rdiv_4, (((podArgs.cse_v30 >= 0i) && (rmod_21 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_21 <= 0i)))) * podArgs.qo_len) * 384i)) + (i32(blockIdx.y) * 192i)) + (((((((select((rmod_22 + podArgs.cse_v30), rmod_22, (((podArgs.cse_v30 >= 0i) && (rmod_22 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_22 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) % 3i) + (3i & ((((((select((rmod_23 + podArgs.cse_v30), rmod_23, (((podArgs.cse_v30 >= 0i) && (rmod_23 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_23 <= 0i)))) * 16i) + (li_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) % 3i)>>31u))) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
        let v__3 : i32 = (((((li_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
        Q_smem[v__3 + 0] = vec2<f32>(q_ptr[v__2 + 0], q_ptr[v__2 + 1])[0];
        Q_smem[v__3 + 1] = vec2<f32>(q_ptr[v__2 + 0], q_ptr[v__2 + 1])[1];
      } else {
        let v__4 : i32 = (((((li_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
        Q_smem[v__4 + 0] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[0];
        Q_smem[v__4 + 1] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[1];
      }
    }
  }
  workgroupBarrier();
  let cse_v18 : i32 = (i32(threadIdx.y) * 4i);
  let cse_v29 : i32 = ((i32(threadIdx.x)>>4u) * 2i);
  let cse_v32 : i32 = ((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i));
    let rmod_24 : i32 = (v__1 % podArgs.cse_v30);
let cse_v50 : i32 = (((i32(threadIdx.y) * 32i) + (select((rmod_24 + podArgs.cse_v30), rmod_24, (((podArgs.cse_v30 >= 0i) && (rmod_24 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_24 <= 0i)))) * 16i)) + i32(threadIdx.x));
    let rmod_25 : i32 = (v__1 % podArgs.cse_v30);
  let rmod_26 : i32 = (v__1 % podArgs.cse_v30);
let cse_v52 : i32 = (((((i32(threadIdx.y) * 32i) + (select((rmod_25 + podArgs.cse_v30), rmod_25, (((podArgs.cse_v30 >= 0i) && (rmod_25 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_25 <= 0i)))) * 16i)) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + (select((rmod_26 + podArgs.cse_v30), rmod_26, (((podArgs.cse_v30 >= 0i) && (rmod_26 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_26 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i)>>31u));
  for (var iterator : i32 = 0i; iterator < ((podArgs.kv_len + 15i)>>4u); iterator++) {
    let cse_v11 : i32 = (iterator * 16i);
    let L_kv_start : i32 = (iterator * 16i);
    let L_kv_base : i32 = 0i;
    let cse_v12 : i32 = (iterator * 2048i);
    let cse_v13 : i32 = (i32(threadIdx.y) * 256i);
    let cse_v14 : i32 = (i32(blockIdx.y) * 64i);
    let cse_v26 : i32 = ((i32(threadIdx.x)>>4u) * 128i);
        let rmod_27 : i32 = (v__1 % podArgs.cse_v30);
    let rdiv_5 : i32 = (v__1 / podArgs.cse_v30);
let cse_v49 : i32 = ((select((rdiv_5 - 1i), rdiv_5, (((podArgs.cse_v30 >= 0i) && (rmod_27 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_27 <= 0i)))) * podArgs.kv_len) * 128i);
    workgroupBarrier();
    for (var lz_0 : i32 = 0i; lz_0 < 2i; lz_0++) {
      for (var ly_0_0 : i32 = 0i; ly_0_0 < 2i; ly_0_0++) {
        let cse_v36 : i32 = ((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
        let cur_L_1 : i32 = ((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
        let cse_v15 : i32 = (ly_0_0 * 32i);
        let cse_v45 : i32 = (((((lz_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
        if (((((iterator * 16i) + (lz_0 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) < podArgs.kv_len) {
          let rmod_28 : i32 = (v__1 % podArgs.cse_v30);
          let rdiv_6 : i32 = (v__1 / podArgs.cse_v30);
          let v__5 : i32 = ((((((((iterator * 2048i) + (lz_0 * 1024i)) + (i32(threadIdx.y) * 256i)) + ((i32(threadIdx.x)>>4u) * 128i)) + ((select((rdiv_6 - 1i), rdiv_6, (((podArgs.cse_v30 >= 0i) && (rmod_28 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_28 <= 0i)))) * podArgs.kv_len) * 128i)) + (i32(blockIdx.y) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
          let v__6 : i32 = (((((lz_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
          K_smem[v__6 + 0] = vec2<f32>(k_ptr[v__5 + 0], k_ptr[v__5 + 1])[0];
          K_smem[v__6 + 1] = vec2<f32>(k_ptr[v__5 + 0], k_ptr[v__5 + 1])[1];
        } else {
          let v__7 : i32 = (((((lz_0 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>4u) * 64i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
          K_smem[v__7 + 0] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[0];
          K_smem[v__7 + 1] = vec2<f32>(0.000000e+00f, 0.000000e+00f)[1];
        }
      }
    }
    workgroupBarrier();
    let cse_v16 : i32 = (i32(threadIdx.y) * 64i);
    let cse_v27 : i32 = ((i32(threadIdx.x)>>4u) * 32i);
    for (var lz_0_1 : i32 = 0i; lz_0_1 < 2i; lz_0_1++) {
      for (var ly_0_0_1 : i32 = 0i; ly_0_0_1 < 2i; ly_0_0_1++) {
        let cse_v37 : i32 = ((((iterator * 16i) + (lz_0_1 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
        let cur_L_2 : i32 = ((((iterator * 16i) + (lz_0_1 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
        let cse_v46 : i32 = (((((lz_0_1 * 256i) + (i32(threadIdx.y) * 64i)) + ((i32(threadIdx.x)>>4u) * 32i)) + (ly_0_0_1 * 16i)) + (i32(threadIdx.x) & 15i));
        if (((((iterator * 16i) + (lz_0_1 * 8i)) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) < podArgs.kv_len) {
          let rmod_29 : i32 = (v__1 % podArgs.cse_v30);
          let rdiv_7 : i32 = (v__1 / podArgs.cse_v30);
          let v__8 : i32 = ((((((((iterator * 2048i) + (lz_0_1 * 1024i)) + (i32(threadIdx.y) * 256i)) + ((i32(threadIdx.x)>>4u) * 128i)) + ((select((rdiv_7 - 1i), rdiv_7, (((podArgs.cse_v30 >= 0i) && (rmod_29 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_29 <= 0i)))) * podArgs.kv_len) * 128i)) + (i32(blockIdx.y) * 64i)) + (ly_0_0_1 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
          V_smem[(((((lz_0_1 * 256i) + (i32(threadIdx.y) * 64i)) + ((i32(threadIdx.x)>>4u) * 32i)) + (ly_0_0_1 * 16i)) + (i32(threadIdx.x) & 15i))] = vec2<f32>(v_ptr[v__8 + 0], v_ptr[v__8 + 1]);
        } else {
          V_smem[(((((lz_0_1 * 256i) + (i32(threadIdx.y) * 64i)) + ((i32(threadIdx.x)>>4u) * 32i)) + (ly_0_0_1 * 16i)) + (i32(threadIdx.x) & 15i))] = vec2<f32>(0.000000e+00f, 0.000000e+00f);
        }
      }
    }
    workgroupBarrier();
    S_local[0i] = vec2<f32>(0.000000e+00f, 0.000000e+00f);
    for (var lk_0 : i32 = 0i; lk_0 < 4i; lk_0++) {
      for (var lk_1 : i32 = 0i; lk_1 < 16i; lk_1++) {
        let cse_v17 : i32 = (lk_0 * 16i);
        let v__9 : vec2<i32> = vec2<i32>((((((i32(threadIdx.x) & 7i) * 128i) + (lk_0 * 16i)) + lk_1))+(64i*0), (((((i32(threadIdx.x) & 7i) * 128i) + (lk_0 * 16i)) + lk_1))+(64i*1));
        S_local[0i] = fma(((vec2<f32>(Q_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>3u) * 64i)) + (lk_0 * 16i)) + lk_1)], Q_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>3u) * 64i)) + (lk_0 * 16i)) + lk_1)]) * vec2<f32>(K_smem[v__9[0]], K_smem[v__9[1]])) * vec2<f32>(1.250000e-01f, 1.250000e-01f)), vec2<f32>(1.442695e+00f, 1.442695e+00f), S_local[0i]);
      }
    }
    workgroupBarrier();
    let v__10 : i32 = ((i32(threadIdx.y) * 64i) + (i32(threadIdx.x) * 2i));
    K_smem[v__10 + 0] = S_local[0i][0];
    K_smem[v__10 + 1] = S_local[0i][1];
    workgroupBarrier();
    let row_1 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
    let cse_v28 : i32 = ((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i));
    if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
      m_prev[0i] = m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))];
      m_new[0i] = m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))];
            let rmod_30 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_31 : i32 = (v__1 % podArgs.cse_v30);
let row_ : i32 = (((((i32(threadIdx.y) * 32i) + (select((rmod_30 + podArgs.cse_v30), rmod_30, (((podArgs.cse_v30 >= 0i) && (rmod_30 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_30 <= 0i)))) * 16i)) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + (select((rmod_31 + podArgs.cse_v30), rmod_31, (((podArgs.cse_v30 >= 0i) && (rmod_31 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_31 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i)>>31u));
      for (var j : i32 = 0i; j < 16i; j++) {
        if (((iterator * 16i) + j) < podArgs.kv_len) {
          m_new[0i] = max(m_new[0i], K_smem[(((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j)]);
        }
      }
      d_new[0i] = (d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] * exp2((m_prev[0i] - m_new[0i])));
    }
    let row_2 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
    for (var j_1 : i32 = 0i; j_1 < 16i; j_1++) {
      workgroupBarrier();
      if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
                let rmod_32 : i32 = (v__1 % podArgs.cse_v30);
        let rmod_33 : i32 = (v__1 % podArgs.cse_v30);
let row__1 : i32 = (((((i32(threadIdx.y) * 32i) + (select((rmod_32 + podArgs.cse_v30), rmod_32, (((podArgs.cse_v30 >= 0i) && (rmod_32 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_32 <= 0i)))) * 16i)) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + (select((rmod_33 + podArgs.cse_v30), rmod_33, (((podArgs.cse_v30 >= 0i) && (rmod_33 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_33 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i)>>31u));
        let cse_v31 : i32 = (((i32(threadIdx.y) * 512i) + (i32(threadIdx.x) * 16i)) + j_1);
        if (((iterator * 16i) + j_1) < podArgs.kv_len) {
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
    let cse_v38 : i32 = (((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i);
    O_local[2i] = (O_local[2i] * vec2<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)]))));
    O_local[3i] = (O_local[3i] * vec2<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + 1i)]))));
    for (var lk_1_1 : i32 = 0i; lk_1_1 < 16i; lk_1_1++) {
      let cse_v33 : i32 = ((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i));
      let cse_v39 : i32 = (((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1);
      O_local[0i] = fma(vec2<f32>(K_smem[(((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1)], K_smem[(((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1)]), V_smem[((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i))], O_local[0i]);
      let cse_v40 : i32 = (((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i);
      O_local[1i] = fma(vec2<f32>(K_smem[(((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1)], K_smem[(((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1)]), V_smem[(((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)], O_local[1i]);
      let cse_v47 : i32 = ((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1) + 16i);
      O_local[2i] = fma(vec2<f32>(K_smem[((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1) + 16i)], K_smem[((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1) + 16i)]), V_smem[((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i))], O_local[2i]);
      O_local[3i] = fma(vec2<f32>(K_smem[((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1) + 16i)], K_smem[((((i32(threadIdx.y) * 64i) + ((i32(threadIdx.x)>>4u) * 32i)) + lk_1_1) + 16i)]), V_smem[(((lk_1_1 * 32i) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)], O_local[3i]);
    }
  }
  for (var li_1_1 : i32 = 0i; li_1_1 < 2i; li_1_1++) {
        let rmod_34 : i32 = (v__1 % podArgs.cse_v30);
let cse_v53 : i32 = ((((select((rmod_34 + podArgs.cse_v30), rmod_34, (((podArgs.cse_v30 >= 0i) && (rmod_34 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_34 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1);
        let rmod_35 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_36 : i32 = (v__1 % podArgs.cse_v30);
let cse_v57 : i32 = ((((((select((rmod_35 + podArgs.cse_v30), rmod_35, (((podArgs.cse_v30 >= 0i) && (rmod_35 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_35 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) / 3i) + ((((((select((rmod_36 + podArgs.cse_v30), rmod_36, (((podArgs.cse_v30 >= 0i) && (rmod_36 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_36 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u));
        let rmod_37 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_38 : i32 = (v__1 % podArgs.cse_v30);
let cur_L_3 : i32 = ((((((select((rmod_37 + podArgs.cse_v30), rmod_37, (((podArgs.cse_v30 >= 0i) && (rmod_37 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_37 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) / 3i) + ((((((select((rmod_38 + podArgs.cse_v30), rmod_38, (((podArgs.cse_v30 >= 0i) && (rmod_38 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_38 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u));
        let rmod_39 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_40 : i32 = (v__1 % podArgs.cse_v30);
let cse_v58 : i32 = ((((((select((rmod_39 + podArgs.cse_v30), rmod_39, (((podArgs.cse_v30 >= 0i) && (rmod_39 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_39 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i) + (3i & ((((((select((rmod_40 + podArgs.cse_v30), rmod_40, (((podArgs.cse_v30 >= 0i) && (rmod_40 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_40 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u)));
        let rmod_41 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_42 : i32 = (v__1 % podArgs.cse_v30);
let cse_v59 : i32 = ((i32(blockIdx.y) * 3i) + ((((((select((rmod_41 + podArgs.cse_v30), rmod_41, (((podArgs.cse_v30 >= 0i) && (rmod_41 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_41 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i) + (3i & ((((((select((rmod_42 + podArgs.cse_v30), rmod_42, (((podArgs.cse_v30 >= 0i) && (rmod_42 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_42 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u))));
        let rmod_43 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_44 : i32 = (v__1 % podArgs.cse_v30);
let cur_H_qo_1 : i32 = ((i32(blockIdx.y) * 3i) + ((((((select((rmod_43 + podArgs.cse_v30), rmod_43, (((podArgs.cse_v30 >= 0i) && (rmod_43 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_43 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i) + (3i & ((((((select((rmod_44 + podArgs.cse_v30), rmod_44, (((podArgs.cse_v30 >= 0i) && (rmod_44 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_44 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u))));
    let cse_v19 : i32 = (li_1_1 * 2i);
    let cse_v41 : i32 = (((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1);
        let rmod_45 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_46 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_47 : i32 = (v__1 % podArgs.cse_v30);
    let rdiv_8 : i32 = (v__1 / podArgs.cse_v30);
    let rmod_48 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_49 : i32 = (v__1 % podArgs.cse_v30);
let cse_v60 : i32 = (((((((((((select((rmod_45 + podArgs.cse_v30), rmod_45, (((podArgs.cse_v30 >= 0i) && (rmod_45 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_45 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) / 3i) + ((((((select((rmod_46 + podArgs.cse_v30), rmod_46, (((podArgs.cse_v30 >= 0i) && (rmod_46 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_46 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u)) * 384i) + ((select((rdiv_8 - 1i), rdiv_8, (((podArgs.cse_v30 >= 0i) && (rmod_47 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_47 <= 0i)))) * podArgs.qo_len) * 384i)) + (i32(blockIdx.y) * 192i)) + (((((((select((rmod_48 + podArgs.cse_v30), rmod_48, (((podArgs.cse_v30 >= 0i) && (rmod_48 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_48 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i) + (3i & ((((((select((rmod_49 + podArgs.cse_v30), rmod_49, (((podArgs.cse_v30 >= 0i) && (rmod_49 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_49 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u))) * 64i)) + ((i32(threadIdx.x) & 15i) * 4i));
    let rmod_50 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_51 : i32 = (v__1 % podArgs.cse_v30);
    if (((((((select((rmod_50 + podArgs.cse_v30), rmod_50, (((podArgs.cse_v30 >= 0i) && (rmod_50 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_50 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) / 3i) + ((((((select((rmod_51 + podArgs.cse_v30), rmod_51, (((podArgs.cse_v30 >= 0i) && (rmod_51 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_51 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u)) < podArgs.qo_len) {
      let rmod_52 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_53 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_54 : i32 = (v__1 % podArgs.cse_v30);
      let rdiv_9 : i32 = (v__1 / podArgs.cse_v30);
      let rmod_55 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_56 : i32 = (v__1 % podArgs.cse_v30);
      let v__11 : i32 = (((((((((((select((rmod_52 + podArgs.cse_v30), rmod_52, (((podArgs.cse_v30 >= 0i) && (rmod_52 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_52 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) / 3i) + ((((((select((rmod_53 + podArgs.cse_v30), rmod_53, (((podArgs.cse_v30 >= 0i) && (rmod_53 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_53 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u)) * 384i) + ((select((rdiv_9 - 1i), rdiv_9, (((podArgs.cse_v30 >= 0i) && (rmod_54 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_54 <= 0i)))) * podArgs.qo_len) * 384i)) + (i32(blockIdx.y) * 192i)) + (((((((select((rmod_55 + podArgs.cse_v30), rmod_55, (((podArgs.cse_v30 >= 0i) && (rmod_55 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_55 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i) + (3i & ((((((select((rmod_56 + podArgs.cse_v30), rmod_56, (((podArgs.cse_v30 >= 0i) && (rmod_56 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_56 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u))) * 64i)) + ((i32(threadIdx.x) & 15i) * 4i));
      output_ptr[v__11 + 0] = (O_local[(li_1_1 * 2i)] / vec2<f32>(d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)], d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)]))[0];
      output_ptr[v__11 + 1] = (O_local[(li_1_1 * 2i)] / vec2<f32>(d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)], d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)]))[1];
    }
        let rmod_57 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_58 : i32 = (v__1 % podArgs.cse_v30);
let cur_L_4 : i32 = ((((((select((rmod_57 + podArgs.cse_v30), rmod_57, (((podArgs.cse_v30 >= 0i) && (rmod_57 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_57 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) / 3i) + ((((((select((rmod_58 + podArgs.cse_v30), rmod_58, (((podArgs.cse_v30 >= 0i) && (rmod_58 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_58 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u));
        let rmod_59 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_60 : i32 = (v__1 % podArgs.cse_v30);
let cur_H_qo_2 : i32 = ((i32(blockIdx.y) * 3i) + ((((((select((rmod_59 + podArgs.cse_v30), rmod_59, (((podArgs.cse_v30 >= 0i) && (rmod_59 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_59 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i) + (3i & ((((((select((rmod_60 + podArgs.cse_v30), rmod_60, (((podArgs.cse_v30 >= 0i) && (rmod_60 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_60 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u))));
    let rmod_61 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_62 : i32 = (v__1 % podArgs.cse_v30);
    if (((((((select((rmod_61 + podArgs.cse_v30), rmod_61, (((podArgs.cse_v30 >= 0i) && (rmod_61 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_61 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) / 3i) + ((((((select((rmod_62 + podArgs.cse_v30), rmod_62, (((podArgs.cse_v30 >= 0i) && (rmod_62 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_62 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u)) < podArgs.qo_len) {
      let rmod_63 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_64 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_65 : i32 = (v__1 % podArgs.cse_v30);
      let rdiv_10 : i32 = (v__1 / podArgs.cse_v30);
      let rmod_66 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_67 : i32 = (v__1 % podArgs.cse_v30);
      let v__12 : i32 = ((((((((((((select((rmod_63 + podArgs.cse_v30), rmod_63, (((podArgs.cse_v30 >= 0i) && (rmod_63 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_63 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) / 3i) + ((((((select((rmod_64 + podArgs.cse_v30), rmod_64, (((podArgs.cse_v30 >= 0i) && (rmod_64 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_64 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u)) * 384i) + ((select((rdiv_10 - 1i), rdiv_10, (((podArgs.cse_v30 >= 0i) && (rmod_65 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_65 <= 0i)))) * podArgs.qo_len) * 384i)) + (i32(blockIdx.y) * 192i)) + (((((((select((rmod_66 + podArgs.cse_v30), rmod_66, (((podArgs.cse_v30 >= 0i) && (rmod_66 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_66 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i) + (3i & ((((((select((rmod_67 + podArgs.cse_v30), rmod_67, (((podArgs.cse_v30 >= 0i) && (rmod_67 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_67 <= 0i)))) * 16i) + (i32(threadIdx.y) * 4i)) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1) % 3i)>>31u))) * 64i)) + ((i32(threadIdx.x) & 15i) * 4i)) + 2i);
      output_ptr[v__12 + 0] = (O_local[((li_1_1 * 2i) + 1i)] / vec2<f32>(d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)], d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)]))[0];
      output_ptr[v__12 + 1] = (O_local[((li_1_1 * 2i) + 1i)] / vec2<f32>(d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)], d_smem[(((i32(threadIdx.y) * 4i) + ((i32(threadIdx.x)>>4u) * 2i)) + li_1_1)]))[1];
    }
  }
  if (((i32(threadIdx.y) * 2i) + (i32(threadIdx.x)>>4u)) < 1i) {
        let rmod_68 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_69 : i32 = (v__1 % podArgs.cse_v30);
let cur_L_5 : i32 = (((((i32(threadIdx.y) * 32i) + (select((rmod_68 + podArgs.cse_v30), rmod_68, (((podArgs.cse_v30 >= 0i) && (rmod_68 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_68 <= 0i)))) * 16i)) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + (select((rmod_69 + podArgs.cse_v30), rmod_69, (((podArgs.cse_v30 >= 0i) && (rmod_69 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_69 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i)>>31u));
        let rmod_70 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_71 : i32 = (v__1 % podArgs.cse_v30);
let cse_v54 : i32 = (((((i32(threadIdx.y) * 32i) + (select((rmod_70 + podArgs.cse_v30), rmod_70, (((podArgs.cse_v30 >= 0i) && (rmod_70 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_70 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i) + (3i & (((((i32(threadIdx.y) * 32i) + (select((rmod_71 + podArgs.cse_v30), rmod_71, (((podArgs.cse_v30 >= 0i) && (rmod_71 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_71 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i)>>31u)));
        let rmod_72 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_73 : i32 = (v__1 % podArgs.cse_v30);
let cur_H_qo_3 : i32 = ((i32(blockIdx.y) * 3i) + (((((i32(threadIdx.y) * 32i) + (select((rmod_72 + podArgs.cse_v30), rmod_72, (((podArgs.cse_v30 >= 0i) && (rmod_72 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_72 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i) + (3i & (((((i32(threadIdx.y) * 32i) + (select((rmod_73 + podArgs.cse_v30), rmod_73, (((podArgs.cse_v30 >= 0i) && (rmod_73 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_73 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i)>>31u))));
    let rmod_74 : i32 = (v__1 % podArgs.cse_v30);
    let rmod_75 : i32 = (v__1 % podArgs.cse_v30);
    if ((((((i32(threadIdx.y) * 32i) + (select((rmod_74 + podArgs.cse_v30), rmod_74, (((podArgs.cse_v30 >= 0i) && (rmod_74 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_74 <= 0i)))) * 16i)) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + (select((rmod_75 + podArgs.cse_v30), rmod_75, (((podArgs.cse_v30 >= 0i) && (rmod_75 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_75 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i)>>31u)) < podArgs.qo_len) {
      let rmod_76 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_77 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_78 : i32 = (v__1 % podArgs.cse_v30);
      let rdiv_11 : i32 = (v__1 / podArgs.cse_v30);
      let rmod_79 : i32 = (v__1 % podArgs.cse_v30);
      let rmod_80 : i32 = (v__1 % podArgs.cse_v30);
      lse_ptr[(((((((((i32(threadIdx.y) * 32i) + (select((rmod_76 + podArgs.cse_v30), rmod_76, (((podArgs.cse_v30 >= 0i) && (rmod_76 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_76 <= 0i)))) * 16i)) + i32(threadIdx.x)) / 3i) + (((((i32(threadIdx.y) * 32i) + (select((rmod_77 + podArgs.cse_v30), rmod_77, (((podArgs.cse_v30 >= 0i) && (rmod_77 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_77 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i)>>31u)) * 6i) + ((select((rdiv_11 - 1i), rdiv_11, (((podArgs.cse_v30 >= 0i) && (rmod_78 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_78 <= 0i)))) * podArgs.qo_len) * 6i)) + (i32(blockIdx.y) * 3i)) + (((((i32(threadIdx.y) * 32i) + (select((rmod_79 + podArgs.cse_v30), rmod_79, (((podArgs.cse_v30 >= 0i) && (rmod_79 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_79 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i) + (3i & (((((i32(threadIdx.y) * 32i) + (select((rmod_80 + podArgs.cse_v30), rmod_80, (((podArgs.cse_v30 >= 0i) && (rmod_80 >= 0i)) || ((podArgs.cse_v30 < 0i) && (rmod_80 <= 0i)))) * 16i)) + i32(threadIdx.x)) % 3i)>>31u))))] = (m_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))] + log2(d_smem[((i32(threadIdx.y) * 32i) + i32(threadIdx.x))]));
    }
  }
}


