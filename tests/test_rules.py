"""The rule engine over all 3^4 label combinations, against a table written out by hand."""

from __future__ import annotations

import itertools

import pytest
from transnli.evaluator.labels import C, E, N
from transnli.evaluator.rules import (
    RULES,
    RULES_BY_KEY,
    applicable_rule,
    contradiction_symmetry,
    evaluate_triple,
    mutual,
    needs_ph2,
    substitution,
)

SHORT = {"E": E, "N": N, "C": C}

# Independent expectation, from the paper's table (DESIGN.md "Evaluation"):
# (M(P,H), mutual label of (H,H')) -> (rule, labels of M(P,H') that violate it)
EXPECTED = {
    ("E", "E"): ("rule1", {"N", "C"}),  # E & E -> E
    ("E", "C"): ("rule2", {"E", "N"}),  # E & C -> C
    ("N", "E"): ("rule3", {"C"}),  # N & E -> not C
    ("N", "C"): ("rule4", {"E"}),  # N & C -> not E
}
NAMES = {"rule1": "E&E->E", "rule2": "E&C->C", "rule3": "N&E->¬C", "rule4": "N&C->¬E"}
ALL = list(itertools.product("ENC", repeat=4))


def expected_outcome(ph, hh2, h2h, ph2):
    m = hh2 if hh2 == h2h and hh2 in "EC" else None
    if m is None or (ph, m) not in EXPECTED:
        return None, None
    rule, bad = EXPECTED[(ph, m)]
    return rule, ph2 in bad


@pytest.mark.parametrize("combo", ALL, ids=["".join(c) for c in ALL])
def test_every_combination(combo):
    ph, hh2, h2h, ph2 = combo
    rule, violated = expected_outcome(*combo)
    outcome = evaluate_triple(SHORT[ph], SHORT[hh2], SHORT[h2h], SHORT[ph2])
    assert outcome.rule == rule
    assert outcome.violated == violated
    found = applicable_rule(SHORT[ph], SHORT[hh2], SHORT[h2h])
    assert (found.key if found else None) == rule


def test_counts_over_all_81():
    outcomes = [evaluate_triple(*(SHORT[x] for x in c)) for c in ALL]
    assert len(outcomes) == 81
    # 2 premise labels x 2 mutual labels x 3 values of M(P,H') have an antecedent
    assert sum(o.rule is not None for o in outcomes) == 12
    # violations: rule1 2, rule2 2, rule3 1, rule4 1 values of M(P,H')
    assert sum(bool(o.violated) for o in outcomes) == 6
    # at most one rule per triple, by construction: each antecedent pairs a distinct (ph, mutual)
    assert len({(r.ph, r.mutual) for r in RULES}) == 4


def test_rule_table_names():
    assert [r.key for r in RULES] == ["rule1", "rule2", "rule3", "rule4"]
    assert {r.key: r.name for r in RULES} == NAMES
    assert RULES_BY_KEY["rule3"].name == "N&E->¬C"


@pytest.mark.parametrize("hh2,h2h", list(itertools.product("ENC", repeat=2)))
def test_mutual_and_needs_ph2(hh2, h2h):
    expected = SHORT[hh2] if hh2 == h2h and hh2 != "N" else None
    assert mutual(SHORT[hh2], SHORT[h2h]) == expected
    assert needs_ph2(SHORT[hh2], SHORT[h2h]) == (expected is not None)


def test_ph2_may_be_missing_only_without_antecedent():
    assert evaluate_triple(E, N, N, None).rule is None
    assert evaluate_triple(C, E, E, None).rule is None  # mutual E but M(P,H)=C: no paper rule
    with pytest.raises(ValueError):
        evaluate_triple(E, E, E, None)


def test_rejects_non_canonical_labels():
    with pytest.raises(ValueError):
        evaluate_triple("ENTAILMENT", E, E, E)
    with pytest.raises(ValueError):
        mutual("e", "e")


@pytest.mark.parametrize("combo", ALL, ids=["".join(c) for c in ALL])
def test_extras_every_combination(combo):
    ph, hh2, h2h, ph2 = combo
    # substitution: mutual E => M(P,H') = M(P,H)
    expected_sub = (ph2 != ph) if hh2 == h2h == "E" else None
    assert substitution(SHORT[ph], SHORT[hh2], SHORT[h2h], SHORT[ph2]) == expected_sub
    # contradiction symmetry: M(H,H') = C => M(H',H) = C
    expected_sym = (h2h != "C") if hh2 == "C" else None
    assert contradiction_symmetry(SHORT[hh2], SHORT[h2h]) == expected_sym


def test_substitution_covers_the_paper_rules_under_mutual_entailment():
    # E & mutual E -> E is rule 1; C & mutual E -> C is the "C and E -> C" case the paper lacks
    assert substitution(C, E, E, N) is True
    assert substitution(C, E, E, C) is False
    assert substitution(N, C, C, E) is None
