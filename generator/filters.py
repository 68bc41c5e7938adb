"""Candidate filters: judge a built candidate from WordNet and the spaCy parse, before the checks.

The checks (grammar, acceptability) read only the sentences; a filter also knows *which* word was
replaced, by which antonym, and how the word sits in the parse. Each filter is a small stage with one
job and a batch method, `judge_many(items) -> list[FilterVerdict]`; the pipeline runs the filters a
configuration names, in order, over the survivors of the previous one, and records every verdict on
the record (`checks.<name>`), like a check's. QUALITY.md's error types say what each one is for:

- ``auxiliary``: the copula, auxiliaries and modals (be -> differ, auxiliary have -> lack, will/can)
  are never replaced unless `include_aux` asks for it (the paper's setting);
- ``light_verb``: have/make/do/give/take/get used as light verbs, with an abstract object or a
  clause/small-clause complement ("unmakes a strong case", "lacked a brush with danger");
- ``licensing``: the antonym is a negative-polarity item with no licensor ("You ever hesitate"), the
  antonym is already in the sentence ("whether you lose or lose"), or the word sits in a slot the
  antonym cannot fill (a quantifier-like adjective before a numeral, "same" without "the");
- ``argument_structure``: an antonym verb that WordNet's verb frames give no frame for the
  original's complements (an object, a to-infinitive, a that-clause; or none at all);
- ``fixed_phrase``: time expressions (last/next/this + a time noun: "last Thursday") and WordNet's
  multiword lemmas with a possessive slot ("change one's mind");
- ``coreference``: a gendered noun swapped for one of the other gender while a pronoun of the old
  gender stays ("He was a shy woman");
- ``sense_fit``: the word is unlikely to be used in a sense that carries the antonym, judged from
  WordNet's sense-tagged frequencies and the sentence (a simplified Lesk over word vectors).

Filters in modules of their own are built here by name (`_MODULE_FILTERS`): ``relational_adj``
(filters_adjective), ``clause_link``, ``attributive_participle``, ``verb_complements``
(filters_verb) and ``collocation`` (filters_collocation).

Filters never change a candidate; what they reject goes to rejected.jsonl with `rejected_by` the
filter's name. They are pure look-ups over WordNet and the parse spaCy already made.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from transnli.generator.tagging import TaggedSentence, Token
from transnli.generator.wordnet import base_forms, first_noun_lexname, sense_count, wordnet

BACKEND = "rules"


@dataclass(frozen=True)
class FilterItem:
    """One built candidate as a filter sees it."""

    sentence: TaggedSentence
    token: Token
    antonym: str  # the WordNet lemma name, spaces for underscores
    antonym_pos: str  # its WordNet POS: n, v, a, r
    modified: str  # the realised sentence
    # The ranker's candidates, best first ([{"antonym", "score"}]); the quality scorer reads the
    # score margin from them. Empty when the caller has none.
    ranked: tuple = ()


@dataclass
class FilterVerdict:
    passed: bool
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": BACKEND,
            "passed": self.passed,
            **({"reason": self.reason} if self.reason else {}),
            **self.details,
        }


PASS = FilterVerdict(True)


class CandidateFilter(Protocol):
    name: str

    def judge_many(self, items: Sequence[FilterItem]) -> list[FilterVerdict]: ...


class _PerItem:
    """Base for filters whose verdicts are independent per item."""

    name = ""

    def judge_many(self, items: Sequence[FilterItem]) -> list[FilterVerdict]:
        return [self.judge(item) for item in items]

    def judge(self, item: FilterItem) -> FilterVerdict:  # pragma: no cover - abstract
        raise NotImplementedError


def _children(sentence: TaggedSentence, i: int) -> list[Token]:
    return [t for t in sentence.tokens if t.head == i and t.i != i]


# -- auxiliary -------------------------------------------------------------------------------------
class AuxiliaryFilter(_PerItem):
    """Copula, auxiliaries, modals and existential "there be" are function words: their WordNet
    antonyms belong to other senses (be -> differ comes from be = "equal")."""

    name = "auxiliary"

    def __init__(self, include_aux: bool = False):
        self.include_aux = include_aux

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


class LightVerbFilter(_PerItem):
    """have/make/do/give/take/get with an abstract object or a clause complement are light verbs
    ("make a case", "take a look", "have a brush with danger", "make friends", "have it examined"):
    their meaning is in the complement, and a lexical antonym (unmake, lack, give) breaks it."""

    name = "light_verb"

    def judge(self, item: FilterItem) -> FilterVerdict:
        tok = item.token
        if tok.pos not in ("VERB", "AUX") or tok.lemma.lower() not in LIGHT_VERBS:
            return PASS
        kids = _children(item.sentence, tok.i)
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
                for k in _children(item.sentence, obj.i)
            ):
                return FilterVerdict(False, f"light verb '{tok.text}' with 'a {obj.text}'")
            return PASS
        lex = first_noun_lexname(obj.lemma.lower()) or first_noun_lexname(obj.text.lower())
        if lex is not None and lex not in CONCRETE_LEXNAMES:
            return FilterVerdict(
                False, f"light verb '{tok.text}' with the abstract object '{obj.text}' ({lex})"
            )
        if _children(item.sentence, obj.i) and any(
            k.pos == "VERB" for k in _children(item.sentence, obj.i)
        ):
            return FilterVerdict(
                False, f"light verb '{tok.text}' with a small clause on '{obj.text}'"
            )
        return PASS


# -- word lists (resources/filters/word_lists.toml) ----------------------------------------------
@lru_cache(maxsize=1)
def word_lists() -> dict[str, frozenset[str]]:
    import tomllib
    from transnli.resources import resource_path

    data = tomllib.loads(resource_path("filters", "word_lists.toml").read_text(encoding="utf-8"))
    return {k: frozenset(v) for k, v in data.items()}


# -- licensing and slots ---------------------------------------------------------------------------
class LicensingFilter(_PerItem):
    """What the new word needs from the rest of the sentence: a licensor for a negative-polarity
    item, a sentence that does not already say the antonym, a slot it can fill."""

    name = "licensing"

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


# -- argument structure ----------------------------------------------------------------------------
# WordNet's generic verb frames (frame ids of `Lemma.frame_ids()`), grouped by what they admit.
FRAMES_OBJECT = frozenset({5, 8, 9, 10, 11, 14, 15, 16, 17, 18, 19, 20, 21, 24, 25, 30, 31})
FRAMES_INFINITIVE = frozenset({24, 25, 28, 32, 35})
FRAMES_CLAUSE = frozenset({26, 29, 34})
FRAMES_TWO_OBJECTS = frozenset({14, 15})
FRAMES_NO_OBJECT = frozenset({1, 2, 3, 4, 6, 7, 12, 13, 22, 23, 27})


@lru_cache(maxsize=4096)
def verb_frames(lemma: str) -> frozenset[int]:
    """Every frame id WordNet gives the verb `lemma` in any of its senses."""
    name = lemma.lower().replace(" ", "_")
    out: set[int] = set()
    for synset in wordnet().synsets(name, "v"):
        for lem in synset.lemmas():
            if lem.name().lower() == name:
                out.update(lem.frame_ids())
    return frozenset(out)


def complements(sentence: TaggedSentence, tok: Token) -> dict[str, bool]:
    """What the verb `tok` takes in this sentence, from the parse."""
    kids = _children(sentence, tok.i)
    deps = {k.dep for k in kids}
    to_inf = any(
        k.dep == "xcomp" and any(g.tag == "TO" for g in _children(sentence, k.i)) for k in kids
    )
    return {
        "object": "dobj" in deps or "auxpass" in deps or "nsubjpass" in deps,
        "infinitive": to_inf,
        "clause": "ccomp" in deps,
        "two_objects": "dative" in deps and "dobj" in deps,
    }


class ArgumentStructureFilter(_PerItem):
    """The antonym verb must admit what the original verb takes here. WordNet lists, per verb sense,
    the frames it occurs in ("Somebody ----s something", "Somebody ----s to INFINITIVE", ...);
    a requirement is only enforced where WordNet lists it for the original verb too, so a gap in
    WordNet's frames never counts against the antonym alone."""

    name = "argument_structure"

    def judge(self, item: FilterItem) -> FilterVerdict:
        tok = item.token
        if tok.pos != "VERB" or item.antonym_pos != "v":
            return PASS
        new = verb_frames(item.antonym)
        old = verb_frames(tok.lemma)
        if not new or not old:
            return PASS
        comp = complements(item.sentence, tok)
        needs = []
        if comp["object"]:
            needs.append(("an object", FRAMES_OBJECT))
        if comp["infinitive"]:
            needs.append(("a to-infinitive", FRAMES_INFINITIVE))
        if comp["clause"]:
            needs.append(("a clause", FRAMES_CLAUSE))
        if comp["two_objects"]:
            needs.append(("two objects", FRAMES_TWO_OBJECTS))
        if not any(comp.values()):
            needs.append(("no object", FRAMES_NO_OBJECT))
        for what, frames in needs:
            # A to-infinitive or a clause is the antonym's to admit whatever WordNet says of the
            # original (its frames often omit "need to", "want to"); an object or its absence is
            # enforced only where WordNet lists it for the original too.
            strict = what in ("a to-infinitive", "a clause", "two objects")
            if (strict or old & frames) and not new & frames:
                return FilterVerdict(
                    False,
                    f"'{item.antonym}' takes no frame with {what}, as '{tok.text}' has here",
                    {"frames": sorted(new)},
                )
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


class FixedPhraseFilter(_PerItem):
    """Words inside an expression whose meaning is not the sum of its words: deictic time
    expressions ("last Thursday", "next week"), WordNet's multiword lemmas with a possessive or
    reflexive slot ("change one's mind", "take oneself off"), and WordNet's multiword verbs and
    adverbs ("at least", "take place"; the antonym stage's own test)."""

    name = "fixed_phrase"

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


# -- coreference -----------------------------------------------------------------------------------
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


class CoreferenceFilter(_PerItem):
    """A gendered noun replaced by one of the other gender ("man" -> "woman") while a pronoun of the
    old gender still refers back ("He was a shy woman", "A boy lifts her hand")."""

    name = "coreference"

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


# -- sense fit -------------------------------------------------------------------------------------
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
    from transnli.generator.antonyms import WN_POS

    return (
        item.antonym_pos
        if item.antonym_pos in ("a", "n", "v", "r")
        else WN_POS.get(item.token.pos, "n")
    )


def item_senses(item: FilterItem, pos: str) -> tuple[SenseInfo, ...]:
    """The senses of the replaced word, each marked whether it carries the antonym."""
    from transnli.generator.antonyms import WN_POS

    tok = item.token
    # The lemma when the word is looked up in its own POS; a participle read as an adjective
    # ("occupied") is looked up by its surface form, as the antonym stage does.
    word = tok.lemma.lower() if pos == WN_POS.get(tok.pos) else tok.text.lower()
    return word_senses(word, pos, item.antonym) or word_senses(tok.text.lower(), pos, item.antonym)


def antonym_sense_prior(senses: Sequence[SenseInfo]) -> float:
    """Share of the word's sense-tagged uses (add-half smoothing) on senses that carry the antonym."""
    total = sum(s.count + 0.5 for s in senses)
    return sum(s.count + 0.5 for s in senses if s.carries) / total if total else 0.0


class SenseFitFilter(_PerItem):
    """Is the word used here in a sense that the antonym opposes? Each WordNet sense of the word
    gets a prior from WordNet's sense-tagged frequencies (add-half smoothing) and a context score:
    the cosine between the sentence's other words and the sense's signature (its definition,
    synonyms and hypernyms), over the same word vectors the ranker uses (a simplified Lesk). The
    candidate is kept when the best-scoring sense carries the antonym. The sense's example
    sentences are left out of the signature on purpose: WordNet's examples are also real text that
    users generate from, and a sentence must not be judged against itself."""

    name = "sense_fit"

    def __init__(self, ranker=None, context_weight: float = 4.0):
        self.ranker = ranker
        self.context_weight = context_weight

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


class RareSenseFilter(_PerItem):
    """A noun or verb whose antonym belongs only to its rare senses: none of them is the word's
    first WordNet sense, and together they carry under `min_prior` of its sense-tagged uses
    (add-half smoothing). Such a swap mostly reads the word in the wrong sense ("sentence" ->
    "acquittal" in a text about grammar, "key" -> "atonality", "location" -> "studio"). Unlike
    sense_fit it does not guess the sense from the context, which on the dev set cost more good
    triples than it saved; it only asks how likely the antonym's senses are at all."""

    name = "rare_sense"
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


FILTER_NAMES = (
    "auxiliary",
    "light_verb",
    "fixed_phrase",
    "licensing",
    "argument_structure",
    "coreference",
    "rare_sense",
    "relational_adj",
    "clause_link",
    "attributive_participle",
    "verb_complements",
    "sense_fit",
    "collocation",
    "quality_model",
)
# Filters kept in modules of their own (each imports this one, so they load when asked for):
# name -> (module under transnli.generator, class).
_MODULE_FILTERS = {
    "relational_adj": ("filters_adjective", "RelationalAdjectiveFilter"),
    "clause_link": ("filters_verb", "ClauseLinkFilter"),
    "attributive_participle": ("filters_verb", "AttributiveParticipleFilter"),
    "verb_complements": ("filters_verb", "VerbComplementFilter"),
    "collocation": ("filters_collocation", "CollocationFilter"),
}


def build_filters(
    names: Sequence[str],
    include_aux: bool = False,
    ranker=None,
    quality_threshold: float = 0.3,
    quality_model: str | None = None,
) -> list:
    """The filters `names` lists, in the canonical order (cheap look-ups first; the learned
    quality scorer last, on what the rules leave)."""
    unknown = [n for n in names if n not in FILTER_NAMES]
    if unknown:
        raise ValueError(
            f"unknown filter(s) {', '.join(unknown)}; choose from {', '.join(FILTER_NAMES)}"
        )
    make = {
        "auxiliary": lambda: AuxiliaryFilter(include_aux),
        "light_verb": LightVerbFilter,
        "fixed_phrase": FixedPhraseFilter,
        "licensing": LicensingFilter,
        "argument_structure": ArgumentStructureFilter,
        "coreference": CoreferenceFilter,
        "rare_sense": RareSenseFilter,
        "sense_fit": lambda: SenseFitFilter(ranker),
        "quality_model": lambda: _quality_model_filter(ranker, quality_threshold, quality_model),
    }
    return [make[n]() if n in make else _module_filter(n) for n in FILTER_NAMES if n in names]


def _module_filter(name: str):
    import importlib

    module, cls = _MODULE_FILTERS[name]
    return getattr(importlib.import_module(f"transnli.generator.{module}"), cls)()


def _quality_model_filter(ranker, threshold: float, path: str | None):
    from transnli.generator.checks.quality_model import QualityModelFilter, check_model

    return QualityModelFilter(ranker, check_model(path), threshold)
