"""Adjective filters (transnli.generator.filters.adjective) on sentences parsed by spaCy's small
model and judged from the real WordNet 3.0: each with sentences it must catch and ones it must
pass."""

import pytest
from filter_items import item, verdicts
from transnli.generator.filters import build_filters, filter_names
from transnli.generator.filters.adjective import RelationalAdjectiveFilter, is_relational

pytestmark = pytest.mark.slow


def test_relational_senses_from_lexname_and_gloss():
    assert is_relational("economic.a.01")  # adj.pert
    assert is_relational("contemporary.s.02")  # adj.all, glossed "belonging to the present time"
    assert not is_relational("economic.s.01")  # "using the minimum of time or resources"
    assert not is_relational("hot.a.01")


def test_relational_adj_catches_classifying_adjectives_before_a_noun(tagger):
    caught = [
        # economic = of the economy; "inefficient" opposes economic.s.01 (thrifty)
        ("The country faces a deep economic crisis", "economic", "inefficient"),
        # medical = of medicine; "surgical" opposes medical.a.02 (treatable by drugs)
        ("She studied the medical records of the patient", "medical", "surgical"),
        ("They wrote an academic paper on the topic", "academic", "applied"),
    ]
    passed = [
        ("The plan was economic and quick", "economic", "inefficient"),  # predicative: descriptive
        ("He gave a musical performance", "musical", "unmusical"),  # negated form keeps the domain
        ("The natural world is full of wonders", "natural", "artificial"),  # first sense carries it
        ("She bought a new car", "new", "old"),  # no relational sense
        (
            "The country faces a deep economic crisis",
            "crisis",
            "calm",
            "n",
        ),  # not an adjective swap
    ]
    flt = RelationalAdjectiveFilter()
    assert verdicts(flt, tagger, caught) == [False] * 3
    assert verdicts(flt, tagger, passed) == [True] * 5
    verdict = flt.judge(item(tagger, *caught[0]))
    assert verdict.details == {"sense": "economic.a.01", "antonym_sense": "economic.s.01"}
    assert "relational sense economic.a.01" in verdict.reason
    # without the negated-form exception the domain-keeping "unmusical" is caught too
    assert verdicts(RelationalAdjectiveFilter(keep_negated=False), tagger, [passed[1]]) == [False]


def test_relational_adj_is_registered_after_rare_sense():
    names = filter_names()
    assert names.index("relational_adj") == names.index("rare_sense") + 1
    built = build_filters(["relational_adj", "rare_sense"])
    assert [f.name for f in built] == ["rare_sense", "relational_adj"]
    assert isinstance(built[1], RelationalAdjectiveFilter)
