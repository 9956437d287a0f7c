"""One `com.microsoft.GroupQueryAttention`, `PagedAttention` or `MultiHeadAttention` node as an ONNX model.

As for MatMulNBits (verify.sources.ort.dp4a.model), ONNX Runtime runs models, not kernels: verify
builds the smallest model that reaches ORT's attention programs, one node whose every input is a
graph input, with symbolic batch, sequence and cache lengths, so one session serves every case
of a config (ORT generates its WGSL per config and reads lengths from uniforms or from
seqlens_k on the GPU).

The inputs, by position, are those of ORT's contrib op schemas
(onnxruntime/core/graph/contrib_ops/bert_defs.cc, GroupQueryAttention and PagedAttention v1) in
onnxruntime-web 1.30:

GroupQueryAttention: 0 query [B, S, N·H] (or packed QKV [B, S, (N + 2·Nkv)·H]), 1 key and
2 value [B, S, Nkv·H] (absent when packed), 3 past_key and 4 past_value [B, Nkv, P, H] (BNSH;
P is the past length, or the cache's capacity when the application binds past and present to
one buffer), 5 seqlens_k int32 [B] (total length - 1 per sequence), 6 total_sequence_length
int32 scalar (read on the CPU), 7 cos_cache and 8 sin_cache [max_len, rotary_dim / 2],
9 position_ids, 10 attention_bias, 11 head_sink [N], 12-13 k_scale/v_scale, 14-15
q_norm_weight/k_norm_weight. Outputs: output [B, S, N·H], present_key and present_value
[B, Nkv, max(P, total), H].

PagedAttention: 0 query [T, N·H] (or packed [T, (N + 2·Nkv)·H]), 1 key and 2 value [T, Nkv·H],
3 key_cache and 4 value_cache [num_blocks, block_size, Nkv, H] (updated in place),
5 cumulative_sequence_length int32 [B + 1] (new tokens), 6 past_seqlens int32 [B], 7 block_table
int32 [B, max_blocks_per_sequence], 8 cos_cache and 9 sin_cache, 10 slot_mapping, 11 head_sink,
12-13 q/k norm weights, 14-15 k/v scales, 16 attention_metadata. Outputs: output [T, N·H],
key_cache_out and value_cache_out (the same tensors as the caches). Its type constraint allows
f16 and bf16 only (no f32).

MultiHeadAttention (the subset built here): 0 query [B, S, N·H], 1 key and 2 value [B, L, N·H],
6 past_key and 7 past_value [B, N, P, H]; attribute `unidirectional` (causal); outputs output and,
with a past, present_key/present_value [B, N, P + L, H]. ORT 1.30 runs it on the same flash
programs as GroupQueryAttention (CopyKVCache, FlashAttentionDecodeQKV/VxReduce, FlashAttention),
in variants without seqlens_k.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from verify.errors import UsageError
from verify.sources.ort.dp4a.model import (
    IR_VERSION,
    MS_OPSET,
    ONNX_TYPES,
    OPSET,
    _import_onnx,
)

#: GroupQueryAttention's attention_bias: none, per sequence and head, or one broadcast over both.
BIAS_SHAPES = ("none", "full", "shared")
#: Input positions of GroupQueryAttention v1 (bert_defs.cc).
GQA_INPUTS = ("query", "key", "value", "past_key", "past_value", "seqlens_k", "total_sequence_length",
              "cos_cache", "sin_cache", "position_ids", "attention_bias", "head_sink")
GQA_OUTPUTS = ("output", "present_key", "present_value")
#: Input positions of MultiHeadAttention v1 (bert_defs.cc).
MHA_INPUTS = ("query", "key", "value", "bias", "key_padding_mask", "attention_bias", "past_key", "past_value")
#: Input positions of PagedAttention v1 (bert_defs.cc).
PAGED_INPUTS = ("query", "key", "value", "key_cache", "value_cache", "cumulative_sequence_length", "past_seqlens",
                "block_table", "cos_cache", "sin_cache", "slot_mapping", "head_sink")
PAGED_OUTPUTS = ("output", "key_cache_out", "value_cache_out")
DTYPES = {"f16": np.float16, "f32": np.float32}


def _node_inputs(order: tuple[str, ...], present: set[str]) -> list[str]:
    """The node's input list by position: a name where present, "" where absent, no trailing ""."""
    names = [name if name in present else "" for name in order]
    while names and names[-1] == "":
        names.pop()
    return names


def _serialize(node, name: str, inputs: list, outputs: list) -> bytes:
    _, helper = _import_onnx()
    graph = helper.make_graph([node], name, inputs, outputs)
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid("com.microsoft", MS_OPSET)])
    proto.ir_version = IR_VERSION
    return proto.SerializeToString()


@dataclass(frozen=True)
class AttentionModel:
    """What both builders share: the element type, the heads and how the softmax is specialised."""

    dtype: str  # "f16" | "f32": query, key, value, caches, cos/sin, head_sink and output
    num_heads: int
    kv_num_heads: int
    head_size: int
    packed_qkv: bool = False
    do_rotary: bool = False
    rotary_interleaved: bool = False
    #: Channels rotated (cos_cache is [max_len, rotary_dim / 2]); 0 means all of head_size.
    rotary_dim: int = 0
    local_window_size: int = -1
    softcap: float = 0.0
    #: The softmax scale; 0 means ORT's default 1/sqrt(head_size).
    scale: float = 0.0
    has_head_sink: bool = False

    #: The contrib op's name (each op's model names its own).
    op: ClassVar[str]

    if TYPE_CHECKING:  # each op's model builds its node

        def _build(self) -> bytes: ...

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise UsageError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.num_heads <= 0 or self.kv_num_heads <= 0 or self.num_heads % self.kv_num_heads:
            raise UsageError(f"num_heads={self.num_heads} must be a positive multiple of "
                             f"kv_num_heads={self.kv_num_heads}")
        if self.head_size <= 0:
            raise UsageError(f"head_size must be positive, got {self.head_size}")
        if self.rotary_dim % 2 or not 0 <= self.rotary_dim <= self.head_size:
            raise UsageError(f"rotary_dim must be even and at most head_size={self.head_size}, got {self.rotary_dim}")

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(DTYPES[self.dtype])

    @property
    def group_size(self) -> int:
        """Query heads per KV head (GQA's ratio): query head h reads KV head h // group_size."""
        return self.num_heads // self.kv_num_heads

    @property
    def half_rotary_dim(self) -> int:
        return (self.rotary_dim or self.head_size) // 2

    @property
    def effective_scale(self) -> float:
        return self.scale if self.scale else 1.0 / np.sqrt(self.head_size)

    @property
    def query_width(self) -> int:
        """The last dimension of `query`: N·H, or (N + 2·Nkv)·H packed."""
        heads = self.num_heads + 2 * self.kv_num_heads if self.packed_qkv else self.num_heads
        return heads * self.head_size

    def describe(self) -> str:
        values = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))
        return f"{self.op}({values})"

    @cached_property
    def digest(self) -> str:
        return hashlib.sha256(self.describe().encode()).hexdigest()[:16]

    @cached_property
    def onnx_bytes(self) -> bytes:
        """The serialized model (deterministic for a given onnx release)."""
        return self._build()

    def _attributes(self) -> dict:
        attrs: dict[str, int | float] = {
            "num_heads": self.num_heads, "kv_num_heads": self.kv_num_heads, "do_rotary": int(self.do_rotary),
            "rotary_interleaved": int(self.rotary_interleaved), "local_window_size": self.local_window_size}
        if self.softcap:
            attrs["softcap"] = float(self.softcap)
        if self.scale:
            attrs["scale"] = float(self.scale)
        return attrs

    def _cast(self, name: str, array, dtype=None) -> np.ndarray:
        return np.ascontiguousarray(array, dtype=dtype or self.numpy_dtype)


@dataclass(frozen=True)
class GroupQueryAttentionModel(AttentionModel):
    """GroupQueryAttention's attributes, and which optional inputs the node has."""

    op = "GroupQueryAttention"
    smooth_softmax: bool = False
    #: Input attention_bias: "none", "full" ([B, N, S, total]) or "shared" ([1, 1, S, total],
    #: broadcast over the batch and the heads).
    attention_bias: str = "none"
    #: Input position_ids [B, S] int64 (onnxruntime-web 1.30 reads it only to check its shape:
    #: docs/ort-attention.md §2).
    has_position_ids: bool = False

    def __post_init__(self):
        super().__post_init__()
        if self.attention_bias not in BIAS_SHAPES:
            raise UsageError(f"attention_bias must be one of {', '.join(BIAS_SHAPES)}, got {self.attention_bias!r}")

    def describe(self) -> str:
        """As AttentionModel's, without attention_bias and position_ids where there are none (so
        models without them keep the names their captured programs are cached under)."""
        omitted = {"attention_bias": "none", "has_position_ids": False}
        values = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                           if f.name not in omitted or getattr(self, f.name) != omitted[f.name])
        return f"{self.op}({values})"

    def bias_shape(self, batch: int, new: int, total: int) -> tuple[int, int, int, int]:
        """attention_bias's shape for a batch of `batch` sequences, `new` tokens, `total` the
        batch's largest total length (the last dimension ORT indexes keys by)."""
        if self.attention_bias == "full":
            return (batch, self.num_heads, new, total)
        return (1, 1, new, total)

    def _build(self) -> bytes:
        onnx, helper = _import_onnx()
        element = getattr(onnx.TensorProto, ONNX_TYPES[self.numpy_dtype.name][0])
        int32 = onnx.TensorProto.INT32
        kv_width = self.kv_num_heads * self.head_size
        cache = ["batch", self.kv_num_heads, "past_length", self.head_size]
        values = {"query": (element, ["batch", "sequence", self.query_width]),
                  "past_key": (element, cache), "past_value": (element, cache),
                  "seqlens_k": (int32, ["batch"]), "total_sequence_length": (int32, [])}
        if not self.packed_qkv:
            values["key"] = values["value"] = (element, ["batch", "sequence", kv_width])
        if self.do_rotary:
            values["cos_cache"] = values["sin_cache"] = (element, ["max_length", self.half_rotary_dim])
        if self.has_head_sink:
            values["head_sink"] = (element, [self.num_heads])
        if self.attention_bias != "none":
            full = self.attention_bias == "full"
            values["attention_bias"] = (element, ["batch" if full else 1, self.num_heads if full else 1, "sequence",
                                                  "total"])
        if self.has_position_ids:
            values["position_ids"] = (onnx.TensorProto.INT64, ["batch", "sequence"])
        names = _node_inputs(GQA_INPUTS, set(values))
        attrs = self._attributes()
        if self.smooth_softmax:
            attrs["smooth_softmax"] = 1
        node = helper.make_node("GroupQueryAttention", names, list(GQA_OUTPUTS), domain="com.microsoft", **attrs)
        inputs = [helper.make_tensor_value_info(name, *values[name]) for name in names if name]
        present = ["batch", self.kv_num_heads, "present_length", self.head_size]
        outputs = [helper.make_tensor_value_info("output", element,
                                                 ["batch", "sequence", self.num_heads * self.head_size]),
                   helper.make_tensor_value_info("present_key", element, present),
                   helper.make_tensor_value_info("present_value", element, present)]
        return _serialize(node, "group_query_attention", inputs, outputs)

    def feeds(self, query, past_key, past_value, seqlens_k, total_sequence_length, key=None, value=None,
              cos_cache=None, sin_cache=None, head_sink=None, attention_bias=None,
              position_ids=None) -> dict[str, np.ndarray]:
        """The session's inputs by name, cast to the model's types (see the module docstring for
        the layouts). total_sequence_length is the batch's largest seqlens_k + 1."""
        feeds = {"query": self._cast("query", query)}
        if not self.packed_qkv:
            if key is None or value is None:
                raise UsageError("an unpacked GroupQueryAttention model needs key and value")
            feeds["key"], feeds["value"] = self._cast("key", key), self._cast("value", value)
        feeds["past_key"], feeds["past_value"] = self._cast("past_key", past_key), self._cast("past_value", past_value)
        feeds["seqlens_k"] = self._cast("seqlens_k", seqlens_k, np.int32)
        feeds["total_sequence_length"] = np.asarray(total_sequence_length, dtype=np.int32).reshape(())
        if self.do_rotary:
            if cos_cache is None or sin_cache is None:
                raise UsageError("a GroupQueryAttention model with do_rotary needs cos_cache and sin_cache")
            feeds["cos_cache"], feeds["sin_cache"] = (self._cast("cos_cache", cos_cache),
                                                      self._cast("sin_cache", sin_cache))
        if self.has_head_sink:
            feeds["head_sink"] = self._cast("head_sink", head_sink)
        if self.attention_bias != "none":
            if attention_bias is None:
                raise UsageError(f"a GroupQueryAttention model with a {self.attention_bias} attention_bias needs one")
            feeds["attention_bias"] = self._cast("attention_bias", attention_bias)
        if self.has_position_ids:
            if position_ids is None:
                raise UsageError("a GroupQueryAttention model with position_ids needs them")
            feeds["position_ids"] = self._cast("position_ids", position_ids, np.int64)
        return feeds

    #: Inputs and outputs an application binds to one buffer for ORT's static KV cache.
    shared_cache: ClassVar[dict] = {"past_key": "present_key", "past_value": "present_value"}


@dataclass(frozen=True)
class PagedAttentionModel(AttentionModel):
    """PagedAttention's attributes (its cache is [num_blocks, block_size, Nkv, H])."""

    op = "PagedAttention"
    block_size: int = 16

    def _build(self) -> bytes:
        onnx, helper = _import_onnx()
        element = getattr(onnx.TensorProto, ONNX_TYPES[self.numpy_dtype.name][0])
        int32 = onnx.TensorProto.INT32
        kv_width = self.kv_num_heads * self.head_size
        cache = ["num_blocks", self.block_size, self.kv_num_heads, self.head_size]
        values = {"query": (element, ["tokens", self.query_width]),
                  "key_cache": (element, cache), "value_cache": (element, cache),
                  "cumulative_sequence_length": (int32, ["batch_plus_one"]), "past_seqlens": (int32, ["batch"]),
                  "block_table": (int32, ["batch", "max_blocks_per_sequence"])}
        if not self.packed_qkv:
            values["key"] = values["value"] = (element, ["tokens", kv_width])
        if self.do_rotary:
            values["cos_cache"] = values["sin_cache"] = (element, ["max_length", self.half_rotary_dim])
        if self.has_head_sink:
            values["head_sink"] = (element, [self.num_heads])
        names = _node_inputs(PAGED_INPUTS, set(values))
        node = helper.make_node("PagedAttention", names, list(PAGED_OUTPUTS), domain="com.microsoft",
                                **self._attributes())
        inputs = [helper.make_tensor_value_info(name, *values[name]) for name in names if name]
        outputs = [helper.make_tensor_value_info("output", element, ["tokens", self.num_heads * self.head_size]),
                   helper.make_tensor_value_info("key_cache_out", element, cache),
                   helper.make_tensor_value_info("value_cache_out", element, cache)]
        return _serialize(node, "paged_attention", inputs, outputs)

    def feeds(self, query, key_cache, value_cache, cumulative_sequence_length, past_seqlens, block_table, key=None,
              value=None, cos_cache=None, sin_cache=None, head_sink=None) -> dict[str, np.ndarray]:
        """The session's inputs by name, cast to the model's types (module docstring)."""
        feeds = {"query": self._cast("query", query)}
        if not self.packed_qkv:
            if key is None or value is None:
                raise UsageError("an unpacked PagedAttention model needs key and value")
            feeds["key"], feeds["value"] = self._cast("key", key), self._cast("value", value)
        feeds["key_cache"], feeds["value_cache"] = (self._cast("key_cache", key_cache),
                                                    self._cast("value_cache", value_cache))
        feeds["cumulative_sequence_length"] = self._cast("cumulative_sequence_length", cumulative_sequence_length,
                                                         np.int32)
        feeds["past_seqlens"] = self._cast("past_seqlens", past_seqlens, np.int32)
        feeds["block_table"] = self._cast("block_table", block_table, np.int32)
        if self.do_rotary:
            if cos_cache is None or sin_cache is None:
                raise UsageError("a PagedAttention model with do_rotary needs cos_cache and sin_cache")
            feeds["cos_cache"], feeds["sin_cache"] = (self._cast("cos_cache", cos_cache),
                                                      self._cast("sin_cache", sin_cache))
        if self.has_head_sink:
            feeds["head_sink"] = self._cast("head_sink", head_sink)
        return feeds

    #: The caches are updated in place: an application binds each to its output.
    shared_cache: ClassVar[dict] = {"key_cache": "key_cache_out", "value_cache": "value_cache_out"}


@dataclass(frozen=True)
class MultiHeadAttentionModel:
    """MultiHeadAttention with separate query, key and value, an optional past, causal or not."""

    op = "MultiHeadAttention"
    dtype: str
    num_heads: int
    head_size: int
    unidirectional: bool = False
    has_past: bool = False
    #: Input attention_bias: "none", "full" ([B, N, S, total]) or "shared" ([1, 1, S, total]).
    attention_bias: str = "none"
    #: present_key/present_value [B, N, P + L, H] are new tensors, longer than the past: nothing is
    #: updated in place.
    shared_cache: ClassVar[dict] = {}

    def __post_init__(self):
        if self.dtype not in DTYPES:
            raise UsageError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.attention_bias not in BIAS_SHAPES:
            raise UsageError(f"attention_bias must be one of {', '.join(BIAS_SHAPES)}, got {self.attention_bias!r}")

    @property
    def numpy_dtype(self) -> np.dtype:
        return np.dtype(DTYPES[self.dtype])

    def describe(self) -> str:
        values = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self)
                           if f.name != "attention_bias" or self.attention_bias != "none")
        return f"{self.op}({values})"

    @cached_property
    def onnx_bytes(self) -> bytes:
        onnx, helper = _import_onnx()
        element = getattr(onnx.TensorProto, ONNX_TYPES[self.numpy_dtype.name][0])
        width = self.num_heads * self.head_size
        values = {"query": ["batch", "sequence", width], "key": ["batch", "kv_sequence", width],
                  "value": ["batch", "kv_sequence", width]}
        outputs = ["output"]
        if self.attention_bias != "none":
            full = self.attention_bias == "full"
            values["attention_bias"] = ["batch" if full else 1, self.num_heads if full else 1, "sequence", "total"]
        if self.has_past:
            values["past_key"] = values["past_value"] = ["batch", self.num_heads, "past_length", self.head_size]
            outputs += ["present_key", "present_value"]
        names = _node_inputs(MHA_INPUTS, set(values))
        node = helper.make_node("MultiHeadAttention", names, outputs, domain="com.microsoft", num_heads=self.num_heads,
                                unidirectional=int(self.unidirectional))
        inputs = [helper.make_tensor_value_info(name, element, values[name]) for name in names if name]
        return _serialize(node, "multi_head_attention", inputs,
                          [helper.make_tensor_value_info(name, element, None) for name in outputs])

    def feeds(self, query, key, value, past_key=None, past_value=None, attention_bias=None) -> dict[str, np.ndarray]:
        t = self.numpy_dtype
        feeds = {"query": np.ascontiguousarray(query, t), "key": np.ascontiguousarray(key, t),
                 "value": np.ascontiguousarray(value, t)}
        if self.attention_bias != "none":
            if attention_bias is None:
                raise UsageError(f"a MultiHeadAttention model with a {self.attention_bias} attention_bias needs one")
            feeds["attention_bias"] = np.ascontiguousarray(attention_bias, t)
        if self.has_past:
            feeds["past_key"], feeds["past_value"] = (np.ascontiguousarray(past_key, t),
                                                      np.ascontiguousarray(past_value, t))
        return feeds
