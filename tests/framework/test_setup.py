"""`verify setup`, the pip route's set-up, and verify/gpu/dawn/install.py, the code it shares with
scripts/setup_dawn.sh: one line per step, one error line and exit 2 for what is missing, an
install that is idempotent, and no child process left behind.

No network is needed: `npm` is a stand-in script where the install itself is tested, and Mesa's
download is not run (its folder is checked where the machine's set-up put it, as Dawn's tests do).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from verify import cli
from verify.gpu.dawn import install

REPO = Path(__file__).resolve().parents[2]
INSTALL_PY = REPO / "verify" / "gpu" / "dawn" / "install.py"


def _one_error_line(err: str, *fragments: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("verify: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def test_setup_check_says_one_line_per_step_and_installs_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "cache"))
    code = cli.main(["setup", "--check"])
    out, err = capsys.readouterr()
    assert code in (0, 2), out + err
    assert out.startswith("wgpu: ") or code == 2
    assert "dawn (the second implementation): " in out
    if code == 2:
        _one_error_line(err)
    # Nothing installed: no Node packages, no Mesa. (Opening wgpu keeps cffi's parse of its
    # header under <cache>/cffi, as any use of wgpu does: a cache of verify's, not an install.)
    made = sorted(p.name for p in (tmp_path / "cache").iterdir()) if (tmp_path / "cache").exists() else []
    assert made in ([], ["cffi"]), made


def test_without_an_adapter_wgpu_setup_says_the_root_command_and_exits_2(monkeypatch, capsys):
    from verify.gpu import wgpu_adapters

    monkeypatch.setattr(wgpu_adapters, "list_adapters", lambda: [])
    assert cli.main(["setup", "--check"]) == 2
    _one_error_line(capsys.readouterr().err, "sudo apt-get install -y mesa-vulkan-drivers", "found: none")


def test_without_node_dawn_setup_is_one_line_naming_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("VERIFY_NODE", str(tmp_path / "no-node"))
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "cache"))
    assert cli.main(["setup", "--dawn", "--check"]) == 2
    _one_error_line(capsys.readouterr().err, "Node.js", "sudo apt-get install -y nodejs npm")


def test_an_unknown_option_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as stopped:
        cli.main(["setup", "--dawnn"])
    assert stopped.value.code == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


def _fake_npm(folder: Path, log: Path) -> None:
    """An `npm` whose `ci` writes the pinned packages' manifests, as the real one would (a package
    installed under an alias with the aliased package's version), and logs each call."""
    pins = install.pinned_packages()
    folder.mkdir()
    script = folder / "npm"
    script.write_text(f"""#!{sys.executable}
import json, os, sys
open({str(log)!r}, "a").write(" ".join(sys.argv[1:]) + "\\n")
assert sys.argv[1] == "ci" and os.path.isfile("package-lock.json")
for name, version in {pins!r}.items():
    os.makedirs(os.path.join("node_modules", name), exist_ok=True)
    json.dump({{"version": version}}, open(os.path.join("node_modules", name, "package.json"), "w"))
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_node_packages_install_into_the_user_cache_once(tmp_path, monkeypatch):
    """npm ci runs in the cache with the lock shipped in the package; a second run finds the
    stamp and runs nothing; a changed lock installs again."""
    log = tmp_path / "npm.log"
    _fake_npm(tmp_path / "bin", log)
    monkeypatch.setattr(install, "node_tools", lambda: ("node", str(tmp_path / "bin" / "npm"), "v20.0.0"))
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(install, "node_modules_candidates", lambda: [tmp_path / "cache" / "node" / "node_modules"])
    line = install.node_packages()
    prefix = tmp_path / "cache" / "node"
    assert line.startswith("node packages: installed ") and str(prefix / "node_modules") in line
    assert (prefix / "package-lock.json").read_bytes() == install.PACKAGE_LOCK.read_bytes()
    assert log.read_text().startswith("ci ")
    assert "up to date" in install.node_packages()
    assert len(log.read_text().splitlines()) == 1
    (prefix / "node_modules" / install.STAMP).write_text("another lock\n")
    assert "installed" in install.node_packages()
    assert len(log.read_text().splitlines()) == 2


def test_a_failing_npm_is_one_line_naming_its_error(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "npm").write_text("#!/bin/sh\necho 'npm error' >&2\necho 'npm error code ENOTFOUND' >&2\nexit 1\n")
    (folder / "npm").chmod(0o755)
    monkeypatch.setattr(install, "node_tools", lambda: ("node", str(folder / "npm"), "v20.0.0"))
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(install, "node_modules_candidates", lambda: [])
    with pytest.raises(install.Missing, match="npm error code ENOTFOUND"):
        install.node_packages()


def test_a_tool_stopped_by_its_time_limit_takes_its_children_with_it(tmp_path):
    pid_file = tmp_path / "child.pid"
    status, message = install._run(["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"], timeout=2)
    assert status == 124 and "did not finish" in message
    child = int(pid_file.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]


def test_install_py_runs_with_a_bare_python_and_only_checks_with_check(tmp_path):
    """scripts/setup_dawn.sh runs the file with python3, before any virtualenv: it may import
    nothing but the standard library (-I -S: no site packages, no PYTHONPATH)."""
    env = dict(os.environ, VERIFY_CACHE=str(tmp_path / "cache"), VERIFY_NODE=str(tmp_path / "no-node"))
    done = subprocess.run([sys.executable, "-I", "-S", str(INSTALL_PY), "--check", "--node-prefix",
                           str(tmp_path / "node")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert all(line.startswith("setup(dawn): ") for line in lines), done.stderr
    assert "not installed" in lines[-1] and "Mesa" in lines[-1]
    assert not (tmp_path / "node").exists() and not (tmp_path / "cache" / "mesa-bpo").exists()


def test_the_mirror_is_the_machines_debian_one(tmp_path):
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text(
        "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian bookworm main\n"
        "deb http://security.debian.org/debian-security bookworm-security main\n")
    assert install.debian_mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list").unlink()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://deb.example.org/debian\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://deb.example.org/debian-security\nSuites: bookworm-security\n")
    assert install.debian_mirror(tmp_path) == "http://deb.example.org/debian"
    assert install.debian_mirror(tmp_path / "none") == "http://deb.debian.org/debian"
