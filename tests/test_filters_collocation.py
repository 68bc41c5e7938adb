"""The collocation filter (transnli.generator.filters.collocation): the word-pair arithmetic on
small hand-made counts, and the filter on sentences parsed by spaCy's small model with symspellpy's
real web counts: swaps it must catch and swaps it must pass."""

import math

import pytest
from filter_items import item
from transnli.generator.filters import FilterItem, build_filters
from transnli.generator.filters.collocation import (
    CollocationFilter,
    NgramData,
    _read_counts,
    load_ngrams,
    side_bigrams,
    swap_span,
    words,
)
from transnli.generator.tagging import TaggedSentence, Token


def tiny_data() -> NgramData:
    unigrams = {
        "the": 1000,
        "responsible": 100,
        "irresponsible": 100,
        "rare": 1,
        "for": 500,
        "delay": 50,
        "was": 400,
        "he": 400,
        "a": 800,
        "an": 300,
        "apple": 20,
        "pear": 20,
    }
    bigrams = {"responsible for": 60, "irresponsible for": 10, "the delay": 20, "an apple": 10}
    return NgramData(unigrams, bigrams)


def test_read_counts_scales_and_skips_malformed_lines():
    text = "of the 640\nzoom lens 128\nnot a count\n\nsolo 7\n"
    assert _read_counts(text, 64) == {"of the": 10, "zoom lens": 2, "solo": 0}


def test_swap_span_finds_the_replaced_word_and_keeps_a_changed_article_as_neighbour():
    h, m, p, s = swap_span("He ate an apple today.", "He ate a pear today.")
    assert (h[p], m[p]) == ("apple", "pear")
    assert (h[p - 1], m[p - 1]) == ("an", "a")  # the article is the left neighbour on each side
    assert h[len(h) - s] == "today"
    assert swap_span("same words", "same words") is None
    assert words("It’s the Bank's") == ["it's", "the", "bank's"]


def test_side_bigrams_measure_the_pmi_drop_with_the_floor_as_bound():
    data = tiny_data()
    sides = {
        s.side: s
        for s in side_bigrams(
            data, "he was responsible for the delay", "he was irresponsible for the delay"
        )
    }
    right = sides["right"]
    assert (right.h_count, right.m_count) == (60, 10)
    assert right.drop == pytest.approx(math.log(60 / 10))  # same neighbour, same unigram counts
    # The left pair is absent in H as well: nothing to compare, no drop claimed.
    assert sides["left"].drop == 0.0
    # An absent H' pair counts at the floor (the smallest count the lists hold): a lower bound.
    data.bigrams.pop("irresponsible for")
    right = next(
        s
        for s in side_bigrams(data, "responsible for it", "irresponsible for it")
        if s.side == "right"
    )
    assert right.m_count == 0
    assert right.drop == pytest.approx(math.log(60 / data.bigram_floor))
    # A word the unigram list lacks cannot be judged.
    rare = side_bigrams(data, "responsible for it", "unheardof for it")
    assert rare[0].drop == 0.0


def _item(text: str, words_: list[tuple[str, str, int]], i: int, antonym: str) -> FilterItem:
    """A parsed sentence made by hand: (text, pos, head) per token, separated by single spaces."""
    toks, idx = [], 0
    for k, (w, pos, head) in enumerate(words_):
        toks.append(Token(k, w, idx, " ", pos, "", w, "", head))
        idx += len(w) + 1
    tok = toks[i]
    modified = text[: tok.idx] + antonym + text[tok.idx + len(tok.text) :]
    return FilterItem(TaggedSentence(text, tuple(toks)), tok, antonym, "a", modified)


def test_filter_judges_only_a_governed_preposition():
    data = tiny_data()
    flt = CollocationFilter(min_drop=1.5, data=data)
    text = "he was responsible for the delay"
    parse = [
        ("he", "PRON", 1),
        ("was", "AUX", 1),
        ("responsible", "ADJ", 1),
        ("for", "ADP", 2),
        ("the", "DET", 5),
        ("delay", "NOUN", 3),
    ]
    v = flt.judge(_item(text, parse, 2, "irresponsible"))
    assert not v.passed  # log(60/10) = 1.8 nats
    assert v.details["preposition"] == "for"
    assert "'responsible for' is a collocation" in v.reason
    right = next(b for b in v.details["bigrams"] if b["side"] == "right")
    assert (right["h"], right["h_count"], right["m"], right["m_count"]) == (
        "responsible for",
        60,
        "irresponsible for",
        10,
    )
    # A smaller drop passes.
    assert (
        CollocationFilter(min_drop=2.0, data=data)
        .judge(_item(text, parse, 2, "irresponsible"))
        .passed
    )
    # The same words, but the preposition attached elsewhere: not the word's collocation.
    elsewhere = [*parse[:3], ("for", "ADP", 1), *parse[4:]]
    assert flt.judge(_item(text, elsewhere, 2, "irresponsible")).passed


slow = pytest.mark.slow


@slow
def test_real_counts_are_read_from_symspellpy():
    data = load_ngrams()
    assert data.unigram("the") == 23_135_851_162
    assert data.bigram("of", "the") == 177_045_273_024 // 64  # back on the unigrams' scale
    assert data.bigram_floor == 100_000


@slow
def test_catches_antonyms_that_do_not_take_the_governed_preposition(tagger):
    caught = [
        ("He was responsible for the delay", "responsible", "irresponsible"),
        ("The schools are attached to universities", "attached", "detached"),
        ("Smoking is a danger to your health", "danger", "safety"),
        ("The town is known as the gateway to the north", "known", "unknown"),
    ]
    flt = build_filters(["collocation"])[0]
    verdicts = flt.judge_many([item(tagger, *c) for c in caught])
    assert [v.passed for v in verdicts] == [False] * len(caught), [v.reason for v in verdicts]
    assert all(v.details["preposition"] for v in verdicts)


@slow
def test_passes_antonyms_that_take_the_same_preposition_or_have_none(tagger):
    passed = [
        ("He was sensitive to criticism", "sensitive", "insensitive"),  # rare antonym: not judged
        ("The statue stood on a marble base", "stood", "sat"),  # "sat on" is common too
        (
            "She was able to swim across the lake",
            "able",
            "unable",
        ),  # infinitival to, not a preposition
        ("We worked in harsh conditions", "harsh", "mild"),  # no preposition after the word
        ("It was too late for the morning edition", "late", "early"),
    ]
    flt = CollocationFilter()
    verdicts = flt.judge_many([item(tagger, *c) for c in passed])
    assert [v.passed for v in verdicts] == [True] * len(passed), [v.reason for v in verdicts]


def test_a_missing_symspellpy_is_a_one_line_error_when_the_filter_is_built(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "symspellpy" else real(name, *a),
    )
    with pytest.raises(RuntimeError, match="pip install symspellpy"):
        build_filters(["collocation"])
    CollocationFilter(data=tiny_data())  # counts given: nothing to import
