"""The `toggles` check: a kernel whose outputs change when Dawn skips workgroup zeroing or robust
buffer access is reported as implementation-sensitive, in a note of a PASS; verify's own kernels
are not; the check runs on Dawn in process where wgpudawn is installed and in Node otherwise; the
gate plans it under ci and nightly, not in the quick smoke test.

The checks need what scripts/setup.sh installs (Dawn, ONNX Runtime Web's captured programs);
without it they fail rather than skip, since a skip is not a pass.
"""

from __future__ import annotations

import pytest

import verify
from verify import Verdict
from verify.checks import get_check
from verify.errors import SetupError
from verify.kernels.registry import get_kernel
from verify.plan import gate_jobs
from verify.profiles import get_profile

SENSITIVE = "implementation-sensitive: with Dawn's disable_workgroup_init"


def _toggles(kernel: str, config: dict | None = None, examples: int = 4):
    result = verify.check(kernel, config, checks="toggles", examples=examples, profile="quick", isolate=False)["toggles"]
    assert result.verdict is Verdict.PASS, result.reason
    assert result.examples == examples and len(result.notes) >= 2, result.notes
    return result


def _note(result, toggle: str) -> str:
    found = [n for n in result.notes if toggle in n.split("(")[0]]
    assert len(found) == 1, result.notes
    return found[0]


@pytest.mark.parametrize("kernel", ["ort.dp4a.matmul_small_m", "ort.attention.decode_qkv",
                                    "ort.attention.paged_decode_qkv"])
def test_orts_programs_that_sum_into_unzeroed_memory_are_implementation_sensitive(kernel):
    """docs/findings.md §13.4 and §18.6: valid WGSL whose sums start from WGSL's zeroed workgroup
    memory; with Dawn's disable_workgroup_init the outputs change and leave their budget."""
    result = _toggles(kernel)
    note = _note(result, "disable_workgroup_init")
    assert note.startswith(SENSITIVE) and "over its budget on" in note and "no failure of the kernel" in note
    assert "clear the workgroup memory before reading it" in note


@pytest.mark.parametrize("kernel", ["merge_state", "rope", "decode.tiled", "dp4a.quantize", "dp4a.matmul",
                                    "ort.dp4a.matmul", "ort.dp4a.quantize"])
def test_kernels_that_clear_what_they_read_are_not(kernel):
    result = _toggles(kernel)
    assert not any(n.startswith("implementation-sensitive") for n in result.notes), result.notes
    assert _note(result, "disable_workgroup_init").startswith("not sensitive to disable_workgroup_init: outputs "
                                                              "bit-identical with and without it on 4 examples")
    robust = _note(result, "disable_robustness")
    assert robust.startswith(("not sensitive to disable_robustness", "disable_robustness: outputs bit-identical"))


def test_where_a_toggle_cannot_show_on_the_adapter_the_note_says_so_rather_than_vouching():
    """llvmpipe bounds-checks every access itself: the out-of-bounds-read probe reads the same
    with Dawn's robustness off, so a reliance on it cannot show on lavapipe."""
    result = _toggles("merge_state")
    robust = _note(result, "disable_robustness")
    if "llvmpipe" in robust:
        assert "this adapter hides what the toggle drops" in robust and "cannot show here" in robust


def test_the_node_route_sets_toggles_too():
    """Without wgpudawn the check runs Dawn in Node, where the toggle is dawn.node's instance flag."""
    from verify.gpu.dawn.toggled import NODE, Route

    device = Route(NODE).open(None, {}, ("disable_workgroup_init",))
    try:
        assert device.info.implementation == "dawn"
        assert device.info.implementation_version.endswith(", toggles disable_workgroup_init")
        if device.info.name.startswith("llvmpipe"):
            assert device.semantics.deviates("workgroup-zero-init")
    finally:
        device.close()


def test_without_dawn_the_check_is_a_skip_saying_why(monkeypatch):
    from verify.checks.context import CheckContext
    from verify.gpu import open_device
    from verify.gpu.dawn import toggled

    def nowhere(*args, **kwargs):
        raise SetupError("Dawn runs neither in this process nor in Node here (in process: no wgpudawn; Node: no Node)")

    monkeypatch.setattr(toggled, "dawn_device", nowhere)
    kernel = get_kernel("merge_state")
    config = kernel.config({})
    ctx = CheckContext(kernel, config, open_device("wgpu"), kernel.wgsl(config))
    decided = get_check("toggles").preflight(ctx)
    assert decided.verdict is Verdict.SKIP and decided.reason.startswith("no Dawn to set toggles on here: ")


def test_the_gate_plans_it_under_ci_and_nightly_not_in_the_quick_smoke_test():
    def planned(profile: str) -> set:
        jobs, _ = gate_jobs(["merge_state", "ort.dp4a.matmul_small_m"], profile=get_profile(profile), seed=0,
                            out_dir=None, time_limit=None, implementations=["wgpu", "dawn"])
        return {(job.kernel, job.implementation) for job in jobs if job.check == "toggles"}

    assert planned("quick") == set()
    assert planned("ci") == {("merge_state", "wgpu"), ("ort.dp4a.matmul_small_m", "dawn")}
    assert get_check("toggles").gate_scales == ("ci", "nightly")
    assert "toggles" not in get_kernel("decode").checks  # its two modules are decode.tiled's and decode.sharded's
