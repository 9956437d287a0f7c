// Lanes of a native subgroup: the width is whatever the adapter runs this pipeline with
// (@builtin(subgroup_size), 4..128 in WebGPU), read at run time, never assumed.
// Subgroups are taken to be aligned runs of consecutive local_invocation_index, as ORT's
// subgroup paths also assume (docs/ort-dp4a.md §9.7); a layout that breaks this
// combines values from the wrong lanes, and the reference check reports it.

struct Lanes {
  @builtin(local_invocation_index) local: u32,
  @builtin(workgroup_id) group: vec3<u32>,
  @builtin(num_workgroups) groups: vec3<u32>,
  @builtin(subgroup_size) width: u32,
}

fn subgroup_width(lanes: Lanes) -> u32 {
  return lanes.width;
}

fn shuffle_xor(lanes: Lanes, value: a_t, distance: u32) -> a_t {
  return subgroupShuffleXor(value, distance);
}
