"""Adjective filters: where an adjective's antonym cannot stand in for it, from WordNet and the
parse.

Adjectives are most of what the generator accepts, and their bad swaps are mostly a wrong sense or a
true opposite that the sentence cannot take. One shape that WordNet can see without guessing the
sense from the context (which, in ``sense_fit``, cost more good triples than it saved):

- ``relational_adj``: a *relational* (classifying) adjective used before a noun. Its more frequent
  reading relates the noun to a domain ("economic straitjacket" = of the economy, "medical
  inhibition", "academic hierarchy"): a WordNet pertainym sense (lexicographer file adj.pert) or a
  sense glossed "of or relating to ...". Such senses have no antonym; the antonym belongs to a
  later, descriptive sense (economic = thrifty -> inefficient), so the swap reads as a different,
  often absurd, classification ("inefficient straitjacket", "surgical inhibition").

It is a pure look-up over WordNet and the parse spaCy already made, and passes everything that is
not an adjective swap (the antonym's WordNet POS is not "a"). Other adjective rules that were
measured and not kept (an adjective heading a noun phrase, a participle doing a verb's work, rare
adjective senses, indirect antonyms of satellites) are described with their figures in
docs/adjective-filters.md.
"""

from __future__ import annotations

import re

from transnli.generator.filters.base import PASS, FilterItem, FilterVerdict, PerItemFilter
from transnli.generator.filters.quality_features import negative_prefix_pair
from transnli.generator.filters.registry import register_filter
from transnli.generator.filters.senses import item_pos, item_senses
from transnli.generator.wordnet import wordnet

# WordNet's glosses for relational senses that the lexicographers did not file under adj.pert
# ("local.a.02" is adj.pert, but "contemporary.s.02" reads "belonging to the present time").
_RELATIONAL_GLOSS = re.compile(
    r"^(of or )?(relating|pertaining|belonging) to\b|^of or (relating|pertaining|belonging)\b"
)


def is_relational(synset_name: str) -> bool:
    """A WordNet adjective sense that classifies (relates a noun to a domain) rather than
    describes."""
    synset = wordnet().synset(synset_name)
    return synset.lexname() == "adj.pert" or bool(_RELATIONAL_GLOSS.match(synset.definition()))


def _negated_form(antonym: str, *words: str) -> bool:
    """The antonym is one of the words with a negative prefix, or the other way round."""
    ant = antonym.lower()
    return any(
        negative_prefix_pair(w.lower(), ant) or negative_prefix_pair(ant, w.lower()) for w in words
    )


@register_filter(
    "relational_adj",
    rank=80,
    summary="a relational adjective before a noun is not swapped for an antonym of only a later, "
    "descriptive sense",
)
class RelationalAdjectiveFilter(PerItemFilter):
    """An attributive adjective whose first relational sense ranks before every sense that carries
    the antonym (WordNet ranks senses by their sense-tagged frequency): the classifying reading is
    the likelier one, and the antonym opposes only a descriptive reading. Predicative uses ("she
    felt provincial") pass: a relational adjective is rarely predicative, so there the descriptive
    sense is the one meant. With `keep_negated` (the default) an antonym that is the word with a
    negative prefix also passes ("musical" -> "unmusical", "modern" -> "nonmodern"): it keeps the
    word's stem and so its domain, and on the dev set such swaps were good as often as not, while an
    antonym of another stem switches the domain ("medical" -> "surgical", "academic" ->
    "applied")."""

    DEPS = ("amod",)

    def __init__(self, keep_negated: bool = True):
        self.keep_negated = keep_negated

    def judge(self, item: FilterItem) -> FilterVerdict:
        tok = item.token
        if item_pos(item) != "a" or tok.dep not in self.DEPS:
            return PASS
        senses = item_senses(item, "a")
        carrying = next((i for i, s in enumerate(senses) if s.carries), None)
        relational = next(
            (i for i, s in enumerate(senses) if not s.carries and is_relational(s.name)), None
        )
        if carrying is None or relational is None or relational > carrying:
            return PASS
        if self.keep_negated and _negated_form(item.antonym, tok.text, tok.lemma):
            return PASS
        details = {"sense": senses[relational].name, "antonym_sense": senses[carrying].name}
        return FilterVerdict(
            False,
            f"'{tok.text}' before a noun reads as the relational sense "
            f"{senses[relational].name}; '{item.antonym}' opposes only the "
            f"later sense {senses[carrying].name}",
            details,
        )
