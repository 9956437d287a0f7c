// subgroupAdd reached by only some invocations of the workgroup (those with an odd value): fine
// for native subgroups, impossible for an emulation that synchronises the whole workgroup.
@group(0) @binding(0) var<storage, read> values: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

fn total(v: u32) -> u32 {
  return subgroupAdd(v);
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lane: u32) {
  let v = values[lane];
  var result = 0u;
  if (v % 2u == 1u) {
    result = total(v);
  }
  out[lane] = result;
}
