"""Slow one-time work is announced before it starts (issue 38: a first run spent 15 s on the word
vectors and 30-45 s on WordNet's antonym index without a word): one line each on the logger
transnli.notice, which the command line prints (tests/test_lm_files.py and
tests/test_lm_acceptability.py cover the language model's conversion and load)."""

from __future__ import annotations

import logging

import numpy as np
import pytest
from transnli.generator import vectors, wordnet_index

NOTICE = "transnli.notice"


def notices(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == NOTICE]


def test_preparing_the_word_vectors_is_announced_once(tmp_path, monkeypatch, caplog):
    from gensim.models import KeyedVectors

    target = tmp_path / "glove.kv"

    def prepare(path):  # the real one converts 400,000 vectors (about 15 s)
        kv = KeyedVectors(vector_size=3)
        kv.add_vectors(["good", "bad"], np.eye(2, 3, dtype=np.float32))
        kv.save(str(path))
        return path

    monkeypatch.setattr(vectors, "default_glove_path", lambda: target)
    monkeypatch.setattr(vectors, "prepare_glove", prepare)
    with caplog.at_level(logging.INFO, logger=NOTICE):
        vectors.load_vectors()
        assert notices(caplog) == [
            "preparing the word vectors (glove-6B-50d) in transnli's cache, once (about 5-15 s) ..."
        ]
        caplog.clear()
        vectors.load_vectors()
    assert notices(caplog) == []


@pytest.mark.filterwarnings("ignore:The multilingual functions")  # a reader without OMW: fine here
def test_building_the_antonym_index_is_announced_once(tmp_path, monkeypatch, caplog):
    from nltk.corpus.reader.wordnet import WordNetCorpusReader
    from transnli.generator.wordnet import load_wordnet

    root = load_wordnet().root
    monkeypatch.setattr(wordnet_index, "build_entries", lambda wn, root: {})  # 30-45 s for real
    # Two fresh readers (the index is remembered per reader), without nltk's version map, which
    # the index never reads and which is most of a reader's load (load_wordnet defers it too).
    monkeypatch.setattr(WordNetCorpusReader, "map_wn", lambda self, version="wordnet": {})
    first, second = WordNetCorpusReader(root, None), WordNetCorpusReader(root, None)
    with caplog.at_level(logging.INFO, logger=NOTICE):
        assert wordnet_index.antonym_index(first, tmp_path) is not None
        assert notices(caplog) == [
            "building WordNet's antonym index in transnli's cache, once (about 10-45 s) ..."
        ]
        caplog.clear()
        assert wordnet_index.antonym_index(second, tmp_path) is not None
    assert notices(caplog) == []  # read from the cache folder


def test_building_wordnet_for_nltk_is_announced_only_where_it_can_be_built(monkeypatch, caplog):
    from transnli.generator.wordnet import provide_wordnet
    from transnli.resources import provision

    built = []
    monkeypatch.setattr(provision, "nltk_wordnet_available", lambda: False)
    monkeypatch.setattr(provision, "build_wordnet", lambda: built.append(1))
    monkeypatch.setattr(provision, "wordnet_missing_files", lambda source=None: [])
    with caplog.at_level(logging.INFO, logger=NOTICE):
        provide_wordnet()
        assert notices(caplog) == [
            "building WordNet for nltk from the system's database, once (about a few seconds) ..."
        ]
        caplog.clear()
        monkeypatch.setattr(provision, "wordnet_missing_files", lambda source=None: ["data.noun"])
        provide_wordnet()  # the build refuses in one line (here: the stand-in builds nothing)
    assert notices(caplog) == [] and len(built) == 2
