// A neighbour exchange without its barrier: lane i writes tile[i] and reads tile[i + 1], which
// lane i + 1 writes in the same epoch.
@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

var<workgroup> tile: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
  tile[lane] = input[group.x * 64u + lane];
  let right = tile[(lane + 1u) % 64u];
  out[group.x * 64u + lane] = right;
}
