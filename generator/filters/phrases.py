"""Filters for words inside phrases: what the new word needs from the rest of the sentence.

- ``fixed_phrase``: time expressions (last/next/this + a time noun: "last Thursday") and WordNet's
  multiword lemmas with a possessive slot ("change one's mind");
- ``licensing``: the antonym is a negative-polarity item with no licensor ("You ever hesitate"), the
  antonym is already in the sentence ("whether you lose or lose"), or the word sits in a slot the
  antonym cannot fill (a quantifier-like adjective before a numeral, "same" without "the").
"""

from __future__ import annotations

from functools import lru_cache

from transnli.generator.filters.base import PASS, FilterItem, FilterVerdict, PerItemFilter
from transnli.generator.filters.registry import register_filter
from transnli.generator.tagging import TaggedSentence, Token
from transnli.generator.wordnet import first_noun_lexname, wordnet


# -- word lists (resources/filters/word_lists.toml) ----------------------------------------------
@lru_cache(maxsize=1)
def word_lists() -> dict[str, frozenset[str]]:
    import tomllib
    from transnli.resources import resource_path

    data = tomllib.loads(resource_path("filters", "word_lists.toml").read_text(encoding="utf-8"))
    return {k: frozenset(v) for k, v in data.items()}


# -- licensing and slots ---------------------------------------------------------------------------
@register_filter(
    "licensing",
    rank=40,
    summary="negative-polarity antonyms without a licensor, antonyms already in the sentence and "
    "slots the antonym cannot fill are rejected",
)
class LicensingFilter(PerItemFilter):
    """What the new word needs from the rest of the sentence: a licensor for a negative-polarity
    item, a sentence that does not already say the antonym, a slot it can fill."""

    def judge(self, item: FilterItem) -> FilterVerdict:
        lists = word_lists()
        tok, sent = item.token, item.sentence
        ant = item.antonym.lower()
        others = [t for t in sent.tokens if t.i != tok.i]
        words = {t.text.lower() for t in others} | {t.lemma.lower() for t in others}
        if ant in lists["negative_polarity"]:
            licensed = (
                sent.text.rstrip().endswith("?")
                or any(w in lists["npi_licensors"] for w in words)
                or any(t.dep == "neg" for t in others)
            )
            if not licensed:
                return FilterVerdict(
                    False, f"'{item.antonym}' is a negative-polarity item with no licensor"
                )
        if (" " not in ant and ant in words) or (
            " " in ant and f" {ant} " in f" {sent.text.lower()} "
        ):
            return FilterVerdict(False, f"the antonym '{item.antonym}' is already in the sentence")
        det_like = lists["determiner_like_adjectives"]
        word = tok.lemma.lower()
        if tok.pos in ("ADJ", "DET", "NUM") and (word in det_like or ant in det_like):
            head = sent.tokens[tok.head] if 0 <= tok.head < len(sent.tokens) else None
            prenominal = head is not None and head.i > tok.i and head.pos in ("NOUN", "PROPN")
            # In the determiner slot: nothing of the determiner's kind before the word ("certain
            # conditions", "its own base"), or a numeral ("five same cars").
            before = (
                [t for t in others if t.head == head.i and t.i < tok.i] if head is not None else []
            )
            in_slot = word == "own" or not any(
                t.dep in ("det", "poss", "predet", "nummod") for t in before
            )
            if head is not None and head.pos == "ADP" and head.i == tok.i + 1:
                # a complex preposition or comparative: "such as", "more than", "less than"
                return FilterVerdict(False, f"'{tok.text} {head.text}' is a fixed function phrase")
            if prenominal:
                if in_slot and (word in det_like) != (ant in det_like):
                    return FilterVerdict(
                        False, f"'{tok.text}' fills the determiner slot; '{item.antonym}' does not"
                    )
                if any(t.tag == "CD" for t in before):
                    return FilterVerdict(
                        False, f"'{item.antonym}' cannot stand after the numeral of '{head.text}'"
                    )
                definite = ("the", "this", "that", "these", "those")
                if ant == "same" and not any(t.text.lower() in definite for t in before):
                    return FilterVerdict(False, "'same' needs a definite determiner")
        return PASS


# -- fixed phrases ---------------------------------------------------------------------------------
_POSSESSIVE_SLOTS = frozenset({"one's", "someone's", "somebody's"})
_REFLEXIVE_SLOTS = frozenset({"oneself", "itself"})


@lru_cache(maxsize=1)
def _slot_multiwords() -> tuple[tuple[str, ...], ...]:
    """WordNet's multiword lemmas with a possessive or reflexive slot ("change_one's_mind")."""
    wn = wordnet()
    out = set()
    for pos in ("v", "n", "a", "r"):
        for name in wn.all_lemma_names(pos):
            parts = tuple(name.lower().split("_"))
            if len(parts) > 1 and any(
                p in _POSSESSIVE_SLOTS or p in _REFLEXIVE_SLOTS for p in parts
            ):
                out.add(parts)
    return tuple(sorted(out))


def _fits(pattern_word: str, tok: Token) -> bool:
    if pattern_word in _POSSESSIVE_SLOTS:
        return tok.tag == "PRP$" or tok.tag == "POS" or tok.text.lower().endswith("'s")
    if pattern_word in _REFLEXIVE_SLOTS:
        return tok.text.lower().endswith("self") or tok.text.lower().endswith("selves")
    return pattern_word in (tok.text.lower(), tok.lemma.lower())


@register_filter(
    "fixed_phrase",
    rank=30,
    summary="time expressions and multiword expressions are left alone",
)
class FixedPhraseFilter(PerItemFilter):
    """Words inside an expression whose meaning is not the sum of its words: deictic time
    expressions ("last Thursday", "next week"), WordNet's multiword lemmas with a possessive or
    reflexive slot ("change one's mind", "take oneself off"), and WordNet's multiword verbs and
    adverbs ("at least", "take place"; the antonym stage's own test)."""

    def __init__(self):
        self._antonyms = None

    def _multiword(self, sentence: TaggedSentence, i: int) -> str | None:
        if self._antonyms is None:
            from transnli.generator.antonyms import WordNetAntonyms

            self._antonyms = WordNetAntonyms("direct")
        return self._antonyms.multiword_expression(sentence, i)

    def judge(self, item: FilterItem) -> FilterVerdict:
        tok, sent = item.token, item.sentence
        toks = sent.tokens
        if tok.text.lower() in word_lists()["time_deictics"]:
            nxt = [t for t in toks if t.i > tok.i][:2]
            for t in nxt:
                if (
                    t.pos in ("NOUN", "PROPN")
                    and first_noun_lexname(t.lemma.lower()) == "noun.time"
                ):
                    return FilterVerdict(False, f"time expression '{tok.text} {t.text}'")
        for pattern in _slot_multiwords():
            n = len(pattern)
            for start in range(max(0, tok.i - n + 1), min(tok.i, len(toks) - n) + 1):
                if all(_fits(p, toks[start + k]) for k, p in enumerate(pattern)):
                    return FilterVerdict(False, f"multiword expression '{' '.join(pattern)}'")
        expr = self._multiword(sent, tok.i)
        if expr:
            return FilterVerdict(False, f"multiword expression '{expr}'")
        return PASS
