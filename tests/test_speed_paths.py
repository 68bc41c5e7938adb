"""The fast paths of issue 5 give the same answers as the slow ones they replace: the WordNet
antonym index and the in-memory sense counts (vs nltk), harper's spelling of changed words,
link-grammar's null-count cap, and --workers N (byte-identical to one worker)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from transnli.generator import wordnet
from transnli.generator.checks.grammar import HarperGrammar, changed_words
from transnli.resources import resource_path

# -- WordNet: antonym index and sense counts ------------------------------------------------------
WORDS = [
    "good",
    "happy",
    "huge",
    "large",
    "win",
    "won",
    "found",
    "men",
    "occupied",
    "concerned",
    "quickly",
    "new",
    "wear",
    "morning",
    "have",
    "has",
    "be",
    "dog",
    "hot",
    "high",
    "young",
    "old",
    "fast",
    "interested",
    "unhappy",
    "best",
    "better",
    "left",
    "lay",
    "rose",
    "saw",
    "felt",
    "ran",
    "acaulescent",
    "nonexistentword",
    "give_up",
    "at_least",
    "take_place",
    "dry",
    "wet",
    "open",
]


@pytest.fixture(scope="module")
def index():
    idx = wordnet.current_index()
    if idx is None:
        pytest.skip("no antonym index for this WordNet copy")
    return idx


@pytest.mark.parametrize("word", WORDS)
def test_index_matches_nltk(index, word):
    for pos in ("n", "v", "a", "r", None):
        assert wordnet.sense_antonyms.__wrapped__(word, pos) == wordnet.sense_antonyms_nltk(
            word, pos
        )
    assert wordnet.indirect_adjective_antonyms.__wrapped__(
        word
    ) == wordnet.indirect_adjective_antonyms_nltk(word)
    for pos in "nvar":
        assert wordnet.has_synsets.__wrapped__(word, pos) == bool(
            wordnet.wordnet().synsets(word, pos)
        )


def test_index_round_trip_through_the_cache(index, tmp_path):
    from transnli.generator.wordnet_index import _load_or_build

    built = _load_or_build(wordnet.wordnet(), tmp_path)
    [pickle] = tmp_path.glob("antonym-index-*.pickle")
    loaded = _load_or_build(wordnet.wordnet(), tmp_path)
    assert built.entries == loaded.entries == index.entries
    pickle.write_bytes(b"not a pickle")  # a damaged file is rebuilt, not fatal
    assert _load_or_build(wordnet.wordnet(), tmp_path).entries == index.entries


def test_sense_counts_match_nltk():
    wn = wordnet.wordnet()
    lemmas = [
        lemma
        for w in ("good", "run", "dog", "happy", "fast", "light")
        for s in wn.synsets(w)
        for lemma in s.lemmas()
    ]
    assert any(lemma.count() > 0 for lemma in lemmas)
    assert [wordnet.sense_count(lemma) for lemma in lemmas] == [lemma.count() for lemma in lemmas]


# -- harper: spelling of the changed words --------------------------------------------------------
def test_changed_words():
    assert changed_words("The man is happy.", "The man is unhappy.") == [(11, "unhappy")]
    assert changed_words("a happy child", "an unhappy child") == [(0, "an"), (3, "unhappy")]
    assert changed_words("He found it.", "He lost it.") == [(3, "lost")]
    assert changed_words("same", "same") == []
    assert changed_words("She can't win.", "She can't lose.") == [(10, "lose")]
    assert changed_words("It is good.", "It is bad-tempered.") == [(6, "bad"), (10, "tempered")]


@pytest.fixture(scope="module")
def harper_check():
    return HarperGrammar()


def test_unknown_new_word_fails_with_its_reason(harper_check):
    # "acaulescent" is a WordNet lemma (so it passes by default); harper alone flags it.
    strict = HarperGrammar(wordnet_words=False)
    [res] = strict.check_many(["the plant is caulescent"], ["the plant is acaulescent"])
    assert not res.passed
    assert res.details["added"] and res.details["added"][0].startswith("SpellCheck")
    assert "[acaulescent]" in res.reason
    assert harper_check.check_many(["the plant is caulescent"], ["the plant is acaulescent"])[
        0
    ].passed


def test_words_harper_does_not_take_for_english_are_what_spellcheck_flags(harper_check):
    import harper

    speller = harper.Linter(harper.Dialect.AMERICAN)
    speller.set_lint_config({rule: rule == "SpellCheck" for rule in speller.get_lint_config()})
    strict = HarperGrammar(wordnet_words=False)  # "acaulescent" is a WordNet lemma
    unknown = ["blorfy", "acaulescent", "unmaked", "unfinded", "xqzt", "unsleeped", "misbegan"]
    for word in unknown:
        # The shortcut's premise, checked against harper itself: rejected => flagged.
        assert not speller.is_likely_english(word) and speller.lint(word, language="plaintext"), (
            word
        )
        [res] = strict.check_many([f"the plant is {word[:2]}"], [f"the plant is {word}"])
        assert not res.passed and f"`{word}` is not in harper's dictionary" in res.reason, word
    # Words the detector takes for English still go through SpellCheck, whose verdict counts:
    # "Defence" is British, flagged under the American dialect with harper's own message.
    # ("defence" is a WordNet lemma, so only the strict check shows harper's verdict.)
    [res] = strict.check_many(["The defense is strong."], ["The Defence is strong."])
    assert not res.passed and "Did you mean" in res.reason
    assert harper_check.check_many(["He is sad."], ["He is happy."])[0].passed


def test_misspellings_elsewhere_do_not_count(harper_check):
    # "blorfy" is unknown in both sentences; only the changed word's spelling is checked.
    [res] = harper_check.check_many(["the blorfy man is happy."], ["the blorfy man is unhappy."])
    assert res.passed and res.details == {"errors_candidate": 0, "added": []}


def test_known_new_words_pass_and_the_article_is_checked_too(harper_check):
    [res] = harper_check.check_many(["She is a happy child."], ["She is an unhappy child."])
    assert res.passed


def test_sentence_spelling_mode_keeps_the_old_rule():
    whole = HarperGrammar(spelling="sentence", threads=1)
    assert "spelling: whole sentences" in whole.version()
    assert [e.rule for e in whole.errors("the blorfy man is happy.")] == ["SpellCheck"]
    [res] = whole.check_many(["the leaf is green."], ["the leaf is blorfy."])
    assert not res.passed
    with pytest.raises(ValueError, match="spelling"):
        HarperGrammar(spelling="never")


def test_threads_give_the_same_results():
    originals = [
        "He goes home.",
        "The man is happy.",
        "I has a apple.",
        "the plant is caulescent",
    ] * 3
    candidates = [
        "He go home.",
        "The man is unhappy.",
        "I lacks a apple.",
        "the plant is acaulescent",
    ] * 3
    one = HarperGrammar(threads=1).check_many(originals, candidates)
    two = HarperGrammar(threads=2)
    assert two.threads == 2
    assert [r.to_dict() for r in two.check_many(originals, candidates)] == [
        r.to_dict() for r in one
    ]
    two.set_threads(1)
    assert two.threads == 1 and two.check_many(originals[:2], candidates[:2])[1].passed
    two.close()


# -- link-grammar: the null-count cap --------------------------------------------------------------
def test_link_grammar_null_cap(link_grammar_available):
    from transnli.generator.checks.acceptability import LinkGrammarAcceptability

    speech = "uh-huh yeah i i think that's that's right you know"
    worse = "uh-huh yeah i i think that's that's right you know the of the of"
    unlimited = LinkGrammarAcceptability(max_null_count=None)
    m = unlimited.null_count(speech)
    assert m is not None and m > 2
    capped = LinkGrammarAcceptability(max_null_count=2)
    assert capped.null_count(speech) is None  # needs more skipped words than the cap
    assert capped.null_count("He goes home.") == 0
    # An original beyond the cap cannot be judged against: its candidates pass ...
    assert capped.check_many([speech], [worse])[0].passed
    # ... while a candidate beyond the cap fails against an original within it.
    res = capped.check_many(["He goes home."], [speech])[0]
    assert not res.passed and "unlinked" in res.reason
    assert res.details == {"null_count": None, "null_count_above": 0, "null_count_original": 0}
    assert "at most 2 unlinked" in capped.version()
    with pytest.raises(ValueError):
        LinkGrammarAcceptability(max_null_count=-1)


# -- --workers ------------------------------------------------------------------------------------
@pytest.mark.slow  # starts two worker processes that each load every resource (about 20 s)
def test_workers_write_byte_identical_files(tmp_path):
    from transnli.cli import main

    sample = resource_path("samples", "snli_sample.jsonl")
    small = tmp_path / "small.jsonl"
    small.write_text(
        "".join(sample.read_text(encoding="utf-8").splitlines(keepends=True)[:40]), encoding="utf-8"
    )
    outs = []
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        result = CliRunner().invoke(
            main,
            [
                "generate",
                str(small),
                "--out",
                str(out),
                "-q",
                "--batch-size",
                "6",
                "--workers",
                str(workers),
            ],
        )
        assert result.exit_code == 0, result.output
        outs.append(out)
    for name in ("triples.jsonl", "rejected.jsonl", "stats.json", "config.json"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    assert (outs[0] / "triples.jsonl").read_text().count("\n") > 5


def test_workers_refused_for_llm_pipelines(tmp_path):
    from transnli.cli import main

    sample = str(resource_path("samples", "snli_sample.jsonl"))
    result = CliRunner().invoke(
        main,
        [
            "generate",
            sample,
            "--out",
            str(tmp_path / "o"),
            "-q",
            "--workers",
            "2",
            "--pipeline",
            "llm",
            "--llm-model",
            "m",
        ],
    )
    assert result.exit_code != 0 and "--workers" in result.output


# -- spaCy without torch ---------------------------------------------------------------------------
_TAG_SCRIPT = """
import json, sys
if sys.argv[1] == "torch-first":
    import torch  # noqa: F401
from transnli.generator.tagging import SpacyTagger
tagged = SpacyTagger().tag(["The old man was happy to see the young children.",
                            "She quickly opened the heavy door and walked inside."])
print(json.dumps({"torch": sys.modules.get("torch") is not None,
                  "tags": [[(t.pos, t.tag, t.dep, t.head, t.lemma) for t in s.tokens]
                           for s in tagged]}))
import torch  # still importable afterwards
"""


def test_the_small_spacy_pipeline_loads_without_torch_and_tags_the_same():
    import json
    import subprocess
    import sys

    def run(mode):
        done = subprocess.run(
            [sys.executable, "-c", _TAG_SCRIPT, mode], capture_output=True, text=True, check=True
        )
        return json.loads(done.stdout)

    hidden, loaded = run("plain"), run("torch-first")
    assert hidden["torch"] is False and loaded["torch"] is True
    assert hidden["tags"] == loaded["tags"]


# -- memory: glibc's thresholds --------------------------------------------------------------------
_MALLOC_PROBE = """
import ctypes, sys
from transnli.generator.memory import tune_allocator

class MallInfo2(ctypes.Structure):
    _fields_ = [(k, ctypes.c_size_t) for k in (
        "arena ordblks smblks hblks hblkhd usmblks fsmblks uordblks fordblks keepcost".split())]

libc = ctypes.CDLL("libc.so.6")
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
tuned = tune_allocator()
before = libc.mallinfo2().hblkhd
block = libc.malloc(20 << 20)  # 20 MB: mapped on its own by default, from an arena once tuned
mapped = libc.mallinfo2().hblkhd - before >= 20 << 20
libc.free(block)
print(tuned, mapped)
"""


def test_allocator_thresholds_are_fixed_unless_the_user_set_them():
    import ctypes.util
    import os
    import subprocess
    import sys

    if ctypes.util.find_library("c") is None or not hasattr(
        ctypes.CDLL(ctypes.util.find_library("c")), "mallinfo2"
    ):
        pytest.skip("not glibc 2.33+")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}

    def probe(extra_env):
        done = subprocess.run(
            [sys.executable, "-c", _MALLOC_PROBE],
            env={**env, **extra_env},
            capture_output=True,
            text=True,
            check=True,
        )
        return done.stdout.split()

    assert probe({}) == ["True", "False"]
    # The user's own setting wins: nothing is changed, and glibc's default maps the block.
    assert probe({"MALLOC_TRIM_THRESHOLD_": "131072"}) == ["False", "True"]
