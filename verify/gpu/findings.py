"""The findings in the WebGPU implementations and drivers verify runs on (docs/findings.md §8, §9,
§12, and the loop-body `var` of §18.2), as data (verify.findings). Each rests on a WGSL semantics
probe (verify.gpu.semantics) that deviates where it shows."""

from verify.findings import Finding, Layer

FINDINGS = (
    Finding("wgpu-native-workgroup-zero-init", "wgpu-native creates pipelines without WGSL's workgroup zeroing: "
            "a workgroup reads what earlier workgroups and kernels left (lavapipe, NVIDIA)", "§8",
            Layer.IMPLEMENTATION, "wgpu-native (gfx-rs/wgpu-native)",
            "src/lib.rs: zero_initialize_workgroup_memory: false at every pipeline creation (marked TODO(wgpu.h))",
            ("workgroup-zero-init",),
            "Kernels that read workgroup memory before writing it are valid WGSL; clearing it first makes them "
            "right on wgpu-native too."),
    Finding("loop-var-not-rezeroed", "A loop body's `var` without initializer keeps the previous iteration's value "
            "(WGSL zero-initialises it each time the declaration runs)", "§18.2", Layer.IMPLEMENTATION,
            "Dawn (Tint) and wgpu-native 29 (Naga before gfx-rs/wgpu#9592, wgpu v30)",
            "Tint's WGSL lowering of function-scope variables; naga/src/back/spv (fixed in gfx-rs/wgpu#9592)",
            ("var-zero-init",),
            "An explicit initializer (`var x = 0u;`) is right on every implementation."),
    Finding("lavapipe-loop-cap", "lavapipe ends every loop of an invocation after 65535 iterations in all", "§9",
            Layer.DRIVER, "Mesa (llvmpipe)",
            "src/gallium/auxiliary/gallivm/lp_bld_limits.h (LP_MAX_TGSI_LOOP_ITERATIONS)", ("loop-trip-count",)),
)
