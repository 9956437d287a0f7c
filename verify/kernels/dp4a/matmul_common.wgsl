// dp4a.matmul, the part every tile shares: bindings, weight unpacking and the integer core.
//
// Y[b, m, n] = bias[n] + sum_c T( f32(I_c) * f32( T(s_a[b, m, c / 4] * s_b[n, 32 c / BLOCK_SIZE]) ) )
//   I_c = sum_{k in chunk c} a[b, m, k] * (q[n, k] - zp[n, k / BLOCK_SIZE])      exact in i32
// over 32-value chunks c (eight dot4I8Packed, ORT's SDP8AI), summed in acc_t, bias added once at
// the end (onnxruntime dp4a_matmul_common.wgsl.template@1ce6307; docs/ort-dp4a.md §5).
//
// Layouts, little-endian words:
//   input_a      u32 [batch, M, K/4]   int8 codes, code 4j+i in bits 8i..8i+7 (dp4a.quantize's output)
//   scales_a     T   [batch, M, K/128]
//   input_b      u32 [N, K*BITS/32]    MatMulNBits' B [N, K/BLOCK_SIZE, BLOCK_SIZE*BITS/8], low bits first
//   scales_b     T   [N, K/BLOCK_SIZE]
//   zero_points  u32 words over bytes [N, ceil(K/BLOCK_SIZE * BITS/8)], packed like B; each row
//                starts on a byte (read only if HAS_ZERO_POINTS; else zp = 2^(BITS-1))
//   bias         T   [N]              (read only if HAS_BIAS)
//   output       T   [batch, M, N]
// An absent optional input is bound as one poisoned word, so a kernel that reads it anyway
// shows NaN or a wrong zero point.

struct MatmulParams {
  batch: u32,
  m: u32,
  n: u32,
  k: u32,
}

@group(0) @binding(0) var<storage, read> input_a: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> scales_a: array<T>;
@group(0) @binding(2) var<storage, read> input_b: array<u32>;
@group(0) @binding(3) var<storage, read> scales_b: array<T>;
@group(0) @binding(4) var<storage, read> zero_points: array<u32>;
@group(0) @binding(5) var<storage, read> bias: array<T>;
@group(0) @binding(6) var<storage, read_write> output: array<T>;
@group(0) @binding(7) var<uniform> params: MatmulParams;

// K values one integer step covers: two vec4<u32> of A, 32 int8 codes.
const CHUNK: u32 = 32u;
// Activation quantization block (fixed by dp4a.quantize) and its chunks.
const A_BLOCK: u32 = 128u;
const CHUNKS_PER_A_BLOCK: u32 = A_BLOCK / CHUNK;
// MatMulNBits' zero point when none is given: 8 for 4-bit weights, 128 for 8-bit.
const DEFAULT_ZERO_POINT: i32 = 1i << (BITS - 1u);

fn chunk_count() -> u32 {
  return params.k / CHUNK;
}

// Half `half` (16 codes) of chunk `chunk` of A row `row` (rows count across the batch).
fn a_codes(row: u32, chunk: u32, half: u32) -> vec4<u32> {
  return input_a[row * (params.k / 16u) + chunk * 2u + half];
}

fn a_scale(row: u32, chunk: u32) -> T {
  return scales_a[row * (params.k / A_BLOCK) + chunk / CHUNKS_PER_A_BLOCK];
}

fn weight_blocks_per_row() -> u32 {
  return params.k / BLOCK_SIZE;
}

// The weight block a chunk lies in; BLOCK_SIZE >= 32, so a chunk never straddles two.
fn weight_block(chunk: u32) -> u32 {
  return chunk * CHUNK / BLOCK_SIZE;
}

fn b_scale(n: u32, chunk: u32) -> T {
  return scales_b[n * weight_blocks_per_row() + weight_block(chunk)];
}

fn zero_point(n: u32, block: u32) -> i32 {
  if (!HAS_ZERO_POINTS) {
    return DEFAULT_ZERO_POINT;
  }
  // BITS-bit fields, low bits first; a row holds its block count rounded up to whole bytes.
  let per_byte = 8u / BITS;
  let fields_per_row = (weight_blocks_per_row() + per_byte - 1u) / per_byte * per_byte;
  let field = n * fields_per_row + block;
  let per_word = 32u / BITS;
  return i32(extractBits(zero_points[field / per_word], field % per_word * BITS, BITS));
}

// The 8 nibbles of a word (value i in bits 4i..4i+3) minus `zero`, as 8 int8 in two words.
fn centered_nibbles(word: u32, zero: i32) -> vec2<u32> {
  let even = vec4<i32>(unpack4xU8(word & 0x0F0F0F0Fu));
  let odd = vec4<i32>(unpack4xU8((word >> 4u) & 0x0F0F0F0Fu));
  return vec2<u32>(pack4xI8(vec4<i32>(even.x, odd.x, even.y, odd.y) - zero),
                   pack4xI8(vec4<i32>(even.z, odd.z, even.w, odd.w) - zero));
}

// Weights 16 half .. 16 half + 15 of chunk `chunk` of B row n, as 16 int8: q - zp for 4 bits
// (in [-15, 15]); for 8 bits q - 128, which is q with its top bit flipped (q - zp would not fit
// in int8), the zero point entering through weight_offset.
fn centered_weights(n: u32, chunk: u32, half: u32) -> vec4<u32> {
  let base = n * (params.k * BITS / 32u) + chunk * BITS + half * (BITS / 2u);
  if (BITS == 4u) {
    let zero = zero_point(n, weight_block(chunk));
    return vec4<u32>(centered_nibbles(input_b[base], zero), centered_nibbles(input_b[base + 1u], zero));
  }
  let raw = vec4<u32>(input_b[base], input_b[base + 1u], input_b[base + 2u], input_b[base + 3u]);
  return raw ^ vec4<u32>(0x80808080u);
}

// zp - 128 for 8-bit weights: sum a (q - zp) = sum a (q - 128) - (zp - 128) sum a (ORT's
// AlignWithZeroPoint). 0 for 4-bit weights, whose zero point is folded in already.
fn weight_offset(n: u32, chunk: u32) -> i32 {
  if (BITS == 8u) {
    return zero_point(n, weight_block(chunk)) - 128;
  }
  return 0;
}

fn dot4(a: u32, b: u32) -> i32 {
  return dot4I8Packed(a, b);
}

fn dot32(a0: vec4<u32>, a1: vec4<u32>, b0: vec4<u32>, b1: vec4<u32>) -> i32 {
  return dot4(a0.x, b0.x) + dot4(a0.y, b0.y) + dot4(a0.z, b0.z) + dot4(a0.w, b0.w)
       + dot4(a1.x, b1.x) + dot4(a1.y, b1.y) + dot4(a1.z, b1.z) + dot4(a1.w, b1.w);
}

// I_c, exact: |I_c| <= 32 * 127 * 255 < 2^31.
fn chunk_sum(a0: vec4<u32>, a1: vec4<u32>, b0: vec4<u32>, b1: vec4<u32>, offset: i32) -> i32 {
  var sum = dot32(a0, a1, b0, b1);
  if (offset != 0) {
    let ones = vec4<u32>(0x01010101u);
    sum -= offset * dot32(a0, a1, ones, ones);
  }
  return sum;
}

// p_c = T(f32(I_c) * f32(T(s_a * s_b))): the scale product rounded to T, f32(I_c) exact (< 2^24).
fn chunk_product(sum: i32, scale_a: T, scale_b: T) -> T {
  return T(f32(sum) * f32(scale_a * scale_b));
}

fn finish(total: acc_t, n: u32) -> T {
  if (HAS_BIAS) {
    return T(total + acc_t(bias[n]));
  }
  return T(total);
}
