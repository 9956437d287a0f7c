"""Rope variants as config keys: what every rope-applying kernel is specialised on, how the
config reads, and the one-line usage errors for parameters that do not apply or cannot be built."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from verify.references.rope import Llama3Scaling
from verify.errors import UsageError
from verify.kernels.attention.rope_variant import LLAMA_3_1, LLAMA_3_2, RopeVariant
from verify.kernels.registry import get_kernel

ROPE_KERNELS = ("rope", "decode.tiled", "decode.sharded", "decode", "tvm.decode", "tvm.decode_sliding_window")
LLAMA3_KEYS = {"rope_factor", "low_freq_factor", "high_freq_factor", "original_max_position"}


def verify(*args):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name", ROPE_KERNELS)
def test_every_rope_kernel_takes_the_scaling_keys_and_records_only_those_that_apply(name):
    kernel = get_kernel(name)
    plain, scaled = kernel.config(), kernel.config(dict(LLAMA_3_2))
    assert plain["rope_scaling"] == "none" and not LLAMA3_KEYS & set(plain)
    assert {k: scaled[k] for k in LLAMA_3_2} == LLAMA_3_2
    assert RopeVariant.from_config(scaled).llama3 == Llama3Scaling(32.0, 1.0, 4.0, 8192)
    assert kernel.config(scaled) == scaled and kernel.config(plain) == plain  # a recorded config replays as is


@pytest.mark.parametrize("name", ROPE_KERNELS)
def test_every_rope_kernel_gates_a_llama3_config_of_a_llama_shape(name):
    """Llama-3.1-8B (128, 32/8), Llama-3.2-3B (128, 24/8) or Llama-3.2-1B (64, 32/8) with its scaling."""
    shapes = {(128, 32, 8, 8.0), (128, 24, 8, 32.0), (64, 32, 8, 32.0)}
    kernel = get_kernel(name)
    configs = getattr(kernel, "gate_shapes", None)
    configs = [kernel.config(c) for c in configs] if configs else kernel.gate_configs("ci")
    llama = [c for c in configs if c["rope_scaling"] == "llama3"]
    assert llama and all((c["head_dim"], c["qo_heads"], c["kv_heads"], c["rope_factor"]) in shapes for c in llama)


def test_only_the_standalone_rope_kernel_offers_gptj_pairing():
    """TVM's decode pairs d with d +- D/2 whatever the rope_type (_kernel_common._rope); so do ours."""
    assert get_kernel("rope").config({"rope_pairing": "gptj"})["rope_pairing"] == "gptj"
    for name in ROPE_KERNELS[1:]:
        with pytest.raises(UsageError, match="no config key 'rope_pairing'"):
            get_kernel(name).config({"rope_pairing": "gptj"})


def test_the_wgsl_is_specialised_on_the_variant():
    rope = get_kernel("rope")
    plain = rope.wgsl(rope.config())
    scaled = rope.wgsl(rope.config(dict(LLAMA_3_1, rope_pairing="gptj")))
    assert "const ROPE_GPTJ: bool = false;" in plain and "WAVELENGTH" not in plain
    for line in ("const ROPE_GPTJ: bool = true;", "const ROPE_FACTOR: f32 = 8.0;", "const HIGH_FREQ_WAVELENGTH: f32 = 2048.0;",
                 "const LOW_FREQ_WAVELENGTH: f32 = 8192.0;", "const ORIGINAL_MAX_POSITION: f32 = 8192.0;"):
        assert line in scaled
    assert plain.count("fn rope_frequencies(") == scaled.count("fn rope_frequencies(") == 1


def test_a_llama3_parameter_without_llama3_scaling_is_a_usage_error():
    result = verify("show", "rope", "--config", "rope_factor=32")
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip().splitlines() == ["verify: error: rope_factor apply only with rope_scaling=llama3"]


@pytest.mark.parametrize("config,message", [
    ("rope_scaling=llama3,high_freq_factor=1", "must exceed low_freq_factor=1.0"),
    ("rope_scaling=llama3,rope_factor=0", "factor must be finite and > 0"),
    ("rope_scaling=yarn", "expected one of none, llama3")])
def test_llama3_parameters_the_kernels_cannot_compute_are_usage_errors(config, message):
    result = verify("show", "decode.tiled", "--config", config)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_shown_llama3_kernel_records_the_variant_for_check_wgsl(tmp_path):
    """`verify show` writes the variant in the header; `check --wgsl` takes it from there."""
    shown = verify("show", "rope", "--config", "rope_scaling=llama3,rope_factor=32,head_dim=64,dtype=f32").stdout
    assert ("// config: dtype=f32 head_dim=64 high_freq_factor=4.0 kv_heads=8 low_freq_factor=1.0 "
            "original_max_position=8192 qo_heads=32 rope_factor=32.0 rope_pairing=neox rope_scaling=llama3") in shown
    path = tmp_path / "rope.wgsl"
    path.write_text(shown)
    result = verify("check", "rope", "--wgsl", str(path), "--examples", "5", "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    records = json.loads((tmp_path / "out" / "results.json").read_text())["records"]
    assert records and all(r["config"]["rope_scaling"] == "llama3" and r["config"]["rope_factor"] == 32.0
                           for r in records)
