"""Which rows of a sanitizer log can bear on a finding (verify.instrument.shadow), so that the
rules sort and scan only those: most of a tiled kernel's log is reads of workgroup memory its
workgroup wrote before the last barrier, which no rule can turn into a finding.

Whether a row is set aside is a fact of its own workgroup's rows (its cells, its epochs, its
barriers), and setting aside any of those rows changes no finding; so a dispatch logged in passes
of whole workgroups (verify.instrument.passes) can be reduced pass by pass, and what the passes
keep is analysed as the whole log would be.
"""

from __future__ import annotations

import numpy as np

#: "No row" / "no epoch" in int64 columns.
NONE = np.iinfo(np.int64).max


def bearing(rows: dict, tables) -> np.ndarray | None:
    """The rows that can bear on a finding (None: all of them). Most of a tiled kernel's log is
    reads of workgroup memory its workgroup wrote before the last barrier. Where every invocation
    of a workgroup passed the same barriers, so that the space epoch is a function of the epoch
    (_space_epochs_follow_epochs), a read of an address its workgroup wrote in an earlier epoch
    and not in the read's space epoch (so not in its epoch either) bears on none:
      - it is initialised (a write of an earlier epoch precedes it), so it is no uninitialised
        read; whether another read is depends on writes only, and every write is kept;
      - the groups of the race rules it belongs to, (address, workgroup, epoch) and (address,
        workgroup, space epoch), hold no write, and a group without a write never races; every
        row of a group that holds one is kept, so which rows a race quotes, how many addresses
        it counts and whether its writes are all alike are as before; and since the space epoch
        follows the epoch, leaving rows out joins no two runs of one space epoch;
      - it is workgroup memory, which the rule between workgroups does not look at.
    The unsynchronised rule's shortcut (a space whose epochs and space epochs are in step is
    skipped) only sees fewer rows: a race of that rule keeps its write and its later access,
    whose epochs and space epochs are out of step. Where the log shows barriers some invocations
    did not pass, nothing is left out. Each of these reasons is about one workgroup's rows, and
    about those only where that workgroup passed the same barriers: so any subset of the rows
    set aside here may be dropped, whatever other workgroups did (the passes of
    verify.instrument.passes rely on it). tests/instrument/test_shadow.py compares the findings
    with and without this on logs of both kinds, and logged in passes or not."""
    site = rows["site"]
    workgroup = np.flatnonzero(tables.workgroup[site])
    writes = tables.writes[site[workgroup]]
    if not writes.any() or writes.all():
        return None
    group, epoch, space_epoch = (rows[k][workgroup] for k in ("group", "epoch", "space_epoch"))
    if not _space_epochs_follow_epochs(group, epoch, space_epoch):
        return None
    cell = composite_key([rows["variable"][workgroup], rows["address"][workgroup], group])
    in_space_epoch = None if cell is None else composite_key([cell, space_epoch])
    if cell is None or in_space_epoch is None:
        return None
    quiet = (~writes & (_first_write_epoch(cell[writes], epoch[writes], cell) < epoch)
             & ~_member(in_space_epoch, in_space_epoch[writes]))
    keep = np.ones(site.size, dtype=bool)
    keep[workgroup[quiet]] = False
    return keep


def _space_epochs_follow_epochs(group: np.ndarray, epoch: np.ndarray, space_epoch: np.ndarray) -> bool:
    """Whether, in each workgroup, the space epoch is one non-decreasing function of the epoch (as
    it is when every invocation of the workgroup passes the same barriers): the rows of one space
    epoch of a cell are then consecutive in epoch order."""
    first_group, first_epoch = int(group.min()), int(epoch.min())
    epochs = int(epoch.max()) - first_epoch + 1
    size = (int(group.max()) - first_group + 1) * epochs
    if size > 1 << 22:
        return False
    at = (group - first_group) * epochs + (epoch - first_epoch)
    low = np.full(size, NONE, dtype=np.int64)
    high = np.full(size, -1, dtype=np.int64)
    np.minimum.at(low, at, space_epoch)
    np.maximum.at(high, at, space_epoch)
    seen = np.flatnonzero(high >= 0)
    values, same_group = high[seen], (seen[1:] // epochs) == (seen[:-1] // epochs)
    return not (np.any(low[seen] != values) or np.any(same_group & (values[1:] < values[:-1])))


def _member(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Whether each of `values` is one of `keys` (few): a table where the keys span a small range,
    else a search of them sorted."""
    low, high = int(keys.min()), int(keys.max())
    if high - low < 8 * (values.size + keys.size) + (1 << 22):
        table = np.zeros(high - low + 1, dtype=bool)
        table[keys - low] = True
        inside = (values >= low) & (values <= high)
        return inside & table[np.where(inside, values - low, 0)]
    keys = np.unique(keys)
    return keys[np.minimum(np.searchsorted(keys, values), keys.size - 1)] == values


def _first_write_epoch(written: np.ndarray, epochs: np.ndarray, cells: np.ndarray) -> np.ndarray:
    """For each of `cells`, the earliest of `epochs` of the writes of that cell (`written`), or
    NONE: a table by cell where the cells span a small range, else a search of the sorted writes."""
    low, high = int(written.min()), int(written.max())
    inside = (cells >= low) & (cells <= high)
    if high - low < 8 * (cells.size + written.size) + (1 << 22):
        table = np.full(high - low + 1, NONE, dtype=np.int64)
        np.minimum.at(table, written - low, epochs)
        return np.where(inside, table[np.where(inside, cells - low, 0)], NONE)
    order = np.argsort(written, kind="stable")
    keys, starts = np.unique(written[order], return_index=True)
    earliest = np.minimum.reduceat(epochs[order], starts)
    at = np.minimum(np.searchsorted(keys, cells), keys.size - 1)
    return np.where(keys[at] == cells, earliest[at], NONE)


def composite_key(columns: list[np.ndarray]) -> np.ndarray | None:
    """One int64 ordering rows as the columns do lexicographically (None if it would overflow)."""
    if not columns or columns[0].size == 0:
        return np.zeros(0, dtype=np.int64)
    key = np.zeros(columns[0].size, dtype=np.int64)
    span = 1
    for column in columns:
        low, high = int(column.min()), int(column.max())
        size = high - low + 1
        span *= size
        if span >= 1 << 62:
            return None
        key = key * size + (column - low)
    return key
