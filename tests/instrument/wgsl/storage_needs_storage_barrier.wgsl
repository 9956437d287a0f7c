// Lane 0 writes a storage value that the other lanes read after a workgroupBarrier: the barrier
// orders execution, but only storageBarrier makes storage writes visible to other invocations.
@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
  let row = group.x * 64u;
  if (lane == 0u) {
    out[row] = input[row] * 2.0;
  }
  workgroupBarrier();
  if (lane != 0u) {
    out[row + lane] = out[row] + input[row + lane];
  }
}
