"""A failing example past the driver's loop cap is the driver's, not the kernel's
(verify.checks.loop_cap, docs/findings.md §9): where the adapter's `loop-trip-count` probe
deviates (lavapipe), such examples are kept aside with their counted trips, the check goes on,
and a check whose every failure reached the cap is KNOWN as the driver's finding; a failure under
the cap still fails the kernel. Where the probe conforms (a GPU), the same right kernel passes.
The kernel (tests/fixtures/plugin/verify_toy/loops.py) counts to n, mostly past 65535."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "plugin"


def _run(tmp_path, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGIN), *sys.path]))
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def _check(tmp_path, bug: int, implementation: str):
    out = tmp_path / f"bug{bug}"
    result = _run(tmp_path, "check", "verify_toy.loops:Counting", "--config", f"bug={bug}", "--profile", "quick",
                  "--examples", "30", "--implementation", implementation, "--out", str(out))
    [record] = json.loads((out / "results.json").read_text())["records"]
    capped = "loop-trip-count" in (record["adapter"]["deviations"] or "").split(",")
    return result, record, capped, out


#: wgpu runs on Mesa 22.3's lavapipe here, whose probe deviates; Dawn on Mesa 25's, which runs every
#: trip: the same cases pass there, as a right kernel's do on a GPU.
IMPLEMENTATIONS = ("wgpu", "dawn")


@pytest.mark.webgpu
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_right_kernel_past_the_cap_is_the_drivers_finding_not_a_failure(tmp_path, implementation):
    result, record, capped, out = _check(tmp_path, 0, implementation)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    if not capped:  # every trip runs: the kernel is right
        assert record["verdict"] == "pass" and record["examples"] == 30
        return
    assert record["verdict"] == "known" and record["finding_id"] == "lavapipe-loop-cap"
    assert record["finding_reproduced"] is True and record["examples"] == 30
    assert "loop trips in one invocation" in record["finding"]
    counted = int(record["finding"].split("up to ")[1].split()[0])
    assert counted >= 65535
    # The replay of its case says why it fails here.
    [case] = sorted((out / "cases").glob("*-shrunk.npz"))
    replayed = _run(tmp_path, "replay", str(case))
    assert replayed.returncode == 1 and "reached this driver's loop cap" in replayed.stdout


@pytest.mark.webgpu
@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_a_kernel_bug_under_the_cap_still_fails_the_kernel(tmp_path, implementation):
    result, record, capped, _ = _check(tmp_path, 1, implementation)
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    assert record["verdict"] == "fail" and record["failure_kind"] == "over budget"
    assert record.get("finding_id") in (None, "")
    # The shrunk case is the planted bug's, one too many (under the cap where there is one).
    got, expected = map(int, re.search(r"got (\d+), expected (\d+)", record["reason"]).groups())
    assert got == expected + 1
    if capped:
        assert expected < 65535
        assert not any("could not be counted" in n for n in record["notes"])
