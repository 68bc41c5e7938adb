"""Features of one built candidate for the learned quality scorer (quality_model.py beside this
module).

Everything here is computed from what the pipeline already has when the filters run: the spaCy
parse of H, the replaced token, the antonym WordNet gave and the realised H'. The feature set is
fixed by name (`FEATURE_NAMES`); a model file lists the names it was trained on and the scorer
checks them, so a model and this module cannot silently drift apart.

Groups (see docs/quality-model.md for why each is there):
- parse: universal POS, Penn tag, dependency relation of the word and of its head, the head's POS,
  how many dependents the word has, position and sentence length;
- wordnet: the word's number of senses for its POS, the rank of the first sense whose lemmas have
  the antonym, whether that antonym is the word's own (direct) one or a synonym's / a satellite
  head's (indirect), whether the sense is attested, the share of the word's sense-tagged
  frequency that falls on senses carrying the antonym, and a morphological (un-, non-, in-, dis-)
  antonym pair;
- frequency: GloVe's row index is a frequency rank (log rank of the word and of the antonym);
- vectors: GloVe cosines of word and antonym to each other, to the head, to the dependents and to
  the rest of the sentence; the ranker's score and its margin over the next candidate;
- sense_fit: the sense_fit filter's verdict and prior (the filter is off by default, but its
  signal is cheap).
The filters the default preset runs are not features: the scorer runs after them, so on the
candidates it sees they have all passed (a constant carries no information).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from transnli.generator.antonyms import PARTICIPLE_TAGS, WN_POS
from transnli.generator.filters.base import FilterItem
from transnli.generator.filters.senses import SenseFitFilter, antonym_sense_prior, word_senses
from transnli.generator.wordnet import (
    current_index,
    has_synsets,
    indirect_adjective_antonyms,
    sense_antonyms,
    wordnet,
)

POS_VALUES = ("ADJ", "ADV", "NOUN", "VERB")
TAG_VALUES = ("JJ", "JJR", "JJS", "NN", "NNS", "RB", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ")
DEP_VALUES = (
    "ROOT",
    "amod",
    "acomp",
    "advmod",
    "attr",
    "compound",
    "conj",
    "dobj",
    "nsubj",
    "nsubjpass",
    "pobj",
    "xcomp",
    "ccomp",
    "advcl",
    "relcl",
    "pcomp",
    "npadvmod",
    "prep",
)
HEAD_POS_VALUES = ("ADJ", "ADV", "NOUN", "VERB", "AUX", "ADP", "PROPN")
# WordNet lexicographer files of the sense that carries the antonym (the commonest ones; the rest
# count as other): the semantic field separates e.g. a verb of possession from a stative one.
LEXNAMES = (
    "adj.all",
    "adj.pert",
    "adj.ppl",
    "adv.all",
    "noun.act",
    "noun.artifact",
    "noun.attribute",
    "noun.cognition",
    "noun.communication",
    "noun.event",
    "noun.person",
    "noun.quantity",
    "noun.state",
    "noun.time",
    "verb.change",
    "verb.cognition",
    "verb.communication",
    "verb.contact",
    "verb.creation",
    "verb.motion",
    "verb.perception",
    "verb.possession",
    "verb.social",
    "verb.stative",
)
PREFIXES = ("un", "non", "in", "im", "il", "ir", "dis")
# GloVe 6B has 400,000 rows: an out-of-vocabulary word gets the rank past the last one.
OOV_RANK = 400_001


def _onehot(prefix: str, values: Sequence[str]) -> list[str]:
    return [f"{prefix}={v}" for v in values] + [f"{prefix}=other"]


FEATURE_NAMES: tuple[str, ...] = tuple(
    _onehot("pos", POS_VALUES)
    + _onehot("tag", TAG_VALUES)
    + _onehot("dep", DEP_VALUES)
    + _onehot("head_dep", DEP_VALUES)
    + _onehot("head_pos", HEAD_POS_VALUES)
    + _onehot("lexname", LEXNAMES)
    + [
        "n_children",
        "has_dobj",
        "has_prep_child",
        "has_det",
        "position",
        "log_sentence_len",
        "log_n_senses",
        "antonym_sense_rank",
        "antonym_first_sense",
        "antonym_own_lemma",
        "antonym_indirect",
        "antonym_attested",
        "antonym_sense_prior",
        "log_sense_count",
        "n_antonym_candidates",
        "antonym_multiword",
        "antonym_pos_differs",
        "prefix_antonym",
        "prefix_word",
        "log_rank_word",
        "log_rank_antonym",
        "log_rank_ratio",
        "cos_word_antonym",
        "cos_word_head",
        "cos_antonym_head",
        "cos_head_diff",
        "cos_word_deps",
        "cos_antonym_deps",
        "cos_deps_diff",
        "cos_word_context",
        "cos_antonym_context",
        "cos_context_diff",
        "rank_margin",
        "has_vector_word",
        "has_vector_antonym",
        "sense_fit_passed",
        "sense_fit_prior",
    ]
)


def negative_prefix_pair(a: str, b: str) -> bool:
    """b is a with a negative prefix ("able" / "unable", "agree" / "disagree")."""
    return any(b == p + a for p in PREFIXES)


@lru_cache(maxsize=4096)
def antonym_facts(
    text: str, lemma: str, wn_pos: str, participle: bool, antonym: str
) -> dict[str, float]:
    """WordNet facts about the word and the chosen antonym, from the antonym stage's own tables."""
    text, lemma = text.lower(), lemma.lower()
    ant = antonym.lower().replace(" ", "_")
    word = lemma if has_synsets(lemma, wn_pos) else text
    rows = [r for r in sense_antonyms(word, wn_pos)]
    if participle:
        rows += [r for r in sense_antonyms(text, "a")]
    match = sorted((r for r in rows if r[3].lower() == ant), key=lambda r: (r[0], not r[2]))
    indirect = False
    if match:
        rank, attested, own = match[0][0], match[0][1], match[0][2]
    else:
        ind = [r for r in indirect_adjective_antonyms(word) if r[1].lower() == ant]
        indirect = bool(ind)
        rank, attested, own = (ind[0][0], True, False) if ind else (-1, False, False)
    n_senses = len(_senses(word, wn_pos))
    lexname = _lexname(word, wn_pos, rank)
    senses = word_senses(word, wn_pos, antonym)
    return {
        "log_n_senses": math.log1p(n_senses),
        "antonym_sense_rank": math.log1p(rank) if rank >= 0 else math.log1p(n_senses),
        "antonym_first_sense": float(rank == 0),
        "antonym_own_lemma": float(own),
        "antonym_indirect": float(indirect or not own),
        "antonym_attested": float(attested),
        "antonym_sense_prior": antonym_sense_prior(senses),
        "log_sense_count": math.log1p(sum(s.count for s in senses)),
        "prefix_antonym": float(negative_prefix_pair(word, ant) or negative_prefix_pair(text, ant)),
        "prefix_word": float(negative_prefix_pair(ant, word) or negative_prefix_pair(ant, text)),
        f"lexname={lexname if lexname in LEXNAMES else 'other'}": 1.0,
    }


def _lexname(word: str, pos: str, rank: int) -> str | None:
    """The lexicographer file of the word's sense number `rank` (its first sense when unknown)."""
    senses = _senses(word, pos)
    if not senses:
        return None
    sense = senses[rank if 0 <= rank < len(senses) else 0]
    if isinstance(sense, tuple):  # (POS, offset) from the antonym index
        sense = wordnet().synset_from_pos_and_offset(*sense)
    return sense.lexname()


@lru_cache(maxsize=4096)
def _senses(word: str, pos: str) -> tuple:
    index = current_index()
    if index is not None:
        return tuple(index.offsets(word, pos))
    return tuple(wordnet().synsets(word, pos))


def _cos(a, b) -> float:
    if a is None or b is None:
        return 0.0
    return float(np.dot(a, b))


class QualityFeatures:
    """Turns FilterItems into feature rows (a float64 matrix, columns in FEATURE_NAMES order).
    `ranker` is the pipeline's AntonymRanker (its GloVe vectors and phrase-vector cache)."""

    names = FEATURE_NAMES

    def __init__(self, ranker):
        self.ranker = ranker
        self._sense_fit = SenseFitFilter(ranker)
        self._index = {n: i for i, n in enumerate(FEATURE_NAMES)}
        kv = ranker.vectors.kv
        self._rank = kv.key_to_index

    def _log_rank(self, word: str) -> float:
        ranks = [self._rank.get(w.lower(), OOV_RANK) for w in word.split()]
        return math.log1p(max(ranks)) if ranks else math.log1p(OOV_RANK)

    def matrix(
        self, items: Sequence[FilterItem], ranked: Sequence[Sequence[dict]] | None = None
    ) -> np.ndarray:
        """One row per item. `ranked[i]`: the record's ranked candidates ([{"antonym", "score"}]),
        for the ranker's score and margin; None: recomputed here."""
        out = np.zeros((len(items), len(FEATURE_NAMES)), dtype=np.float64)
        for row, item in enumerate(items):
            for name, value in self.features(
                item, ranked[row] if ranked is not None else None
            ).items():
                out[row, self._index[name]] = value
        return out

    def features(self, item: FilterItem, ranked: Sequence[dict] | None = None) -> dict[str, float]:
        tok, sent = item.token, item.sentence
        toks = sent.tokens
        f: dict[str, float] = {}

        def onehot(prefix: str, value: str, values: Sequence[str]) -> None:
            f[f"{prefix}={value if value in values else 'other'}"] = 1.0

        head = toks[tok.head] if 0 <= tok.head < len(toks) and tok.head != tok.i else None
        kids = [t for t in toks if t.head == tok.i and t.i != tok.i]
        onehot("pos", tok.pos, POS_VALUES)
        onehot("tag", tok.tag, TAG_VALUES)
        onehot("dep", tok.dep, DEP_VALUES)
        onehot("head_dep", head.dep if head is not None else "ROOT", DEP_VALUES)
        onehot("head_pos", head.pos if head is not None else "none", HEAD_POS_VALUES)
        f["n_children"] = float(len(kids))
        f["has_dobj"] = float(any(k.dep == "dobj" for k in kids))
        f["has_prep_child"] = float(any(k.dep in ("prep", "prt") for k in kids))
        f["has_det"] = float(any(k.dep == "det" for k in kids))
        f["position"] = tok.i / max(1, len(toks) - 1)
        f["log_sentence_len"] = math.log(len(toks))

        wn_pos = WN_POS.get(tok.pos, "n")
        participle = tok.tag in PARTICIPLE_TAGS and wn_pos == "v"
        f.update(antonym_facts(tok.text, tok.lemma, wn_pos, participle, item.antonym))
        f["antonym_multiword"] = float(" " in item.antonym)
        f["antonym_pos_differs"] = float(item.antonym_pos != wn_pos)

        word = tok.text.lower()
        f["log_rank_word"] = self._log_rank(word)
        f["log_rank_antonym"] = self._log_rank(item.antonym)
        f["log_rank_ratio"] = f["log_rank_antonym"] - f["log_rank_word"]

        vec = self.ranker._phrase_vector
        wv, av = vec(word), vec(item.antonym)
        f["has_vector_word"] = float(wv is not None)
        f["has_vector_antonym"] = float(av is not None)
        hv = vec(head.text) if head is not None and head.is_alpha else None
        deps = self.ranker.context_vector([k.text for k in kids if k.is_alpha])
        ctx = self.ranker.context_vector([t.text for t in toks if t.i != tok.i and t.is_alpha])
        f["cos_word_antonym"] = _cos(wv, av)
        f["cos_word_head"], f["cos_antonym_head"] = _cos(wv, hv), _cos(av, hv)
        f["cos_head_diff"] = f["cos_antonym_head"] - f["cos_word_head"]
        f["cos_word_deps"], f["cos_antonym_deps"] = _cos(wv, deps), _cos(av, deps)
        f["cos_deps_diff"] = f["cos_antonym_deps"] - f["cos_word_deps"]
        f["cos_word_context"], f["cos_antonym_context"] = _cos(wv, ctx), _cos(av, ctx)
        f["cos_context_diff"] = f["cos_antonym_context"] - f["cos_word_context"]
        if ranked is None:
            ranked = [{"antonym": item.antonym, "score": _cos(av, ctx) if av is not None else None}]
        scores = [r["score"] for r in ranked if r.get("score") is not None]
        f["n_antonym_candidates"] = math.log1p(len(ranked))
        f["rank_margin"] = scores[0] - scores[1] if len(scores) > 1 else 0.0

        verdict = self._sense_fit.judge(item)
        f["sense_fit_passed"] = float(verdict.passed)
        f["sense_fit_prior"] = float(verdict.details.get("antonym_sense_prior", 1.0))
        return f
