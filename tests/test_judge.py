"""The trained judge (transnli.generator.judge, the `judge` acceptability check): its file is
validated field by field, its probability is the linear function the file describes over the
language model's own reading of (H, H'), the check keeps that probability on every record, ranks
by it, refuses a judge made for another model, and a run's card states the estimated precision.
A tiny random causal LM built here reads; the judge files are written here for it."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from tiny_lm import build_tiny_causal_lm, tiny_judge, write_pairs
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import LMSettings
from transnli.generator.checks.base import BackendUnavailable
from transnli.generator.checks.judge_acceptability import JudgeAcceptability
from transnli.generator.judge import (
    SCALARS,
    VECTORS,
    Judge,
    JudgeError,
    scalar_features,
    vector_features,
)

from transnli.cli import main

PAIRS = [
    ("the soup is hot .", "the soup is cold ."),
    ("a big dog runs .", "a small dog runs ."),
    ("he changed his mind .", "he stayed his mind ."),
    ("the dog walks , he runs .", "the dog runs , he runs ."),
]


judge_dict = tiny_judge


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"), max_positions=64)


@pytest.fixture()
def judge_file(tmp_path):
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(judge_dict()), encoding="utf-8")
    return path


def scorer(folder, cache, **kw):
    return CausalLMScorer.load(LMSettings(spec=str(folder), cache_dir=cache, device="cpu", **kw))


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"format": "other"}, "'format'"),
        ({"layer": "6"}, "'layer'"),
        ({"scalars": ["d", "charisma"]}, "charisma"),
        ({"scalar_scale": [0.0] * len(SCALARS)}, "'scalar_scale'"),
        ({"scalar_coef": [1.0]}, "'scalar_coef'"),
        ({"vector_coef": {"span_modified": [0.1] * 3}}, "vector_coef.span_modified"),
        ({"vector_coef": {"elsewhere": [0.1] * 16}}, "elsewhere"),
        ({"calibration": {"a": "x"}}, "'calibration.a'"),
        ({"intercept": True}, "'intercept'"),
        # issue 38's faults: non-finite weights, wrong types, a cut or a layer out of range
        ({"vector_coef": {"span_modified": [float("nan")] * 16}}, "vector_coef.span_modified"),
        ({"vector_coef": {"span_modified": ["0.1"] * 16}}, "vector_coef.span_modified"),
        ({"intercept": float("nan")}, "'intercept'"),
        ({"intercept": float("inf")}, "'intercept'"),
        ({"calibration": {"a": float("nan"), "b": 0.0}}, "'calibration.a'"),
        ({"calibration": {"a": float("inf"), "b": 0.0}}, "'calibration.a'"),
        ({"calibration": {"a": 0.8, "b": float("-inf")}}, "'calibration.b'"),
        ({"calibration": {"a": -0.8, "b": 0.0}}, "'calibration.a'"),
        ({"calibration": {"b": 0.0}}, "'calibration.a'"),
        ({"scalar_mean": [float("nan")] * len(SCALARS)}, "'scalar_mean'"),
        ({"scalar_coef": [True] * len(SCALARS)}, "'scalar_coef'"),
        ({"threshold": 2.0}, "'threshold'"),
        ({"threshold": -1}, "'threshold'"),
        ({"threshold": 0.0}, "'threshold'"),
        ({"threshold": "abc"}, "'threshold'"),
        ({"threshold": float("nan")}, "'threshold'"),
        ({"layer": -1}, "'layer'"),
        ({"width": 0}, "'width'"),
        ({"training_prior": 1.5}, "'training_prior'"),
        ({"training_prior": "0.5"}, "'training_prior'"),
        ({"scalars": ["d", "d"]}, "'scalars'"),
    ],
)
def test_a_bad_judge_file_is_refused_naming_the_field(change, field):
    with pytest.raises(JudgeError, match=field) as err:
        Judge.from_dict(judge_dict(**change), "judge.json")
    assert str(err.value).startswith("judge.json: field ") and "\n" not in str(err.value)


def test_an_old_judge_file_without_a_training_prior_is_read_with_none():
    doc = judge_dict()
    doc.pop("threshold")
    judge = Judge.from_dict(doc)
    assert judge.training_prior is None and judge.threshold is None
    assert Judge.from_dict(judge_dict(training_prior=0.52)).training_prior == 0.52


@pytest.mark.parametrize(
    "change",
    [
        {"vector_coef": {"span_modified": [float("nan")] * 16}},
        {"calibration": {"a": float("inf"), "b": 0.0}},
        {"threshold": 2.0},
        {"threshold": "abc"},
        {"layer": -1},
        {"vector_coef": {"span_modified": ["x"] * 16}},
    ],
)
def test_generate_refuses_a_damaged_judge_file_in_one_line_before_writing(
    change, tiny_lm_dir, tmp_path, monkeypatch
):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "judge.json"
    # json.dumps writes NaN and Infinity as Python's json reads them (what a damaged file holds)
    path.write_text(json.dumps(judge_dict(**change)), encoding="utf-8")
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"premise": "p", "hypothesis": "the soup is hot ."}) + "\n")
    out = tmp_path / "run"
    args = [
        "generate", str(pairs), "--out", str(out), "--preset", "default", "--grammar", "none",
        "--filters", "none", "--acceptability", "judge", "--lm", str(tiny_lm_dir),
        "--judge-model", str(path), "--device", "cpu", "--quiet",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code != 0
    assert "Traceback" not in result.output and str(path) in result.output, result.output
    assert "field" in result.output and not out.exists()


def test_a_non_finite_reading_is_refused_not_rejected_quietly(tiny_lm_dir, tmp_path):
    from transnli.generator.errors import ResourceError

    class Broken(Judge):
        def raw_scores(self, readings):
            return np.full(len(readings), np.nan)

    judge = Judge.from_dict(judge_dict())
    broken = Broken(**{k: getattr(judge, k) for k in judge.__dataclass_fields__})
    check = JudgeAcceptability(scorer(tiny_lm_dir, tmp_path, use_cache=False), broken)
    with pytest.raises(ResourceError, match="not a number for 4 of 4 candidates"):
        check.check_many([h for h, _ in PAIRS], [h2 for _, h2 in PAIRS])
    check.close()


def test_the_probability_is_the_calibrated_linear_function_of_the_reading(tiny_lm_dir, tmp_path):
    doc = judge_dict()
    judge = Judge.from_dict(doc)
    lm = scorer(tiny_lm_dir, tmp_path, use_cache=False)
    readings = lm.read_pairs(PAIRS, (judge.layer,))
    got = judge.probabilities(readings)
    for reading, p in zip(readings, got, strict=True):
        x = np.array(scalar_features(reading))
        z = float(((x - doc["scalar_mean"]) / doc["scalar_scale"]) @ doc["scalar_coef"])
        z += float(
            vector_features(reading, 1)["span_modified"] @ doc["vector_coef"]["span_modified"]
        )
        z += doc["intercept"]
        expected = 1 / (1 + math.exp(-(0.8 * z - 0.2)))
        assert p == pytest.approx(expected, abs=1e-4)
        assert reading.score.delta == pytest.approx(x[SCALARS.index("d")], abs=1e-3)
    assert set(VECTORS) >= set(doc["vector_coef"])
    assert len(set(got)) > 1  # different pairs, different probabilities


def test_the_check_keeps_the_probability_on_every_record_whatever_the_batch(tiny_lm_dir, tmp_path):
    judge = Judge.from_dict(judge_dict())
    results = []
    for size in (1, 3):
        check = JudgeAcceptability(
            scorer(tiny_lm_dir, tmp_path / str(size), batch_size=size), judge, threshold=0.5
        )
        results.append(check.check_many([h for h, _ in PAIRS], [h2 for _, h2 in PAIRS]))
        assert check.rank_scores(PAIRS) == [r.details["p_good"] for r in results[-1]]
        check.close()
    assert [r.to_dict() for r in results[0]] == [r.to_dict() for r in results[1]]
    for r in results[0]:
        assert r.backend == "judge"
        assert r.passed == (r.details["p_good"] >= 0.5)
        assert set(r.details) >= {"p_good", "threshold", "d", "logp_original", "from_token"}
        assert r.passed or "p(good)" in r.reason


def test_a_judge_made_for_another_model_is_refused_in_one_line(tiny_lm_dir, tmp_path):
    path = tmp_path / "gemma-judge.json"
    path.write_text(json.dumps(judge_dict(width=640, layer=6)), encoding="utf-8")
    with pytest.raises(BackendUnavailable, match="width 640 at layer 6") as err:
        JudgeAcceptability.from_options(lm=str(tiny_lm_dir), judge_model=str(path), device="cpu")
    assert "\n" not in str(err.value)


def test_a_generation_with_the_judge_records_it_and_the_card_states_the_estimate(
    tiny_lm_dir, judge_file, tmp_path, monkeypatch
):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "cache"))
    pairs = write_pairs(tmp_path / "pairs.jsonl")
    out = tmp_path / "run"
    args = [
        "generate", str(pairs), "--out", str(out), "--preset", "default", "--grammar", "none",
        "--filters", "none", "--acceptability", "judge", "--lm", str(tiny_lm_dir),
        "--judge-model", str(judge_file), "--judge-threshold", "0.0", "--device", "cpu", "--quiet",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    triples = [json.loads(x) for x in (out / "triples.jsonl").read_text().splitlines()]
    assert triples
    probs = [t["checks"]["acceptability"]["p_good"] for t in triples]
    assert all(t["checks"]["acceptability"]["backend"] == "judge" for t in triples)
    config = json.loads((out / "config.json").read_text())
    assert "judge" in json.dumps(config["resources"]["checks"]["acceptability"])
    result = CliRunner().invoke(main, ["export", str(out), "--to", "card"])
    assert result.exit_code == 0, result.output
    card = (out / "hub" / "README.md").read_text()
    assert f"**Estimated precision: {sum(probs) / len(probs):.3f}**" in card
    assert "kept 40 candidates at its threshold 0.5, of which 0.750 were judged good" in card
    # the same command reuses the finished run; with another judge file it must not
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0 and "reus" in again.output.lower(), again.output
    judge_file.write_text(json.dumps(judge_dict(seed=1)), encoding="utf-8")
    changed = CliRunner().invoke(main, args)
    assert changed.exit_code != 0 and "--overwrite" in changed.output, changed.output


def test_judge_settings_without_the_judge_check_are_refused():
    from transnli.generator.config import resolve_config
    from transnli.generator.errors import ConfigError

    with pytest.raises(ConfigError, match="judge_threshold given, but nothing uses it"):
        resolve_config("fast", judge_threshold=0.7)
    with pytest.raises(ConfigError, match="judge_model"):
        resolve_config("default", acceptability="lm", judge_model="j.json")


def test_the_sentence_limit_ranks_by_the_judges_probability(tiny_lm_dir, judge_file, tmp_path):
    from transnli.generator.build import build_pipeline
    from transnli.generator.config import resolve_config
    from transnli.generator.readers import NLIPair

    config = resolve_config(
        "default", acceptability="judge", lm=str(tiny_lm_dir), judge_model=str(judge_file),
        judge_threshold=0.0, grammar="none", filters="none", device="cpu", max_per_sentence=1,
    )  # fmt: skip
    pipeline = build_pipeline(config)
    sentence = "the big dog is hot , he changed his mind ."
    result = pipeline.process([NLIPair("0", "p", sentence, None, "t", "", 1)])
    every = result.accepted + [r for r in result.rejected if r.rejected_by == "max_per_sentence"]
    assert len(result.accepted) == 1 and len(every) > 1
    best = max(every, key=lambda r: r.checks["acceptability"]["p_good"])
    assert result.accepted[0].modified_hypothesis == best.modified_hypothesis
    entry = result.accepted[0].checks["max_per_sentence"]
    assert entry["backend"] == "judge" and entry["rank"] == 1 and "p_good" in entry


def test_the_trained_pipeline_collapses_to_the_shipped_linear_function():
    """benchmarks/train_judge.py fits PCA + scaling + logistic regression, and ships it as one
    weight vector per block: the collapsed function must give the fitted model's own scores."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from train_judge import Config, collapse, fit, linear_scores

    rng = np.random.default_rng(1)
    n = 120
    data = {
        "scalars": rng.normal(size=(n, len(SCALARS))),
        "L3_span_modified": rng.normal(size=(n, 12)).astype(np.float32),
        "y": rng.integers(0, 2, n),
    }
    cfg = Config(3, 4, 0.5, ("span_modified",))
    rows = np.arange(n)
    pcas, scaler, logreg = fit(data, rows, cfg)
    model = collapse(pcas, scaler, logreg, cfg, len(SCALARS))
    X = np.hstack([data["scalars"], pcas["span_modified"].transform(data["L3_span_modified"])])
    expected = logreg.decision_function(scaler.transform(X))
    assert linear_scores(model, data, rows, cfg) == pytest.approx(expected, abs=1e-8)
