"""Realiser: put an antonym in place of one token, in the token's inflection and capitalisation.

Only the token's own characters change (its span in `sentence.text`, found through the token's
char offset); spacing and punctuation around it stay byte-identical. The one exception is
grammar the swap itself breaks: an indefinite article right before the word is fixed when the
new word starts with another sound ("a happy child" -> "an unhappy child"), and the fix is recorded
in `Realised.article`.

Inflection uses lemminflect: the antonym (a WordNet lemma) is inflected to the token's Penn tag
("has"/VBZ + lack -> "lacks", "found"/VBD + lose -> "lost", "men"/NNS + woman -> "women",
"taller"/JJR + short -> "shorter"). Fallbacks, when lemminflect has no form:
- multi-word antonyms: a verb inflects its first word ("fell asleep", "takes away"), a noun its
  last ("boy scouts");
- comparatives and superlatives of adjectives and adverbs with no -er/-est form in lemminflect's
  lexicon take "more"/"most" ("more slowly", "most beautiful"); lemminflect's rule-built guesses
  ("beautifuler") are not used for them;
- other words unknown to lemminflect (verbs, nouns) take its rule-based (OOV) inflection;
- an adjective antonym given for a participle ("occupied"/VBN -> "unoccupied", which the antonym
  source finds through the participle's adjective reading) is used as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from transnli.generator.tagging import TaggedSentence

VERB_TAGS = frozenset({"VBD", "VBN", "VBZ", "VBG"})
NOUN_PLURAL_TAGS = {"NNS": "NNS", "NNPS": "NNS"}
DEGREE_TAGS = {"JJR": "more", "RBR": "more", "JJS": "most", "RBS": "most"}
CLITICS = frozenset(
    {"'s", "'re", "'ve", "'m", "'d", "'ll", "n't", "’s", "’re", "’ve", "’m", "’d", "’ll", "n’t"}
)
ARTICLES = frozenset({"a", "an"})


@dataclass(frozen=True)
class Realised:
    """The sentence with the antonym in place.

    `char_start`/`char_end`: the new word's span in `text` (after any article fix). `surface`: the
    new word as written (inflected, capitalised). `article`: (old, new) when the indefinite
    article before the word was changed to agree with it, else None; `article_start` is then its
    offset in `text`.
    """

    text: str
    char_start: int
    char_end: int
    surface: str
    article: tuple[str, str] | None = None
    article_start: int = -1


# -- inflection ------------------------------------------------------------------------------------
def inflections(lemma: str, tag: str, oov: bool) -> tuple[str, ...]:
    """lemminflect's forms of `lemma` for Penn `tag` (`oov`: also for words it does not know)."""
    from lemminflect import getInflection

    return tuple(getInflection(lemma, tag, inflect_oov=oov))


# Prefixes that keep the stem's inflection (unmake -> unmade, mislead -> misled, outdo -> outdid).
# lemminflect inflects some such WordNet antonyms regularly ("unmaked"). Prefixes like de- and re-
# are left out: "delight" is no "de" + "light" (lit).
VERB_PREFIXES = ("under", "over", "out", "mis", "un")


def _prefixed_forms(verb: str, tag: str) -> tuple[str, ...]:
    """An irregular stem's forms under a prefix: unmake/VBD -> unmade; () when the stem is not a
    verb lemminflect knows or inflects regularly (then the word's own forms serve)."""
    for prefix in VERB_PREFIXES:
        stem = verb[len(prefix) :]
        if not verb.startswith(prefix) or len(stem) < 2:
            continue
        forms = inflections(stem, tag, False)
        if forms and not any(f.startswith(stem.rstrip("e")) for f in forms):
            return tuple(prefix + f for f in forms)
    return ()


def _adjective_only(word: str) -> bool:
    """True for a word lemminflect knows as an adjective and not as a verb ("unoccupied")."""
    from lemminflect import getAllLemmas

    lemmas = getAllLemmas(word)
    return "ADJ" in lemmas and "VERB" not in lemmas


def _is_form(word: str, tag: str) -> bool:
    """True when `word` already is the `tag` form of one of its lemmas ("most" is RBS of much)."""
    from lemminflect import getAllLemmas

    w = word.lower()
    return any(
        w in (f.lower() for f in inflections(lemma, tag, False))
        for lemmas in getAllLemmas(word).values()
        for lemma in lemmas
    )


def _mistaken_degree(word: str, tag: str) -> bool:
    """A plain adjective or adverb the tagger read as a comparative or superlative by its ending
    ("their folly shall be manifest": JJS, and "most unobvious" would follow): lemminflect knows
    the word as its own adjective or adverb lemma and as no such form of any lemma. A word it does
    not know keeps the tagger's reading."""
    from lemminflect import getAllLemmas

    w = word.lower()
    own = any(
        w in (lemma.lower() for lemma in lemmas)
        for pos, lemmas in getAllLemmas(w).items()
        if pos in ("ADJ", "ADV")
    )
    return own and not _is_form(w, tag)


@lru_cache(maxsize=1 << 11)  # bounded: see transnli.generator.wordnet.CACHE_SIZE
def inflect(antonym: str, tag: str, antonym_pos: str | None = None) -> str:
    """The antonym (a lemma, possibly several words) in the form that Penn `tag` asks for.

    `antonym_pos`: the antonym's WordNet POS when known ("a" keeps an adjective uninflected in a
    participle's place); None to judge from lemminflect's lexicon.
    """
    words = antonym.split()
    if not words:
        return antonym
    if tag in VERB_TAGS:
        head = words[0]
        if antonym_pos == "a" or (
            antonym_pos is None and len(words) == 1 and _adjective_only(head)
        ):
            # An adjective in a participle's place ("is occupied" -> "is unoccupied").
            return antonym
        forms = (
            _prefixed_forms(head, tag)
            or inflections(head, tag, False)
            or inflections(head, tag, True)
        )
        return " ".join([forms[0], *words[1:]]) if forms else antonym
    if tag in NOUN_PLURAL_TAGS:
        last = words[-1]
        forms = inflections(last, "NNS", False) or inflections(last, "NNS", True)
        return " ".join([*words[:-1], forms[0]]) if forms else antonym
    if tag in DEGREE_TAGS:
        if len(words) == 1:
            if _is_form(words[0], tag):
                return antonym  # already a comparative/superlative: "least" -> "most"
            forms = inflections(words[0], tag, False)
            if forms:
                return forms[0]
        return f"{DEGREE_TAGS[tag]} {antonym}"
    return antonym


# -- capitalisation and articles -------------------------------------------------------------------
def match_case(new: str, original: str) -> str:
    """Give `new` the capitalisation pattern of `original`: ALL CAPS (two letters or more) ->
    upper; Title (first letter upper) -> first letter upper, the rest as WordNet writes it;
    anything else -> `new` unchanged (so a proper noun in the antonym keeps its capitals)."""
    letters = [c for c in original if c.isalpha()]
    if len(letters) >= 2 and all(c.isupper() for c in letters):
        return new.upper()
    if letters and original[0].isupper():
        return new[:1].upper() + new[1:]
    return new


_SILENT_H = re.compile(r"^(hour|honest|honor|honour|heir)")
# Vowel letters with a consonant sound: "a unique", "a useful", "a European", "a one-off";
# but "an unimportant", "an uninteresting", "an unidentified" (un- + i...), "an unusual".
_YOU_SOUND = re.compile(
    r"^(eu|ewe|one\b|one-|once|uni(?![mnd])|use|usu|uti|uto|ura|ure|uri|ubi|uku|ufo|u-)"
)


def indefinite_article(word: str) -> str:
    """'a' or 'an' for `word`, by its first sound (spelling rules with the common exceptions)."""
    w = word.lower()
    if not w or not w[0].isalpha():
        return "a"
    if _SILENT_H.match(w):
        return "an"
    if w[0] in "aeiou":
        return "a" if _YOU_SOUND.match(w) else "an"
    return "a"


def _article_case(new: str, original: str) -> str:
    if len(original) > 1 and original.isupper():
        return new.upper()
    if original[:1].isupper():
        return new.capitalize()
    return new


# -- realising -------------------------------------------------------------------------------------
def realise(
    sentence: TaggedSentence, token_index: int, antonym: str, antonym_pos: str | None = None
) -> Realised | None:
    """Replace token `token_index` of `sentence` with `antonym`, inflected and capitalised like
    the token. None when it cannot be done cleanly: a bad index, a token whose offsets do not
    match the text, a clitic ("'s", "n't") or a word fused with "n't", an empty antonym, or a
    result identical to the original."""
    toks = sentence.tokens
    if not 0 <= token_index < len(toks):
        return None
    tok = toks[token_index]
    start, end = tok.idx, tok.idx + len(tok.text)
    text = sentence.text
    if not tok.text or text[start:end] != tok.text or tok.text.lower() in CLITICS:
        return None
    nxt = toks[token_index + 1] if token_index + 1 < len(toks) else None
    if nxt is not None and not tok.whitespace and nxt.text.lower() in ("n't", "n’t"):
        return None  # "haven't" -> "lackn't": a lexical verb cannot carry the contraction
    antonym = " ".join(antonym.replace("_", " ").split())
    if not antonym:
        return None

    tag = tok.tag
    if tag in DEGREE_TAGS and _mistaken_degree(tok.text, tag):
        tag = "JJ" if tag.startswith("JJ") else "RB"
    surface = match_case(inflect(antonym, tag, antonym_pos), tok.text)
    if surface == tok.text:
        return None
    new_text = text[:start] + surface + text[end:]
    new_start = start
    article = None
    article_start = -1

    prev = toks[token_index - 1] if token_index > 0 else None
    if (
        prev is not None
        and prev.text.lower() in ARTICLES
        and prev.tag == "DT"
        and prev.idx + len(prev.text) + len(prev.whitespace) == start
        and text[prev.idx : prev.idx + len(prev.text)] == prev.text
    ):
        wanted = indefinite_article(surface)
        if wanted != prev.text.lower():
            new_article = _article_case(wanted, prev.text)
            a0, a1 = prev.idx, prev.idx + len(prev.text)
            new_text = new_text[:a0] + new_article + new_text[a1:]
            new_start += len(new_article) - len(prev.text)
            article = (prev.text, new_article)
            article_start = a0

    return Realised(new_text, new_start, new_start + len(surface), surface, article, article_start)


class Realiser:
    """The realising stage: `realise` for one replacement, `realise_many` for a batch."""

    def realise(
        self,
        sentence: TaggedSentence,
        token_index: int,
        antonym: str,
        antonym_pos: str | None = None,
    ) -> Realised | None:
        return realise(sentence, token_index, antonym, antonym_pos)

    def realise_many(
        self,
        items: Iterable[
            tuple[TaggedSentence, int, str] | tuple[TaggedSentence, int, str, str | None]
        ],
    ) -> list[Realised | None]:
        """One result per (sentence, token_index, antonym[, antonym_pos]) item, in order."""
        return [realise(*item) for item in items]
