"""Metrics as pure functions of labels, per model x dataset.

- n_triples;
- accuracy of M(P,H) against gold, over the distinct (P,H) pairs that have a gold label (a
  sentence with several H' still counts once), null when none has one (the paper's Table 1);
- mutual-entailment and mutual-contradiction rates of (H,H') over all triples (Tables 3, 2);
- per rule: cases (antecedent holds), violations, rate (null when no case) and a Wilson 95%
  interval (Table 4; small denominators such as 0/3 need the interval beside them);
- beyond the paper, under "extras": the substitution rule and contradiction symmetry;
- where the triples carry the judge's probability that H' is good (p_good), beside each rate:
  the rate over the triples the judge is confident in (p_good >= a level, CONFIDENT_LEVEL by
  default; Wilson interval) and the p_good-weighted rate (Wilson on Kish's effective sample
  size), so that a violation on a triple the judge doubts can be told apart (`RuleTally`).
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
from .rules import (
    EXTRA_KEYS,
    RULES,
    RuleOutcome,
    contradiction_symmetry,
    evaluate_triple,
    mutual,
    substitution,
)

if TYPE_CHECKING:
    import numpy as np

    from .label_table import LabelTable
    from .triples import Triple

_KINDS = ("p_h", "h_h2", "h2_h", "p_h2")

EXTRA_NAMES = {
    "substitution": "mutual E => M(P,H')=M(P,H)",
    "contradiction_symmetry": "M(H,H')=C => M(H',H)=C",
}
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
    # The judge's probability that the triple's H' is good (Triple.p_good); None: not judged.
    p_good: float | None = None


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


CONFIDENT_LEVEL = 0.8  # p_good at or above which the judge counts as confident (a setting)


def confident_rate(
    outcomes: Iterable[tuple[bool, float | None]], level: float = CONFIDENT_LEVEL
) -> dict[str, Any]:
    """The violation rate over the cases whose triple the judge is confident in (p_good >=
    `level`), with a Wilson 95% interval. `outcomes`: (violated, p_good) per case of a rule;
    cases without a p_good are not counted."""
    tally = RuleTally(level)
    for violated, p_good in outcomes:
        tally.add(violated, p_good)
    return tally.confident_cell()


def weighted_rate(outcomes: Iterable[tuple[bool, float | None]]) -> dict[str, Any]:
    """The p_good-weighted violation rate over the cases with a p_good: sum(p * violated) /
    sum(p), what the rate would be if each triple counted as much as it is likely to be good,
    with a Wilson 95% interval on Kish's effective sample size (sum p)^2 / sum p^2."""
    tally = RuleTally(CONFIDENT_LEVEL)
    for violated, p_good in outcomes:
        tally.add(violated, p_good)
    return tally.weighted_cell()


def effective_wilson(weight: float, weight_sq: float, rate: float) -> list[float] | None:
    """Wilson 95% interval of a weighted proportion `rate` whose weights sum to `weight` and
    their squares to `weight_sq`: the Wilson interval at Kish's effective sample size
    n_eff = weight^2 / weight_sq (with equal weights, the plain Wilson interval of n cases).
    None without weight."""
    if weight <= 0 or weight_sq <= 0:
        return None
    n_eff = weight * weight / weight_sq
    k = min(max(rate, 0.0), 1.0) * n_eff
    ci = wilson_interval(min(k, n_eff), n_eff)
    if rate <= 0.0:
        ci[0] = 0.0
    if rate >= 1.0:
        ci[1] = 1.0
    return ci


@dataclass
class RuleTally:
    """Running counts of one rule (or extra): its cases and violations, and, over the cases whose
    triple carries p_good, the confident counts (p_good >= `level`) and the p_good-weighted sums.
    Sums are added in input order, so the same rows give the same bytes in any window."""

    level: float = CONFIDENT_LEVEL
    cases: int = 0
    violations: int = 0
    judged: int = 0  # cases with a p_good
    confident: int = 0
    confident_violations: int = 0
    weight: float = 0.0
    weight_sq: float = 0.0
    weighted_violations: float = 0.0

    def add(self, violated: bool, p_good: float | None) -> None:
        self.cases += 1
        self.violations += violated
        if p_good is None:
            return
        self.judged += 1
        if p_good >= self.level:
            self.confident += 1
            self.confident_violations += violated
        self.weight += p_good
        self.weight_sq += p_good * p_good
        self.weighted_violations += p_good * violated

    def confident_cell(self) -> dict[str, Any]:
        return {"level": self.level, **rate_cell(self.confident, self.confident_violations)}

    def weighted_cell(self) -> dict[str, Any]:
        rate = self.weighted_violations / self.weight if self.weight > 0 else None
        n_eff = self.weight**2 / self.weight_sq if self.weight_sq > 0 else 0.0
        return {
            "cases": self.judged,
            "weight": round(self.weight, 6),
            "effective_cases": round(n_eff, 3),
            "weighted_violations": round(self.weighted_violations, 6),
            "rate": rate,
            "ci95": None if rate is None else effective_wilson(self.weight, self.weight_sq, rate),
        }

    def cell(self, name: str, with_noise: bool) -> dict[str, Any]:
        """The rate cell; `with_noise` (the run has p_good): with its confident and weighted
        rates."""
        cell = rate_cell(self.cases, self.violations, name=name)
        if with_noise:
            cell["confident"] = self.confident_cell()
            cell["weighted"] = self.weighted_cell()
        return cell


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


def dataset_metrics(rows: Iterable[TripleLabels], level: float = CONFIDENT_LEVEL) -> dict[str, Any]:
    """Everything reported for one model on one dataset (the dataset name is added by callers);
    `level`: the p_good of a triple the judge is confident in."""
    counts = MetricCounts(level)
    counts.add_all(rows)
    return counts.result()


class MetricCounts:
    """dataset_metrics as running counts: rows are added as they come (a window of a large run at a
    time) and nothing but counts is kept, except a digest per distinct gold pair."""

    def __init__(self, level: float = CONFIDENT_LEVEL) -> None:
        self.n = 0
        self.level = level
        self.p_good = RuleTally(level)  # every triple (no rule): how many carry p_good, how sure
        # Accuracy counts each (pair, gold) once. Whether M(P,H) = gold is a function of that key
        # (one model gives a pair one label), so distinct keys judged and distinct keys right
        # suffice.
        self._judged, self._right = DistinctCount(), DistinctCount()
        self._unkeyed = [0, 0]  # rows without a pair key: each counts on its own (judged, right)
        self.mutual: Counter[str] = Counter()
        # per rule key and extra (EXTRA_KEYS): cases, violations and their noise-aware counts
        self.tallies = {key: RuleTally(level) for key in (*(r.key for r in RULES), *EXTRA_KEYS)}
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
        self.p_good.add(False, r.p_good)
        outcome = rule_outcome(r)
        if outcome.rule is not None:
            self.tallies[outcome.rule].add(bool(outcome.violated), r.p_good)
        s = (
            None
            if r.ph is None or "p_h2" in r.unlabelled
            else substitution(r.ph, r.hh2, r.h2h, r.ph2)
        )
        if s is not None:
            self.tallies["substitution"].add(s, r.p_good)
        cs = contradiction_symmetry(r.hh2, r.h2h)
        if cs is not None:
            self.tallies["contradiction_symmetry"].add(cs, r.p_good)
        for kind, label in zip(_KINDS, (r.ph, r.hh2, r.h2h, r.ph2), strict=True):
            if label is not None:
                self.label_counts[kind][label] += 1

    def accuracy(self) -> tuple[float | None, int]:
        n = len(self._judged) + self._unkeyed[0]
        return ratio(len(self._right) + self._unkeyed[1], n), n

    def triple_quality(self) -> dict[str, Any] | None:
        """How many triples carry p_good, how many the judge is confident in, their mean p_good;
        None when none carries one."""
        tally = self.p_good
        if not tally.judged:
            return None
        return {
            "triples": tally.judged,
            "confident": tally.confident,
            "level": self.level,
            "mean_p_good": round(tally.weight / tally.judged, 6),
        }

    def result(self) -> dict[str, Any]:
        n = self.n
        acc, n_gold = self.accuracy()
        quality = self.triple_quality()
        noise = quality is not None
        return {
            "n_triples": n,
            "accuracy": acc,
            "accuracy_pairs": n_gold,
            "mutual_entailment_rate": ratio(self.mutual[E], n),
            "mutual_contradiction_rate": ratio(self.mutual[C], n),
            "mutual_entailment": self.mutual[E],
            "mutual_contradiction": self.mutual[C],
            "rules": {rule.key: self.tallies[rule.key].cell(rule.name, noise) for rule in RULES},
            "extras": {
                "beyond_paper": True,
                **{key: self.tallies[key].cell(EXTRA_NAMES[key], noise) for key in EXTRA_KEYS},
            },
            "label_counts": {
                kind: {label: counts[label] for label in LABELS}
                for kind, counts in self.label_counts.items()
            },
            # triples per kind of pair that the model left without a label (LLM judges only)
            "unlabelled": {kind: self.unlabelled[kind] for kind in _KINDS},
            **({"p_good": quality} if noise else {}),
        }


QUALITY_NOTE = (
    "p_good: the judge's calibrated probability that H' is good (checks.acceptability.p_good of "
    "the triples file). Beside each rate: `confident`, the rate over the triples with p_good >= "
    "level (Wilson 95% interval); `weighted`, sum(p_good * violated) / sum(p_good) over the "
    "triples with a p_good (Wilson 95% interval on Kish's effective sample size sum(p)^2 / "
    "sum(p^2)). A rate that falls on the confident triples rested on triples the judge doubts."
)


def quality_section(counts: MetricCounts) -> dict[str, Any]:
    """summary.json's "triple_quality": over the run's triples (one model's overall counts: every
    model reads the same triples), how many carry p_good and how many the judge is confident in."""
    found = counts.triple_quality() or {"triples": 0, "confident": 0, "mean_p_good": None}
    return {
        "n_triples": counts.n,
        "p_good_triples": found["triples"],
        "confident_triples": found["confident"],
        "level": counts.level,
        "mean_p_good": found["mean_p_good"],
        "definition": QUALITY_NOTE,
    }


@dataclass
class ModelCounts:
    """One model's running counts over the run: metrics per dataset and overall, and the distinct
    pairs it was asked (and left without a label)."""

    level: float = CONFIDENT_LEVEL  # p_good of a triple the judge is confident in
    per_dataset: dict[str, MetricCounts] = field(default_factory=dict)
    overall: MetricCounts = field(init=False)
    asked: DistinctCount = field(default_factory=DistinctCount)
    unlabelled: DistinctCount = field(default_factory=DistinctCount)

    def __post_init__(self) -> None:
        self.overall = MetricCounts(self.level)

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
                counts = per_dataset[t.dataset] = MetricCounts(self.level)
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
