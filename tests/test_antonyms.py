"""WordNet antonym source (transnli.generator.antonyms), on the real WordNet 3.0 and spaCy's small
model."""

import pytest
from transnli.generator import wordnet
from transnli.generator.antonyms import AntonymLookup, WordNetAntonyms
from transnli.generator.tagging import SpacyTagger, Token

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tagger():
    return SpacyTagger()


@pytest.fixture(scope="module")
def broad():
    return WordNetAntonyms("broad")


@pytest.fixture(scope="module")
def direct():
    return WordNetAntonyms("direct")


def tok(text, pos, tag, lemma=None, dep="", i=0):
    return Token(
        i=i, text=text, idx=0, whitespace="", pos=pos, tag=tag, lemma=lemma or text, dep=dep
    )


def in_sentence(tagger, text, word):
    sent = tagger.tag([text])[0]
    matches = [t for t in sent.tokens if t.text == word]
    assert matches, f"{word!r} not a token of {text!r}"
    return sent, matches[0]


# -- known words, both modes -----------------------------------------------------------------------
def test_good_broad_has_bad_and_evil(broad, direct):
    b = broad.candidates(tok("good", "ADJ", "JJ"))
    assert b.status == "ok" and {"bad", "evil"} <= set(b.antonyms)
    assert set(b.pos) == {"a"}
    d = direct.candidates(tok("good", "ADJ", "JJ"))
    assert d.antonyms[0] == "bad" and set(d.antonyms) <= set(b.antonyms)


@pytest.mark.parametrize("mode", ["broad", "direct"])
def test_happy_unhappy(mode):
    assert WordNetAntonyms(mode).candidates(tok("happy", "ADJ", "JJ")).antonyms == ["unhappy"]


def test_verb_win_lose(broad, direct):
    won = tok("won", "VERB", "VBD", "win")
    b = broad.candidates(won)
    assert b.antonyms[0] == "lose"
    # Broad keeps the synonyms' antonyms (succeed -> fail, gain -> fall back: underscores to
    # spaces).
    assert {"fail", "fall back"} <= set(b.antonyms)
    assert direct.candidates(won).antonyms == ["lose"]


def test_noun_man_woman_and_plural(broad, direct):
    b = broad.candidates(tok("man", "NOUN", "NN"))
    assert b.antonyms[0] == "woman" and "civilian" in b.antonyms  # via serviceman
    assert direct.candidates(tok("man", "NOUN", "NN")).antonyms == ["woman"]
    assert direct.candidates(tok("men", "NOUN", "NNS", "man")).antonyms == ["woman"]


def test_adverb_quickly_slowly(broad, direct):
    for source in (broad, direct):
        assert source.candidates(tok("quickly", "ADV", "RB")).antonyms == ["slowly"]


@pytest.mark.parametrize("mode", ["broad", "direct"])
def test_no_antonym(mode):
    lookup = WordNetAntonyms(mode).candidates(tok("table", "NOUN", "NN"))
    assert lookup == AntonymLookup([], "no_antonym", [], "")


@pytest.mark.parametrize("mode", ["broad", "direct"])
def test_no_pos_match(mode):
    source = WordNetAntonyms(mode)
    # "fast" is a WordNet verb (to abstain from food) without antonyms; the adjective has "slow".
    assert source.candidates(tok("fast", "VERB", "VB")).status == "no_pos_match"
    assert source.candidates(tok("fast", "ADJ", "JJ")).antonyms == ["slow"]
    # The noun "meeting" has none; the verb "meet" has some.
    assert source.candidates(tok("meeting", "NOUN", "NN")).status == "no_pos_match"


def test_pos_filter(broad):
    # "good" has antonyms in three POS; each lookup keeps only its own.
    noun = broad.candidates(tok("good", "NOUN", "NN"))
    adj = broad.candidates(tok("good", "ADJ", "JJ"))
    assert set(noun.pos) == {"n"} and set(adj.pos) == {"a"}
    assert "evilness" in noun.antonyms and "evilness" not in adj.antonyms
    assert broad.candidates(tok("good", "ADV", "RB")).pos == ["r"] * len(
        broad.candidates(tok("good", "ADV", "RB")).antonyms
    )


def test_broad_uses_surface_form_and_lemma(broad, direct):
    found = tok("found", "VERB", "VBD", "find")
    # Surface "found" (= establish) -> abolish; lemma "find" -> lose.
    assert broad.candidates(found).antonyms == ["abolish", "lose"]
    # Direct trusts spaCy's in-context lemma.
    assert direct.candidates(found).antonyms == ["lose"]


def test_participles_are_also_looked_up_as_adjectives(tagger, broad, direct):
    for word, expected in (("occupied", "unoccupied"), ("concerned", "unconcerned")):
        participle = tok(word, "VERB", "VBN", word[:-1] if word.endswith("ed") else word)
        for source in (broad, direct):
            lookup = source.candidates(participle)
            assert lookup.status == "ok" and lookup.antonyms == [expected] and lookup.pos == ["a"]
    # The past tense is no participle: the adjective's antonym has another POS.
    assert broad.candidates(tok("occupied", "VERB", "VBD", "occupy")).status == "no_pos_match"
    # Whatever spaCy makes of it in context (VBN as VERB or ADJ), "unoccupied" comes back.
    sent, occupied = in_sentence(tagger, "The seat is occupied.", "occupied")
    assert occupied.tag == "VBN"
    assert broad.candidates(occupied, sent).antonyms == ["unoccupied"]
    assert direct.candidates(occupied, sent).antonyms == ["unoccupied"]


def test_determinism():
    words = [
        tok("good", "ADJ", "JJ"),
        tok("lost", "VERB", "VBD", "lose"),
        tok("right", "ADJ", "JJ"),
        tok("girl", "NOUN", "NN"),
        tok("inside", "ADV", "RB"),
    ]
    for mode in ("broad", "direct"):
        first = [WordNetAntonyms(mode).candidates(w) for w in words]
        wordnet.sense_antonyms.cache_clear()
        second = WordNetAntonyms(mode).candidates_many(words)
        assert first == second
        assert all(len(x.antonyms) == len(set(x.antonyms)) for x in first)


def test_results_are_copies(broad):
    good = tok("good", "ADJ", "JJ")
    broad.candidates(good).antonyms.append("zzz")
    assert "zzz" not in broad.candidates(good).antonyms


def test_misc_api(broad):
    assert broad.version() == "wordnet-3.0"
    assert broad.candidates(tok("the", "DET", "DT")).status == "no_antonym"
    with pytest.raises(ValueError, match="unknown antonym mode"):
        WordNetAntonyms("wide")
    assert broad.candidates(tok("added", "VERB", "VBD", "add")).antonyms == [
        "take away",
        "subtract",
    ]


# -- direct mode: sense-aware choice ---------------------------------------------------------------
def test_direct_prefers_the_words_own_antonyms(broad, direct):
    has = tok("has", "VERB", "VBZ", "have")
    assert broad.candidates(has).antonyms == ["lack", "abstain", "refuse"]
    assert direct.candidates(has).antonyms == ["lack"]
    girl = tok("girl", "NOUN", "NN")
    assert "male child" in broad.candidates(girl).antonyms
    assert direct.candidates(girl).antonyms == ["boy"]


def test_direct_leaves_out_never_tagged_senses(broad, direct):
    new = tok("new", "ADJ", "JJ")
    assert broad.candidates(new).antonyms == ["old", "worn"]  # worn: new.a.06, never tagged
    assert direct.candidates(new).antonyms == ["old"]
    wearing = tok("wearing", "VERB", "VBG", "wear")
    assert broad.candidates(wearing).antonyms == ["refresh"]  # via tire.v.02
    d = direct.candidates(wearing)
    assert d.status == "skipped" and d.antonyms == [] and "rare-sense" in d.reason


def test_direct_indirect_antonyms_of_satellite_adjectives(broad, direct):
    huge = tok("huge", "ADJ", "JJ")
    assert broad.candidates(huge).status == "no_antonym"
    d = direct.candidates(huge)
    assert d.status == "ok" and d.antonyms[0] == "small" and set(d.pos) == {"a"}


# -- direct mode: words inside expressions ---------------------------------------------------------
@pytest.mark.parametrize(
    "text, word, reason",
    [
        ("The children won the game at least twice.", "least", "at least"),
        ("A dog gave up chasing the ball.", "gave", "particle verb"),
        ("They leave before the meeting takes place.", "takes", "take place"),
        ("They have to leave now.", "have", "semi-modal"),
        ("The well-known singer sang.", "well", "hyphenated"),
        ("A woman is walking her dog.", "is", "auxiliary"),
        ("Two men sat outside the high school.", "high", "lexicalised compound 'high school'"),
        ("The dog fell asleep.", "fell", "fall asleep"),
    ],
)
def test_direct_skips_words_inside_expressions(tagger, broad, direct, text, word, reason):
    sent, token = in_sentence(tagger, text, word)
    d = direct.candidates(token, sent)
    assert d.status == "skipped" and reason in d.reason and d.antonyms
    assert broad.candidates(token, sent).status == "ok"  # the paper's set does not skip


def test_direct_keeps_free_words(tagger, direct):
    # "young woman" is a WordNet noun, but so is "old woman": a compositional pair stays.
    sent = tagger.tag(["A young woman sells cheap fresh fruit."])[0]
    lookups = direct.candidates_for_sentence(sent)
    got = {
        t.text: lk.antonyms for t, lk in zip(sent.tokens, lookups, strict=True) if lk.status == "ok"
    }
    assert got["young"] == ["old"] and got["woman"] == ["man"] and got["sells"] == ["buy"]
    assert got["cheap"] == ["expensive"] and got["fresh"][0] == "stale"
