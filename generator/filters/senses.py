"""Filters on the word's senses: is the word used here in a sense that the antonym opposes?

- ``sense_fit``: the word is unlikely to be used in a sense that carries the antonym, judged from
  WordNet's sense-tagged frequencies and the sentence (a simplified Lesk over word vectors);
- ``rare_sense``: the antonym belongs only to the word's rare senses.

The sense tables here (`word_senses`, `item_senses`, `antonym_sense_prior`) are also read by the
adjective filter and the quality features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from transnli.generator.antonyms import WN_POS
from transnli.generator.filters.base import (
    PASS,
    FilterItem,
    FilterOptions,
    FilterVerdict,
    PerItemFilter,
)
from transnli.generator.filters.registry import register_filter
from transnli.generator.wordnet import base_forms, sense_count, wordnet

_STOP = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "with",
        "by",
        "from",
        "and",
        "or",
        "but",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "he",
        "she",
        "they",
        "we",
        "you",
        "i",
        "his",
        "her",
        "their",
        "our",
        "your",
        "my",
        "as",
        "not",
        "no",
        "so",
        "than",
        "then",
        "there",
        "which",
        "who",
        "whom",
        "what",
        "when",
        "where",
        "how",
    ]
)


@dataclass(frozen=True)
class SenseInfo:
    name: str
    count: int  # WordNet's sense-tagged frequency of the word in this sense
    carries: bool  # the sense has the antonym (directly, or through the head of a satellite)
    gloss: tuple[str, ...]  # definition, synonyms and hypernyms' names: the sense's signature


@lru_cache(maxsize=4096)
def word_senses(word: str, pos: str, antonym: str) -> tuple[SenseInfo, ...]:
    wn = wordnet()
    key = word.lower().replace(" ", "_")
    ant = antonym.lower().replace(" ", "_")
    own_names = base_forms(key, pos)
    out = []
    for synset in wn.synsets(key, pos):
        lemmas = synset.lemmas()
        carriers = {a.name().lower() for lem in lemmas for a in lem.antonyms()}
        if synset.pos() == "s":
            carriers |= {
                a.name().lower()
                for head in synset.similar_tos()
                for lem in head.lemmas()
                for a in lem.antonyms()
            }
        words = [w for w in synset.definition().lower().replace(";", " ").split() if w.isalpha()]
        words += [n for lem in lemmas for n in lem.name().lower().split("_") if n not in own_names]
        for hyper in synset.hypernyms() + synset.similar_tos():
            words += [n for lem in hyper.lemmas() for n in lem.name().lower().split("_")]
        count = sum(sense_count(lem) for lem in lemmas if lem.name().lower() in own_names)
        out.append(
            SenseInfo(
                synset.name(), count, ant in carriers, tuple(w for w in words if w not in _STOP)
            )
        )
    return tuple(out)


def item_pos(item: FilterItem) -> str:
    """The WordNet POS the candidate's antonym was found under."""
    return (
        item.antonym_pos
        if item.antonym_pos in ("a", "n", "v", "r")
        else WN_POS.get(item.token.pos, "n")
    )


def item_senses(item: FilterItem, pos: str) -> tuple[SenseInfo, ...]:
    """The senses of the replaced word, each marked whether it carries the antonym."""
    tok = item.token
    # The lemma when the word is looked up in its own POS; a participle read as an adjective
    # ("occupied") is looked up by its surface form, as the antonym stage does.
    word = tok.lemma.lower() if pos == WN_POS.get(tok.pos) else tok.text.lower()
    return word_senses(word, pos, item.antonym) or word_senses(tok.text.lower(), pos, item.antonym)


def antonym_sense_prior(senses: Sequence[SenseInfo]) -> float:
    """Share of the word's sense-tagged uses (add-half smoothing) on senses that carry the
    antonym."""
    total = sum(s.count + 0.5 for s in senses)
    return sum(s.count + 0.5 for s in senses if s.carries) / total if total else 0.0


@register_filter(
    "sense_fit",
    rank=120,
    summary="the word must be likely to be used in a sense that carries the antonym",
)
class SenseFitFilter(PerItemFilter):
    """Is the word used here in a sense that the antonym opposes? Each WordNet sense of the word
    gets a prior from WordNet's sense-tagged frequencies (add-half smoothing) and a context score:
    the cosine between the sentence's other words and the sense's signature (its definition,
    synonyms and hypernyms), over the same word vectors the ranker uses (a simplified Lesk). The
    candidate is kept when the best-scoring sense carries the antonym. The sense's example
    sentences are left out of the signature on purpose: WordNet's examples are also real text that
    users generate from, and a sentence must not be judged against itself."""

    def __init__(self, ranker=None, context_weight: float = 4.0):
        self.ranker = ranker
        self.context_weight = context_weight

    @classmethod
    def from_options(cls, options: FilterOptions) -> SenseFitFilter:
        return cls(options.ranker)

    def judge(self, item: FilterItem) -> FilterVerdict:
        import math

        tok = item.token
        pos = item_pos(item)
        senses = item_senses(item, pos)
        if len(senses) < 2 or not any(s.carries for s in senses) or all(s.carries for s in senses):
            return PASS  # one sense, or nothing to choose between
        total = sum(s.count + 0.5 for s in senses)
        ctx = None
        if self.ranker is not None:
            context = [
                t.text
                for t in item.sentence.tokens
                if t.i != tok.i and t.is_alpha and t.text.lower() not in _STOP
            ]
            ctx = self.ranker.context_vector(context)
        best, best_score = None, -math.inf
        for s in senses:
            score = math.log((s.count + 0.5) / total)
            if ctx is not None and s.gloss:
                sig = self.ranker.context_vector(list(s.gloss))
                if sig is not None:
                    score += self.context_weight * float(sig @ ctx)
            if score > best_score:
                best, best_score = s, score
        details = {"sense": best.name, "antonym_sense_prior": round(antonym_sense_prior(senses), 4)}
        if best.carries:
            return FilterVerdict(True, "", details)
        return FilterVerdict(
            False,
            f"'{tok.text}' reads as {best.name}, a sense '{item.antonym}' does not oppose",
            details,
        )


@register_filter(
    "rare_sense",
    rank=70,
    summary="a noun or verb is not swapped for an antonym of only its rare senses",
)
class RareSenseFilter(PerItemFilter):
    """A noun or verb whose antonym belongs only to its rare senses: none of them is the word's
    first WordNet sense, and together they carry under `min_prior` of its sense-tagged uses
    (add-half smoothing). Such a swap mostly reads the word in the wrong sense ("sentence" ->
    "acquittal" in a text about grammar, "key" -> "atonality", "location" -> "studio"). Unlike
    sense_fit it does not guess the sense from the context, which on the dev set cost more good
    triples than it saved; it only asks how likely the antonym's senses are at all."""

    POS = ("n", "v")

    def __init__(self, min_prior: float = 0.3):
        self.min_prior = min_prior

    def judge(self, item: FilterItem) -> FilterVerdict:
        tok, pos = item.token, item_pos(item)
        if pos not in self.POS:
            return PASS
        senses = item_senses(item, pos)
        if not senses or not any(s.carries for s in senses) or senses[0].carries:
            return PASS
        prior = antonym_sense_prior(senses)
        details = {
            "sense": next(s.name for s in senses if s.carries),
            "antonym_sense_prior": round(prior, 4),
        }
        if prior >= self.min_prior:
            return FilterVerdict(True, "", details)
        return FilterVerdict(
            False,
            f"'{item.antonym}' opposes only rare senses of '{tok.text}' "
            f"({prior:.0%} of its tagged uses, not its first sense)",
            details,
        )
