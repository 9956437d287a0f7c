"""Read back the shadow log of a sanitized dispatch and find races, out-of-bounds and
uninitialised accesses in it (numpy, vectorised: a dispatch logs millions of accesses).

The log is what happened, not a schedule: two accesses race when the rules of WGSL's memory model
leave them unordered, whatever order this adapter ran them in. So the verdict is the same on an
adapter that runs a workgroup's subgroups one after another (lavapipe) and on one that runs them
in lockstep (a GPU). The rules, per address (a scalar of a variable; vectors and structs span
several):
  - race in an epoch: two invocations of one workgroup, at least one writing, no control barrier
    between them (same epoch = same count of barriers passed);
  - unsynchronised: a write, then an access by another invocation of the workgroup in a later
    epoch, with no barrier for that address space between (storage memory needs storageBarrier,
    workgroup memory workgroupBarrier; a write-after-read needs only the control barrier);
  - race between workgroups: storage written by one workgroup and touched by another;
  - uninitialised: a read of workgroup memory that no write of the same workgroup precedes (an
    earlier epoch, or the same invocation earlier in the same epoch).
Atomic built-ins never race; an atomic update counts as a read and a write for initialisation.
Records of loops that ran past the sanitizer's bound are not accesses: each loop they name is an
UnboundedLoop finding.
"""

from __future__ import annotations

import numpy as np

from verify.instrument.bearing import NONE as _NONE
from verify.instrument.bearing import bearing as _bearing
from verify.instrument.bearing import composite_key as _composite_key
from verify.instrument.findings import (
    Access,
    LogTruncated,
    OutOfBounds,
    Race,
    RedundantWrites,
    SanitizerReport,
    UnboundedLoop,
    UninitializedRead,
    describe_address,
)
from verify.instrument.sanitize import MAX_SITES, Sanitized

RECORD_WORDS = 6
#: The log's header: the count of records asked for, then the first workgroup that logs and how
#: many do (sanitize_log.wgsl).
HEADER_WORDS = 3
#: `groups` of a log that every workgroup writes to.
ALL_GROUPS = 0xFFFFFFFF
LANE_SHIFT = 20
LANE_MASK = 0x3FF
OUT_OF_BOUNDS = 1 << 31
#: A record of a loop the sanitizer ended at its bound (the site is then the loop's number).
UNBOUNDED_LOOP = 1 << 30


def log_words(capacity: int) -> int:
    """u32 words of a log with room for `capacity` records."""
    return HEADER_WORDS + RECORD_WORDS * capacity


def new_log(capacity: int, first_group: int = 0, groups: int = ALL_GROUPS) -> np.ndarray:
    """The log to upload: room for `capacity` records, logged by workgroups `first_group` to
    `first_group + groups - 1` (by default every workgroup)."""
    words = np.zeros(log_words(capacity), dtype=np.uint32)
    words[1:HEADER_WORDS] = first_group, groups
    return words


def read_log(words: np.ndarray) -> tuple[np.ndarray, int, int]:
    """(records, attempted, capacity) of a log read back: the records it holds (rows of
    RECORD_WORDS), how many were asked for, and how many it has room for."""
    words = np.asarray(words, dtype=np.uint32).ravel()
    attempted = int(words[0])
    capacity = (words.size - HEADER_WORDS) // RECORD_WORDS
    # Past the room, every record lands in the last slot (sanitize_log.wgsl): it is then a mix.
    count = attempted if attempted <= capacity else max(0, capacity - 1)
    return words[HEADER_WORDS:HEADER_WORDS + count * RECORD_WORDS].reshape(count, RECORD_WORDS), attempted, capacity


def analyze(words: np.ndarray, sanitized: Sanitized, report: SanitizerReport | None = None) -> SanitizerReport:
    """Add the findings of one dispatch's log (`words`, the u32 log buffer) to `report`."""
    report = report if report is not None else SanitizerReport()
    records, attempted, capacity = read_log(words)
    report.dispatches += 1
    report.accesses += attempted
    if attempted > capacity:
        report.findings.append(LogTruncated(len(records), attempted))
    return analyze_records(records, SiteTables(sanitized), report)


def analyze_records(records: np.ndarray, tables: SiteTables, report: SanitizerReport,
                    unit: np.ndarray | None = None) -> SanitizerReport:
    """Add the findings of `records` (a whole dispatch's, or all a dispatch's passes kept:
    verify.instrument.passes) to `report`. `unit`: each variable's granule (_units), where the
    records are not all the dispatch logged and so cannot tell it."""
    sanitized = tables.sanitized
    flags = records[:, 0] & np.uint32(UNBOUNDED_LOOP | OUT_OF_BOUNDS)
    if flags.any():  # records of loops and out-of-bounds accesses are rare: set apart only when there are some
        loops = (flags & np.uint32(UNBOUNDED_LOOP)) != 0
        report.findings.extend(_unbounded_loops(records[loops].astype(np.int64), sanitized))
        report.findings.extend(_out_of_bounds(records[~loops & (flags != 0)].astype(np.int64), tables))
        records = records[flags == 0]
    accesses = _Accesses(records, tables, unit)
    for finding in accesses.findings():
        (report.notes if isinstance(finding, RedundantWrites) else report.findings).append(finding)
    return report


class SiteTables:
    """Per-site facts as arrays indexed by site id."""

    def __init__(self, sanitized: Sanitized):
        self.sanitized = sanitized
        self.sites = sanitized.sites
        names = sorted({s.variable for s in self.sites})
        self.variable_names = names
        index = {name: i for i, name in enumerate(names)}
        self.variable = np.array([index[s.variable] for s in self.sites], dtype=np.int64)
        self.reads = np.array([s.kind.reads for s in self.sites], dtype=bool)
        self.writes = np.array([s.kind.writes for s in self.sites], dtype=bool)
        self.atomic = np.array([s.kind.atomic for s in self.sites], dtype=bool)
        self.scalars = np.array([s.scalars for s in self.sites], dtype=np.int64)
        self.workgroup = np.array([s.space == "workgroup" for s in self.sites], dtype=bool)
        self.value_logged = np.array([s.value_logged for s in self.sites], dtype=bool)

    def access(self, site: int, group: int, lane: int, epoch: int | None = None) -> Access:
        return Access(self.sites[int(site)], int(group), int(lane), None if epoch is None else int(epoch))

    def type_of(self, variable: int):
        return self.sanitized.variables[self.variable_names[variable]].type


def _out_of_bounds(records: np.ndarray, tables: SiteTables) -> list[OutOfBounds]:
    if records.size == 0:
        return []
    site = records[:, 0] & (MAX_SITES - 1)
    sites, first, counts = np.unique(site, return_index=True, return_counts=True)
    findings = []
    for s, i, n in zip(sites, first, counts):
        head, group, length, dimension, index = records[i][:5]
        lane = (head >> LANE_SHIFT) & LANE_MASK
        findings.append(OutOfBounds(tables.access(s, group, lane), int(dimension), int(index), int(length), int(n)))
    return findings


def _unbounded_loops(records: np.ndarray, sanitized: Sanitized) -> list[UnboundedLoop]:
    """One finding per loop, quoting the first invocation the log holds and counting them all."""
    if records.size == 0:
        return []
    loop = records[:, 0] & (MAX_SITES - 1)
    loops, first, counts = np.unique(loop, return_index=True, return_counts=True)
    findings = []
    for number, i, n in zip(loops, first, counts):
        head, group, bound = records[i][:3]
        lane = (head >> LANE_SHIFT) & LANE_MASK
        findings.append(UnboundedLoop(sanitized.loops[int(number)], int(group), int(lane), int(bound), int(n)))
    return findings


def _units(site: np.ndarray, variable: np.ndarray, offset: np.ndarray, tables: SiteTables) -> np.ndarray:
    """Scalars per tracked granule of each variable: s for a variable accessed only in whole aligned
    elements of s scalars (the same verdicts, s times fewer rows), else 1. Which sizes a variable is
    accessed in is a fact of its sites that appear in the log; only the alignment needs the rows."""
    if site.size == 0:
        return np.ones(len(tables.variable_names), dtype=np.int64)
    candidate = _candidate_units(np.flatnonzero(np.bincount(site, minlength=len(tables.sites))), tables)
    if np.all(candidate == 1):
        return candidate
    misaligned = offset % candidate[variable] != 0
    candidate[np.unique(variable[misaligned])] = 1
    return candidate


def _candidate_units(present: np.ndarray, tables: SiteTables) -> np.ndarray:
    """Per variable, s where every one of its sites among `present` (site ids) touches s > 1 scalars, else 1."""
    low = np.full(len(tables.variable_names), np.iinfo(np.int64).max)
    high = np.zeros(low.size, dtype=np.int64)
    np.minimum.at(low, tables.variable[present], tables.scalars[present])
    np.maximum.at(high, tables.variable[present], tables.scalars[present])
    return np.where((low == high) & (high > 1), high, 1)


class UnitFacts:
    """What decides each variable's granule (_units), gathered over the in-bounds records of a
    dispatch a batch at a time (its passes, verify.instrument.passes): the sites that appear, and
    per variable the greatest common divisor of the offsets (s divides every offset if and only if
    it divides their gcd). `units()` is then what _units gives for all the batches in one log."""

    def __init__(self, tables: SiteTables):
        self.tables = tables
        self.present = np.zeros(len(tables.sites), dtype=bool)
        self.gcd = np.zeros(len(tables.variable_names), dtype=np.int64)

    def add(self, records: np.ndarray) -> None:
        site = records[:, 0].astype(np.int64) & (MAX_SITES - 1)
        if site.size == 0:
            return
        self.present |= np.bincount(site, minlength=len(self.tables.sites)) > 0
        variable, offset = self.tables.variable[site], records[:, 4].astype(np.int64)
        for v in np.unique(variable):
            self.gcd[v] = np.gcd(self.gcd[v], np.gcd.reduce(offset[variable == v]))

    def units(self) -> np.ndarray:
        candidate = _candidate_units(np.flatnonzero(self.present), self.tables)
        candidate[self.gcd % candidate != 0] = 1
        return candidate


def access_rows(records: np.ndarray, tables: SiteTables, unit: np.ndarray | None = None) -> tuple[dict, np.ndarray]:
    """(rows, unit): the columns of in-bounds access `records`, one row per granule of `unit`
    scalars (by default _units of these records) they touch. Rows are in log order (`order`: the
    record's index), except the further granules of multi-granule accesses, which follow all the
    others."""
    head = records[:, 0].astype(np.int64)
    site = head & (MAX_SITES - 1)
    lane = (head >> LANE_SHIFT) & LANE_MASK
    order = np.arange(len(records), dtype=np.int64)
    variable = tables.variable[site] if len(site) else np.zeros(0, np.int64)
    offset = records[:, 4].astype(np.int64)
    scalars = tables.scalars[site] if len(site) else np.zeros(0, np.int64)
    if unit is None:
        unit = _units(site, variable, offset, tables)
    if np.any(unit > 1):
        span, first = scalars // unit[variable], offset // unit[variable]
    else:
        span, first = scalars, offset
    base = {"site": site, "lane": lane, "group": records[:, 1].astype(np.int64),
            "epoch": records[:, 2].astype(np.int64), "space_epoch": records[:, 3].astype(np.int64),
            "variable": variable, "address": first, "order": order, "value": records[:, 5].astype(np.int64),
            "record_offset": offset, "scalars": scalars}
    wide = np.flatnonzero(span > 1)
    if wide.size:  # one more row per further granule of a multi-granule access, appended
        extra = span[wide] - 1
        repeat = np.repeat(wide, extra)
        within = 1 + np.arange(repeat.size) - np.repeat(np.cumsum(extra) - extra, extra)
        more = {k: v[repeat] for k, v in base.items()}
        more["address"] = more["address"] + within
        base = {k: np.concatenate([v, more[k]]) for k, v in base.items()}
    return base, unit


class _Accesses:
    """In-bounds accesses, one row per scalar-granule they touch, sorted as each rule needs.

    Rows are in log order, except the further granules of multi-granule accesses, which follow
    all the others: order matters only between rows of one invocation (`order` says it), and
    for choosing which of several racing accesses a finding quotes."""

    def __init__(self, records: np.ndarray, tables: SiteTables, unit: np.ndarray | None = None):
        self.tables = tables
        base, self.unit = access_rows(records, tables, unit)
        keep = _bearing(base, tables)
        if keep is not None:
            base = {k: v[keep] for k, v in base.items()}
        per_site = {"reads": tables.reads, "writes": tables.writes, "atomic": tables.atomic,
                    "workgroup": tables.workgroup, "value_logged": tables.value_logged}
        self.columns = _SiteColumns(base, per_site)

    def findings(self) -> list:
        """Every rule, on one sort of the rows by (variable, address, workgroup, epoch, lane):
        each rule's groups are runs of a prefix of that key (the space epoch grows with the
        epoch, as every invocation of a workgroup passes the same barriers)."""
        c = self._sorted(("variable", "address", "group", "epoch", "lane"))
        if c["site"].size == 0:
            return []
        plain = ~c["atomic"]
        return (self._pairs(c, c.runs(("variable", "address", "group", "epoch")), "lane", plain, "epoch")
                + self._unsynchronised(c, plain)
                + self._pairs(c, c.runs(("variable", "address")), "group", plain & ~c["workgroup"], "workgroups")
                + self._uninitialised(c))

    # -- grouping ---------------------------------------------------------------------------
    def _sorted(self, keys: tuple[str, ...]):
        """The columns, sorted by `keys` (ties in log order), gathered as they are asked for."""
        composite = _composite_key([self.columns[k] for k in keys])
        if composite is not None:  # one stable argsort: rows are already (nearly) in log order
            sort = np.argsort(composite, kind="stable")
        else:
            sort = np.lexsort(tuple(self.columns[k] for k in reversed(keys + ("order",))))
        return _LazyColumns(self.columns, sort)

    # -- rules ------------------------------------------------------------------------------
    def _pairs(self, c, runs: _Runs, differ: str, taking_part: np.ndarray, ordering: str) -> list[Race]:
        """Races of groups where a row taking part writes and another, by a different `differ`
        (lane or workgroup), takes part too."""
        writer = runs.first(taking_part & c["writes"])
        has_writer = writer != _NONE
        if not has_writer.any():  # no group has a write taking part: none can race
            return []
        writer_id = np.where(has_writer, c[differ][np.minimum(writer, c[differ].size - 1)], -1)
        other = runs.first(taking_part & (c[differ] != runs.spread(writer_id)) & runs.spread(has_writer))
        return self._split(c, runs.starts, taking_part, writer, other, (other != _NONE) & has_writer, ordering)

    def _split(self, c, starts, taking_part, first, second, racy: np.ndarray, ordering: str) -> list:
        """Races of the `racy` groups, those where every access writes the same value as notes."""
        if not racy.any():
            return []
        same = self._same_value_writes(c, starts, taking_part)
        races = np.flatnonzero(racy & ~same)
        benign = np.flatnonzero(racy & same)
        return (self._aggregate(c, first[races], second[races], ordering)
                + self._aggregate(c, first[benign], second[benign], ordering, RedundantWrites))

    @staticmethod
    def _same_value_writes(c, starts, taking_part) -> np.ndarray:
        """Per group: every row taking part writes a logged value, all of one shape and one value."""
        alike = np.logical_and.reduceat(~taking_part | (c["writes"] & c["value_logged"]), starts)
        for column in ("value", "record_offset", "scalars"):
            values = c[column]
            low = np.minimum.reduceat(np.where(taking_part, values, _NONE), starts)
            high = np.maximum.reduceat(np.where(taking_part, values, -1), starts)
            alike &= low == high
        return alike

    def _aggregate(self, c, first: np.ndarray, second: np.ndarray, ordering: str, kind=Race) -> list:
        if first.size == 0:
            return []
        pairs = np.stack([c["site"][first], c["site"][second]], axis=1)
        kinds, index, counts = np.unique(pairs, axis=0, return_index=True, return_counts=True)
        races = []
        for (_, _), i, n in zip(kinds, index, counts):
            a, b = first[i], second[i]
            variable = int(c["variable"][a])
            unit = int(self.unit[variable])
            address = describe_address(self.tables.type_of(variable), int(c["address"][a]) * unit, unit)
            site = self.tables.sites[int(c["site"][a])]
            races.append(kind(site.space, site.variable, address, ordering,
                              self.tables.access(c["site"][a], c["group"][a], c["lane"][a], c["epoch"][a]),
                              self.tables.access(c["site"][b], c["group"][b], c["lane"][b], c["epoch"][b]),
                              int(n)))
        return races

    def _unsynchronised(self, c, plain: np.ndarray) -> list[Race]:
        """A write, then another invocation's access in a later epoch of the same space epoch.
        Only accesses whose epoch runs ahead of their space epoch can be ordered so: a workgroup
        variable in a kernel that only uses workgroupBarrier never is."""
        taking_part = plain.copy()
        lag = c["epoch"] - c["space_epoch"]
        for space in (True, False):  # workgroup, storage
            rows = taking_part & (c["workgroup"] == space)
            if rows.any() and lag[rows].min() == lag[rows].max():
                taking_part &= c["workgroup"] != space  # epoch and space epoch in step
        writes = c["writes"] & taking_part
        if not writes.any():  # no write taking part: no group has one to order an access after
            return []
        runs = c.runs(("variable", "address", "group", "space_epoch"))
        starts, epoch, lane = runs.starts, c["epoch"], c["lane"]
        first_write_epoch = runs.spread(np.minimum.reduceat(np.where(writes, epoch, _NONE), starts))
        at_first = writes & (epoch == first_write_epoch)
        low = runs.spread(np.minimum.reduceat(np.where(at_first, lane, _NONE), starts))
        high = runs.spread(np.maximum.reduceat(np.where(at_first, lane, -1), starts))
        later = taking_part & (epoch > first_write_epoch) & ((low != high) | (lane != low))
        writer = runs.first(at_first)
        other = runs.first(later)
        return self._split(c, starts, taking_part, writer, other, (other != _NONE) & (writer != _NONE), "memory")

    def _uninitialised(self, c) -> list[UninitializedRead]:
        """Reads of workgroup memory with no write before them: none in an earlier epoch of the
        workgroup, none by the same invocation earlier in the epoch, and (for plain reads) none
        by another invocation in the epoch either, which would be a race, reported as one.
        Atomic updates by other invocations in the same epoch are unordered with this one, so
        for an atomic read they do not count: one of them reads the memory first.

        Most reads follow a write of an earlier epoch; only the others (reads in the epoch of a
        cell's first write, or of a cell no invocation of the workgroup wrote) are looked at further."""
        writes, reads, epoch, lane, order = c["writes"], c["reads"], c["epoch"], c["lane"], c["order"]
        cell = c.runs(("variable", "address", "group"))
        first_epoch = cell.spread(np.minimum.reduceat(np.where(writes, epoch, _NONE), cell.starts))
        rows = np.flatnonzero(c["workgroup"] & reads & ~(first_epoch < epoch))
        if rows.size == 0:
            return []
        cell_epoch = c.runs(("variable", "address", "group", "epoch"))
        own_cell = c.runs(("variable", "address", "group", "epoch", "lane"))
        in_cell_epoch, in_own_cell = cell_epoch.of(rows), own_cell.of(rows)
        low = np.minimum.reduceat(np.where(writes, lane, _NONE), cell_epoch.starts)[in_cell_epoch]
        high = np.maximum.reduceat(np.where(writes, lane, -1), cell_epoch.starts)[in_cell_epoch]
        own_first = np.minimum.reduceat(np.where(writes, order, _NONE), own_cell.starts)[in_own_cell]
        own = own_first < order[rows]
        others = (low != _NONE) & ((low != high) | (low != lane[rows]))
        rows = rows[~own & (c["atomic"][rows] | ~others)]
        if rows.size == 0:
            return []
        rows = rows[np.argsort(order[rows], kind="stable")]  # report each site's first read in log order
        sites, first, counts = np.unique(c["site"][rows], return_index=True, return_counts=True)
        findings = []
        for i, count in zip(first, counts):
            row = rows[i]
            variable = int(c["variable"][row])
            unit = int(self.unit[variable])
            address = describe_address(self.tables.type_of(variable), int(c["address"][row]) * unit, unit)
            access = self.tables.access(c["site"][row], c["group"][row], lane[row], epoch[row])
            findings.append(UninitializedRead(access, address, int(count)))
        return findings


class _Runs:
    """The runs of rows equal in some keys (rows sorted by at least those keys): where each
    starts, and a value per run spread back over its rows or looked up for a few rows."""

    def __init__(self, starts: np.ndarray, n: int):
        self.starts = starts
        self.lengths = np.diff(np.append(starts, n))

    def spread(self, per_run: np.ndarray) -> np.ndarray:
        """A value per run repeated over the run's rows."""
        return np.repeat(per_run, self.lengths)

    def of(self, rows: np.ndarray) -> np.ndarray:
        """The run of each of `rows` (row indices)."""
        return np.searchsorted(self.starts, rows, side="right") - 1

    def first(self, where: np.ndarray) -> np.ndarray:
        """Per run, the index of its first row where `where` holds (_NONE if none): a search of
        the rows where it holds, which are often few (the writes), not a pass over every row."""
        rows = np.flatnonzero(where)
        if rows.size == 0:
            return np.full(self.starts.size, _NONE, dtype=np.int64)
        at = np.searchsorted(rows, self.starts)
        found = rows[np.minimum(at, rows.size - 1)]
        return np.where((at < rows.size) & (found < self.starts + self.lengths), found, _NONE)


class _SiteColumns(dict):
    """Record columns, and per-site facts looked up for each row on first use."""

    def __init__(self, base: dict, per_site: dict):
        super().__init__(base)
        self.per_site = per_site

    def __missing__(self, key):
        self[key] = value = self.per_site[key][self["site"]]
        return value

    def keys(self):
        return list(super().keys()) + [k for k in self.per_site if not dict.__contains__(self, k)]


class _LazyColumns(dict):
    """Columns gathered in sorted order on first use (each rule reads only a few of them), and
    the runs of rows equal in some of the sort keys, each found once."""

    def __init__(self, columns: _SiteColumns, order: np.ndarray):
        super().__init__()
        self._columns, self._order = columns, order
        self._changes: dict[tuple, np.ndarray] = {}
        self._runs: dict[tuple, _Runs] = {}

    def __missing__(self, key):
        if key in self._columns.per_site and not dict.__contains__(self._columns, key):
            value = self._columns.per_site[key][self["site"]]  # a fact of the site: looked up, not gathered twice
        else:
            value = self._columns[key][self._order]
        self[key] = value
        return value

    def runs(self, keys: tuple[str, ...]) -> _Runs:
        """The runs of rows equal in `keys` (the sort's keys, or, for the space epoch, keys that
        grow with them)."""
        if keys not in self._runs:
            n = self[keys[0]].size
            starts = np.flatnonzero(self._change(keys)) + 1
            self._runs[keys] = _Runs(np.concatenate([np.zeros(min(n, 1), dtype=np.int64), starts]), n)
        return self._runs[keys]

    def _change(self, keys: tuple[str, ...]) -> np.ndarray:
        """Whether row i + 1 differs from row i in any of `keys` (built on the answer for its prefix)."""
        if keys not in self._changes:
            column = self[keys[-1]]
            change = column[1:] != column[:-1]
            if len(keys) > 1:
                change |= self._change(keys[:-1])
            self._changes[keys] = change
        return self._changes[keys]


