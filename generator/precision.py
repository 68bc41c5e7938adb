"""The benchmark's estimate of its own precision, from the trained judge's probabilities (pure
functions; the dataset card, transnli.generator.publish, states what they give).

The judge's probability p_good is calibrated (Platt scaling) on the candidates of its training
genres, where a given share of them were good: its training prior. On text of another genre the
share of good candidates differs, and a calibration fitted on one base rate carries that base rate
into every run. Under label shift (the look of a good candidate, and of a bad one, stays the same;
only their mix changes), the posterior for a new prior q is p' = q/t p / (q/t p + (1-q)/(1-t)
(1-p)), with t the training prior; and q can be estimated from the run's own probabilities by
expectation-maximisation (Saerens, Latinne & Decaestecker 2002, "Adjusting the outputs of a
classifier to new a priori probabilities"): q <- mean of p' until it settles. The estimate is the
mean of p' over the accepted triples, the prior being re-estimated over every candidate the judge
decided on (accepted and rejected by it).

Which method the card uses (the plain mean, or EM) is chosen by leave-one-genre-out validation on
the project's judged sets (benchmarks/bench_precision_estimate.py, docs/quality-model.md) and
recorded in the judge file with the largest error it made on a left-out genre; the card's
interval adds that error to the sampling spread.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

METHODS = ("mean", "em")
METHOD_NAMES = {
    "mean": "the mean of the judge's calibrated probabilities (no correction for the genre)",
    "em": "the judge's probabilities corrected for this run's share of good candidates by "
    "EM re-estimation of the prior (Saerens, Latinne & Decaestecker 2002)",
}
_EDGE = 1e-6  # probabilities of exactly 0 or 1 would pin the EM update


@dataclass(frozen=True)
class Probabilities:
    """The usable p_good values of some records, and how many records gave none."""

    values: list[float]
    missing: int = 0  # no probability: another backend, or the check did not run
    invalid: int = 0  # not a number, not finite, or outside [0, 1]

    @property
    def records(self) -> int:
        return len(self.values) + self.missing + self.invalid


def read_probabilities(entries: Iterable[object], backend: str = "judge") -> Probabilities:
    """Sort each record's acceptability entry: a usable probability of the `backend` judge, none
    (`missing`: another backend named, no entry) or a broken one (`invalid`: NaN, infinite, out
    of [0, 1], not a number)."""
    values, missing, invalid = [], 0, 0
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("backend") != backend or "p_good" not in entry:
            missing += 1
            continue
        p = entry["p_good"]
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            invalid += 1  # NaN fails the comparison too
            continue
        values.append(float(p))
    return Probabilities(values, missing, invalid)


def shift_posteriors(p: Sequence[float], training_prior: float, prior: float) -> np.ndarray:
    """Posteriors calibrated under `training_prior`, moved to `prior` (Bayes' rule on the odds)."""
    p = np.clip(np.asarray(p, dtype=np.float64), _EDGE, 1 - _EDGE)
    good = prior / training_prior * p
    bad = (1 - prior) / (1 - training_prior) * (1 - p)
    return good / (good + bad)


def em_prior(
    p: Sequence[float], training_prior: float, *, tol: float = 1e-7, max_iter: int = 10_000
) -> float:
    """The share of good candidates among those scored `p`, by EM (Saerens et al. 2002): the
    maximum-likelihood prior under label shift, starting from the training prior."""
    if not 0.0 < training_prior < 1.0:
        raise ValueError(f"the training prior must be between 0 and 1, got {training_prior}")
    if len(p) == 0:
        return training_prior
    prior = training_prior
    for _ in range(max_iter):
        new = float(shift_posteriors(p, training_prior, prior).mean())
        if abs(new - prior) < tol:
            return new
        prior = new
    return prior


def sampling_half_width(p: Sequence[float], z: float = 1.96) -> float:
    """Half the 95% interval of the mean of independent Bernoulli(p_i) outcomes: how far the
    share of good triples may fall from the mean probability by chance alone."""
    p = np.asarray(p, dtype=np.float64)
    return z * math.sqrt(float((p * (1 - p)).sum())) / len(p) if len(p) else 0.0


@dataclass(frozen=True)
class Estimate:
    """The estimated precision of the accepted triples, its 95% interval and how it was made."""

    precision: float
    interval: tuple[float, float]
    method: str  # one of METHODS
    triples: int  # accepted triples it is over
    decided: int  # candidates the prior was re-estimated over (accepted + rejected by the judge)
    raw_mean: float  # the uncorrected mean, for the record
    prior: float | None  # the re-estimated share of good candidates (em only)
    estimator_error: float  # the validation's largest error, added to the interval


def estimate_precision(
    accepted: Sequence[float],
    decided: Sequence[float],
    *,
    method: str,
    training_prior: float | None,
    estimator_error: float = 0.0,
) -> Estimate | None:
    """The estimate over the `accepted` probabilities, the prior re-estimated over `decided`
    (every candidate the judge decided on, accepted included). `method` "em" needs the training
    prior; None when there is nothing to estimate over."""
    if method not in METHODS:
        raise ValueError(f"unknown estimation method {method!r}; one of {', '.join(METHODS)}")
    if len(accepted) == 0:
        return None
    raw = float(np.mean(accepted))
    prior = None
    if method == "em":
        if training_prior is None:
            raise ValueError("the em method needs the judge's training prior")
        prior = em_prior(decided, training_prior)
        corrected = shift_posteriors(accepted, training_prior, prior)
    else:
        corrected = np.asarray(accepted, dtype=np.float64)
    value = float(corrected.mean())
    half = sampling_half_width(corrected) + estimator_error
    return Estimate(
        precision=round(value, 4),
        interval=(round(max(0.0, value - half), 4), round(min(1.0, value + half), 4)),
        method=method,
        triples=len(accepted),
        decided=len(decided),
        raw_mean=round(raw, 4),
        prior=None if prior is None else round(prior, 4),
        estimator_error=estimator_error,
    )


def calibration_error(p: Sequence[float], good: Sequence[int], bins: int = 10) -> float:
    """Expected calibration error over equal-width bins: the mean, weighted by the bin's size,
    of |mean probability - share good|."""
    p, good = np.asarray(p, dtype=np.float64), np.asarray(good, dtype=np.float64)
    if not len(p):
        return 0.0
    index = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in np.unique(index):
        m = index == b
        total += int(m.sum()) * abs(float(p[m].mean()) - float(good[m].mean()))
    return total / len(p)


def wilson_interval(good: int, judged: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a share `good` of `judged` (scipy's binomtest)."""
    from scipy.stats import binomtest

    ci = binomtest(good, judged).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


WIDTH_SIZES = (25, 50, 100, 200, 400, 1000)


def wilson_widths(
    share: float = 0.8, sizes: Sequence[int] = WIDTH_SIZES
) -> list[tuple[int, float]]:
    """(judged, width of the 95% Wilson interval) for a measured share near `share`: how many
    judgements buy what precision of the measured figure."""
    out = []
    for n in sizes:
        lo, hi = wilson_interval(round(share * n), n)
        out.append((n, round(hi - lo, 3)))
    return out
