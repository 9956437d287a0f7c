"""verify's module names cannot be shadowed by a user's: the float64 references are installed as
verify.references, so a folder with its own `references.py` (a common name) still imports verify."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run_in(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def test_a_users_own_references_module_does_not_shadow_verifys(tmp_path):
    (tmp_path / "references.py").write_text("raise ImportError('the user\\'s own references module')\n")
    (tmp_path / "mp.py").write_text("raise ImportError('the user\\'s own mp module')\n")
    imported = _run_in(tmp_path, "-c", "import verify.kernels.attention.decode_tiled, verify.kernels.dp4a.matmul, "
                       "verify.references.mp.prefill; import references")
    # The last import is the user's module, which raises: everything of verify before it imported.
    assert "the user's own references module" in imported.stderr, imported.stderr
    assert "verify" not in imported.stderr.split("the user's own")[0].rsplit("File", 1)[-1]
    listed = _run_in(tmp_path, "-m", "verify", "list")
    assert listed.returncode == 0, listed.stderr
    assert "decode.tiled" in listed.stdout and "verify.references.decode" in listed.stdout


def test_the_references_folder_is_installed_inside_verify():
    import verify.references.softmax as softmax

    assert Path(softmax.__file__).resolve().parent == REPO / "references"
