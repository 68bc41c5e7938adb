"""Counting distinct things without holding them: what a run read in windows still has to count
over the whole run (distinct pairs, distinct gold pairs, ids shared by two files).

An item is kept as a 64-bit digest, Python's hash of it: 8 bytes, against the 100 or more a set
entry with its tuple of strings costs. Two different items share a digest with probability about
n^2 / 2^65 for n items (1 in 2.6 million at 4 million pairs); then a count is one short. The
digests are only compared within one process, so hash randomisation does not matter.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Iterable

import numpy as np

_MERGE_AT = 1 << 20  # digests buffered before they are merged into the sorted distinct ones


def digest(item: Hashable) -> int:
    return hash(item)


class DistinctCount:
    """How many distinct digests were added; memory grows with the distinct ones only."""

    __slots__ = ("_distinct", "_buffer")

    def __init__(self) -> None:
        self._distinct = np.empty(0, dtype=np.int64)  # sorted, no repeats
        self._buffer = array("q")

    def add(self, d: int) -> None:
        self._buffer.append(d)
        if len(self._buffer) >= _MERGE_AT:
            self._merge()

    def extend(self, ds: Iterable[int]) -> None:
        self._buffer.extend(ds)
        if len(self._buffer) >= _MERGE_AT:
            self._merge()

    def _merge(self) -> None:
        if self._buffer:
            new = np.frombuffer(self._buffer, dtype=np.int64)
            self._distinct = np.union1d(self._distinct, new)
            self._buffer = array("q")

    def values(self) -> np.ndarray:
        """The distinct digests, sorted."""
        self._merge()
        return self._distinct

    def __len__(self) -> int:
        return len(self.values())
