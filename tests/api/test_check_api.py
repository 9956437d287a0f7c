"""verify.check: a kernel by name, import path or class, in a worker or in process, typed results."""

from __future__ import annotations

from pathlib import Path

import pytest

import verify
from verify import CheckResults, Verdict, VerificationFailure
from verify.kernels.attention.merge_state import MergeState

MUTANTS = Path(__file__).resolve().parents[1] / "fixtures" / "mutants"
F32 = {"head_dim": 64, "dtype": "f32"}


class MergeStateDefinedHere(MergeState):
    """A kernel defined in a test module: the worker must import it by its module path."""

    name = "test.merge_state_here"


@pytest.mark.webgpu
@pytest.mark.parametrize("kernel", ["merge_state", "verify.kernels.attention.merge_state:MergeState", MergeState],
                         ids=["name", "import path", "class"])
def test_a_kernel_is_found_by_name_import_path_or_class(kernel):
    results = verify.check(kernel, F32, examples=8)
    # Every check the kernel declares, in its order (toggles runs on Dawn in process, in ci).
    assert isinstance(results, CheckResults) and [r.check for r in results] == ["reference", "determinism", "sanitize",
                                                                           "implementations", "toggles"]
    corners = len(MergeState().corners(MergeState().config(F32)))  # run first, beside the 8 drawn
    assert results.verdict is Verdict.PASS and results["reference"].examples == 8 + corners
    assert results["reference"].max_err_over_budget is not None and results["reference"].max_err_over_budget <= 1
    assert results["reference"].kernel_ref == "verify.kernels.attention.merge_state:MergeState"


@pytest.mark.webgpu
def test_a_kernel_class_from_a_test_module_runs_isolated_in_the_worker():
    [result] = verify.check(MergeStateDefinedHere, F32, checks="reference", examples=5)
    assert result.verdict is Verdict.PASS and result.kernel == "test.merge_state_here"
    assert result.kernel_ref == f"{__name__}:MergeStateDefinedHere"


@pytest.mark.webgpu
def test_isolated_and_in_process_runs_reach_the_same_verdicts_and_cases():
    isolated = verify.check("merge_state", F32, examples=10, seed=3)
    here = verify.check("merge_state", F32, examples=10, seed=3, isolate=False)
    assert [(r.check, r.verdict, r.examples) for r in isolated] == [(r.check, r.verdict, r.examples) for r in here]
    assert isolated["reference"].worst.case == here["reference"].worst.case


@pytest.mark.webgpu
def test_a_record_counts_the_pipelines_its_worker_compiled_for_it():
    """A program the worker has not compiled yet is compiled, and counted in the check's record (with
    what the check compiles beside it: on a user's file, the reference check's bounds-instrumented
    copy); the same program again in that worker (its pipeline cache) none; the summary adds them up."""
    import uuid

    from verify.display import summary

    kernel = MergeState()
    wgsl = kernel.wgsl(kernel.config(F32)) + f"\n// {uuid.uuid4()}\n"  # a text no worker has compiled
    first = verify.check("merge_state", F32, checks=["reference"], examples=2, wgsl=wgsl)
    again = verify.check("merge_state", F32, checks=["reference"], examples=2, wgsl=wgsl)
    compiled = first["reference"].pipelines_compiled
    assert compiled >= 1 and [r.pipelines_compiled for r in again] == [0]
    assert summary([*first, *again]).endswith(f"; {compiled} pipelines compiled")


@pytest.mark.webgpu
def test_the_compile_log_says_what_each_compile_compiled_and_how_long_it_took(tmp_path, monkeypatch):
    """VERIFY_COMPILE_LOG: one line per real compile, process, job, implementation, the WGSL's
    sha256 and its seconds (what benchmarks/gate_compiles.py and a GPU machine's profile read)."""
    import hashlib
    import uuid

    from verify.worker import COMPILE_LOG

    log = tmp_path / "compiles.log"
    monkeypatch.setenv(COMPILE_LOG, str(log))
    kernel = MergeState()
    wgsl = kernel.wgsl(kernel.config(F32)) + f"\n// {uuid.uuid4()}\n"  # a text no worker has compiled
    # In this process: a worker started by an earlier test would not see the variable set here.
    result = verify.check("merge_state", F32, checks=["reference"], examples=2, wgsl=wgsl, isolate=False)["reference"]
    lines = [line.split() for line in log.read_text().splitlines()]
    assert len(lines) == result.pipelines_compiled >= 1
    assert all(len(fields) == 5 and fields[2] == "wgpu" and float(fields[4]) > 0 for fields in lines)
    assert hashlib.sha256(wgsl.encode()).hexdigest() in {fields[3] for fields in lines}


def test_a_compile_counts_once_with_its_seconds_however_deeply_it_nests():
    import time

    from verify.gpu import compiling

    before = len(compiling.compiled())
    with compiling.compiling("wgpu outer"):
        with compiling.compiling("wgpu inner"):
            time.sleep(0.02)
    assert compiling.compiled()[before:] == ["wgpu outer"]
    assert compiling.compile_seconds()[before:][0] >= 0.02


@pytest.mark.webgpu
@pytest.mark.parametrize("as_path", [False, True], ids=["text", "path"])
def test_a_broken_wgsl_fails_and_raise_for_verdict_carries_the_shrunk_case_and_replay(tmp_path, as_path):
    mutant = MUTANTS / "merge_state" / "natural_log.wgsl"
    wgsl = mutant if as_path else mutant.read_text()
    results = verify.check("merge_state", wgsl=wgsl, checks=["reference"], examples=30, out_dir=tmp_path)
    [result] = results
    assert result.verdict is Verdict.FAIL and result.source.kind == "file"
    assert result.shrunk is not None and Path(result.shrunk.case_file).is_file()
    with pytest.raises(AssertionError) as raised:
        results.raise_for_verdict()
    assert isinstance(raised.value, VerificationFailure) and raised.value.results == (result,)
    message = str(raised.value)
    assert "FAIL merge_state reference" in message and "shrunk case: tokens=" in message
    assert f"verify replay {result.shrunk.case_file}" in message


@pytest.mark.webgpu
def test_a_hung_kernel_runs_out_of_time_without_hanging_the_caller():
    """The time limit is verify's: an ERROR (no verdict on the kernel), and the call returns."""
    hang = (Path(__file__).resolve().parents[1] / "fixtures" / "wgsl" / "merge_state_never_finishes.wgsl")
    [result] = verify.check("merge_state", wgsl=hang, checks="determinism", examples=50, time_limit=5)
    assert result.verdict is Verdict.ERROR and "time limit" in result.reason
    assert result.failure_kind.value == "time limit"


def test_a_skip_raises_unless_allowed():
    skipped = verify.CheckResult("k", "reference", {}, Verdict.SKIP, reason="adapter lacks shader-f16")
    results = CheckResults([skipped])
    with pytest.raises(VerificationFailure, match="adapter lacks shader-f16"):
        results.raise_for_verdict()
    assert results.raise_for_verdict(allow_skip=True) is results
    known = verify.CheckResult("k", "reference", {}, Verdict.KNOWN, finding="documented")
    assert CheckResults([known]).raise_for_verdict().verdict is Verdict.KNOWN


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(kernel="decode.nope"), "unknown kernel 'decode.nope'"),
    (dict(kernel="no_such_module:Thing"), "no module named 'no_such_module'"),
    (dict(kernel="verify.kernels.attention.merge_state:Nope"), "has no 'Nope'"),
    (dict(kernel="verify.errors:UsageError"), "not a verify.Kernel subclass"),
    (dict(kernel="merge_state", config={"heads": 3}), "no config key 'heads'"),
    (dict(kernel="merge_state", examples=0), "--examples must be at least 1"),
    (dict(kernel="merge_state", checks="nope"), "merge_state has no check nope"),
    (dict(kernel="merge_state", profile="weekly"), "unknown profile 'weekly'"),
    (dict(kernel="merge_state", wgsl=42), "wgsl must be WGSL text"),
    (dict(kernel="merge_state", config=[("head_dim", 64)]), "config must be a dict"),
])
def test_bad_arguments_are_usage_errors_that_say_what_was_expected(kwargs, fragment):
    kernel = kwargs.pop("kernel")
    with pytest.raises(verify.UsageError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        verify.check(kernel, **kwargs)


def test_every_public_name_is_documented():
    for name in verify.__all__:
        value = getattr(verify, name)
        if name in ("DISTRIBUTION",):
            continue
        assert (getattr(value, "__doc__", None) or "").strip(), f"verify.{name} has no docstring"
