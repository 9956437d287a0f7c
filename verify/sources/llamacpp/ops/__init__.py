"""ggml-webgpu's row ops: `llamacpp.ops.*` (RMS_NORM fused with MUL).

- `kernels`: rms_norm_mul, instantiated and launched as ggml-webgpu's host code does.
- `cases`: row lengths around the workgroup's 256 lanes, verify's value kinds, all-zero rows, rows
  whose squares sit at f32's extremes.
- `rope`, `rope_cases`: ROPE (rope.wgsl, normal and NeoX with YaRN, frequency factors and a moved
  window) and its cases.
- `rows`, `rows_cases`: GET_ROWS (get_rows.wgsl: float and block-quantized tables) and SET_ROWS
  (set_rows.wgsl: f32/f16 tables, i32/i64 indices with the error word) and their cases.
- `rows_quant`, `rows_quant_cases`: SET_ROWS into q8_0 and q4_0 tables (set_rows_quant.wgsl: one block
  or a pair an invocation, judged by legal quantization intervals) and its cases.
- `soft_max`, `soft_max_cases`: SOFT_MAX (soft_max.wgsl: scale, an f32/f16 mask broadcast over
  heads and batches, ALiBi, sinks, in place) and its cases.
"""
