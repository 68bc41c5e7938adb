"""Realiser (transnli.generator.realise): one token replaced, inflected and capitalised like the
original."""

import pytest
from transnli.generator.realise import Realiser, indefinite_article, inflect, match_case, realise
from transnli.generator.tagging import SpacyTagger

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tagger():
    return SpacyTagger()


def swap(tagger, text, word, antonym, nth=0, antonym_pos=None):
    sent = tagger.tag([text])[0]
    idx = [t.i for t in sent.tokens if t.text == word][nth]
    return sent, realise(sent, idx, antonym, antonym_pos)


@pytest.mark.parametrize(
    "text, word, antonym, expected",
    [
        ("He has a car.", "has", "lack", "He lacks a car."),
        ("She found the keys.", "found", "lose", "She lost the keys."),
        ("The taller boy won.", "taller", "short", "The shorter boy won."),
        ("Tall men are walking.", "men", "woman", "Tall women are walking."),
        ("The cats sleep.", "cats", "dog", "The dogs sleep."),
        ("He is walking home.", "walking", "ride", "He is riding home."),
        (
            "The boys are better than the girls.",
            "better",
            "bad",
            "The boys are worse than the girls.",
        ),
        ("She is the happiest girl.", "happiest", "unhappy", "She is the unhappiest girl."),
        ("He added two numbers.", "added", "take away", "He took away two numbers."),
        ("The seat is occupied.", "occupied", "unoccupied", "The seat is unoccupied."),
        ("He walked slower than her.", "slower", "fast", "He walked faster than her."),
        ("He is the least tired.", "least", "most", "He is the most tired."),
        # spaCy tags "manifest" JJS by its ending; it is a plain adjective, so no "most"
        (
            "For their folly shall be manifest unto all men.",
            "manifest",
            "unobvious",
            "For their folly shall be unobvious unto all men.",
        ),
        ("It is the largest city.", "largest", "small", "It is the smallest city."),
    ],
)
def test_inflection(tagger, text, word, antonym, expected):
    _, r = swap(tagger, text, word, antonym)
    assert r is not None and r.text == expected
    assert r.text[r.char_start : r.char_end] == r.surface


def test_capitalisation(tagger):
    _, r = swap(tagger, "Tall men are walking.", "Tall", "short")
    assert r.text == "Short men are walking." and r.surface == "Short"
    _, r = swap(tagger, "IT IS GOOD NEWS.", "GOOD", "bad")
    assert r.text == "IT IS BAD NEWS."
    assert match_case("take away", "Added") == "Take away"
    assert match_case("Democrat", "republican") == "Democrat"  # the antonym's own capitals stay
    assert match_case("bad", "good") == "bad"


def test_spacing_and_punctuation_are_kept(tagger):
    text = 'Hello,  world!\tThe  old   man ,said: "fine" .'
    sent, r = swap(tagger, text, "old", "young")
    start = next(t.idx for t in sent.tokens if t.text == "old")
    assert r.text == text[:start] + "young" + text[start + 3 :]
    assert (r.char_start, r.char_end) == (start, start + 5)


def test_indefinite_article_agreement(tagger):
    _, r = swap(tagger, "A happy child smiles.", "happy", "unhappy")
    assert r.text == "An unhappy child smiles."
    assert r.article == ("A", "An") and r.article_start == 0
    assert (r.char_start, r.char_end) == (3, 10) and r.text[3:10] == "unhappy"
    _, r = swap(tagger, "He is an unhappy man.", "unhappy", "happy")
    assert r.text == "He is a happy man." and r.article == ("an", "a")
    _, r = swap(tagger, "She has a tall son.", "tall", "short")
    assert r.text == "She has a short son." and r.article is None
    # Only the article right before the word: "a happy old man" -> no change for "old".
    _, r = swap(tagger, "He saw a happy old man.", "old", "young")
    assert r.text == "He saw a happy young man." and r.article is None


@pytest.mark.parametrize(
    "word, article",
    [
        ("unhappy", "an"),
        ("unimportant", "an"),
        ("unusual", "an"),
        ("unique", "a"),
        ("useful", "a"),
        ("hour", "an"),
        ("honest", "an"),
        ("European", "a"),
        ("one", "a"),
        ("old", "an"),
        ("young", "a"),
        ("ugly", "an"),
        ("house", "a"),
    ],
)
def test_indefinite_article_rules(word, article):
    assert indefinite_article(word) == article


def test_fallbacks():
    assert inflect("slowly", "RBR") == "more slowly"
    assert inflect("beautiful", "JJR") == "more beautiful"
    assert inflect("fall asleep", "VBD") == "fell asleep"
    assert inflect("take away", "VBZ") == "takes away"
    assert inflect("male child", "NNS") == "male children"
    assert inflect("unoccupied", "VBN", "a") == "unoccupied"
    assert inflect("lose", "VBN", "v") == "lost"
    assert inflect("short", "JJ") == "short"


def test_unrealisable(tagger):
    sent = tagger.tag(["He's got a car, but they haven't."])[0]
    texts = [t.text for t in sent.tokens]
    assert realise(sent, texts.index("'s"), "lack") is None  # a clitic
    assert realise(sent, texts.index("have"), "lack") is None  # "lackn't"
    assert realise(sent, len(texts), "lack") is None
    assert realise(sent, texts.index("car"), "  ") is None
    assert realise(sent, texts.index("car"), "car") is None  # nothing changes


def test_realiser_batch(tagger):
    sents = tagger.tag(["He has a car.", "She found the keys."])
    items = [(sents[0], 1, "lack"), (sents[1], 1, "lose", "v"), (sents[0], 99, "x")]
    out = Realiser().realise_many(items)
    assert [r.text if r else None for r in out] == ["He lacks a car.", "She lost the keys.", None]
    assert Realiser().realise(sents[0], 1, "lack") == out[0]
