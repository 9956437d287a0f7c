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

var<workgroup> width_of_subgroups: u32;

// WGSL's uniformity analysis judges a struct parameter as a whole: lanes.width is as
// non-uniform as lanes.local, so block_max's barrier behind a branch on the width would be a
// shader-creation error (Tint reports it; Naga does not). subgroup_size itself is uniform, so
// one lane publishes it and workgroupUniformLoad returns it as a uniform value.
fn subgroup_width(lanes: Lanes) -> u32 {
  if (lanes.local == 0u) {
    width_of_subgroups = lanes.width;
  }
  return workgroupUniformLoad(&width_of_subgroups);
}

fn shuffle_xor(lanes: Lanes, value: a_t, distance: u32) -> a_t {
  return subgroupShuffleXor(value, distance);
}
