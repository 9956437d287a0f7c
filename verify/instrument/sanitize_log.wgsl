
// ---- appended by verify.instrument.sanitize: the shadow log of memory accesses ----
// Every access of workgroup or storage memory calls _san_note with its site (a number the host
// maps back to the source line) and where it fell; each call appends one record of 6 words:
//   in bounds:      site | lane << 20,           workgroup, epoch,  space epoch, scalar offset, value
//   out of bounds:  site | lane << 20 | 1 << 31, workgroup, length, dimension,   index,         0
// lane is local_invocation_index, workgroup the linear workgroup id, epoch the number of
// control barriers the invocation has passed, space epoch the number of barriers that order the
// accessed address space (workgroupBarrier: workgroup memory; storageBarrier: storage memory).
// value: the bits of the value a write stores (a hash of them for vectors), so invocations that
// write the same value unordered can be told from a race that loses data.
// A loop that starts a trip past _san_loop_bound is left, and appends one record after it:
//   unbounded loop: loop | lane << 20 | 1 << 30, workgroup, bound, 0, 0, 0
// `count` counts every record asked for, so a count past the room says the log is truncated;
// records past the room all land in its last slot, which the host then never reads.
// Only the workgroups first_group .. first_group + groups - 1 log (the host sets both: every
// workgroup, or one pass of a dispatch whose log does not fit, verify.instrument.passes); the
// records of the others count nothing and land in the last slot too.
//
// The record functions have no branches: every site inlines them (lavapipe and NVIDIA's compiler
// inline every call), and branches in each copy multiplied the blocks a driver compiles (the
// sanitized TVM prefill kernel compiled in minutes on lavapipe; see docs/architecture.md).

struct _SanLog {
  count: atomic<u32>,
  first_group: u32,
  groups: u32,
  records: array<u32>,
}

@group(0) @binding($binding) var<storage, read_write> _san_log: _SanLog;

var<private> _san_lane: u32;
var<private> _san_group: u32;
// 1u where this invocation's workgroup logs (set in the prologue from first_group and groups), else 0u.
var<private> _san_step: u32;
var<private> _san_epoch: u32;
var<private> _san_workgroup_epoch: u32;
var<private> _san_storage_epoch: u32;

// Trips one execution of a loop may make (verify.instrument.sanitize.LOOP_BOUND).
const _san_loop_bound: u32 = ${loop_bound}u;

fn _san_record(head: u32, group: u32, a: u32, b: u32, c: u32, d: u32) {
  let slot = atomicAdd(&_san_log.count, _san_step);
  // A workgroup that does not log: slot | 0xffffffffu, the last slot.
  let at = min(slot | (_san_step - 1u), arrayLength(&_san_log.records) / 6u - 1u) * 6u;
  _san_log.records[at] = head;
  _san_log.records[at + 1u] = group;
  _san_log.records[at + 2u] = a;
  _san_log.records[at + 3u] = b;
  _san_log.records[at + 4u] = c;
  _san_log.records[at + 5u] = d;
}

// bad: 0 when every index is in bounds, else the 1-based dimension of the first that is not,
// with that index and its length.
fn _san_note(site: u32, offset: u32, bad: u32, index: u32, length: u32, space_epoch: u32, value: u32) {
  let inside = bad == 0u;
  let head = site | (_san_lane << 20u) | select(0x80000000u, 0u, inside);
  _san_record(head, _san_group, select(length, _san_epoch, inside), select(bad, space_epoch, inside),
              select(index, offset, inside), select(0u, value, inside));
}

// Loop `site` (a loop's number, not an access site's) began trip _san_loop_bound + 1 and was
// left. The record is the side effect that keeps the counter (and the loop) from being
// optimised away.
fn _san_unbounded(site: u32) {
  _san_record(site | (_san_lane << 20u) | 0x40000000u, _san_group, _san_loop_bound, 0u, 0u, 0u);
}
