"""The finding of the DP4A design verify's own matmul follows (docs/findings.md §7), as data."""

from verify.findings import Finding, Layer

FINDINGS = (
    Finding("dp4a-f16-accumulation", "f16 accumulation in ONNX Runtime's DP4A matmul overflows to Inf where the "
            "result is small", "§7", Layer.KERNEL, "ONNX Runtime (microsoft/onnxruntime), WebGPU execution provider",
            "onnxruntime/contrib_ops/webgpu/quantization/dp4a_matmul.wgsl.template (lane_output)"),
)
