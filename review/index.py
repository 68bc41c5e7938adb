"""Random access to a run's triples.jsonl by line offset, so the review page reads one record
without loading a 100,000-line file into memory.

The offsets of the non-blank lines are built in one pass and cached next to the file
(triples.jsonl.offsets; the `uncertain` order's distances likewise, triples.jsonl.uncertainty);
a cache names the file's size and modification time, so a file that changed since is indexed
again. The file may change while a review runs (an edit, a rewrite by another command): every
read compares its size and modification time with the indexed ones and indexes it again when
they differ (`version` counts those), so a record is never read at a stale offset; a file that
now holds another number of records, or none at all, is refused in one line.
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from transnli.review.errors import ReviewError

SUFFIX = ".offsets"
MAGIC = b"TNLIOFS1"  # format tag of the cache file; a different one is rebuilt


def _gone(path: Path) -> ReviewError:
    return ReviewError(
        f"{path} is gone (deleted or moved while the review ran): put it back, or run "
        "`transnli review` again on the run"
    )


def _signature(path: Path) -> array:
    try:
        st = path.stat()
    except FileNotFoundError as e:
        raise _gone(path) from e
    return array("Q", [st.st_size, st.st_mtime_ns])


def _scan(path: Path) -> array:
    # A plain pass over the lines: about 0.3 s for 100,000 triples (benchmarks/bench_review.py),
    # as fast as a numpy search of a memory map and without its file-sized temporary arrays.
    offsets = array("Q")
    pos = 0
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                offsets.append(pos)
            pos += len(line)
    return offsets


class LineIndex:
    """The non-blank lines of a JSONL file, by number (0-based), read by seeking."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.cache = self.path.with_name(self.path.name + SUFFIX)
        self.signature = _signature(self.path)
        self.offsets = self.cached(SUFFIX, "Q", lambda: _scan(self.path))
        self.version = 0  # how many times the file was indexed again after it changed

    def follow(self) -> None:
        """Index the file again if it changed since it was indexed; refused when it now holds
        another number of records (the session's order and sample were drawn from the old)."""
        sig = _signature(self.path)
        if sig == self.signature:
            return
        offsets = _scan(self.path)
        if len(offsets) != len(self.offsets):
            raise ReviewError(
                f"{self.path} changed while the review ran: it now holds {len(offsets)} "
                f"records, not {len(self.offsets)}; run `transnli review` again"
            )
        self.signature, self.offsets = sig, offsets
        self.version += 1

    def cached(self, suffix: str, typecode: str, build: Callable[[], array]) -> array:
        """An array derived from the file, kept in FILE+suffix and built again when the file's
        size or modification time differs from the ones the cache names."""
        cache = self.path.with_name(self.path.name + suffix)
        sig = _signature(self.path)
        try:
            raw = cache.read_bytes()
            if raw[:8] == MAGIC:
                head = array("Q")
                head.frombytes(raw[8:24])
                if head == sig:
                    values = array(typecode)
                    values.frombytes(raw[24:])
                    return values
        except (OSError, ValueError):
            pass  # no cache, or a torn one: build it again
        values = build()
        tmp = cache.with_name(cache.name + ".tmp")
        try:
            with open(tmp, "wb") as fh:
                fh.write(MAGIC + sig.tobytes() + values.tobytes())
            os.replace(tmp, cache)
        except OSError:
            pass  # a read-only run folder still reviews; the array is built again next time
        return values

    def __len__(self) -> int:
        return len(self.offsets)

    def raw(self, i: int) -> bytes:
        self.follow()
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offsets[i])
                return fh.readline()
        except FileNotFoundError as e:
            raise _gone(self.path) from e

    def records(self) -> Iterator[dict[str, Any]]:
        """Every record in order, read in one sequential pass."""
        with open(self.path, "rb") as fh:
            for i, line in enumerate(line for line in fh if line.strip()):
                yield self._parse(line, i)

    def record(self, i: int) -> dict[str, Any]:
        """The record on non-blank line `i`; a bad line raises with file and line number."""
        return self._parse(self.raw(i), i)

    def _parse(self, line: bytes, i: int) -> dict[str, Any]:
        try:
            data = json.loads(line)
        except (ValueError, UnicodeDecodeError) as e:
            raise ReviewError(f"{self.path}: record {i + 1}: not valid JSON ({e})") from e
        if not isinstance(data, dict):
            raise ReviewError(f"{self.path}: record {i + 1}: expected a JSON object")
        return data
