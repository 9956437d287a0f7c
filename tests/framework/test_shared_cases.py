"""The references of cases several jobs draw (the same check of a config at each subgroup width,
emulated, and on each implementation, from one seed) are computed once by the worker that runs
those jobs (verify.checks.shared_cases), and the records are what they would be without it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import verify
from verify.checks.shared_cases import ReferenceMemo, case_key, family, mark_shared_cases
from verify.protocol import Job
from verify.session import _JobPicker

PLUGIN = Path(__file__).resolve().parents[1] / "fixtures" / "plugin"


def _job(id, width=None, implementation="wgpu", check="reference", config=None, seed=0, part=""):
    return Job(id, "tvm.prefill", "verify.sources.tvm.attention.prefill:TvmPrefill", config or {"head_dim": 64},
               check, 10, seed, implementation=implementation, subgroup_width=width, part=part)


def test_the_jobs_of_one_check_config_and_seed_are_one_family():
    native, narrow, dawn = _job(0), _job(1, width=4), _job(2, implementation="dawn")
    other_check, other_config, other_seed = _job(3, check="determinism"), _job(4, config={"head_dim": 128}), _job(5, seed=1)
    marked = mark_shared_cases([native, narrow, dawn, other_check, other_config, other_seed])
    assert [job.shares_cases for job in marked] == [True, True, True, False, False, False]
    assert family(marked[0]) == family(marked[1]) == family(marked[2])


class _Counting:
    """A kernel whose expected() counts its calls."""

    name = "counting"

    def __init__(self):
        self.calls = 0

    def expected(self, config, case):
        self.calls += 1
        reference = case["x"].astype(np.float64) * 2
        return [verify.Expected.around("y", reference, np.zeros_like(reference), "f32")]


def test_a_kept_reference_is_the_same_case_only():
    kernel, memo = _Counting(), ReferenceMemo()
    x = np.arange(8, dtype=np.float32)
    first = memo.expected(kernel, {"n": 8}, verify.Case({"x": x}, {"n": 8}))
    again = memo.expected(kernel, {"n": 8}, verify.Case({"x": x.copy()}, {"n": 8}))  # same content, new arrays
    assert kernel.calls == 1 and again is first and memo.hits == 1
    assert not first[0].lo.flags.writeable  # later jobs read it: nobody may change it
    changed = x.copy()
    changed[5] = np.nextafter(changed[5], np.float32(np.inf))
    others = [verify.Case({"x": changed}, {"n": 8}), verify.Case({"x": x}, {"n": 9}),
              verify.Case({"x": x.astype(np.float64)}, {"n": 8}), verify.Case({"x": x.reshape(2, 4)}, {"n": 8}),
              verify.Case({"z": x}, {"n": 8})]
    keys = {case_key(kernel, {"n": 8}, case) for case in others}
    keys.add(case_key(kernel, {"n": 16}, verify.Case({"x": x}, {"n": 8})))
    assert len(keys) == 6 and case_key(kernel, {"n": 8}, verify.Case({"x": x}, {"n": 8})) not in keys
    # A long array among the parameters counts whole (numpy's repr would elide its middle).
    lengths = np.arange(2000)
    other_lengths = lengths.copy()
    other_lengths[1000] += 1
    assert case_key(kernel, {}, verify.Case({"x": x}, {"lengths": lengths})) != \
        case_key(kernel, {}, verify.Case({"x": x}, {"lengths": other_lengths}))


def test_kept_references_stay_within_their_bytes_keeping_the_first_cases():
    """Past the bound the first cases stay kept: a family's jobs draw the same cases in the same
    order, and dropping the oldest would miss every one of them. Another family empties the memo."""
    kernel, memo = _Counting(), ReferenceMemo(max_bytes=3 * 2 * 64 * 8)  # three cases: reference (lo is hi), budget
    cases = [verify.Case({"x": np.full(64, i, np.float32)}) for i in range(4)]
    for _ in range(2):  # two jobs of one family
        for case in cases:
            memo.serve(("family", 1)).expected(kernel, {}, case)
    assert kernel.calls == 5  # the fourth case did not fit: computed in each job
    memo.serve(("family", 2)).expected(kernel, {}, cases[0])
    assert kernel.calls == 6


def test_a_family_goes_to_the_worker_that_took_its_first_job():
    """Its later jobs go to that worker as soon as it asks, and to no other while another job can
    go instead; under a budget the random parts keep their order."""
    native, narrow, wide = _job(0), _job(1, width=4), _job(2, width=8)
    other, last = _job(3, config={"head_dim": 128}), _job(4, config={"head_dim": 256})
    picker = _JobPicker(mark_shared_cases([native, narrow, wide, other, last]), workers=4)
    assert picker.take(0).id == 0
    assert picker.take(1).id == 3  # the family's next is worker 0's
    assert picker.take(0).id == 1
    assert picker.take(1).id == 4
    assert picker.take(1).id == 2  # nothing else is left: it goes rather than wait
    parts = mark_shared_cases([replace(job, part="random", slice=(1, 2)) for job in (native, narrow, other)])
    budgeted = _JobPicker(parts, deadline=time.monotonic() + 3600, workers=4)
    assert [budgeted.take(0).id, budgeted.take(1).id, budgeted.take(2).id] == [0, 1, 3]


@pytest.mark.webgpu
def test_a_gate_computes_a_shared_case_once_and_records_the_same(tmp_path):
    """The toy kernel reads its subgroups: its reference check runs natively and at widths 4 and 8
    on the same cases. With one worker its 24 cases are computed once, not three times."""
    log = tmp_path / "expected.log"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PLUGIN), *sys.path]), VERIFY_TOY_EXPECTED_LOG=str(log))
    result = subprocess.run([sys.executable, "-m", "verify", "gate", "--kernels", "verify_toy.shared:SubgroupMin",
                             "--profile", "quick", "--implementation", "wgpu", "-j", "1", "--out", str(tmp_path / "out")],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    records = json.loads((tmp_path / "out" / "results.json").read_text())["records"]
    assert sorted(r["subgroup_width"] or 0 for r in records) == [0, 4, 8]
    assert {(r["verdict"], r["examples"]) for r in records} == {("pass", records[0]["examples"])}
    assert len(log.read_text().splitlines()) == records[0]["examples"] > 1
