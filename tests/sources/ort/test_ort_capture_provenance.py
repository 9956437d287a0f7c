"""A capture in the ORT WGSL cache is used only as what its provenance says it is.

A file's name is a hash of the config it was captured for, but nothing proves its contents: a
cache copied with its files shuffled once had ORT's f32 programs checked as its f16 ones (false
FAILs of ort.dp4a.quantize and ort.attention.decode_reduce). So every capture carries its
provenance (the config, the model and its sha256, the input shapes, the onnxruntime-web version),
and a file that is another config's, written before provenance, or damaged is captured again where
ORT runs, and refused in one line naming the file where it does not.

These tests fake ORT's runtime (a run that dispatches programs named after the model it ran), so
they need neither Node nor Dawn.
"""

from __future__ import annotations

import json

import pytest

from verify.errors import SetupError
from verify.kernels.registry import get_kernel
from verify.sources import shipped
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.attention.programs import QKV, REDUCE, _QkvCapture, gqa_config
from verify.sources.ort.cache import FORMAT, load
from verify.sources.ort.capture import QUANTIZE, TILE, Dispatch, OrtRun, Program
from verify.sources.ort.dp4a import captures as programs

PINNED = ort_runtime.pinned_version()


class FakeRuntime:
    """ORT's runtime as a capture sees it: its version and adapter, and runs that dispatch the
    DP4A or attention programs, each WGSL naming the model it was generated for."""

    def __init__(self, version: str = PINNED):
        self.version = version
        self.adapter = {"vendor": "mesa", "description": "a fake llvmpipe"}
        self.runs: list[str] = []

    def run(self, model, feeds, *, snapshots=False, aliases=None) -> OrtRun:
        self.runs.append(model.describe())
        labels = (QKV, REDUCE) if "Attention" in model.describe() else (QUANTIZE, TILE)
        return OrtRun({}, tuple(Dispatch(Program(label, "main", f"// {label} generated for {model.describe()}\n"),
                                         (1, 1, 1), ()) for label in labels))


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """An empty ORT WGSL cache of this test's own, and no shipped captures to fall back on (they
    are tests/sources/test_shipped_sources.py's)."""
    monkeypatch.setenv(programs.CACHE_ENV, str(tmp_path))
    with shipped.ignored():
        yield tmp_path


@pytest.fixture
def runtime(monkeypatch, cache) -> FakeRuntime:
    fake = FakeRuntime()
    monkeypatch.setattr(ort_runtime, "shared_runtime", lambda *args, **kwargs: fake)
    return fake


def without_runtime(monkeypatch) -> None:
    def missing(*args, **kwargs):
        raise SetupError("Node.js is not installed")

    monkeypatch.setattr(ort_runtime, "shared_runtime", missing)


F16, F32 = programs.CaptureConfig("f16"), programs.CaptureConfig("f32")


def path_of(root, config) -> object:
    return root / PINNED / "mesa" / config.filename


def swap(a, b) -> None:
    """Swap two files' contents: each config's capture filed under the other's name."""
    text_a, text_b = a.read_text(), b.read_text()
    a.write_text(text_b)
    b.write_text(text_a)


def one_line_naming(exc: SetupError, path) -> str:
    message = str(exc)
    assert len(message.splitlines()) == 1 and str(path) in message
    return message


# -- DP4A captures ---------------------------------------------------------------------------------------------------
def test_a_capture_records_its_config_model_shapes_and_version(runtime, cache):
    programs.captured_programs(F16)
    found = load(path_of(cache, F16)).provenance
    assert found.capture == F16.describe() and found.model == F16.model.describe()
    assert found.ort_version == PINNED and len(found.model_sha256) == 64
    assert {s.name: s.dims for s in found.inputs}["A"] == (1, F16.m, F16.model.k)
    assert json.loads(path_of(cache, F16).read_text())["format"] == FORMAT


def test_a_capture_filed_under_another_configs_name_is_captured_again(runtime, cache, capsys):
    programs.captured_programs(F16)
    programs.captured_programs(F32)
    swap(path_of(cache, F16), path_of(cache, F32))
    wgsl = programs.captured_programs(F16).wgsl(QUANTIZE)
    assert f"{path_of(cache, F16)} is not this capture" in capsys.readouterr().err  # a misfiled file is news
    assert f"generated for {F16.model.describe()}" in wgsl
    assert runtime.runs == [F16.model.describe(), F32.model.describe(), F16.model.describe()]
    assert load(path_of(cache, F16)).provenance.capture == F16.describe()  # the file is put right


def test_without_a_runtime_a_misfiled_capture_is_refused_in_one_line_naming_the_file(runtime, cache, monkeypatch):
    programs.captured_programs(F16)
    programs.captured_programs(F32)
    swap(path_of(cache, F16), path_of(cache, F32))
    without_runtime(monkeypatch)
    with pytest.raises(SetupError) as refused:
        programs.captured_programs(F16)
    message = one_line_naming(refused.value, path_of(cache, F16))
    assert "Node.js is not installed" in message and "dtype=f32" in message


def old_capture(config) -> str:
    """A capture as verify wrote it before captures carried their provenance: one comment line."""
    return json.dumps({"provenance": f"// onnxruntime-web {PINNED} on llvmpipe (vendor mesa): {config.describe()}",
                       "programs": {QUANTIZE: "// an old capture"}})


def test_a_capture_from_before_provenance_is_stale_and_captured_again(runtime, cache, capsys):
    path_of(cache, F16).parent.mkdir(parents=True)
    path_of(cache, F16).write_text(old_capture(F16))
    assert "an old capture" not in programs.captured_programs(F16).wgsl(QUANTIZE)
    assert capsys.readouterr().err == ""  # expected once per file after the upgrade: not worth a line
    assert runtime.runs == [F16.model.describe()]
    assert load(path_of(cache, F16)).provenance.capture == F16.describe()


def test_without_a_runtime_a_capture_from_before_provenance_is_refused(cache, monkeypatch):
    path_of(cache, F16).parent.mkdir(parents=True)
    path_of(cache, F16).write_text(old_capture(F16))
    without_runtime(monkeypatch)
    with pytest.raises(SetupError) as refused:
        programs.captured_programs(F16)
    assert "before captures carried their provenance" in one_line_naming(refused.value, path_of(cache, F16))


DAMAGED = {
    "empty": "",
    "truncated": old_capture(F16)[:40],
    "an empty object": "{}",
    "no programs": json.dumps({"provenance": "// x", "programs": None}),
    "not an object": "[]",
    "new format, no programs": json.dumps({"format": FORMAT, "provenance": {"capture": "x"}, "programs": None}),
}


@pytest.mark.parametrize("content", DAMAGED.values(), ids=DAMAGED.keys())
def test_a_damaged_capture_file_is_captured_again(runtime, cache, content):
    path_of(cache, F16).parent.mkdir(parents=True)
    path_of(cache, F16).write_text(content)
    assert f"generated for {F16.model.describe()}" in programs.captured_programs(F16).wgsl(QUANTIZE)
    assert load(path_of(cache, F16)).provenance.capture == F16.describe()


@pytest.mark.parametrize("content", DAMAGED.values(), ids=DAMAGED.keys())
def test_without_a_runtime_a_damaged_capture_file_is_one_line_naming_it(cache, monkeypatch, content):
    path_of(cache, F16).parent.mkdir(parents=True)
    path_of(cache, F16).write_text(content)
    without_runtime(monkeypatch)
    with pytest.raises(SetupError) as refused:
        programs.captured_programs(F16)
    one_line_naming(refused.value, path_of(cache, F16))


def test_a_capture_by_another_onnxruntime_web_is_not_taken_for_the_pinned_ones(runtime, cache):
    runtime.version = "1.29.0"
    programs.captured_programs(F16)
    (cache / PINNED / "mesa").mkdir(parents=True)
    (cache / "1.29.0" / "mesa" / F16.filename).rename(path_of(cache, F16))  # misfiled under the pinned version
    runtime.version = PINNED
    programs.captured_programs(F16)
    assert len(runtime.runs) == 2 and load(path_of(cache, F16)).provenance.ort_version == PINNED


# -- attention captures ------------------------------------------------------------------------------------------
def attention_file(root, kernel, config):
    capture = _QkvCapture(config["m_tile"])
    name, _ = capture.capture_request(gqa_config(config), PINNED)
    return root / PINNED / "mesa" / name


def test_a_swapped_attention_capture_is_captured_again_and_refused_without_a_runtime(runtime, cache, monkeypatch):
    kernel = get_kernel("ort.attention.decode_reduce")
    f16, f32 = kernel.config(dict(dtype="f16")), kernel.config(dict(dtype="f32"))
    kernel.wgsl(f16)
    kernel.wgsl(f32)
    swap(attention_file(cache, kernel, f16), attention_file(cache, kernel, f32))
    without_runtime(monkeypatch)
    with pytest.raises(SetupError) as refused:
        kernel.wgsl(f16)
    assert "dtype=f32" in one_line_naming(refused.value, attention_file(cache, kernel, f16))
    monkeypatch.setattr(ort_runtime, "shared_runtime", lambda *args, **kwargs: runtime)
    assert "GroupQueryAttention(dtype=f16" in kernel.wgsl(f16)
    assert len(runtime.runs) == 3


def test_a_damaged_capture_that_cannot_be_captured_again_is_one_line_naming_the_file(runtime, cache, monkeypatch):
    path_of(cache, F16).parent.mkdir(parents=True)
    path_of(cache, F16).write_text("{}")

    def cannot(*args, **kwargs):
        raise SetupError("ORT kernels build their models with onnx>=1.16,<2, which cannot be imported")

    monkeypatch.setattr(runtime, "run", cannot)
    with pytest.raises(SetupError) as refused:
        programs.captured_programs(F16)
    assert "onnx" in one_line_naming(refused.value, path_of(cache, F16))
