// kernel: conformance.loop_var_zero_init
// config: 

// source: conformance/loop_var_zero_init.wgsl
// A loop body declares `var`s without initializer and adds to them. WGSL (var declarations) gives
// a function-scope variable without initializer the zero value each time its declaration runs, so
// in every iteration each sum starts from 0: every element of `sums` must be 1.

struct Params {
  iterations: u32,
}

@group(0) @binding(0) var<storage, read_write> sums: array<u32>;
@group(0) @binding(1) var<uniform> params: Params;

@compute @workgroup_size(1)
fn main() {
  for (var it = 0u; it < params.iterations; it++) {
    var scalar: u32;
    scalar += 1u;
    var vector: vec4<f32>;
    vector += vec4<f32>(1.0);
    sums[2u * it] = scalar;
    sums[2u * it + 1u] = u32(vector.w);
  }
}
