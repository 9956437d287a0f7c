// apache-tvm 0.27.0.post1, target webgpu: _attention_sequence_prefill(h_kv=1, h_q=4, d=128, dtype='float16', causal=1, sm_scale=0.08838834764831845)
// Function: batch_sequence_prefill_kv_kernel
//----------------------------------------
// Function: batch_sequence_prefill_kv_kernel
//----------------------------------------
enable f16;

@group(0) @binding(0) var<storage, read> k_ptr : array<f16>;
@group(0) @binding(1) var<storage, read_write> lse_ptr : array<f16>;
@group(0) @binding(2) var<storage, read_write> output_ptr : array<f16>;
@group(0) @binding(3) var<storage, read> q_ptr : array<f16>;
@group(0) @binding(4) var<storage, read> v_ptr : array<f16>;

struct PODArgs {
  batch_size: i32,
  cse_v24: i32,
  kv_len: i32,
  qo_len: i32,
  packGridDimX: u32
}
@group(0) @binding(5) var<uniform> podArgs : PODArgs;

var<workgroup> m_smem : array<f32, 32>;
var<workgroup> d_smem : array<f32, 32>;
var<workgroup> Q_smem : array<f16, 4096>;
var<workgroup> K_smem : array<f16, 4096>;
var<workgroup> V_smem : array<vec4<f16>, 1024>;
var<workgroup> S_smem : array<f32, 1024>;
var<workgroup> m_prev_smem : array<f32, 32>;
@compute @workgroup_size(32, 4, 1)
fn batch_sequence_prefill_kv_kernel(
  @builtin(workgroup_id) blockIdx : vec3<u32>,
  @builtin(num_workgroups) gridDim : vec3<u32>,
  @builtin(local_invocation_id) threadIdx : vec3<u32>
) {
  if (blockIdx.z * gridDim.x + blockIdx.x > podArgs.packGridDimX) { return; }
  let v__1 : i32 = i32(blockIdx.z * gridDim.x + blockIdx.x);
  var O_local : array<vec4<f32>, 8>;
  var S_local : array<vec4<f32>, 2>;
  var m_prev : array<f32, 1>;
  var m_new : array<f32, 1>;
  var d_new : array<f32, 1>;
    let rmod : i32 = (v__1 % podArgs.cse_v24);
  let rdiv : i32 = (v__1 / podArgs.cse_v24);
let cse_v29 : i32 = select((rdiv - 1i), rdiv, (((podArgs.cse_v24 >= 0i) && (rmod >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod <= 0i))));
    let rmod_1 : i32 = (v__1 % podArgs.cse_v24);
  let rdiv_1 : i32 = (v__1 / podArgs.cse_v24);
let b_idx : i32 = select((rdiv_1 - 1i), rdiv_1, (((podArgs.cse_v24 >= 0i) && (rmod_1 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_1 <= 0i))));
    let rmod_2 : i32 = (v__1 % podArgs.cse_v24);
let cse_v30 : i32 = select((rmod_2 + podArgs.cse_v24), rmod_2, (((podArgs.cse_v24 >= 0i) && (rmod_2 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_2 <= 0i))));
    let rmod_3 : i32 = (v__1 % podArgs.cse_v24);
let tile_id : i32 = select((rmod_3 + podArgs.cse_v24), rmod_3, (((podArgs.cse_v24 >= 0i) && (rmod_3 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_3 <= 0i))));
    let rmod_4 : i32 = (v__1 % podArgs.cse_v24);
let cse_v35 : i32 = (select((rmod_4 + podArgs.cse_v24), rmod_4, (((podArgs.cse_v24 >= 0i) && (rmod_4 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_4 <= 0i)))) * 32i);
    let rmod_5 : i32 = (v__1 % podArgs.cse_v24);
let LH_start : i32 = (select((rmod_5 + podArgs.cse_v24), rmod_5, (((podArgs.cse_v24 >= 0i) && (rmod_5 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_5 <= 0i)))) * 32i);
  workgroupBarrier();
  let cse_v25 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
  let row : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
  if (i32(threadIdx.y) < 1i) {
    m_smem[i32(threadIdx.x)] = -5.000000e+04f;
    d_smem[i32(threadIdx.x)] = 1.000000e+00f;
  }
  for (var li_1 : i32 = 0i; li_1 < 4i; li_1++) {
    let cse_v2 : i32 = (li_1 * 2i);
    O_local[(li_1 * 2i)] = vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f);
    O_local[((li_1 * 2i) + 1i)] = vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f);
  }
  workgroupBarrier();
  let cse_v3 : i32 = (i32(threadIdx.x)>>3u);
  let cse_v5 : i32 = (i32(threadIdx.y) * 512i);
  let cse_v7 : i32 = (i32(threadIdx.x) & 7i);
  let cse_v26 : i32 = ((i32(threadIdx.x)>>3u) * 128i);
  let cse_v27 : i32 = ((i32(threadIdx.x) & 7i) * 4i);
    let rmod_6 : i32 = (v__1 % podArgs.cse_v24);
let cse_v36 : i32 = (select((rmod_6 + podArgs.cse_v24), rmod_6, (((podArgs.cse_v24 >= 0i) && (rmod_6 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_6 <= 0i)))) * 8i);
    let rmod_7 : i32 = (v__1 % podArgs.cse_v24);
let cse_v37 : i32 = (select((rmod_7 + podArgs.cse_v24), rmod_7, (((podArgs.cse_v24 >= 0i) && (rmod_7 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_7 <= 0i)))) * 4096i);
    let rmod_8 : i32 = (v__1 % podArgs.cse_v24);
  let rdiv_2 : i32 = (v__1 / podArgs.cse_v24);
let cse_v38 : i32 = (select((rdiv_2 - 1i), rdiv_2, (((podArgs.cse_v24 >= 0i) && (rmod_8 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_8 <= 0i)))) * podArgs.qo_len);
    let rmod_9 : i32 = (v__1 % podArgs.cse_v24);
  let rdiv_3 : i32 = (v__1 / podArgs.cse_v24);
let cse_v47 : i32 = ((select((rdiv_3 - 1i), rdiv_3, (((podArgs.cse_v24 >= 0i) && (rmod_9 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_9 <= 0i)))) * podArgs.qo_len) * 512i);
  for (var li_0 : i32 = 0i; li_0 < 2i; li_0++) {
    for (var lj_0_0 : i32 = 0i; lj_0_0 < 4i; lj_0_0++) {
            let rmod_10 : i32 = (v__1 % podArgs.cse_v24);
let cse_v53 : i32 = (((select((rmod_10 + podArgs.cse_v24), rmod_10, (((podArgs.cse_v24 >= 0i) && (rmod_10 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_10 <= 0i)))) * 8i) + (li_0 * 4i)) + i32(threadIdx.y));
            let rmod_11 : i32 = (v__1 % podArgs.cse_v24);
let cur_L : i32 = (((select((rmod_11 + podArgs.cse_v24), rmod_11, (((podArgs.cse_v24 >= 0i) && (rmod_11 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_11 <= 0i)))) * 8i) + (li_0 * 4i)) + i32(threadIdx.y));
      let cur_H_qo : i32 = (i32(threadIdx.x)>>3u);
      let cse_v4 : i32 = (li_0 * 2048i);
      let cse_v6 : i32 = (lj_0_0 * 32i);
      let cse_v48 : i32 = (((((li_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
      let rmod_12 : i32 = (v__1 % podArgs.cse_v24);
      if ((((select((rmod_12 + podArgs.cse_v24), rmod_12, (((podArgs.cse_v24 >= 0i) && (rmod_12 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_12 <= 0i)))) * 8i) + (li_0 * 4i)) + i32(threadIdx.y)) < podArgs.qo_len) {
        let rmod_13 : i32 = (v__1 % podArgs.cse_v24);
        let rmod_14 : i32 = (v__1 % podArgs.cse_v24);
        let rdiv_4 : i32 = (v__1 / podArgs.cse_v24);
        let v__2 : i32 = (((((((select((rmod_13 + podArgs.cse_v24), rmod_13, (((podArgs.cse_v24 >= 0i) && (rmod_13 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_13 <= 0i)))) * 4096i) + (li_0 * 2048i)) + ((select((rdiv_4 - 1i), rdiv_4, (((podArgs.cse_v24 >= 0i) && (rmod_14 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_14 <= 0i)))) * podArgs.qo_len) * 512i)) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
        let v__3 : i32 = (((((li_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
        Q_smem[v__3 + 0] = vec4<f16>(q_ptr[v__2 + 0], q_ptr[v__2 + 1], q_ptr[v__2 + 2], q_ptr[v__2 + 3])[0];
        Q_smem[v__3 + 1] = vec4<f16>(q_ptr[v__2 + 0], q_ptr[v__2 + 1], q_ptr[v__2 + 2], q_ptr[v__2 + 3])[1];
        Q_smem[v__3 + 2] = vec4<f16>(q_ptr[v__2 + 0], q_ptr[v__2 + 1], q_ptr[v__2 + 2], q_ptr[v__2 + 3])[2];
        Q_smem[v__3 + 3] = vec4<f16>(q_ptr[v__2 + 0], q_ptr[v__2 + 1], q_ptr[v__2 + 2], q_ptr[v__2 + 3])[3];
      } else {
        let v__4 : i32 = (((((li_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (lj_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
        Q_smem[v__4 + 0] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[0];
        Q_smem[v__4 + 1] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[1];
        Q_smem[v__4 + 2] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[2];
        Q_smem[v__4 + 3] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[3];
      }
    }
  }
  workgroupBarrier();
  let cse_v13 : i32 = (i32(threadIdx.y) * 1024i);
  let cse_v16 : i32 = (i32(threadIdx.y) * 8i);
  let cse_v17 : i32 = (i32(threadIdx.x)>>2u);
  let cse_v19 : i32 = (i32(threadIdx.x)>>4u);
  let cse_v20 : i32 = (i32(threadIdx.x) & 15i);
  let cse_v33 : i32 = ((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i));
  for (var iterator : i32 = 0i; iterator < ((podArgs.kv_len + 31i)>>5u); iterator++) {
    let cse_v8 : i32 = (iterator * 32i);
    let L_kv_start : i32 = (iterator * 32i);
    let L_kv_base : i32 = 0i;
    let cse_v9 : i32 = (i32(threadIdx.y) * 4i);
    let cse_v10 : i32 = (iterator * 4096i);
        let rmod_15 : i32 = (v__1 % podArgs.cse_v24);
    let rdiv_5 : i32 = (v__1 / podArgs.cse_v24);
let cse_v49 : i32 = ((select((rdiv_5 - 1i), rdiv_5, (((podArgs.cse_v24 >= 0i) && (rmod_15 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_15 <= 0i)))) * podArgs.kv_len) * 128i);
    for (var lz_0 : i32 = 0i; lz_0 < 2i; lz_0++) {
      for (var ly_0_0 : i32 = 0i; ly_0_0 < 4i; ly_0_0++) {
        let cse_v39 : i32 = ((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
        let cur_L_1 : i32 = ((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
        let cse_v11 : i32 = (lz_0 * 2048i);
        let cse_v12 : i32 = (ly_0_0 * 32i);
        let cse_v50 : i32 = (((((lz_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
        if (((((iterator * 32i) + (lz_0 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) < podArgs.kv_len) {
          let rmod_16 : i32 = (v__1 % podArgs.cse_v24);
          let rdiv_6 : i32 = (v__1 / podArgs.cse_v24);
          let v__5 : i32 = (((((((iterator * 4096i) + (lz_0 * 2048i)) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + ((select((rdiv_6 - 1i), rdiv_6, (((podArgs.cse_v24 >= 0i) && (rmod_16 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_16 <= 0i)))) * podArgs.kv_len) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
          let v__6 : i32 = (((((lz_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
          K_smem[v__6 + 0] = vec4<f16>(k_ptr[v__5 + 0], k_ptr[v__5 + 1], k_ptr[v__5 + 2], k_ptr[v__5 + 3])[0];
          K_smem[v__6 + 1] = vec4<f16>(k_ptr[v__5 + 0], k_ptr[v__5 + 1], k_ptr[v__5 + 2], k_ptr[v__5 + 3])[1];
          K_smem[v__6 + 2] = vec4<f16>(k_ptr[v__5 + 0], k_ptr[v__5 + 1], k_ptr[v__5 + 2], k_ptr[v__5 + 3])[2];
          K_smem[v__6 + 3] = vec4<f16>(k_ptr[v__5 + 0], k_ptr[v__5 + 1], k_ptr[v__5 + 2], k_ptr[v__5 + 3])[3];
        } else {
          let v__7 : i32 = (((((lz_0 * 2048i) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + (ly_0_0 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
          K_smem[v__7 + 0] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[0];
          K_smem[v__7 + 1] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[1];
          K_smem[v__7 + 2] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[2];
          K_smem[v__7 + 3] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h)[3];
        }
      }
    }
    workgroupBarrier();
    for (var lz_0_1 : i32 = 0i; lz_0_1 < 2i; lz_0_1++) {
      for (var ly_0_0_1 : i32 = 0i; ly_0_0_1 < 4i; ly_0_0_1++) {
        let cse_v40 : i32 = ((((iterator * 32i) + (lz_0_1 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
        let cur_L_2 : i32 = ((((iterator * 32i) + (lz_0_1 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u));
        let cse_v51 : i32 = (((((lz_0_1 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>3u) * 32i)) + (ly_0_0_1 * 8i)) + (i32(threadIdx.x) & 7i));
        if (((((iterator * 32i) + (lz_0_1 * 16i)) + (i32(threadIdx.y) * 4i)) + (i32(threadIdx.x)>>3u)) < podArgs.kv_len) {
          let rmod_17 : i32 = (v__1 % podArgs.cse_v24);
          let rdiv_7 : i32 = (v__1 / podArgs.cse_v24);
          let v__8 : i32 = (((((((iterator * 4096i) + (lz_0_1 * 2048i)) + (i32(threadIdx.y) * 512i)) + ((i32(threadIdx.x)>>3u) * 128i)) + ((select((rdiv_7 - 1i), rdiv_7, (((podArgs.cse_v24 >= 0i) && (rmod_17 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_17 <= 0i)))) * podArgs.kv_len) * 128i)) + (ly_0_0_1 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
          V_smem[(((((lz_0_1 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>3u) * 32i)) + (ly_0_0_1 * 8i)) + (i32(threadIdx.x) & 7i))] = vec4<f16>(v_ptr[v__8 + 0], v_ptr[v__8 + 1], v_ptr[v__8 + 2], v_ptr[v__8 + 3]);
        } else {
          V_smem[(((((lz_0_1 * 512i) + (i32(threadIdx.y) * 128i)) + ((i32(threadIdx.x)>>3u) * 32i)) + (ly_0_0_1 * 8i)) + (i32(threadIdx.x) & 7i))] = vec4<f16>(0.000000e+00h, 0.000000e+00h, 0.000000e+00h, 0.000000e+00h);
        }
      }
    }
    workgroupBarrier();
    S_local[0i] = vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f);
    S_local[1i] = vec4<f32>(0.000000e+00f, 0.000000e+00f, 0.000000e+00f, 0.000000e+00f);
    for (var lk_0 : i32 = 0i; lk_0 < 8i; lk_0++) {
      let cse_v14 : i32 = (lk_0 * 16i);
      let cse_v31 : i32 = (((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i));
      let cse_v41 : i32 = (((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i));
      for (var lk_1 : i32 = 0i; lk_1 < 16i; lk_1++) {
        let v__9 : vec4<i32> = vec4<i32>((((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1))+(128i*0), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1))+(128i*1), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1))+(128i*2), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1))+(128i*3));
        S_local[0i] = fma(((vec4<f32>(f32(Q_smem[((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1)]), f32(Q_smem[((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1)]), f32(Q_smem[((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1)]), f32(Q_smem[((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1)])) * vec4<f32>(vec4<f16>(K_smem[v__9[0]], K_smem[v__9[1]], K_smem[v__9[2]], K_smem[v__9[3]]))) * vec4<f32>(8.838835e-02f, 8.838835e-02f, 8.838835e-02f, 8.838835e-02f)), vec4<f32>(1.442695e+00f, 1.442695e+00f, 1.442695e+00f, 1.442695e+00f), S_local[0i]);
      }
      for (var lk_1_1 : i32 = 0i; lk_1_1 < 16i; lk_1_1++) {
        let v__10 : vec4<i32> = vec4<i32>((((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1_1))+(128i*0), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1_1))+(128i*1), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1_1))+(128i*2), (((((i32(threadIdx.x) & 7i) * 512i) + (lk_0 * 16i)) + lk_1_1))+(128i*3));
        S_local[1i] = fma(((vec4<f32>(f32(Q_smem[(((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1_1) + 128i)]), f32(Q_smem[(((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1_1) + 128i)]), f32(Q_smem[(((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1_1) + 128i)]), f32(Q_smem[(((((i32(threadIdx.y) * 1024i) + ((i32(threadIdx.x)>>3u) * 256i)) + (lk_0 * 16i)) + lk_1_1) + 128i)])) * vec4<f32>(vec4<f16>(K_smem[v__10[0]], K_smem[v__10[1]], K_smem[v__10[2]], K_smem[v__10[3]]))) * vec4<f32>(8.838835e-02f, 8.838835e-02f, 8.838835e-02f, 8.838835e-02f)), vec4<f32>(1.442695e+00f, 1.442695e+00f, 1.442695e+00f, 1.442695e+00f), S_local[1i]);
      }
    }
    workgroupBarrier();
    let cse_v15 : i32 = (i32(threadIdx.y) * 256i);
    for (var li_1_1 : i32 = 0i; li_1_1 < 2i; li_1_1++) {
      let v__11 : i32 = ((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>3u) * 64i)) + (li_1_1 * 32i)) + ((i32(threadIdx.x) & 7i) * 4i));
      S_smem[v__11 + 0] = S_local[li_1_1][0];
      S_smem[v__11 + 1] = S_local[li_1_1][1];
      S_smem[v__11 + 2] = S_local[li_1_1][2];
      S_smem[v__11 + 3] = S_local[li_1_1][3];
    }
    workgroupBarrier();
    let row_1 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
    let cse_v18 : i32 = (i32(threadIdx.x) * 32i);
    let cse_v28 : i32 = ((i32(threadIdx.y) * 1024i) + (i32(threadIdx.x) * 32i));
        let rmod_18 : i32 = (v__1 % podArgs.cse_v24);
let cse_v54 : i32 = (((select((rmod_18 + podArgs.cse_v24), rmod_18, (((podArgs.cse_v24 >= 0i) && (rmod_18 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_18 <= 0i)))) * 8i) + (i32(threadIdx.y) * 8i)) + (i32(threadIdx.x)>>2u));
        let rmod_19 : i32 = (v__1 % podArgs.cse_v24);
let cse_v60 : i32 = (((((select((rmod_19 + podArgs.cse_v24), rmod_19, (((podArgs.cse_v24 >= 0i) && (rmod_19 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_19 <= 0i)))) * 8i) + (i32(threadIdx.y) * 8i)) + (i32(threadIdx.x)>>2u)) + podArgs.kv_len) - podArgs.qo_len);
    if (i32(threadIdx.y) < 1i) {
      m_prev[0i] = m_smem[i32(threadIdx.x)];
      m_new[0i] = m_smem[i32(threadIdx.x)];
            let rmod_20 : i32 = (v__1 % podArgs.cse_v24);
let row_ : i32 = (((select((rmod_20 + podArgs.cse_v24), rmod_20, (((podArgs.cse_v24 >= 0i) && (rmod_20 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_20 <= 0i)))) * 8i) + (i32(threadIdx.y) * 8i)) + (i32(threadIdx.x)>>2u));
      for (var j : i32 = 0i; j < 32i; j++) {
        let rmod_21 : i32 = (v__1 % podArgs.cse_v24);
        if (((iterator * 32i) + j) <= (((((select((rmod_21 + podArgs.cse_v24), rmod_21, (((podArgs.cse_v24 >= 0i) && (rmod_21 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_21 <= 0i)))) * 8i) + (i32(threadIdx.y) * 8i)) + (i32(threadIdx.x)>>2u)) + podArgs.kv_len) - podArgs.qo_len)) {
          m_new[0i] = max(m_new[0i], S_smem[(((i32(threadIdx.y) * 1024i) + (i32(threadIdx.x) * 32i)) + j)]);
        }
      }
      d_new[0i] = (d_smem[i32(threadIdx.x)] * exp2((m_prev[0i] - m_new[0i])));
    }
    let row_2 : i32 = ((i32(threadIdx.y) * 32i) + i32(threadIdx.x));
    for (var j_1 : i32 = 0i; j_1 < 32i; j_1++) {
      workgroupBarrier();
      if (i32(threadIdx.y) < 1i) {
                let rmod_22 : i32 = (v__1 % podArgs.cse_v24);
let row__1 : i32 = (((select((rmod_22 + podArgs.cse_v24), rmod_22, (((podArgs.cse_v24 >= 0i) && (rmod_22 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_22 <= 0i)))) * 8i) + (i32(threadIdx.y) * 8i)) + (i32(threadIdx.x)>>2u));
        let rmod_23 : i32 = (v__1 % podArgs.cse_v24);
        if (((iterator * 32i) + j_1) <= (((((select((rmod_23 + podArgs.cse_v24), rmod_23, (((podArgs.cse_v24 >= 0i) && (rmod_23 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_23 <= 0i)))) * 8i) + (i32(threadIdx.y) * 8i)) + (i32(threadIdx.x)>>2u)) + podArgs.kv_len) - podArgs.qo_len)) {
          let cse_v32 : i32 = (((i32(threadIdx.y) * 1024i) + (i32(threadIdx.x) * 32i)) + j_1);
          S_smem[(((i32(threadIdx.y) * 1024i) + (i32(threadIdx.x) * 32i)) + j_1)] = exp2((S_smem[(((i32(threadIdx.y) * 1024i) + (i32(threadIdx.x) * 32i)) + j_1)] - m_new[0i]));
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
    let cse_v42 : i32 = (((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i);
    O_local[2i] = (O_local[2i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)]))));
    O_local[3i] = (O_local[3i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 1i)]))));
    let cse_v43 : i32 = (((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i);
    O_local[4i] = (O_local[4i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)]))));
    O_local[5i] = (O_local[5i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 2i)]))));
    let cse_v44 : i32 = (((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i);
    O_local[6i] = (O_local[6i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)]))));
    O_local[7i] = (O_local[7i] * vec4<f32>(exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)])), exp2((m_prev_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)] - m_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + 3i)]))));
    for (var lk_0_1 : i32 = 0i; lk_0_1 < 2i; lk_0_1++) {
      for (var lk_1_2 : i32 = 0i; lk_1_2 < 16i; lk_1_2++) {
        let cse_v34 : i32 = (((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i));
        let cse_v52 : i32 = ((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2);
        O_local[0i] = fma(vec4<f32>(S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)]), vec4<f32>(V_smem[(((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i))]), O_local[0i]);
        let cse_v45 : i32 = ((((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i);
        O_local[1i] = fma(vec4<f32>(S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)], S_smem[((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2)]), vec4<f32>(V_smem[((((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)]), O_local[1i]);
        let cse_v55 : i32 = (((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i);
        O_local[2i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)]), vec4<f32>(V_smem[(((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i))]), O_local[2i]);
        O_local[3i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 32i)]), vec4<f32>(V_smem[((((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)]), O_local[3i]);
        let cse_v56 : i32 = (((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i);
        O_local[4i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)]), vec4<f32>(V_smem[(((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i))]), O_local[4i]);
        O_local[5i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 64i)]), vec4<f32>(V_smem[((((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)]), O_local[5i]);
        let cse_v57 : i32 = (((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i);
        O_local[6i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)]), vec4<f32>(V_smem[(((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i))]), O_local[6i]);
        O_local[7i] = fma(vec4<f32>(S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)], S_smem[(((((i32(threadIdx.y) * 256i) + ((i32(threadIdx.x)>>4u) * 128i)) + (lk_0_1 * 16i)) + lk_1_2) + 96i)]), vec4<f32>(V_smem[((((lk_0_1 * 512i) + (lk_1_2 * 32i)) + ((i32(threadIdx.x) & 15i) * 2i)) + 1i)]), O_local[7i]);
      }
    }
  }
  for (var li_1_2 : i32 = 0i; li_1_2 < 4i; li_1_2++) {
        let rmod_24 : i32 = (v__1 % podArgs.cse_v24);
let cse_v58 : i32 = (((select((rmod_24 + podArgs.cse_v24), rmod_24, (((podArgs.cse_v24 >= 0i) && (rmod_24 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_24 <= 0i)))) * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
        let rmod_25 : i32 = (v__1 % podArgs.cse_v24);
let cur_L_3 : i32 = (((select((rmod_25 + podArgs.cse_v24), rmod_25, (((podArgs.cse_v24 >= 0i) && (rmod_25 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_25 <= 0i)))) * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
    let cur_H_qo_1 : i32 = li_1_2;
    let cse_v21 : i32 = (li_1_2 * 2i);
    let cse_v46 : i32 = (((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2);
        let rmod_26 : i32 = (v__1 % podArgs.cse_v24);
    let rmod_27 : i32 = (v__1 % podArgs.cse_v24);
    let rdiv_8 : i32 = (v__1 / podArgs.cse_v24);
let cse_v61 : i32 = ((((((select((rmod_26 + podArgs.cse_v24), rmod_26, (((podArgs.cse_v24 >= 0i) && (rmod_26 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_26 <= 0i)))) * 4096i) + (i32(threadIdx.y) * 1024i)) + ((i32(threadIdx.x)>>4u) * 512i)) + ((select((rdiv_8 - 1i), rdiv_8, (((podArgs.cse_v24 >= 0i) && (rmod_27 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_27 <= 0i)))) * podArgs.qo_len) * 512i)) + (li_1_2 * 128i)) + ((i32(threadIdx.x) & 15i) * 8i));
    let rmod_28 : i32 = (v__1 % podArgs.cse_v24);
    if ((((select((rmod_28 + podArgs.cse_v24), rmod_28, (((podArgs.cse_v24 >= 0i) && (rmod_28 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_28 <= 0i)))) * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) < podArgs.qo_len) {
      let rmod_29 : i32 = (v__1 % podArgs.cse_v24);
      let rmod_30 : i32 = (v__1 % podArgs.cse_v24);
      let rdiv_9 : i32 = (v__1 / podArgs.cse_v24);
      let v__12 : i32 = ((((((select((rmod_29 + podArgs.cse_v24), rmod_29, (((podArgs.cse_v24 >= 0i) && (rmod_29 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_29 <= 0i)))) * 4096i) + (i32(threadIdx.y) * 1024i)) + ((i32(threadIdx.x)>>4u) * 512i)) + ((select((rdiv_9 - 1i), rdiv_9, (((podArgs.cse_v24 >= 0i) && (rmod_30 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_30 <= 0i)))) * podArgs.qo_len) * 512i)) + (li_1_2 * 128i)) + ((i32(threadIdx.x) & 15i) * 8i));
      output_ptr[v__12 + 0] = vec4<f16>((O_local[(li_1_2 * 2i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[0];
      output_ptr[v__12 + 1] = vec4<f16>((O_local[(li_1_2 * 2i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[1];
      output_ptr[v__12 + 2] = vec4<f16>((O_local[(li_1_2 * 2i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[2];
      output_ptr[v__12 + 3] = vec4<f16>((O_local[(li_1_2 * 2i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[3];
    }
        let rmod_31 : i32 = (v__1 % podArgs.cse_v24);
let cur_L_4 : i32 = (((select((rmod_31 + podArgs.cse_v24), rmod_31, (((podArgs.cse_v24 >= 0i) && (rmod_31 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_31 <= 0i)))) * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u));
    let cur_H_qo_2 : i32 = li_1_2;
    let rmod_32 : i32 = (v__1 % podArgs.cse_v24);
    if ((((select((rmod_32 + podArgs.cse_v24), rmod_32, (((podArgs.cse_v24 >= 0i) && (rmod_32 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_32 <= 0i)))) * 8i) + (i32(threadIdx.y) * 2i)) + (i32(threadIdx.x)>>4u)) < podArgs.qo_len) {
      let rmod_33 : i32 = (v__1 % podArgs.cse_v24);
      let rmod_34 : i32 = (v__1 % podArgs.cse_v24);
      let rdiv_10 : i32 = (v__1 / podArgs.cse_v24);
      let v__13 : i32 = (((((((select((rmod_33 + podArgs.cse_v24), rmod_33, (((podArgs.cse_v24 >= 0i) && (rmod_33 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_33 <= 0i)))) * 4096i) + (i32(threadIdx.y) * 1024i)) + ((i32(threadIdx.x)>>4u) * 512i)) + ((select((rdiv_10 - 1i), rdiv_10, (((podArgs.cse_v24 >= 0i) && (rmod_34 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_34 <= 0i)))) * podArgs.qo_len) * 512i)) + (li_1_2 * 128i)) + ((i32(threadIdx.x) & 15i) * 8i)) + 4i);
      output_ptr[v__13 + 0] = vec4<f16>((O_local[((li_1_2 * 2i) + 1i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[0];
      output_ptr[v__13 + 1] = vec4<f16>((O_local[((li_1_2 * 2i) + 1i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[1];
      output_ptr[v__13 + 2] = vec4<f16>((O_local[((li_1_2 * 2i) + 1i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[2];
      output_ptr[v__13 + 3] = vec4<f16>((O_local[((li_1_2 * 2i) + 1i)] / vec4<f32>(d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)], d_smem[(((i32(threadIdx.y) * 8i) + ((i32(threadIdx.x)>>4u) * 4i)) + li_1_2)])))[3];
    }
  }
  if (i32(threadIdx.y) < 1i) {
        let rmod_35 : i32 = (v__1 % podArgs.cse_v24);
let cse_v59 : i32 = (((i32(threadIdx.y) * 8i) + (select((rmod_35 + podArgs.cse_v24), rmod_35, (((podArgs.cse_v24 >= 0i) && (rmod_35 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_35 <= 0i)))) * 8i)) + (i32(threadIdx.x)>>2u));
        let rmod_36 : i32 = (v__1 % podArgs.cse_v24);
let cur_L_5 : i32 = (((i32(threadIdx.y) * 8i) + (select((rmod_36 + podArgs.cse_v24), rmod_36, (((podArgs.cse_v24 >= 0i) && (rmod_36 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_36 <= 0i)))) * 8i)) + (i32(threadIdx.x)>>2u));
    let cur_H_qo_3 : i32 = (i32(threadIdx.x) & 3i);
    let rmod_37 : i32 = (v__1 % podArgs.cse_v24);
    if ((((i32(threadIdx.y) * 8i) + (select((rmod_37 + podArgs.cse_v24), rmod_37, (((podArgs.cse_v24 >= 0i) && (rmod_37 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_37 <= 0i)))) * 8i)) + (i32(threadIdx.x)>>2u)) < podArgs.qo_len) {
      let rmod_38 : i32 = (v__1 % podArgs.cse_v24);
      let rmod_39 : i32 = (v__1 % podArgs.cse_v24);
      let rdiv_11 : i32 = (v__1 / podArgs.cse_v24);
      lse_ptr[(((select((rmod_38 + podArgs.cse_v24), rmod_38, (((podArgs.cse_v24 >= 0i) && (rmod_38 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_38 <= 0i)))) * 32i) + ((select((rdiv_11 - 1i), rdiv_11, (((podArgs.cse_v24 >= 0i) && (rmod_39 >= 0i)) || ((podArgs.cse_v24 < 0i) && (rmod_39 <= 0i)))) * podArgs.qo_len) * 4i)) + i32(threadIdx.x))] = f16((m_smem[i32(threadIdx.x)] + log2(d_smem[i32(threadIdx.x)])));
    }
  }
}


