// dp4a.matmul, tile "small_m": ORT's DP4AMatMulNBitsSmallMProgram
// (dp4a_matmul_small_m.wgsl.template@02b0534c; docs/ort-dp4a.md §5), the kernel ORT
// runs for M < 4; this contract takes any M.
//
// A 128-lane workgroup owns one A row and 32 output columns. K advances 16 chunks (512
// values) per step: lanes 0-31 load the row's codes, lanes 32-35 its four activation scales.
// Lane (slot = lane % 16, first_b = lane / 16) then takes chunk step + slot against B rows
// first_b, first_b + 8, first_b + 16, first_b + 24, reading B straight from memory, and adds
// p_c to partial[row][slot]. Each output is finally the sum of its 16 strided partial sums in
// ascending slot, plus bias: the sum is split, not sequential, but the budget holds for any order.
//
// ORT relies on WGSL's zero-initialisation of `partial`. Each lane clears its own slots here
// instead: wgpu-native on Mesa 22.3 lavapipe leaves workgroup memory holding the previous
// workgroup's values (a WGSL conformance bug of that stack, docs/findings.md §8), and clearing costs four stores.

const TILE_N: u32 = 32u;
const CHUNKS_PER_STEP: u32 = 16u;
const LANES: u32 = 128u;
const ROW_STEP: u32 = LANES / CHUNKS_PER_STEP;
const A_BLOCKS_PER_STEP: u32 = CHUNKS_PER_STEP / CHUNKS_PER_A_BLOCK;

var<workgroup> tile_a: array<array<vec4<u32>, CHUNKS_PER_STEP>, 2>;
var<workgroup> tile_scale_a: array<T, A_BLOCKS_PER_STEP>;
var<workgroup> partial: array<array<acc_t, CHUNKS_PER_STEP>, TILE_N>;

@compute @workgroup_size(128)
fn matmul(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  let a_row = group.z * params.m + group.y;
  let first_col = group.x * TILE_N;
  let slot = lane % CHUNKS_PER_STEP;
  let first_b = lane / CHUNKS_PER_STEP;
  for (var r = first_b; r < TILE_N; r += ROW_STEP) {
    partial[r][slot] = acc_t(0);
  }
  for (var step = 0u; step < chunk_count(); step += CHUNKS_PER_STEP) {
    if (lane < 2u * CHUNKS_PER_STEP) {
      let c = step + lane / 2u;
      if (c < chunk_count()) {
        tile_a[lane % 2u][lane / 2u] = a_codes(a_row, c, lane % 2u);
      }
    } else if (lane < 2u * CHUNKS_PER_STEP + A_BLOCKS_PER_STEP) {
      let block = lane - 2u * CHUNKS_PER_STEP;
      let c = step + block * CHUNKS_PER_A_BLOCK;
      if (c < chunk_count()) {
        tile_scale_a[block] = a_scale(a_row, c);
      }
    }
    workgroupBarrier();
    let c = step + slot;
    if (c < chunk_count()) {
      let a0 = tile_a[0][slot];
      let a1 = tile_a[1][slot];
      let scale_a = tile_scale_a[slot / CHUNKS_PER_A_BLOCK];
      for (var r = first_b; r < TILE_N; r += ROW_STEP) {
        let n = first_col + r;
        if (n < params.n) {
          let sum = chunk_sum(a0, a1, centered_weights(n, c, 0u), centered_weights(n, c, 1u), weight_offset(n, c));
          partial[r][slot] += acc_t(chunk_product(sum, scale_a, b_scale(n, c)));
        }
      }
    }
    workgroupBarrier();
  }
  if (lane < TILE_N) {
    let n = first_col + lane;
    if (n < params.n) {
      var total = acc_t(0);
      for (var j = 0u; j < CHUNKS_PER_STEP; j++) {
        total += partial[lane][j];
      }
      output[a_row * params.n + n] = finish(total, n);
    }
  }
}
