"""A dispatch whose access log does not fit the largest log the device can bind, analysed in passes
of whole workgroups (docs/instrumentation.md §2, "When the log does not fit").

The log is one storage binding, so its room is bounded by the adapter (maxStorageBufferBindingSize:
128 MiB on lavapipe, about 5.6 million accesses), and a dispatch of many heads logs more (TVM's
prefill at 32 query heads: 7.2 million). The sanitizer must not fail a kernel for that, nor pass
it on a part of its log. So the dispatch is run again, as it was, once per pass, and each pass's
log holds the records of one range of workgroups only (sanitize_log.wgsl: `first_group`,
`groups`); the number of passes follows from the access count of the run that overflowed (the
counter counts every record asked for), and a pass that still overflows is split again.

Why that finds what one log of the whole dispatch would (given a kernel whose accesses, for one
case and the same inputs, are the same in every run; each pass uploads the same buffers):
  - every record belongs to one workgroup, and every workgroup's records are in exactly one
    pass, whole: the rules within a workgroup (races in an epoch, unsynchronised accesses,
    uninitialised reads), out-of-bounds accesses and loops see all of its rows;
  - the rule between workgroups needs every storage row of the dispatch, whichever pass logged
    it: those are all kept across passes (verify.instrument.bearing sets aside only reads of
    workgroup memory), so a race between workgroups of different passes is found as in one log;
  - what each pass sets aside (bearing) is decided by its own workgroups' rows alone, and the
    granule of each variable (shadow._units), which depends on the whole dispatch, is gathered
    over all passes (shadow.UnitFacts) and used for the analysis of what they kept.
The records the passes kept are then analysed once, as one log: the same findings, addresses
counted and quotes, except which of several equivalent accesses a finding quotes where it picks
the first in log order, which is the adapter's order of appending in any case. The passes' counts
must add up to the overflowing run's; where they do not, the kernel's accesses changed between
runs and the passes cannot be put together: that, like one workgroup that alone logs more than
the room, is verify's limit (SanitizerLogLimit), never a finding.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np

from verify.errors import VerifyLimit
from verify.instrument.bearing import bearing
from verify.instrument.findings import SanitizerReport
from verify.instrument.sanitize import Sanitized
from verify.instrument.shadow import (
    OUT_OF_BOUNDS,
    RECORD_WORDS,
    UNBOUNDED_LOOP,
    SiteTables,
    UnitFacts,
    access_rows,
    analyze_records,
    read_log,
)

#: A pass is planned to fill at most this share of the log's room: workgroups log unequal numbers
#: of accesses (under a causal mask the first rows' workgroups log less), and a planned pass that
#: overflows anyway costs a dispatch before it is split again.
PLANNED_FILL = 0.75


class SanitizerLogLimit(VerifyLimit):
    """verify's limit, not the kernel's: one workgroup alone logs more accesses than the largest
    log the device can bind, or the kernel's accesses changed between the passes of a dispatch run
    in several. The dispatch cannot be analysed here, so there is no verdict on it: the sanitize
    check's record is an ERROR naming this, never a FAIL of the kernel."""


class PassedLog:
    """The records of a dispatch's passes, each pass reduced to the records that can bear on a
    finding (bearing, decided per workgroup, so per pass), and what decides the granules of the
    whole dispatch; `analyze` then analyses what was kept as one log."""

    def __init__(self, sanitized: Sanitized):
        self.tables = SiteTables(sanitized)
        self.facts = UnitFacts(self.tables)
        self.kept: list[np.ndarray] = []
        self.logged = 0

    def add(self, records: np.ndarray) -> None:
        """One pass's records (whole workgroups)."""
        self.logged += len(records)
        flagged = (records[:, 0] & np.uint32(UNBOUNDED_LOOP | OUT_OF_BOUNDS)) != 0  # loops and out of bounds: kept
        inside = np.flatnonzero(~flagged)
        accesses = records[inside]
        self.facts.add(accesses)
        rows, _ = access_rows(accesses, self.tables)
        keep = bearing(rows, self.tables)
        if keep is None:
            self.kept.append(np.array(records))  # a copy: the pass's log buffer is not kept alive
            return
        wanted = flagged.copy()
        wanted[inside[rows["order"][keep]]] = True  # a record is kept if any of its granules is
        self.kept.append(records[wanted])

    def analyze(self, report: SanitizerReport, accesses: int) -> SanitizerReport:
        """Add the findings of the dispatch (which logged `accesses` in all) to `report`."""
        report.dispatches += 1
        report.accesses += accesses
        records = np.concatenate(self.kept) if self.kept else np.zeros((0, RECORD_WORDS), dtype=np.uint32)
        return analyze_records(records, self.tables, report, self.facts.units())


def run_in_passes(dispatch, groups: int, accesses: int, capacity: int, sanitized: Sanitized,
                  report: SanitizerReport, room: str) -> list:
    """Analyse a dispatch of `groups` workgroups that logged `accesses` records, more than a log of
    `capacity` records holds, in passes: `dispatch(first, count)` runs it with a log of `capacity`
    records that workgroups first .. first + count - 1 write to, and returns (the log's words,
    anything: the device gives the run's Timing). Adds the findings to `report` and returns what
    each run gave besides its log. `room` says what bounds the log (for SanitizerLogLimit's message)."""
    # Records of workgroups outside the pass land in the last slot: a pass has room for one fewer.
    usable = capacity - 1
    if groups == 1:  # the run that overflowed was the one workgroup's
        raise _alone(0, accesses, usable, room)
    log = PassedLog(sanitized)
    pending = deque(_ranges(0, groups, accesses, usable))
    ran = []
    while pending:
        first, count = pending.popleft()
        words, what = dispatch(first, count)
        ran.append(what)
        records, attempted, _ = read_log(words)
        if attempted <= usable:
            log.add(records)
        elif count == 1:
            raise _alone(first, attempted, usable, room)
        else:
            pending.extendleft(reversed(_ranges(first, count, attempted, usable)))
    if log.logged != accesses:
        raise SanitizerLogLimit(
            f"verify's limit, not a finding: the dispatch logs {accesses:,} accesses, more than the sanitizer's log "
            f"holds ({room}), and run again in passes of whole workgroups it logged {log.logged:,}: its accesses "
            "change from run to run of the same case, so the passes cannot be put together into one log")
    log.analyze(report, accesses)
    return ran


def _alone(group: int, accesses: int, usable: int, room: str) -> SanitizerLogLimit:
    return SanitizerLogLimit(
        f"verify's limit, not a finding: workgroup {group} of this dispatch alone logs {accesses:,} accesses, "
        f"and the sanitizer's log has room for {usable:,} ({room}); the sanitizer cannot analyse this case on "
        "this device, so there is no verdict on it")


def _ranges(first: int, count: int, accesses: int, usable: int) -> list[tuple[int, int]]:
    """Workgroups first .. first + count - 1 (count > 1; they logged `accesses`) in at least two
    ranges of nearly equal numbers of workgroups, enough of them for each to fill PLANNED_FILL of
    the room if every workgroup logged alike."""
    parts = min(count, max(2, math.ceil(accesses / max(1.0, usable * PLANNED_FILL))))
    bounds = [first + count * k // parts for k in range(parts + 1)]
    return [(low, high - low) for low, high in zip(bounds, bounds[1:])]
