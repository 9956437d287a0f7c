"""ORT's attention programs on a machine without ORT's runtime (no Node, no Dawn: a GPU box).

verify launches ORT's attention programs itself (`ort.attention.*`), so a machine with a GPU
but no Node can check them from captures made elsewhere: a VERIFY_ORT_CACHE carried over is read
whatever adapter captured it, and a capture it lacks is one clear SetupError.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from verify.errors import SetupError
from verify.sources import shipped
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.attention.programs import OrtDecodeQkv, _QkvCapture, gqa_config
from verify.sources.ort.cache import Capture
from verify.sources.ort.dp4a import captures as programs
from verify.sources.ort.runtime import pinned_version


@pytest.fixture
def no_runtime(monkeypatch, tmp_path):
    def missing(*args, **kwargs):
        raise SetupError("Node.js is not installed")

    monkeypatch.setattr(ort_runtime, "shared_runtime", missing)
    monkeypatch.setenv(programs.CACHE_ENV, str(tmp_path))
    with shipped.ignored():  # the cache alone (the shipped captures: tests/sources/test_shipped_sources.py)
        yield tmp_path


def test_without_a_runtime_a_capture_from_another_adapter_is_read(no_runtime):
    kernel = OrtDecodeQkv()
    config = kernel.config(dict(dtype="f32", num_heads=4, kv_num_heads=2))
    capture, model_config = _QkvCapture(config["m_tile"]), gqa_config(config)
    with pytest.raises(SetupError, match="not in the ORT WGSL cache"):
        kernel.wgsl(config)
    # a capture made on another machine's adapter, carried over in VERIFY_ORT_CACHE
    name, want = capture.capture_request(model_config, pinned_version())
    folder = no_runtime / pinned_version() / "nvidia"
    folder.mkdir(parents=True)
    wgsl = "// the QKV program\nlet num_q_tiles = (uniforms.new_sequence_length + 1 - 1) / 1;"
    made = Capture(replace(want, adapter="elsewhere"), {"FlashAttentionDecodeQKV": wgsl})
    (folder / name).write_text(made.to_json())
    text = kernel.wgsl(config)
    assert f"// onnxruntime-web {pinned_version()} on elsewhere" in text and "the QKV program" in text
