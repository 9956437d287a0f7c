// rope: rotary embedding of q and k in place, one position per token (TVM _kernel_common._rope,
// f32 math, results stored in qkv_t).
//
// Pair i < D/2 of a row turns by the angle of its token's position p:
//   t_i = (p * rope_scale) * f_i,  f_i = rope_frequencies(rope_theta, 2i/D)   (rope_frequency*.wgsl)
//   x[a] <- cos(t_i) x[a] - sin(t_i) x[b]
//   x[b] <- cos(t_i) x[b] + sin(t_i) x[a]
// with (a, b) = (i, i + D/2) for NeoX pairing and (2i, 2i + 1) for GPT-J (ROPE_GPTJ). NeoX dims
// i and i + D/2 share the exponent ((2d) mod D = 2i for both), GPT-J dims 2i and 2i + 1 too
// (2 (d // 2) = 2i), so one invocation owns a whole pair: it reads both elements and writes
// both, no other invocation touches them, and the in-place update needs no barrier.
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

// (x[a], x[b]) rotated by the angle whose cosine and sine are c and s.
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
  // The pair's two dims: NeoX (i, i + D/2), GPT-J (2i, 2i + 1).
  let first = select(pair, 2u * pair, ROPE_GPTJ);
  let second = select(pair + HALF_DIM, 2u * pair + 1u, ROPE_GPTJ);
  let freq = rope_frequencies(params.rope_theta, vec4<f32>(f32(pair) * EXPONENT_STEP)).x;
  let angle = (f32(positions[token]) * params.rope_scale) * freq;
  let c = cos(angle);
  let s = sin(angle);
  if (head < QO_HEADS) {
    let row_start = (token * QO_HEADS + head) * HEAD_DIM;
    let y = rotate_pair(vec2<f32>(f32(q[row_start + first]), f32(q[row_start + second])), c, s);
    q[row_start + first] = qkv_t(y.x);
    q[row_start + second] = qkv_t(y.y);
  } else {
    let row_start = (token * KV_HEADS + head - QO_HEADS) * HEAD_DIM;
    let y = rotate_pair(vec2<f32>(f32(k[row_start + first]), f32(k[row_start + second])), c, s);
    k[row_start + first] = qkv_t(y.x);
    k[row_start + second] = qkv_t(y.y);
  }
}
