"""Grammar checks: does the modified sentence have a grammar error that its original lacks?

Backends: ``harper`` (default; harper-py, Rust, offline, no Java), ``languagetool`` (the paper's
checker: a running LanguageTool server given by URL, or a local install through
language_tool_python) and ``none``.

How "no new error" is judged (the same for both real backends)
-------------------------------------------------------------
Source sentences often carry errors of their own (MNLI is partly transcribed speech, WordNet
examples start in lower case), so a candidate is judged against the sentence it was made from,
not in absolute terms. Each error is reduced to a *signature*: the id of the rule that fired
(harper's rule name such as ``PronounVerbAgreement``, LanguageTool's rule id such as
``HE_VERB_AGR``). The signatures of the original and of the candidate are compared as multisets;
the candidate passes when no signature occurs more often in it than in the original.

Why the rule id alone, and not span or message:
- spans shift when the replaced word has a different length, so positions cannot be matched;
- messages often quote the flagged word or a suggestion (harper: "Did you mean `unfettered`?"),
  so an error the original already had *on the replaced word* would look new after the swap.
  "I has a apple" -> "I lacks a apple" still has one agreement and one article error: nothing new;
- counting (multisets rather than sets) keeps a second error of a kind the original already has
  ("He go home" -> "He go away and she go ...") visible as an addition.
The one case this misses is a swap that removes an error and adds another of the same rule,
which would need the replaced word to be both inside an error and the cause of a new one.

Spelling counts: a spelling error on the new word is how a malformed inflection ("unfinded")
shows up, and the paper's LanguageTool also flags words it does not know. A new word that is
itself a WordNet lemma ("unanimated", "nonfinancial", "acaulescent") is a word, so harper does not
flag it (``wordnet_words=False`` restores harper's own verdict); LanguageTool's verdict is kept, as
in the paper. Pass
``ignore_rules={"SpellCheck"}`` (harper) or ``disabled_rules`` (LanguageTool) to keep them, or
``extra_words`` to teach harper specific words. Harper's style-only lint kinds (Style,
Readability, Enhancement: e.g. "not unhappy" -> "happy") are ignored by default: they judge
wording, not grammaticality, and the acceptability check covers naturalness.

Harper's spelling rule is word-local (a word is in its dictionary or not), and a swap can only
change the spelling verdict of the words it changed; spelling errors elsewhere would cancel out
by the count. So by default (``spelling="changed"``) harper runs its other rules on whole
sentences and checks spelling only for the words the candidate changed (found by comparing it
with its original; each word checked once, by harper's own SpellCheck rule): an unknown new
word is an added ``SpellCheck`` error, with the word and harper's message. That is the same
verdict for about half the cost (harper's SpellCheck builds suggestions for every unknown word of
every sentence, such as the names and lower-case sentence starts of real text). The one
difference: a misspelt word of the original that the swap replaced no longer cancels a misspelt
new word. ``spelling="sentence"`` runs SpellCheck on whole sentences like the other rules.

Every unique sentence is checked once: originals repeat a lot (one hypothesis gives a candidate
per content word), so results are kept in an LRU cache keyed by the exact text. An original is
checked only when one of its candidates has errors of its own: a candidate without any adds none,
whatever the original has (its details then lack ``errors_original``). On WordNet's examples,
where lower-case sentence starts give many candidates an error, that still saves two thirds of the
originals' checks; on capitalised NLI text it saves nearly all of them. And only the rules of the
candidate's errors matter in the original (the comparison counts those rules alone), so
``errors_original`` counts the original's errors of those rules, and harper lints an original
with only the rules its candidates' errors came from: faster than a full lint, with the same
errors of those rules (compared on 2,467 sentences with errors; measured: docs/speed.md, 'Grammar
check (harper)').
"""

from __future__ import annotations

import functools
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from transnli.common.versions import dist_version
from transnli.generator.checks.base import (
    BackendUnavailable,
    CheckResult,
    SwitchedOff,
    ThreadedCheck,
    ThreadPool,
    check_lengths,
)
from transnli.generator.checks.registry import register_check
from transnli.generator.wordnet import is_wordnet_lemma

# Harper lint kinds that judge style, not grammaticality (see the module docstring).
HARPER_IGNORED_KINDS = frozenset({"Style", "Readability", "Enhancement"})
# LanguageTool rules that only concern typography; a one-word swap cannot cause them, but a
# source sentence with odd spacing or straight quotes should not cost a request's worth of noise.
LANGUAGETOOL_DISABLED_RULES = ("WHITESPACE_RULE", "EN_QUOTES")

# Sentences repeat within a batch (one original per candidate word), rarely across batches: a few
# batches' worth keeps every repeat and keeps memory flat however long the input is.
_CACHE_SIZE = 8192
_WORD_CACHE_SIZE = 16384  # changed words, for the spelling check (a vocabulary, not sentences)
_LINTER_USES = 64  # sentences a harper Linter lints before it is replaced (see _thread_linter)
HARPER_SPELL_RULE = "SpellCheck"
SPELLING_MODES = ("changed", "sentence")
# A word as a spelling checker sees it: letters, with inner apostrophes ("don't", "o'clock").
_WORD_RE = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)*")
_SWITCH_HINT = "use --grammar harper (offline, no Java) or --grammar none"


@dataclass(frozen=True)
class GrammarError:
    """One error found by a checker. ``rule`` is the signature used for comparison."""

    rule: str
    message: str
    text: str = ""  # the flagged text
    offset: int = -1

    def describe(self) -> str:
        flagged = f" [{self.text}]" if self.text else ""
        return f"{self.rule}: {self.message}{flagged}"


def added_errors(
    original: Sequence[GrammarError], candidate: Sequence[GrammarError]
) -> list[GrammarError]:
    """Errors of the candidate beyond those of the original, compared as multisets of rule ids.

    When a rule fires k times more often in the candidate, the k reported errors are chosen among
    the candidate's errors of that rule preferring those whose flagged text the original's errors
    of that rule do not have (they are most likely the new ones)."""
    surplus = Counter(e.rule for e in candidate) - Counter(e.rule for e in original)
    if not surplus:
        return []
    old_texts = Counter((e.rule, e.text.lower()) for e in original)
    added: list[GrammarError] = []
    for rule, k in surplus.items():
        mine = [e for e in candidate if e.rule == rule]
        # Stable: unmatched texts first, in sentence order; then the rest.
        remaining = Counter({key: n for key, n in old_texts.items() if key[0] == rule})
        fresh, seen = [], []
        for e in mine:
            key = (rule, e.text.lower())
            if remaining[key] > 0:
                remaining[key] -= 1
                seen.append(e)
            else:
                fresh.append(e)
        added.extend((fresh + seen)[:k])
    added.sort(key=lambda e: (e.offset, e.rule))
    return added


def changed_words(original: str, candidate: str) -> list[tuple[int, str]]:
    """The words of `candidate` inside the span where it differs from `original`, widened to
    whole words, as (offset in candidate, word): "The man is happy." -> "The man is unhappy."
    gives [(11, "unhappy")]; "a happy child" -> "an unhappy child" gives both new words."""
    n = min(len(original), len(candidate))
    start = 0
    while start < n and original[start] == candidate[start]:
        start += 1
    tail = 0
    while tail < n - start and original[-1 - tail] == candidate[-1 - tail]:
        tail += 1
    end = len(candidate) - tail
    if start >= end and len(original) == len(candidate):
        return []

    def inside_word(ch: str) -> bool:
        return ch.isalnum() or ch in "'’"

    while start > 0 and inside_word(candidate[start - 1]):
        start -= 1
    while end < len(candidate) and inside_word(candidate[end]):
        end += 1
    return [(start + m.start(), m.group()) for m in _WORD_RE.finditer(candidate[start:end])]


class _ComparingGrammarCheck:
    """Shared batch logic: find errors of each unique sentence once, then compare."""

    name = "grammar"
    backend = ""

    def __init__(self, cache_size: int = _CACHE_SIZE) -> None:
        self._errors: Callable[[str], tuple[GrammarError, ...]] = functools.lru_cache(
            maxsize=cache_size
        )(self._find_errors)

    def _find_errors(self, text: str) -> tuple[GrammarError, ...]:
        raise NotImplementedError

    def _prefetch(self, texts: list[str]) -> None:
        """Fill the cache for these texts; backends that can work in parallel override it."""
        for t in texts:
            self._errors(t)

    def errors(self, text: str) -> list[GrammarError]:
        """The errors this backend finds in one sentence (cached). For harper with
        spelling="changed" these exclude spelling, which is judged per changed word."""
        return list(self._errors(text))

    def _changed_word_errors(self, original: str, candidate: str) -> tuple[GrammarError, ...]:
        """Errors judged on the words the candidate changed rather than on whole sentences
        (always added errors); none by default."""
        return ()

    def _prefetch_changed_words(self, originals: Sequence[str], candidates: Sequence[str]) -> None:
        """Fill the cache behind _changed_word_errors for these pairs; none by default."""

    def _errors_of_rules(self, text: str, rules: frozenset[str]) -> tuple[GrammarError, ...]:
        """The errors of `text` whose rule is one of `rules`. By default its full errors, filtered;
        a backend that can run a subset of its rules overrides this (and keeps its own cache)."""
        return tuple(e for e in self._errors(text) if e.rule in rules)

    def _prefetch_of_rules(self, wanted: Sequence[tuple[str, frozenset[str]]]) -> None:
        """Make _errors_of_rules cheap for these (text, rules) pairs."""
        self._prefetch(list(dict.fromkeys(text for text, _ in wanted)))

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
        check_lengths(originals, candidates)
        self._prefetch(list(dict.fromkeys(candidates)))
        self._prefetch_changed_words(originals, candidates)
        cand_errors = {c: self._errors(c) for c in candidates}
        # A candidate without errors adds none, whatever its original has: the original is
        # checked only for the candidates that have errors to compare, and only for the rules
        # of those errors (the union over its candidates here; each candidate then looks at
        # its own rules, so no result depends on what else is in the batch).
        rules_of_original: dict[str, set[str]] = {}
        for orig, cand in zip(originals, candidates, strict=True):
            if cand_errors[cand]:
                rules_of_original.setdefault(orig, set()).update(e.rule for e in cand_errors[cand])
        wanted = {orig: frozenset(rules) for orig, rules in rules_of_original.items()}
        self._prefetch_of_rules(list(wanted.items()))
        results = []
        for orig, cand in zip(originals, candidates, strict=True):
            e_cand = cand_errors[cand]
            details: dict[str, Any] = {}
            added: list[GrammarError] = []
            if e_cand:
                rules = {e.rule for e in e_cand}
                e_orig = [e for e in self._errors_of_rules(orig, wanted[orig]) if e.rule in rules]
                details["errors_original"] = len(e_orig)
                added = added_errors(e_orig, e_cand)
            new_word_errors = self._changed_word_errors(orig, cand)
            if new_word_errors:
                e_cand = (*e_cand, *new_word_errors)
                added = sorted([*added, *new_word_errors], key=lambda e: (e.offset, e.rule))
            details["errors_candidate"] = len(e_cand)
            details["added"] = [e.describe() for e in added]
            reason = ""
            if added:
                reason = f"{self.backend}: {len(added)} new error(s): {added[0].describe()}"
            results.append(CheckResult(self.backend, not added, details, reason))
        return results


# ------------------------------------------------------------------------------------ harper
@dataclass
class _ThreadLinter:
    """One of a thread's harper linters, the rules it has on (None: the sentence configuration),
    and how many sentences it has linted."""

    linter: Any
    rules: frozenset[str] | None
    uses: int = 0


@register_check("grammar", "harper")
class HarperGrammar(ThreadedCheck, _ComparingGrammarCheck):
    """harper-py: ``Linter().organized_lints(text, language="plaintext", dedup=False)`` (lints keyed
    by rule). Without harper's dedup, which drops a lint that overlaps another rule's, even an
    ignored style lint's ("not unclear about ..." lost its lower-case start error to the style lint
    over "not unclear"): each rule reports what it finds whichever other rules are on, which is
    what the rule-by-rule comparison means, and what linting an original with only its
    candidates' rules relies on.

    ignore_rules: harper rule names to drop (e.g. {"SpellCheck"}); ignore_kinds: lint kinds to
    drop (default: the style-only kinds); extra_words: words to add to harper's dictionary;
    dialect: "american" (default), "british", "australian", "canadian", "indian";
    spelling: "changed" (default: spelling checked on the words the candidate changed only) or
    "sentence" (SpellCheck on whole sentences like every other rule); see the module docstring;
    wordnet_words: a changed word that is itself a WordNet lemma is never a spelling error
    (spelling="changed" only);
    threads: sentences linted in parallel, each thread with its own Linter (harper releases the
    GIL while it lints, and it is most of the generator's time); None: the CPUs this process may
    use, at most 4; 1: no threads."""

    @classmethod
    def from_options(cls, *, languagetool_url: str | None = None, **kw: Any) -> HarperGrammar:
        return cls(**kw)

    def __init__(
        self,
        *,
        ignore_rules: Iterable[str] = (),
        ignore_kinds: Iterable[str] = HARPER_IGNORED_KINDS,
        extra_words: Iterable[str] = (),
        dialect: str = "american",
        cache_size: int = _CACHE_SIZE,
        spelling: str = "changed",
        wordnet_words: bool = True,
        threads: int | None = None,
    ) -> None:
        super().__init__(cache_size)
        if spelling not in SPELLING_MODES:
            raise ValueError(
                f"unknown spelling mode {spelling!r}; one of {', '.join(SPELLING_MODES)}"
            )
        try:
            import harper
        except ImportError as e:
            raise BackendUnavailable(
                f"grammar backend 'harper' needs the harper-py package ({e}): "
                "pip install harper-py, or use --grammar languagetool or --grammar none"
            ) from e
        try:
            dialect_enum = harper.Dialect[dialect.upper()]
        except KeyError as e:
            names = ", ".join(d.name.lower() for d in harper.Dialect)
            raise ValueError(f"unknown harper dialect {dialect!r}; one of {names}") from e
        self._harper, self._dialect_enum = harper, dialect_enum
        self.ignore_rules = frozenset(ignore_rules)
        self.ignore_kinds = frozenset(ignore_kinds)
        self.dialect = dialect
        self.spelling = spelling
        # A new word that is itself a WordNet lemma ("unanimated", "nonfinancial": the antonym
        # source took it from WordNet) is a word, whatever harper's smaller dictionary says.
        self.wordnet_words = wordnet_words
        # Linters are made per thread (see _thread_linter); here only their configurations.
        # spelling="changed": SpellCheck off for whole sentences, and a second linter (cheap: the
        # dictionary is shared) with SpellCheck alone for the changed words.
        config = harper.Linter(dialect_enum).get_lint_config()
        self._sentence_config = config
        self._speller_config: dict | None = None
        if (
            spelling == "changed"
            and HARPER_SPELL_RULE not in self.ignore_rules
            and config.get(HARPER_SPELL_RULE, True) is not False
        ):
            self._sentence_config = {**config, HARPER_SPELL_RULE: False}
            self._speller_config = {rule: rule == HARPER_SPELL_RULE for rule in config}
        self._extra_words = sorted(set(extra_words))
        self._word_errors: Callable[[str], tuple[tuple[str, str], ...]] = functools.lru_cache(
            maxsize=_WORD_CACHE_SIZE
        )(self._spell_word)
        self._errors_of_rules_cached: Callable[[str, frozenset[str]], tuple[GrammarError, ...]] = (
            functools.lru_cache(maxsize=cache_size)(self._lint_with_rules)
        )
        self._local = threading.local()
        self._pool = ThreadPool(threads, "harper")

    # -- linters, one set per thread ------------------------------------------------------------
    def _new_linter(self, config: dict) -> Any:
        linter = self._harper.Linter(self._dialect_enum)
        linter.set_lint_config(config)
        if self._extra_words:
            linter.import_words(self._extra_words)
        return linter

    def _thread_linter(self, slot: str, rules: frozenset[str] | None = None) -> Any:
        """This thread's linter for `slot` (a Linter is not thread-safe): "sentence" for whole
        sentences (rules None: every rule of the sentence configuration), "rules" for originals
        with only `rules` enabled (see _errors_of_rules; reconfiguring is not free, so originals
        are linted grouped by their rules).

        Each Linter keeps what it computed for the documents it linted in a cache of its own,
        which grows with every sentence and is of no use here (sentences are cached above, by
        text). A thread's linter is therefore replaced every _LINTER_USES sentences: memory stays
        flat for any input length, at the small cost of building a linter (the dictionary is
        shared; measured: docs/speed.md, 'Grammar check (harper)'). After each batch every
        thread's linters are dropped (see check_many)."""
        linters: dict[str, _ThreadLinter] = self._local.__dict__.setdefault("linters", {})
        entry = linters.get(slot)
        if entry is None or entry.uses >= _LINTER_USES:
            entry = linters[slot] = _ThreadLinter(self._new_linter(self._config_for(rules)), rules)
        elif entry.rules != rules:
            entry.linter.set_lint_config(self._config_for(rules))
            entry.rules = rules
        entry.uses += 1
        return entry.linter

    def check_many(self, originals: Sequence[str], candidates: Sequence[str]) -> list[CheckResult]:
        try:
            return super().check_many(originals, candidates)
        finally:
            self._drop_linters()

    def _drop_linters(self) -> None:
        """Let go of every thread's linters and their caches, so that the next check of the batch
        (link-grammar, whose hardest parses make a run's peak) has that memory: a lower peak at
        the same speed (measured: docs/speed.md, 'Grammar check (harper)'). Called when the
        pool's work for the batch is done, so no thread is linting."""
        self._local = threading.local()

    def _config_for(self, rules: frozenset[str] | None) -> dict:
        if rules is None:
            return self._sentence_config
        return {rule: rule in rules for rule in self._sentence_config}

    def _word_speller(self) -> Any:
        """This thread's SpellCheck-only linter (single words: its cache stays small)."""
        speller = getattr(self._local, "speller", None)
        if speller is None:
            speller = self._local.speller = self._new_linter(self._speller_config)
        return speller

    def _prefetch(self, texts: list[str]) -> None:
        # Texts already cached come back at once; the rest are linted on the threads.
        self._pool.map(self._errors, texts)

    def _find_errors(self, text: str) -> tuple[GrammarError, ...]:
        if not text.strip():
            return ()
        return self._collect(
            self._thread_linter("sentence").organized_lints(text, language="plaintext", dedup=False)
        )

    def _lint_with_rules(self, text: str, rules: frozenset[str]) -> tuple[GrammarError, ...]:
        if not text.strip():
            return ()
        return self._collect(
            self._thread_linter("rules", rules).organized_lints(
                text, language="plaintext", dedup=False
            )
        )

    def _collect(self, organized: dict[str, list]) -> tuple[GrammarError, ...]:
        """The errors in organized_lints' answer (one entry per rule, nearly all empty: the
        emptiness test comes first, this loop runs under the GIL for every sentence)."""
        ignore_rules, ignore_kinds = self.ignore_rules, self.ignore_kinds
        found = [
            GrammarError(rule, lint.message, lint.problem_text, lint.span.start)
            for rule, lints in organized.items()
            if lints and rule not in ignore_rules
            for lint in lints
            if lint.lint_kind not in ignore_kinds
        ]
        found.sort(key=lambda e: (e.offset, e.rule))
        return tuple(found)

    def _errors_of_rules(self, text: str, rules: frozenset[str]) -> tuple[GrammarError, ...]:
        return self._errors_of_rules_cached(text, rules)

    def _prefetch_of_rules(self, wanted: Sequence[tuple[str, frozenset[str]]]) -> None:
        # Grouped by rules, so that a thread's linter is rarely reconfigured.
        ordered = sorted(wanted, key=lambda item: (sorted(item[1]), item[0]))
        self._pool.map(lambda item: self._errors_of_rules_cached(*item), ordered)

    def _spell_word(self, word: str) -> tuple[tuple[str, str], ...]:
        """(flagged text, message) of harper's SpellCheck on one word on its own (cached).

        A word harper's language detector does not take for English at all is not in its
        dictionary, so SpellCheck flags it; it is reported without asking SpellCheck, whose
        search for suggestions is most of the spelling time (docs/speed.md, 'Grammar check
        (harper)'). Checked on 20,330 words (WordNet lemmas, their inflections,
        capitalised forms, the antonyms of 3,000 WordNet examples): every word the detector
        rejects is flagged by SpellCheck; the reverse does not hold (British spellings, lower-case
        names), so every other word still goes through SpellCheck. Only the message differs:
        it names the word instead of harper's suggestion."""
        if "Spelling" in self.ignore_kinds:  # SpellCheck's lints are all of this kind
            return ()
        if self.wordnet_words and is_wordnet_lemma(word):
            return ()
        speller = self._word_speller()
        if not speller.is_likely_english(word):
            return ((word, f"`{word}` is not in harper's dictionary."),)
        return tuple(
            (lint.problem_text, lint.message)
            for lint in speller.lint(word, language="plaintext")
            if lint.lint_kind not in self.ignore_kinds
        )

    def _prefetch_changed_words(self, originals: Sequence[str], candidates: Sequence[str]) -> None:
        if self._speller_config is None:
            return
        words = dict.fromkeys(
            word
            for o, c in zip(originals, candidates, strict=True)
            for _, word in changed_words(o, c)
        )
        self._pool.map(self._word_errors, words)  # on the threads; cached words come back at once

    def _changed_word_errors(self, original: str, candidate: str) -> tuple[GrammarError, ...]:
        if self._speller_config is None:
            return ()
        found = []
        for offset, word in changed_words(original, candidate):
            for text, message in self._word_errors(word):
                found.append(GrammarError(HARPER_SPELL_RULE, message, text, offset))
        return tuple(found)

    def version(self) -> str:
        spelling = "changed words" if self.spelling == "changed" else "whole sentences"
        return (
            f"harper-py {dist_version('harper-py') or 'unknown'} ({self.dialect}, spelling: "
            f"{spelling})"
        )


# ------------------------------------------------------------------------------ languagetool
@register_check("grammar", "languagetool")
class LanguageToolGrammar(_ComparingGrammarCheck):
    """LanguageTool, the paper's grammar checker.

    url: a running LanguageTool server (``http://localhost:8081``, with or without ``/v2``); the
    check talks to its HTTP API directly (POST /v2/check, form data text & language). Without a
    url, a local LanguageTool is started through language_tool_python (needs Java and an
    already downloaded LanguageTool, e.g. under $LTP_PATH). Either way the backend is probed at
    construction, so a missing server fails at start, not in the middle of a run.

    disabled_rules: rule ids never counted (sent to the server and filtered here as well).
    workers: parallel requests to a server (LanguageTool servers answer concurrently)."""

    @classmethod
    def from_options(cls, *, languagetool_url: str | None = None, **kw: Any) -> LanguageToolGrammar:
        return cls(languagetool_url, **kw)

    def __init__(
        self,
        url: str | None = None,
        *,
        language: str = "en-US",
        disabled_rules: Iterable[str] = LANGUAGETOOL_DISABLED_RULES,
        timeout: float = 30.0,
        workers: int = 4,
        retries: int = 2,
        cache_size: int = _CACHE_SIZE,
    ) -> None:
        super().__init__(cache_size)
        self.language = language
        self.disabled_rules = tuple(sorted(set(disabled_rules)))
        self.timeout = timeout
        self.workers = max(1, workers)
        self.retries = max(0, retries)
        self._software = "LanguageTool"
        self._tool: Any = None  # language_tool_python.LanguageTool for a local install
        self._session: Any = None
        if url:
            self.url = _normalise_lt_url(url)
            self._probe_server()
        else:
            self.url = None
            self._start_local()

    # -- construction ---------------------------------------------------------------------
    def _probe_server(self) -> None:
        import requests
        from requests.adapters import HTTPAdapter

        self._session = requests.Session()
        adapter = HTTPAdapter(pool_connections=1, pool_maxsize=self.workers)
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)
        how = (
            "pass --languagetool-url URL of a running LanguageTool server (e.g. "
            "java -cp languagetool-server.jar org.languagetool.server.HTTPServer --port 8081, "
            "then --languagetool-url http://localhost:8081), or install Java + "
            "language_tool_python with a cached LanguageTool and leave the URL out, or "
            + _SWITCH_HINT
        )
        try:
            r = self._session.get(f"{self.url}/v2/languages", timeout=min(self.timeout, 10.0))
            r.raise_for_status()
            languages = r.json()
        except (requests.RequestException, ValueError) as e:
            raise BackendUnavailable(
                f"grammar backend 'languagetool': no LanguageTool server answers at {self.url} "
                f"({type(e).__name__}: {e}). To fix: {how}"
            ) from e
        codes = {
            str(x.get(k, "")).lower()
            for x in languages
            if isinstance(x, dict)
            for k in ("code", "longCode")
        }
        if self.language.lower() not in codes:
            raise BackendUnavailable(
                f"grammar backend 'languagetool': the server at {self.url} does not offer "
                f"language {self.language!r} (it has {len(codes)} codes). To fix: {how}"
            )
        try:
            reply = self._post_check("This is a test.")
        except (requests.RequestException, ValueError, KeyError) as e:
            raise BackendUnavailable(
                f"grammar backend 'languagetool': the server at {self.url} lists languages but "
                f"its /v2/check fails ({type(e).__name__}: {e}). To fix: {how}"
            ) from e
        sw = reply.get("software") or {}
        if sw.get("version"):
            self._software = f"{sw.get('name', 'LanguageTool')} {sw['version']}"

    def _start_local(self) -> None:
        how = (
            "pass --languagetool-url URL of a running LanguageTool server, or install Java + "
            "language_tool_python with a cached LanguageTool (it downloads LanguageTool on first "
            "use, which needs network; set LTP_PATH to a folder that holds it), or " + _SWITCH_HINT
        )
        try:
            import language_tool_python
        except ImportError as e:
            raise BackendUnavailable(
                "grammar backend 'languagetool' without a URL needs the language_tool_python "
                f"package (pip install 'transnli[languagetool]'). To fix: {how}"
            ) from e
        try:
            tool = language_tool_python.LanguageTool(self.language)
            tool.disabled_rules = set(self.disabled_rules)
            tool.check("This is a test.")
        except Exception as e:  # noqa: BLE001 - Java missing, download refused, server crash...
            raise BackendUnavailable(
                f"grammar backend 'languagetool': could not start a local LanguageTool "
                f"({type(e).__name__}: {str(e)[:300]}). To fix: {how}"
            ) from e
        self._tool = tool
        lt_version = getattr(tool, "_language_tool_download_version", "") or "local"
        self._software = (
            f"LanguageTool {lt_version} via language_tool_python "
            f"{dist_version('language_tool_python') or dist_version('language-tool-python') or 'unknown'}"  # noqa: E501
        )

    # -- checking ---------------------------------------------------------------------------
    def _post_check(self, text: str) -> dict[str, Any]:
        import requests

        data = {"text": text, "language": self.language}
        if self.disabled_rules:
            data["disabledRules"] = ",".join(self.disabled_rules)
        for attempt in range(self.retries + 1):
            try:
                r = self._session.post(f"{self.url}/v2/check", data=data, timeout=self.timeout)
                if r.status_code in (429, 502, 503, 504) and attempt < self.retries:
                    time.sleep(1.0 + attempt)
                    continue
                r.raise_for_status()
                reply = r.json()
                reply["matches"]  # noqa: B018 - must be there
                return reply
            except (requests.ConnectionError, requests.Timeout):
                if attempt >= self.retries:
                    raise
                time.sleep(0.5 + attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _find_errors(self, text: str) -> tuple[GrammarError, ...]:
        if not text.strip():
            return ()
        found = []
        if self._tool is not None:
            for m in self._tool.check(text):
                rule = getattr(m, "rule_id", None) or getattr(m, "ruleId", "")
                offset = int(getattr(m, "offset", -1))
                length = getattr(m, "error_length", None)
                if length is None:
                    length = getattr(m, "errorLength", 0)
                found.append(_lt_error(rule, m.message, text, offset, int(length)))
        else:
            import requests

            try:
                reply = self._post_check(text)
            except (requests.RequestException, ValueError, KeyError) as e:
                raise BackendUnavailable(
                    f"grammar backend 'languagetool': the server at {self.url} stopped answering "
                    f"({type(e).__name__}: {e})"
                ) from e
            for m in reply["matches"]:
                rule = (m.get("rule") or {}).get("id", "")
                found.append(
                    _lt_error(
                        rule,
                        m.get("message", ""),
                        text,
                        int(m.get("offset", -1)),
                        int(m.get("length", 0)),
                    )
                )
        found = [e for e in found if e.rule not in self.disabled_rules]
        found.sort(key=lambda e: (e.offset, e.rule))
        return tuple(found)

    def _prefetch(self, texts: list[str]) -> None:
        if self._tool is not None or self.workers == 1 or len(texts) < 2:
            super()._prefetch(texts)
            return
        # Only the texts not cached yet go out; lru_cache is thread-safe (a rare race checks a
        # sentence twice, which is harmless).
        with ThreadPoolExecutor(self.workers) as pool:
            list(pool.map(self._errors, texts))

    def version(self) -> str:
        where = f" at {self.url}" if self.url else ""
        return f"{self._software}{where} ({self.language})"

    def close(self) -> None:
        if self._tool is not None:
            self._tool.close()
            self._tool = None
        if self._session is not None:
            self._session.close()


def _lt_error(rule: str, message: str, text: str, offset: int, length: int) -> GrammarError:
    flagged = text[offset : offset + length] if 0 <= offset <= len(text) else ""
    return GrammarError(rule or "UNKNOWN", message, flagged, offset)


def _normalise_lt_url(url: str) -> str:
    url = url.strip().rstrip("/")
    if "://" not in url:
        url = "http://" + url
    for suffix in ("/v2/check", "/v2"):
        if url.endswith(suffix):
            url = url[: -len(suffix)]
    return url


# -------------------------------------------------------------------------------------- none
@register_check("grammar", "none")
class NoGrammar(SwitchedOff):
    """Grammar checking switched off: every candidate passes."""


# ----------------------------------------------------------------------------------- factory
