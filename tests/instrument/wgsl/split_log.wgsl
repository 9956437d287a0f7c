// A dispatch the sanitizer logs in passes (tests/instrument/test_log_passes.py): 8 workgroups of
// 64 lanes on a 4 x 2 grid, each logging about 1,300 accesses, more in all than the test's capped
// log holds. Planted:
//   - a race within every workgroup: lane i reads tile[i + 1] in the epoch lane i + 1 writes it;
//   - a race within every workgroup on quads[0], written whole by lanes 0 and 16 with different
//     values; only the last workgroup reads a component of quads, so a pass without it alone would
//     track quads in vec4s, and the whole dispatch in scalars;
//   - a race between the first and the last workgroup, which land in different passes: both write
//     out[0].
@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

var<workgroup> tile: array<f32, 64>;
var<workgroup> quads: array<vec4<f32>, 16>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) id: vec3<u32>,
        @builtin(num_workgroups) count: vec3<u32>) {
  let group = id.x + count.x * id.y;
  let last = count.x * count.y - 1u;
  tile[lane] = input[group * 64u + lane];
  if (lane < 16u) { quads[lane] = vec4<f32>(f32(lane)); }
  if (lane == 16u) { quads[0] = vec4<f32>(16.0); }
  workgroupBarrier();
  var sum = 0.0;
  for (var i = 0u; i < 8u; i++) {
    let q = quads[(lane + i) % 16u];
    sum += tile[(lane + i) % 64u] + q.x;
  }
  if (group == last && lane == 1u) { out[1] = quads[1].y; }
  tile[lane] = sum;
  let right = tile[(lane + 1u) % 64u];
  out[64u + group * 64u + lane] = right;
  if (lane == 0u && (group == 0u || group == last)) {
    out[0] = f32(group);
  }
}
