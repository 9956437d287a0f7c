// rope: NeoX rotary embedding of q and k in place, one position per token.
//
// Pair i < D/2 of a row, (x[i], x[i + D/2]), turns by the angle of its token's position p:
//   t_i = p * rope_scale / rope_theta^(2i/D)                   (TVM _kernel_common._rope,
//   x[i]       <- cos(t_i) x[i]       - sin(t_i) x[i + D/2]      rope_freq_default; f32 math)
//   x[i + D/2] <- cos(t_i) x[i + D/2] + sin(t_i) x[i]
// Dims i and i + D/2 share the exponent ((2d) mod D = 2i for both), so one invocation owns a
// whole pair: it reads both elements and writes both, no other invocation touches them, and the
// in-place update needs no barrier.
//
// The exponent 2i/D is f32(i) times the constant 2/D: exact when D is a power of two (a
// correctly rounded product whose result is representable is exact, WGSL §15.7.4); for D = 96
// it is rounded twice (constant, product), within the one division rope_angle_rel allows for it.
//
// Layout: row r is (token r / HEADS, head r % HEADS), the QO_HEADS query heads of a token
// first, then its KV_HEADS key heads. A workgroup covers ROWS_PER_GROUP rows; lane x of a row
// owns pair x.

struct RopeParams {
  tokens: u32,
  rope_scale: f32,
  rope_theta: f32,
}

@group(0) @binding(0) var<storage, read_write> q: array<qkv_t>;
@group(0) @binding(1) var<storage, read_write> k: array<qkv_t>;
@group(0) @binding(2) var<storage, read> positions: array<i32>;
@group(0) @binding(3) var<uniform> params: RopeParams;

const HALF_DIM: u32 = HEAD_DIM / 2u;
const HEADS: u32 = QO_HEADS + KV_HEADS;
const EXPONENT_STEP: f32 = 2.0 / f32(HEAD_DIM);

// (x[i], x[i + D/2]) rotated by the angle whose cosine and sine are c and s.
fn rotate_pair(x: vec2<f32>, c: f32, s: f32) -> vec2<f32> {
  return vec2<f32>(c * x.x - s * x.y, c * x.y + s * x.x);
}

@compute @workgroup_size(HALF_DIM, ROWS_PER_GROUP, 1)
fn rope(@builtin(workgroup_id) group: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_id) lane: vec3<u32>) {
  let row = (group.y * groups.x + group.x) * ROWS_PER_GROUP + lane.y;
  if (row >= params.tokens * HEADS) {
    return;
  }
  let token = row / HEADS;
  let head = row % HEADS;
  let pair = lane.x;
  let position = f32(positions[token]);
  let angle = position * params.rope_scale / pow(params.rope_theta, f32(pair) * EXPONENT_STEP);
  let c = cos(angle);
  let s = sin(angle);
  if (head < QO_HEADS) {
    let lo = (token * QO_HEADS + head) * HEAD_DIM + pair;
    let hi = lo + HALF_DIM;
    let y = rotate_pair(vec2<f32>(f32(q[lo]), f32(q[hi])), c, s);
    q[lo] = qkv_t(y.x);
    q[hi] = qkv_t(y.y);
  } else {
    let lo = (token * KV_HEADS + head - QO_HEADS) * HEAD_DIM + pair;
    let hi = lo + HALF_DIM;
    let y = rotate_pair(vec2<f32>(f32(k[lo]), f32(k[hi])), c, s);
    k[lo] = qkv_t(y.x);
    k[hi] = qkv_t(y.y);
  }
}
