"""The card's estimated precision (transnli.generator.precision): the label-shift correction
recovers a known prior and a known precision on data drawn under another prior than the
calibration's, the guards sort broken probabilities out, and Wilson widths shrink with n."""

from __future__ import annotations

import math

import numpy as np
import pytest
from transnli.generator.precision import (
    calibration_error,
    em_prior,
    estimate_precision,
    read_probabilities,
    shift_posteriors,
    wilson_interval,
    wilson_widths,
)


def drawn(prior: float, training_prior: float, n: int = 20_000, seed: int = 0):
    """Labels drawn with `prior`, and the posterior a perfectly calibrated classifier gives under
    `training_prior`: scores x ~ N(+1, 1) for good and N(-1, 1) for bad, so the log-likelihood
    ratio is 2x."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < prior).astype(int)
    x = rng.normal(np.where(y == 1, 1.0, -1.0), 1.0)
    logit = math.log(training_prior / (1 - training_prior)) + 2 * x
    return 1 / (1 + np.exp(-logit)), y


@pytest.mark.parametrize(("prior", "training_prior"), [(0.75, 0.4), (0.3, 0.6), (0.5, 0.5)])
def test_em_recovers_the_prior_and_the_precision_of_the_accepted(prior, training_prior):
    p, y = drawn(prior, training_prior)
    assert em_prior(p, training_prior) == pytest.approx(prior, abs=0.02)
    accepted = p >= 0.55
    measured = y[accepted].mean()
    est = estimate_precision(p[accepted], p, method="em", training_prior=training_prior)
    assert est.precision == pytest.approx(measured, abs=0.015)
    assert est.prior == pytest.approx(prior, abs=0.02)
    if prior != training_prior:  # the uncorrected mean carries the training prior's bias
        raw = estimate_precision(p[accepted], p, method="mean", training_prior=None)
        assert abs(raw.precision - measured) > abs(est.precision - measured) + 0.02
        # and the corrected probabilities are calibrated again
        ece_raw = calibration_error(p, y)
        ece_em = calibration_error(shift_posteriors(p, training_prior, est.prior), y)
        assert ece_em < 0.02 < ece_raw


def test_shifting_to_the_same_prior_changes_nothing():
    p = np.array([0.1, 0.5, 0.9])
    assert shift_posteriors(p, 0.4, 0.4) == pytest.approx(p)
    assert shift_posteriors(p, 0.4, 0.8)[1] > 0.5  # more good candidates: each more likely good


def test_the_interval_holds_the_estimators_own_error():
    p = [0.8] * 100
    plain = estimate_precision(p, p, method="mean", training_prior=None)
    wider = estimate_precision(p, p, method="mean", training_prior=None, estimator_error=0.05)
    assert wider.interval[0] == pytest.approx(plain.interval[0] - 0.05, abs=1e-4)
    assert wider.interval[1] == pytest.approx(plain.interval[1] + 0.05, abs=1e-4)
    assert estimate_precision([], p, method="mean", training_prior=None) is None
    with pytest.raises(ValueError, match="training prior"):
        estimate_precision(p, p, method="em", training_prior=None)
    with pytest.raises(ValueError, match="unknown estimation method"):
        estimate_precision(p, p, method="guess", training_prior=0.5)


def test_broken_probabilities_are_counted_not_averaged():
    entries = [
        {"backend": "judge", "p_good": 0.8},
        {"backend": "judge", "p_good": 1},
        {"backend": "judge", "p_good": float("nan")},
        {"backend": "judge", "p_good": 5.0},
        {"backend": "judge", "p_good": "0.7"},
        {"backend": "judge", "p_good": None},
        {"backend": "judge", "p_good": True},
        {"backend": "cola", "score": 0.9},
        {"backend": "judge"},
        None,
    ]
    got = read_probabilities(entries)
    assert got.values == [0.8, 1.0]
    assert (got.invalid, got.missing, got.records) == (5, 3, 10)


def test_wilson_widths_shrink_with_the_number_judged():
    widths = wilson_widths(0.8)
    assert [n for n, _ in widths] == [25, 50, 100, 200, 400, 1000]
    assert all(a[1] > b[1] for a, b in zip(widths, widths[1:], strict=False))
    lo, hi = wilson_interval(80, 100)
    assert (round(lo, 3), round(hi, 3)) == (0.711, 0.867)  # by hand: 0.7889 -+ 0.0777
