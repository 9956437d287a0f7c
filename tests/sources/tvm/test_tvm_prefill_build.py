"""verify.sources.tvm.build: TVM's prefill and tree-attention factories, built for webgpu and cached."""

from __future__ import annotations

import pytest

from verify.errors import UsageError
from verify.sources.tvm import build as tvm_build
from verify.wgsl import read_interface

needs_tvm = pytest.mark.skipif(tvm_build.installed_version() is None, reason="apache-tvm is not installed")

#: Entry point and storage bindings (in binding order) of each kernel, as TVM 0.27 emits them:
#: handles sorted by name (split_host_device.cc), then the uniform PODArgs.
PREFILL_KERNELS = [
    (tvm_build.prefill_build(kv_heads=2, qo_heads=8, head_dim=64, dtype="f16", sliding_window=False),
     "batch_prefill_paged_kv_kernel",
     ["k_rope_pos_offset", "length_info", "lse", "output", "page_indptr", "page_values", "pages", "q", "q_indptr",
      "q_rope_position"]),
    (tvm_build.prefill_build(kv_heads=2, qo_heads=8, head_dim=64, dtype="f32", sliding_window=True,
                             sliding_window_size=16),
     "batch_prefill_paged_kv_sliding_window_kernel",
     ["k_rope_pos_offset", "length_info", "lse", "output", "page_indptr", "page_values", "pages", "q", "q_indptr",
      "q_rope_position"]),
    (tvm_build.ragged_prefill_build(kv_heads=2, qo_heads=8, head_dim=64, dtype="f16"),
     "batch_prefill_ragged_kv_kernel",
     ["k", "k_rope_pos_offset", "kv_indptr", "lse", "output", "q", "q_indptr", "q_rope_position", "v"]),
    (tvm_build.tree_build(kv_heads=2, qo_heads=8, head_dim=64, dtype="f16", paged=False),
     "batch_tree_attn_kernel",
     ["k", "kv_indptr", "lse", "mask", "mn_indptr", "output", "q", "q_indptr", "q_rope_position", "v"]),
    (tvm_build.tree_build(kv_heads=2, qo_heads=8, head_dim=64, dtype="f16", paged=True),
     "tree_attn_paged_kv_kernel",
     ["length_info", "lse", "output", "page_indptr", "page_values", "pages", "q", "q_indptr", "tree_order",
      "tree_order_indptr"]),
]


@needs_tvm
@pytest.mark.parametrize("build, entry, storage", PREFILL_KERNELS, ids=lambda x: getattr(x, "factory", None))
def test_prefill_factories_build_for_webgpu_with_the_documented_bindings(tmp_path, build, entry, storage):
    text = tvm_build.load(build, tmp_path)
    interface = read_interface(text)
    assert f"fn {entry}(" in text
    names = [b.name.removesuffix("_ptr") for b in interface.bindings]
    assert names == storage + ["podArgs"]
    assert (tmp_path / tvm_build.installed_version() / build.filename).read_text() == text


def test_the_window_is_part_of_only_the_sliding_window_kernels_description():
    """The kernel without a window never reads sliding_window_size, so it gets one cache file."""
    plain = [tvm_build.prefill_build(kv_heads=2, qo_heads=8, head_dim=64, dtype="f16", sliding_window=False,
                                     sliding_window_size=size) for size in (16, 1024)]
    windowed = [tvm_build.prefill_build(kv_heads=2, qo_heads=8, head_dim=64, dtype="f16", sliding_window=True,
                                        sliding_window_size=size) for size in (16, 1024)]
    assert plain[0] == plain[1] and "sliding_window_size" not in plain[0].describe()
    assert windowed[0].filename != windowed[1].filename
    assert "sliding_window_size=1024" in windowed[1].describe()


def test_every_factory_has_a_module():
    builds = [b for b, _, _ in PREFILL_KERNELS] + [
        tvm_build.sequence_prefill_build(kv_heads=2, qo_heads=8, head_dim=64, dtype="f16", causal=True, sm_scale=0.125),
        tvm_build.decode_build(kv_heads=2, qo_heads=8, head_dim=64, dtype="f16", sliding_window=False, page_size=16),
        tvm_build.merge_build(heads=8, head_dim=64, dtype="f16")]
    assert {b.factory for b in builds} == set(tvm_build.FACTORY_MODULES)


@needs_tvm
def test_a_head_dim_whose_tiles_overflow_workgroup_memory_is_a_usage_error(tmp_path):
    """f16 head dims 152-248 keep 32-row tiles and need more than the webgpu target's 32 KiB."""
    build = tvm_build.prefill_build(kv_heads=2, qo_heads=8, head_dim=192, dtype="f16", sliding_window=False)
    with pytest.raises(UsageError, match="cannot build _attention_prefill.*32768"):
        tvm_build.load(build, tmp_path)
