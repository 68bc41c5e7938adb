"""Keeping a language model's weights out of resident memory while they are not being read.

A converted model loads memory-mapped from its safetensors file: a weight's pages join this
process's resident set (RSS) only once they are read, and then stay. An embedding lookup reads only
the rows it gathers, but the output layer reads every row of its matrix at every batch: Gemma 3's
tied 262k x 640 embedding and output matrix (671 MB in float32, more than half the model) would sit
in RSS for the whole run. `FilePages` hands the pages of such a matrix back to the kernel once a
chunk of the vocabulary has been scored (madvise MADV_DONTNEED): they stay in the page cache, so
reading them again costs a minor page fault per page rather than a disk read, and at most one chunk
(`OutputLayer.CHUNK` rows: 84 MB for Gemma) is resident at a time. The numbers do not change: the
same bytes are read from the same file (tests/test_lm_memory.py checks that the scores are equal).

Only pages that are clean copies of a file are handed back: a weight that is not file-backed (a
copy made by a dtype conversion, a GPU tensor, a model built in memory), or whose mapping holds
pages written since it was mapped, is left alone, as is everything off Linux (`FilePages.of` gives
None).

Two more savings keep the same numbers too: `drop_build_tables` (the Python tables transformers
keeps beside a fast tokenizer) and `logsumexp_in_place` (one temporary the size of a chunk's logits
fewer). What each saves: docs/generation.md, "The language model's memory".
"""

from __future__ import annotations

import ctypes
import logging
import math
import mmap
import os
import re
from dataclasses import dataclass

log = logging.getLogger("transnli")

MAPS = "/proc/self/maps"
SMAPS = "/proc/self/smaps"
#: a mapping's first line in smaps: its address range (the lines after it are "Key: value")
RANGE = re.compile(r"^([0-9a-f]+)-[0-9a-f]+ ")


@dataclass(frozen=True)
class Mapping:
    """One line of /proc/self/maps: an address range and what backs it."""

    start: int
    end: int
    inode: int
    path: str

    @classmethod
    def parse(cls, line: str) -> Mapping:
        fields = line.split(maxsplit=5)
        low, high = fields[0].split("-")
        path = fields[5].strip() if len(fields) > 5 else ""
        return cls(int(low, 16), int(high, 16), int(fields[4]), path)

    @property
    def file_backed(self) -> bool:
        return self.inode != 0 and self.path.startswith("/")


def mapping_of(address: int, size: int) -> Mapping | None:
    """The mapping that holds all of [address, address + size), or None."""
    try:
        with open(MAPS, encoding="utf-8") as fh:
            for line in fh:
                m = Mapping.parse(line)
                if m.start <= address and address + size <= m.end:
                    return m
    except OSError:  # not Linux, or /proc not mounted
        return None
    return None


def anonymous_kb(mapping: Mapping) -> int | None:
    """Kilobytes of the mapping that are private copies (pages written since it was mapped):
    those hold what the file does not, and must not be handed back. None when unknown."""
    try:
        with open(SMAPS, encoding="utf-8") as fh:
            inside = False
            for line in fh:
                head = RANGE.match(line)
                if head:
                    inside = int(head.group(1), 16) == mapping.start
                elif inside and line.startswith("Anonymous:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


class FilePages:
    """The pages of one file-backed tensor, to be handed back after each read."""

    def __init__(self, address: int, row_bytes: int, rows: int, mapping: Mapping):
        self.address = address
        self.row_bytes = row_bytes
        self.rows = rows
        self.mapping = mapping
        self.page = mmap.PAGESIZE
        libc = ctypes.CDLL(None, use_errno=True)
        self._madvise = libc.madvise
        self._madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
        self._madvise.restype = ctypes.c_int
        self.enabled = True

    @classmethod
    def of(cls, tensor) -> FilePages | None:
        """For a contiguous CPU tensor whose bytes are clean pages of a memory-mapped file;
        None for anything else."""
        if not hasattr(mmap, "MADV_DONTNEED") or tensor.device.type != "cpu":
            return None
        if not tensor.is_contiguous() or tensor.dim() < 1 or tensor.numel() == 0:
            return None
        size = tensor.numel() * tensor.element_size()
        mapping = mapping_of(tensor.data_ptr(), size)
        if mapping is None or not mapping.file_backed or anonymous_kb(mapping) != 0:
            return None
        return cls(tensor.data_ptr(), size // tensor.shape[0], tensor.shape[0], mapping)

    def release(self, lo: int = 0, hi: int | None = None) -> None:
        """Hand back the pages of rows lo..hi (all by default). The pages at either end may hold
        a neighbouring tensor's bytes too: those are clean file pages as well, read again from
        the page cache when next needed. A refusal (EINVAL on an odd mapping) turns it off."""
        hi = self.rows if hi is None else min(hi, self.rows)
        if not self.enabled or hi <= lo:
            return
        start = self.address + lo * self.row_bytes
        end = self.address + hi * self.row_bytes
        start = max(start - start % self.page, self.mapping.start)
        end = min(end + (-end) % self.page, self.mapping.end)
        if self._madvise(start, end - start, mmap.MADV_DONTNEED) != 0:
            # the scores are unaffected; only the memory saving is lost
            self.enabled = False
            log.debug(f"madvise refused: {os.strerror(ctypes.get_errno())}; pages kept")


#: what transformers' (5.x) tokenizer classes keep of the tables they built their Rust tokenizer
#: from: for Gemma 3, 262k vocabulary entries and 515k merges, 140 MB of Python objects
BUILD_TABLES = ("_vocab", "_merges")


def drop_build_tables(tokenizer) -> list[str]:
    """Drop the tables a fast tokenizer was built from (`BUILD_TABLES`): encoding and decoding
    read only the Rust tokenizer built from them, which keeps its own copy. A slow (Python)
    tokenizer encodes with its tables and is left alone. Returns the names dropped."""
    if not getattr(tokenizer, "is_fast", False) or getattr(tokenizer, "_tokenizer", None) is None:
        return []
    dropped = []
    for name in BUILD_TABLES:
        table = getattr(tokenizer, name, None)
        if isinstance(table, (dict, list)) and table:
            setattr(tokenizer, name, type(table)())
            dropped.append(name)
    return dropped


def logsumexp_in_place(logits):
    """torch.logsumexp(logits, -1), computed in `logits` itself (which it overwrites): torch's own
    makes a temporary as large as its input, and for the output layer's chunk of the vocabulary
    that is positions x 32,768 floats (84 MB at 640 positions) on top of the logits, the largest
    moment of a batch. The same steps as torch's (ATen's logsumexp: the row's maximum, 0 where it
    is infinite, exp of the difference, sum, log, plus the maximum), so the same bits
    (tests/test_lm_memory.py)."""
    import torch

    maxes = torch.amax(logits, -1, keepdim=True)
    maxes.masked_fill_(maxes.abs() == math.inf, 0)
    total = logits.sub_(maxes).exp_().sum(-1)
    return total.log_().add_(maxes.squeeze(-1))
