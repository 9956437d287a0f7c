"""Deliberately broken kernels must be caught: each mutant fixture fails `verify check --wgsl`.

This is the toolkit checking itself (docs/how-kernels-are-judged.md §8): a check that lets a known bug through
is a defect of the check.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.fixtures.mutants.regenerate import fixture_path, mutate, specs

MUTANTS = [(kernel, spec) for kernel, entries in specs().items() for spec in entries]


@pytest.mark.parametrize("kernel,spec", MUTANTS, ids=[f"{k}/{s['name']}" for k, s in MUTANTS])
def test_mutant_fixture_is_current(kernel, spec):
    """The kept copy equals what the spec makes of today's kernel (else regenerate.py)."""
    assert fixture_path(kernel, spec).read_text() == mutate(kernel, spec)


@pytest.mark.webgpu
@pytest.mark.parametrize("kernel,spec", MUTANTS, ids=[f"{k}/{s['name']}" for k, s in MUTANTS])
def test_mutant_is_caught(kernel, spec, tmp_path):
    """`verify check --wgsl MUTANT` exits 1 and the expected check is among the failures."""
    examples = str(spec.get("examples", 100))
    result = subprocess.run(
        [sys.executable, "-m", "verify", "check", kernel, "--wgsl", str(fixture_path(kernel, spec)),
         "--checks", spec["caught_by"], "--examples", examples, "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    records = json.loads((tmp_path / "results.json").read_text())["records"]
    failed = {r["check"] for r in records if r["verdict"] == "fail"}
    assert spec["caught_by"] in failed, result.stderr
