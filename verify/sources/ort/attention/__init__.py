"""ONNX Runtime Web's attention, end to end and program by program (docs/ort-attention.md).

- `sessions`: `ort.gqa` and `ort.paged_attention`, one-node sessions run by ORT itself.
- `mha`: `ort.mha`, MultiHeadAttention end to end.
- `programs`: GroupQueryAttention's split decode pair and FlashAttention, one program at a time.
- `paged_programs`, `paged_prefill`: PagedAttention's split decode pair and its prefill program.
- `copy_kv_cache`: CopyKVCache, as GroupQueryAttention dispatches it.
- `models`: the one-node ONNX models; `cases`: what the kernels draw and which path each case takes;
  `launch`: how ORT's host code sizes and binds the split decode; `checks`: `large_scores`.
"""
