"""The `implementations` check (Naga and Tint on the same case) and the gate on both WebGPU
implementations: who runs what, the joint budget, and compile divergences in both directions."""

from __future__ import annotations

import numpy as np
import pytest

import verify
from verify import Verdict
from verify.budgets.expected import Expected
from verify.budgets.metrics import compare
from verify.checks.implementations import joint_expected
from verify.errors import SetupError
from verify.kernels.registry import get_kernel
from verify.plan import check_jobs, gate_jobs, kernel_implementations
from verify.profiles import get_profile


@pytest.fixture(scope="module")
def both_implementations():
    """wgpu and Dawn on this machine; skipped, with the reason, where scripts/setup.sh has not run."""
    from verify.gpu.implementations import implementation

    try:
        implementation("dawn").available()
    except SetupError as exc:
        pytest.skip(str(exc))


# -- the joint budget -----------------------------------------------------------------------------
def test_the_joint_budget_allows_twice_the_budget_around_the_other_output_and_no_more():
    own = Expected("o", np.array([1.0, 2.0]), np.array([1.0, 2.0]), np.array([0.5, 0.5]), "f32")
    other = np.array([1.2, 2.0])
    joint = joint_expected(own, other)
    assert compare(np.array([1.2 + 0.99, 2.0 - 0.99]), joint).passed  # 2 x 0.5 around the other output
    assert not compare(np.array([1.2 + 1.01, 2.0]), joint).passed
    assert not compare(np.array([1.2, 2.0 - 1.01]), joint).passed


def test_a_legal_interval_widens_the_joint_budget_by_its_width_and_exact_elements_stay_exact():
    # a quantized code may round either way: [3, 4] is legal, budget 0
    own = Expected("codes", np.array([3.0]), np.array([4.0]), np.array([0.0]), "i8")
    joint = joint_expected(own, np.array([3.0]))
    assert compare(np.array([4.0]), joint).passed and not compare(np.array([5.0]), joint).passed
    exact = Expected("lse", np.array([-np.inf]), np.array([-np.inf]), np.array([0.0]), "f32", exact=np.array([True]))
    joint = joint_expected(exact, np.array([-np.inf]))
    assert compare(np.array([-np.inf]), joint).passed and not compare(np.array([-3.0e38]), joint).passed


# -- the gate's plan ------------------------------------------------------------------------------
def test_the_gate_lists_each_implementations_adapters_once_and_names_them_in_every_jobs_inputs(monkeypatch):
    """Listing adapters costs a second each (Dawn's starts a Node process): the gate lists them
    once, both at once, and the inputs digests, the default's check and the refusals use that list."""
    from verify.gpu.dawn.device import Dawn
    from verify.gpu.device import AdapterInfo
    from verify.gpu.wgpu_device import Wgpu
    from verify.plan import gate_implementations, with_inputs

    listed = []
    card = AdapterInfo("Card X", "v", "Vulkan", "DiscreteGPU", "driver 1", implementation="wgpu")

    def wgpu_adapters(self):
        listed.append("wgpu")
        return [card]

    def no_dawn(self):
        listed.append("dawn")
        raise SetupError("Node is missing")

    monkeypatch.setattr(Wgpu, "adapters", wgpu_adapters)
    monkeypatch.setattr(Dawn, "adapters", no_dawn)
    chosen = gate_implementations(None, None)
    assert chosen.run_on == ("wgpu",) and chosen.unavailable == {"dawn": "Node is missing"}
    assert chosen.adapters == {"wgpu": (card,)}
    chosen.require_adapter("wgpu", "card x")  # --adapter matches without listing again
    with pytest.raises(SetupError, match="no adapter matches 'other'; found: Card X"):
        chosen.require_adapter("wgpu", "other")
    jobs, _ = gate_jobs(["merge_state"], profile=get_profile("quick"), seed=0, out_dir=None, time_limit=None,
                        implementations=list(chosen.run_on))
    digested = with_inputs(jobs, None, chosen.adapters)
    assert sorted(listed) == ["dawn", "wgpu"]  # once each
    assert all(job.inputs for job in digested)
    card_2 = AdapterInfo("Card X", "v", "Vulkan", "DiscreteGPU", "driver 2", implementation="wgpu")
    assert [j.inputs for j in with_inputs(jobs, None, {"wgpu": (card_2,)})] != [j.inputs for j in digested]

    monkeypatch.setattr(Wgpu, "adapters", lambda self: [])
    with pytest.raises(SetupError, match="no WebGPU adapter with compute support"):
        gate_implementations(None, None)  # nothing can be verified without the default


def test_the_gate_runs_every_check_on_the_first_implementation_and_the_shared_ones_on_the_second():
    profile = get_profile("ci")
    jobs, skipped = gate_jobs(["merge_state"], profile=profile, seed=0, out_dir=None, time_limit=None,
                              implementations=["wgpu", "dawn"])
    assert not skipped
    on_wgpu = {j.check for j in jobs if j.implementation == "wgpu" and not j.subgroup_width}
    on_dawn = {j.check for j in jobs if j.implementation == "dawn"}
    assert on_wgpu == set(get_kernel("merge_state").checks) and "implementations" in on_wgpu
    assert on_dawn == {"reference"}  # the only check of merge_state that runs on every implementation


def test_on_one_implementation_the_gate_plans_no_implementations_check():
    jobs, _ = gate_jobs(["merge_state"], profile=get_profile("ci"), seed=0, out_dir=None, time_limit=None,
                        implementations=["wgpu"])
    assert jobs and "implementations" not in {j.check for j in jobs} and {j.implementation for j in jobs} == {"wgpu"}


def test_the_nightly_profile_runs_every_check_on_both_implementations():
    jobs, _ = gate_jobs(["rope"], profile=get_profile("nightly"), seed=0, out_dir=None, time_limit=None,
                        implementations=["wgpu", "dawn"])
    checks = set(get_kernel("rope").checks) - {"implementations"}
    assert {j.check for j in jobs if j.implementation == "dawn"} == checks


def test_a_kernel_that_declares_its_implementation_runs_there_and_is_a_skip_where_it_cannot_run():
    kernel = get_kernel("ort.dp4a.quantize")
    assert kernel_implementations(kernel, ["wgpu", "dawn"]) == ["dawn"]
    assert kernel_implementations(kernel, ["wgpu"]) == ["dawn"]  # `gate --implementation wgpu` still runs ORT on Dawn
    assert kernel_implementations(get_kernel("rope"), ["wgpu", "dawn"]) == ["wgpu", "dawn"]
    jobs, skipped = gate_jobs(["ort.dp4a.quantize", "rope"], profile=get_profile("quick"), seed=0, out_dir=None,
                              time_limit=None, implementations=["wgpu"], unavailable=("dawn",))
    assert [(r.kernel, r.verdict) for r in skipped] == [("ort.dp4a.quantize", Verdict.SKIP)]
    assert "runs on dawn only, which cannot run here" in skipped[0].reason
    assert {j.kernel for j in jobs} == {"rope"}


def test_a_kernel_routes_a_check_to_another_implementation_only_where_the_run_has_it():
    """ORT's attention programs run on Dawn but send `sanitize` to wgpu (Kernel.check_implementations):
    its verdict reads the access log, and Tint's compile of an instrumented ORT program can outlast
    the check's time limit on lavapipe. A run without wgpu, or a user's choice of implementation,
    keeps every check on the one chosen."""
    name = "ort.attention.decode_reduce"
    assert get_kernel(name).check_implementations == {"sanitize": "wgpu"}
    profile = get_profile("ci")
    options = dict(profile=profile, examples=1, seed=0, out_dir=None, time_limit=None)
    assert {job.check: job.implementation for job in check_jobs(name, {}, **options)} == {
        "reference": "dawn", "determinism": "dawn", "sanitize": "wgpu", "implementations": "dawn"}
    for chosen in ("dawn", "wgpu"):
        assert {job.implementation for job in check_jobs(name, {}, implementation=chosen, **options)} == {chosen}
    gate = dict(profile=profile, seed=0, out_dir=None, time_limit=None)
    both, _ = gate_jobs([name], implementations=["wgpu", "dawn"], **gate)
    assert {(job.check, job.implementation) for job in both} == {
        ("reference", "dawn"), ("determinism", "dawn"), ("sanitize", "wgpu"), ("implementations", "dawn")}
    dawn_only, _ = gate_jobs([name], implementations=["dawn"], **gate)
    assert {(job.check, job.implementation) for job in dawn_only} == {
        ("reference", "dawn"), ("determinism", "dawn"), ("sanitize", "dawn")}
    # the order of the checks is the kernel's, whichever implementation each runs on
    assert [job.check for job in both][:4] == list(get_kernel(name).checks)


def test_the_gate_compares_implementations_for_a_kernel_meant_for_one_when_it_has_two():
    """A kernel meant for Dawn only still gets `implementations` (its WGSL under Naga too) in a gate
    that has wgpu as well: browsers ship both compilers. A gate with one implementation plans none."""
    options = dict(profile=get_profile("ci"), seed=0, out_dir=None, time_limit=None)
    names = ["ort.attention.copy_kv_cache", "merge_state"]
    both, _ = gate_jobs(names, implementations=["wgpu", "dawn"], **options)
    assert {job.kernel for job in both if job.check == "implementations"} == set(names)
    for one in (["wgpu"], ["dawn"]):
        jobs, _ = gate_jobs(["merge_state"], implementations=one, **options)
        assert not [job for job in jobs if job.check == "implementations"]


# -- on the two implementations -------------------------------------------------------------------
@pytest.mark.webgpu
def test_the_two_implementations_agree_on_merge_state(both_implementations):
    results = verify.check("merge_state", {"dtype": "f32"}, checks="implementations", examples=6, profile="quick")
    result = results["implementations"]
    from verify.kernels.attention.merge_state import MergeState

    corners = len(MergeState().corners(MergeState().config({"dtype": "f32"})))  # run first, beside the 6 drawn
    assert result.verdict is Verdict.PASS and result.examples == 6 + corners, result.reason
    assert result.adapter.implementation == "wgpu" and result.max_err_over_budget <= 1


def _quantizer_edited(old: str, new: str) -> str:
    wgsl = get_kernel("dp4a.quantize").wgsl(get_kernel("dp4a.quantize").config({"dtype": "f32"}))
    assert old in wgsl
    return wgsl.replace(old, new)


@pytest.mark.webgpu
def test_wgsl_only_tint_accepts_is_a_compile_divergence_with_nagas_message(both_implementations):
    # WGSL lets subgroupShuffle take an i32 lane; Naga (wgpu 0.32) insists on u32
    wgsl = _quantizer_edited("return subgroupShuffleXor(value, distance);",
                             "return subgroupShuffle(value, i32((lanes.local % lanes.width) ^ distance));")
    result = verify.check("dp4a.quantize", {"dtype": "f32"}, checks="implementations", examples=2,
                          profile="quick", wgsl=wgsl)["implementations"]
    assert result.verdict is Verdict.DIVERGENCE and result.verdict.fails_run
    assert "compiles under Tint (dawn) but not under Naga (wgpu)" in result.reason
    assert "\nNaga: " in result.reason and "\nTint: compiles" in result.reason


@pytest.mark.webgpu
def test_wgsl_only_naga_accepts_is_a_compile_divergence_before_any_case(both_implementations):
    # a barrier behind a branch on a non-uniform value: Tint's uniformity analysis refuses it
    wgsl = _quantizer_edited("return workgroupUniformLoad(&width_of_subgroups);", "return lanes.width;")
    result = verify.check("dp4a.quantize", {"dtype": "f32"}, checks="implementations", examples=2,
                          profile="quick", wgsl=wgsl)["implementations"]
    assert result.verdict is Verdict.DIVERGENCE, result.reason
    assert "compiles under Naga (wgpu) but not under Tint (dawn)" in result.reason
    assert "must only be called from uniform control flow" in result.reason and result.examples == 0


@pytest.mark.webgpu
def test_a_saved_case_replays_under_the_implementations_check(both_implementations, tmp_path):
    import json
    import subprocess
    import sys
    from pathlib import Path

    mutant = Path(__file__).parent.parent / "fixtures" / "mutants" / "merge_state" / "natural_log.wgsl"
    run = subprocess.run([sys.executable, "-m", "verify", "check", "merge_state", "--wgsl", str(mutant), "--checks",
                          "reference", "--examples", "10", "--jobs", "1", "--out", str(tmp_path)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 1, run.stderr
    case = json.loads((tmp_path / "results.json").read_text())["records"][0]["shrunk"]["case_file"]
    sidecar = Path(case).with_suffix(".json")
    sidecar.write_text(json.dumps(dict(json.loads(sidecar.read_text()), check="implementations")))
    # the mutant is wrong the same way under Naga and Tint: the two implementations agree on it
    replay = subprocess.run([sys.executable, "-m", "verify", "replay", case], capture_output=True, text=True,
                            timeout=600)
    assert replay.returncode == 0, replay.stdout + replay.stderr
    assert "check implementations" in replay.stdout and "PASS" in replay.stdout
