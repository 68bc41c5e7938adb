"""Grammar checks: harper (real, offline), languagetool (against a fake server), none."""

from __future__ import annotations

import socket
import sys
import types

import pytest
from transnli.generator.checks.base import BackendUnavailable, CheckResult
from transnli.generator.checks.grammar import (
    GrammarError,
    HarperGrammar,
    LanguageToolGrammar,
    NoGrammar,
    added_errors,
)
from transnli.generator.checks.registry import build_check, check_backends

# ---------------------------------------------------------------------- added-error logic


def E(rule, text="", offset=0, message="m"):
    return GrammarError(rule, message, text, offset)


def test_added_errors_compares_rules_as_multisets():
    # Same rule, different span and message (the replaced word moved things): not new.
    assert added_errors([E("AGR", "has", 2, "use have")], [E("AGR", "lacks", 2, "use lack")]) == []
    # One more of a rule the original already has: new.
    added = added_errors([E("AGR", "go", 3)], [E("AGR", "go", 3), E("AGR", "go", 20)])
    assert [(e.rule, e.offset) for e in added] == [("AGR", 20)]
    # A rule the original lacks: new; errors that went away are no problem.
    assert [e.rule for e in added_errors([E("A")], [E("B")])] == ["B"]
    assert added_errors([E("A"), E("B")], []) == []


def test_added_errors_reports_the_error_whose_text_is_new():
    orig = [E("SPELL", "teh", 0)]
    cand = [E("SPELL", "teh", 0), E("SPELL", "blorfy", 10)]
    assert [e.text for e in added_errors(orig, cand)] == ["blorfy"]
    cand = [E("SPELL", "blorfy", 0), E("SPELL", "teh", 10)]
    assert [e.text for e in added_errors(orig, cand)] == ["blorfy"]


# ----------------------------------------------------------------------------------- harper


@pytest.fixture(scope="module")
def harper_check():
    return HarperGrammar()


def test_harper_flags_an_added_agreement_error(harper_check):
    [res] = harper_check.check_many(["He goes home."], ["He go home."])
    assert isinstance(res, CheckResult)
    assert res.backend == "harper" and not res.passed
    assert res.details["errors_original"] == 0 and res.details["errors_candidate"] == 1
    assert len(res.details["added"]) == 1 and "[go]" in res.details["added"][0]
    assert "new error" in res.reason
    assert res.to_dict()["passed"] is False


def test_harper_passes_a_correct_replacement(harper_check):
    [res] = harper_check.check_many(["The man is happy."], ["The man is unhappy."])
    # A candidate without errors passes whatever its original has: the original is not linted.
    assert res.passed and res.details == {"errors_candidate": 0, "added": []}
    assert res.reason == ""


def test_harper_error_already_in_original_does_not_fail(harper_check):
    [res] = harper_check.check_many(["He go to the big shop."], ["He go to the small shop."])
    assert res.passed
    assert res.details["errors_original"] == 1 and res.details["errors_candidate"] == 1
    # The replaced word itself inside a pre-existing error: still nothing new.
    [res] = harper_check.check_many(["I has a apple."], ["I lacks a apple."])
    assert res.passed and res.details["errors_original"] == res.details["errors_candidate"] >= 1


def test_harper_counts_a_second_error_of_a_known_kind(harper_check):
    [res] = harper_check.check_many(["He go home."], ["He go home and she go out."])
    assert not res.passed and res.details["errors_candidate"] == 2


def test_harper_batch_preserves_order_and_lints_each_needed_sentence_once(harper_check):
    originals = ["He goes home."] * 3 + ["The man is happy.", "He goes home."]
    candidates = [
        "He go home.",
        "He went home.",
        "He go home.",
        "The man is unhappy.",
        "He comes home.",
    ]
    calls = []
    check = HarperGrammar(threads=1)
    new_linter = check._new_linter

    class Counting:
        def __init__(self, config):
            self.real = new_linter(config)

        def organized_lints(self, text, **kw):
            calls.append(text)
            return self.real.organized_lints(text, **kw)

        def __getattr__(self, name):  # the spelling linter's methods
            return getattr(self.real, name)

    check._new_linter = Counting
    results = check.check_many(originals, candidates)
    assert [r.passed for r in results] == [False, True, False, True, True]
    # Each unique candidate once; of the originals only "He goes home.", whose candidate
    # "He go home." has an error to compare ("The man is happy." is never linted).
    assert sorted(calls) == sorted({*candidates, "He goes home."})
    assert "errors_original" in results[0].details and "errors_original" not in results[3].details
    check.check_many(originals, candidates)
    assert len(calls) == len({*candidates, "He goes home."})  # cached across calls too


def test_harper_errors_of_a_rule_do_not_depend_on_other_rules(harper_check):
    # harper's dedup would let the ignored style lint over "not unclear" hide the lower-case start.
    text = "not unclear about what is expected of us"
    assert [e.rule for e in harper_check.errors(text)] == ["SentenceCapitalization"]
    assert harper_check._errors_of_rules(text, frozenset({"SentenceCapitalization"})) == tuple(
        harper_check.errors(text)
    )


def test_harper_lints_an_original_for_its_candidates_rules_only():
    check = HarperGrammar(threads=1)
    text = "i has a apple , and he go home."
    full = check.errors(text)
    rules = {e.rule for e in full}
    assert len(rules) >= 3  # several rules fire, one of them twice
    # A linter with some rules switched off finds the same errors of the rules left on.
    for subset in [frozenset({rule}) for rule in rules] + [frozenset(rules)]:
        assert check._errors_of_rules(text, subset) == tuple(e for e in full if e.rule in subset)

    # The original has an agreement error its candidate lacks: only the comma rule counts.
    asked = []
    thread_linter = check._thread_linter
    check._thread_linter = lambda slot, rules=None: (
        asked.append((slot, rules)) or thread_linter(slot, rules)
    )
    [res] = check.check_many(["He go home , now."], ["He goes home , now."])
    assert res.passed and res.details == {"errors_original": 1, "errors_candidate": 1, "added": []}
    assert [rules for slot, rules in asked if slot == "rules"] == [frozenset({"CommaFixes"})]


def test_harper_drops_its_linters_after_each_batch():
    originals = ["He goes home.", "The man is happy.", "I has a apple."]
    candidates = ["He go home.", "The man is unhappy.", "I lacks a apple."]
    check = HarperGrammar(threads=1)  # inline: the linters are this thread's
    made = []
    new_linter = check._new_linter
    check._new_linter = lambda config: made.append(config) or new_linter(config)
    first = [r.to_dict() for r in check.check_many(originals, candidates)]
    assert {r["passed"] for r in first} == {True, False}
    built = len(made)
    assert built >= 2  # sentence linter and speller at least
    # No linter (nor its cache) is kept once the batch is checked ...
    assert not hasattr(check._local, "linters") and not hasattr(check._local, "speller")
    # ... and the next batch builds new ones that answer the same.
    check._errors.cache_clear()
    check._errors_of_rules_cached.cache_clear()
    check._word_errors.cache_clear()
    assert [r.to_dict() for r in check.check_many(originals, candidates)] == first
    assert len(made) == 2 * built


def test_harper_linters_are_replaced_to_keep_memory_flat(monkeypatch):
    from transnli.generator.checks import grammar

    originals = ["He goes home.", "The man is happy.", "I has a apple.", "She runs fast."]
    candidates = ["He go home.", "The man is unhappy.", "I lacks a apple.", "She runs slow."]
    expected = [r.to_dict() for r in HarperGrammar(threads=1).check_many(originals, candidates)]
    monkeypatch.setattr(grammar, "_LINTER_USES", 2)
    check = HarperGrammar(threads=1)
    made = []
    new_linter = check._new_linter
    check._new_linter = lambda config: made.append(config) or new_linter(config)
    assert [r.to_dict() for r in check.check_many(originals, candidates)] == expected
    sentence_linters = [c for c in made if c == check._sentence_config]
    assert len(sentence_linters) >= 2  # replaced after every second sentence, same results


def test_harper_spelling_of_the_new_word_counts_unless_ignored(harper_check):
    [res] = harper_check.check_many(["The leaf is green."], ["The leaf is blorfy."])
    assert not res.passed and "SpellCheck" in res.details["added"][0]
    lenient = HarperGrammar(ignore_rules={"SpellCheck"})
    assert lenient.check_many(["The leaf is green."], ["The leaf is blorfy."])[0].passed
    taught = HarperGrammar(extra_words=["blorfy"])
    assert taught.check_many(["The leaf is green."], ["The leaf is blorfy."])[0].passed


def test_harper_accepts_a_new_word_that_wordnet_lists(harper_check):
    # "unanimated" is a WordNet lemma harper's dictionary lacks; "unmaked" is no lemma (morphy
    # would reduce it to "unmake"), so a malformed inflection is still an error.
    originals = ["An animated film.", "They made two tricks."]
    candidates = ["An unanimated film.", "They unmaked two tricks."]
    assert [r.passed for r in harper_check.check_many(originals, candidates)] == [True, False]
    strict = HarperGrammar(wordnet_words=False)
    assert [r.passed for r in strict.check_many(originals, candidates)] == [False, False]


def test_harper_edge_cases(harper_check):
    assert harper_check.check_many([], []) == []
    assert harper_check.check_many([""], ["  "])[0].passed
    with pytest.raises(ValueError):
        harper_check.check_many(["a"], [])
    assert harper_check.version().startswith("harper-py ")
    assert harper_check.name == "grammar"
    with pytest.raises(ValueError, match="dialect"):
        HarperGrammar(dialect="martian")


def test_harper_missing_package_is_backend_unavailable(monkeypatch):
    monkeypatch.setitem(sys.modules, "harper", None)
    with pytest.raises(BackendUnavailable, match="pip install harper-py"):
        HarperGrammar()


# ----------------------------------------------------------------------------- languagetool


def test_languagetool_server_added_errors(languagetool_fake_server):
    lt = languagetool_fake_server
    lt.add_rule("He go ", "HE_VERB_AGR", "The pronoun 'He' needs a verb in third person.")
    lt.add_rule("teh", "MORFOLOGIK_RULE_EN_US", "Possible spelling mistake found.")
    check = build_check("grammar", "languagetool", languagetool_url=lt.url)
    assert check.backend == "languagetool" and check.name == "grammar"

    originals = [
        "He goes home.",
        "He goes home.",
        "teh cat is happy.",
        "teh cat is happy.",
        "He go home now.",
    ]
    candidates = [
        "He go home.",
        "He comes home.",
        "teh cat is sad.",
        "teh cat is teh dog.",
        "He go away now.",
    ]
    results = check.check_many(originals, candidates)
    assert [r.passed for r in results] == [False, True, True, False, True]
    assert results[0].details == {
        "errors_original": 0,
        "errors_candidate": 1,
        "added": ["HE_VERB_AGR: The pronoun 'He' needs a verb in third person. [He go ]"],
    }
    assert results[2].details["errors_original"] == results[2].details["errors_candidate"] == 1
    assert results[3].details["added"] == [
        "MORFOLOGIK_RULE_EN_US: Possible spelling mistake found. [teh]"
    ]
    assert "HE_VERB_AGR" in results[0].reason

    # Every request well-formed, each unique sentence sent once.
    checked = lt.checked_texts()
    assert all(r["language"] == "en-US" for r in lt.requests)
    assert sorted(checked) == sorted({"This is a test.", *originals, *candidates})
    check.check_many(originals, candidates)
    assert len(lt.checked_texts()) == len(checked)
    assert check.version() == f"LanguageTool 6.6-fake at {lt.url} (en-US)"


def test_languagetool_disabled_rules(languagetool_fake_server):
    lt = languagetool_fake_server
    lt.add_rule("  ", "WHITESPACE_RULE")
    lt.add_rule("big", "STYLE_BIG")
    check = LanguageToolGrammar(lt.url, workers=1)
    assert check.check_many(["The cat is small."], ["The cat  is big."])[0].details["added"] == [
        "STYLE_BIG: Possible error: STYLE_BIG [big]"
    ]
    assert lt.requests[-1]["disabledRules"] == "EN_QUOTES,WHITESPACE_RULE"
    # Filtered on our side too, for servers that ignore disabledRules.
    lt.honor_disabled = False
    check = LanguageToolGrammar(lt.url, disabled_rules=["STYLE_BIG"])
    res = check.check_many(["The dog is small."], ["The dog is big."])[0]
    assert res.passed and res.details["errors_candidate"] == 0
    assert lt.requests[-1]["disabledRules"] == "STYLE_BIG"


@pytest.mark.parametrize("suffix", ["", "/", "/v2", "/v2/", "/v2/check"])
def test_languagetool_url_forms(languagetool_fake_server, suffix):
    check = LanguageToolGrammar(languagetool_fake_server.url + suffix)
    assert check.url == languagetool_fake_server.url
    assert check.check_many(["A b."], ["A c."])[0].passed


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_languagetool_unreachable_url_fails_at_construction():
    url = f"http://127.0.0.1:{_free_port()}"
    with pytest.raises(BackendUnavailable) as info:
        build_check("grammar", "languagetool", languagetool_url=url)
    msg = str(info.value)
    assert url in msg and "--languagetool-url" in msg and "--grammar harper" in msg


def test_languagetool_server_without_the_language(languagetool_fake_server):
    languagetool_fake_server.languages = ["de-DE"]
    with pytest.raises(BackendUnavailable, match="en-US"):
        LanguageToolGrammar(languagetool_fake_server.url)


def test_languagetool_server_gone_mid_run(languagetool_fake_server):
    check = LanguageToolGrammar(languagetool_fake_server.url, retries=0, workers=1)
    languagetool_fake_server.close()
    with pytest.raises(BackendUnavailable, match="stopped answering"):
        check.check_many(["A b."], ["A c."])


def test_languagetool_local_without_package(monkeypatch):
    monkeypatch.setitem(sys.modules, "language_tool_python", None)
    with pytest.raises(BackendUnavailable) as info:
        build_check("grammar", "languagetool")
    assert "language_tool_python" in str(info.value) and "--languagetool-url" in str(info.value)


def test_languagetool_local_install_that_cannot_start(monkeypatch):
    fake = types.ModuleType("language_tool_python")

    def broken(language):
        raise OSError("No java install detected")

    fake.LanguageTool = broken
    monkeypatch.setitem(sys.modules, "language_tool_python", fake)
    with pytest.raises(BackendUnavailable, match="No java install detected"):
        LanguageToolGrammar()


def test_languagetool_local_install(monkeypatch):
    """The language_tool_python route: Match objects (rule_id/offset/error_length)."""

    class Match:
        def __init__(self, rule_id, message, offset, error_length):
            self.rule_id, self.message = rule_id, message
            self.offset, self.error_length = offset, error_length

    class Tool:
        _language_tool_download_version = "6.8"

        def __init__(self, language):
            self.language, self.disabled_rules, self.closed = language, set(), False

        def check(self, text):
            i = text.find("He go ")
            return [Match("HE_VERB_AGR", "agreement", i, 6)] if i >= 0 else []

        def close(self):
            self.closed = True

    fake = types.ModuleType("language_tool_python")
    fake.LanguageTool = Tool
    monkeypatch.setitem(sys.modules, "language_tool_python", fake)
    check = LanguageToolGrammar()
    tool = check._tool
    assert tool.disabled_rules == {"WHITESPACE_RULE", "EN_QUOTES"}
    res = check.check_many(["He goes home.", "He goes home."], ["He go home.", "He went home."])
    assert [r.passed for r in res] == [False, True]
    assert res[0].details["added"] == ["HE_VERB_AGR: agreement [He go ]"]
    assert check.version().startswith("LanguageTool 6.8 via language_tool_python")
    check.close()
    assert tool.closed


# ------------------------------------------------------------------------------ none, factory


def test_no_grammar_and_factory():
    assert check_backends("grammar") == ("harper", "languagetool", "none")
    check = build_check("grammar", "none", languagetool_url="http://ignored")
    assert isinstance(check, NoGrammar) and check.backend == "none" and check.version() == "none"
    assert [r.passed for r in check.check_many(["a", "b"], ["He go", "x"])] == [True, True]
    assert isinstance(build_check("grammar", "harper"), HarperGrammar)
    with pytest.raises(ValueError, match="unknown grammar backend"):
        build_check("grammar", "grammarly")
