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

_CHUNK = 1 << 18  # digests per sorted chunk
_MAX_CHUNKS = 64


def digest(item: Hashable) -> int:
    return hash(item)


class DistinctCount:
    """How many distinct digests were added. They are kept in sorted chunks of at most _CHUNK,
    each without repeats, merged only when counted (or when there are many chunks): a long run
    adds chunks of one size instead of re-growing one array, which left the allocator's heap
    fragmented (measured: docs/speed.md, 'Streaming')."""

    __slots__ = ("_chunks", "_buffer")

    def __init__(self) -> None:
        self._chunks: list[np.ndarray] = []
        self._buffer = array("q")

    def add(self, d: int) -> None:
        self._buffer.append(d)
        if len(self._buffer) >= _CHUNK:
            self._seal()

    def extend(self, ds: Iterable[int]) -> None:
        self._buffer.extend(ds)
        if len(self._buffer) >= _CHUNK:
            self._seal()

    def _seal(self) -> None:
        if self._buffer:
            self._chunks.append(np.unique(np.frombuffer(self._buffer, dtype=np.int64)))
            self._buffer = array("q")
        if len(self._chunks) > _MAX_CHUNKS:
            self._chunks = [self.values()]

    def values(self) -> np.ndarray:
        """The distinct digests, sorted."""
        if self._buffer:
            self._seal()
        if len(self._chunks) > 1:
            merged = np.concatenate(self._chunks)
            self._chunks = []
            merged.sort()  # in place: np.unique would copy the merged digests once more
            first = np.empty(len(merged), dtype=bool)
            first[0] = True
            np.not_equal(merged[1:], merged[:-1], out=first[1:])
            self._chunks = [merged[first]]
        return self._chunks[0] if self._chunks else np.empty(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self.values())
