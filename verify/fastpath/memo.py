"""Remember a value computed from a case's arrays for as long as those very arrays live.

Several checks ask for the same case's reference within one example: TVM's decode filters its
cases on the reference's logits and then judges them against it, the differential check asks
two kernels of one contract for their (identical) expected outputs, a replay fits the case and
then runs it. A CaseMemo keys a value on the identity of the arrays it was computed from (and
on whatever scalars the caller adds to the key), never on their contents, so:

- it can only be reused for the very same array objects: each entry holds weak references to
  its arrays and is dropped when any of them is freed (so an id can never be recycled into a
  false hit), and a lookup also checks that each reference still points at the array it is given;
- a case derived with Case.replace(...) shares its unchanged arrays, so it shares the value
  when the key's arrays and scalars are unchanged (TVM's argument layouts change params only);
- arrays are treated as immutable once drawn (cases are built, transformed into new arrays,
  never written in place), and the remembered value's arrays are made read-only, so a caller
  cannot change what the next caller gets.

The memo holds a few entries (the most recent), since checks reuse a value within one example.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable

import numpy as np


class CaseMemo:
    """A small most-recently-used map from (arrays by identity, scalars) to a computed value."""

    def __init__(self, size: int = 4):
        self._size = size
        self._entries: OrderedDict = OrderedDict()

    def get(self, arrays: tuple, scalars: Hashable, make: Callable[[], object]):
        """The value for these arrays (by identity) and scalars, made by `make()` on a miss."""
        key = (tuple(id(a) for a in arrays), scalars)
        entry = self._entries.get(key)
        if entry is not None and all(ref() is a for ref, a in zip(entry[0], arrays)):
            self._entries.move_to_end(key)
            return entry[1]
        value = make()
        _freeze(value)
        try:
            refs = tuple(weakref.ref(a, lambda _: self._entries.pop(key, None)) for a in arrays)
        except TypeError:  # an input that cannot be weakly referenced is never remembered
            return value
        self._entries[key] = (refs, value)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


def _freeze(value) -> None:
    """Make the numpy arrays a remembered value holds (directly or as attributes) read-only."""
    fields = vars(value).values() if hasattr(value, "__dict__") else (
        value if isinstance(value, (tuple, list)) else (value,))
    for item in fields:
        if isinstance(item, np.ndarray):
            item.flags.writeable = False
