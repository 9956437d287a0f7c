"""benchmarks/trace_workers.py: a traced gate's workers report the spans the gate's records leave out."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import trace_workers  # noqa: E402


def test_a_traced_gate_reports_each_workers_spans(tmp_path, capsys):
    out = tmp_path / "trace.json"
    assert trace_workers.main(["--step", "0.5", "--out", str(out), "--", "--profile", "ci", "--jobs", "1",
                               "--kernels", "rope", "--implementation", "wgpu", "--budget", "0.001"]) == 0
    found = json.loads(out.read_text())
    assert found["workers"] == 1 and found["worker_s"] > 0
    spans = found["spans"]
    # Every one of rope's checks ran once in the one worker, on a wgpu device it opened.
    assert spans["run_check"]["count"] == spans["load_kernel"]["count"] > 0
    assert spans["open wgpu"]["count"] >= 1 and spans["compile wgpu"]["count"] >= 1
    [row] = [line for line in capsys.readouterr().out.splitlines() if line.rstrip().endswith("|")]
    # The device open shows whatever its length (it wins where spans nest); every letter is a span's.
    assert "W" in row
    assert set(row.split("|")[1]) <= {".", " "} | {trace_workers.LETTERS[name] for name in spans
                                                   if name in trace_workers.LETTERS}


def test_the_timeline_marks_the_first_listed_of_nested_spans():
    worker = {"pid": 1, "started": 0.0, "ended": 3.0,
              "spans": [["run_check", 1.0, 3.0], ["compile wgpu", 1.0, 2.0]]}
    assert trace_workers.timeline([worker], 1.0) == ["       1 |.cR|"]


def test_a_span_shorter_than_a_step_still_shows():
    worker = {"pid": 2, "started": 0.0, "ended": 2.0,
              "spans": [["run_check", 0.2, 1.9], ["open wgpu", 1.3, 1.4]]}
    assert trace_workers.timeline([worker], 1.0) == ["       2 |RW|"]
