"""`verify findings export` as a command: it says what it is doing (a line per finding with its
time, a heartbeat while one runs long), runs at most one Node process (Dawn, ORT) at a time and
leaves none behind, and writes the same bytes wherever and whenever it runs: a fresh export of a
finding equals its committed folder in reports/findings/, and the writer gives the same capture
the same bytes. What one run measured (the adapter, the worst elements, the sanitizer's first
witnesses) goes to OBSERVED.md, which is not committed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.export.routes import node_environment
from tests.export.test_export import merge
from verify.errors import SetupError
from verify.export import findings
from verify.export.capture import capture
from verify.export.findings import INDEX, OBSERVED, export_findings
from verify.export.write import Story, render, write_folder
from verify.kernels.registry import get_kernel

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "reports" / "findings"
#: A finding run on Dawn (a Node process per device, ORT's runtime in another) with a `fixed/`.
ON_DAWN = "ort-flash-carried-scores"
#: A cheap finding with a sanitizer run and a `fixed/`, whose folder is compared with the committed one.
CHEAP = "tvm-merge-race"
#: Cheap findings whose folders are compared with the committed ones: TVM's race, ORT's sums on
#: unzeroed workgroup memory and llama.cpp's reduce reading past its statistics (each with a
#: sanitizer run and a `fixed/`; ORT's outputs are whatever the memory held, and its sanitizer's
#: first witness follows the schedule; llama.cpp's program is instantiated from the shipped copy).
SAME_BYTES = (CHEAP, "ort-small-m-zero-init", "llamacpp-vec-reduce-reads-past-stats")


def _dawn_or_skip() -> None:
    if node_environment() is None:
        pytest.skip("needs Node, npm webgpu and Mesa 25 lavapipe (verify setup --dawn)")


# -- processes ---------------------------------------------------------------------------------------------------
def _started(pid: int) -> str | None:
    """The start time of live process `pid` (None where it is gone or a zombie): with the pid, an
    identity no later process reuses."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def _descendants(root: int) -> dict[int, tuple[str, str]]:
    """{pid: (start time, command line)} of every live process below `root`."""
    parents, found = {}, {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                started = _started(pid)
                try:
                    command = (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")).decode(errors="replace")
                except OSError:
                    continue
                if started is not None:
                    found[pid] = (started, command)
                    frontier.append(pid)
    return found


def _wait_for(predicate, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def test_the_export_runs_one_dawn_worker_at_a_time_and_leaves_none(tmp_path, monkeypatch):
    """Every Dawn worker the export starts is the only one alive when it starts (ORT's runner, one
    per process, at most once too), and no Node process is alive once the export returns. Before,
    each run opened a device of its own and left it open: 11-13 idle workers over the whole export."""
    _dawn_or_skip()
    from verify.gpu.dawn import process

    made, alive_at_start = [], []
    original = process.NodeProcess.__init__

    def counting(self, node, script, *args, **kwargs):
        alive = [Path(other.proc.args[-1]).name for other in made if other.proc.poll() is None]
        alive_at_start.append((Path(script).name, alive))
        original(self, node, script, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(process.NodeProcess, "__init__", counting)
    try:
        export_findings(tmp_path / "out", only=f"{ON_DAWN},ort-quantize-zero-block")
    except SetupError as exc:
        pytest.skip(f"the finding's kernel cannot be built here: {exc}")
    finally:
        left = [node for node in made if node.proc.poll() is None]
        for node in left:  # a failure here must not leave them to outlive the test either
            node.close()
    assert any(script == "worker.mjs" for script, _ in alive_at_start), "no Dawn worker started: nothing ran on Dawn"
    for script, alive in alive_at_start:
        assert script not in alive, f"{script} started while another was alive: {alive_at_start}"
    assert not left, f"{len(left)} Node process(es) alive after the export returned"


def test_the_command_says_what_it_does_and_leaves_no_process_behind(tmp_path):
    """`verify findings export --only ...`: a line as each finding starts and one with its time when
    it is done; every process it started (sampled while it runs) is gone when it exits, and no two
    Dawn workers were seen at once."""
    _dawn_or_skip()
    command = [sys.executable, "-m", "verify", "findings", "export", "--only", f"{CHEAP},{ON_DAWN}",
               "-o", str(tmp_path / "out")]
    run = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen, most = {}, 0
    while run.poll() is None:
        now = _descendants(run.pid)
        seen.update(now)
        most = max(most, sum("worker.mjs" in command for _, command in now.values()))
        time.sleep(0.05)
    stdout, stderr = run.communicate(timeout=60)
    assert run.returncode == 0, stderr
    assert any("worker.mjs" in command for _, command in seen.values()), "no Dawn worker was seen: nothing ran on Dawn"
    assert most == 1, f"{most} Dawn workers alive at once"
    assert _wait_for(lambda: not [pid for pid, (started, _) in seen.items() if _started(pid) == started]), \
        f"outlived the command: {[c for p, (s, c) in seen.items() if _started(p) == s]}"
    lines = stderr.splitlines()
    for number, (name, section) in enumerate([(CHEAP, "§2"), (ON_DAWN, "§18.2")], 1):
        assert f"...   {name} ({section}) ({number}/2)" in lines, stderr
        [done] = [line for line in lines if line.startswith(f"done  {name} ({section}) ")]
        seconds = done.split(f"({section}) ", 1)[1].split(" s: ", 1)[0]
        assert float(seconds) >= 0 and f": {tmp_path / 'out' / name}" in done, done


def test_a_long_finding_shows_a_heartbeat(tmp_path, monkeypatch):
    """While a finding runs, a line every `heartbeat_s` seconds says it still does: the fake build
    below returns only once one has come, so the test waits on the line, not on a clock."""
    said, beat = [], threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if "still running" in line:
            beat.set()

    def slow_build(finding, *, run, devices):
        assert beat.wait(60), "no heartbeat within 60 s"
        return {"ISSUE.md": "# slow\n"}, {"name": finding.name}, None

    monkeypatch.setattr(findings, "build", slow_build)
    export_findings(tmp_path / "out", only=CHEAP, say=say, heartbeat_s=0.01)
    assert said[0] == f"...   {CHEAP} (§2) (1/1)"
    beats = [line for line in said[1:-1]]
    assert beats and all(line.startswith(f"      {CHEAP}: still running, ") for line in beats), said
    assert said[-1].startswith(f"done  {CHEAP} (§2) ") and said[-1].endswith(f" s: {tmp_path / 'out' / CHEAP}"), said
    assert (tmp_path / "out" / CHEAP / "ISSUE.md").read_text() == "# slow\n"


# -- the same bytes ----------------------------------------------------------------------------------------------
def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _committed(folder: Path) -> set[str]:
    """The files git tracks under `folder`, relative to it."""
    listed = subprocess.run(["git", "ls-files", "-z", "--", str(folder.relative_to(ROOT))], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    return {str(Path(p).relative_to(folder.relative_to(ROOT))) for p in listed.split("\0") if p}


@pytest.mark.parametrize("name", SAME_BYTES)
def test_a_fresh_export_of_a_finding_is_its_committed_folder_byte_for_byte(exported, name):
    """The command, run here, writes the committed folder of a finding to the byte (its OBSERVED.md
    files, what this run measured, aside: those are not committed), and the same index entry."""
    fresh = _files(exported / name)
    observed = {OBSERVED, f"fixed/{OBSERVED}"}
    assert observed <= set(fresh), sorted(fresh)  # what this run measured is written ...
    committed = _committed(COMMITTED / name)
    assert not {p for p in committed if Path(p).name == OBSERVED}  # ... and never committed
    assert set(fresh) - observed == committed
    for file in sorted(committed):
        assert fresh[file] == (COMMITTED / name / file).read_bytes(), f"{name}/{file} differs from the committed one"
    [entry] = [e for e in json.loads((exported / INDEX).read_text())["findings"] if e["name"] == name]
    assert entry in json.loads((COMMITTED / INDEX).read_text())["findings"]


@pytest.fixture(scope="module")
def exported(tmp_path_factory) -> Path:
    """`verify findings export --only` of SAME_BYTES, run once, as a maintainer runs it."""
    pytest.importorskip("wgpu")
    _dawn_or_skip()  # ORT's programs are looked up through ONNX Runtime on Dawn
    out = tmp_path_factory.mktemp("same-bytes") / "out"
    done = subprocess.run([sys.executable, "-m", "verify", "findings", "export", "--only", ",".join(SAME_BYTES),
                           "-o", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return out


def test_the_committed_folders_hold_nothing_a_run_measured():
    """No committed file names the version of an adapter's driver (a run's, or where ORT's program was
    captured), nor is an OBSERVED.md; a .gitignore keeps those out."""
    assert OBSERVED in (COMMITTED / ".gitignore").read_text().split()
    for name in sorted(_committed(COMMITTED)):
        assert Path(name).name != OBSERVED, name
        if name.endswith((".md", ".json", ".html")):
            text = (COMMITTED / name).read_text()
            assert "(LLVM " not in text and "~bpo" not in text, name  # an adapter's or driver's version
    assert all("observed" not in entry for entry in json.loads((COMMITTED / INDEX).read_text())["findings"])


def test_the_writer_gives_the_same_capture_the_same_bytes(tmp_path):
    """One capture rendered and written twice, and a second capture of the same case, its story's
    config given in another key order: every file the same, byte for byte."""
    kernel = get_kernel("merge_state")
    config = kernel.config({"head_dim": 64, "dtype": "f32"})

    def story(config: dict) -> Story:
        return Story(title="t", detail=["d"], kernel=kernel.name, config=config, case=merge().summary(), budget="b",
                     expect={"verdict": "PASS", "text": "PASS.", "pass": "p", "fail": "f", "error": "e", "skip": "s"})

    first = capture(kernel, config, kernel.wgsl(config), merge())
    second = capture(kernel, config, kernel.wgsl(config), merge())
    reordered = dict(reversed(list(config.items())))
    assert list(reordered) != list(config)
    written = [write_folder(tmp_path / name, render(captured, story(shown)))
               for name, captured, shown in (("a", first, config), ("b", first, config), ("c", second, reordered))]
    a, b, c = (_files(folder) for folder in written)
    assert a == b == c and set(a) >= {"repro.html", "repro.json", "repro.py", "repro.mjs", "ISSUE.md", "kernel.wgsl"}
