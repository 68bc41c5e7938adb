"""The learned quality scorer (generator/filters/quality_model.py,
generator/filters/quality_features.py, benchmarks/train_quality_model.py): deterministic training,
numpy scoring equal to scikit-learn's, the filter stage's threshold, the shipped model's provenance,
config and CLI."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
from transnli.generator.config import ConfigError, resolve_config
from transnli.generator.filters.quality_features import FEATURE_NAMES
from transnli.generator.filters.quality_model import (
    MODEL_FORMAT,
    QualityModel,
    QualityModelError,
    QualityModelFilter,
    load_model,
)

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

sklearn = pytest.importorskip("sklearn")
import quality_dataset  # noqa: E402
import train_quality_model as tqm  # noqa: E402


def synthetic_dataset(seed=0, n=300):
    """A dataset with the real feature names and a label that depends on two of the features."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(FEATURE_NAMES)))
    y = (X[:, 0] - 0.5 * X[:, 3] + rng.normal(scale=0.5, size=n) > 0).astype(int)
    return quality_dataset.Dataset(
        names=FEATURE_NAMES,
        X=X,
        y=y,
        groups=np.arange(n) // 3,
        default_accepted=np.arange(n) % 2 == 0,
        keys=[str(i) for i in range(n)],
        missing=0,
        data_sha256="0" * 64,
    )


def test_training_is_deterministic_byte_for_byte():
    ds = synthetic_dataset()
    a = json.dumps(tqm.model_dict(ds, tqm.fit(ds.X, ds.y), None), indent=1, sort_keys=True)
    b = json.dumps(
        tqm.model_dict(ds, tqm.fit(ds.X.copy(), ds.y.copy()), None), indent=1, sort_keys=True
    )
    assert a == b
    other = synthetic_dataset(seed=1)
    assert a != json.dumps(
        tqm.model_dict(other, tqm.fit(other.X, other.y), None), indent=1, sort_keys=True
    )


def test_numpy_scores_equal_sklearn_probabilities():
    ds = synthetic_dataset()
    model = tqm.fit(ds.X, ds.y)
    loaded = QualityModel.from_dict(json.loads(json.dumps(tqm.model_dict(ds, model, None))))
    np.testing.assert_allclose(
        loaded.scores(ds.X), model.predict_proba(ds.X)[:, 1], rtol=0, atol=1e-7
    )
    assert loaded.meta["training"]["sklearn_version"] == sklearn.__version__


def test_cross_validation_holds_sentences_out_and_reports_a_curve():
    ds = synthetic_dataset()
    cv = tqm.cross_validate(ds, folds=3, seeds=2)
    assert cv["population"]["accepted"] == int(ds.default_accepted.sum())
    first = cv["curve"][0]
    assert first["threshold"] == 0.0 and first["recall"] == 1.0
    # The synthetic label is learnable: held-out AUC well above chance, precision rises with t.
    assert cv["auc"] > 0.8
    assert cv["curve"][5]["precision"] > first["precision"]
    from sklearn.model_selection import GroupKFold

    for train, test in GroupKFold(3, shuffle=True, random_state=0).split(ds.X, ds.y, ds.groups):
        assert not set(ds.groups[train]) & set(ds.groups[test])


def test_shipped_model_matches_features_and_data():
    model = load_model()
    assert set(model.feature_names) <= set(FEATURE_NAMES)
    # Retrain (benchmarks/train_quality_model.py) whenever the judged data changes.
    assert model.meta["training"]["data_sha256"] == quality_dataset.sha256_of(
        quality_dataset.JUDGEMENTS, quality_dataset.SENTENCES
    )
    assert model.meta["cv"]["curve"][0]["precision"] == pytest.approx(0.6139, abs=1e-3)


def test_bad_model_files_name_file_and_field(tmp_path):
    p = tmp_path / "m.json"
    p.write_text("{not json")
    with pytest.raises(QualityModelError, match=r"m.json: line 1"):
        load_model(str(p))
    base = {
        "format": MODEL_FORMAT,
        "feature_names": ["pos=ADJ"],
        "mean": [0.0],
        "scale": [1.0],
        "coef": [1.0],
        "intercept": 0.0,
    }
    with pytest.raises(QualityModelError, match="field 'coef'"):
        QualityModel.from_dict({**base, "coef": [1.0, 2.0]}, "x.json")
    with pytest.raises(QualityModelError, match="field 'format'"):
        QualityModel.from_dict({**base, "format": "other"}, "x.json")
    with pytest.raises(QualityModelError, match="no such"):
        load_model(str(tmp_path / "missing.json"))


class TinyVectors:
    """Stands in for LoadedVectors: three words with 2-d unit vectors."""

    lowercase = True
    version = "tiny"

    def __init__(self):
        from gensim.models import KeyedVectors

        kv = KeyedVectors(2)
        kv.add_vectors(["small", "large", "house"], np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]]))
        self.kv = kv


def _items():
    from transnli.generator.filters import FilterItem
    from transnli.generator.tagging import TaggedSentence, Token

    toks = (
        Token(0, "a", 0, " ", "DET", "DT", "a", "det", 2),
        Token(1, "small", 2, " ", "ADJ", "JJ", "small", "amod", 2),
        Token(2, "house", 8, "", "NOUN", "NN", "house", "ROOT", 2),
    )
    sent = TaggedSentence("a small house", toks)
    adj = FilterItem(
        sent, toks[1], "large", "a", "a large house", ({"antonym": "large", "score": 0.8},)
    )
    noun = FilterItem(sent, toks[2], "home", "n", "a small home")
    return adj, noun


@pytest.mark.slow
def test_filter_rejects_and_accepts_by_threshold():
    from transnli.generator.vectors import AntonymRanker

    # P(good) = sigmoid(2 * [pos=ADJ] - 1): 0.731 for the adjective, 0.269 for the noun.
    model = QualityModel.from_dict(
        {
            "format": MODEL_FORMAT,
            "feature_names": ["pos=ADJ"],
            "mean": [0.0],
            "scale": [1.0],
            "coef": [2.0],
            "intercept": -1.0,
        }
    )
    ranker = AntonymRanker(TinyVectors())
    adj, noun = _items()
    v = QualityModelFilter(ranker, model, threshold=0.5).judge_many([adj, noun])
    assert [x.passed for x in v] == [True, False]
    assert v[0].to_dict()["score"] == pytest.approx(0.7311, abs=1e-4)
    assert v[1].to_dict() == {
        "backend": "rules",
        "passed": False,
        "reason": "quality score 0.269 below 0.5",
        "score": 0.2689,
        "threshold": 0.5,
    }
    assert [
        x.passed for x in QualityModelFilter(ranker, model, threshold=0.2).judge_many([adj, noun])
    ] == [True, True]
    assert [
        x.passed for x in QualityModelFilter(ranker, model, threshold=0.8).judge_many([adj, noun])
    ] == [False, False]
    # The shipped model scores the same items in (0, 1), the same way twice.
    shipped = QualityModelFilter(ranker, threshold=0.3)
    s1, s2 = shipped.score_many([adj, noun]), shipped.score_many([adj, noun])
    assert np.all((s1 > 0) & (s1 < 1)) and np.array_equal(s1, s2)


@pytest.mark.slow
def test_features_of_a_candidate():
    from transnli.generator.filters.quality_features import QualityFeatures
    from transnli.generator.vectors import AntonymRanker

    adj, _ = _items()
    f = QualityFeatures(AntonymRanker(TinyVectors())).features(adj, adj.ranked)
    assert f["pos=ADJ"] == 1.0 and f["dep=amod"] == 1.0 and f["head_pos=NOUN"] == 1.0
    assert f["antonym_own_lemma"] == 1.0  # small <-> large is a direct WordNet pair
    assert f["cos_word_antonym"] == pytest.approx(0.0)
    assert f["cos_antonym_head"] == pytest.approx(0.8)
    assert set(f) <= set(FEATURE_NAMES)


def test_config_threshold_and_filter_name():
    cfg = resolve_config("default", filters="+quality_model", quality_threshold=0.4)
    assert cfg.filters[-1] == "quality_model" and cfg.quality_threshold == 0.4
    with pytest.raises(ConfigError, match="quality_threshold"):
        resolve_config("default", quality_threshold=1.5)
    assert "quality_model" not in resolve_config("paper").filters


def test_cli_options_reach_the_config():
    from click.testing import CliRunner

    from transnli.cli.generate import generate

    assert {"quality_threshold", "quality_model"} <= {p.name for p in generate.params}
    result = CliRunner().invoke(generate, ["in.jsonl", "--out", "o", "--quality-threshold", "2"])
    assert result.exit_code == 2 and "--quality-threshold" in result.output


def test_a_bad_model_file_is_a_configuration_error(tmp_path):
    p = tmp_path / "model.json"
    p.write_text(
        json.dumps(
            {
                "format": MODEL_FORMAT,
                "feature_names": ["no_such_feature"],
                "mean": [0.0],
                "scale": [1.0],
                "coef": [1.0],
                "intercept": 0.0,
            }
        )
    )
    with pytest.raises(
        ConfigError, match=r"quality_model: .*model.json: field 'feature_names'.*no_such_feature"
    ):
        resolve_config("default", filters="+quality_model", quality_model=str(p))
    with pytest.raises(ConfigError, match="no such quality model file"):
        resolve_config(
            "default", filters="+quality_model", quality_model=str(tmp_path / "none.json")
        )
    # Without the filter the file is not read.
    assert resolve_config("default", quality_model=str(tmp_path / "none.json")).quality_model


@pytest.mark.slow
def test_pipeline_records_the_score_and_counts_rejections():
    from transnli.generator.build import build_pipeline
    from transnli.generator.readers import NLIPair

    texts = [
        "The old man walked slowly to the small house",
        "She was happy to find the right answer",
        "He made a strong case for the new law",
        "The water was cold and deep",
    ]
    pairs = [NLIPair(str(i), "p", t, None, "test", "", i + 1) for i, t in enumerate(texts)]
    pipe = build_pipeline(
        resolve_config(
            "default",
            filters="+quality_model",
            quality_threshold=0.5,
            grammar="none",
            acceptability="none",
        )
    )
    result = pipe.process(pairs)
    scored = [r for r in result.accepted + result.rejected if "quality_model" in r.checks]
    assert scored, "no candidate reached the quality_model stage"
    for r in scored:
        q = r.checks["quality_model"]
        assert 0 < q["score"] < 1 and q["threshold"] == 0.5
        assert q["passed"] == (q["score"] >= 0.5)
        assert (r.rejected_by == "quality_model") == (not q["passed"])
    stats = pipe.stats.to_dict()
    assert stats["rejected_filters"].get("quality_model", 0) == sum(
        not r.checks["quality_model"]["passed"] for r in scored
    )
