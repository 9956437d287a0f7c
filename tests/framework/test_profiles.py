"""A Profile is an object end to end: a renamed copy of a built-in profile plans exactly the jobs
the original does, for every kernel, and travels to the worker as JSON (no pickle, no lookup by
name on the way)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

import verify
from verify.kernels.attention.sizes import AttentionSizes
from verify.plan import gate_jobs
from verify.profiles import PROFILES, Profile, encode_profile, job_profile
from verify.results.record import Verdict


def _planned(profile) -> list:
    jobs, skipped = gate_jobs(None, profile=profile, seed=0, out_dir=None, time_limit=None, implementations=["wgpu"])
    return sorted((j.kernel, j.check, json.dumps(j.config, sort_keys=True), j.examples, j.subgroup_width or 0)
                  for j in jobs) + sorted((r.kernel, r.reason) for r in skipped)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_a_renamed_copy_of_a_built_in_profile_plans_the_same_jobs_for_every_kernel(name):
    original = PROFILES[name]
    mine = replace(original, name=f"mine-{name}")
    assert _planned(mine) == _planned(original)


def test_a_profile_travels_as_json_and_comes_back_equal():
    mine = Profile("mine", 7, 120.0, "a profile of one's own", 8, "ci", (4, 32),
                   sizes={"attention": AttentionSizes(2, 64, 4, 24, 6), "toy": 33})
    text = encode_profile(mine)
    data = json.loads(text)  # plain JSON: anyone can read a job
    assert data["name"] == "mine" and data["sizes"]["toy"] == {"value": 33}
    assert job_profile("mine", text) == mine
    assert encode_profile(PROFILES["ci"]) is None and job_profile("ci", None) is PROFILES["ci"]


def test_a_profile_whose_sizes_cannot_travel_is_one_usage_error():
    mine = Profile("mine", 7, 120.0, "d", 8, "ci", sizes={"toy": object()})
    with pytest.raises(verify.UsageError, match="sizes must be dataclasses or plain JSON values"):
        encode_profile(mine)


@pytest.mark.webgpu
def test_a_custom_profile_runs_orts_program_kernels():
    """ORT's kernels once looked the profile up again by its name: a profile of one's own was an
    unknown profile to them. Its captures ship with verify, so this needs no Node."""
    mine = replace(PROFILES["ci"], name="mine")
    results = verify.check("ort.dp4a.quantize", checks="reference", examples=3, profile=mine)
    assert results["reference"].verdict in (Verdict.PASS, Verdict.SKIP), results["reference"].reason
    assert "unknown profile" not in results["reference"].reason
