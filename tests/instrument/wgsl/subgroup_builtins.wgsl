// Every subgroup built-in the emulation rewrites, on small integer values (so float sums are
// exact and every result is one number), in workgroups of 48 invocations: subgroups of 32 or 64
// lanes leave a partial subgroup. Invocation i stores its results in out[i * SLOTS ..].
// (No `enable subgroups;`: Naga takes the built-ins without it, and rejects it.)

@group(0) @binding(0) var<storage, read> values: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

const SLOTS: u32 = 28u;

struct Inputs {
  @builtin(local_invocation_index) lane: u32,
  @builtin(subgroup_invocation_id) id: u32,
}

fn reduce_in_a_function(v: u32) -> u32 {
  return subgroupMax(v) * 100u + subgroupMin(v);
}

@compute @workgroup_size(48)
fn main(inputs: Inputs, @builtin(workgroup_id) group: vec3<u32>, @builtin(subgroup_size) size: u32) {
  let g = group.x * 48u + inputs.lane;
  let v = values[g];
  let f = f32(v);
  let i = i32(v) - 3;
  let w = v % 2u + 1u;
  let at = g * SLOTS;
  out[at + 0u] = size;
  out[at + 1u] = inputs.id;
  out[at + 2u] = subgroupAdd(v);
  out[at + 3u] = bitcast<u32>(subgroupAdd(f));
  out[at + 4u] = bitcast<u32>(subgroupMin(i));
  out[at + 5u] = subgroupMax(v);
  out[at + 6u] = subgroupAnd(v | 8u);
  out[at + 7u] = subgroupOr(v);
  out[at + 8u] = subgroupXor(v);
  out[at + 9u] = subgroupMul(w);
  out[at + 10u] = subgroupExclusiveAdd(v);
  out[at + 11u] = subgroupInclusiveAdd(v);
  out[at + 12u] = subgroupExclusiveMul(w);
  out[at + 13u] = subgroupInclusiveMul(w);
  out[at + 14u] = subgroupShuffle(v, 3u);
  out[at + 15u] = subgroupShuffleXor(v, 1u);
  out[at + 16u] = subgroupShuffleDown(v, 1u);
  out[at + 17u] = subgroupShuffleUp(v, 1u);
  out[at + 18u] = subgroupBroadcast(v, 2u);
  out[at + 19u] = subgroupBroadcastFirst(v);
  let ballot = subgroupBallot(v > 3u);
  out[at + 20u] = ballot.x;
  out[at + 21u] = ballot.y;
  out[at + 22u] = ballot.z;
  out[at + 23u] = ballot.w;
  out[at + 24u] = select(0u, 1u, subgroupAll(v < 8u)) + select(0u, 2u, subgroupAll(v < 7u));
  out[at + 25u] = select(0u, 1u, subgroupAny(v == 7u)) + select(0u, 2u, subgroupElect());
  let sum4 = subgroupAdd(vec4<f32>(f, f + 1.0, 2.0 * f, 0.5));
  out[at + 26u] = bitcast<u32>(sum4.x + sum4.y * 3.0 + sum4.z * 5.0 + sum4.w * 7.0);
  out[at + 27u] = reduce_in_a_function(v);
}
