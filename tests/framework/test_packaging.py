"""verify as users install it: a wheel built from the project's own files, installed into a
fresh virtualenv, run from there.

A checkout that has been set up is no guide to what pip users get: it has npm's node_modules
beside the Dawn worker (which the package-data globs once swept into the wheel, 18 MB), an
egg-info, and the checkout itself on sys.path. So the wheel is built from a copy of the files git
tracks (as they are in the working tree: uncommitted edits are tested, untracked and ignored files
are not), plus a decoy node_modules where `npm ci` puts one, and it must hold exactly the tracked
files of the import packages. It is then installed into a virtualenv without system site
packages, and `verify list`, a wgpu check and `verify setup --check` run from there, away from the
checkout and with PYTHONPATH cleared, so nothing of the checkout can stand in for the install.

Slow by nature (a build, a virtualenv, pip installing numpy, wgpu, matplotlib: one to two
minutes with pip's cache warm), hence the generous time limits. Without network and without the
packages in pip's cache or find-links, pip cannot install anything: the test then skips, saying
so; any other pip failure fails it.
"""

from __future__ import annotations

import configparser
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: The import package the distribution ships (pyproject's packages.find include). The checkout's
#: top-level references/ is installed inside it, as verify.references (verify/references is a link).
PACKAGES = ("verify",)
#: Where the checkout's folders land in the wheel.
INSTALLED_AS = {"references": "verify/references"}
#: Data files the package reads at run time, by suffix; each must be in the wheel as tracked.
DATA_SUFFIXES = (".wgsl", ".j2", ".lark", ".mjs", ".json")
#: What pip prints when it could not reach an index: then "no network and no cache" is the reason.
OFFLINE_SIGNS = ("NewConnectionError", "Failed to establish a new connection", "Temporary failure in name resolution",
                 "Network is unreachable", "ConnectTimeoutError", "ProxyError", "Name or service not known")
BUILD_TIMEOUT_S = 900
INSTALL_TIMEOUT_S = 1200
RUN_TIMEOUT_S = 600


def _tracked_files() -> list[str]:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout: the wheel is compared with the files git tracks")
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True, timeout=60).stdout
    return [name for name in listed.decode().split("\0") if name and (REPO / name).exists()]


def _clean_env(**extra) -> dict:
    """The environment of a user's shell, without anything that would import verify from the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")}
    env.update(extra)
    return env


def _pip(python: str, *args: str, timeout: float, cwd: Path) -> None:
    """pip `args`; skipped when pip could reach no index (and had nothing cached), failed otherwise."""
    try:
        done = subprocess.run([python, "-m", "pip", *args], cwd=cwd, env=_clean_env(), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"pip {' '.join(args[:1])} did not finish in {timeout:.0f} s")
    if done.returncode != 0:
        output = done.stdout + done.stderr
        if any(sign in output for sign in OFFLINE_SIGNS):
            pytest.skip(f"no network and not in pip's cache, so pip cannot {args[0]}: "
                        f"{output.strip().splitlines()[-1]}")
        pytest.fail(f"pip {' '.join(args)} failed:\n{output[-4000:]}")


@pytest.fixture(scope="module")
def source_tree(tmp_path_factory) -> tuple[Path, list[str]]:
    """A copy of the tracked files, plus npm's node_modules as a set-up checkout has it."""
    tracked = _tracked_files()
    tree = tmp_path_factory.mktemp("source") / "webgpu-verify"
    for name in tracked:
        target = tree / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target, follow_symlinks=False)
    decoy = tree / "verify" / "gpu" / "dawn" / "node_modules" / "decoy"
    decoy.mkdir(parents=True)
    for name in ("index.mjs", "package.json", "kernel.wgsl", "template.j2", "grammar.lark", "__init__.py", "mod.py"):
        (decoy / name).write_text("{}\n" if name.endswith(".json") else "\n")
    return tree, tracked


@pytest.fixture(scope="module")
def wheel(source_tree, tmp_path_factory) -> Path:
    tree, _ = source_tree
    out = tmp_path_factory.mktemp("wheel")
    _pip(sys.executable, "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(tree),
         timeout=BUILD_TIMEOUT_S, cwd=out)
    built = sorted(out.glob("webgpu_verify-*.whl"))
    assert len(built) == 1, f"expected one webgpu_verify wheel in {out}, found {[p.name for p in out.iterdir()]}"
    return built[0]


def _dist_info(names: list[str], file: str) -> str:
    matches = [n for n in names if n.endswith(f".dist-info/{file}")]
    assert len(matches) == 1, f"{file} in the wheel: {matches}"
    return matches[0]


def _installed_name(tracked: str) -> str:
    top, _, rest = tracked.partition("/")
    return f"{INSTALLED_AS[top]}/{rest}" if top in INSTALLED_AS else tracked


def test_the_wheel_holds_exactly_the_packages_own_files(wheel, source_tree):
    _, tracked = source_tree
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n for n in names if ".dist-info/" not in n}
    expected = {_installed_name(n) for n in tracked if n.split("/", 1)[0] in (*PACKAGES, *INSTALLED_AS)}
    expected -= set(INSTALLED_AS.values())  # the links themselves, which the wheel holds as the files they lead to
    assert not [n for n in names if "node_modules" in n], "npm's node_modules is in the wheel"
    assert sorted(shipped - expected) == [], "files in the wheel that are not the project's own"
    assert sorted(expected - shipped) == [], "the project's files missing from the wheel"
    for suffix in DATA_SUFFIXES:  # every data file the code reads, by kind (the set test above covers each)
        assert any(n.endswith(suffix) for n in shipped), f"no {suffix} file in the wheel"
    for needed in ("verify/gpu/dawn/worker.mjs", "verify/gpu/dawn/package.json", "verify/gpu/dawn/package-lock.json",
                   "verify/sources/ort/runner.mjs", "verify/wgsl/wgsl.lark", "verify/report/templates/report.html.j2",
                   "verify/gpu/dawn/install.py"):
        assert needed in shipped


def test_the_wheel_carries_the_licence(wheel):
    archive = zipfile.ZipFile(wheel)
    licence = [n for n in archive.namelist() if ".dist-info/licenses/" in n or n.endswith(".dist-info/LICENSE")]
    assert licence, "the wheel ships no LICENSE"
    assert b"Apache License" in archive.read(licence[0])
    assert b"Apache-2.0" in archive.read(_dist_info(archive.namelist(), "METADATA"))


def test_the_wheel_registers_the_entry_points_pyproject_declares(wheel):
    archive = zipfile.ZipFile(wheel)
    parser = configparser.ConfigParser(delimiters=("=",), interpolation=None)
    parser.optionxform = str
    parser.read_string(archive.read(_dist_info(archive.namelist(), "entry_points.txt")).decode())
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    declared = dict(project["entry-points"], console_scripts=project["scripts"])
    for group in ("verify.kernels", "verify.checks", "verify.implementations", "pytest11", "console_scripts"):
        assert group in parser, f"entry point group {group} missing"
        assert dict(parser[group]) == declared[group], group
    assert parser["console_scripts"]["verify"] == "verify._entry:main"


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh virtualenv (no system site packages) with the wheel and its dependencies."""
    venv = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], env=_clean_env(), check=True, capture_output=True,
                   timeout=300)
    _pip(str(venv / "bin" / "python"), "install", "--quiet", str(wheel), timeout=INSTALL_TIMEOUT_S, cwd=venv)
    return venv


def _run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = _clean_env(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)


@pytest.mark.webgpu
def test_the_installed_wheel_lists_checks_and_reports_its_setup(installed, tmp_path):
    where = _run(installed, str(installed / "bin" / "python"), "-c", "import verify; print(verify.__file__)",
                 cwd=tmp_path)
    assert where.returncode == 0, where.stderr
    assert Path(where.stdout.strip()).is_relative_to(installed), f"verify imported from {where.stdout.strip()}"

    listed = _run(installed, "verify", "list", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "merge_state" in listed.stdout and "decode.tiled" in listed.stdout

    checked = _run(installed, "verify", "check", "merge_state", "--checks", "reference", "--examples", "3",
                   "--implementation", "wgpu", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert (tmp_path / "out" / "results.json").is_file() and (tmp_path / "out" / "report.html").is_file()

    setup = _run(installed, "verify", "setup", "--check", cwd=tmp_path)
    assert "Traceback" not in setup.stdout + setup.stderr
    assert setup.returncode in (0, 2), setup.stdout + setup.stderr
    assert setup.stdout.startswith("wgpu: ") or setup.returncode == 2
    if setup.returncode == 2:
        lines = setup.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("verify: error: "), setup.stderr
