"""Metrics: Wilson intervals, rates, accuracy over distinct gold pairs, hand-counted datasets."""

from __future__ import annotations

import pytest
from transnli.evaluator.labels import C, E, N
from transnli.evaluator.metrics import (
    TripleLabels,
    accuracy,
    dataset_metrics,
    ratio,
    wilson_interval,
)


def test_wilson_reference_values():
    # (p + z^2/2n -/+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), z = 1.96, worked by hand
    assert wilson_interval(0, 3) == pytest.approx([0.0, 0.561497], abs=1e-6)
    assert wilson_interval(5, 10) == pytest.approx([0.236593, 0.763407], abs=1e-6)
    assert wilson_interval(1, 2) == pytest.approx([0.094531, 0.905469], abs=1e-6)
    assert wilson_interval(10, 10) == pytest.approx([0.722467, 1.0], abs=1e-6)
    assert wilson_interval(81, 263) == pytest.approx([0.255288, 0.366210], abs=1e-6)


def test_wilson_matches_scipy():
    # scipy's binomtest is the reference implementation of the Wilson interval
    from scipy.stats import binomtest

    cases = [
        (k, n)
        for n in (1, 2, 3, 7, 10, 24, 99, 263, 1000)
        for k in range(0, n + 1, max(1, n // 40))
    ]
    cases += [(n, n) for n in (1, 7, 1000)]
    for k, n in cases:
        for confidence in (0.9, 0.95, 0.99):
            ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
            assert wilson_interval(k, n, confidence) == pytest.approx(
                [ci.low, ci.high], abs=1e-12
            ), (k, n)


def test_wilson_edges():
    assert wilson_interval(0, 0) is None
    lo, hi = wilson_interval(3, 7)
    assert 0 < lo < 3 / 7 < hi < 1
    with pytest.raises(ValueError):
        wilson_interval(4, 3)
    assert ratio(0, 0) is None
    assert ratio(1, 4) == 0.25


def test_accuracy_counts_each_gold_pair_once():
    rows = [
        TripleLabels(E, N, N, None, gold=E, pair=("p1", "h1")),
        TripleLabels(E, C, C, C, gold=E, pair=("p1", "h1")),  # same pair, other H'
        TripleLabels(N, N, N, None, gold=C, pair=("p2", "h2")),
        TripleLabels(N, N, N, None, gold=None, pair=("p3", "h3")),
    ]
    assert accuracy(rows) == (0.5, 2)
    assert accuracy(rows[3:]) == (None, 0)


def test_dataset_metrics_hand_count():
    rows = [
        TripleLabels(E, E, E, E),  # rule1 ok
        TripleLabels(E, E, E, N),  # rule1 violated; substitution violated
        TripleLabels(E, C, C, C),  # rule2 ok
        TripleLabels(N, C, C, E),  # rule4 violated
        TripleLabels(N, E, E, C),  # rule3 violated; substitution violated
        TripleLabels(C, C, N, None),  # nothing; contradiction symmetry violated
        TripleLabels(E, N, N, None),  # nothing
        TripleLabels(C, E, E, C),  # no paper rule; substitution ok
    ]
    m = dataset_metrics(rows)
    assert m["n_triples"] == 8
    assert m["accuracy"] is None and m["accuracy_pairs"] == 0
    assert m["mutual_entailment"] == 4 and m["mutual_entailment_rate"] == 0.5
    assert m["mutual_contradiction"] == 2 and m["mutual_contradiction_rate"] == 0.25
    r = m["rules"]
    assert (r["rule1"]["cases"], r["rule1"]["violations"], r["rule1"]["rate"]) == (2, 1, 0.5)
    assert (r["rule2"]["cases"], r["rule2"]["violations"], r["rule2"]["rate"]) == (1, 0, 0.0)
    assert (r["rule3"]["cases"], r["rule3"]["violations"], r["rule3"]["rate"]) == (1, 1, 1.0)
    assert (r["rule4"]["cases"], r["rule4"]["violations"], r["rule4"]["rate"]) == (1, 1, 1.0)
    assert r["rule1"]["name"] == "E&E->E"
    assert r["rule1"]["ci95"] == pytest.approx(wilson_interval(1, 2))
    x = m["extras"]
    assert x["beyond_paper"] is True
    assert (x["substitution"]["cases"], x["substitution"]["violations"]) == (4, 2)
    assert (x["contradiction_symmetry"]["cases"], x["contradiction_symmetry"]["violations"]) == (
        3,
        1,
    )
    assert m["label_counts"]["p_h2"] == {E: 2, N: 1, C: 3}


def test_rules_without_cases_are_null():
    m = dataset_metrics([TripleLabels(C, N, N)])
    for key in ("rule1", "rule2", "rule3", "rule4"):
        assert m["rules"][key] == {
            "name": m["rules"][key]["name"],
            "cases": 0,
            "violations": 0,
            "rate": None,
            "ci95": None,
        }
    assert m["mutual_entailment_rate"] == 0.0
