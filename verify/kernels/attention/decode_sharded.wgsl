// decode.sharded: paged-KV decode attention with the context cut into shards (one query token
// per sequence; TVM _attention_decode semantics, base-2 LSE, f32 math on qkv_t storage).
//
// Layout: one workgroup per (query head, sequence) = (workgroup_id.x, workgroup_id.y), of
// SHARDS x LANES invocations. Invocation (shard, lane) = local_invocation_id.xy:
//   - shard s owns the contiguous rows [start_s, start_s + len_s) of the context, balanced so
//     lengths differ by at most one (len_s = L / SHARDS, plus one for s < L % SHARDS); only
//     min(L, SHARDS) shards have rows;
//   - lane l holds dims [l * DIMS_PER_LANE, (l + 1) * DIMS_PER_LANE) of q and of the running
//     output in registers.
//   D = 64: 128 shards x 1 lane of 64 dims     D = 128: 128 x 2 lanes of 64
//   D = 96: 128 shards x 2 lanes of 48 dims    D = 256:  64 x 4 lanes of 64
// Per position t every lane of a shard forms the partial dot product of its dims with K row
// start_s + t and writes it to partial_dots[t % 2]; after the one workgroupBarrier of the
// position each lane sums its shard's LANES partials in lane order (so all lanes of a shard get
// the same logit bit for bit) and updates its own (m, d, o) online-softmax state, which starts
// at the shard's first row (m = s_0, d = 1, o = v_0), not at an m = -5e4 sentinel. The parity
// double buffer is what makes one barrier per position enough: a lane that runs ahead writes
// the other buffer, and cannot come back to this one before every lane has passed the next
// barrier, i.e. has finished reading. Every invocation runs ceil(L / SHARDS) positions, so the
// barriers stay in uniform control flow when shards differ in length; a shard past its rows
// only writes a 0 partial that nobody reads. (With one lane, D = 64, a shard only reads its own
// partial and the barrier has nothing to order; it stays so all layouts share one code path.)
//
// Merge of the shard states, in two phases:
//   1. shard_max[s] = m_s; M = max_s m_s; w_s = 2^(m_s - M); shard_denom[s] = d_s w_s;
//      d = sum_s shard_denom[s] (shard order); lse = M + log2(d).
//   2. HEAD_DIM / CHUNK rounds (CHUNK = 2048 / SHARDS, so staging takes 8 KiB): the lane
//      owning dims [c CHUNK, (c + 1) CHUNK) stages w_s o_s[dim] in staged[s][dim - c CHUNK];
//      invocation i < CHUNK sums column i over the shards that have rows (shard order) and
//      writes output dim c CHUNK + i = sum / d.
// A shard without rows is never read in the merge, so it contributes nothing (no initial
// m = -5e4 state as in TVM). An empty context writes output 0 and lse = -inf (bit pattern
// 0xff800000: WGSL lets an implementation assume no infinities in arithmetic).
// Workgroup storage: 4 (2 SHARDS LANES + 2 SHARDS + SHARDS CHUNK) bytes <= 11 KiB.
//
// RoPE (rotary_mode 1): NeoX pairing of dim d with d +- D/2 in f32, angle =
// (pos * rope_scale) * f_d, f_d = rope_theta^(-((2d) mod D) / D) unscaled or with Llama 3's
// scaling (rope_frequencies, appended from rope_frequency*.wgsl), then rounded to qkv_t as TVM's cast_qkv;
// q at q_rope_position[b], K row r at k_rope_pos_offset[b] + r (r logical, not the slot).

struct DecodeParams {
  batch: u32,
  rotary_mode: u32,
  rope_scale: f32,
  rope_theta: f32,
  sm_scale: f32,
}

@group(0) @binding(0) var<storage, read> q: array<vec4<qkv_t>>;
@group(0) @binding(1) var<storage, read> pages: array<vec4<qkv_t>>;
@group(0) @binding(2) var<storage, read> page_indptr: array<i32>;
@group(0) @binding(3) var<storage, read> page_values: array<i32>;
@group(0) @binding(4) var<storage, read> length_info: array<i32>;
@group(0) @binding(5) var<storage, read> k_rope_pos_offset: array<i32>;
@group(0) @binding(6) var<storage, read> q_rope_position: array<i32>;
@group(0) @binding(7) var<storage, read_write> output: array<qkv_t>;
@group(0) @binding(8) var<storage, read_write> lse: array<f32>;
@group(0) @binding(9) var<uniform> params: DecodeParams;

const DIMS_PER_LANE: u32 = HEAD_DIM / LANES;
const LANE_VECS: u32 = DIMS_PER_LANE / 4u;
const ROW_VECS: u32 = HEAD_DIM / 4u;
const HALF_VECS: u32 = HEAD_DIM / 8u;
const GROUP_SIZE: u32 = QO_HEADS / KV_HEADS;
const LOG2E: f32 = 1.4426950408889634;
const NEG_INF_BITS: u32 = 0xff800000u;

// A user function, so -inf is made at run time, never by const-evaluation: a const-expression
// that evaluates to an infinity is a shader-creation error (WGSL, floating-point evaluation;
// Tint enforces it, Naga does not).
fn f32_from_bits(bits: u32) -> f32 {
  return bitcast<f32>(bits);
}

var<workgroup> partial_dots: array<f32, 2u * SHARDS * LANES>;
var<workgroup> shard_max: array<f32, SHARDS>;
var<workgroup> shard_denom: array<f32, SHARDS>;
var<workgroup> staged: array<f32, SHARDS * CHUNK>;

// Rows attended by sequence b (TVM _get_kv_chunk_len); 0 when it has no pages.
fn context_length(b: u32) -> u32 {
  let first = page_indptr[b];
  let last = page_indptr[b + 1u];
  if (first == last) {
    return 0u;
  }
  let full_rows = u32(last - first - 1) * PAGE_SIZE;
  if (SLIDING_WINDOW) {
    let batch = params.batch;
    return full_rows + u32(length_info[b] - length_info[batch + b] + length_info[2u * batch + b]);
  }
  return full_rows + u32(length_info[b]);
}

// Index (in vec4s) of the first element of logical row `row` of K (kind 0) or V (kind 1).
fn row_index(b: u32, kv_head: u32, row: u32, kind: u32) -> u32 {
  var slot = row;
  if (SLIDING_WINDOW) {
    let sink = u32(length_info[2u * params.batch + b]);
    if (row >= sink) {
      slot = row - sink + u32(length_info[params.batch + b]);
    }
  }
  let page = u32(page_values[u32(page_indptr[b]) + slot / PAGE_SIZE]);
  return (((page * 2u + kind) * KV_HEADS + kv_head) * PAGE_SIZE + slot % PAGE_SIZE) * ROW_VECS;
}

// NeoX rotation of dims 4 quad .. 4 quad + 3 of a row, given those dims `x` and their partners
// `partner` (dims +- HEAD_DIM / 2), rounded to the storage type as TVM's cast_qkv.
fn rotate(x: vec4<f32>, partner: vec4<f32>, quad: u32, position: i32) -> vec4<f32> {
  let dims = vec4<u32>(4u * quad) + vec4<u32>(0u, 1u, 2u, 3u);
  let exponent = vec4<f32>((2u * dims) % HEAD_DIM) / f32(HEAD_DIM);
  let angle = vec4<f32>(f32(position) * params.rope_scale) * rope_frequencies(params.rope_theta, exponent);
  let side = select(1.0, -1.0, quad < HALF_VECS);
  return vec4<f32>(vec4<qkv_t>(cos(angle) * x + sin(angle) * (side * partner)));
}

fn partner_quad(quad: u32) -> u32 {
  return (quad + HALF_VECS) % ROW_VECS;
}

@compute @workgroup_size(SHARDS, LANES, 1)
fn decode_sharded(@builtin(workgroup_id) group: vec3<u32>,
                  @builtin(local_invocation_id) local: vec3<u32>,
                  @builtin(local_invocation_index) invocation: u32) {
  let head = group.x;
  let b = group.y;
  if (b >= params.batch) {
    return;
  }
  let shard = local.x;
  let lane = local.y;
  let kv_head = head / GROUP_SIZE;
  let out_row = b * QO_HEADS + head;
  let context = context_length(b);
  if (context == 0u) {
    if (invocation < HEAD_DIM) {
      output[out_row * HEAD_DIM + invocation] = qkv_t(0.0);
    }
    if (invocation == 0u) {
      lse[out_row] = f32_from_bits(NEG_INF_BITS);
    }
    return;
  }

  let rotary = params.rotary_mode == 1u;
  let first_quad = lane * LANE_VECS;
  var q_lane: array<vec4<f32>, LANE_VECS>;
  for (var i = 0u; i < LANE_VECS; i++) {
    let quad = first_quad + i;
    var x = vec4<f32>(q[out_row * ROW_VECS + quad]);
    if (rotary) {
      x = rotate(x, vec4<f32>(q[out_row * ROW_VECS + partner_quad(quad)]), quad, q_rope_position[b]);
    }
    q_lane[i] = x;
  }

  let base_len = context / SHARDS;
  let extra = context % SHARDS;
  let shard_len = base_len + select(0u, 1u, shard < extra);
  let shard_start = shard * base_len + min(shard, extra);
  let steps = base_len + select(0u, 1u, extra > 0u);
  let scale = params.sm_scale * LOG2E;

  var m = 0.0;
  var d = 0.0;
  var o: array<vec4<f32>, LANE_VECS>;
  for (var t = 0u; t < steps; t++) {
    let row = shard_start + t;
    let has_row = t < shard_len;
    let parity = (t & 1u) * SHARDS * LANES;
    var partial = 0.0;
    if (has_row) {
      let k_row = row_index(b, kv_head, row, 0u);
      let k_position = k_rope_pos_offset[b] + i32(row);
      for (var i = 0u; i < LANE_VECS; i++) {
        let quad = first_quad + i;
        var k = vec4<f32>(pages[k_row + quad]);
        if (rotary) {
          k = rotate(k, vec4<f32>(pages[k_row + partner_quad(quad)]), quad, k_position);
        }
        partial += dot(q_lane[i], k);
      }
    }
    partial_dots[parity + shard * LANES + lane] = partial;
    workgroupBarrier();
    if (has_row) {
      var dot_qk = 0.0;
      for (var l = 0u; l < LANES; l++) {
        dot_qk += partial_dots[parity + shard * LANES + l];
      }
      let s = dot_qk * scale;
      let v_row = row_index(b, kv_head, row, 1u) + first_quad;
      if (t == 0u) {
        m = s;
        d = 1.0;
        for (var i = 0u; i < LANE_VECS; i++) {
          o[i] = vec4<f32>(pages[v_row + i]);
        }
      } else {
        let m_new = max(m, s);
        let rescale = exp2(m - m_new);
        let p = exp2(s - m_new);
        d = d * rescale + p;
        for (var i = 0u; i < LANE_VECS; i++) {
          o[i] = o[i] * rescale + p * vec4<f32>(pages[v_row + i]);
        }
        m = m_new;
      }
    }
  }

  // Phase 1: the common maximum and the denominator.
  let shards_used = min(context, SHARDS);
  let used = shard < shards_used;
  if (used && lane == 0u) {
    shard_max[shard] = m;
  }
  workgroupBarrier();
  var m_all = shard_max[0];
  for (var s = 1u; s < shards_used; s++) {
    m_all = max(m_all, shard_max[s]);
  }
  var weight = 0.0;
  if (used) {
    weight = exp2(m - m_all);
  }
  if (used && lane == 0u) {
    shard_denom[shard] = d * weight;
  }
  workgroupBarrier();
  var d_all = 0.0;
  if (invocation < CHUNK) {
    for (var s = 0u; s < shards_used; s++) {
      d_all += shard_denom[s];
    }
  }
  if (invocation == 0u) {
    lse[out_row] = m_all + log2(d_all);
  }

  // Phase 2: the weighted outputs, CHUNK dims a round, one dim per summing invocation.
  for (var c = 0u; c < HEAD_DIM / CHUNK; c++) {
    let owner = c * CHUNK / DIMS_PER_LANE;
    if (used && lane == owner) {
      let chunk_quad = (c * CHUNK - owner * DIMS_PER_LANE) / 4u;
      for (var j = 0u; j < CHUNK / 4u; j++) {
        let weighted = o[chunk_quad + j] * weight;
        let at = shard * CHUNK + 4u * j;
        staged[at] = weighted.x;
        staged[at + 1u] = weighted.y;
        staged[at + 2u] = weighted.z;
        staged[at + 3u] = weighted.w;
      }
    }
    workgroupBarrier();
    if (invocation < CHUNK) {
      var sum = 0.0;
      for (var s = 0u; s < shards_used; s++) {
        sum += staged[s * CHUNK + invocation];
      }
      output[out_row * HEAD_DIM + c * CHUNK + invocation] = qkv_t(sum / d_all);
    }
    workgroupBarrier();
  }
}
