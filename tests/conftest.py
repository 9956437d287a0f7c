"""Hypothesis profiles of the test suite. (The `webgpu` marker and the `webgpu_device` fixture
come from verify's own pytest plugin, as they do for any project using verify.)

Profiles: `ci` (derandomized, no deadline, print_blob, no example database) loads when the CI
environment variable is set; `dev` otherwise (random, no deadline: shader compiles make the
first example slow). Choose explicitly with HYPOTHESIS_PROFILE.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", derandomize=True, deadline=None, print_blob=True, database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else "dev"))
