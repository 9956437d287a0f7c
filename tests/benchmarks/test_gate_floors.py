"""benchmarks/gate_floors.py: the least wall time a gate's measured work allows on its cores."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gate_floors.py"


def _gate(path: Path, cpu_s: list[float], cpus: int | None = 2, kernels: dict | None = None) -> Path:
    data = {"runs": [{"run": f"r{i}", "wall_s": cpu / 2 + 1, "cpu_s": cpu} for i, cpu in enumerate(cpu_s)]}
    if cpus is not None:
        data["cpus"] = cpus
    if kernels is not None:
        data["kernels"] = kernels
    path.write_text(json.dumps(data))
    return path


def _floors(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, timeout=60)


def test_floors_are_the_work_over_the_cores(tmp_path):
    """CPU floor: the cheapest run's CPU over the cores; kernels: examples x GPU-stage ms over the
    cores (generation and reference are not the kernels' time); compile: cold CPU beyond warm."""
    kernels = {"a [wgpu]": {"examples": 100, "ms_per_case": {"upload": 1.0, "dispatch": 8.0, "readback": 1.0,
                                                            "generation": 50.0, "reference": 50.0}},
               "b [dawn]": {"examples": 200, "ms_per_case": {"upload": 0.0, "dispatch": 10.0, "readback": 0.0}}}
    warm = _gate(tmp_path / "warm.json", [700.0, 600.0], kernels=kernels)
    cold = _gate(tmp_path / "cold.json", [2000.0])
    done = _floors(warm, "--cold", cold, "--goal", 180, "--cold-goal", 600, "--out", tmp_path / "f.json")
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "f.json").read_text())
    assert result["floor_s"] == {"cpu": 300.0, "kernels": 1.5}
    assert result["kernel_s"] == {"dawn": 2.0, "wgpu": 1.0}
    assert result["cold"]["floor_s"] == {"cpu": 1000.0, "compile": 700.0}
    assert "warm floor from cpu         300.0 s  above the 180 s goal" in done.stdout
    assert "warm floor from kernels       1.5 s  within the 180 s goal" in done.stdout
    assert "cold floor from compile     700.0 s  above the 600 s goal" in done.stdout


def test_on_a_real_gpu_kernel_time_is_no_floor(tmp_path):
    kernels = {"a [wgpu]": {"examples": 10, "ms_per_case": {"dispatch": 5.0}}}
    done = _floors(_gate(tmp_path / "g.json", [320.0], cpus=None, kernels=kernels), "--cores", 16, "--gpu",
                   "--out", tmp_path / "f.json")
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "f.json").read_text())["floor_s"] == {"cpu": 20.0}


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "other.json").write_text(json.dumps({"rows": []}))
    for args in ([tmp_path / "missing.json"], [tmp_path / "other.json"],
                 [_gate(tmp_path / "no_cores.json", [10.0], cpus=None)]):
        done = _floors(*args)
        assert done.returncode == 2
        assert done.stderr.count("\n") == 1 and done.stderr.startswith("gate_floors: "), done.stderr
