import numpy as np
import pytest
from gensim.models import KeyedVectors
from transnli.generator.vectors import AntonymRanker, LoadedVectors, load_vectors


@pytest.fixture
def small_kv():
    # Two clear directions: a "weather" axis and an "emotion" axis.
    words = {
        "sunny": [1.0, 0.0, 0.0],
        "rain": [0.9, 0.1, 0.0],
        "cloudy": [0.95, 0.0, 0.05],
        "sad": [0.0, 1.0, 0.0],
        "child": [0.1, 0.9, 0.1],
        "cried": [0.0, 0.95, 0.1],
        "fall": [0.5, 0.5, 0.0],
        "asleep": [0.0, 0.0, 1.0],
    }
    kv = KeyedVectors(vector_size=3)
    kv.add_vectors(list(words), np.array(list(words.values()), dtype=np.float32))
    return kv


def ranker(kv, lowercase=True):
    return AntonymRanker(LoadedVectors(kv, "test", "test-1", lowercase))


def test_rank_prefers_antonym_closest_to_context(small_kv):
    ranked = ranker(small_kv).rank(["sad", "sunny"], ["The", "rain", "was", "cloudy"])
    assert [r.antonym for r in ranked] == ["sunny", "sad"]
    ranked = ranker(small_kv).rank(["sunny", "sad"], ["The", "child", "cried"])
    assert [r.antonym for r in ranked] == ["sad", "sunny"]
    assert ranked[0].score > ranked[1].score


def test_antonym_without_vector_ranked_last_and_marked(small_kv):
    ranked = ranker(small_kv).rank(["zzzunknown", "sunny"], ["rain"])
    assert ranked[-1].antonym == "zzzunknown" and ranked[-1].score is None
    assert ranked[-1].to_dict() == {"antonym": "zzzunknown", "score": None}


def test_multiword_antonym_uses_mean_of_its_words(small_kv):
    r = ranker(small_kv)
    ranked = r.rank(["fall asleep"], ["cried"])
    expected = np.mean([small_kv["fall"], small_kv["asleep"]], axis=0)
    expected = expected / np.linalg.norm(expected)
    ctx = small_kv["cried"] / np.linalg.norm(small_kv["cried"])
    assert ranked[0].score == pytest.approx(float(expected @ ctx), abs=1e-6)


def test_ties_and_missing_context_keep_input_order(small_kv):
    ranked = ranker(small_kv).rank(["sad", "sunny"], ["qqq"])  # no context vector at all
    assert [r.antonym for r in ranked] == ["sad", "sunny"]
    assert all(r.score is None for r in ranked)


def test_lowercasing_for_lowercased_vectors(small_kv):
    ranked = ranker(small_kv).rank(["Sunny"], ["RAIN"])
    assert ranked[0].score == pytest.approx(1.0 * 0.9 / np.linalg.norm([0.9, 0.1, 0.0]), abs=1e-6)


def test_load_vectors_from_text_and_binary_files(tmp_path, small_kv):
    glove = tmp_path / "tiny.glove.txt"  # GloVe text: no header line
    glove.write_text("sunny 1 0 0\nsad 0 1 0\n")
    lv = load_vectors(glove)
    assert lv.kv["sad"].tolist() == [0, 1, 0] and lv.lowercase
    w2v = tmp_path / "tiny.bin"
    small_kv.save_word2vec_format(str(w2v), binary=True)
    assert set(load_vectors(w2v).kv.index_to_key) == set(small_kv.index_to_key)
    with pytest.raises(FileNotFoundError, match="--vectors"):
        load_vectors(tmp_path / "missing.bin")
