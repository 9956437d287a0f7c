"""Every host-side launch path is reachable by the cases, and the run says which ones it took:
grids that wrap or pack at small sizes, both branches of the decode switch, TVM's arrays bound as
views of one buffer at offsets."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from verify.sources.tvm.attention.decode import PACK_LIMIT, web_runtime_grid


def paths(tmp_path, kernel: str, *args) -> dict:
    out = tmp_path / kernel
    result = subprocess.run([sys.executable, "-m", "verify", "check", kernel, "--profile", "quick", "--checks", "reference",
                             "--out", str(out), *args], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr
    [record] = json.loads((out / "results.json").read_text())["records"]
    return record["launch_paths"]


@pytest.mark.webgpu
def test_the_quick_cases_of_the_decode_switch_take_both_branches(tmp_path):
    taken = paths(tmp_path, "decode", "--examples", "24", "--config", "head_dim=64,qo_heads=8,kv_heads=2,dtype=f32")
    assert taken.get("tiled", 0) > 0 and taken.get("sharded", 0) > 0, taken


@pytest.mark.webgpu
@pytest.mark.parametrize("kernel", ["merge_state", "rope", "dp4a.quantize"])
def test_small_cases_also_take_the_wrapped_grid(tmp_path, kernel):
    taken = paths(tmp_path, kernel, "--examples", "30")
    assert taken.get("flat grid", 0) > 0 and taken.get("grid wrapped into y", 0) > 0, taken


@pytest.mark.webgpu
def test_tvm_decode_runs_with_its_arrays_as_views_at_offsets(tmp_path):
    pytest.importorskip("tvm", reason="apache-tvm is not installed (import tvm failed)")
    taken = paths(tmp_path, "tvm.decode", "--examples", "20", "--config", "head_dim=64,qo_heads=8,kv_heads=8,dtype=f32")
    assert taken.get("arrays as views of one buffer, at offsets", 0) > 0, taken
    assert taken.get("one buffer per array, offset 0", 0) > 0, taken


def test_the_web_runtime_packs_a_grid_at_its_limit_whatever_the_limit():
    assert web_runtime_grid(65537, 4) == ((32769, 4, 2), 65537)
    assert web_runtime_grid(65537, 4, PACK_LIMIT) == web_runtime_grid(65537, 4)
    assert web_runtime_grid(3, 1, limit=2) == ((1, 1, 4), 3)
    assert web_runtime_grid(1, 1, limit=2) == ((1, 1, 1), 1)
    with pytest.raises(ValueError, match="never brings x below 2"):
        web_runtime_grid(3, 1, limit=1)


def test_the_report_lists_the_launch_paths_per_kernel(tmp_path):
    from verify.report.model import launch_coverage
    from verify.results.record import CheckResult, Verdict

    class View:
        def __init__(self, record):
            self.record = record

    records = [CheckResult("decode", "reference", {}, Verdict.PASS, launch_paths={"tiled": 3, "sharded": 1}),
               CheckResult("decode", "determinism", {}, Verdict.PASS, launch_paths={"tiled": 2}),
               CheckResult("merge_state", "reference", {}, Verdict.PASS)]
    assert launch_coverage([View(r) for r in records]) == [("decode", [("sharded", 1), ("tiled", 5)])]
