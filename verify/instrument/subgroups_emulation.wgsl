// ---- appended by verify.instrument.subgroups: subgroups of $W lanes, emulated in workgroup memory ----
// Emulated subgroup s is invocations [s * $W, (s + 1) * $W) by local_invocation_index; the last one
// (or the only one, in a workgroup smaller than $W) may be partial: its missing lanes take no part.
// Every built-in writes the lane's value to an exchange slot, waits at a barrier, reads what it
// needs of its subgroup's slots and waits again before the slot can be reused: so it must be
// called in workgroup-uniform control flow (emulate_subgroups checks that statically). Loops run
// over all $W slots with the lanes that are not in the subgroup masked out by select, so no control
// flow depends on the lane.

var<private> _sg_lane: u32;
var<private> _sg_invocations: u32;

fn _sg_base() -> u32 {
  return _sg_lane / $W * $W;
}

fn _sg_active() -> u32 {
  return min($W, _sg_invocations - _sg_base());
}

//@ reduce: subgroupAdd/Mul/Min/Max/And/Or/Xor over the active lanes of the subgroup
fn _sg_${name}(value: $T) -> $T {
  $exchange[_sg_lane] = value;
  workgroupBarrier();
  let base = _sg_base();
  let count = _sg_active();
  var result = $exchange[base];
  for (var k = 1u; k < $W; k++) {
    let other = $exchange[min(base + k, $last)];
    result = select(result, $combine, k < count);
  }
  workgroupBarrier();
  return result;
}

//@ scan: subgroup{Inclusive,Exclusive}{Add,Mul}: the lanes below this one (and this one, inclusive)
fn _sg_${name}(value: $T) -> $T {
  $exchange[_sg_lane] = value;
  workgroupBarrier();
  let base = _sg_base();
  let id = _sg_lane - base;
  var result = $T($identity);
  for (var k = 0u; k < $W; k++) {
    let other = $exchange[min(base + k, $last)];
    result = select(result, $combine, k $below id);
  }
  workgroupBarrier();
  return result;
}

//@ shuffle: the value of subgroup lane `source` (this lane's own where that lane is not active)
fn _sg_${name}(value: $T, source: u32) -> $T {
  $exchange[_sg_lane] = value;
  workgroupBarrier();
  let base = _sg_base();
  let slot = select(_sg_lane, base + source, source < _sg_active());
  let result = $exchange[slot];
  workgroupBarrier();
  return result;
}

//@ ballot: bit k of the result is set where active subgroup lane k's predicate holds
fn _sg_${name}(predicate: bool) -> vec4<u32> {
  $exchange[_sg_lane] = select(0u, 1u, predicate);
  workgroupBarrier();
  let base = _sg_base();
  let count = _sg_active();
  var result = vec4<u32>(0u);
  for (var k = 0u; k < $W; k++) {
    let bit = select(0u, 1u << (k % 32u), k < count && $exchange[min(base + k, $last)] != 0u);
    result[k / 32u] = result[k / 32u] | bit;
  }
  workgroupBarrier();
  return result;
}

//@ votes: subgroupAll / subgroupAny / subgroupElect, from a ballot (so each is a barrier too)
fn _sg_count(ballot: vec4<u32>) -> u32 {
  let bits = countOneBits(ballot);
  return bits.x + bits.y + bits.z + bits.w;
}

fn _sg_all(predicate: bool) -> bool {
  return _sg_count(_sg_ballot(predicate)) == _sg_active();
}

fn _sg_any(predicate: bool) -> bool {
  return _sg_count(_sg_ballot(predicate)) != 0u;
}

fn _sg_elect() -> bool {
  let everyone = _sg_ballot(true);
  return _sg_lane == _sg_base() + firstTrailingBit(everyone.x);
}
