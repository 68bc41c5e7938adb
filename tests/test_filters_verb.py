"""Verb filters (transnli.generator.filters.verb) on sentences parsed by spaCy's small model and
judged from the real WordNet 3.0: each filter with sentences it must catch and ones it must pass."""

import pytest
from filter_items import item, verdicts
from transnli.generator.filters import build_filters
from transnli.generator.filters.verb import (
    AttributiveParticipleFilter,
    ClauseLinkFilter,
    VerbComplementFilter,
)

pytestmark = pytest.mark.slow


def test_clause_link_catches_verbs_of_adverbial_and_coordinated_clauses(tagger):
    caught = [
        ("I could not store the books so I sold some", "sold", "buy", "v"),
        ("Although I disagreed with him I could follow his argument", "disagreed", "agree", "v"),
        ("She saved money to buy a car", "buy", "sell", "v"),  # purpose clause
        ("He stood up and left the room", "left", "arrive", "v"),
    ]
    passed = [
        ("She bought a new car", "bought", "sell", "v"),
        ("She tried to persuade him to buy a new car", "buy", "sell", "v"),  # xcomp: not a relation
        (
            "The child was injured when he fell",
            "injured",
            "uninjured",
            "a",
        ),  # the main clause's verb
    ]
    flt = ClauseLinkFilter()
    assert verdicts(flt, tagger, caught) == [False] * 4
    assert verdicts(flt, tagger, passed) == [True] * 3
    verdict = flt.judge(item(tagger, *caught[1]))
    assert verdict.details == {"dep": "advcl", "head": "follow", "marker": "although"}
    assert "adverbial clause" in verdict.reason
    assert flt.judge(item(tagger, *caught[3])).details["marker"] == "and"


def test_attributive_participle_catches_verb_participles_before_nouns(tagger):
    caught = [
        ("She polished off the remaining potatoes", "remaining", "change", "v"),
        ("Water trickled from the broken hose", "broken", "keep", "v"),
        # a present participle before a noun, whatever the antonym
        ("He stared at the shining pinnacle of perfection", "shining", "inferior", "a"),
    ]
    passed = [
        # a past participle swapped for WordNet's adjective antonym is left alone
        ("He is the acknowledged leader of the community", "acknowledged", "unacknowledged", "a"),
        ("The position was established in 1789", "established", "abolish", "v"),  # not attributive
        ("She polished off the cold potatoes", "cold", "hot", "a"),  # not a verb
    ]
    flt = AttributiveParticipleFilter()
    assert verdicts(flt, tagger, caught) == [False] * 3
    assert verdicts(flt, tagger, passed) == [True] * 3
    assert flt.judge(item(tagger, *caught[0])).details == {"tag": "VBG", "antonym_pos": "v"}


def test_verb_complements_pp_frames_and_adjectives_for_verbs_with_complements(tagger):
    caught = [
        # an intransitive verb's prepositional phrase; WordNet gives "idle" and "undress" no PP
        # frame
        ("She worked as a spy in East Germany", "worked", "idle", "v"),
        ("She dresses in the latest Paris fashion", "dresses", "undress", "v"),
        # an adjective antonym for a verb with a verb complement, a purpose clause, a by-agent
        ("His remarks were intended to be neutral", "intended", "unintended", "a"),
        ("A detail was sent to remove the fallen trees", "sent", "unsent", "a"),
        ("The hierarchy is supported by scholastic selection", "supported", "unsupported", "a"),
    ]
    passed = [
        ("They were sitting by the water's edge", "sitting", "stand", "v"),  # stand has the frame
        (
            "She dresses the child in the morning",
            "dresses",
            "undress",
            "v",
        ),  # an object: not this rule
        ("She worked hard", "worked", "idle", "v"),  # no prepositional phrase
        (
            "The child was injured when he fell",
            "injured",
            "uninjured",
            "a",
        ),  # nothing an adjective lacks
        ("Computers are widely used in business", "used", "misused", "a"),
    ]
    flt = VerbComplementFilter()
    assert verdicts(flt, tagger, caught) == [False] * 5
    assert verdicts(flt, tagger, passed) == [True] * 5
    verdict = flt.judge(item(tagger, *caught[0]))
    assert verdict.details == {
        "complement": "a prepositional phrase",
        "preposition": "as",
        "frames": [1, 2],
    }
    assert flt.judge(item(tagger, *caught[4])).details == {"complement": "a by-agent"}


def test_verb_filters_are_built_by_name_in_canonical_order():
    names = [
        f.name
        for f in build_filters(
            ["verb_complements", "auxiliary", "clause_link", "attributive_participle"]
        )
    ]
    assert names == ["auxiliary", "clause_link", "attributive_participle", "verb_complements"]
