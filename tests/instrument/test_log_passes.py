"""A dispatch whose log does not fit the largest log the device binds is analysed in passes of whole
workgroups (verify.instrument.passes): the findings are those of one log of the whole dispatch,
races between workgroups of different passes included, and a workgroup that alone overflows the
log is verify's limit (an ERROR of the check), never a finding or a FAIL of the kernel."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from tests.instrument.test_shadow import COMPONENT_WRITE, QUAD_WRITE, SITES, sanitized, tiled_log
from verify.gpu import Output
from verify.instrument import LogTruncated, Race, SanitizingDevice
from verify.instrument.passes import SanitizerLogLimit, run_in_passes
from verify.instrument.sanitize import AccessKind, Site
from verify.instrument.shadow import ALL_GROUPS, HEADER_WORDS, LANE_SHIFT, RECORD_WORDS, analyze, new_log
from verify.results.record import Verdict

WGSL = Path(__file__).resolve().parent / "wgsl"
GRID = (4, 2, 1)  # 8 workgroups, linear ids x + 4 y
ROOM = 3000  # records: the fixture logs about 10,000


# -- the passes on synthetic logs (no device) -----------------------------------------------------
#: test_shadow's sites and one more: a read of one component of `quads`, which is otherwise read
#: and written in whole vectors. Where a log holds one, `quads` is tracked in scalars, else in vec4s.
COMPONENT_READ = len(SITES)
SANITIZED = replace(sanitized(), sites=sanitized().sites + (
    Site(COMPONENT_READ, "quads", "workgroup", AccessKind.READ, 1, 10 + COMPONENT_READ, 1, "line", "quads[i].y", True),))


def records_of(words: np.ndarray) -> np.ndarray:
    count = int(words[0])
    return words[HEADER_WORDS:HEADER_WORDS + RECORD_WORDS * count].reshape(count, RECORD_WORDS).copy()


def many_workgroups(rng: np.random.Generator) -> np.ndarray:
    """A log of 3 to 8 random tiled logs' workgroups, renumbered apart (each with its own slips and
    barriers, some skipped by some invocations) and in workgroup order (so that the passes,
    concatenated, are in the log's own order), with storage written across them; in half of them
    `quads` is written in whole vectors only (so its granule is decided by component_reads)."""
    parts, base = [], 0
    for _ in range(int(rng.integers(3, 9))):
        records = records_of(tiled_log(rng, clean=rng.random() < 0.25))
        records = np.concatenate([records, component_reads(records, rng)])
        records[:, 1] += base
        base = int(records[:, 1].max()) + 1 if len(records) else base
        parts.append(records)
    records = np.concatenate(parts)
    if rng.random() < 0.5:
        records = records[(records[:, 0] & 0xFFFFF) != COMPONENT_WRITE]
    return records[np.argsort(records[:, 1], kind="stable")]


def component_reads(records: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Now and then, a read of the second component of a vector of `quads` its workgroup wrote
    whole in the epoch before (initialised, in no group with a write: the pass sets it aside, and
    only what the passes gather of the whole dispatch says `quads` is tracked in scalars)."""
    site = records[:, 0] & 0xFFFFF
    reads = []
    for row in records[site == QUAD_WRITE]:
        later = records[(records[:, 1] == row[1]) & (records[:, 2] == row[2] + 1) & (site <= 1)]  # tile, same barriers
        if len(later) and rng.random() < 0.3:
            reads.append([COMPONENT_READ | int(rng.integers(0, 8)) << LANE_SHIFT, row[1], row[2] + 1, later[0][3],
                          row[4] + 1, 0])
    return np.array(reads, dtype=np.uint32).reshape(-1, RECORD_WORDS)


class Emulated:
    """`dispatch(first, count)` as the device runs it (sanitize_log.wgsl): a log of `capacity`
    slots that the workgroups first .. first + count - 1 append to, counting every record they ask
    for; the last slot takes every record past the room and every other workgroup's (here a write
    to out[0] by a workgroup of its own, which would race if it were ever read)."""

    def __init__(self, records: np.ndarray, capacity: int, drop: int = 0):
        self.records, self.capacity, self.drop, self.passes = records, capacity, drop, []

    def __call__(self, first: int, count: int):
        group = self.records[:, 1]
        mine = self.records[(group >= first) & (group < first + count)]
        if self.drop and self.passes:  # a kernel whose later passes log fewer accesses
            mine = mine[self.drop:]
        self.passes.append((first, count, len(mine)))
        words = new_log(self.capacity, first, count)
        words[0] = len(mine)
        slots = words[HEADER_WORDS:].reshape(self.capacity, RECORD_WORDS)
        slots[:min(len(mine), self.capacity)] = mine[:self.capacity]
        slots[-1] = [2 | 5 << LANE_SHIFT, 10_000, 0, 0, 0, 12345]
        return words, None


def in_passes(records: np.ndarray, capacity: int, drop: int = 0):
    """(report, passes run, which pass logged each workgroup) of `records` analysed in passes."""
    from verify.instrument.findings import SanitizerReport

    dispatch, report = Emulated(records, capacity, drop), SanitizerReport()
    groups = int(records[:, 1].max()) + 1
    run_in_passes(dispatch, groups, len(records), capacity, SANITIZED, report, "capped for the test")
    logged = [(first, count) for first, count, n in dispatch.passes if n < capacity]
    pass_of = {g: k for k, (first, count) in enumerate(logged) for g in range(first, first + count)}
    return report, dispatch.passes, pass_of


def whole(records: np.ndarray):
    words = new_log(len(records))
    words[0] = len(records)
    words[HEADER_WORDS:] = records.ravel()
    return analyze(words, SANITIZED)


def test_passes_of_whole_workgroups_find_what_one_log_finds():
    """On random logs of several workgroups, each a tiled kernel's with or without slips, the
    analysis of the passes is the analysis of one log, message for message (addresses, counts and
    quotes), races between workgroups of different passes included; the room of each log's passes
    is drawn between its largest workgroup's records and half the log, so some planned passes
    overflow and are split again, and some passes set reads aside while others keep all theirs."""
    rng = np.random.default_rng(11)
    across, split_again, compared = 0, 0, 0
    for _ in range(150):
        records = many_workgroups(rng)
        largest = int(np.bincount(records[:, 1]).max())  # the most records of one workgroup
        capacity = int(rng.integers(largest + 1, max(largest + 2, len(records) // 2)))
        expected = whole(records)
        report, passes, pass_of = in_passes(records, capacity)
        assert report.messages() == expected.messages()
        assert [n.message() for n in report.notes] == [n.message() for n in expected.notes]
        assert (report.accesses, report.dispatches) == (len(records), 1) and not report.of_type(LogTruncated)
        assert sorted(pass_of) == list(range(int(records[:, 1].max()) + 1))  # every workgroup in one pass
        compared += bool(expected.findings)
        split_again += any(n >= capacity for _, _, n in passes)
        across += any(f.ordering == "workgroups" and pass_of[f.first.group] != pass_of[f.second.group]
                      for f in report.findings + report.notes if isinstance(f, Race))
    assert compared > 100 and across > 30 and split_again > 30  # the comparison is not vacuous


def test_passes_that_log_other_accesses_than_the_dispatch_are_verifys_limit():
    records = many_workgroups(np.random.default_rng(3))
    with pytest.raises(SanitizerLogLimit, match="verify's limit, not a finding: .* change from run to run"):
        in_passes(records, capacity=len(records) // 3, drop=1)


# -- on the device ----------------------------------------------------------------------------------
class Recording:
    """A device that notes which workgroups each run's log was for (its header)."""

    def __init__(self, device):
        self.device, self.logs = device, []

    def __getattr__(self, name):
        return getattr(self.device, name)

    def run(self, pipeline, resources, workgroups, **kwargs):
        log = resources.get("_san_log")
        if log is not None:
            self.logs.append((int(log.array[1]), int(log.array[2])))
        return self.device.run(pipeline, resources, workgroups, **kwargs)


def sanitized_run(webgpu_device, **kwargs):
    """(report, the logs' (first workgroup, workgroups)) of the fixture's dispatch, sanitized."""
    device = Recording(webgpu_device)
    sanitizing = SanitizingDevice(device, **kwargs)
    pipeline = sanitizing.pipeline((WGSL / "split_log.wgsl").read_text())
    resources = {"input": np.arange(64 * 8, dtype=np.float32), "out": Output(np.float32, (64 + 64 * 8,))}
    sanitizing.run(pipeline, resources, GRID)
    return sanitizing.take_report(), device.logs


@pytest.mark.webgpu
def test_a_dispatch_over_the_logs_room_is_analysed_in_passes_with_the_findings_of_one_log(webgpu_device):
    expected, logs = sanitized_run(webgpu_device)
    assert logs == [(0, ALL_GROUPS)] and expected.accesses > 3 * ROOM  # one log held it all
    report, logs = sanitized_run(webgpu_device, max_records=ROOM)
    assert not report.of_type(LogTruncated) and report.accesses == expected.accesses
    assert report.messages() == expected.messages()
    assert [n.message() for n in report.notes] == [n.message() for n in expected.notes]
    races = {(f.variable, f.ordering) for f in report.findings if isinstance(f, Race)}
    assert races == {("tile", "epoch"), ("quads", "epoch"), ("out", "workgroups")}
    [between] = [f for f in report.findings if f.ordering == "workgroups"]
    assert {between.first.group, between.second.group} == {0, 7}
    [quads] = [f for f in report.findings if f.variable == "quads"]
    assert quads.address == "[0].x" and quads.addresses == 4 * 8  # in scalars (in vec4s: "[0]", 8): wg 7 reads .y
    # The first run overflowed the room; then passes, each of whole workgroups, 0 and 7 apart.
    assert logs[0] == (0, ALL_GROUPS)
    passes = logs[1:]
    assert len(passes) >= 3 and sorted(g for first, n in passes for g in range(first, first + n)) == list(range(8))
    assert next(k for k, (f, n) in enumerate(passes) if f == 0) != next(k for k, (f, n) in enumerate(passes)
                                                                      if f <= 7 < f + n)


@pytest.mark.webgpu
def test_a_workgroup_that_alone_overflows_the_log_is_verifys_limit(webgpu_device):
    with pytest.raises(SanitizerLogLimit, match=r"verify's limit, not a finding: workgroup 0 of this dispatch alone "
                                                r"logs 1,\d{3} accesses, and the sanitizer's log has room for 499 "
                                                r"\(capped at 500 records for testing"):
        sanitized_run(webgpu_device, max_records=500)


@pytest.mark.webgpu
def test_the_sanitize_check_records_verifys_limit_as_an_error_not_a_failure(webgpu_device, monkeypatch):
    """merge_state's workgroups each log more than a log of 2 records holds: the check cannot be
    carried out, and says so; the kernel is not failed (and the check stops at the first case)."""
    from verify.checks import get_check
    from verify.errors import FailureKind
    from verify.checks.context import CheckContext
    from verify.checks.runner import RunOptions, run_check
    from verify.instrument.devices import LOG_ROOM_VARIABLE
    from verify.kernels.registry import get_kernel
    from verify.profiles import get_profile

    monkeypatch.setenv(LOG_ROOM_VARIABLE, "2")
    kernel = get_kernel("merge_state")
    config = kernel.config({})
    device = Recording(webgpu_device)
    ctx = CheckContext(kernel, config, device, kernel.wgsl(config), get_profile("quick"))
    result = run_check(get_check("sanitize"), ctx, RunOptions(4, seed=0)).result
    assert result.verdict is Verdict.ERROR and result.verdict is not Verdict.FAIL
    assert "verify's limit, not a finding: workgroup 0" in result.reason and "capped at 2 records" in result.reason
    assert "the kernel's own code" not in result.reason and "internal error" not in result.reason
    assert result.failure_kind is FailureKind.VERIFY_LIMIT
    # The first case's run: the whole dispatch, then (where it has several workgroups, as the
    # kernel's first corner does) its first workgroup alone, which overflowed the log too;
    # Hypothesis's further tries ended at once, with no dispatch.
    assert device.logs in ([(0, ALL_GROUPS)], [(0, ALL_GROUPS), (0, 1)]), device.logs
    assert result.runs >= 1
