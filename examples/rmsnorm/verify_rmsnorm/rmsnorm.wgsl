// rmsnorm: y[t, i] = x[t, i] * inverseSqrt(mean_i(x[t, i]^2) + eps) * w[i], one row per workgroup.
//
// Each of the WORKGROUP lanes sums the squares of the row's elements lane, lane + WORKGROUP, ...
// in f32; a tree in workgroup memory adds the lanes' sums (a barrier before every level, so a
// lane reads its partner's sum only after it is written); lane 0's total is read by all lanes
// after one more barrier. Rows longer than the workgroup and rows that are not a multiple of it
// are both handled by the strided loop (tails of 1 and WORKGROUP - 1 lanes are drawn on purpose).

struct NormParams {
  rows: u32,
  hidden: u32,
  eps: f32,
}

@group(0) @binding(0) var<storage, read> x: array<io_t>;
@group(0) @binding(1) var<storage, read> weight: array<io_t>;
@group(0) @binding(2) var<storage, read_write> y: array<io_t>;
@group(0) @binding(3) var<uniform> params: NormParams;

var<workgroup> partial: array<f32, WORKGROUP>;

@compute @workgroup_size(WORKGROUP)
fn rms_norm(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  let row = group.x;
  let base = row * params.hidden;
  var sum = 0.0;
  for (var i = lane; i < params.hidden; i += WORKGROUP) {
    let value = f32(x[base + i]);
    sum += value * value;
  }
  partial[lane] = sum;
  for (var width = WORKGROUP / 2u; width > 0u; width /= 2u) {
    workgroupBarrier();
    if (lane < width) {
      partial[lane] += partial[lane + width];
    }
  }
  workgroupBarrier();
  let inv = inverseSqrt(partial[0] / f32(params.hidden) + params.eps);
  for (var i = lane; i < params.hidden; i += WORKGROUP) {
    y[base + i] = io_t(f32(x[base + i]) * inv * f32(weight[i]));
  }
}
