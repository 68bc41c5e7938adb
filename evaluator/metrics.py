"""Metrics as pure functions of labels, per model x dataset.

- n_triples;
- accuracy of M(P,H) against gold, over the distinct (P,H) pairs that have a gold label (a
  sentence with several H' still counts once), null when none has one (the paper's Table 1);
- mutual-entailment and mutual-contradiction rates of (H,H') over all triples (Tables 3, 2);
- per rule: cases (antecedent holds), violations, rate (null when no case) and a Wilson 95%
  interval (Table 4; small denominators such as 0/3 need the interval beside them);
- beyond the paper, under "extras": the substitution rule and contradiction symmetry.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from .distinct import DistinctCount, digest
from .labels import LABELS, C, E
from .rules import RULES, RuleOutcome, contradiction_symmetry, evaluate_triple, mutual, substitution

if TYPE_CHECKING:
    import numpy as np

    from .label_table import LabelTable
    from .triples import Triple

_KINDS = ("p_h", "h_h2", "h2_h", "p_h2")

EXTRAS_NOTE = (
    "Beyond the paper: substitution = mutual E between H and H' means M(P,H') should equal M(P,H) "
    "(also covers C and E -> C); contradiction_symmetry = M(H,H')=C but M(H',H)!=C."
)


@dataclass(frozen=True)
class TripleLabels:
    """One triple's labels under one model. `ph2` is None where it was not computed; `pair` is any
    key of the (P,H) pair (used to count each gold pair once for accuracy)."""

    ph: str
    hh2: str
    h2h: str
    ph2: str | None = None
    gold: str | None = None
    pair: Hashable | None = None
    # Kinds ("p_h", "h_h2", "h2_h", "p_h2") the model was asked about but gave no label for (an
    # LLM judge's unparseable reply): their label is None, and rules that need them skip the triple.
    unlabelled: tuple[str, ...] = ()


def rule_outcome(r: TripleLabels) -> RuleOutcome:
    """`evaluate_triple`, except that a triple whose M(P,H') has no label is skipped (no rule)."""
    if r.ph2 is None and "p_h2" in r.unlabelled:
        return RuleOutcome(None, None)
    return evaluate_triple(r.ph, r.hh2, r.h2h, r.ph2)


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> list[float] | None:
    """Wilson score interval for k successes in n trials ([lo, hi]); None when n == 0.

    The closed form, with the normal quantile from the standard library: scipy's
    `binomtest(...).proportion_ci(method="wilson")` gives the same ends (tests/test_metrics.py
    checks agreement to 1e-12), but importing scipy.stats would add to every evaluation's fixed
    cost for two lines of arithmetic (measured: docs/design-notes.md). The ends are pinned to
    exactly 0 at k == 0 and 1 at k == n, where the formula gives them up to rounding."""
    if n <= 0:
        return None
    if not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    z = _normal_quantile((1 + confidence) / 2)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    lo = 0.0 if k == 0 else max(0.0, centre - half)
    hi = 1.0 if k == n else min(1.0, centre + half)
    return [lo, hi]


@lru_cache(maxsize=8)
def _normal_quantile(q: float) -> float:
    return NormalDist().inv_cdf(q)


def ratio(k: int, n: int) -> float | None:
    return k / n if n else None


def rate_cell(cases: int, violations: int, **extra: Any) -> dict[str, Any]:
    return {
        **extra,
        "cases": cases,
        "violations": violations,
        "rate": ratio(violations, cases),
        "ci95": wilson_interval(violations, cases),
    }


def accuracy(rows: Iterable[TripleLabels]) -> tuple[float | None, int]:
    """(accuracy of M(P,H) against gold over distinct gold pairs, number of such pairs)."""
    counts = MetricCounts()
    counts.add_all(rows)
    return counts.accuracy()


def dataset_metrics(rows: Iterable[TripleLabels]) -> dict[str, Any]:
    """Everything reported for one model on one dataset (the dataset name is added by callers)."""
    counts = MetricCounts()
    counts.add_all(rows)
    return counts.result()


class MetricCounts:
    """dataset_metrics as running counts: rows are added as they come (a window of a large run at a
    time) and nothing but counts is kept, except a digest per distinct gold pair."""

    def __init__(self) -> None:
        self.n = 0
        # Accuracy counts each (pair, gold) once. Whether M(P,H) = gold is a function of that key
        # (one model gives a pair one label), so distinct keys judged and distinct keys right
        # suffice.
        self._judged, self._right = DistinctCount(), DistinctCount()
        self._unkeyed = [0, 0]  # rows without a pair key: each counts on its own (judged, right)
        self.cases: Counter[str] = Counter()
        self.violations: Counter[str] = Counter()
        self.mutual: Counter[str] = Counter()
        self.subst = [0, 0]  # cases, violations
        self.csym = [0, 0]
        self.label_counts: dict[str, Counter[str]] = {k: Counter() for k in _KINDS}
        self.unlabelled: Counter[str] = Counter()

    def add_all(self, rows: Iterable[TripleLabels]) -> None:
        for r in rows:
            self.add(r)

    def add(self, r: TripleLabels) -> None:
        self.n += 1
        if r.gold is not None and r.ph is not None:
            right = r.ph == r.gold
            if r.pair is None:
                self._unkeyed[0] += 1
                self._unkeyed[1] += right
            else:
                key = digest((r.pair, r.gold))
                self._judged.add(key)
                if right:
                    self._right.add(key)
        m = mutual(r.hh2, r.h2h)
        if m is not None:
            self.mutual[m] += 1
        if r.unlabelled:
            self.unlabelled.update(r.unlabelled)
        outcome = rule_outcome(r)
        if outcome.rule is not None:
            self.cases[outcome.rule] += 1
            self.violations[outcome.rule] += bool(outcome.violated)
        s = (
            None
            if r.ph is None or "p_h2" in r.unlabelled
            else substitution(r.ph, r.hh2, r.h2h, r.ph2)
        )
        if s is not None:
            self.subst[0] += 1
            self.subst[1] += s
        cs = contradiction_symmetry(r.hh2, r.h2h)
        if cs is not None:
            self.csym[0] += 1
            self.csym[1] += cs
        for kind, label in zip(_KINDS, (r.ph, r.hh2, r.h2h, r.ph2), strict=True):
            if label is not None:
                self.label_counts[kind][label] += 1

    def accuracy(self) -> tuple[float | None, int]:
        n = len(self._judged) + self._unkeyed[0]
        return ratio(len(self._right) + self._unkeyed[1], n), n

    def result(self) -> dict[str, Any]:
        n = self.n
        acc, n_gold = self.accuracy()
        return {
            "n_triples": n,
            "accuracy": acc,
            "accuracy_pairs": n_gold,
            "mutual_entailment_rate": ratio(self.mutual[E], n),
            "mutual_contradiction_rate": ratio(self.mutual[C], n),
            "mutual_entailment": self.mutual[E],
            "mutual_contradiction": self.mutual[C],
            "rules": {
                rule.key: rate_cell(self.cases[rule.key], self.violations[rule.key], name=rule.name)
                for rule in RULES
            },
            "extras": {
                "beyond_paper": True,
                "substitution": rate_cell(
                    self.subst[0], self.subst[1], name="mutual E => M(P,H')=M(P,H)"
                ),
                "contradiction_symmetry": rate_cell(
                    self.csym[0], self.csym[1], name="M(H,H')=C => M(H',H)=C"
                ),
            },
            "label_counts": {
                kind: {label: counts[label] for label in LABELS}
                for kind, counts in self.label_counts.items()
            },
            # triples per kind of pair that the model left without a label (LLM judges only)
            "unlabelled": {kind: self.unlabelled[kind] for kind in _KINDS},
        }


@dataclass
class ModelCounts:
    """One model's running counts over the run: metrics per dataset and overall, and the distinct
    pairs it was asked (and left without a label)."""

    per_dataset: dict[str, MetricCounts] = field(default_factory=dict)
    overall: MetricCounts = field(default_factory=MetricCounts)
    asked: DistinctCount = field(default_factory=DistinctCount)
    unlabelled: DistinctCount = field(default_factory=DistinctCount)

    def add(
        self,
        rows: Sequence[tuple[Triple, TripleLabels]],
        table: LabelTable,
        pair_digests: np.ndarray,
    ) -> None:
        """A window's rows; `pair_digests`: the digests of `table`'s pairs, in its order."""
        per_dataset, overall = self.per_dataset, self.overall
        for t, row in rows:
            counts = per_dataset.get(t.dataset)
            if counts is None:
                counts = per_dataset[t.dataset] = MetricCounts()
            counts.add(row)
            overall.add(row)
        self.asked.extend(pair_digests)
        if table.unlabelled():
            self.unlabelled.extend(
                d for p, d in zip(table, pair_digests, strict=True) if table.label(p) is None
            )

    def entry(self, spec: str, datasets: Sequence[str]) -> dict[str, Any]:
        """The model's item in summary.json's "models"."""
        return {
            "model": spec,
            # unique pairs the model gave no label for (an LLM judge's unparseable replies)
            "unlabelled_pairs": len(self.unlabelled),
            "datasets": [{"dataset": d, **self.per_dataset[d].result()} for d in datasets],
            "overall": self.overall.result(),
        }
