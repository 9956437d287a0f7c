"""A documented finding's own cases (Kernel.finding_examples) run first in every check, so a finding
reproduces under any seed and any budget: a budgeted gate whose budget is spent before its first
random part (its explicit cases alone, as on a cold first run) still records every finding KNOWN."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from verify.kernels.contract import Kernel


def _kernels_with_finding_examples() -> list[str]:
    from verify.kernels.registry import get_kernel, kernel_names

    names = []
    for name in kernel_names():
        try:
            kernel = get_kernel(name)
        except Exception:  # a kernel whose module needs what this machine lacks: the gate skips it too
            continue
        if type(kernel).finding_examples is not Kernel.finding_examples:
            names.append(name)
    return names


def test_a_findings_case_is_the_same_on_every_call():
    """The case is built as Hypothesis's first draw, derandomized: the same bytes on every call, so
    a finding that shows on it shows on every run and machine."""
    from verify.kernels.registry import get_kernel

    kernel = get_kernel("dp4a.matmul")
    config = kernel.config({"acc": "f16"})
    first, again = (kernel.finding_examples("accumulator_range", config) for _ in range(2))
    assert len(first) == 1 and first[0].summary() == again[0].summary()
    assert all(np.array_equal(first[0][name], again[0][name], equal_nan=True) for name in first[0].arrays)
    # the kind of case the check's own strategy draws: running sums past f16's range
    assert first[0].params["peak_partial_sum"] > 65504
    assert kernel.finding_examples("accumulator_range", kernel.config({"acc": "f32"})) == []
    assert kernel.finding_examples("reference", config) == []


@pytest.mark.webgpu
def test_every_finding_with_its_own_cases_is_known_when_only_the_explicit_cases_run(tmp_path):
    """The ci gate with a budget spent at once (`--budget 0.001`: each check runs its finding cases
    and corners, no random example) over every kernel that gives finding cases: each record whose
    kernel documents a finding here and gives cases for its check and config is KNOWN. It does not
    depend on the machine's speed: the explicit cases always run in full."""
    from verify.kernels.registry import get_kernel

    kernels = _kernels_with_finding_examples()
    out = tmp_path / "gate"
    done = subprocess.run([sys.executable, "-m", "verify", "gate", "--profile", "ci", "--allow-skip", "--budget",
                           "0.001", "--kernels", ",".join(kernels), "--out", str(out)],
                          capture_output=True, text=True)
    assert (out / "results.json").exists(), done.stdout[-3000:] + done.stderr[-3000:]
    records = json.loads((out / "results.json").read_text())["records"]
    judged, not_known = 0, []
    for record in records:
        if record["verdict"] == "skip" or not record["finding"]:
            continue  # a finding of one implementation (wgpu's zero-init) is none on the other's records
        kernel = get_kernel(record["kernel"])
        if not kernel.finding_examples(record["check"], kernel.config(record["config"])):
            continue
        judged += 1
        if record["verdict"] != "known":
            not_known.append(f"{record['kernel']} {record['check']} {record['config']}: {record['verdict']} "
                             f"{record['reason'][:200]}")
    if not judged:
        pytest.skip("every kernel with finding cases was skipped here (no TVM, no ORT, no WebGPU adapter)")
    assert not not_known, "\n".join(not_known)
