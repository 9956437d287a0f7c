// Every WGSL feature the parser must accept beyond our own kernels: what ONNX Runtime Web's
// shaders use (enables, requires, overrides, diagnostics, attributes, pointers, atomics,
// loops with continuing, switch, literal suffixes, aliases).
enable f16;
enable subgroups;
requires readonly_and_readwrite_storage_textures, packed_4x8_integer_dot_product;
diagnostic(off, derivative_uniformity);
diagnostic(warning, chromium.subgroup_matrix_uniformity);

alias Vec = vec4<f32>;
override WORKGROUP_SIZE: u32 = 64u;
@id(7) override scale_factor: f32 = 1.0;
override flag: bool;
const_assert WORKGROUP_SIZE % 32u == 0u;

struct Params {
  @align(16) shape: vec4<u32>,
  @size(32) strides: vec4<u32>,
  epsilon: f32,
}

struct Counter { hits: atomic<u32>, total: array<atomic<i32>, 4> }

@group(0) @binding(0) var<storage, read_write> data: array<Vec>;
@group(0) @binding(1) var<uniform> params: Params;
@group(0) @binding(2) var<storage, read_write> counter: Counter;
var<workgroup> tile: array<array<f16, 16>, 16>;
var<private> seed: u32 = 0x9E3779B9u;

@must_use
fn twice(x: f32) -> f32 { return 2.0 * x; }

fn bump(p: ptr<function, u32>, by: u32) {
  *p += by;
  (*p)++;
}

@diagnostic(off, derivative_uniformity)
fn literals() -> f32 {
  let a = 1.0h;
  let b = 0x1p-3f;
  let c = 1e-3;
  let d = 0x1.8p1;
  let e = .5;
  let f = 1.;
  let g = 0i + 1i - 0x7fffffffi;
  let h = 0u | 0xFFu;
  let i = 3f + 0h;
  return f32(a) + b + c + d + e + f + f32(g) + f32(h) + i;
}

@compute @workgroup_size(WORKGROUP_SIZE, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(local_invocation_index) lane: u32,
        @builtin(subgroup_invocation_id) sg_lane: u32,
        @builtin(subgroup_size) sg_size: u32) {
  var count = 0u;
  bump(&count, 2u);
  let packed = dot4I8Packed(0x01020304u, 0x01010101u);
  let bits = bitcast<u32>(twice(1.5));
  let first = subgroupShuffle(f32(lane), 0);
  let mixed = array<i32, 3>(1, 2, 3);
  var acc = vec4<f32>();
  var k = 0u;
  loop {
    if (k >= 4u) { break; }
    acc[k] = f32(mixed[min(k, 2u)]);
    continuing {
      k++;
      break if k > 8u;
    }
  }
  switch (gid.x % 4u) {
    case 0u, 1u: { acc.x += 1.0; }
    case 2u { acc.y = 2.0; }
    default: { acc.z -= 1.0; }
  }
  switch lane {
    case 3u, default: {}
  }
  while (count < 10u && !flag) { count <<= 1u; count |= 1u; if count > 1000u { break; } }
  for (var j = 0i; j < 3; j++) { acc.w *= 1.5; continue; }
  tile[lane % 16u][lane / 16u] = f16(acc.x);
  workgroupBarrier();
  let old = atomicAdd(&counter.hits, 1u);
  atomicMax(&counter.total[lane % 4u], i32(packed));
  let shifted = (lane << 2u) >> 1u;
  let compare = select(0u, 1u, (lane < shifted && shifted >= 2u) || lane <= 1u);
  let p = &data[gid.x];
  (*p).x = f32(bits & 0xFFu) + first + f32(old + compare + sg_lane + sg_size) + literals();
  _ = twice(2.0);
  data[gid.x] = vec4(-(*p).x, f32(~1 == -2), f32(tile[0][0]), Vec(acc).w);
}
