// decode.tiled: paged-KV decode attention, one query token per sequence, with TVM's classic
// nest (relax/frontend/nn/llm/_decode_kernels.py `_attention_decode`; docs/tvm.md §6).
//
// Grid (B, KV_HEADS * GDZ): workgroup (x, y) serves sequence b = x, kv head by = y % KV_HEADS
// and the BDY query heads by*GROUP + bz*BDY + ty of head slice bz = y / KV_HEADS (a slice
// whose last heads lie past the group computes them and writes nothing).
// Workgroup (BDX, BDY, BDZ), BDX = HEAD_DIM/4:
//   tx  lane across the head dim: owns dims 4tx..4tx+3 of q, K, V and o as one vec4;
//   ty  query head of the GQA group (all BDY heads share the kv head's K/V tiles);
//   tz  KV-row slice: BDZ slices run independent online softmaxes over disjoint rows.
// Iteration it stages TILE_ROWS = BDZ*BDY*TILE consecutive logical rows in workgroup memory:
//   invocation (ty, tz) loads rows it*TILE_ROWS + (tz*BDY + ty)*TILE + j, j < TILE, and
//   slice tz consumes rows it*TILE_ROWS + tz*SLICE_ROWS + j, j < SLICE_ROWS = BDY*TILE.
// Logical row r lives in slot(r) = r (or r < sink ? r : r - sink + offset with SLIDING_WINDOW),
// physical page page_values[page_indptr[b] + slot/PAGE_SIZE], row slot % PAGE_SIZE.
//
// Per iteration and slice: each lane writes its 4-dim partial q.k of every row to `partial`;
// lane j of the slice sums row j across the BDX lanes (workgroup memory, no subgroups) and
// scales it to the log2 domain; then every lane folds the rows into its state (m, d, o):
//   m' = max(m, s_j), d = d*2^(m-m') + sum 2^(s_j-m'), o = o*2^(m-m') + sum 2^(s_j-m') v_j.
// At the end the BDZ slice states of each head are merged through workgroup memory and tz = 0
// writes o/d and lse = m + log2(d) (base 2). Rows past the attended length are never read;
// an empty context writes o = 0 and lse = -inf (its bit pattern: WGSL lets implementations
// assume arithmetic never produces infinities).
// With rotary_mode 1, q (at q_rope_position[b]) and each K row (at k_rope_pos_offset[b] + r)
// get the NeoX rotation in f32 at the frequencies of rope_frequencies (unscaled or Llama 3's,
// appended from rope_frequency*.wgsl), rounded to qkv_t as TVM's cast_qkv does; a lane reads its
// dims' partners (d +- HEAD_DIM/2) straight from global memory.

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
@group(0) @binding(7) var<storage, read_write> output: array<vec4<qkv_t>>;
@group(0) @binding(8) var<storage, read_write> lse: array<f32>;
@group(0) @binding(9) var<uniform> params: DecodeParams;

const BDX: u32 = HEAD_DIM / 4u;
const HALF_LANES: u32 = BDX / 2u;
const GROUP: u32 = QO_HEADS / KV_HEADS;
const SLICE_ROWS: u32 = BDY * TILE;
const TILE_ROWS: u32 = BDZ * SLICE_ROWS;
const LOG2E: f32 = 1.4426950408889634;
// The state's m before any row: the most negative finite f32, so every logit is >= it and
// 2^(M_START - m') is 0 once a row of any realistic logit m' has been seen.
const M_START: f32 = -0x1.fffffep+127f;
const NEG_INF_BITS: u32 = 0xff800000u;

var<workgroup> k_tile: array<vec4<qkv_t>, TILE_ROWS * BDX>;
var<workgroup> v_tile: array<vec4<qkv_t>, TILE_ROWS * BDX>;
var<workgroup> partial: array<f32, BDZ * BDY * SLICE_ROWS * BDX>;
var<workgroup> logit: array<f32, BDZ * BDY * SLICE_ROWS>;
var<workgroup> merge_o: array<vec4<f32>, BDZ * BDY * BDX>;
var<workgroup> merge_md: array<vec2<f32>, BDZ * BDY>;

// A user function, so -inf is made at run time, never by const-evaluation (a creation error).
fn f32_from_bits(bits: u32) -> f32 {
  return bitcast<f32>(bits);
}

// Attended rows of sequence b with `num_pages` pages (TVM `_get_kv_chunk_len`).
fn attended_length(b: u32, num_pages: i32) -> i32 {
  if (num_pages == 0) {
    return 0;
  }
  var length = (num_pages - 1) * i32(PAGE_SIZE) + length_info[b];
  if (SLIDING_WINDOW) {
    length += length_info[2u * params.batch + b] - length_info[params.batch + b];
  }
  return length;
}

// Physical slot of logical row r (TVM `_get_seq_offset`): sinks first, then the window.
fn row_slot(b: u32, row: i32) -> i32 {
  if (SLIDING_WINDOW) {
    let sink = length_info[2u * params.batch + b];
    if (row >= sink) {
      return row - sink + length_info[params.batch + b];
    }
  }
  return row;
}

// NeoX rotation of this lane's dims `x` by angle position*rope_scale*freq; `partner` holds the
// dims d + HEAD_DIM/2 (lower half, subtracted) or d - HEAD_DIM/2 (upper half, added).
fn rotate(x: vec4<f32>, partner: vec4<f32>, lower: bool, freq: vec4<f32>, position: i32) -> vec4<f32> {
  let angle = (f32(position) * params.rope_scale) * freq;
  let signed_partner = select(partner, -partner, lower);
  return cos(angle) * x + sin(angle) * signed_partner;
}

@compute @workgroup_size(BDX, BDY, BDZ)
fn decode_tiled(@builtin(workgroup_id) group_id: vec3<u32>,
                @builtin(local_invocation_id) lane: vec3<u32>) {
  let b = group_id.x;
  let kv_head = group_id.y % KV_HEADS;
  let head_slice = group_id.y / KV_HEADS;
  let tx = lane.x;
  let ty = lane.y;
  let tz = lane.z;
  let group_head = head_slice * BDY + ty;
  let writes = group_head < GROUP && tz == 0u;
  let head = kv_head * GROUP + min(group_head, GROUP - 1u);

  // First vec4 of this head's q and output rows.
  let head_row = (b * QO_HEADS + head) * BDX;

  let first_page = page_indptr[b];
  let length = attended_length(b, page_indptr[b + 1u] - first_page);
  if (length <= 0) {
    if (writes) {
      output[head_row + tx] = vec4<qkv_t>(0.0);
      if (tx == 0u) {
        lse[b * QO_HEADS + head] = f32_from_bits(NEG_INF_BITS);
      }
    }
    return;
  }

  // Lanes below HALF_LANES hold the lower half of the head, whose partners are d + HEAD_DIM/2.
  let lower = tx < HALF_LANES;
  let partner_lane = (tx + HALF_LANES) % BDX;
  // freq_d = rope_theta^(-((2d) mod HEAD_DIM)/HEAD_DIM) (then scaled: rope_frequency*.wgsl), shared
  // by d and its partner.
  let dims = vec4<u32>(4u * tx) + vec4<u32>(0u, 1u, 2u, 3u);
  let exponent = vec4<f32>((2u * dims) % HEAD_DIM) / f32(HEAD_DIM);
  let freq = rope_frequencies(params.rope_theta, exponent);
  let rotary = params.rotary_mode == 1u;

  var q_lane = vec4<f32>(q[head_row + tx]);
  if (rotary) {
    let rotated = rotate(q_lane, vec4<f32>(q[head_row + partner_lane]), lower, freq, q_rope_position[b]);
    q_lane = vec4<f32>(vec4<qkv_t>(rotated));
  }
  let log2_scale = params.sm_scale * LOG2E;

  var m = M_START;
  var d = 0.0;
  var o = vec4<f32>(0.0);
  let iterations = (u32(length) + TILE_ROWS - 1u) / TILE_ROWS;
  for (var it = 0u; it < iterations; it++) {
    let tile_first = i32(it * TILE_ROWS);
    // Every lane is done with the previous tile's K, V, partials and logits.
    workgroupBarrier();
    for (var j = 0u; j < TILE; j++) {
      let tile_row = (tz * BDY + ty) * TILE + j;
      let row = tile_first + i32(tile_row);
      if (row < length) {
        let slot = row_slot(b, row);
        let page = u32(page_values[first_page + slot / i32(PAGE_SIZE)]);
        let base = ((page * 2u * KV_HEADS + kv_head) * PAGE_SIZE + u32(slot % i32(PAGE_SIZE))) * BDX;
        let v_base = base + KV_HEADS * PAGE_SIZE * BDX;
        var k_row = pages[base + tx];
        if (rotary) {
          let position = k_rope_pos_offset[b] + row;
          k_row = vec4<qkv_t>(rotate(vec4<f32>(k_row), vec4<f32>(pages[base + partner_lane]), lower, freq, position));
        }
        k_tile[tile_row * BDX + tx] = k_row;
        v_tile[tile_row * BDX + tx] = pages[v_base + tx];
      }
    }
    workgroupBarrier();

    let slice_first = tile_first + i32(tz * SLICE_ROWS);
    let count = u32(clamp(length - slice_first, 0, i32(SLICE_ROWS)));
    // This head's logits of the slice, and its partials (BDX per row) at logit_base*BDX.
    let logit_base = (tz * BDY + ty) * SLICE_ROWS;
    for (var j = 0u; j < count; j++) {
      let k_lane = vec4<f32>(k_tile[(tz * SLICE_ROWS + j) * BDX + tx]);
      partial[(logit_base + j) * BDX + tx] = dot(q_lane, k_lane);
    }
    workgroupBarrier();

    if (tx < count) {
      var sum = 0.0;
      for (var l = 0u; l < BDX; l++) {
        sum += partial[(logit_base + tx) * BDX + l];
      }
      logit[logit_base + tx] = sum * log2_scale;
    }
    workgroupBarrier();

    if (count > 0u) {
      var m_new = m;
      for (var j = 0u; j < count; j++) {
        m_new = max(m_new, logit[logit_base + j]);
      }
      let rescale = exp2(m - m_new);
      d *= rescale;
      o *= rescale;
      for (var j = 0u; j < count; j++) {
        let weight = exp2(logit[logit_base + j] - m_new);
        d += weight;
        o += weight * vec4<f32>(v_tile[(tz * SLICE_ROWS + j) * BDX + tx]);
      }
      m = m_new;
    }
  }

  // Merge the BDZ slice states of each head; a slice that saw no row has d = 0, o = 0.
  merge_o[(tz * BDY + ty) * BDX + tx] = o;
  if (tx == 0u) {
    merge_md[tz * BDY + ty] = vec2<f32>(m, d);
  }
  workgroupBarrier();
  if (!writes) {
    return;
  }
  var m_all = M_START;
  for (var z = 0u; z < BDZ; z++) {
    m_all = max(m_all, merge_md[z * BDY + ty].x);
  }
  var d_all = 0.0;
  var o_all = vec4<f32>(0.0);
  for (var z = 0u; z < BDZ; z++) {
    let state = merge_md[z * BDY + ty];
    let weight = exp2(state.x - m_all);
    d_all += state.y * weight;
    o_all += merge_o[(z * BDY + ty) * BDX + tx] * weight;
  }
  output[head_row + tx] = vec4<qkv_t>(o_all / d_all);
  if (tx == 0u) {
    lse[b * QO_HEADS + head] = m_all + log2(d_all);
  }
}
