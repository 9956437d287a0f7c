"""ggml-webgpu's split-KV decode attention (FLASH_ATTN_EXT's vec path): `llamacpp.attention.*`.

- `kernels`: flash_attn_vec end to end, and flash_attn_vec_blk, _split and _reduce one program each.
- `cases`: shapes, KV lengths around tiles and split counts, llama.cpp's masks, values.
"""
