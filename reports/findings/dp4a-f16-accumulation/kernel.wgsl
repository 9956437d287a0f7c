// kernel: dp4a.matmul
// config: acc=f16 bits=4 block_size=32 dtype=f16 has_bias=0 has_zero_points=0 tile=64x64
enable f16;
alias T = f16;
alias acc_t = f16;
const BITS: u32 = 4u;
const BLOCK_SIZE: u32 = 32u;
const HAS_ZERO_POINTS: bool = false;
const HAS_BIAS: bool = false;

// source: dp4a/matmul_common.wgsl
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

// source: dp4a/matmul_64x64.wgsl
// dp4a.matmul, tile "64x64": ORT's DP4AMatMulNBitsProgram (dp4a_matmul.wgsl.template@096d680b,
// the non-subgroup branch; docs/ort-dp4a.md §5).
//
// A 256-lane workgroup owns a 64 x 64 output tile of one batch. Per 32-value K chunk, lanes
// 0-127 load A (row lane/2, half lane%2) and the row's scale, lanes 128-255 load and centre
// B likewise; after a barrier each lane computes one A row against 16 columns, adding p_c to
// its 16 accumulators in ascending c. Rows past M and columns past N are zeroed, not loaded
// (the lanes that compute them read only memory written in this dispatch: not every driver
// zero-initialises workgroup memory), and never stored; N % 16 == 0 makes a 16-column group either
// wholly inside N or wholly outside.

const TILE_M: u32 = 64u;
const TILE_N: u32 = 64u;
const COLS_PER_LANE: u32 = 16u;

var<workgroup> tile_a: array<array<vec4<u32>, TILE_M>, 2>;
var<workgroup> tile_b: array<array<vec4<u32>, TILE_N>, 2>;
var<workgroup> tile_scale_a: array<T, TILE_M>;
var<workgroup> tile_scale_b: array<T, TILE_N>;
var<workgroup> tile_offset_b: array<i32, TILE_N>;

@compute @workgroup_size(256)
fn matmul(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  let first_row = group.y * TILE_M;
  let first_col = group.x * TILE_N;
  let batch_row = group.z * params.m;
  let row = lane % TILE_M;
  let col = lane / TILE_M * COLS_PER_LANE;
  let half = lane % 2u;
  var acc: array<acc_t, COLS_PER_LANE>;
  for (var chunk = 0u; chunk < chunk_count(); chunk++) {
    if (lane < 2u * TILE_M) {
      let r = lane / 2u;
      if (first_row + r < params.m) {
        let a_row = batch_row + first_row + r;
        tile_a[half][r] = a_codes(a_row, chunk, half);
        if (half == 0u) {
          tile_scale_a[r] = a_scale(a_row, chunk);
        }
      } else {
        tile_a[half][r] = vec4<u32>(0u);
        if (half == 0u) {
          tile_scale_a[r] = T(0);
        }
      }
    } else {
      let r = (lane - 2u * TILE_M) / 2u;
      let n = first_col + r;
      if (n < params.n) {
        tile_b[half][r] = centered_weights(n, chunk, half);
        if (half == 0u) {
          tile_scale_b[r] = b_scale(n, chunk);
          tile_offset_b[r] = weight_offset(n, chunk);
        }
      } else {
        tile_b[half][r] = vec4<u32>(0u);
        if (half == 0u) {
          tile_scale_b[r] = T(0);
          tile_offset_b[r] = 0;
        }
      }
    }
    workgroupBarrier();
    let a0 = tile_a[0][row];
    let a1 = tile_a[1][row];
    let scale_a = tile_scale_a[row];
    for (var j = 0u; j < COLS_PER_LANE; j++) {
      let c = col + j;
      let sum = chunk_sum(a0, a1, tile_b[0][c], tile_b[1][c], tile_offset_b[c]);
      acc[j] += acc_t(chunk_product(sum, scale_a, tile_scale_b[c]));
    }
    workgroupBarrier();
  }
  let m = first_row + row;
  let n = first_col + col;
  if (m < params.m && n < params.n) {
    let out = (batch_row + m) * params.n + n;
    for (var j = 0u; j < COLS_PER_LANE; j++) {
      output[out + j] = finish(acc[j], n + j);
    }
  }
}
