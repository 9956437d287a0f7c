// Lanes of an emulated subgroup of WIDTH consecutive invocations: an XOR shuffle is a write to
// workgroup memory, a barrier, a read of the partner's slot and a barrier. The butterfly above
// it is the native variant's, so widths this adapter lacks (e.g. 64 and 128, where the butterfly
// must stop at distance 16 to keep blocks apart) are checked here with the same structure.

struct Lanes {
  @builtin(local_invocation_index) local: u32,
  @builtin(workgroup_id) group: vec3<u32>,
  @builtin(num_workgroups) groups: vec3<u32>,
}

var<workgroup> exchange: array<a_t, WORKGROUP_LANES>;

fn subgroup_width(lanes: Lanes) -> u32 {
  return WIDTH;
}

fn shuffle_xor(lanes: Lanes, value: a_t, distance: u32) -> a_t {
  exchange[lanes.local] = value;
  workgroupBarrier();
  let partner = exchange[lanes.local ^ distance];
  workgroupBarrier();
  return partner;
}
