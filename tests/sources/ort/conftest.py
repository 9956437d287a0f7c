"""What the tests of ONNX Runtime Web's kernels share: a WGSL cache of each test module's own,
ORT's runtime (Node on Dawn) and a Dawn device, each skipped with the reason where
`verify setup --dawn` has not run."""

from __future__ import annotations

import pytest

from verify.errors import SetupError


@pytest.fixture(scope="module", autouse=True)
def ort_cache(tmp_path_factory, request):
    """One WGSL cache for each test module, away from the user's: a capture one module makes is
    not what another module's test of capturing finds."""
    from verify.sources.ort.cache import CACHE_ENV

    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp(f"{request.module.__name__.rpartition('.')[2]}-wgsl")
        patch.setenv(CACHE_ENV, str(path))
        yield path


@pytest.fixture(scope="module")
def ort():
    """ORT's runtime on Dawn, shared by the module's tests."""
    from verify.sources.ort import runtime

    try:
        return runtime.shared_runtime()
    except SetupError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def dawn(ort):
    """A Dawn device in this process's Node worker (after ORT's runtime: one Node set-up)."""
    from verify.gpu.dawn import DawnDevice

    try:
        device = DawnDevice()
    except SetupError as exc:
        pytest.skip(str(exc))
    yield device
    device.close()
