"""verify.fastpath.memo: a value is reused only for the very same arrays and scalars."""

from __future__ import annotations

import gc
from dataclasses import dataclass

import numpy as np
import pytest

from verify.fastpath.memo import CaseMemo


@dataclass(frozen=True)
class Value:
    data: np.ndarray


class Counter:
    def __init__(self):
        self.calls = 0

    def make(self, arrays):
        def make():
            self.calls += 1
            return Value(np.array([float(a.sum()) for a in arrays]))
        return make


def test_a_value_is_made_once_for_the_same_arrays_and_scalars():
    memo, counter = CaseMemo(), Counter()
    arrays = (np.arange(3.0), np.ones(2))
    first = memo.get(arrays, ("f16", 1.0), counter.make(arrays))
    again = memo.get(arrays, ("f16", 1.0), counter.make(arrays))
    assert again is first and counter.calls == 1


def test_other_scalars_or_another_array_object_are_a_miss():
    memo, counter = CaseMemo(), Counter()
    a, b = np.arange(3.0), np.ones(2)
    memo.get((a, b), ("f16",), counter.make((a, b)))
    memo.get((a, b), ("f32",), counter.make((a, b)))
    equal_copy = a.copy()  # equal contents, another object: never taken for the same input
    memo.get((equal_copy, b), ("f16",), counter.make((equal_copy, b)))
    assert counter.calls == 3


def test_an_entry_is_dropped_when_one_of_its_arrays_is_freed():
    memo, counter = CaseMemo(), Counter()
    keep = np.ones(2)
    arrays = (np.arange(3.0), keep)
    memo.get(arrays, (), counter.make(arrays))
    assert len(memo) == 1
    del arrays
    gc.collect()
    assert len(memo) == 0
    fresh = (np.arange(3.0) + 1, keep)  # may reuse the freed array's id: still a miss
    value = memo.get(fresh, (), counter.make(fresh))
    assert counter.calls == 2 and value.data[0] == 6.0


def test_only_the_most_recent_entries_are_kept():
    memo, counter = CaseMemo(size=2), Counter()
    arrays = [(np.full(2, float(i)),) for i in range(3)]
    for a in arrays:
        memo.get(a, (), counter.make(a))
    assert len(memo) == 2
    memo.get(arrays[0], (), counter.make(arrays[0]))
    assert counter.calls == 4  # the oldest was evicted and made again


def test_a_remembered_value_cannot_be_changed_by_a_caller():
    memo, counter = CaseMemo(), Counter()
    arrays = (np.arange(3.0),)
    value = memo.get(arrays, (), counter.make(arrays))
    with pytest.raises(ValueError):
        value.data[0] = 42.0
