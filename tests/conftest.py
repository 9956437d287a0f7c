"""Hypothesis profiles, and the `gpu` marker for tests that need a WebGPU adapter.

Profiles: `ci` (derandomized, no deadline, print_blob, no example database) loads when the CI
environment variable is set; `dev` otherwise (random, no deadline: shader compiles make the
first example slow). Choose explicitly with HYPOTHESIS_PROFILE.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True, database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a WebGPU adapter (wgpu with Vulkan/Metal/D3D12)")


@pytest.fixture(scope="session")
def device():
    """One device for the session's in-process GPU tests."""
    from verify.gpu import Device

    return Device()
