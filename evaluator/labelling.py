"""Labelling pairs with a model: unique pairs batch by batch (`label_pairs`), a window of triples
in its two stages (`label_model`: (P,H), (H,H'), (H',H) first, then (P,H') where the rules need
it), and the progress bars that show it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from .backends import NLIBackend, Pair, Prediction
from .errors import EvaluatorError
from .label_table import LabelTable
from .schedule import PH2, first_stage, pair_for, second_stage
from .triples import Triple


def label_pairs(backend: NLIBackend, pairs: Sequence[Pair], progress=None) -> LabelTable:
    """Label unique pairs with a backend, batch by batch; `progress(n)` after each batch."""
    backend.check_available(pairs)
    out = LabelTable()  # a third of a dict's memory: the labels are most of a large run's
    for idx, preds in backend.predict_batches(pairs):
        for i, pred in zip(idx, preds, strict=True):
            out[pairs[i]] = pred
        if progress is not None:
            progress(len(idx))
    missing = len(pairs) - len(out)
    if missing:
        raise EvaluatorError(f"{backend.spec}: the backend returned no label for {missing} pairs")
    return out


def progress_bar(enabled: bool, total: int, desc: str):
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=desc,
        unit="pair",
        disable=not enabled,
        file=sys.stderr,
        dynamic_ncols=True,
        leave=True,
    )


class PairProgress:
    """One model's progress bar over the pairs it is asked. With `most_pairs` (the distinct pairs
    of every kind the run holds, from the read before any model loads) the total is that from the
    start and never changes: the (P,H') pairs the rules turn out not to need are counted as done
    when the first stage has decided it (`skip`), and the bar ends full (issue 38: a total that
    grew from 338 to 461 mid-run). Without it, the total grows with the pairs asked; in a run read
    in windows it is then an estimate until the last window: the pairs asked so far, plus the
    triples still to come at the pairs per triple of the windows done."""

    def __init__(
        self,
        enabled: bool,
        desc: str,
        n_triples: int | None = None,
        most_pairs: int | None = None,
    ):
        self.bar = progress_bar(enabled, most_pairs or 0, desc)
        self.fixed = bool(most_pairs)
        self.n_triples = n_triples
        self.done_triples = self.done_pairs = 0  # windows finished
        self.window_triples = self.window_pairs = 0  # the window being labelled

    def add_triples(self, n: int) -> None:
        """A new window of n triples (the previous one is finished)."""
        self.done_triples += self.window_triples
        self.done_pairs += self.window_pairs
        self.window_triples, self.window_pairs = n, 0

    def add_pairs(self, n: int) -> None:
        self.window_pairs += n
        if self.fixed:
            return
        total = self.done_pairs + self.window_pairs
        if self.n_triples and self.window_triples:
            per_triple = (
                self.done_pairs / self.done_triples
                if self.done_triples
                else self.window_pairs / self.window_triples
            )
            rest = max(0, self.n_triples - self.done_triples - self.window_triples)
            total = (
                self.done_pairs
                + max(self.window_pairs, round(per_triple * self.window_triples))
                + round(per_triple * rest)
            )
        self.bar.total = total
        self.bar.refresh()

    def update(self, n: int) -> None:
        if self.fixed:  # the total is an upper bound: the bar fills only when the run is done
            n = min(n, max(self.bar.total - 1 - self.bar.n, 0))
        self.bar.update(n)

    def skip(self, n: int) -> None:
        """n pairs of the total that will not be asked (not needed, or known already)."""
        if self.fixed and n > 0:
            self.update(n)

    def finish(self) -> None:
        """Every window labelled: the bar is full (the total is what was asked, without
        `most_pairs`)."""
        if self.fixed:
            self.bar.update(self.bar.total - self.bar.n)
        else:
            self.bar.total = self.done_pairs + self.window_pairs
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def label_model(
    backend: NLIBackend,
    triples: Sequence[Triple],
    all_pairs: bool = False,
    progress: PairProgress | None = None,
    known: Mapping[Pair, Prediction] | None = None,
) -> LabelTable:
    """All labels one model needs for the triples (two stages unless all_pairs); pairs in `known`
    (labelled in an earlier window) are not asked again."""
    known = known or {}
    if progress is not None:
        progress.add_triples(len(triples))
    labels = _label_new(backend, first_stage(triples, all_pairs=all_pairs), known, progress)
    if not all_pairs:
        stage2 = [p for p in second_stage(triples, labels.label) if p not in labels]
        if progress is not None:  # the (P,H') pairs the rules do not need count as done
            possible = {pair_for(t, PH2) for t in triples}
            progress.skip(len([p for p in possible if p not in labels]) - len(stage2))
        labels.update(_label_new(backend, stage2, known, progress))
    return labels


def _label_new(
    backend: NLIBackend,
    pairs: list[Pair],
    known: Mapping[Pair, Prediction],
    progress: PairProgress | None,
) -> LabelTable:
    ask = [p for p in pairs if p not in known] if known else pairs
    if progress is not None:
        progress.add_pairs(len(ask))
        progress.skip(len(pairs) - len(ask))  # labelled in an earlier window
    labels = label_pairs(backend, ask, progress.update if progress is not None else None)
    if len(ask) < len(pairs):
        labels.update((p, known[p]) for p in pairs if p in known)
    return labels
