// Dispatched twice: `phase` 0 leaves markers in every word of the workgroup array (as any kernel
// that uses workgroup memory does), then `phase` 1 reads the array before writing it. WGSL (var
// declarations, "workgroup" address space) zero-initialises every workgroup variable at the start
// of each workgroup, in every dispatch, so every count of `nonzero` must be 0.

struct Params {
  phase: u32,
}

var<workgroup> tile: array<u32, WORDS>;

@group(0) @binding(0) var<storage, read_write> nonzero: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;

@compute @workgroup_size(64)
fn main(@builtin(workgroup_id) group: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  var count = 0u;
  for (var k = lane; k < WORDS; k += 64u) {
    if (tile[k] != 0u) {
      count += 1u;
    }
  }
  if (params.phase == 1u) {
    nonzero[group.x * 64u + lane] = count;
  }
  workgroupBarrier();
  for (var k = lane; k < WORDS; k += 64u) {
    tile[k] = 0xA5A50000u | group.x;
  }
}
