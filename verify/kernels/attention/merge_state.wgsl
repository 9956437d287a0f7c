// merge_state: merge two base-2 attention states in place, (v, s) <- merge((v, s), (v_other, s_other)).
//
// Per row (token x head): M = max(s, s'), a = 2^(s-M), b = 2^(s'-M),
//   v <- (a v + b v') / (a + b),  s <- M + log2(a + b)          (TVM _merge_state_inplace)
// An empty state has s = -inf and weight exactly 0, tested on the bit pattern because WGSL lets
// an implementation assume no infinities in arithmetic. Merging two empty states leaves v = 0
// and s = -inf.
//
// Layout: a workgroup covers ROWS_PER_GROUP rows; lane x of a row owns dims 4x..4x+3. All lanes
// of a row read s before lane 0 overwrites it, so the read and the write are split by a barrier.

struct MergeParams {
  rows: u32,
}

@group(0) @binding(0) var<storage, read_write> v: array<vec4<v_t>>;
@group(0) @binding(1) var<storage, read_write> s: array<f32>;
@group(0) @binding(2) var<storage, read> v_other: array<vec4<v_t>>;
@group(0) @binding(3) var<storage, read> s_other: array<f32>;
@group(0) @binding(4) var<uniform> params: MergeParams;

const LANES: u32 = HEAD_DIM / 4u;
const NEG_INF_BITS: u32 = 0xff800000u;

// A user function, so -inf is made at run time, never by const-evaluation: a const-expression
// that evaluates to an infinity is a shader-creation error (WGSL, floating-point evaluation;
// Tint enforces it, Naga does not).
fn f32_from_bits(bits: u32) -> f32 {
  return bitcast<f32>(bits);
}

fn is_empty(lse: f32) -> bool {
  return bitcast<u32>(lse) == NEG_INF_BITS;
}

@compute @workgroup_size(LANES, ROWS_PER_GROUP, 1)
fn merge_state(@builtin(workgroup_id) group: vec3<u32>,
               @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_id) lane: vec3<u32>) {
  let row = (group.y * groups.x + group.x) * ROWS_PER_GROUP + lane.y;
  let in_range = row < params.rows;
  var s_self = f32_from_bits(NEG_INF_BITS);
  var s_peer = f32_from_bits(NEG_INF_BITS);
  if (in_range) {
    s_self = s[row];
    s_peer = s_other[row];
  }
  workgroupBarrier();
  if (!in_range) {
    return;
  }
  let self_empty = is_empty(s_self);
  let peer_empty = is_empty(s_peer);
  let index = row * LANES + lane.x;
  if (self_empty && peer_empty) {
    v[index] = vec4<v_t>(0.0);
    return;
  }
  var w_self = 0.0;
  var w_peer = 0.0;
  var m = 0.0;
  if (peer_empty) {
    m = s_self;
    w_self = 1.0;
  } else if (self_empty) {
    m = s_peer;
    w_peer = 1.0;
  } else {
    m = max(s_self, s_peer);
    w_self = exp2(s_self - m);
    w_peer = exp2(s_peer - m);
  }
  let d = w_self + w_peer;
  let merged = (vec4<f32>(v[index]) * w_self + vec4<f32>(v_other[index]) * w_peer) / d;
  v[index] = vec4<v_t>(merged);
  if (lane.x == 0u) {
    s[row] = m + log2(d);
  }
}
