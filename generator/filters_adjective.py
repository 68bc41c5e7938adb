"""Adjective filters: where an adjective's antonym cannot stand in for it, from WordNet and the parse.

Adjectives are most of what the generator accepts, and their bad swaps are mostly a wrong sense or a
true opposite that the sentence cannot take. Three shapes recur that WordNet and spaCy can see
without guessing the sense from the context (which, in ``sense_fit``, cost more good triples than
it saved):

- ``relational_adj``: a *relational* (classifying) adjective used before a noun. Its more frequent
  reading relates the noun to a domain ("economic straitjacket" = of the economy, "medical
  inhibition", "academic hierarchy"): a WordNet pertainym sense (lexicographer file adj.pert) or a
  sense glossed "of or relating to ...". Such senses have no antonym; the antonym belongs to a
  later, descriptive sense (economic = thrifty -> inefficient), so the swap reads as a different,
  often absurd, classification ("inefficient straitjacket", "surgical inhibition").
- ``nominal_adj``: an adjective that heads a noun phrase ("at the ready", "to the safe", "against
  the other", "it is the same") or stands where an adverb or quantifier would ("strike it rich",
  "increased fourfold", "a few sticks"): the antonym does not fill that slot, or breaks the
  expression the slot belongs to.
- ``verbal_participle``: a participle swapped for an *adjective* antonym while it still does a
  verb's work: it takes a by-agent, an object or a to-infinitive ("was handled by ...", "were
  intended to be"), follows perfect "have" ("had been stuck"), or heads a subordinate clause ("until
  they were tamed", "as opposed to"). An adjective ("unintended", "unstuck", "wild") cannot take
  those dependents. Participles used as adjectives ("the acknowledged leader", "is injured") pass.

Each is a pure look-up over WordNet and the parse spaCy already made, and passes everything that is
not an adjective swap (the antonym's WordNet POS is not "a").
"""

from __future__ import annotations

import re

from transnli.generator.filters import (
    PASS,
    FilterItem,
    FilterVerdict,
    _children,
    _PerItem,
    _wn,
    item_pos,
    item_senses,
)
from transnli.generator.quality_features import _prefix_pair

# WordNet's glosses for relational senses that the lexicographers did not file under adj.pert
# ("local.a.02" is adj.pert, but "contemporary.s.02" reads "belonging to the present time").
_RELATIONAL_GLOSS = re.compile(r"^(of or )?(relating|pertaining|belonging) to\b|^of or (relating|pertaining|belonging)\b")


def is_relational(synset_name: str) -> bool:
    """A WordNet adjective sense that classifies (relates a noun to a domain) rather than describes."""
    synset = _wn().synset(synset_name)
    return synset.lexname() == "adj.pert" or bool(_RELATIONAL_GLOSS.match(synset.definition()))


def _negated_form(antonym: str, *words: str) -> bool:
    """The antonym is one of the words with a negative prefix, or the other way round."""
    ant = antonym.lower()
    return any(_prefix_pair(w.lower(), ant) or _prefix_pair(ant, w.lower()) for w in words)


class RelationalAdjectiveFilter(_PerItem):
    """An attributive adjective whose first relational sense ranks before every sense that carries
    the antonym (WordNet ranks senses by their sense-tagged frequency): the classifying reading is
    the likelier one, and the antonym opposes only a descriptive reading. Predicative uses ("she felt
    provincial") pass: a relational adjective is rarely predicative, so there the descriptive sense
    is the one meant. With `keep_negated` (the default) an antonym that is the word with a negative
    prefix also passes ("musical" -> "unmusical", "modern" -> "nonmodern"): it keeps the word's stem
    and so its domain, and on the dev set such swaps were good as often as not, while an antonym of
    another stem switches the domain ("medical" -> "surgical", "academic" -> "applied")."""

    name = "relational_adj"
    DEPS = ("amod",)

    def __init__(self, keep_negated: bool = True):
        self.keep_negated = keep_negated

    def judge(self, item: FilterItem) -> FilterVerdict:
        tok = item.token
        if item_pos(item) != "a" or tok.dep not in self.DEPS:
            return PASS
        senses = item_senses(item, "a")
        carrying = next((i for i, s in enumerate(senses) if s.carries), None)
        relational = next((i for i, s in enumerate(senses) if not s.carries and is_relational(s.name)), None)
        if carrying is None or relational is None or relational > carrying:
            return PASS
        if self.keep_negated and _negated_form(item.antonym, tok.text, tok.lemma):
            return PASS
        details = {"sense": senses[relational].name, "antonym_sense": senses[carrying].name}
        return FilterVerdict(False, f"'{tok.text}' before a noun reads as the relational sense "
                                    f"{senses[relational].name}; '{item.antonym}' opposes only the "
                                    f"later sense {senses[carrying].name}", details)


def _people_noun(word: str) -> bool:
    """WordNet lists the word as a noun for a group or kind of people ("the poor", "the sick")."""
    key = word.lower().replace(" ", "_")
    return any(s.lexname() in ("noun.group", "noun.person") and any(lem.name().lower() == key for lem in s.lemmas())
               for s in _wn().synsets(key, "n"))


class NominalAdjectiveFilter(_PerItem):
    """An adjective (Penn tag JJ, JJR, JJS) in a noun's or an adverb's slot: the head of a noun
    phrase with a determiner or possessive ("at the ready", "her significant other"), or an adverbial
    or numeric modifier ("strike it rich", "strive higher", "a few sticks"). The adjective that
    names a group of people ("the poor" -> "the rich", "the living" -> "the dead") passes when
    WordNet lists both words as such nouns: that construction takes any adjective of the kind."""

    name = "nominal_adj"
    NOUN_DEPS = ("pobj", "dobj", "nsubj", "nsubjpass", "attr", "appos")
    ADVERB_DEPS = ("advmod", "npadvmod", "nummod")

    def judge(self, item: FilterItem) -> FilterVerdict:
        tok = item.token
        if item_pos(item) != "a" or not tok.tag.startswith("JJ"):
            return PASS
        if tok.dep in self.ADVERB_DEPS:
            return FilterVerdict(False, f"'{tok.text}' is used as an adverb or quantifier ({tok.dep}), "
                                        f"a slot '{item.antonym}' does not fill", {"slot": tok.dep})
        if tok.dep in self.NOUN_DEPS:
            det = next((c for c in _children(item.sentence, tok.i) if c.dep in ("det", "poss", "predet")), None)
            if det is not None and not (_people_noun(tok.text) and _people_noun(item.antonym)):
                return FilterVerdict(False, f"'{det.text} {tok.text}' is a noun phrase headed by the adjective "
                                            f"({tok.dep}); '{item.antonym}' does not stand in for it",
                                     {"slot": tok.dep})
        return PASS


class VerbalParticipleFilter(_PerItem):
    """A participle (VBN, VBG) replaced by an adjective antonym while it keeps a verb's dependents
    (a by-agent, an object, a clausal complement), follows perfect "have", or heads a relative,
    adverbial or prepositional clause."""

    name = "verbal_participle"
    VERB_CHILDREN = ("agent", "dobj", "dative", "xcomp", "ccomp")
    CLAUSE_DEPS = ("relcl", "advcl", "pcomp", "acl")

    def judge(self, item: FilterItem) -> FilterVerdict:
        tok = item.token
        if item_pos(item) != "a" or tok.tag not in ("VBN", "VBG"):
            return PASS
        children = _children(item.sentence, tok.i)
        verbal = next((c for c in children if c.dep in self.VERB_CHILDREN), None)
        if verbal is not None:
            why = f"it takes a verb's dependent ('{verbal.text}', {verbal.dep})"
        elif any(c.dep == "aux" and c.lemma.lower() == "have" for c in children):
            why = "it follows perfect 'have'"
        elif tok.dep in self.CLAUSE_DEPS:
            why = f"it heads a clause ({tok.dep})"
        else:
            return PASS
        return FilterVerdict(False, f"'{tok.text}' is used as a verb: {why}, which the adjective "
                                    f"'{item.antonym}' cannot take", {"slot": tok.dep})


ADJECTIVE_FILTERS = {
    RelationalAdjectiveFilter.name: RelationalAdjectiveFilter,
    NominalAdjectiveFilter.name: NominalAdjectiveFilter,
    VerbalParticipleFilter.name: VerbalParticipleFilter,
}
