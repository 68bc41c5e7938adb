"""How the hf backend cuts tokenised pairs into batches, pads them, and spreads them over devices.

Pure functions over numpy arrays (no torch here), so the rules that decide which pairs share a
forward pass, and hence the labels, are tested without a model:

- `plan_batches`: pairs sorted longest first (ties in input order), then cut into batches of at
  most `batch_size` pairs and, with a token budget, at most `batch_tokens` padded tokens. Without
  a budget the batches are exactly those of a plain sort-and-slice, so labels match runs made
  before the budget existed.
- `Packed`: a chunk's token columns as one flat int64 array per column plus offsets, built once;
  `pad` gathers a batch's rows into a padded matrix with one vectorised indexing step (a Python
  loop per row cost as much as the tiny model's forward pass).
- `assign_devices`: batch k goes to device k mod D. Every batch keeps its rows whatever the number
  of devices, so with identical replicas the labels are those of one device.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

#: --batch-size auto on a CPU: the largest batch gains nothing there (the forward pass is
#: compute-bound at any size), and 32 keeps the batches, hence the labels, of the default.
CPU_AUTO_BATCH = 32
#: --batch-size auto on CUDA: the batch sizes tried, smallest first, on the widest batch.
AUTO_CANDIDATES = (32, 64, 128, 256, 512, 1024, 2048, 4096)


def length_order(lengths: Sequence[int] | np.ndarray) -> np.ndarray:
    """Indices longest first; equal lengths keep input order (a stable sort)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.argsort(-lengths, kind="stable")


def plan_batches(
    lengths: Sequence[int] | np.ndarray, batch_size: int, batch_tokens: int | None = None
) -> list[np.ndarray]:
    """Batches of indices into `lengths`, longest pairs first.

    A batch holds at most `batch_size` pairs and, when `batch_tokens` is given, at most
    `batch_tokens` tokens once padded to its longest pair (always at least one pair, however long).
    Sorting first keeps padding small; longest first makes an out-of-memory batch show up at once.
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    if batch_tokens is not None and batch_tokens < 1:
        raise ValueError("batch_tokens must be at least 1")
    lengths = np.asarray(lengths, dtype=np.int64)
    order = length_order(lengths)
    if batch_tokens is None:
        return [order[s : s + batch_size] for s in range(0, len(order), batch_size)]
    batches = []
    start = 0
    while start < len(order):
        width = int(lengths[order[start]])  # the widest of this batch: sorted longest first
        n = max(1, min(batch_size, batch_tokens // max(1, width)))
        batches.append(order[start : start + n])
        start += n
    return batches


def assign_devices(n_batches: int, n_devices: int) -> list[int]:
    """The device index of each batch: round robin, so devices get alternate batches and the
    longest ones are shared rather than all landing on one."""
    if n_devices < 1:
        raise ValueError("need at least one device")
    return [k % n_devices for k in range(n_batches)]


@dataclass
class Packed:
    """Token columns of a chunk of pairs: per column one flat array, plus each row's offset and
    length (all columns of a row have the same length)."""

    flat: dict[str, np.ndarray]
    offsets: np.ndarray
    lengths: np.ndarray

    @classmethod
    def from_lists(cls, columns: Mapping[str, Sequence[Sequence[int]]]) -> Packed:
        """From the tokenizer's lists of ids (one list per pair, per column)."""
        first = next(iter(columns.values()))
        lengths = np.fromiter((len(row) for row in first), dtype=np.int64, count=len(first))
        offsets = np.zeros(len(first), dtype=np.int64)
        if len(first):
            np.cumsum(lengths[:-1], out=offsets[1:])
        total = int(lengths.sum())
        flat = {
            name: np.fromiter(chain.from_iterable(col), dtype=np.int64, count=total)
            for name, col in columns.items()
        }
        return cls(flat, offsets, lengths)

    def __len__(self) -> int:
        return len(self.lengths)

    def pad(
        self,
        rows: Sequence[int] | np.ndarray,
        fill: Mapping[str, int],
        left: bool = False,
        mask_name: str | None = None,
    ) -> dict[str, np.ndarray]:
        """int64 matrices for the given rows, padded to the longest of them with `fill[column]`
        (0 when absent), on the left or the right. With `mask_name`, an attention mask is built
        under that name when the columns lack one."""
        rows = np.asarray(rows, dtype=np.int64)
        lengths = self.lengths[rows]
        width = int(lengths.max()) if len(rows) else 0
        pos = np.arange(width, dtype=np.int64)[None, :]
        start = (width - lengths)[:, None] if left else np.zeros((len(rows), 1), dtype=np.int64)
        valid = (pos >= start) & (pos < start + lengths[:, None])
        src = np.where(valid, self.offsets[rows][:, None] + pos - start, 0)
        out = {}
        for name, flat in self.flat.items():
            out[name] = np.where(valid, flat[src] if len(flat) else 0, fill.get(name, 0)).astype(
                np.int64
            )
        if mask_name and mask_name not in out:
            out[mask_name] = valid.astype(np.int64)
        return out


def ragged_ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """concatenate([arange(s, s + n) for s, n in zip(starts, lengths)]) without the loop."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    ends = np.cumsum(lengths)
    return np.repeat(np.asarray(starts, dtype=np.int64) - ends + lengths, lengths) + np.arange(
        total, dtype=np.int64
    )


@dataclass(frozen=True)
class PairTemplate:
    """How a tokenizer joins two encoded sentences: prefix + A + middle + B + suffix special
    tokens, each part with one token type (BERT: [CLS] A [SEP] B [SEP], types 0 0 0 1 1)."""

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    types: tuple[int, int, int, int, int]  # prefix, A, middle, B, suffix

    @classmethod
    def infer(
        cls,
        pair_ids: Sequence[int],
        pair_types: Sequence[int] | None,
        a_ids: Sequence[int],
        b_ids: Sequence[int],
    ) -> PairTemplate | None:
        """The template that turns a_ids, b_ids into pair_ids (and pair_types), or None when the
        pair is not such a concatenation."""
        pair_ids, a_ids, b_ids = list(pair_ids), list(a_ids), list(b_ids)
        n, la, lb = len(pair_ids), len(a_ids), len(b_ids)
        types = list(pair_types) if pair_types is not None else [0] * n
        for x in range(0, n - la - lb + 1):
            if pair_ids[x : x + la] != a_ids:
                continue
            for y in range(0, n - la - lb - x + 1):
                b0 = x + la + y
                if pair_ids[b0 : b0 + lb] != b_ids:
                    continue
                parts = [(0, x), (x, x + la), (x + la, b0), (b0, b0 + lb), (b0 + lb, n)]
                seg_types = []
                for s, e in parts:
                    kinds = set(types[s:e])
                    if len(kinds) > 1:
                        return None
                    seg_types.append(kinds.pop() if kinds else 0)
                return cls(
                    tuple(pair_ids[:x]),
                    tuple(pair_ids[x + la : b0]),
                    tuple(pair_ids[b0 + lb :]),
                    tuple(seg_types),
                )  # type: ignore[arg-type]
        return None

    @property
    def extra(self) -> int:
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    def join(self, sentences: Packed, a: np.ndarray, b: np.ndarray, with_types: bool) -> Packed:
        """Pairs (sentence a[i], sentence b[i]) encoded with this template, as a Packed."""
        flat = sentences.flat["input_ids"]
        la, lb = sentences.lengths[a], sentences.lengths[b]
        px, my, sz = len(self.prefix), len(self.middle), len(self.suffix)
        lengths = px + la + my + lb + sz
        offsets = np.zeros(len(a), dtype=np.int64)
        if len(a):
            np.cumsum(lengths[:-1], out=offsets[1:])
        ids = np.empty(int(lengths.sum()), dtype=np.int64)
        types = np.empty_like(ids) if with_types else None
        a_at, b_at = offsets + px, offsets + px + la + my
        parts = [
            (offsets, self.prefix, self.types[0]),
            (a_at + la, self.middle, self.types[2]),
            (b_at + lb, self.suffix, self.types[4]),
        ]
        for at, tokens, kind in parts:
            for j, token in enumerate(tokens):
                ids[at + j] = token
                if types is not None:
                    types[at + j] = kind
        for at, which, n, kind in ((a_at, a, la, self.types[1]), (b_at, b, lb, self.types[3])):
            dst = ragged_ranges(at, n)
            ids[dst] = flat[ragged_ranges(sentences.offsets[which], n)]
            if types is not None:
                types[dst] = kind
        columns = {"input_ids": ids}
        if types is not None:
            columns["token_type_ids"] = types
        return Packed(columns, offsets, lengths)
