"""Collocation filter: does the antonym take the preposition the original word governs?

Web n-gram counts (Peter Norvig's lists from the Google Web Trillion Word Corpus, as shipped in the
`symspellpy` wheel, MIT: the commonest 83,000 words and 242,342 commonest word pairs) say how often
a word follows another. Many words select their preposition ("responsible for", "attached to",
"known as", "danger to"); their antonyms often select another one or none ("irresponsible for",
"detached to", "unknown as", "safety to"), and such a swap reads as nonsense or in the wrong sense.
The filter compares the association (pointwise mutual information) of the word and the preposition
right after it that spaCy attaches to it, in H and in H'. A pair the lists lack has fewer than
100,000 occurrences (their floor), which bounds its PMI from above; so a drop is only claimed when
the counts can show it, and a rare antonym (whose pairs cannot reach the floor) is never judged.

What was tried and left out, measured on the dev set (benchmarks/collocation_analysis.py): the same
drop for every left and right neighbour (AUC 0.50), for an adjective and its head noun or any
content-word neighbour (AUC 0.50; "harsh conditions" -> "effortless conditions" is below the floor
on both sides, "local community" -> "national community" is good English the lists lack), the PMI
of the H' pair alone (AUC 0.57). Only the governed preposition separates good from bad swaps.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from transnli.generator.filters.base import FilterItem, FilterVerdict, PerItemFilter
from transnli.generator.filters.registry import register_filter
from transnli.generator.tagging import Token

UNIGRAMS = "frequency_dictionary_en_82_765.txt"
BIGRAMS = "frequency_bigramdictionary_en_243_342.txt"
# symspellpy's bigram counts are Norvig's count_2w figures times 64 (its unigrams are count_1w as
# they are): dividing puts both on one scale, so that PMI compares like with like.
BIGRAM_SCALE = 64


class NgramData:
    """Unigram and bigram counts, read once from the symspellpy package's data files."""

    def __init__(self, unigrams: dict[str, int], bigrams: dict[str, int]):
        self.unigrams = unigrams
        self.bigrams = bigrams
        self.total = sum(unigrams.values())
        # Counts below these floors were cut from the lists: an absent entry has fewer.
        self.unigram_floor = min(unigrams.values()) if unigrams else 1
        self.bigram_floor = min(bigrams.values()) if bigrams else 1

    def unigram(self, word: str) -> int:
        return self.unigrams.get(word, 0)

    def bigram(self, a: str, b: str) -> int:
        return self.bigrams.get(f"{a} {b}", 0)


def _read_counts(text: str, scale: int = 1) -> dict[str, int]:
    out: dict[str, int] = {}
    for line in text.splitlines():
        parts = line.split(" ")
        if len(parts) >= 2 and parts[-1].isdigit():
            out[" ".join(parts[:-1])] = int(parts[-1]) // scale
    return out


MISSING = (
    "the collocation filter needs the word-pair counts of the symspellpy package: "
    "pip install symspellpy (or drop the filter: --filters -collocation)"
)


def _require_symspellpy() -> None:
    import importlib.util

    if importlib.util.find_spec("symspellpy") is None:
        raise RuntimeError(MISSING)


@lru_cache(maxsize=1)
def load_ngrams() -> NgramData:
    """The symspellpy lists (slow to read, so kept for the process; docs/collocation.md)."""
    _require_symspellpy()
    pkg = resources.files("symspellpy")
    return NgramData(
        _read_counts(pkg.joinpath(UNIGRAMS).read_text(encoding="utf-8")),
        _read_counts(pkg.joinpath(BIGRAMS).read_text(encoding="utf-8"), BIGRAM_SCALE),
    )


_WORD = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)?|[^\sA-Za-z0-9]")
ARTICLES = frozenset({"a", "an"})


def words(text: str) -> list[str]:
    """Lower-cased words and punctuation marks, the way the n-gram lists spell them."""
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


@dataclass(frozen=True)
class Side:
    """One neighbour's bigram before and after the swap."""

    side: str  # "left" or "right"
    h: tuple[str, str]
    m: tuple[str, str]
    h_count: int
    m_count: int
    # lower bound on PMI(H bigram) - PMI(H' bigram), in nats; 0 when the counts say nothing
    drop: float

    def to_dict(self) -> dict:
        return {
            "side": self.side,
            "h": " ".join(self.h),
            "h_count": self.h_count,
            "m": " ".join(self.m),
            "m_count": self.m_count,
            "drop": round(self.drop, 3),
        }


def swap_span(hypothesis: str, modified: str) -> tuple[list[str], list[str], int, int] | None:
    """The two sentences' words and where they differ: (words of H, words of H', start, end of the
    common suffix counted from the end). A changed indefinite article (a -> an) before the word is
    treated as a neighbour, not as part of the swap."""
    h, m = words(hypothesis), words(modified)
    p = 0
    while p < min(len(h), len(m)) and h[p] == m[p]:
        p += 1
    s = 0
    while s < min(len(h), len(m)) - p and h[-1 - s] == m[-1 - s]:
        s += 1
    if p >= len(h) - s or p >= len(m) - s:
        return None
    if h[p] in ARTICLES and m[p] in ARTICLES and h[p] != m[p]:
        p += 1  # the article differs: it stays the left neighbour on each side
        if p >= len(h) - s or p >= len(m) - s:
            return None
    return h, m, p, s


def pmi(data: NgramData, pair_count: int, a: str, b: str) -> float | None:
    ca, cb = data.unigram(a), data.unigram(b)
    if not (ca and cb and pair_count):
        return None
    return math.log(pair_count * data.total / (ca * cb))


def side_bigrams(data: NgramData, hypothesis: str, modified: str) -> list[Side]:
    """The left and right bigrams of the swapped word in H and H', each with its PMI drop."""
    span = swap_span(hypothesis, modified)
    if span is None:
        return []
    h, m, p, s = span
    out = []
    pairs = []
    if p > 0:
        pairs.append(("left", (h[p - 1], h[p]), (m[p - 1], m[p])))
    if s > 0:
        pairs.append(
            ("right", (h[len(h) - s - 1], h[len(h) - s]), (m[len(m) - s - 1], m[len(m) - s]))
        )
    for name, hb, mb in pairs:
        if not all(w[0].isalnum() for w in hb + mb):
            continue  # punctuation: the lists hold words only
        hc, mc = data.bigram(*hb), data.bigram(*mb)
        out.append(Side(name, hb, mb, hc, mc, _drop(data, hb, mb, hc, mc)))
    return out


def _drop(data: NgramData, hb, mb, hc: int, mc: int) -> float:
    """PMI(H bigram) minus PMI(H' bigram); for an H' bigram the lists lack, its count is below the
    floor and the floor gives the smallest drop the counts prove. 0 when H's bigram is absent too
    (nothing to compare) or a word is missing from the unigram list."""
    before = pmi(data, hc, *hb)
    if before is None:
        return 0.0
    after = pmi(data, mc or data.bigram_floor, *mb)
    if after is None:
        # The antonym is too rare for the unigram list: its pairs cannot be judged.
        return 0.0
    return max(0.0, before - after)


def governed_preposition(item: FilterItem) -> Token | None:
    """The preposition right after the replaced word that the parse attaches to it, if any."""
    tok = item.token
    nxt = tok.i + 1
    if nxt < len(item.sentence.tokens):
        prep = item.sentence.tokens[nxt]
        if prep.pos == "ADP" and prep.head == tok.i:
            return prep
    return None


@register_filter(
    "collocation",
    rank=130,
    summary="the antonym must go with the preposition the word governs as the word does (web "
    "bigram counts)",
)
class CollocationFilter(PerItemFilter):
    """Rejects a swap when the preposition the word governs ("responsible for") goes much less
    with the antonym: the PMI of (word, preposition) minus that of (antonym, preposition) is at
    least `min_drop` nats (1.5: the antonym takes the preposition under a quarter as often, relative
    to chance). The details list the left and right pairs with their counts either way."""

    def __init__(self, min_drop: float = 1.5, data: NgramData | None = None):
        self.min_drop = min_drop
        self._data = data
        if data is None:
            _require_symspellpy()  # fail when the pipeline is built, not halfway through a run

    @property
    def data(self) -> NgramData:
        if self._data is None:
            self._data = load_ngrams()
        return self._data

    def judge(self, item: FilterItem) -> FilterVerdict:
        sides = side_bigrams(self.data, item.sentence.text, item.modified)
        details: dict = {"bigrams": [s.to_dict() for s in sides]}
        prep = governed_preposition(item)
        right = next((s for s in sides if s.side == "right"), None)
        if prep is None or right is None or right.h[1] != prep.text.lower():
            return FilterVerdict(True, "", details)
        details["preposition"] = prep.text.lower()
        if right.drop < self.min_drop:
            return FilterVerdict(True, "", details)
        m = " ".join(right.m)
        return FilterVerdict(
            False,
            f"'{' '.join(right.h)}' is a collocation ({right.h_count:,} on the web) but "
            f"'{m}' is {'much rarer' if right.m_count else 'not attested'} "
            f"(PMI drops by {right.drop:.1f})",
            details,
        )
