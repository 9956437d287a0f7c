"""The log analysis applies WGSL's ordering rules to what happened, record by record: synthetic
logs pin the cases a kernel author could get wrong (and the analysis too)."""

from __future__ import annotations

import numpy as np

from verify.instrument.findings import LogTruncated, OutOfBounds, Race, RedundantWrites, UninitializedRead
from verify.instrument.sanitize import AccessKind, Sanitized, Site
from verify.instrument.shadow import HEADER_WORDS, LANE_SHIFT, OUT_OF_BOUNDS, RECORD_WORDS, analyze
from verify.wgsl.types import Array, ModuleVar, Scalar, Vector

F32 = Scalar("f32")
VARIABLES = {
    "tile": ModuleVar("tile", "workgroup", "read_write", Array(F32, 64), None),
    "quads": ModuleVar("quads", "workgroup", "read_write", Array(Vector(4, F32), 16), None),
    "out": ModuleVar("out", "storage", "read_write", Array(F32, None), None),
}
# site id -> (variable, kind, scalars)
SITES = [("tile", AccessKind.WRITE, 1), ("tile", AccessKind.READ, 1), ("out", AccessKind.WRITE, 1),
         ("out", AccessKind.READ, 1), ("tile", AccessKind.ATOMIC_RMW, 1), ("quads", AccessKind.WRITE, 1),
         ("quads", AccessKind.READ, 4), ("quads", AccessKind.WRITE, 4)]
WRITE, READ, OUT_WRITE, OUT_READ, ATOMIC, COMPONENT_WRITE, QUAD_READ, QUAD_WRITE = range(len(SITES))


def sanitized() -> Sanitized:
    sites = tuple(Site(i, var, VARIABLES[var].space, kind, scalars, 10 + i, 1, f"line {10 + i}", f"{var}[i]", True,
                       kind == AccessKind.WRITE)
                  for i, (var, kind, scalars) in enumerate(SITES))
    return Sanitized("", "", sites, VARIABLES, 0)


def log(*records, capacity: int | None = None, attempted: int | None = None) -> np.ndarray:
    """records: (site, lane, group, epoch, space_epoch, offset[, value])."""
    capacity = len(records) if capacity is None else capacity
    words = np.zeros(HEADER_WORDS + RECORD_WORDS * capacity, dtype=np.uint32)
    words[0] = len(records) if attempted is None else attempted
    for k, record in enumerate(records[:capacity]):
        site, lane, group, epoch, space_epoch, offset, *value = record
        words[HEADER_WORDS + RECORD_WORDS * k:HEADER_WORDS + RECORD_WORDS * (k + 1)] = [
            site | lane << LANE_SHIFT, group, epoch, space_epoch, offset, value[0] if value else k + 1]
    return words


def findings(*records, **kwargs):
    report = analyze(log(*records, **kwargs), sanitized())
    return report.findings, report.notes


def test_an_invocation_reading_its_own_write_of_the_same_epoch_is_clean():
    assert findings((WRITE, 3, 0, 0, 0, 3), (READ, 3, 0, 0, 0, 3)) == ([], [])


def test_reading_before_its_own_write_in_the_same_epoch_is_uninitialised():
    [finding], _ = findings((READ, 3, 0, 0, 0, 3), (WRITE, 3, 0, 0, 0, 3))
    assert isinstance(finding, UninitializedRead) and finding.address == "[3]"


def test_a_read_of_another_invocations_write_from_an_earlier_epoch_is_clean():
    assert findings((WRITE, 0, 0, 0, 0, 5), (READ, 9, 0, 1, 1, 5)) == ([], [])


def test_the_same_read_in_the_writers_epoch_is_a_race():
    [race], _ = findings((WRITE, 0, 0, 1, 1, 5), (READ, 9, 0, 1, 1, 5))
    assert isinstance(race, Race) and race.ordering == "epoch" and {race.first.lane, race.second.lane} == {0, 9}


def test_workgroups_have_their_own_workgroup_memory():
    # Lane 9 of workgroup 1 reads what only workgroup 0 wrote: uninitialised in its workgroup, not a race.
    [finding], _ = findings((WRITE, 0, 0, 0, 0, 5), (READ, 9, 1, 1, 1, 5))
    assert isinstance(finding, UninitializedRead) and finding.access.group == 1


def test_a_write_after_other_invocations_read_needs_only_a_barrier_between():
    assert findings((OUT_READ, 1, 0, 0, 0, 2), (OUT_READ, 2, 0, 0, 0, 2), (OUT_WRITE, 0, 0, 1, 0, 2)) == ([], [])


def test_a_storage_write_read_after_a_storage_barrier_is_clean_but_not_after_a_workgroup_barrier():
    ordered = findings((OUT_WRITE, 0, 0, 0, 0, 2), (OUT_READ, 1, 0, 1, 1, 2))
    assert ordered == ([], [])
    [race], _ = findings((OUT_WRITE, 0, 0, 0, 0, 2), (OUT_READ, 1, 0, 1, 0, 2))
    assert race.ordering == "memory" and (race.first.epoch, race.second.epoch) == (0, 1)


def test_storage_touched_by_two_workgroups_with_a_write_races():
    [race], _ = findings((OUT_WRITE, 0, 0, 0, 0, 7), (OUT_READ, 0, 1, 0, 0, 7))
    assert race.ordering == "workgroups"
    assert findings((OUT_READ, 0, 0, 0, 0, 7), (OUT_READ, 0, 1, 0, 0, 7)) == ([], [])


def test_unordered_writes_of_one_value_are_a_note_and_of_two_values_a_race():
    races, notes = findings((WRITE, 0, 0, 0, 0, 1, 42), (WRITE, 1, 0, 0, 0, 1, 42))
    assert races == [] and isinstance(notes[0], RedundantWrites) and "same value" in notes[0].message()
    [race], notes = findings((WRITE, 0, 0, 0, 0, 1, 42), (WRITE, 1, 0, 0, 0, 1, 43))
    assert isinstance(race, Race) and not isinstance(race, RedundantWrites) and notes == []


def test_atomic_updates_never_race_but_count_as_reads_for_initialisation():
    assert findings((WRITE, 0, 0, 0, 0, 0), (ATOMIC, 1, 0, 1, 1, 0), (ATOMIC, 2, 0, 1, 1, 0)) == ([], [])
    [finding], _ = findings((ATOMIC, 1, 0, 0, 0, 0), (ATOMIC, 2, 0, 0, 0, 0))
    assert isinstance(finding, UninitializedRead)


def test_components_written_by_different_lanes_do_not_race_and_initialise_the_vector():
    records = [(COMPONENT_WRITE, lane, 0, 0, 0, 4 * 3 + lane) for lane in range(4)]
    assert findings(*records, (QUAD_READ, 7, 0, 1, 1, 12)) == ([], [])
    [finding], _ = findings(*records[:3], (QUAD_READ, 7, 0, 1, 1, 12))  # .w never written
    assert isinstance(finding, UninitializedRead) and finding.address == "[3].w"


def test_a_vector_write_racing_a_component_read_names_the_element():
    [race], _ = findings((QUAD_WRITE, 0, 0, 0, 0, 8), (COMPONENT_WRITE, 1, 0, 0, 0, 9))
    assert race.address == "[2].y"


def test_out_of_bounds_records_name_the_index_and_the_length():
    words = log((OUT_WRITE, 5, 1, 0, 0, 0))
    head = HEADER_WORDS
    words[head] |= OUT_OF_BOUNDS
    words[head + 2:head + 5] = [64, 1, 1_000_064]  # length, dimension, index
    [finding] = analyze(words, sanitized()).findings
    assert isinstance(finding, OutOfBounds) and (finding.index, finding.length) == (1_000_064, 64)
    assert (finding.access.group, finding.access.lane) == (1, 5)


def test_a_full_log_is_reported_as_truncated():
    report = analyze(log((WRITE, 0, 0, 0, 0, 0), capacity=2, attempted=5), sanitized())
    assert [type(f) for f in report.findings] == [LogTruncated] and not report.clean
    assert "5 accesses, room for 1" in report.findings[0].message()


def test_the_last_slot_of_a_full_log_is_never_read():
    """Past the room every record lands in the last slot, so there it is a mix of several: read, it
    could pair a write with another's address. Here the last slot alone would race with the first."""
    racing = log((WRITE, 0, 0, 0, 0, 0), (WRITE, 1, 0, 0, 0, 0))
    assert any(isinstance(f, Race) for f in analyze(racing, sanitized()).findings)
    full = log((WRITE, 0, 0, 0, 0, 0), (WRITE, 1, 0, 0, 0, 0), capacity=2, attempted=3)
    assert [type(f) for f in analyze(full, sanitized()).findings] == [LogTruncated]


def tiled_log(rng: np.random.Generator, clean: bool) -> np.ndarray:
    """A log shaped like a tiled kernel's: lanes write tile cells and many lanes read cells written
    before the barrier (`clean`: the tile written in even epochs, read in odd ones), the barriers
    a mix of workgroupBarrier and storageBarrier. Unless `clean`, with the slips a kernel can
    make: a read of the epoch's own writes, a cell never written, memory read across the wrong
    barrier, two lanes writing one cell, atomics, barriers some invocations skip."""
    records = []
    lanes, groups, epochs = int(rng.integers(2, 9)), int(rng.integers(1, 3)), int(rng.integers(2, 7))
    storage_barrier = np.concatenate([[0], rng.random(epochs - 1) < (0 if clean else 0.4)])
    space_epochs = {"workgroup": np.cumsum(~storage_barrier.astype(bool)) - 1, "storage": np.cumsum(storage_barrier)}
    uniform = clean or rng.random() < 0.8
    for group in range(groups):
        for epoch in range(epochs):
            tile = int(space_epochs["workgroup"][epoch])
            out = int(space_epochs["storage"][epoch])
            if clean:
                cells = range(12) if epoch % 2 == 0 else ()
            else:
                cells = rng.integers(0, 12, int(rng.integers(1, 6)))
            for cell in cells:
                site = WRITE if clean else int(rng.choice([WRITE, COMPONENT_WRITE, QUAD_WRITE, ATOMIC]))
                lane = int(cell) % lanes if clean else int(rng.integers(0, lanes))
                records.append((site, lane, group, epoch, tile, int(cell) * (4 if site == QUAD_WRITE else 1),
                                int(rng.integers(0, 2))))
            for _ in range(0 if clean and epoch % 2 == 0 else int(rng.integers(5, 40))):
                site = READ if clean else int(rng.choice([READ, READ, READ, QUAD_READ, OUT_READ]))
                behind = epoch - (1 if clean else int(rng.random() < 0.9))  # mostly a cell of an earlier epoch
                offset = int(rng.integers(0, 12 if clean or behind >= 0 else 16)) * (4 if site == QUAD_READ else 1)
                space_epoch = out if site == OUT_READ else tile if uniform else max(0, tile - int(rng.integers(0, 2)))
                records.append((site, int(rng.integers(0, lanes)), group, epoch, space_epoch, offset))
            if not clean and rng.random() < 0.3:
                records.append((OUT_WRITE, int(rng.integers(0, lanes)), group, epoch, out, int(rng.integers(0, 3)),
                                int(rng.integers(0, 2))))
    order = rng.permutation(len(records)) if rng.random() < 0.5 else np.arange(len(records))
    return log(*[records[k] for k in order])


def test_reads_set_aside_before_the_rules_change_no_finding(monkeypatch):
    """The reads `_bearing` sets aside (initialised, in no group with a write) bear on no finding:
    the analysis of random tiled logs is the same, finding for finding and quote for quote, with
    all rows kept."""
    import verify.instrument.shadow as shadow

    rng = np.random.default_rng(7)
    logs = [tiled_log(rng, clean=k % 4 == 0) for k in range(300)]
    set_aside = []
    bearing = shadow._bearing

    def counted(rows, tables):
        keep = bearing(rows, tables)
        set_aside.append(0 if keep is None else int((~keep).sum()))
        return keep

    monkeypatch.setattr(shadow, "_bearing", counted)
    filtered = [analyze(words, sanitized()) for words in logs]
    monkeypatch.setattr(shadow, "_bearing", lambda rows, tables: None)
    whole = [analyze(words, sanitized()) for words in logs]
    for a, b in zip(filtered, whole):
        assert (a.messages(), [n.message() for n in a.notes]) == (b.messages(), [n.message() for n in b.notes])
    assert sum(1 for n in set_aside if n) > 150  # the comparison is not vacuous: most logs lose rows
    assert sum(1 for r in whole if r.findings) > 100 and sum(1 for r in whole if not r.findings) > 50
    kinds = {type(f).__name__ + getattr(f, "ordering", "") for r in whole for f in r.findings + r.notes}
    assert kinds >= {"Raceepoch", "Racememory", "Raceworkgroups", "RedundantWritesepoch", "UninitializedRead"}
