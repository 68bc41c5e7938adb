"""WordNet access for the generator: the loaded reader and the look-ups its stages share.

The antonym stage (transnli.generator.antonyms), the candidate filters and the quality features
all read WordNet through this module: the reader (`wordnet`, loaded by `load_wordnet`), a word's
base forms, its sense-by-sense antonym rows (`sense_antonyms`, `indirect_adjective_antonyms`),
WordNet's sense-tagged counts, and whether a word is a lemma at all. The rows come from the
antonym index (transnli.generator.wordnet_index) when one can be built, else from nltk directly;
both give the same answers.

Lookups are cached per (word, POS, ...) for the life of the process: WordNet is immutable and the
pipeline asks about the same few thousand words millions of times.
"""

from __future__ import annotations

import threading
from functools import lru_cache

from transnli.common.notice import announce
from transnli.generator.wordnet_index import antonym_index, fold_pos

# -- loading nltk's reader -------------------------------------------------------------------------
_MISSING = object()
_LOAD_LOCK = threading.Lock()


def load_wordnet():
    """nltk.corpus.wordnet, loaded (if nothing loaded it yet) without building `map30` up front.

    nltk 3.9+ builds, whenever it loads WordNet, a map from the "wordnet" corpus version to the
    loaded one (`map30`, read from index.sense twice: most of the load's time). Only
    the multilingual (Open Multilingual WordNet) functions use it; transnli never does. The
    reader is loaded with that step deferred to the first use of `map30`, so everything nltk
    offers still works, and each process (each --workers worker too) starts sooner (measured:
    docs/speed.md, 'Start-up and imports').
    """
    from nltk.corpus import wordnet

    if not isinstance(wordnet, _lazy_loader_class()):
        return wordnet  # already loaded (by us or by someone else)
    with _LOAD_LOCK:
        if not isinstance(wordnet, _lazy_loader_class()):
            return wordnet
        provide_wordnet()
        try:
            from nltk.corpus.reader.wordnet import WordNetCorpusReader
        except ImportError:  # pragma: no cover
            wordnet.ensure_loaded()
            return wordnet
        if not hasattr(WordNetCorpusReader, "map_wn"):  # pragma: no cover - another nltk
            wordnet.ensure_loaded()
            return wordnet
        original = WordNetCorpusReader.__dict__.get("map_wn")
        WordNetCorpusReader.map_wn = lambda self, version="wordnet": _MISSING
        try:
            wordnet.ensure_loaded()
        finally:
            if original is not None:
                WordNetCorpusReader.map_wn = original
        if type(wordnet) is WordNetCorpusReader and wordnet.__dict__.get("map30") is _MISSING:
            del wordnet.__dict__["map30"]
            wordnet.__class__ = _DeferredMapReader()
        return wordnet


def provide_wordnet() -> None:
    """Make sure nltk finds WordNet: an install without `transnli setup` builds nltk's copy here,
    on first use, from the system's WordNet database (about 2 s, once); with none, raises
    WordNetMissing (a LookupError) whose one line says what to install and run."""
    from transnli.resources.provision import (
        build_wordnet,
        nltk_wordnet_available,
        wordnet_missing_files,
    )

    if not nltk_wordnet_available():
        if not wordnet_missing_files():  # else build_wordnet refuses at once: nothing to announce
            announce("building WordNet for nltk from the system's database, once", "a few seconds")
        build_wordnet()


def _lazy_loader_class():
    from nltk.corpus.util import LazyCorpusLoader

    return LazyCorpusLoader


_DEFERRED = None


def _DeferredMapReader():  # noqa: N802 - returns a class, built on first use (nltk imported late)
    global _DEFERRED
    if _DEFERRED is None:
        from nltk.corpus.reader.wordnet import WordNetCorpusReader

        class DeferredMapWordNetReader(WordNetCorpusReader):
            """nltk's WordNetCorpusReader with `map30` built on first use."""

            @property
            def map30(self):
                value = self.__dict__.get("_deferred_map30", _MISSING)
                if value is _MISSING:
                    value = self.__dict__["_deferred_map30"] = self.map_wn()
                return value

            @map30.setter
            def map30(self, value):
                self.__dict__["_deferred_map30"] = value

        _DEFERRED = DeferredMapWordNetReader
    return _DEFERRED


# Bounds for the lookup caches. Word frequencies are Zipfian: the two thousand words that make
# most of a text's tokens stay cached, a rare word is looked up again in the in-memory index
# (transnli.generator.wordnet_index), and memory stays flat however long the input. Python's
# allocator
# keeps a page for as long as one entry on it lives, so a cache's fill stays in RSS: 1 << 14
# entries (here and in transnli.generator.vectors) grew a long run's memory against 1 << 11, at
# the same speed (measured: docs/speed.md, 'Caches and vectors').
CACHE_SIZE = 1 << 11


def wordnet():
    """The loaded WordNet reader (nltk's, see `load_wordnet`)."""
    return load_wordnet()


@lru_cache(maxsize=CACHE_SIZE)
def base_forms(word: str, pos: str) -> frozenset[str]:
    """The word and every base form morphy finds for it ("men" -> man, "found" -> found, find)."""
    wn = wordnet()
    try:
        forms = wn._morphy(word, pos)  # all candidates; public morphy() returns only the first
    except Exception:  # pragma: no cover - older/newer nltk without _morphy
        first = wn.morphy(word, pos)
        forms = [first] if first else []
    return frozenset([word, *(f.lower() for f in forms)])


def current_index():
    """The antonym index of the current WordNet (transnli.generator.wordnet_index), or None: use
    nltk."""
    return antonym_index(wordnet())


@lru_cache(maxsize=CACHE_SIZE)
def sense_antonyms(word: str, pos: str | None) -> tuple[tuple[int, bool, bool, str, str], ...]:
    """Every antonym of every lemma of every synset of `word` (pos None: all POS).

    Rows (sense rank, attested?, own lemma?, antonym name, antonym POS) in WordNet's order:
    synsets in the order nltk lists them (the word's sense numbers, which WordNet assigns by
    tagged frequency), lemmas and antonyms in database order. "Own lemma": the lemma *is* the
    word (or a base form of it), not a synonym. "Attested": the sense is the word's first, or the
    word was tagged with it in WordNet's sense-tagged corpus at least once (lemma.count() > 0).
    nltk's wn.synsets(word, "a") includes satellite synsets ("s").

    Read from the antonym index when there is one (same rows, without parsing synsets), else
    from nltk (`sense_antonyms_nltk`).
    """
    index = current_index()
    if index is None:
        return sense_antonyms_nltk(word, pos)
    counts = sense_counts()
    rows = []
    for rank, key in enumerate(index.offsets(word, pos)):
        entry = index.entries.get(key)
        if entry is None:  # no lemma of this synset has an antonym
            continue
        own_names = base_forms(word, fold_pos(entry.pos))
        attested = rank == 0 or any(
            counts.get(sense_key, 0) > 0
            for name, sense_key, _ in entry.lemmas
            if name.lower() in own_names
        )
        for name, _, antonyms in entry.lemmas:
            own = name.lower() in own_names
            for ant_name, ant_pos in antonyms:
                rows.append((rank, attested, own, ant_name, ant_pos))
    return tuple(rows)


def sense_antonyms_nltk(word: str, pos: str | None) -> tuple[tuple[int, bool, bool, str, str], ...]:
    """`sense_antonyms` straight from nltk's synsets (the reference the index must match)."""
    wn = wordnet()
    rows = []
    for rank, synset in enumerate(wn.synsets(word, pos)):
        own_names = base_forms(word, fold_pos(synset.pos()))
        own_lemmas = [lemma for lemma in synset.lemmas() if lemma.name().lower() in own_names]
        attested = rank == 0 or any(sense_count(lemma) > 0 for lemma in own_lemmas)
        for lemma in synset.lemmas():
            own = lemma.name().lower() in own_names
            for ant in lemma.antonyms():
                rows.append((rank, attested, own, ant.name(), fold_pos(ant.synset().pos())))
    return tuple(rows)


_SENSE_COUNTS: dict[str, int] | None = None


def sense_counts() -> dict[str, int]:
    """WordNet's sense-tagged frequencies (cntlist.rev: sense key -> count), read once.

    nltk's ``lemma.count()`` binary-searches that file on disk at every call, which was most of
    the antonym stage's time; a dict gives the same numbers (the file's first field is the sense
    key, its last the count, as nltk reads them)."""
    global _SENSE_COUNTS
    if _SENSE_COUNTS is None:
        counts: dict[str, int] = {}
        try:
            fh = wordnet().open("cntlist.rev")
        except Exception:  # pragma: no cover - a WordNet copy without cntlist.rev: all 0
            fh = None
        if fh is not None:
            try:
                for line in fh.read().splitlines():
                    parts = line.split()
                    if len(parts) >= 2:
                        counts.setdefault(parts[0], int(parts[-1]))
            finally:
                fh.close()
        _SENSE_COUNTS = counts
    return _SENSE_COUNTS


def sense_count(lemma) -> int:
    """``lemma.count()`` from the in-memory table (0 for a sense never tagged)."""
    if getattr(lemma, "_lang", "eng") != "eng":
        return 0
    try:
        return sense_counts().get(lemma.key(), 0)
    except Exception:  # pragma: no cover - an nltk without sense keys
        return 0


@lru_cache(maxsize=CACHE_SIZE)
def indirect_adjective_antonyms(word: str) -> tuple[tuple[int, str], ...]:
    """WordNet's indirect antonyms of an adjective: for each attested satellite synset of the word
    (in sense order), the antonyms of the head synset(s) it is similar to (huge -> large ->
    small)."""
    index = current_index()
    if index is None:
        return indirect_adjective_antonyms_nltk(word)
    counts = sense_counts()
    own_names = base_forms(word, "a")
    rows = []
    for rank, key in enumerate(index.offsets(word, "a")):
        entry = index.entries.get(key)
        if entry is None or entry.pos != "s" or not entry.head_antonyms:
            continue
        if rank > 0 and not any(
            counts.get(sense_key, 0) > 0
            for name, sense_key, _ in entry.lemmas
            if name.lower() in own_names
        ):
            continue
        rows.extend((rank, name) for name in entry.head_antonyms)
    return tuple(rows)


def indirect_adjective_antonyms_nltk(word: str) -> tuple[tuple[int, str], ...]:
    wn = wordnet()
    own_names = base_forms(word, "a")
    rows = []
    for rank, synset in enumerate(wn.synsets(word, "a")):
        if synset.pos() != "s":
            continue
        own_lemmas = [lemma for lemma in synset.lemmas() if lemma.name().lower() in own_names]
        if rank > 0 and not any(sense_count(lemma) > 0 for lemma in own_lemmas):
            continue
        for head in synset.similar_tos():
            if head.pos() != "a":
                continue
            for lemma in head.lemmas():
                for ant in lemma.antonyms():
                    rows.append((rank, ant.name()))
    return tuple(rows)


@lru_cache(maxsize=CACHE_SIZE)
def has_synsets(word: str, pos: str) -> bool:
    """True when WordNet has `word` (or a base form of it) in POS `pos`."""
    index = current_index()
    if index is None:
        return bool(wordnet().synsets(word, pos))
    return index.has_synsets(word, pos)


@lru_cache(maxsize=4096)
def first_noun_lexname(noun: str) -> str | None:
    """The lexicographer file of the noun's first sense ("noun.time" for "week"), or None."""
    synsets = wordnet().synsets(noun, "n")
    return synsets[0].lexname() if synsets else None


_LEMMA_NAMES: frozenset[str] | None = None


def is_wordnet_lemma(word: str) -> bool:
    """True when `word` (any case; spaces or underscores) is itself one of WordNet's lemma names,
    in any POS. Exact names only: an inflection WordNet's morphy would reduce ("unmaked" ->
    unmake) is not a lemma, so a malformed form the realiser made is still caught elsewhere."""
    global _LEMMA_NAMES
    if _LEMMA_NAMES is None:
        try:
            _LEMMA_NAMES = frozenset(load_wordnet().all_lemma_names())
        except LookupError:  # no WordNet here: nothing is vouched for
            _LEMMA_NAMES = frozenset()
    return word.strip().lower().replace(" ", "_") in _LEMMA_NAMES


ARTICLES = frozenset({"a", "an", "the"})


def _lemma_forms(phrase: str, pos: str) -> frozenset[str]:
    """WordNet names a swapped span may stand for: the span with underscores, and with its first
    word reduced to each base form ("took away" -> take_away, "smaller" -> small)."""
    words = phrase.lower().split()
    if not words:
        return frozenset()
    rest = words[1:]
    return frozenset("_".join([form, *rest]) for form in base_forms(words[0], pos)) | {
        "_".join(words)
    }


@lru_cache(maxsize=CACHE_SIZE)
def antonym_senses(old: str, new: str) -> tuple[str, str] | None:
    """The definitions of the sense of `old` whose antonym is `new`, and of that antonym's sense
    ("extensive" -> "intensive": "of agriculture; increasing productivity by using large areas
    ..."), or None when WordNet holds no such pair.

    `old` and `new` are the swapped spans as a sentence shows them (inflected, with an article
    that agrees: "a new" -> "an old"). The first sense in WordNet's order wins, the word's own
    lemma before its synonyms', then an adjective's indirect antonyms (through the head it is
    similar to), as the antonym stage ranks them (transnli.generator.antonyms)."""
    old_words, new_words = old.split(), new.split()
    both_articled = len(old_words) > 1 and len(new_words) > 1
    if both_articled and {old_words[0].lower(), new_words[0].lower()} <= ARTICLES:
        old_words, new_words = old_words[1:], new_words[1:]
    old, new = " ".join(old_words), " ".join(new_words)
    if not old or not new:
        return None
    wn = wordnet()
    synsets = wn.synsets("_".join(old.lower().split()))
    for synset in synsets:
        pos = fold_pos(synset.pos())
        olds, news = _lemma_forms(old, pos), _lemma_forms(new, pos)
        for own in (True, False):
            for lemma in synset.lemmas():
                if (lemma.name().lower() in olds) is not own:
                    continue
                for antonym in lemma.antonyms():
                    if antonym.name().lower() in news:
                        return synset.definition(), antonym.synset().definition()
    news = _lemma_forms(new, "a")
    for synset in synsets:
        if synset.pos() != "s":
            continue
        for head in synset.similar_tos():
            for lemma in head.lemmas():
                for antonym in lemma.antonyms():
                    if antonym.name().lower() in news:
                        return synset.definition(), antonym.synset().definition()
    return None
