"""An antonym index of WordNet, built once per WordNet copy and kept in the transnli cache.

The antonym stage asks, for a word, about every synset the word has: which lemmas it has (and
their sense keys, for the tagged counts) and which antonyms each lemma has; for adjective
satellites, the antonyms of the heads they are similar to. nltk answers that by parsing each
synset's line of the data files on first use, which was most of the antonym stage's time on a
cold process (a few thousand new synsets per thousand sentences). Only synsets that have an
antonym, or are satellites of a head that has one, can contribute anything, and there are few
of them (about 7,400 and 8,000 of WordNet 3.0's 117,659), so they are collected once:

1. a raw scan of the four data files finds their offsets (a line with an antonym pointer "!";
   a satellite line whose similar-to pointer "&" leads to one of those), without parsing the rest;
2. nltk itself reads just those synsets, so names, sense keys and antonyms are exactly nltk's;
3. the result (a few MB) is pickled under the transnli cache dir, keyed by the WordNet files
   (path, size, modification time) and the nltk version, and loaded in milliseconds afterwards.

Lookups keep nltk's own word -> synset resolution (its morphy and its in-memory lemma index, in
the order `wn.synsets` uses), so a word's sense numbers are nltk's. `generator.wordnet` falls
back to plain nltk when the index cannot be built (a WordNet copy that is not a folder of the
standard files, an nltk without the internals used here).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import threading
from pathlib import Path
from typing import NamedTuple

from transnli.common.notice import announce

FORMAT = 2
DATA_FILES = {"n": "data.noun", "v": "data.verb", "a": "data.adj", "r": "data.adv"}


class SynsetEntry(NamedTuple):
    """What the antonym stage needs of one synset. `lemmas`: (name, sense key, antonyms) with
    antonyms as (name, WordNet POS with satellites folded into "a"), in database order;
    `head_antonyms`: for a satellite, the antonym names of the heads it is similar to."""

    pos: str  # the synset's own POS ("n", "v", "a", "s", "r")
    lemmas: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...]
    head_antonyms: tuple[str, ...] = ()


class AntonymIndex:
    """(POS letter as `wn.synsets` is queried with, offset) -> SynsetEntry, for the synsets that
    can contribute an antonym; plus nltk's word -> synset-offset resolution."""

    def __init__(self, wn, entries: dict[tuple[str, int], SynsetEntry]):
        self._wn = wn
        self.entries = entries
        self._offsets = wn._lemma_pos_offset_map  # nltk's in-memory index.* files
        self._morphy = wn._morphy

    def offsets(self, word: str, pos: str | None) -> list[tuple[str, int]]:
        """(POS, offset) of every synset `wn.synsets(word, pos)` returns, in the same order."""
        word = word.lower()
        out = []
        for p in ("n", "v", "a", "r") if pos is None else pos:
            for form in self._morphy(word, p, True):
                for offset in self._offsets.get(form, {}).get(p, ()):
                    out.append((p, offset))
        return out

    def has_synsets(self, word: str, pos: str) -> bool:
        word = word.lower()
        return any(self._offsets.get(form, {}).get(pos) for form in self._morphy(word, pos, True))


# -- building -------------------------------------------------------------------------------------
def _scan(path: Path, pos: str) -> tuple[set[int], dict[int, list[int]]]:
    """Offsets of the lines with an antonym pointer; for adjectives also each satellite's
    similar-to targets. Only the pointer part of a line (before the gloss) is looked at."""
    with_antonym: set[int] = set()
    satellites: dict[int, list[int]] = {}
    with open(path, "rb") as fh:
        for line in fh:
            if line[:1] == b" ":  # licence header
                continue
            head = line.split(b"|", 1)[0].split()
            offset = int(head[0])
            n_words = int(head[3], 16)
            i = 4 + 2 * n_words
            n_ptrs = int(head[i])
            i += 1
            similar = []
            for _ in range(n_ptrs):
                symbol, target, target_pos = head[i], head[i + 1], head[i + 2]
                i += 4
                if symbol == b"!":
                    with_antonym.add(offset)
                elif symbol == b"&" and target_pos in (b"a", b"s"):
                    similar.append(int(target))
            if pos == "a" and head[2] == b"s" and similar:
                satellites[offset] = similar
    return with_antonym, satellites


def fold_pos(pos: str) -> str:
    """A WordNet POS with adjective satellites ("s") folded into adjectives ("a")."""
    return "a" if pos == "s" else pos


def _entry(synset, head_antonyms: tuple[str, ...] = ()) -> SynsetEntry:
    return SynsetEntry(
        synset.pos(),
        tuple(
            (
                lemma.name(),
                lemma.key(),
                tuple((a.name(), fold_pos(a.synset().pos())) for a in lemma.antonyms()),
            )
            for lemma in synset.lemmas()
        ),
        head_antonyms,
    )


def build_entries(wn, root: Path) -> dict[tuple[str, int], SynsetEntry]:
    entries: dict[tuple[str, int], SynsetEntry] = {}
    satellites_by_pos = {}
    for pos, name in DATA_FILES.items():
        with_antonym, satellites = _scan(root / name, pos)
        satellites_by_pos[pos] = satellites
        for offset in sorted(with_antonym):
            entries[(pos, offset)] = _entry(wn.synset_from_pos_and_offset(pos, offset))
    for offset, heads in sorted(satellites_by_pos["a"].items()):
        names = []
        for head_offset in heads:
            entry = entries.get(("a", head_offset))
            if entry is None:
                continue
            if entry.pos != "a":  # similar_tos() of a satellite: keep head adjectives only
                continue
            names.extend(ant for _, _, ants in entry.lemmas for ant, _ in ants)
        if names:
            synset = wn.synset_from_pos_and_offset("a", offset)
            # The order of similar_tos() is the order of the "&" pointers, as scanned.
            entries[("a", offset)] = _entry(synset, tuple(names))
    return entries


def _fingerprint(wn, root: Path) -> str:
    import nltk

    h = hashlib.sha256(f"{FORMAT}|{nltk.__version__}|{wn.get_version()}|{root.resolve()}".encode())
    for name in (*DATA_FILES.values(), *(f"index.{n[5:]}" for n in DATA_FILES.values())):
        st = (root / name).stat()
        h.update(f"|{name}:{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def _root(wn) -> Path | None:
    root = getattr(wn, "root", None)
    path = getattr(root, "path", None)
    if not path:
        return None
    path = Path(path)
    return path if all((path / n).is_file() for n in DATA_FILES.values()) else None


_LOCK = threading.Lock()
# by id(reader), beside the reader itself: holding it keeps its id from being reused by a later
# reader (of another WordNet) that would then be given this one's index
_INDEX: dict[int, tuple[object, AntonymIndex | None]] = {}


def antonym_index(wn, cache_folder: Path | None = None) -> AntonymIndex | None:
    """The index for this WordNet reader (built or loaded on first call; None when it cannot be:
    then use nltk directly)."""
    key = id(wn)
    with _LOCK:
        if key in _INDEX and _INDEX[key][0] is wn:
            return _INDEX[key][1]
        index = None
        try:
            index = _load_or_build(wn, cache_folder)
        except Exception:  # noqa: BLE001 - any surprise in a WordNet copy: plain nltk still works
            index = None
        _INDEX[key] = (wn, index)
        return index


def _load_or_build(wn, cache_folder: Path | None) -> AntonymIndex | None:
    if not all(
        hasattr(wn, a) for a in ("_lemma_pos_offset_map", "_morphy", "synset_from_pos_and_offset")
    ):
        return None
    wn.ensure_loaded()
    root = _root(wn)
    if root is None:
        return None
    if cache_folder is None:
        from transnli.resources.provision import cache_dir

        cache_folder = cache_dir() / "wordnet"
    path = Path(cache_folder) / f"antonym-index-{_fingerprint(wn, root)}.pickle"
    entries = None
    if path.is_file():
        try:
            with open(path, "rb") as fh:
                entries = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ValueError):
            entries = None
    if entries is None:
        announce("building WordNet's antonym index in transnli's cache, once", "10-45 s")
        entries = build_entries(wn, root)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{os.getpid()}.partial")
            with open(tmp, "wb") as fh:
                pickle.dump(entries, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only cache: the index still works for this process
    return AntonymIndex(wn, entries)
