"""The findings in Apache TVM's generated WebGPU kernels (docs/findings.md §2-§6, §14-§16), as data
(verify.findings). The kernels attach them to checks with their signatures (Kernel.known_finding)."""

from verify.findings import Finding, Layer

TVM = "Apache TVM (apache/tvm)"
DECODE = "python/tvm/relax/frontend/nn/llm/_decode_kernels.py"

FINDINGS = (
    Finding("tvm-merge-race", "merge_state_inplace races on S: the lanes of a row read S[n, h] and overwrite it with "
            "no barrier between", "§2", Layer.KERNEL, TVM, f"{DECODE} L455-526 (_merge_state_inplace)"),
    Finding("tvm-merge-infinite-empty", "merge_state_inplace returns NaN when both states are empty (lse = -inf)",
            "§3", Layer.KERNEL, TVM, f"{DECODE} L499-501"),
    Finding("tvm-decode-below-floor", "batch_decode_paged_kv returns an empty state for a context whose logits all "
            "lie below -5e4", "§4", Layer.KERNEL, TVM, f"{DECODE} L292, L350, L381"),
    Finding("tvm-decode-dropped-heads", "batch_decode_paged_kv never computes the last heads of a GQA group that "
            "does not split (head 8 of a group of 9 at head_dim 128)", "§5", Layer.KERNEL, TVM, f"{DECODE} L203"),
    Finding("tvm-merge-dropped-heads", "merge_state_inplace leaves the last heads unmerged where the heads do not "
            "split (head 8 of 9 at head_dim 128)", "§5", Layer.KERNEL, TVM, f"{DECODE} L463"),
    Finding("tvm-packed-grid", "A packed grid runs one workgroup too many: the early return tests `> packGridDimX` "
            "where `>=` is needed", "§6", Layer.KERNEL, TVM,
            "src/backend/webgpu/codegen/codegen_webgpu.cc L330-332; web/src/webgpu.ts L771-789"),
    Finding("tvm-tree-extra-warp", "tree_attn runs an extra warp at some head dims that stores past Q_smem, K_smem "
            "and V_smem: a query row wrong", "§14.1", Layer.KERNEL, TVM,
            "python/tvm/relax/frontend/nn/llm/tree_attn.py L514-522, L1147-1155 (get_tile_size)"),
    Finding("tvm-tree-mask-past-tree", "tree_attn reads the tree mask past the tree: the padding rows of the last "
            "tile read past the end of mask", "§14.2", Layer.KERNEL, TVM,
            "python/tvm/relax/frontend/nn/llm/tree_attn.py"),
    Finding("tvm-llama3-rope-build", "Llama 3 rope scaling does not build in most prefill and tree kernels "
            "(cse_v used before its definition)", "§15", Layer.KERNEL, TVM,
            "python/tvm/relax/frontend/nn/llm/_kernel_common.py (the llama3 rope inlined into the kernels)"),
    Finding("tvm-prefill-below-floor", "batch_prefill_paged_kv returns the mean of a causal row's future tokens when "
            "its logits all lie below -5e4", "§16", Layer.KERNEL, TVM,
            "python/tvm/relax/frontend/nn/llm/_kernel_common.py L229-234, L256-296"),
)
