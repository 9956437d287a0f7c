// dp4a.quantize: A [rows, K] -> int8 codes packed four per u32, and one scale per 128 values.
//
// ORT's activation quantization for accuracy_level 4 (onnxruntime/contrib_ops/webgpu/quantization/
// dp4a_quantize.wgsl.template), per block of 128 consecutive values of a row, in A's type a_t:
//   m = max |a|;  t = a / m;  code = pack4x8snorm(t) = floor(0.5 + 127 clamp(t, -1, 1));  scale = m / 127
// A block of zeros stores codes 0 and scale 0: the divisor becomes 1 there instead of 0/0.
//
// Layout: lane i of the dispatch owns vec4 i of A, so a block is BLOCK_LANES = 32 consecutive
// lanes and a workgroup of WORKGROUP_LANES covers whole blocks; K % 128 == 0 keeps every block
// inside one row, so rows need no indexing of their own. block_max() (defined by the reduction
// variant above this body) returns the block's max |a| to all 32 lanes; lanes past the end of A
// take part with 0 and store nothing.

struct QuantizeParams {
  vec4_count: u32,
}

@group(0) @binding(0) var<storage, read> a: array<vec4<a_t>>;
@group(0) @binding(1) var<storage, read_write> codes: array<u32>;
@group(0) @binding(2) var<storage, read_write> scales: array<a_t>;
@group(0) @binding(3) var<uniform> params: QuantizeParams;

const CODE_MAX: f32 = 127.0;

@compute @workgroup_size(WORKGROUP_LANES)
fn quantize(lanes: Lanes) {
  let group_index = lanes.group.y * lanes.groups.x + lanes.group.x;
  let index = group_index * WORKGROUP_LANES + lanes.local;
  let in_range = index < params.vec4_count;
  var value = vec4<a_t>(0.0);
  if (in_range) {
    value = a[index];
  }
  let magnitude = abs(value);
  let m = block_max(lanes, max(max(magnitude.x, magnitude.y), max(magnitude.z, magnitude.w)));
  if (!in_range) {
    return;
  }
  let divisor = select(m, a_t(1.0), m == a_t(0.0));
  codes[index] = pack4x8snorm(vec4<f32>(value / divisor));
  if (index % BLOCK_LANES == 0u) {
    scales[index / BLOCK_LANES] = m / a_t(CODE_MAX);
  }
}
