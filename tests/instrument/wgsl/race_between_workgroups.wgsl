// Every workgroup accumulates into out[0]: a read-modify-write that other workgroups interleave.
@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
  if (lane == 0u) {
    out[0] += input[group.x * 64u];
  }
}
