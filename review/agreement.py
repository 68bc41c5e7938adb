"""Agreement between annotators and the measured precision of a run: pure functions over the
standing judgements of a review log (transnli.review.log) that count (transnli.review.integrity:
of the run's triples as they are, and of the sample they declare).

- Agreement, per pair of annotators, over the triples both judged: raw agreement and Cohen's kappa
  (scikit-learn's `cohen_kappa_score`), on good/bad and on the error type (good as its own type).
  Kappa is undefined (None) when both annotators used a single category.
- A triple's verdict when several people judged it: good only when every one of them called it
  good; bad with the error type when they all agree on it; else "disputed" (counted as not good).
- Precision: the good share of the triples judged in the random-sample order (the only order
  whose judged items are an unbiased sample of the run), with its 95% Wilson interval
  (scipy's `binomtest(...).proportion_ci(method="wilson")`).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from transnli.review.errors import ReviewError

RANDOM_SAMPLE = "random"


def category(judgement: dict[str, Any]) -> str:
    return "good" if judgement["good"] else (judgement.get("error_type") or "other")


@dataclass(frozen=True)
class PairAgreement:
    first: str
    second: str
    items: int  # triples both judged
    raw_good: float | None  # share of those with the same good/bad
    kappa_good: float | None
    raw_type: float | None  # the same on error types (good as a type)
    kappa_type: float | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _kappa(a: list[str], b: list[str]) -> float | None:
    try:
        from sklearn.metrics import cohen_kappa_score
    except ImportError as e:
        raise ReviewError("Cohen's kappa needs scikit-learn: pip install 'transnli[review]'") from e
    if len(set(a) | set(b)) < 2:
        return None  # one category only: chance agreement is 1 and kappa is 0/0
    value = float(cohen_kappa_score(a, b))
    return None if math.isnan(value) else round(value, 4)


def _raw(a: list[str], b: list[str]) -> float | None:
    return round(sum(x == y for x, y in zip(a, b, strict=True)) / len(a), 4) if a else None


def by_annotator(judgements: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """{annotator: {item: judgement}}; an unnamed annotator is ''."""
    out: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for j in judgements:
        out[j.get("annotator") or ""][j["item"]] = j
    return dict(out)


def agreement(judgements: list[dict[str, Any]]) -> list[PairAgreement]:
    """Agreement for every pair of annotators that judged at least one triple in common."""
    people = by_annotator(judgements)
    pairs = []
    for first, second in combinations(sorted(people), 2):
        shared = sorted(set(people[first]) & set(people[second]))
        if not shared:
            continue
        a = [category(people[first][i]) for i in shared]
        b = [category(people[second][i]) for i in shared]
        good_a = ["good" if x == "good" else "bad" for x in a]
        good_b = ["good" if x == "good" else "bad" for x in b]
        pairs.append(
            PairAgreement(
                first,
                second,
                len(shared),
                _raw(good_a, good_b),
                _kappa(good_a, good_b),
                _raw(a, b),
                _kappa(a, b),
            )
        )
    return pairs


def item_verdicts(judgements: list[dict[str, Any]]) -> dict[str, str]:
    """{item: "good" | "bad:<error type>" | "disputed"} over everyone who judged the item."""
    cats: dict[str, set[str]] = defaultdict(set)
    for j in judgements:
        cats[j["item"]].add(category(j))
    out = {}
    for item, seen in cats.items():
        if seen == {"good"}:
            out[item] = "good"
        elif len(seen) == 1:
            out[item] = f"bad:{next(iter(seen))}"
        else:
            out[item] = "disputed"
    return out


def wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    if n == 0:
        return None
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return round(float(ci.low), 4), round(float(ci.high), 4)


@dataclass(frozen=True)
class ReviewSummary:
    judged: int  # distinct triples with a standing judgement
    annotators: tuple[str, ...]
    sample_judged: int  # of those, judged in the random-sample order
    sample_good: int
    precision: float | None
    interval: tuple[float, float] | None
    pairs: tuple[PairAgreement, ...]


def summarise(judgements: list[dict[str, Any]]) -> ReviewSummary:
    verdicts = item_verdicts(judgements)
    sampled = {j["item"] for j in judgements if j.get("sample") == RANDOM_SAMPLE}
    good = sum(verdicts[i] == "good" for i in sampled)
    n = len(sampled)
    return ReviewSummary(
        judged=len(verdicts),
        annotators=tuple(sorted({j.get("annotator") or "" for j in judgements})),
        sample_judged=n,
        sample_good=good,
        precision=round(good / n, 4) if n else None,
        interval=wilson(good, n),
        pairs=tuple(agreement(judgements)),
    )
