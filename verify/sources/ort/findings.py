"""The findings in ONNX Runtime Web's WebGPU programs (docs/findings.md §13, §18), as data
(verify.findings).

Three of them are valid WGSL that fails only where a WebGPU implementation deviates from the
specification (the implementation's bug; docs/findings.md §8 and the loop-body `var` finding):
ORT's programs read workgroup memory before writing it (§13.4, §18.6), which WGSL zero-initialises,
and FlashAttention accumulates into a loop body's `var` without initializer (§18.2), which WGSL
re-zeroes each iteration. They are recorded against the implementation, with a robustness note for
ORT's authors."""

from dataclasses import dataclass, field

from verify.findings import Finding, Layer

ORT = "ONNX Runtime (microsoft/onnxruntime), WebGPU execution provider"
QUANTIZATION = "onnxruntime/contrib_ops/webgpu/quantization"
BERT = "onnxruntime/contrib_ops/webgpu/bert"
WGPU_NATIVE = "wgpu-native (gfx-rs/wgpu-native), which creates pipelines without WGSL's workgroup zeroing"
ZERO_INIT_NOTE = ("Robustness note for ORT: the program is valid WGSL; clearing the array before the sums (one "
                  "store per slot and a barrier) would make it right on implementations that skip the zeroing.")

FINDINGS = (
    Finding("ort-f16-accumulation", "DP4AMatMulNBits accumulates f16 models' sums in f16: the running sums overflow "
            "to -Inf where Y is 0", "§13.1", Layer.KERNEL, ORT, f"{QUANTIZATION}/dp4a_matmul.wgsl.template"),
    Finding("ort-quantize-zero-block", "DP4AMatMulQuantize divides an all-zero block by its max: the block's codes "
            "are pack4x8snorm(0/0)", "§13.2", Layer.KERNEL, ORT, f"{QUANTIZATION}/dp4a_matmul_nbits.cc (quantize)"),
    Finding("ort-small-m-scales-past-row", "DP4AMatMulNBitsSmallMProgram reads A scales past its row, and past the "
            "end of scales_a for the last row", "§13.3", Layer.KERNEL, ORT,
            f"{QUANTIZATION}/dp4a_matmul_small_m.wgsl.template"),
    Finding("ort-small-m-zero-init", "DP4AMatMulNBitsSmallMProgram adds onto workgroup memory it never clears: right "
            "as WGSL zero-initialises it, wrong where the implementation does not", "§13.4", Layer.IMPLEMENTATION,
            WGPU_NATIVE, "src/lib.rs (zero_initialize_workgroup_memory: false); "
            f"the program: {QUANTIZATION}/dp4a_matmul_small_m.wgsl.template", ("workgroup-zero-init",),
            ZERO_INIT_NOTE),
    Finding("ort-tile-reads-unloaded-rows", "DP4AMatMulNBits reads tile rows it never loaded (A past M, B past N in a "
            "partial tile): wasted reads of zero-initialised memory, whose products are never stored", "§13.4",
            Layer.KERNEL, ORT, f"{QUANTIZATION}/dp4a_matmul.wgsl.template (loadSHMA, loadSHMB)"),
    Finding("ort-tile-naga-refuses", "DP4AMatMulNBits does not compile in wgpu (Naga): `subgroupShuffle(own_b0, 0)` "
            "with an abstract-int lane", "§13.5", Layer.IMPLEMENTATION, "Naga (gfx-rs/wgpu)",
            f"naga's subgroup validation; the program: {QUANTIZATION}/dp4a_matmul.wgsl.template",
            note="Robustness note for ORT: `subgroupShuffle(own_b0, 0u)` compiles under both compilers."),
    Finding("ort-gqa-softcap-ignored", "GroupQueryAttention ignores softcap on WebGPU: the decode program of a session "
            "with a softcap computes the uncapped scores", "§18.1", Layer.KERNEL, ORT,
            f"{BERT}/group_query_attention.cc, {BERT}/flash_attention.cc"),
    Finding("ort-flash-carried-scores", "FlashAttention's score accumulators qk_1..qk_4 are a loop body's `var` "
            "without initializer: right as WGSL re-zeroes them each iteration, wrong on Tint and on Naga before "
            "wgpu v30, which carry the previous step's scores", "§18.2", Layer.IMPLEMENTATION,
            "Dawn (Tint) and wgpu-native 29 (Naga before gfx-rs/wgpu#9592)",
            f"the program: {BERT}/flash_attention.wgsl.template (`var qk_1 : vec4<qk_precision>;`)",
            ("var-zero-init",),
            "Robustness note for ORT: `var qk_1 = vec4<qk_precision>(0);` is right on every implementation."),
    Finding("ort-flash-subgroups-of-4", "FlashAttention assumes subgroups of at least 8 lanes: with 4 its "
            "`sg_size <= 8` branch scores 8 keys a step from 4 loaded ones", "§18.3", Layer.KERNEL, ORT,
            f"{BERT}/flash_attention.wgsl.template"),
    Finding("ort-paged-prefill-f16-scores", "FlashAttentionPagedPrefill sums q.k in f16: a partial sum past 65504 is "
            "Inf and the sequence's outputs NaN", "§18.4", Layer.KERNEL, ORT, f"{BERT}/paged_attention.cc"),
    Finding("ort-copy-kv-cache-reads-past-end", "CopyKVCache (past and present not shared) reads key and value past "
            "their end for a sequence shorter than the batch's longest", "§18.5", Layer.KERNEL, ORT,
            f"{BERT}/attention.cc (CopyKVCacheProgram)"),
    Finding("ort-decode-partials-zero-init", "FlashAttentionDecodeQKV sums into workgroup memory it never wrote "
            "(inner_qk_values, tile_output): right as WGSL zero-initialises it, wrong where the implementation does "
            "not", "§18.6", Layer.IMPLEMENTATION, WGPU_NATIVE,
            f"src/lib.rs (zero_initialize_workgroup_memory: false); the program: {BERT}/flash_attention.cc",
            ("workgroup-zero-init",), ZERO_INIT_NOTE),
    Finding("ort-flash-reads-past-cache", "FlashAttention reads present_key and present_value past their end where "
            "the cache buffer ends within the last key step", "§18.7", Layer.KERNEL, ORT,
            f"{BERT}/flash_attention.wgsl.template"),
)


@dataclass(frozen=True)
class Reproduction:
    """The check that shows a finding in verify's gate, as docs/findings.md's "Reproduce" line gives
    it: `verify findings status` runs it on each onnxruntime-web version verify installs (its
    explicit cases: the kernel's finding examples and corners, which run first on every seed) and
    reads the record as the gate does. `implementation` is where the finding can show (wgpu: Mesa
    22.3's lavapipe does not zero workgroup memory, Naga refuses the tile program); `subgroup_width`
    the emulated width a width-bound finding shows at."""

    kernel: str
    check: str
    config: dict = field(default_factory=dict)
    implementation: str | None = None
    subgroup_width: int | None = None


F32_4_2 = dict(dtype="f32", head_size=64, num_heads=4, kv_num_heads=2)
#: Each finding of ORT's programs by the check that shows it (docs/findings.md §13, §18).
REPRODUCTIONS = {
    "ort-f16-accumulation": Reproduction("ort.dp4a.matmul", "accumulator_range", dict(dtype="f16")),
    "ort-quantize-zero-block": Reproduction("ort.dp4a.quantize", "zero_blocks", dict(dtype="f32")),
    "ort-small-m-scales-past-row": Reproduction("ort.dp4a.matmul_small_m", "sanitize", dict(dtype="f32")),
    "ort-small-m-zero-init": Reproduction("ort.dp4a.matmul_small_m", "sanitize", dict(dtype="f32")),
    "ort-tile-reads-unloaded-rows": Reproduction("ort.dp4a.matmul", "sanitize", dict(dtype="f32")),
    "ort-tile-naga-refuses": Reproduction("ort.dp4a.matmul", "reference", dict(dtype="f32"), "wgpu"),
    "ort-gqa-softcap-ignored": Reproduction("ort.attention.decode_qkv", "reference", dict(F32_4_2, softcap=2.0)),
    "ort-flash-carried-scores": Reproduction("ort.attention.flash", "reference", F32_4_2),
    "ort-flash-subgroups-of-4": Reproduction("ort.attention.flash", "reference", F32_4_2, subgroup_width=4),
    "ort-paged-prefill-f16-scores": Reproduction("ort.attention.paged_prefill", "large_scores",
                                                 dict(num_heads=4, kv_num_heads=1)),
    "ort-copy-kv-cache-reads-past-end": Reproduction("ort.attention.copy_kv_cache", "sanitize"),
    "ort-decode-partials-zero-init": Reproduction("ort.attention.decode_qkv", "sanitize",
                                                  dict(dtype="f32", head_size=64, num_heads=16, kv_num_heads=1)),
    "ort-flash-reads-past-cache": Reproduction("ort.attention.flash", "sanitize", F32_4_2, "wgpu"),
}
