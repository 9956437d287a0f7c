"""onnxruntime-web versions side by side: every version package.json pins is installed in its own
folder, one is selected per run (--ort-version, $VERIFY_ORT_VERSION, else the default), and each
version's captures live in its own folder of the WGSL cache, never read as another's.

The first tests read package.json and fake ORT's runtime; those at the end start each version's
real runtime (what scripts/setup.sh installs; they skip, saying why, without it).
"""

from __future__ import annotations

import json
import os

import pytest

from verify.cli import main as verify_main
from verify.errors import SetupError, UsageError
from verify.gpu.dawn import install
from verify.sources import shipped
from verify.sources.ort import runtime as ort_runtime
from verify.sources.ort.capture import QUANTIZE, TILE, Dispatch, OrtRun, Program
from verify.sources.ort.dp4a import captures
from verify.sources.ort.dp4a.captures import CaptureConfig, captured_programs

VERSIONS = list(ort_runtime.pinned_versions())


@pytest.fixture(autouse=True)
def no_selection(monkeypatch):
    """No version selected, and whatever a test selects (verify's main sets the variable itself)
    undone after it."""
    monkeypatch.setenv(ort_runtime.VERSION_ENV, "recorded, so that it is restored")
    monkeypatch.delenv(ort_runtime.VERSION_ENV)


def test_each_pinned_version_has_its_own_folder_and_the_lock_installs_it_there():
    lock = json.loads(install.PACKAGE_LOCK.read_text())["packages"]
    assert len(VERSIONS) >= 2 and ort_runtime.DEFAULT_VERSION in VERSIONS
    folders = ort_runtime.pinned_versions()
    assert len(set(folders.values())) == len(folders)  # no two versions in one folder
    for version, folder in folders.items():
        locked = lock[f"node_modules/{folder}"]
        assert locked["version"] == version and locked.get("name", folder) == ort_runtime.PACKAGE
        # its own onnxruntime-common, where it is not the top-level one
        common = lock.get(f"node_modules/{folder}/node_modules/onnxruntime-common",
                          lock["node_modules/onnxruntime-common"])
        assert common["version"] == version


def test_a_version_is_named_exactly_or_by_its_release_line():
    for version in VERSIONS:
        assert ort_runtime.resolve_version(version) == version
        line = version.rpartition(".")[0]
        if sum(v.startswith(line + ".") for v in VERSIONS) == 1:
            assert ort_runtime.resolve_version(line) == version


@pytest.mark.parametrize("given", ["1.29.0", "1", "", "latest", "1.3"])
def test_a_version_verify_does_not_install_is_one_line_naming_those_it_does(given):
    with pytest.raises(UsageError) as refused:
        ort_runtime.resolve_version(given)
    message = str(refused.value)
    assert len(message.splitlines()) == 1 and all(version in message for version in VERSIONS)


def test_the_variable_selects_the_version_and_the_default_is_the_declared_one(monkeypatch):
    assert ort_runtime.selected_version() == ort_runtime.DEFAULT_VERSION
    for version in VERSIONS:
        monkeypatch.setenv(ort_runtime.VERSION_ENV, version)
        assert ort_runtime.selected_version() == version == ort_runtime.pinned_version()
    with ort_runtime.using_version(VERSIONS[0]):
        assert ort_runtime.selected_version() == VERSIONS[0]
    assert ort_runtime.selected_version() == VERSIONS[-1]  # restored


@pytest.mark.parametrize("how", ["option", "variable"])
def test_verify_refuses_an_unknown_version_in_one_line_with_exit_2(how, monkeypatch, capsys):
    argv = ["show", "ort.dp4a.quantize"]
    if how == "option":
        argv += ["--ort-version", "1.29.0"]
    else:
        monkeypatch.setenv(ort_runtime.VERSION_ENV, "1.29.0")
    assert verify_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "1.29.0" in err and all(version in err for version in VERSIONS)


def test_the_option_selects_the_version_for_the_run_and_its_workers(monkeypatch, capsys):
    seen = []
    monkeypatch.setattr("verify.cli.cmd_show", lambda args: seen.append(ort_runtime.selected_version()) or 0)
    line = VERSIONS[-1].rpartition(".")[0]
    assert verify_main(["show", "ort.dp4a.quantize", "--ort-version", line]) == 0
    assert seen == [VERSIONS[-1]]
    assert os.environ[ort_runtime.VERSION_ENV] == VERSIONS[-1]  # what worker processes inherit


class FakeRuntime:
    """ORT's runtime without Node, of the version selected when it starts: its captures dispatch
    the DP4A programs, each saying which version made it."""

    adapter = {"vendor": "mesa", "description": "a fake llvmpipe", "features": ["subgroups", "shader-f16"]}
    alive = True

    def __init__(self):
        self.version = ort_runtime.selected_version()

    def run(self, model, feeds, **options) -> OrtRun:
        return OrtRun({}, tuple(Dispatch(Program(label, "main", f"// {label} by {self.version}\n"), (1, 1, 1), ())
                                for label in (QUANTIZE, TILE)))


def test_each_versions_captures_are_kept_in_its_own_folder_and_never_read_as_anothers(monkeypatch, tmp_path):
    monkeypatch.setenv(captures.CACHE_ENV, str(tmp_path))
    monkeypatch.setattr(ort_runtime, "shared_runtime", lambda *args, **kwargs: FakeRuntime())
    config = CaptureConfig("f32")
    with shipped.ignored():
        for version in VERSIONS:
            with ort_runtime.using_version(version):
                made = captured_programs(config)
            assert made.provenance.ort_version == version and made.programs[TILE] == f"// {TILE} by {version}\n"
            assert (tmp_path / version / "mesa" / config.filename).is_file()
        # without a runtime, each version reads its own capture, and a version with none is refused
        monkeypatch.setattr(ort_runtime, "shared_runtime", _no_runtime)
        for version in VERSIONS:
            with ort_runtime.using_version(version):
                assert captured_programs(config).programs[TILE] == f"// {TILE} by {version}\n"
        (tmp_path / VERSIONS[-1] / "mesa" / config.filename).unlink()
        with ort_runtime.using_version(VERSIONS[-1]), pytest.raises(SetupError, match="not in the ORT WGSL cache"):
            captured_programs(config)


def _no_runtime(*args, **kwargs):
    raise SetupError("Node.js is not installed")


# -- the real runtimes ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("version", VERSIONS)
def test_each_version_runs_its_own_package_and_its_captures_name_it(version, monkeypatch, tmp_path):
    monkeypatch.setenv(captures.CACHE_ENV, str(tmp_path))
    with ort_runtime.using_version(version), shipped.ignored():
        try:
            runtime = ort_runtime.shared_runtime()
        except SetupError as exc:
            pytest.skip(str(exc))
        assert runtime.version == version and f"{ort_runtime.pinned_versions()[version]}/" in str(
            ort_runtime.find_ort_dist())
        made = captured_programs(CaptureConfig("f32"))
    assert made.provenance.ort_version == version
    assert made.wgsl(QUANTIZE).startswith(f"// onnxruntime-web {version} on ")
    assert [folder.name for folder in tmp_path.iterdir()] == [version]
