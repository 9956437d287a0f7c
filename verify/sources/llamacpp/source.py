"""llama.cpp's ggml-webgpu sources, obtained from one pinned release and kept in verify's cache.

ggml-webgpu is llama.cpp's WebGPU backend (`ggml/src/ggml-webgpu/`): WGSL templates
(`wgsl-shaders/*.wgsl`, `*.tmpl`), the preprocessor that instantiates them at run time
(`pre_wgsl.hpp`) and the C++ that chooses defines, workgroup sizes and dispatches per tensor
shape (`ggml-webgpu-shader-lib.hpp`, `ggml-webgpu.cpp`). Building it needs Dawn and a C++20
toolchain, which an offline machine does not have, so verify reads the templates as data and
instantiates them itself (verify.sources.llamacpp.preprocess, .selection, .programs).

The pinned release is PyPI's `llama-cpp-python` 0.3.36 source distribution, which vendors
llama.cpp under `vendor/llama.cpp/`. `obtain()` downloads it with
pip (`pip download --no-deps --no-binary :all:`), checks its sha256, and extracts the
ggml-webgpu folder, llama.cpp's MIT licence and the CPU reference it is judged against
(`ggml/src/ggml-quants.c`, `tests/test-backend-ops.cpp`) into
`$VERIFY_LLAMACPP_CACHE` (else `$VERIFY_CACHE/llamacpp`, `~/.cache/verify/llamacpp`), in a
folder per release with a SOURCE.json naming the sdist, its sha256 and every extracted file's
sha256. Nothing of llama.cpp is copied into verify's code: the instantiated programs of the gate
configs are shipped as data with that licence (verify.sources.llamacpp.programs).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from verify._cache import cache_dir
from verify._files import write_atomic
from verify.errors import SetupError

#: The pinned release: PyPI's llama-cpp-python source distribution and the sha256 of its bytes.
DISTRIBUTION = "llama-cpp-python"
VERSION = "0.3.36"
SDIST = f"llama_cpp_python-{VERSION}.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
#: Where llama.cpp sits in the sdist, and what verify extracts of it (paths in llama.cpp).
VENDORED = f"llama_cpp_python-{VERSION}/vendor/llama.cpp"
BACKEND = "ggml/src/ggml-webgpu"
EXTRACTED = (BACKEND, "LICENSE", "ggml/src/ggml-quants.c", "ggml/src/ggml-common.h", "tests/test-backend-ops.cpp")
PROJECT = "llama.cpp (ggml-org/llama.cpp), ggml-webgpu backend"
CACHE_ENV = "VERIFY_LLAMACPP_CACHE"
INSTALL = "verify setup --llamacpp  (downloads the pinned llama-cpp-python sdist with pip)"
MANIFEST = "SOURCE.json"


@dataclass(frozen=True)
class Provenance:
    """What a cache folder holds and where it came from: the sdist and its sha256, and each
    extracted file (its path in llama.cpp) with its own sha256."""

    distribution: str
    version: str
    sdist: str
    sdist_sha256: str
    files: dict

    def to_json(self) -> str:
        return json.dumps({"distribution": self.distribution, "version": self.version, "sdist": self.sdist,
                           "sdist_sha256": self.sdist_sha256, "project": PROJECT, "licence": "MIT (LICENSE)",
                           "files": self.files}, indent=1, sort_keys=True) + "\n"


def cache_root() -> Path:
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return cache_dir() / "llamacpp"


def release_folder(root: Path | None = None) -> Path:
    """The folder the pinned release is extracted into (it may not exist yet)."""
    return (cache_root() if root is None else Path(root)) / VERSION


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def extracted(root: Path | None = None) -> Path | None:
    """The extracted llama.cpp of the pinned release, if it is in the cache and every file is the
    one its SOURCE.json lists; None otherwise."""
    folder = release_folder(root)
    try:
        listed = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if listed.get("sdist_sha256") != SDIST_SHA256 or not listed.get("files"):
        return None
    for name, digest in listed["files"].items():
        try:
            if _sha256((folder / name).read_bytes()) != digest:
                return None
        except OSError:
            return None
    return folder


def require_extracted(root: Path | None = None) -> Path:
    """The extracted release, or SetupError saying how to obtain it."""
    found = extracted(root)
    if found is None:
        raise SetupError(f"llama.cpp's ggml-webgpu sources ({DISTRIBUTION} {VERSION}) are not in the cache "
                         f"{release_folder(root)}; obtain them with: {INSTALL}")
    return found


def backend_file(name: str, root: Path | None = None) -> str:
    """A file of ggml-webgpu (e.g. `wgsl-shaders/rope.wgsl`) from the cache."""
    return (require_extracted(root) / BACKEND / name).read_text()


def extract(sdist: Path, root: Path | None = None) -> Path:
    """Extract EXTRACTED from the sdist at `sdist` into the cache, after checking its sha256."""
    data = Path(sdist).read_bytes()
    if _sha256(data) != SDIST_SHA256:
        raise SetupError(f"{sdist} has sha256 {_sha256(data)}, not the pinned {SDIST} ({SDIST_SHA256})")
    folder = release_folder(root)
    files: dict[str, str] = {}
    with tarfile.open(sdist, "r:gz") as archive:
        for member in archive.getmembers():
            if not member.isfile() or not member.name.startswith(VENDORED + "/"):
                continue
            name = member.name[len(VENDORED) + 1:]
            if not any(name == wanted or name.startswith(wanted + "/") for wanted in EXTRACTED):
                continue
            handle = archive.extractfile(member)
            if handle is None:
                continue
            content = handle.read()
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
            files[name] = _sha256(content)
    missing = [wanted for wanted in EXTRACTED if not any(f == wanted or f.startswith(wanted + "/") for f in files)]
    if missing:
        raise SetupError(f"{SDIST} lacks {', '.join(missing)} under {VENDORED}")
    write_atomic(folder / MANIFEST, Provenance(DISTRIBUTION, VERSION, SDIST, SDIST_SHA256, files).to_json())
    return folder


def download(into: Path) -> Path:
    """The pinned sdist, downloaded by pip into `into` (pip's index settings apply)."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "--quiet",
               f"{DISTRIBUTION}=={VERSION}", "-d", str(into)]
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=900)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        last = [line for line in str(detail).splitlines() if line.strip()][-1:] or [type(exc).__name__]
        raise SetupError(f"pip could not download {DISTRIBUTION}=={VERSION} ({last[0].strip()})") from None
    path = Path(into) / SDIST
    if not path.is_file():
        raise SetupError(f"pip downloaded {DISTRIBUTION}=={VERSION} but no {SDIST} is in {into}")
    return path


def obtain(*, install: bool = True, sdist: Path | None = None, root: Path | None = None) -> str:
    """The pinned sources in the cache (downloaded and extracted unless
    they are there already, or taken from a local `sdist`); one line saying what was done."""
    found = extracted(root)
    if found is not None:
        return f"llama.cpp ggml-webgpu ({DISTRIBUTION} {VERSION}): in {found}"
    if not install:
        raise SetupError(f"llama.cpp's ggml-webgpu sources are not in {release_folder(root)}; obtain them with: "
                         f"{INSTALL}")
    if sdist is not None:
        folder = extract(Path(sdist), root)
    else:
        with tempfile.TemporaryDirectory(prefix="verify-llamacpp-") as tmp:
            folder = extract(download(Path(tmp)), root)
    return f"llama.cpp ggml-webgpu ({DISTRIBUTION} {VERSION}, sha256 {SDIST_SHA256[:12]}...): extracted into {folder}"
