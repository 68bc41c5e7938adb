"""Antonym source: WordNet (through nltk) antonym candidates for a tagged content word.

Two modes:

``broad``  -- the paper's candidate set (Wu & Last, Algorithm 1), reproduced as stated: for the
    surface form and for spaCy's lemma, every synset with the word's POS, every lemma of each
    synset, all antonyms of those lemmas; participles are also looked up as adjectives; only
    antonyms with the word's POS are kept.

``direct`` -- a more careful set (our own; every choice is documented where it is made):
    1. the antonyms of the word's *own* lemma (WordNet's "direct" antonyms; spaCy's in-context
       lemma, not every morphy reading of the surface form), from the senses the word is
       attested in (its first sense, or tagged in WordNet's sense-tagged corpus), else from any
       sense; in sense order;
    2. only when there are none: its synonyms' antonyms (the rest of the broad set), from its
       attested senses only, in sense order;
    3. only when there are still none and the word is an adjective in a satellite synset:
       WordNet's *indirect* antonyms (those of the head adjective the satellite is "similar
       to", e.g. huge -> large -> small);
    and it declines ("skipped", with a reason) words whose replacement breaks an expression:
    auxiliaries and the copula, verb particles, particle verbs, noun-compound modifiers, parts of
    hyphenated compounds, semi-modals ("have to"), multiword expressions such as "at least",
    "take place" or "fall asleep", and lexicalised adjective-noun compounds ("high school", but
    not "young man", whose antonym compound "old man" is a WordNet noun too).

Candidates come back in a deterministic order; ranking them by word vectors is another stage's
job (transnli.generator.vectors), which keeps this order for ties and vector-less antonyms.

Lookups are cached per (word, POS, ...) for the life of the process: WordNet is immutable and the
pipeline asks about the same few thousand words millions of times.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from transnli.generator.tagging import TaggedSentence, Token
from transnli.generator.wordnet import (
    CACHE_SIZE,
    has_synsets,
    indirect_adjective_antonyms,
    sense_antonyms,
    wordnet,
)

MODES = ("broad", "direct")

# spaCy universal POS -> WordNet POS. Auxiliaries reach this stage only when the POS set asks for
# them (the paper treats them as verbs), so they are looked up as verbs.
WN_POS = {"VERB": "v", "AUX": "v", "NOUN": "n", "ADJ": "a", "ADV": "r"}
PARTICIPLE_TAGS = frozenset({"VBN", "VBG"})

STATUS_OK = "ok"
STATUS_NO_ANTONYM = "no_antonym"  # WordNet has no antonym at all for the word, in any POS
STATUS_NO_POS_MATCH = "no_pos_match"  # antonyms exist, but none with the word's POS
STATUS_SKIPPED = (
    "skipped"  # direct mode only: antonyms exist, but replacing the word breaks an expression
)
STATUSES = (STATUS_OK, STATUS_NO_ANTONYM, STATUS_NO_POS_MATCH, STATUS_SKIPPED)


@dataclass(frozen=True)
class AntonymLookup:
    """The antonym candidates of one token.

    `antonyms`: lemma names, underscores turned into spaces, deduplicated, deterministic order.
    `pos`: the WordNet POS ("n", "v", "a", "r") of each antonym, parallel to `antonyms` ("a" for a
    participle's adjective antonym such as "unoccupied" for "occupied", which a realiser must not
    inflect as a verb).
    `status`: one of STATUSES. `reason`: why a word was skipped (direct mode), else "".
    """

    antonyms: list[str]
    status: str
    pos: list[str] = field(default_factory=list)
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.status == STATUS_OK


# One antonym as found: (name with spaces, WordNet POS with satellites folded into "a").
_Found = tuple[str, str]


def _key(word: str) -> str:
    return word.strip().lower().replace(" ", "_")


def _display(name: str) -> str:
    return name.replace("_", " ")


def _dedup(
    found: Iterable[_Found], exclude: Iterable[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Drop duplicates (first occurrence wins) and antonyms equal to the word itself."""
    skip = {_key(w) for w in exclude}
    seen: set[str] = set()
    names, poses = [], []
    for name, pos in found:
        k = name.lower()
        if k in seen or k in skip:
            continue
        seen.add(k)
        names.append(_display(name))
        poses.append(pos)
    return tuple(names), tuple(poses)


# -- fixed expressions (direct mode) ---------------------------------------------------------------
# Multiword expressions that WordNet does not list as lemmas but whose words must not be swapped
# one at a time. WordNet's own adverb and verb multiword lemmas ("at least", "of course", "give up",
# "take place") are found in WordNet itself (see WordNetAntonyms.multiword_expression).
FIXED_EXPRESSIONS = frozenset(
    tuple(e.split())
    for e in (
        "at first",
        "at last",
        "at the same time",
        "as well as",
        "even though",
        "as long as",
        "as soon as",
        "as far as",
        "as good as",
        "first of all",
        "in front of",
        "on top of",
        "in order to",
        "no matter",
        "all the time",
        "at the moment",
        "in the end",
        "on the other hand",
        "last but not least",
        "for the most part",
        "rather than",
        "had better",
        "would rather",
    )
)
_MAX_EXPR = max(len(e) for e in FIXED_EXPRESSIONS)

# Dependency labels of tokens that are not free content words: grammatical auxiliaries, verb
# particles, modifiers inside noun compounds and names, fixed function-word units.
SKIP_DEPS = {
    "aux": "auxiliary",
    "auxpass": "auxiliary",
    "prt": "verb particle",
    "compound": "compound modifier",
    "fixed": "fixed expression",
    "flat": "name",
}


class WordNetAntonyms:
    """WordNet antonym candidates for tagged tokens (see the module docstring for the modes)."""

    def __init__(self, mode: str = "broad"):
        if mode not in MODES:
            raise ValueError(f"unknown antonym mode {mode!r}; choose one of {', '.join(MODES)}")
        self.mode = mode
        self._cache: dict[tuple, tuple[tuple[str, ...], tuple[str, ...], str, str]] = {}
        self._mwe: frozenset[str] | None = None
        self._noun_mwe: frozenset[str] | None = None

    # -- public API --------------------------------------------------------------------------------
    def version(self) -> str:
        try:
            return f"wordnet-{wordnet().get_version()}"
        except LookupError:
            return "wordnet-missing"

    def candidates(self, token: Token, sentence: TaggedSentence | None = None) -> AntonymLookup:
        """Antonyms for `token`. In direct mode, pass the token's `sentence` too, so that words
        inside particle verbs and idioms are recognised (without it only the token's own
        dependency label is used)."""
        wn_pos = WN_POS.get(token.pos)
        if wn_pos is None:
            return AntonymLookup([], STATUS_NO_ANTONYM, [], f"POS {token.pos} is not looked up")
        participle = token.tag in PARTICIPLE_TAGS and wn_pos == "v"
        adjectival = self.mode == "direct" and self._adjectival(token)
        key = (token.text.lower(), token.lemma.lower(), wn_pos, participle, adjectival)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._lookup(*key)
            if len(self._cache) >= CACHE_SIZE:
                self._cache.clear()
            self._cache[key] = hit
        names, poses, status, reason = hit
        if status == STATUS_OK and self.mode == "direct":
            reason = self.skip_reason(token, sentence, names)
            if reason:
                return AntonymLookup(list(names), STATUS_SKIPPED, list(poses), reason)
        return AntonymLookup(list(names), status, list(poses), reason)

    def candidates_many(
        self, tokens: Iterable[Token], sentence: TaggedSentence | None = None
    ) -> list[AntonymLookup]:
        """Batch form: one lookup per token (all from `sentence`, when given)."""
        return [self.candidates(t, sentence) for t in tokens]

    def candidates_for_sentence(
        self, sentence: TaggedSentence, tokens: Sequence[Token] | None = None
    ) -> list[AntonymLookup]:
        """Lookups for `tokens` (default: every token) of one sentence, with sentence context."""
        return self.candidates_many(sentence.tokens if tokens is None else tokens, sentence)

    # -- lookup ------------------------------------------------------------------------------------
    @staticmethod
    def _adjectival(token: Token) -> bool:
        # A verb-tagged participle in an adjective's position ("the occupied seat", "is occupied").
        return token.tag in PARTICIPLE_TAGS and token.dep in ("amod", "acomp", "oprd")

    def _lookup(self, text: str, lemma: str, pos: str, participle: bool, adjectival: bool):
        text, lemma = _key(text), _key(lemma)
        if self.mode == "broad":
            found = self._broad(text, lemma, pos, participle)
        else:
            found = self._direct(text, lemma, pos, participle, adjectival)
        names, poses = _dedup(found, (text, lemma))
        if names:
            return names, poses, STATUS_OK, ""
        if self.mode == "direct" and self._broad(text, lemma, pos, participle):
            # WordNet has POS-matching antonyms, but only synonyms' antonyms in senses the word was
            # never tagged with (wear -> refresh via "tire"): declined, not "no antonym".
            return (), (), STATUS_SKIPPED, "only rare-sense synonym antonyms"
        any_pos = [r for w in dict.fromkeys((text, lemma)) for r in sense_antonyms(w, None)]
        return (), (), (STATUS_NO_POS_MATCH if any_pos else STATUS_NO_ANTONYM), ""

    @staticmethod
    def _broad(text: str, lemma: str, pos: str, participle: bool) -> list[_Found]:
        found: list[_Found] = []
        # Surface form first, then spaCy's lemma; wn.synsets() morphy-normalises each.
        for word in dict.fromkeys((text, lemma)):
            found += [(name, ap) for *_, name, ap in sense_antonyms(word, pos) if ap == pos]
        if participle:
            # Participles are also looked up as adjectives (the paper), and their *adjective*
            # antonyms are kept although the token is a verb. Decision: the paper's POS filter
            # compares with the POS a word is looked up as; for a participle that is the adjective
            # reading too. Filtering them out would make the adjective lookup a no-op, since
            # WordNet's participial adjectives ("occupied", "concerned", "interested") hold
            # antonyms that their verbs lack (occupy, concern, interest have none), and spaCy
            # tags the same "occupied" VBN/VERB or VBN/ADJ from one sentence to the next.
            # The realiser keeps such adjective antonyms uninflected ("unoccupied").
            found += [(name, "a") for *_, name, ap in sense_antonyms(text, "a") if ap == "a"]
        return found

    @staticmethod
    def _direct(
        text: str, lemma: str, pos: str, participle: bool, adjectival: bool
    ) -> list[_Found]:
        # spaCy's lemma is chosen in context ("found" -> find, not found = establish), so direct
        # mode looks up the lemma alone, and the surface form only when WordNet lacks the lemma.
        word = lemma if has_synsets(lemma, pos) else text
        rows = [row for row in sense_antonyms(word, pos) if row[-1] == pos]
        if participle:
            # As in broad mode, a participle's adjective reading counts (see _broad).
            adj_rows = [row for row in sense_antonyms(text, "a") if row[-1] == "a"]
            # An adjectival participle reads as its adjective first, a verbal one as its verb.
            rows = adj_rows + rows if adjectival else rows + adj_rows
        # Sense order: a stable sort by the word's sense rank (sense numbers already follow the
        # word's tagged frequency, lemma.count(), so no separate frequency sort is needed).
        rows.sort(key=lambda row: row[0])

        def pick(own: bool | None, attested_only: bool) -> list[_Found]:
            return [
                (name, ap)
                for _, attested, is_own, name, ap in rows
                if (own is None or is_own == own) and (attested or not attested_only)
            ]

        # Tier 1: the antonyms of the word's own lemma in its attested senses (first sense, or
        # tagged at least once), e.g. new -> old, not "worn" (new.a.06, never tagged);
        # else the own lemma's antonyms in any sense.
        tier1 = pick(True, True) or pick(True, False)
        if tier1:
            return tier1
        # Tier 2: only when the word has no antonym of its own, its synonyms' antonyms in its
        # attested senses. Synonym antonyms are broad mode's main source of noise (win -> fail via
        # "succeed", have -> refuse via "accept", wear -> refresh via "tire", morning -> sunset via
        # "dawn"), so they never compete with a direct antonym, and rare senses are left out.
        tier2 = pick(None, True)
        if tier2:
            return tier2
        # Tier 3: an adjective whose (attested) senses are satellites has no antonym of its own in
        # WordNet's design; its indirect antonyms are those of the head it is similar to.
        if pos == "a" or adjectival:
            return [(n, "a") for _, n in indirect_adjective_antonyms(text if adjectival else word)]
        return []

    # -- fixed expressions (direct mode) -----------------------------------------------------------
    def _multiword_lemmas(self) -> frozenset[str]:
        """WordNet's multiword adverb and verb lemmas ("at_least", "give_up", "take_place").

        Noun and adjective multiwords are left out on purpose: WordNet lists compositional phrases
        such as "young man" and "old man", whose adjective is exactly the word worth replacing.
        """
        if self._mwe is None:
            wn = wordnet()
            self._mwe = frozenset(
                name for p in ("r", "v") for name in wn.all_lemma_names(p) if "_" in name
            )
        return self._mwe

    def _noun_multiwords(self) -> frozenset[str]:
        if self._noun_mwe is None:
            self._noun_mwe = frozenset(n for n in wordnet().all_lemma_names("n") if "_" in n)
        return self._noun_mwe

    def _lexicalised_compound(self, token: Token, toks, antonyms: Sequence[str]) -> str | None:
        """ "high school", "hot dog", "first aid": an adjective + noun that WordNet lists as a noun
        of its own, while no antonym + the noun is one ("low school"). Compositional pairs that
        WordNet lists on both sides ("young man"/"old man") stay replaceable."""
        i = token.i
        if token.pos != "ADJ" or i + 1 >= len(toks) or toks[i + 1].pos != "NOUN":
            return None
        nouns = self._noun_multiwords()
        noun_forms = dict.fromkeys((toks[i + 1].text.lower(), toks[i + 1].lemma.lower()))
        for noun in noun_forms:
            if not any(
                f"{adj}_{noun}" in nouns for adj in (token.text.lower(), token.lemma.lower())
            ):
                continue
            if not any(f"{_key(a)}_{n}" in nouns for a in antonyms for n in noun_forms):
                return f"{token.text.lower()} {noun}"
        return None

    def multiword_expression(self, sentence: TaggedSentence, i: int) -> str | None:
        """The fixed expression or WordNet multiword lemma that token `i` is part of, or None."""
        toks = sentence.tokens
        mwe = self._multiword_lemmas()
        for n in range(2, max(4, _MAX_EXPR) + 1):
            for start in range(max(0, i - n + 1), min(i, len(toks) - n) + 1):
                window = toks[start : start + n]
                if not all(t.is_alpha for t in window):
                    continue
                words = tuple(t.text.lower() for t in window)
                if words in FIXED_EXPRESSIONS:
                    return " ".join(words)
                # WordNet's "be X" verbs ("be quiet", "be well") are compositional, and so are
                # verb + preposition entries ("rely on", "go to"): the verb keeps its meaning.
                if n > 4 or window[0].lemma.lower() == "be" or window[-1].tag in ("IN", "TO"):
                    continue
                for variant in (words, tuple(t.lemma.lower() for t in window)):
                    if "_".join(variant) in mwe:
                        return " ".join(variant)
        return None

    def skip_reason(
        self, token: Token, sentence: TaggedSentence | None = None, antonyms: Sequence[str] = ()
    ) -> str:
        """Why replacing `token` alone would break an expression ("" when it would not).

        Used by direct mode. Without `sentence` only the token's own dependency label is known;
        `antonyms` (the candidates) let lexicalised adjective-noun compounds be recognised.
        """
        reason = SKIP_DEPS.get(token.dep)
        if reason:
            return reason
        if token.tag == "RP":
            return "verb particle"
        # Auxiliaries and the copula reach this stage only when the POS set includes AUX (the
        # paper's setting). Their WordNet antonyms belong to other senses (be -> differ comes from
        # "be" = "equal"), so direct mode declines them; only "have" of possession is kept.
        if token.pos == "AUX" and token.lemma.lower() != "have":
            return "auxiliary"
        if sentence is None:
            return ""
        toks = sentence.tokens
        i = token.i
        if not (0 <= i < len(toks)) or toks[i].idx != token.idx:
            return ""
        # Particle verbs ("gave it up", "turned off"): the verb means something else without its
        # particle, and WordNet files most of them as separate lemmas (give_up, turn_off).
        if any(t.head == i and t.i != i and t.dep == "prt" for t in toks):
            return "particle verb"
        # Part of a hyphenated compound ("well-known", "long-term"): one word to a reader.
        if (i > 0 and toks[i - 1].text == "-" and not toks[i - 1].whitespace) or (
            i + 1 < len(toks) and toks[i + 1].text == "-" and not token.whitespace
        ):
            return "hyphenated compound"
        # Semi-modal constructions: "have to go", "is going to rain", "used to live".
        if (
            i + 2 < len(toks)
            and toks[i + 1].tag == "TO"
            and toks[i + 2].tag == "VB"
            and (
                token.lemma.lower() == "have"
                or (token.lemma.lower() == "go" and token.tag == "VBG")
                or (token.text.lower() == "used")
            )
        ):
            return "semi-modal"
        expr = self.multiword_expression(sentence, i)
        if expr:
            return f"multiword expression '{expr}'"
        expr = self._lexicalised_compound(toks[i], toks, antonyms)
        if expr:
            return f"lexicalised compound '{expr}'"
        return ""
