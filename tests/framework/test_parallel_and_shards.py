"""`--jobs N` gives the records of a serial run; `--shard K/N` splits the gate deterministically and
`verify report --strict` merges the shards, failing on a missing one."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

from verify.plan import gate_jobs, select_shard
from verify.profiles import get_profile
from verify.protocol import Job
from verify.session import _JobPicker, run_jobs

KERNELS = "merge_state,rope,dp4a.quantize"


def verify(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, timeout=timeout)


def comparable(path: Path) -> list[tuple]:
    """What a record says about the kernel (not when or how fast it ran)."""
    records = json.loads(path.read_text())["records"]
    return [(r["kernel"], r["check"], json.dumps(r["config"], sort_keys=True), r["verdict"], r["examples"], r["runs"],
             (r["worst"] or {}).get("score"), (r["worst"] or {}).get("case")) for r in records]


@pytest.mark.webgpu
def test_parallel_workers_give_the_records_of_a_serial_run_in_plan_order(tmp_path):
    serial = verify("gate", "--profile", "quick", "--kernels", KERNELS, "--out", str(tmp_path / "serial"), "-j", "1")
    parallel = verify("gate", "--profile", "quick", "--kernels", KERNELS, "--out", str(tmp_path / "parallel"), "-j", "3")
    assert serial.returncode == parallel.returncode == 0, parallel.stderr
    assert comparable(tmp_path / "serial" / "results.json") == comparable(tmp_path / "parallel" / "results.json")
    assert (tmp_path / "parallel" / "worker-2.log").exists()


@pytest.mark.webgpu
def test_workers_start_their_next_jobs_while_records_are_written(tmp_path):
    """The results file is rewritten whole for each batch of records; the workers must not wait
    for it. Here writing the first batch blocks until every job has started: with the workers
    waiting on the recording, that could never happen, and the wait would end at its timeout."""
    jobs, _ = gate_jobs(["merge_state"], profile=get_profile("quick"), seed=0, out_dir=None, time_limit=None)
    jobs = jobs[:4]
    started, recorded, waits = [], [], []
    all_started = threading.Event()

    def on_start(job):
        started.append(job.id)
        if len(started) == len(jobs):
            all_started.set()

    def on_record(record):
        recorded.append((record.job_id, threading.current_thread() is threading.main_thread()))

    def on_batch():
        if not waits:
            waits.append(all_started.wait(timeout=300))

    run_jobs(jobs, on_record=on_record, on_start=on_start, on_batch=on_batch,
             log_path=tmp_path / "worker.log", workers=2)
    assert waits == [True]
    assert sorted(job_id for job_id, _ in recorded) == sorted(job.id for job in jobs)
    assert all(in_main for _, in_main in recorded)


def _job(id, check="reference", config=None, implementation="wgpu", width=None, slice=None):
    return Job(id, "tvm.prefill", "verify.sources.tvm.attention.prefill:TvmPrefill", config or {"head_dim": 64}, check, 10, 0,
               implementation=implementation, subgroup_width=width, slice=slice)


def test_a_job_waits_while_another_of_its_config_compiles_if_another_can_go():
    """Two checks of one config started at once both compile its pipelines on a cold shader cache;
    the picker starts another config's job instead, and the held one as soon as the first has run
    an example (its pipelines are then in the driver's cache)."""
    reference, determinism, dawn = _job(0), _job(1, "determinism"), _job(2, implementation="dawn")
    slice_two, other = _job(3, slice=(2, 2)), _job(4, config={"head_dim": 128})
    sanitize, narrow = _job(5, "sanitize"), _job(6, width=4)
    picker = _JobPicker([reference, determinism, dawn, slice_two, other, sanitize, narrow])
    assert picker.take() is reference
    # The same pipelines: another check, another implementation (the `implementations` check runs
    # on both), another slice. Another config, the sanitizer's own module, another width: not.
    assert [picker.take() for _ in range(3)] == [other, sanitize, narrow]
    progress = []
    picker.progressed(lambda *args: progress.append(args))(reference, 1, 10)
    assert progress == [(reference, 1, 10)]
    assert [picker.take() for _ in range(3)] == [determinism, dawn, slice_two]
    assert picker.take() is None


def test_no_worker_waits_for_a_held_job():
    """When every job left belongs to a group still compiling, the first of them goes; a job
    ending (also without an example: a skip, a crash) releases its group once."""
    a1, a2, a3 = _job(0), _job(1, "determinism"), _job(2, "page_permutation")
    b1, b2 = _job(3, config={"head_dim": 128}), _job(4, "determinism", config={"head_dim": 128})
    picker = _JobPicker([a1, a2, a3, b1, b2])
    assert [picker.take(), picker.take(), picker.take()] == [a1, b1, a2]  # a2: every job left was held
    picker.compiled(a1)
    picker.compiled(a1)  # told twice: counted once, so a2 still holds its group
    picker.compiled(b1)
    assert picker.take() is b2
    picker.compiled(a2)
    assert picker.take() is a3
    assert picker.take() is None


def test_a_check_whose_worker_opens_a_costly_state_goes_to_few_workers():
    """The toggles check's Dawn devices (Check.worker_state) are opened by at most a quarter of
    the workers: the others take other jobs while there are any, then the toggles jobs left."""
    toggles = [_job(i, "toggles", config={"head_dim": 64 + i}) for i in range(4)]
    plain = [_job(10 + i, config={"head_dim": 256 + i}) for i in range(2)]
    picker = _JobPicker([*toggles, *plain], workers=8)  # at most 2 of the 8 workers open it
    assert [picker.take(worker) for worker in (0, 1, 2, 3)] == [toggles[0], toggles[1], *plain]
    assert picker.take(0) is toggles[2]  # a worker that has it open takes the next
    assert picker.take(5) is toggles[3]  # nothing else is left: any worker takes it
    assert picker.take(6) is None
    single = _JobPicker(toggles[:2] + plain[:1], workers=2)  # two workers: one opens it
    assert [single.take(0), single.take(1), single.take(1)] == [toggles[0], plain[0], toggles[1]]


def test_a_worker_takes_a_job_it_has_set_up_for_within_the_next_few():
    """Of the next `workers` jobs, a worker takes one of a config it has run (WGSL parsed,
    pipelines compiled in its process), else one whose device it has open, else the next; under a
    budget the random parts keep their order."""
    a_reference, b_reference = _job(0, config={"head_dim": 64}), _job(1, config={"head_dim": 128})
    c_reference, a_determinism = _job(2, config={"head_dim": 96}), _job(3, "determinism", config={"head_dim": 64})
    picker = _JobPicker([a_reference, b_reference, c_reference, a_determinism], workers=4)
    assert [picker.take(0), picker.take(1)] == [a_reference, b_reference]
    picker.compiled(a_reference)
    assert picker.take(0) is a_determinism  # its config, before c_reference
    assert picker.take(2) is c_reference
    # Two sanitize jobs and a plain one of other configs: the worker with the sanitizer's device
    # open takes a sanitize job first.
    plain, sanitized = _job(10, config={"head_dim": 64}), _job(11, "sanitize", config={"head_dim": 64})
    later_plain, later_sanitized = _job(12, config={"head_dim": 128}), _job(13, "sanitize", config={"head_dim": 96})
    picker = _JobPicker([sanitized, plain, later_plain, later_sanitized], workers=4)
    assert [picker.take(0), picker.take(1)] == [sanitized, plain]
    assert picker.take(0) is later_sanitized
    # A budget's random parts go in plan order whoever asks.
    parts = [replace(_job(20 + i, config={"head_dim": 64 + i}), part="random", slice=(1, 2)) for i in range(3)]
    budgeted = _JobPicker([parts[0], parts[1], parts[2]], deadline=time.monotonic() + 3600, workers=4)
    assert budgeted.take(0) is parts[0]
    budgeted.compiled(parts[0])
    same_config = replace(parts[0], id=30, check="determinism")
    budgeted = _JobPicker([parts[0], parts[1], same_config], deadline=time.monotonic() + 3600, workers=4)
    assert budgeted.take(0) is parts[0]
    budgeted.compiled(parts[0])
    assert budgeted.take(0) is parts[1]


def test_shards_partition_the_plan_and_are_the_same_everywhere():
    jobs, _ = gate_jobs(None, profile=get_profile("ci"), seed=0, out_dir=None, time_limit=None)
    key = lambda job: (job.kernel, job.check, json.dumps(job.config, sort_keys=True))  # noqa: E731
    shards = [[key(j) for j in select_shard(jobs, k, 4)] for k in range(1, 5)]
    assert sorted(k for shard in shards for k in shard) == sorted(key(j) for j in jobs)
    assert max(map(len, shards)) - min(map(len, shards)) <= 1
    again, _ = gate_jobs(None, profile=get_profile("ci"), seed=0, out_dir=None, time_limit=None)
    assert [key(j) for j in select_shard(again, 2, 4)] == shards[1]
    kernels_per_shard = [{k[0] for k in shard} for shard in shards]
    assert all(len(kernels) > 1 for kernels in kernels_per_shard)


@pytest.mark.webgpu
def test_merging_shards_flags_a_missing_one_and_strict_fails_on_it(tmp_path):
    outs = []
    for k in (1, 2, 3):
        out = tmp_path / f"shard{k}"
        result = verify("gate", "--profile", "quick", "--kernels", KERNELS, "--shard", f"{k}/3", "--out", str(out))
        assert result.returncode == 0, result.stderr
        document = json.loads((out / "results.json").read_text())
        assert document["shard"] == f"{k}/3" and document["planned"] > len(document["records"])
        outs.append(out / "results.json")
    full = verify("report", *map(str, outs), "-o", str(tmp_path / "all.html"), "--strict")
    assert full.returncode == 0, full.stderr
    partial = verify("report", str(outs[0]), str(outs[2]), "-o", str(tmp_path / "some.html"), "--strict")
    assert partial.returncode == 1 and "shard 2/3 of the gate split 3 ways is missing" in partial.stderr
    assert "shard 2/3 of the gate split 3 ways is missing" in (tmp_path / "some.html").read_text()
    lenient = verify("report", str(outs[0]), str(outs[2]), "-o", str(tmp_path / "some.html"))
    assert lenient.returncode == 0


def test_strict_fails_on_a_failing_record(tmp_path):
    from tests.report.synthetic import FAILING

    result = verify("report", str(FAILING), "-o", str(tmp_path / "r.html"), "--strict")
    assert result.returncode == 1 and "failed or errored" in result.stderr


@pytest.mark.parametrize("shard", ["0/3", "4/3", "two/3", "1"])
def test_a_bad_shard_is_a_usage_error(shard):
    result = verify("gate", "--shard", shard)
    assert result.returncode == 2 and "K/N" in result.stderr or "1 <= K <= N" in result.stderr
