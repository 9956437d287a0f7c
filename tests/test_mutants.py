"""Deliberately broken kernels must be caught: each mutant fixture fails the check named for it.

This is the toolkit checking itself (docs/how-kernels-are-judged.md §8): a check that lets a known bug through
is a defect of the check.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import verify
from tests.fixtures.mutants.regenerate import fixture_path, mutate, specs, unmutated
from verify.results.record import Verdict

MUTANTS = [(kernel, spec) for kernel, entries in specs().items() for spec in entries]
#: Mutants of vendor programs (ORT's, from its captures): each also has its unmutated program checked.
VENDOR_MUTANTS = [(kernel, spec) for kernel, spec in MUTANTS if kernel.startswith("ort.")]


def _check(kernel, spec, wgsl):
    """`verify.check` of the spec's check as `verify check --wgsl` runs it (seed 0, ci), at the
    spec's emulated width and on its implementation where it names them; a pytest skip where the
    machine cannot run the kernel (ORT's programs without Dawn)."""
    results = verify.check(kernel, spec.get("config"), checks=[spec["caught_by"]], examples=spec.get("examples", 100),
                           wgsl=wgsl,
                           subgroup_width=spec.get("subgroup_width"), implementation=spec.get("implementation"))
    if results and all(r.verdict is Verdict.SKIP for r in results):
        pytest.skip(results[0].reason)
    return results


@pytest.mark.parametrize("kernel,spec", MUTANTS, ids=[f"{k}/{s['name']}" for k, s in MUTANTS])
def test_mutant_fixture_is_current(kernel, spec):
    """The kept copy equals what the spec makes of today's kernel (else regenerate.py)."""
    assert fixture_path(kernel, spec).read_text() == mutate(kernel, spec)


@pytest.mark.webgpu
@pytest.mark.parametrize("kernel,spec", MUTANTS, ids=[f"{k}/{s['name']}" for k, s in MUTANTS])
def test_mutant_is_caught(kernel, spec):
    """The expected check fails the mutant. `verify.check` runs what `verify check --wgsl MUTANT`
    runs (the config the file names, the ci profile, seed 0, a worker process with its time
    limit), without the command's own start-up, adapter listing and report: about half of each
    run's time here (the command's exit code is the next test's)."""
    results = _check(kernel, spec, fixture_path(kernel, spec))
    failed = {r.check for r in results if r.verdict is Verdict.FAIL}
    assert spec["caught_by"] in failed, [(r.check, r.verdict.value, r.reason) for r in results]


@pytest.mark.webgpu
@pytest.mark.parametrize("kernel,spec", VENDOR_MUTANTS, ids=[f"{k}/{s['name']}" for k, s in VENDOR_MUTANTS])
def test_the_program_a_vendor_mutant_is_made_from_passes(kernel, spec):
    """The same check, at the same width, implementation and examples, passes the program the
    mutant was made from (the vendor's own WGSL, or a documented finding's control of it): the
    mutant's failure is its planted bug's, not one the program already had."""
    results = _check(kernel, spec, unmutated(kernel, spec) if spec.get("control") else None)
    assert [r.verdict for r in results] == [Verdict.PASS], [(r.check, r.verdict.value, r.reason) for r in results]


@pytest.mark.webgpu
def test_the_command_exits_1_with_the_check_that_caught_a_mutant(tmp_path):
    """`verify check KERNEL --wgsl MUTANT --checks CHECK` exits 1 and records that check failing."""
    kernel, spec = next((k, s) for k, s in MUTANTS if (k, s["name"]) == ("merge_state", "natural_log"))
    result = subprocess.run(
        [sys.executable, "-m", "verify", "check", kernel, "--wgsl", str(fixture_path(kernel, spec)),
         "--checks", spec["caught_by"], "--examples", "100", "--out", str(tmp_path)],
        capture_output=True, text=True, timeout=900,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    records = json.loads((tmp_path / "results.json").read_text())["records"]
    assert [(r["check"], r["verdict"]) for r in records] == [(spec["caught_by"], "fail")], result.stderr
