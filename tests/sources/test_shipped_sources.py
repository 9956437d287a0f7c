"""TVM's, ORT's and llama.cpp's WGSL shipped with verify: a fresh machine plans from it, without
apache-tvm, Node or llama.cpp's sources, and `verify sources refresh --check` says when it is no
longer what the releases make.

The shipped copies (verify/sources/tvm/shipped, verify/sources/ort/shipped,
verify/sources/llamacpp/shipped) are read after the
user's cache and before any build or capture, each only as what its provenance says it is and
only while its bytes are the ones its manifest lists; a run never writes them. The tests that
plan from them hide apache-tvm (no pip metadata, `import tvm` fails, a build fails the test) and
ORT's runtime (no Node), and point the three caches at empty folders (so llama.cpp's release is
not there either).
"""

from __future__ import annotations

import json
import shutil
import sys
from importlib import metadata
from pathlib import Path

import pytest

from verify.cli import main as verify_main
from verify.errors import SetupError
from verify.plan import gate_jobs
from verify.profiles import get_profile
from verify.sources import refresh as refresh_module
from verify.sources.llamacpp import programs as llamacpp_programs
from verify.sources.llamacpp import ship as llamacpp_ship
from verify.sources.llamacpp import source as llamacpp_source
from verify.sources.ort import cache as ort_cache
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.capture import QUANTIZE, Dispatch, OrtRun, Program
from verify.sources.ort.dp4a import captures as programs
from verify.sources.shipped import MANIFEST, Shipped, file_sha256
from verify.sources.tvm import build as tvm_build

TVM_SHIPPED, ORT_SHIPPED = tvm_build.SHIPPED.folder, ort_cache.SHIPPED.folder
LLAMACPP_SHIPPED = llamacpp_programs.SHIPPED.folder
#: The TVM release and adapter vendor the shipped copies were made with.
TVM_VERSION = tvm_build.SHIPPED.folders()[0]
ORT_VERSION = ort_runtime.pinned_version()
needs_tvm = pytest.mark.skipif(tvm_build.installed_version() is None, reason="apache-tvm is not installed")


def _ort_runs() -> bool:
    try:
        ort_runtime.shared_runtime()
    except SetupError:
        return False
    return True


needs_ort = pytest.mark.skipif("not _ort_runs()", reason="ONNX Runtime Web cannot run here (Node, Dawn)")
needs_llamacpp = pytest.mark.skipif(llamacpp_source.extracted() is None,
                                    reason=f"llama.cpp's sources are not in the cache ({llamacpp_source.INSTALL})")


@pytest.fixture
def empty_caches(monkeypatch, tmp_path) -> tuple[Path, Path, Path]:
    """The TVM, ORT and llama.cpp caches pointed at empty folders of this test's own."""
    tvm, ort, llamacpp = tmp_path / "tvm-cache", tmp_path / "ort-cache", tmp_path / "llamacpp-cache"
    for folder in (tvm, ort, llamacpp):
        folder.mkdir()
    monkeypatch.setenv(tvm_build.CACHE_ENV, str(tvm))
    monkeypatch.setenv(ort_cache.CACHE_ENV, str(ort))
    monkeypatch.setenv(llamacpp_source.CACHE_ENV, str(llamacpp))
    return tvm, ort, llamacpp


@pytest.fixture
def bare_machine(monkeypatch, empty_caches) -> tuple[Path, Path, Path]:
    """A GPU machine as shipped to: no apache-tvm, no Node, empty caches. The npm onnxruntime-web
    package is taken as present (the session kernels' WGSL is only read there; without it they are
    SKIPs for that reason, tests/sources/ort/test_ort.py), so every kernel's WGSL is asked for."""
    version = metadata.version

    def without_tvm(name):
        if name == "apache-tvm":
            raise metadata.PackageNotFoundError(name)
        return version(name)

    def no_node(*args, **kwargs):
        raise SetupError("Node.js is not installed")

    def no_build(build):
        raise AssertionError(f"built {build.describe()} where a shipped copy should have been read")

    monkeypatch.setattr(metadata, "version", without_tvm)
    monkeypatch.setitem(sys.modules, "tvm", None)
    monkeypatch.setattr(tvm_build, "build_wgsl", no_build)
    monkeypatch.setattr(ort_runtime, "shared_runtime", no_node)
    monkeypatch.setattr(ort_runtime, "find_ort_dist", lambda: Path("/nonexistent/onnxruntime-web/dist"))
    return empty_caches


def snapshot(*folders: Path) -> dict:
    """Every file under `folders` (dot files included) with its size and modification time."""
    return {str(path): (path.stat().st_size, path.stat().st_mtime_ns)
            for folder in folders for path in sorted(folder.rglob("*")) if path.is_file()}


def shipped_copy(monkeypatch, tmp_path) -> tuple[Shipped, Shipped]:
    """Both shipped folders copied to `tmp_path`, and read from there for the test."""
    tvm = Shipped(shutil.copytree(TVM_SHIPPED, tmp_path / "tvm-shipped"), "TVM's WGSL")
    ort = Shipped(shutil.copytree(ORT_SHIPPED, tmp_path / "ort-shipped"), "ORT's captures")
    monkeypatch.setattr(tvm_build, "SHIPPED", tvm)
    monkeypatch.setattr(ort_cache, "SHIPPED", ort)
    return tvm, ort


def relisted(folder: Shipped, name: str, text: str) -> None:
    """Replace shipped file `name` by `text` and list its new bytes in the manifest (as a refresh
    would), so only its content tells it apart."""
    (folder.folder / name).write_text(text)
    manifest = json.loads((folder.folder / MANIFEST).read_text())
    manifest["files"][name]["sha256"] = file_sha256(text.encode())
    manifest["files"][name]["bytes"] = len(text.encode())
    (folder.folder / MANIFEST).write_text(json.dumps(manifest))
    folder.forget()


# -- a fresh machine plans from the shipped copies ----------------------------------------------------------------
def test_without_tvm_or_node_every_gate_configs_wgsl_is_read_from_the_shipped_copies(bare_machine):
    """Every TVM, ORT and llama.cpp kernel's gate configs in every profile, and what their checks
    launch beside them: none is built, captured or instantiated, and neither the caches nor the
    shipped folders are written."""
    before = snapshot(TVM_SHIPPED, ORT_SHIPPED, LLAMACPP_SHIPPED)
    kernels = refresh_module.shipped_kernels()
    assert {name.split(".")[0] for name in kernels} == {"tvm", "ort", "llamacpp"}
    refresh_module.make_every(kernels)
    assert snapshot(*bare_machine) == {}
    assert snapshot(TVM_SHIPPED, ORT_SHIPPED, LLAMACPP_SHIPPED) == before


def test_without_tvm_or_node_the_gate_plans_tvm_and_ort_kernels_with_no_skip(bare_machine):
    kernels = ["tvm.decode", "tvm.prefill", "ort.dp4a.quantize", "ort.attention.decode_qkv"]
    jobs, skipped = gate_jobs(kernels, profile=get_profile("ci"), seed=0, out_dir=None, time_limit=None)
    assert [record.reason for record in skipped] == []
    assert {job.kernel for job in jobs} == set(kernels)


def test_the_shipped_wgsl_is_what_the_kernel_runs_with_its_provenance_line(bare_machine):
    build = tvm_build.merge_build(heads=32, head_dim=128, dtype="f16")
    text = tvm_build.load(build)
    assert text == (TVM_SHIPPED / TVM_VERSION / build.filename).read_text()
    assert text.startswith(tvm_build.provenance_line(TVM_VERSION, build) + "\n")
    capture = programs.captured_programs(programs.CaptureConfig("f16"))
    assert capture.provenance.capture == programs.CaptureConfig("f16").describe()
    assert capture.provenance.ort_version == ORT_VERSION and QUANTIZE in capture.programs


def test_without_onnxruntime_web_a_program_kernel_is_shown_from_its_shipped_capture_a_session_kernel_is_not(
        monkeypatch, bare_machine, capsys):
    """ORT's programs that verify launches itself need no ORT for a shipped config; a kernel that
    runs ORT's session still needs the pinned onnxruntime-web, whatever is shipped (docs/ort-dp4a.md
    §10.1)."""
    def missing():
        raise SetupError(f"ORT kernels need npm onnxruntime-web {ORT_VERSION}, not found; run `verify setup --dawn`")

    monkeypatch.setattr(ort_runtime, "find_ort_dist", missing)
    assert verify_main(["show", "ort.dp4a.quantize", "--config", "dtype=f16"]) == 0
    assert f"// onnxruntime-web {ORT_VERSION} on llvmpipe" in capsys.readouterr().out
    assert verify_main(["show", "ort.matmul_nbits", "--config", "dtype=f16"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"onnxruntime-web {ORT_VERSION}, not found" in err


def test_without_tvm_a_build_that_is_not_shipped_is_one_setup_line(bare_machine):
    build = tvm_build.merge_build(heads=3, head_dim=64, dtype="f32")
    with pytest.raises(SetupError, match=r"nor shipped with verify; install it with: pip install 'apache-tvm"):
        tvm_build.load(build)


# -- which shipped copy is taken --------------------------------------------------------------------------------
def test_with_the_shipped_tvm_release_installed_a_shipped_build_is_read_not_built(monkeypatch, empty_caches):
    monkeypatch.setattr(tvm_build, "installed_version", lambda: TVM_VERSION)
    monkeypatch.setattr(tvm_build, "build_wgsl", lambda build: pytest.fail(f"built {build.describe()}"))
    build = tvm_build.merge_build(heads=32, head_dim=128, dtype="f16")
    assert tvm_build.load(build).startswith(tvm_build.provenance_line(TVM_VERSION, build))
    assert snapshot(empty_caches[0]) == {}  # the user's cache is not filled from the shipped copy


def test_another_tvm_release_builds_rather_than_take_the_shipped_copy(monkeypatch, empty_caches):
    other = "0.27.9"
    monkeypatch.setattr(tvm_build, "installed_version", lambda: other)
    monkeypatch.setattr(tvm_build, "build_wgsl", lambda build: "// built here\n")
    build = tvm_build.merge_build(heads=32, head_dim=128, dtype="f16")
    assert tvm_build.load(build) == tvm_build.provenance_line(other, build) + "\n// built here\n"
    assert (empty_caches[0] / other / build.filename).is_file()


def test_the_users_cache_comes_before_the_shipped_copy(monkeypatch, empty_caches):
    monkeypatch.setattr(tvm_build, "installed_version", lambda: TVM_VERSION)
    build = tvm_build.merge_build(heads=32, head_dim=128, dtype="f16")
    mine = empty_caches[0] / TVM_VERSION / build.filename
    mine.parent.mkdir()
    mine.write_text(tvm_build.provenance_line(TVM_VERSION, build) + "\n// the user's own\n")
    assert tvm_build.load(build).endswith("// the user's own\n")


def test_a_shipped_file_changed_after_release_is_not_used(monkeypatch, tmp_path, bare_machine, capsys):
    tvm, _ = shipped_copy(monkeypatch, tmp_path)
    build = tvm_build.merge_build(heads=32, head_dim=128, dtype="f16")
    path = tvm.folder / TVM_VERSION / build.filename
    path.write_text(path.read_text() + "// edited\n")
    with pytest.raises(SetupError, match="nor shipped"):
        tvm_build.load(build)
    assert f"the shipped copy {path} is missing or not the file its manifest lists" in capsys.readouterr().err


class FakeRuntime:
    """ORT's runtime on an adapter of `vendor`, whose runs dispatch one program naming the model."""

    version = ORT_VERSION

    def __init__(self, vendor: str):
        self.adapter = {"vendor": vendor, "description": f"a fake {vendor} adapter"}
        self.runs: list[str] = []

    def run(self, model, feeds, *, snapshots=False, aliases=None) -> OrtRun:
        self.runs.append(model.describe())
        return OrtRun({}, (Dispatch(Program(QUANTIZE, "main", f"// captured for {model.describe()}\n"), (1, 1, 1),
                                    ()),))


def test_where_ort_runs_on_lavapipe_the_shipped_capture_is_read_not_captured(monkeypatch, empty_caches):
    runtime = FakeRuntime("mesa")
    monkeypatch.setattr(ort_runtime, "shared_runtime", lambda *args, **kwargs: runtime)
    config = programs.CaptureConfig("f16")
    shipped = ort_cache.load(ORT_SHIPPED / ORT_VERSION / "mesa" / config.filename)
    assert programs.captured_programs(config).programs == shipped.programs
    assert runtime.runs == [] and snapshot(empty_caches[1]) == {}


def test_where_ort_runs_on_another_vendor_its_programs_are_captured_not_taken_from_lavapipe(monkeypatch,
                                                                                               empty_caches):
    """ORT generates other programs for other vendors (Intel, Qualcomm, Apple), so lavapipe's
    shipped captures stand in only where ORT cannot run at all."""
    runtime = FakeRuntime("nvidia")
    monkeypatch.setattr(ort_runtime, "shared_runtime", lambda *args, **kwargs: runtime)
    config = programs.CaptureConfig("f16")
    assert "captured for" in programs.captured_programs(config).wgsl(QUANTIZE)
    assert runtime.runs == [config.model.describe()]


def test_a_shipped_capture_of_another_config_is_refused_naming_it(monkeypatch, tmp_path, bare_machine):
    """Two shipped captures with their contents swapped (and the manifest listing the swapped
    bytes): each is refused as what its provenance says it is, as a cached one would be."""
    _, ort = shipped_copy(monkeypatch, tmp_path)
    f16, f32 = programs.CaptureConfig("f16"), programs.CaptureConfig("f32")
    names = [f"{ORT_VERSION}/mesa/{config.filename}" for config in (f16, f32)]
    texts = [(ort.folder / name).read_text() for name in names]
    relisted(ort, names[0], texts[1])
    relisted(ort, names[1], texts[0])
    with pytest.raises(SetupError) as refused:
        programs.captured_programs(f16)
    message = str(refused.value)
    assert len(message.splitlines()) == 1 and str(ort.folder / names[0]) in message and "dtype=f32" in message


# -- verify sources refresh ----------------------------------------------------------------------------------------
CHEAP = "tvm.merge_state,ort.dp4a.quantize"


@needs_tvm
@needs_ort
def test_refresh_check_finds_the_shipped_copies_current_and_then_each_one_changed(monkeypatch, tmp_path, capsys):
    """One TVM build and one ORT capture made again: the shipped ones match; a copy whose TVM file
    and ORT program were changed (the manifest listing the changed bytes) is listed by --check,
    which writes nothing, and put back by a refresh."""
    assert verify_main(["sources", "refresh", "--check", "--kernels", CHEAP]) == 0
    assert capsys.readouterr().out == ""

    tvm, ort = shipped_copy(monkeypatch, tmp_path)
    merge = f"{TVM_VERSION}/{tvm_build.merge_build(heads=32, head_dim=128, dtype='f16').filename}"
    quantize = f"{ORT_VERSION}/mesa/{programs.CaptureConfig('f16').filename}"
    relisted(tvm, merge, (tvm.folder / merge).read_text().replace("merge_state_inplace", "merge_state_renamed"))
    capture = json.loads((ort.folder / quantize).read_text())
    capture["programs"][QUANTIZE] += "// edited\n"
    relisted(ort, quantize, json.dumps(capture))
    changed = snapshot(tvm.folder, ort.folder)

    assert verify_main(["sources", "refresh", "--check", "--kernels", CHEAP]) == 1
    assert capsys.readouterr().out.splitlines() == [
        f"tvm {merge}: apache-tvm now makes other WGSL",
        f"ort {quantize}: ORT now generates other WGSL for {QUANTIZE}"]
    assert snapshot(tvm.folder, ort.folder) == changed

    assert verify_main(["sources", "refresh", "--kernels", CHEAP]) == 0
    assert (tvm.folder / merge).read_text() == (TVM_SHIPPED / merge).read_text()
    assert ort_cache.load(ort.folder / quantize).programs == ort_cache.load(ORT_SHIPPED / quantize).programs
    assert json.loads((tvm.folder / MANIFEST).read_text()) == json.loads((TVM_SHIPPED / MANIFEST).read_text())
    capsys.readouterr()
    assert verify_main(["sources", "refresh", "--check", "--kernels", CHEAP]) == 0


@needs_tvm
def test_refresh_check_lists_a_build_that_is_not_shipped(monkeypatch, tmp_path, capsys):
    tvm, _ = shipped_copy(monkeypatch, tmp_path)
    merge = f"{TVM_VERSION}/{tvm_build.merge_build(heads=32, head_dim=128, dtype='f16').filename}"
    (tvm.folder / merge).unlink()
    manifest = json.loads((tvm.folder / MANIFEST).read_text())
    del manifest["files"][merge]
    (tvm.folder / MANIFEST).write_text(json.dumps(manifest))
    tvm.forget()
    assert verify_main(["sources", "refresh", "--check", "--kernels", "tvm.merge_state"]) == 1
    assert capsys.readouterr().out.splitlines() == [f"tvm {merge}: not shipped"]


def test_refresh_of_a_kernel_whose_wgsl_is_verifys_own_is_one_usage_line(capsys):
    assert verify_main(["sources", "refresh", "--check", "--kernels", "decode.tiled"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "decode.tiled: its WGSL is not TVM's, ORT's or llama.cpp's" in err


def test_refresh_without_tvm_is_one_setup_line_naming_what_to_install(monkeypatch, capsys):
    version = metadata.version
    monkeypatch.setattr(metadata, "version", lambda name: (_ for _ in ()).throw(metadata.PackageNotFoundError(name))
                        if name == "apache-tvm" else version(name))
    monkeypatch.setitem(sys.modules, "tvm", None)
    assert verify_main(["sources", "refresh", "--check", "--kernels", "tvm.merge_state"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'apache-tvm>=0.27,<0.28'" in err


def test_every_shipped_file_is_listed_with_its_sha256_and_provenance():
    """The manifests list exactly the files in the shipped folders, each with the sha256 of its
    bytes and what it was made for, which its own provenance names."""
    for folder in (tvm_build.SHIPPED, ort_cache.SHIPPED, llamacpp_programs.SHIPPED):
        on_disk = {p.relative_to(folder.folder).as_posix() for p in folder.folder.rglob("*") if p.is_file()}
        assert on_disk == set(folder.files) | {MANIFEST}
        for name, entry in folder.files.items():
            data = (folder.folder / name).read_bytes()
            assert (entry.sha256, entry.size) == (file_sha256(data), len(data)), name
            if folder is llamacpp_programs.SHIPPED:
                # a program's first line names what it was made for; the licence is llama.cpp's
                first = data.decode().split("\n", 1)[0]
                assert (first.endswith(f": {entry.made_for}") if name.endswith(".wgsl")
                        else name.endswith(llamacpp_programs.LICENCE) and "MIT" in entry.made_for), name
                continue
            made_for = (tvm_build.provenance(data.decode())[1] if folder is tvm_build.SHIPPED
                        else ort_cache.parse(data.decode()).provenance.capture)
            assert made_for == entry.made_for, name


# -- llama.cpp's part of the refresh ---------------------------------------------------------------------------
def llamacpp_shipped_copy(monkeypatch, tmp_path) -> Shipped:
    """llama.cpp's shipped folder copied to `tmp_path`, and read from there for the test."""
    copy = Shipped(shutil.copytree(LLAMACPP_SHIPPED, tmp_path / "llamacpp-shipped"), "llama.cpp's instantiated WGSL")
    monkeypatch.setattr(llamacpp_programs, "SHIPPED", copy)
    return copy


@needs_llamacpp
def test_refresh_check_finds_llamacpps_programs_current_and_then_each_one_changed(monkeypatch, tmp_path, capsys):
    """llama.cpp's programs instantiated again from the extracted release: the shipped ones match;
    a copy with one program changed (the manifest listing the changed bytes), one removed from the
    folder and its manifest, and one the gate no longer needs is listed by --check, which writes
    nothing, and put back by a refresh, which removes what is no longer made."""
    assert verify_main(["sources", "refresh", "--check", "--sources", "llamacpp"]) == 0
    assert capsys.readouterr().out == ""

    copy = llamacpp_shipped_copy(monkeypatch, tmp_path)
    programs_shipped = sorted(name for name in copy.files if name.endswith(".wgsl"))
    edited, removed = programs_shipped[0], programs_shipped[-1]
    relisted(copy, edited, (copy.folder / edited).read_text() + "// edited\n")
    (copy.folder / removed).unlink()
    stale = f"{llamacpp_source.VERSION}/quantize_q8-0000000000000000.wgsl"
    (copy.folder / stale).write_text("// a program no gate config makes\n")
    manifest = json.loads((copy.folder / MANIFEST).read_text())
    del manifest["files"][removed]
    manifest["files"][stale] = {"sha256": file_sha256((copy.folder / stale).read_bytes()), "bytes": 34,
                                "made_for": "nothing"}
    (copy.folder / MANIFEST).write_text(json.dumps(manifest))
    copy.forget()
    changed = snapshot(copy.folder)

    assert verify_main(["sources", "refresh", "--check", "--sources", "llamacpp"]) == 1
    assert sorted(capsys.readouterr().out.splitlines()) == sorted([
        f"llamacpp {edited}: llama.cpp's release now instantiates other WGSL",
        f"llamacpp {removed}: not shipped",
        f"llamacpp {stale}: shipped, but no gate config needs it any more"])
    assert snapshot(copy.folder) == changed

    assert verify_main(["sources", "refresh", "--sources", "llamacpp"]) == 0
    assert snapshot(copy.folder).keys() == {str(copy.folder / name) for name in (*llamacpp_programs.SHIPPED.files,
                                                                                  MANIFEST)}
    for name in (edited, removed):
        assert (copy.folder / name).read_text() == (LLAMACPP_SHIPPED / name).read_text()
    assert not (copy.folder / stale).exists()
    assert json.loads((copy.folder / MANIFEST).read_text()) == json.loads((LLAMACPP_SHIPPED / MANIFEST).read_text())
    capsys.readouterr()
    assert llamacpp_ship.main(["--check"]) == 0  # the module's old name is the same refresh


def test_refresh_of_llamacpp_without_its_sources_is_one_setup_line_naming_the_command(empty_caches, capfd):
    """A refresh instantiates from the release and never from a copy: without the extracted
    sources (an empty cache) it stops before making anything, naming `verify setup --llamacpp`."""
    assert verify_main(["sources", "refresh", "--check", "--sources", "llamacpp"]) == 2
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "verify setup --llamacpp" in err and str(empty_caches[2]) in err
    assert llamacpp_ship.main(["--check"]) == 2  # the short name runs the same command in a process of its own
    err = capfd.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "verify setup --llamacpp" in err


def test_an_unknown_source_is_one_usage_line(capsys):
    assert verify_main(["sources", "refresh", "--check", "--sources", "llamacpp,onnx"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--sources onnx: no such source" in err and "tvm, ort, llamacpp" in err
