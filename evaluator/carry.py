"""Labels a run read in windows carries from one window to a later one.

A pair can come back in a later window (the same H and H' under many premises, a premise shared
by triples far apart). It is labelled once: when the triples are first read (before any model
loads), `CarryPlan` learns from each window's pair digests which pairs appear in more than one
window and the last window each appears in; while a model runs, `CarriedLabels` keeps the labels
of those pairs only, and drops each after the last window that needs it. What is held is the
pairs shared between windows, not the run.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from .backends.base import Pair, Prediction

_NONE = np.empty(0, dtype=np.int64)


class CarryPlan:
    """Per pair digest seen in more than one window: the last window it appears in."""

    def __init__(self) -> None:
        self._windows: list[np.ndarray] = []  # each window's distinct digests, until plan()
        self._keys = _NONE  # sorted digests of pairs in more than one window
        self._last = _NONE

    def add_window(self, digests: Sequence[int]) -> None:
        self._windows.append(np.unique(np.fromiter(digests, dtype=np.int64, count=len(digests))))

    def plan(self) -> None:
        """Done reading: find the pairs that come back."""
        windows, self._windows = self._windows, []
        if len(windows) < 2:
            return
        d = np.concatenate(windows)
        w = np.concatenate([np.full(len(u), i, dtype=np.int32) for i, u in enumerate(windows)])
        order = np.lexsort((w, d))  # by digest, then window
        d, w = d[order], w[order]
        starts = np.flatnonzero(np.r_[True, d[1:] != d[:-1]])
        ends = np.r_[starts[1:], len(d)]
        again = ends - starts > 1
        self._keys = d[starts[again]]
        self._last = w[ends[again] - 1]

    def last_window(self, digests: np.ndarray) -> np.ndarray:
        """The last window each digest appears in; -1 for one that appears in a single window."""
        if not len(self._keys):
            return np.full(len(digests), -1)
        i = np.minimum(np.searchsorted(self._keys, digests), len(self._keys) - 1)
        return np.where(self._keys[i] == digests, self._last[i], -1)

    def __len__(self) -> int:
        """How many pairs come back in a later window."""
        return len(self._keys)


class CarriedLabels(Mapping):
    """{pair: Prediction} for the pairs labelled in an earlier window that a later one needs."""

    def __init__(self, plan: CarryPlan):
        self.plan = plan
        self.window = -1  # the last window labelled
        self._held: dict[Pair, tuple[Prediction, int]] = {}

    def next_window(self, labels: Mapping[Pair, Prediction], pair_digests: np.ndarray) -> None:
        """The labels of the window just labelled (`pair_digests`: its pairs' digests, in its
        order): keep those a later window needs, drop those no later window needs."""
        self.window += 1
        if len(self.plan):
            pairs = list(labels)
            last = self.plan.last_window(pair_digests)
            for i in np.flatnonzero(last > self.window):
                self._held[pairs[i]] = (labels[pairs[i]], int(last[i]))
        self._held = {p: kept for p, kept in self._held.items() if kept[1] > self.window}

    def __getitem__(self, pair: Pair) -> Prediction:
        return self._held[pair][0]

    def __contains__(self, pair: object) -> bool:
        return pair in self._held

    def __iter__(self) -> Iterator[Pair]:
        return iter(self._held)

    def __len__(self) -> int:
        return len(self._held)
