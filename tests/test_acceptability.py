"""Acceptability checks: CoLA classifier (tiny BERT built here), link-grammar (real), none."""

from __future__ import annotations

import math

import pytest
from transnli.generator.checks.acceptability import (
    ColaAcceptability,
    LinkGrammarAcceptability,
    NoAcceptability,
)
from transnli.generator.checks.base import BackendUnavailable
from transnli.generator.checks.registry import build_check, check_backends

# ------------------------------------------------------------------------------------- cola


def test_cola_acceptable_model(tiny_cola_model_dir):
    check = ColaAcceptability(model=str(tiny_cola_model_dir), device="cpu")
    assert check.backend == "cola" and check.name == "acceptability"
    assert check.acceptable_index == 1  # LABEL_0/LABEL_1: the acceptable_label default
    results = check.check_many(["The man is happy."] * 2, ["The man is sad.", "Sad man the is."])
    assert all(r.passed for r in results)
    assert results[0].details == {"score": pytest.approx(1.0, abs=1e-6), "threshold": 0.5}
    assert results[0].to_dict()["backend"] == "cola"


def test_cola_unacceptable_model_and_threshold(tiny_cola_model_factory):
    folder = tiny_cola_model_factory("unacceptable", bias=(10.0, -10.0))
    [res] = ColaAcceptability(model=str(folder)).check_many(["A."], ["The cat sat on the mat."])
    assert not res.passed and res.details["score"] < 1e-6
    assert "P(acceptable)" in res.reason

    # P(acceptable) = softmax([0, ln 3])[1] = 0.75 for every input.
    folder = tiny_cola_model_factory("three_quarters", bias=(0.0, math.log(3.0)))
    lenient = build_check("acceptability", "cola", cola_model=str(folder), cola_threshold=0.7)
    strict = build_check("acceptability", "cola", cola_model=str(folder), cola_threshold=0.8)
    assert lenient.check_many(["x"], ["The dog is big."])[0].passed
    res = strict.check_many(["x"], ["The dog is big."])[0]
    assert not res.passed and res.details == {
        "score": pytest.approx(0.75, abs=1e-6),
        "threshold": 0.8,
    }


def test_cola_label_names_decide_the_acceptable_class(tiny_cola_model_factory):
    # Here class 0 is "acceptable" and the bias favours it: the score must be P(class 0).
    folder = tiny_cola_model_factory(
        "named", bias=(10.0, -10.0), id2label={0: "acceptable", 1: "unacceptable"}
    )
    check = ColaAcceptability(model=str(folder))
    assert check.acceptable_index == 0
    assert check.check_many(["x"], ["The cat is happy."])[0].passed
    # An explicit acceptable_label wins over the names.
    assert ColaAcceptability(model=str(folder), acceptable_label=1).acceptable_index == 1
    with pytest.raises(ValueError):
        ColaAcceptability(model=str(folder), acceptable_label=5)


def test_cola_batches_sorted_but_results_in_input_order(tiny_cola_model_factory):
    folder = tiny_cola_model_factory("random_head", bias=(0.0, 0.0), zero_classifier=False)
    check = ColaAcceptability(model=str(folder), batch_size=2)
    sentences = [
        "The old man went home.",
        "Cat.",
        "She is tall.",
        "The dog sat on the mat.",
        "A cat.",
        "They are young and fast and happy.",
        "Cat.",
    ]
    batched = check.scores(sentences)
    one_by_one = [check.scores([s])[0] for s in sentences]
    assert batched == pytest.approx(one_by_one, abs=1e-5)
    assert len(set(round(s, 4) for s in batched)) > 2  # the head really depends on the input
    results = check.check_many(sentences, sentences)
    assert [r.details["score"] for r in results] == pytest.approx(batched, abs=1e-5)
    assert check.scores([]) == [] and check.check_many([], []) == []


def test_cola_version_is_stable_and_names_the_model(tiny_cola_model_dir):
    a = ColaAcceptability(model=str(tiny_cola_model_dir)).version()
    b = ColaAcceptability(model=str(tiny_cola_model_dir)).version()
    assert a == b and a.startswith(str(tiny_cola_model_dir) + "@") and len(a.split("@")[1]) == 12


def test_cola_hub_id_that_cannot_be_loaded(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    try:
        import huggingface_hub.constants as hf_constants

        monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", True, raising=False)
    except ImportError:  # pragma: no cover
        pass
    with pytest.raises(BackendUnavailable) as info:
        build_check("acceptability", "cola", cola_model="transnli-tests/no-such-cola-model")
    msg = str(info.value)
    assert "could not be loaded" in msg and "huggingface-cli download" in msg
    assert "--cola-model PATH" in msg and "--acceptability link-grammar" in msg


def test_cola_hub_id_fails_fast_when_the_hub_is_unreachable(monkeypatch):
    from transnli.generator.checks import acceptability

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(acceptability, "_hub_offline", lambda: False)
    probed = []
    monkeypatch.setattr(
        acceptability,
        "_hub_reachable",
        lambda: probed.append(1) or (False, "https://huggingface.co: no route"),
    )
    with pytest.raises(BackendUnavailable, match="cannot be reached"):
        ColaAcceptability(model="transnli-tests/no-such-cola-model")
    assert probed == [1]


def test_cola_missing_folder_and_bad_device(tmp_path, tiny_cola_model_dir):
    with pytest.raises(BackendUnavailable, match="does not exist"):
        ColaAcceptability(model=str(tmp_path / "nowhere" / "model"))
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(BackendUnavailable, match="CUDA"):
            ColaAcceptability(model=str(tiny_cola_model_dir), device="cuda")
    with pytest.raises(ValueError):
        ColaAcceptability(model=str(tiny_cola_model_dir), threshold=1.5)


# ----------------------------------------------------------------------------- link-grammar


@pytest.fixture(scope="module")
def link_grammar(link_grammar_available):
    return LinkGrammarAcceptability()


def test_link_grammar_absolute(link_grammar):
    absolute = LinkGrammarAcceptability(relative=False)
    garbled, good = "Home the goes he quickly of.", "He went home quickly."
    assert absolute.null_count(garbled) > 0 and absolute.null_count(good) == 0
    bad, ok = absolute.check_many(["He goes home quickly."] * 2, [garbled, good])
    # Absolute mode needs only the parse without skipped words.
    assert not bad.passed and bad.details == {"null_count": None, "null_count_above": 0}
    assert "unlinked" in bad.reason
    assert ok.passed and ok.details == {"null_count": 0}
    assert "absolute" in absolute.version()


def test_link_grammar_relative(link_grammar):
    assert link_grammar.relative and "relative" in link_grammar.version()
    speech = "uh-huh yeah i i think that's that's right you know"
    m = link_grammar.null_count(speech)
    assert m > 0
    results = link_grammar.check_many(
        [speech, speech, "He goes home.", "He goes home."],
        [
            "uh-huh yeah i i think that's that's wrong you know",  # as broken as before: passes
            "uh-huh yeah i i think that's that's right you know the of the of",  # worse: fails
            "He comes home.",
            "He go home.",
        ],  # the swap broke it: fails
    )
    assert [r.passed for r in results] == [True, False, True, False]
    assert (
        results[0].details["null_count_original"] == m and 0 < results[0].details["null_count"] <= m
    )
    # Searched only as far as the original's count: how much worse does not change the verdict.
    assert results[1].details == {
        "null_count": None,
        "null_count_above": m,
        "null_count_original": m,
    }
    assert f"more than {m} word(s) left unlinked" in results[1].reason
    assert results[3].details == {
        "null_count": None,
        "null_count_above": 0,
        "null_count_original": 0,
    }
    assert "the original parses with none" in results[3].reason
    # A candidate that parses fully passes without its original being parsed.
    assert results[2].details == {"null_count": 0}
    assert (
        link_grammar.null_count("He goes home.") == 0
        and ("He goes home.", 8) in link_grammar._cache
    )


def test_link_grammar_parses_only_as_far_as_the_verdict_needs(link_grammar_available):
    check = LinkGrammarAcceptability(threads=1)
    parsed = []
    real = check._parser.parse
    check._parser.parse = lambda *search: parsed.append(search) or real(*search)
    speech = "uh-huh yeah i i think that's that's right you know"
    m = check.null_count(speech)
    parsed.clear()
    results = check.check_many(
        ["She is happy.", "He goes home.", "He goes home.", speech, speech],
        [
            "She is unhappy.",
            "He go home.",
            "He comes home.",
            "uh-huh yeah i i think that's that's wrong you know",
            "uh-huh yeah the of the of i i think",
        ],
    )
    assert [r.passed for r in results] == [True, False, True, True, False]
    # Every candidate without skipped words first; the originals only of those that do not parse
    # so (up to the cap; the speech one is cached); then those candidates up to their
    # original's count (none when the original parses fully).
    wrong, worse = (
        "uh-huh yeah i i think that's that's wrong you know",
        "uh-huh yeah the of the of i i think",
    )
    assert parsed == [
        ("She is unhappy.", 0),
        ("He go home.", 0),
        ("He comes home.", 0),
        (wrong, 0),
        (worse, 0),
        ("He goes home.", 8),
        (wrong, m),
        (worse, m),
    ]
    parsed.clear()
    assert [r.passed for r in check.check_many([speech], [worse])] == [False]
    assert parsed == []  # cached per (sentence, highest)


def test_link_grammar_original_without_parse_passes_every_candidate(link_grammar_available):
    # An original beyond the cap says nothing about the swap: its candidates pass unparsed
    # beyond the first step.
    check = LinkGrammarAcceptability(threads=1, max_null_count=1)
    speech = "uh-huh yeah i i think that's that's right you know"
    assert check.null_count(speech) is None
    result = check.check_many([speech], ["uh-huh yeah i i think that's that's wrong you know"])[0]
    assert result.passed
    assert result.details == {
        "null_count": None,
        "null_count_above": 0,
        "null_count_original": None,
    }


def test_null_count_range_search(link_grammar_available):
    from transnli.generator.checks.linkgrammar_c import NullCount, NullCountParser

    parser = NullCountParser("en")
    speech = "uh-huh yeah i i think that's that's right you know"
    m = parser.null_count(speech)
    assert parser.parse(speech, m) == NullCount(m) and parser.parse(speech) == NullCount(m)
    assert parser.parse(speech, m - 1) == NullCount(None)  # not within the range, not timed out
    assert parser.parse("He goes home.", 0) == NullCount(0)
    with pytest.raises(ValueError, match=">= 0"):
        parser.parse(speech, -1)
    parser.close()


def test_link_grammar_threads_give_the_same_results(link_grammar_available):
    sentences = [
        "He goes home.",
        "He go home.",
        "Home the goes he quickly of.",
        "",
        "uh-huh yeah i i think that's that's right you know",
        "The cat sat on the mat.",
    ] * 4
    one = LinkGrammarAcceptability(threads=1, relative=False)
    two = LinkGrammarAcceptability(threads=2, relative=False)
    assert two.threads == 2
    serial = [one.null_count(s) for s in sentences]
    assert [r.details for r in two.check_many(sentences, sentences)] == [
        {"null_count": 0} if n == 0 else {"null_count": None, "null_count_above": 0} for n in serial
    ]
    assert serial[:4] == [0, 1, serial[2], None] and serial[2] > 0
    relative_one = LinkGrammarAcceptability(threads=1)
    relative_two = LinkGrammarAcceptability(threads=2)
    originals = ["He goes home.", "uh-huh yeah i i think that's that's right you know"] * 12
    assert [r.details for r in relative_two.check_many(originals, sentences)] == [
        r.details for r in relative_one.check_many(originals, sentences)
    ]
    two.close()


def test_link_grammar_parses_on_threads_that_end_with_each_batch(link_grammar_available):
    # link-grammar keeps a thread's largest count table until the thread ends: each batch is
    # parsed on threads of its own (with threads=1 too). Parse options are made beforehand, one
    # per thread, and lent to one parse at a time.
    import threading

    for threads in (1, 2):
        check = LinkGrammarAcceptability(threads=threads, relative=False)
        seen = set()
        real = check._parser.parse
        check._parser.parse = lambda *search, real=real, seen=seen: (
            seen.add(threading.current_thread()) or real(*search)
        )
        for batch, passed in (
            (["He goes home.", "He go home.", "The cat sat."], [True, False, True]),
            (["She is unhappy.", "It is late."], [True, True]),
        ):
            before = threading.active_count()
            assert [r.passed for r in check.check_many(batch, batch)] == passed
            assert threading.active_count() == before  # the batch's threads have ended
            parser = check._parser
            assert len(parser._free_options) == len(parser._all_options) == threads
        check.set_threads(3)
        assert len(check._parser._all_options) == 3
        assert threading.main_thread() not in seen and 2 <= len(seen) <= 2 * threads
        check.close()


def test_link_grammar_messages_stay_off_stdout(link_grammar_available, capfd, caplog):
    import logging

    from transnli.generator.checks.linkgrammar_c import NullCountParser

    with caplog.at_level(logging.DEBUG, logger="linkgrammar"):
        parser = NullCountParser("en")
        assert parser.null_count("He goes home.") == 0
    assert capfd.readouterr().out == ""
    assert parser.library_version().startswith("5.") and parser.dictionary_version()
    parser.close()
    with pytest.raises(RuntimeError, match="after close"):
        parser.null_count("He goes home.")  # not a crash of the C library


def test_link_grammar_no_parse(link_grammar):
    # An empty string would abort the C library: it must be refused, not parsed.
    assert link_grammar.null_count("") is None and link_grammar.null_count("   ") is None
    res = link_grammar.check_many(["He goes home.", ""], ["", ""])
    assert [r.passed for r in res] == [False, True]
    assert "no parse" in res[0].reason
    assert not LinkGrammarAcceptability(relative=False).check_many([""], [""])[0].passed


def test_link_grammar_missing_library(monkeypatch):
    import ctypes.util

    from transnli.generator.checks import linkgrammar_c

    monkeypatch.setattr(linkgrammar_c, "_lib", None)
    monkeypatch.setattr(linkgrammar_c, "_SONAMES", ("liblink-grammar-missing.so.0",))
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    with pytest.raises(BackendUnavailable) as info:
        build_check("acceptability", "link-grammar")
    assert "C library is not installed" in str(info.value)
    assert "apt-get install liblink-grammar5 link-grammar-dictionaries-en" in str(info.value)
    assert "scripts/setup.sh" not in str(info.value)  # a pip install has no such script


def test_link_grammar_missing_dictionary(link_grammar_available):
    with pytest.raises(BackendUnavailable, match="dictionary 'xx-none' could not be loaded"):
        LinkGrammarAcceptability(language="xx-none")


# ------------------------------------------------------------------------------ none, factory


def test_no_acceptability_and_factory(link_grammar):
    assert check_backends("acceptability") == (
        "cola", "judge", "link-grammar", "llm", "lm", "pair-judge", "none"
    )  # fmt: skip
    check = build_check("acceptability", "none")
    assert isinstance(check, NoAcceptability) and check.version() == "none"
    assert [r.passed for r in check.check_many(["a", "b"], ["x", "y"])] == [True, True]
    with pytest.raises(ValueError):
        check.check_many(["a"], [])
    lg = build_check("acceptability", "link-grammar", relative=False, cola_model="ignored")
    assert isinstance(lg, LinkGrammarAcceptability) and not lg.relative
    with pytest.raises(ValueError, match="unknown acceptability backend"):
        build_check("acceptability", "gpt")
