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
