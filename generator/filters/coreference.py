"""``coreference``: a gendered noun swapped for one of the other gender while a pronoun of the old
gender stays ("He was a shy woman")."""

from __future__ import annotations

from functools import lru_cache

from transnli.generator.filters.base import PASS, FilterItem, FilterVerdict, PerItemFilter
from transnli.generator.filters.registry import register_filter
from transnli.generator.wordnet import wordnet

PRONOUN_GENDER = {
    "he": "male",
    "him": "male",
    "his": "male",
    "himself": "male",
    "she": "female",
    "her": "female",
    "hers": "female",
    "herself": "female",
}


@lru_cache(maxsize=4096)
def noun_gender(noun: str) -> str | None:
    """ "male" or "female" when the noun's first sense is a male or female person in WordNet."""
    wn = wordnet()
    synsets = wn.synsets(noun.lower().replace(" ", "_"), "n")
    if not synsets:
        return None
    closure = {s.name() for s in synsets[0].closure(lambda s: s.hypernyms())}
    closure.add(synsets[0].name())
    if "male.n.02" in closure or "man.n.01" in closure:
        return "male"
    if "female.n.02" in closure or "woman.n.01" in closure:
        return "female"
    return None


@register_filter(
    "coreference",
    rank=60,
    summary="a gendered noun is not swapped while a pronoun of the old gender still refers to it",
)
class CoreferenceFilter(PerItemFilter):
    """A gendered noun replaced by one of the other gender ("man" -> "woman") while a pronoun of the
    old gender still refers back ("He was a shy woman", "A boy lifts her hand")."""

    def judge(self, item: FilterItem) -> FilterVerdict:
        tok = item.token
        if tok.pos != "NOUN" or item.antonym_pos != "n":
            return PASS
        old, new = noun_gender(tok.lemma), noun_gender(item.antonym)
        if old is None or new is None or old == new:
            return PASS
        clash = [t.text for t in item.sentence.tokens if PRONOUN_GENDER.get(t.text.lower()) == old]
        if clash:
            return FilterVerdict(
                False, f"'{item.antonym}' is {new} but '{clash[0]}' still refers to a {old} person"
            )
        return PASS
