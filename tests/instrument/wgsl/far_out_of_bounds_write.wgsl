// One write lands a million elements past the end of `out`, far beyond the guard bytes a plain
// run can check (a driver drops it, or it corrupts memory no one looks at).
@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
  let index = group.x * 64u + lane;
  var destination = index;
  if (index == 70u) {
    destination = index + 1000000u;
  }
  out[destination] = input[index] + 1.0;
}
