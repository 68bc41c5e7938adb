"""The one read of the triples before any model loads: a broken line is reported before any
labelling, the progress bars know the run's size, the windows know which pairs to carry, and
triple ids shared between files are warned about.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from .alarm_report import AlarmInputs
from .carry import CarryPlan
from .distinct import DistinctCount, digest
from .schedule import KINDS, blocks, pairs_of
from .triples import Triple, TripleSource

log = logging.getLogger("transnli")

# read-ahead when the triples are read again only to find something (their ids)
WINDOW_READ = 65_536


@dataclass
class RunFacts:
    """What one read of the triples, before any model loads, says about them (the same for every
    model): counts per file, datasets in first-seen order, distinct pairs of each kind, ids per
    file, and which pairs come back in a later labelling block (`carry`)."""

    n_triples: int = 0
    per_source: Counter = field(default_factory=Counter)
    source_datasets: dict[str, dict[str, None]] = field(default_factory=dict)
    unique: dict[str, DistinctCount] = field(
        default_factory=lambda: {k: DistinctCount() for k in KINDS}
    )
    ids: dict[str, DistinctCount] = field(default_factory=dict)
    carry: CarryPlan = field(default_factory=CarryPlan)

    def add(self, triples: Sequence[Triple]) -> list[int]:
        """Count the next triples; returns the digests of their pairs, four a triple in KINDS
        order."""
        self.n_triples += len(triples)
        unique = [self.unique[k] for k in KINDS]
        window = []
        for t in triples:
            self.per_source[t.source] += 1
            self.source_datasets.setdefault(t.source, {})[t.dataset] = None
            self.ids.setdefault(t.source, DistinctCount()).add(digest(t.id))
            for bucket, pair in zip(unique, pairs_of(t), strict=True):
                d = digest(pair)
                bucket.add(d)
                window.append(d)
        self.carry.add_window(window)
        return window

    @property
    def datasets(self) -> list[str]:
        return list(dict.fromkeys(d for names in self.source_datasets.values() for d in names))

    def unique_pair_counts(self) -> dict[str, int]:
        return {kind: len(bucket) for kind, bucket in self.unique.items()}


def read_facts(source: TripleSource, window: int | None, alarms: AlarmInputs | None) -> RunFacts:
    """Read every triple once before a model loads: a broken line is reported before any
    labelling, the progress bars know the run's size, and the windows know what to carry."""
    facts = RunFacts()
    for triples in source.windows(window):
        for block in blocks(triples):  # the carry plan's unit: what is labelled together
            pair_digests = facts.add(block)
            if alarms is not None:
                alarms.add_triples(block, pair_digests)
    facts.carry.plan()
    warn_shared_ids(facts.ids, source)
    return facts


def warn_shared_ids(ids_by_source: Mapping[str, DistinctCount], source: TripleSource) -> int:
    """Warn about triple ids found in more than one triples file (they stay separate triples);
    returns how many ids are shared. `ids_by_source`: each file's id digests."""
    if len(ids_by_source) < 2:
        return 0
    ids, counts = np.unique(
        np.concatenate([d.values() for d in ids_by_source.values()]), return_counts=True
    )
    shared = ids[counts > 1]
    if not len(shared):
        return 0
    files: dict[str, list[str]] = {}  # the first shared id seen, for the message: read once more
    for window in source.windows(WINDOW_READ):
        for t in window:
            d = digest(t.id)
            i = int(np.searchsorted(shared, d))
            if i < len(shared) and shared[i] == d:
                where = files.setdefault(t.id, [])
                if t.source not in where:
                    where.append(t.source)
                if len(where) > 1:
                    log.warning(
                        "%d triple ids appear in more than one triples file (e.g. %r in %s and "
                        "%s); each file's triple is evaluated and counted on its own",
                        len(shared),
                        t.id,
                        where[0],
                        where[1],
                    )
                    return len(shared)
    return len(shared)
