"""Filters for verbs that carry little meaning of their own.

- ``auxiliary``: the copula, auxiliaries and modals (be -> differ, auxiliary have -> lack, will/can)
  are never replaced unless `include_aux` asks for it (the paper's setting);
- ``light_verb``: have/make/do/give/take/get used as light verbs, with an abstract object or a
  clause/small-clause complement ("unmakes a strong case", "lacked a brush with danger").
"""

from __future__ import annotations

from functools import lru_cache

from transnli.generator.filters.base import (
    PASS,
    FilterItem,
    FilterOptions,
    FilterVerdict,
    PerItemFilter,
    children,
)
from transnli.generator.filters.registry import register_filter
from transnli.generator.wordnet import first_noun_lexname, wordnet


# -- auxiliary -------------------------------------------------------------------------------------
@register_filter(
    "auxiliary",
    rank=10,
    summary="the copula, auxiliaries and modals are not replaced",
)
class AuxiliaryFilter(PerItemFilter):
    """Copula, auxiliaries, modals and existential "there be" are function words: their WordNet
    antonyms belong to other senses (be -> differ comes from be = "equal")."""

    def __init__(self, include_aux: bool = False):
        self.include_aux = include_aux

    @classmethod
    def from_options(cls, options: FilterOptions) -> AuxiliaryFilter:
        return cls(options.include_aux)

    def judge(self, item: FilterItem) -> FilterVerdict:
        if self.include_aux:
            return PASS
        tok = item.token
        if tok.lemma.lower() == "be":
            return FilterVerdict(False, "copula or auxiliary 'be'")
        if tok.tag == "MD":
            return FilterVerdict(False, "modal verb")
        if tok.dep in ("aux", "auxpass") or tok.pos == "AUX":
            return FilterVerdict(False, f"auxiliary '{tok.text}'")
        return PASS


# -- light verbs -----------------------------------------------------------------------------------
LIGHT_VERBS = frozenset({"have", "make", "do", "give", "take", "get"})
# Objects a light verb keeps its full meaning with: things that can be owned, made, handed over.
CONCRETE_LEXNAMES = frozenset(
    {
        "noun.artifact",
        "noun.food",
        "noun.object",
        "noun.animal",
        "noun.plant",
        "noun.body",
        "noun.substance",
        "noun.possession",
        "noun.person",
    }
)
HAVE_LIGHT_LEXNAMES = frozenset({"noun.act", "noun.event", "noun.communication", "noun.process"})
CLAUSE_DEPS = frozenset({"xcomp", "ccomp", "oprd", "acomp"})


@lru_cache(maxsize=4096)
def _deverbal_event(noun: str) -> bool:
    """A noun that is also a verb and names an act or event in one of its first senses (look, walk,
    talk, brush, try)."""
    wn = wordnet()
    return bool(wn.synsets(noun, "v")) and any(
        s.lexname() in HAVE_LIGHT_LEXNAMES for s in wn.synsets(noun, "n")[:3]
    )


@register_filter(
    "light_verb",
    rank=20,
    summary="light verbs (have/make/do/give/take/get with an abstract object) are not replaced",
)
class LightVerbFilter(PerItemFilter):
    """have/make/do/give/take/get with an abstract object or a clause complement are light verbs
    ("make a case", "take a look", "have a brush with danger", "make friends", "have it examined"):
    their meaning is in the complement, and a lexical antonym (unmake, lack, give) breaks it."""

    def judge(self, item: FilterItem) -> FilterVerdict:
        tok = item.token
        if tok.pos not in ("VERB", "AUX") or tok.lemma.lower() not in LIGHT_VERBS:
            return PASS
        kids = children(item.sentence, tok.i)
        clause = [k for k in kids if k.dep in CLAUSE_DEPS]
        if clause:
            return FilterVerdict(
                False,
                f"light verb '{tok.text}' with a {clause[0].dep} complement '{clause[0].text}'",
            )
        objects = [k for k in kids if k.dep == "dobj"]
        if not objects:
            return FilterVerdict(False, f"light verb '{tok.text}' without a direct object")
        obj = objects[0]
        if obj.pos in ("PRON", "PROPN"):
            return PASS
        if tok.lemma.lower() == "have":
            # "have" of possession keeps its meaning with abstract objects ("have experience" ->
            # "lack experience"); it is light with a + a deverbal noun of an act or event ("have
            # a look", "had a brush with danger").
            if _deverbal_event(obj.lemma.lower()) and any(
                k.dep == "det" and k.text.lower() in ("a", "an")
                for k in children(item.sentence, obj.i)
            ):
                return FilterVerdict(False, f"light verb '{tok.text}' with 'a {obj.text}'")
            return PASS
        lex = first_noun_lexname(obj.lemma.lower()) or first_noun_lexname(obj.text.lower())
        if lex is not None and lex not in CONCRETE_LEXNAMES:
            return FilterVerdict(
                False, f"light verb '{tok.text}' with the abstract object '{obj.text}' ({lex})"
            )
        if children(item.sentence, obj.i) and any(
            k.pos == "VERB" for k in children(item.sentence, obj.i)
        ):
            return FilterVerdict(
                False, f"light verb '{tok.text}' with a small clause on '{obj.text}'"
            )
        return PASS
