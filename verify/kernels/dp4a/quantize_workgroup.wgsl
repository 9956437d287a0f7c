// block_max for adapters without subgroups: a tree reduction in workgroup memory, halving the
// stride from 16 lanes to 1 inside each 32-lane block, with a barrier after every step.

struct Lanes {
  @builtin(local_invocation_index) local: u32,
  @builtin(workgroup_id) group: vec3<u32>,
  @builtin(num_workgroups) groups: vec3<u32>,
}

var<workgroup> partial_max: array<a_t, WORKGROUP_LANES>;

fn block_max(lanes: Lanes, lane_max: a_t) -> a_t {
  partial_max[lanes.local] = lane_max;
  workgroupBarrier();
  let lane = lanes.local % BLOCK_LANES;
  for (var stride = BLOCK_LANES / 2u; stride > 0u; stride >>= 1u) {
    if (lane < stride) {
      partial_max[lanes.local] = max(partial_max[lanes.local], partial_max[lanes.local + stride]);
    }
    workgroupBarrier();
  }
  return partial_max[lanes.local - lane];
}
