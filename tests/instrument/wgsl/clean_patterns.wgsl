// Legitimate sharing patterns sanitize must accept (no finding), in one 64-lane workgroup per
// row of `out`: each section says what it proves.

struct Pair {
  low: f32,
  high: f32,
}

@group(0) @binding(0) var<storage, read> input: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> pairs: array<Pair>;

var<workgroup> broadcast: f32;
var<workgroup> buffers: array<array<f32, 64>, 2>;
var<workgroup> own: array<f32, 64>;
var<workgroup> parts: array<vec4<f32>, 16>;
var<workgroup> counter: atomic<u32>;

fn lane_value(lane: u32, group: u32) -> f32 {
  return input[group * 64u + lane];
}

fn stage(lane: u32, value: f32) {
  own[lane] = value;          // written here, in a user function...
}

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) lane: u32, @builtin(workgroup_id) group: vec3<u32>) {
  // 1. Written once by lane 0, read by every lane after a barrier.
  if (lane == 0u) {
    broadcast = lane_value(0u, group.x);
    atomicStore(&counter, 0u);
  }
  workgroupBarrier();
  var total = broadcast;

  // 2. Double buffering by parity: one barrier per step is enough.
  for (var step = 0u; step < 4u; step++) {
    let parity = step & 1u;
    buffers[parity][lane] = total + f32(step);
    workgroupBarrier();
    total += buffers[parity][(lane + 1u) % 64u];
  }

  // 3. An invocation reads back what it wrote itself in the same epoch, and updates it.
  stage(lane, total);
  own[lane] += 1.0;           // ...read and written here
  let mine = own[lane];

  // 4. Components of one vector written by different lanes: different scalars, no race.
  let part = &parts[lane / 4u];
  switch (lane % 4u) {
    case 0u: { (*part).x = mine; }
    case 1u: { (*part).y = mine; }
    case 2u: { parts[lane / 4u].z = mine; }
    default: { part.w = mine; }
  }
  atomicAdd(&counter, 1u);
  workgroupBarrier();

  // 5. Read after the barrier: every scalar of parts was written by some lane before it.
  if (lane < 16u) {
    out[group.x * 16u + lane] = parts[lane] + vec4<f32>(f32(atomicLoad(&counter)));
    pairs[group.x * 16u + lane].low = parts[lane].x;
    pairs[group.x * 16u + lane].high = own[lane];
  }
}
