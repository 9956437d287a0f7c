"""`--reuse`: a check whose inputs are all unchanged since it passed takes its earlier record; any
change to what decides its verdict, or an earlier verdict other than PASS, runs it again."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from verify.results.reuse import code_digest

MUTANTS = Path(__file__).resolve().parents[1] / "fixtures" / "mutants"


def verify(*args):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=900)


def records(out: Path) -> list[dict]:
    return json.loads((out / "results.json").read_text())["records"]


@pytest.mark.webgpu
def test_an_unchanged_check_is_reused_and_a_changed_one_runs_again(tmp_path):
    out = tmp_path / "out"
    base = ["check", "merge_state", "--checks", "reference,determinism", "--examples", "5", "--out", str(out)]
    first = verify(*base, "--reuse")
    assert first.returncode == 0, first.stderr
    again = verify(*base, "--reuse")
    assert again.returncode == 0 and "reusing 2 of 2 checks" in again.stderr, again.stderr
    assert all(r["reused_from"] and r["inputs_sha256"] for r in records(out))
    reseeded = verify(*base, "--seed", "1", "--reuse")
    assert "reusing 0 of 2 checks" in reseeded.stderr and not any(r["reused_from"] for r in records(out))


@pytest.mark.webgpu
def test_a_run_without_reuse_leaves_records_a_later_reuse_can_take(tmp_path):
    """The usual sequence: a plain gate, an edit, then `--reuse`. The plain run must record each
    check's inputs, or the first `--reuse` after it would run everything again."""
    out = tmp_path / "out"
    base = ["check", "merge_state", "--checks", "reference,determinism", "--examples", "5", "--out", str(out)]
    plain = verify(*base)
    assert plain.returncode == 0, plain.stderr
    assert all(r["inputs_sha256"] and not r["reused_from"] for r in records(out))
    again = verify(*base, "--reuse")
    assert again.returncode == 0 and "reusing 2 of 2 checks" in again.stderr, again.stderr


@pytest.mark.webgpu
def test_a_failure_is_never_reused(tmp_path):
    out = tmp_path / "out"
    wgsl = MUTANTS / "merge_state" / "natural_log.wgsl"
    base = ["check", "merge_state", "--wgsl", str(wgsl), "--checks", "reference", "--examples", "3", "--out", str(out)]
    assert verify(*base, "--reuse").returncode == 1
    again = verify(*base, "--reuse")
    assert again.returncode == 1 and "reusing 0 of 1 checks" in again.stderr


def test_a_check_that_launches_another_kernel_is_run_again_when_that_kernels_wgsl_changes(monkeypatch):
    """decode.sharded's `differential` launches decode.tiled's WGSL and its `split_merge`
    merge_state's: an edit to either changes those checks' inputs, though not decode.sharded's own
    WGSL; its `reference` depends on its own WGSL alone."""
    from verify.kernels.attention.decode_tiled import DecodeTiled
    from verify.kernels.attention.merge_state import MergeState
    from verify.plan import gate_jobs, with_inputs
    from verify.profiles import get_profile

    jobs, _ = gate_jobs(["decode.sharded"], profile=get_profile("quick"), seed=0, out_dir=None, time_limit=None,
                        implementations=["wgpu"])
    first = {job.check: job for job in jobs}
    chosen = [first["differential"], first["split_merge"], first["reference"]]

    def digests():
        return [job.inputs for job in with_inputs(chosen, None)]

    before = digests()
    for kernel_class, changed in ((DecodeTiled, 0), (MergeState, 1)):
        original = kernel_class.wgsl
        monkeypatch.setattr(kernel_class, "wgsl", lambda self, config, original=original: original(self, config) + "//")
        after = digests()
        assert after[changed] != before[changed] and after[2] == before[2]
        monkeypatch.setattr(kernel_class, "wgsl", original)
    assert digests() == before


def test_a_partner_that_cannot_be_built_leaves_the_plan_to_the_checks_own_record(monkeypatch):
    """Digesting inputs never stops a run: a check whose other kernel refuses the config still gets
    a digest (its record, an error or skip, says why), unlike the one it had with the partner."""
    from verify.checks.differential import DifferentialCheck
    from verify.errors import UsageError
    from verify.plan import gate_jobs, with_inputs
    from verify.profiles import get_profile

    jobs, _ = gate_jobs(["decode.sharded"], profile=get_profile("quick"), seed=0, out_dir=None, time_limit=None,
                        implementations=["wgpu"])
    differential = [job for job in jobs if job.check == "differential"][:1]
    before = with_inputs(differential, None)[0].inputs

    def refuses(self, kernel, config):
        raise UsageError("the partner does not take this config")

    monkeypatch.setattr(DifferentialCheck, "other_wgsl", refuses)
    after = with_inputs(differential, None)[0].inputs
    assert after and after != before


def test_the_code_digest_follows_imports_and_changes_with_any_file_they_reach(tmp_path, monkeypatch):
    package = tmp_path / "digestpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "kernel.py").write_text("from digestpkg import helper\n")
    (package / "helper.py").write_text("VALUE = 1\n")
    (package / "unrelated.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("VERIFY_CACHE", str(tmp_path / "cache"))
    from verify.results import reuse

    def digest():
        reuse._module_file.cache_clear()
        reuse._imports.cache_clear()
        reuse._known_imports.cache_clear()
        code_digest.cache_clear()  # as a new process: one process digests unchanging source once
        return code_digest("digestpkg.kernel")

    before = digest()
    assert (tmp_path / "cache" / "module-imports.json").is_file()  # the next process reads the imports
    assert digest() == before  # read back, they give the same digest
    (package / "unrelated.py").write_text("VALUE = 2\n")
    assert digest() == before  # a module the kernel never imports does not decide its verdict
    (package / "helper.py").write_text("VALUE = 2\n")
    changed = digest()
    assert changed != before
    # The imports kept are those of the source as it is: an edit that imports another module
    # makes that module's changes count, though the file held the kernel's earlier imports.
    (package / "kernel.py").write_text("from digestpkg import helper\nfrom digestpkg import unrelated\n")
    imports_more = digest()
    (package / "unrelated.py").write_text("VALUE = 3\n")
    assert digest() != imports_more
