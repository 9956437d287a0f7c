"""Config keys and conventions every attention kernel shares (docs/architecture.md §3)."""

from __future__ import annotations

import numpy as np

from verify.kernels.contract import ConfigKey

HEAD_DIM = ConfigKey("head_dim", 128, (64, 96, 128, 256), "size of one attention head")
#: Heads a config may have: more than any released model (Llama 3.1 405B has 128 query heads).
MAX_HEADS = 256
QO_HEADS = ConfigKey("qo_heads", 32, (), "query/output heads", bounds=(1, MAX_HEADS))
KV_HEADS = ConfigKey("kv_heads", 8, (), "key/value heads (GQA: qo_heads/kv_heads queries share one)",
                     bounds=(1, MAX_HEADS))
DTYPE = ConfigKey("dtype", "f16", ("f16", "f32"), "storage type of q, k, v and the output; math is f32")
PAGE_SIZE = ConfigKey("page_size", 16, (16,), "rows per KV-cache page")

STORAGE = {"f16": np.float16, "f32": np.float32}


def dtype_features(config: dict) -> frozenset:
    """f16 storage needs the shader-f16 feature."""
    return frozenset({"shader-f16"}) if config.get("dtype") == "f16" else frozenset()


def dtype_enables(config: dict) -> tuple:
    return ("f16",) if config.get("dtype") == "f16" else ()
