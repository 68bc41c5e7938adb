"""`transnli review --order uncertain`: least certain first, by |score - threshold| of whatever
check scored the run. Each check that records a score is run for real here (the judge, the pair
judge and the lm check on a tiny random language model, CoLA on a tiny BERT), its results put on
records as the generator puts them, and the order read back from a run folder; the quality
scorer's entry is built by hand, as its filter writes it."""

from __future__ import annotations

import json
import random
import statistics

import pytest
from test_export import make_run, record
from tiny_lm import build_tiny_causal_lm, tiny_judge
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import LMSettings
from transnli.generator.checks.acceptability import ColaAcceptability
from transnli.generator.checks.judge_acceptability import JudgeAcceptability
from transnli.generator.checks.lm_acceptability import LMAcceptability
from transnli.generator.checks.pair_judge_acceptability import PairJudgeAcceptability
from transnli.generator.judge import Judge
from transnli.review.index import LineIndex
from transnli.review.session import SessionSettings, review_order
from transnli.review.uncertainty import SCORED, uncertainty

PAIRS = [
    ("the soup is hot .", "the soup is cold ."),
    ("a big dog runs .", "a small dog runs ."),
    ("he changed his mind .", "he stayed his mind ."),
    ("the dog walks , he runs .", "the dog runs , he runs ."),
    ("the soup is warm .", "the soup is cold ."),
    ("a small dog walks .", "a big dog walks ."),
    ("the big dog is hot .", "the small dog is hot ."),
    ("he runs , the dog walks .", "he walks , the dog walks ."),
]


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"), max_positions=64)


def scorer(folder, cache):
    return CausalLMScorer.load(LMSettings(spec=str(folder), cache_dir=cache, device="cpu"))


def run_order(tmp_path, results, check="acceptability"):
    """The uncertain order of a run whose record i carries results[i] as checks[check]."""
    recs = []
    for i, result in enumerate(results):
        rec = record(i)
        rec.checks = {**rec.checks, check: result}
        recs.append(rec)
    run = make_run(tmp_path / "run", recs, [])
    # what the generator wrote is what the review reads
    lines = (run / "triples.jsonl").read_text().splitlines()
    assert [json.loads(line)["checks"][check] for line in lines] == results
    return review_order(LineIndex(run / "triples.jsonl"), SessionSettings(order="uncertain"))


def assert_ordered_by(order, results, field):
    """The order runs from the score nearest the threshold to the farthest (ties in any order),
    and is not the seeded order that unscored triples keep."""
    distance = [abs(r[field] - r["threshold"]) for r in results]
    assert sorted(order) == list(range(len(results)))
    assert [distance[i] for i in order] == sorted(distance)
    assert len(set(distance)) >= 4  # a threshold inside the scores: the test can tell orders apart
    assert order != random.Random(0).sample(range(len(order)), len(order))


def test_the_judge_orders_by_p_good_nearest_its_threshold(tiny_lm_dir, tmp_path):
    judge = Judge.from_dict(tiny_judge())
    probe = JudgeAcceptability(scorer(tiny_lm_dir, tmp_path / "c0"), judge)
    middle = statistics.median(probe.rank_scores(PAIRS))
    probe.close()
    check = JudgeAcceptability(scorer(tiny_lm_dir, tmp_path / "c1"), judge, threshold=middle)
    results = [r.to_dict() for r in check.check_many(*zip(*PAIRS, strict=True))]
    check.close()
    assert {r["backend"] for r in results} == {"judge"}
    assert_ordered_by(run_order(tmp_path, results), results, "p_good")


def test_the_lm_check_orders_by_d_nearest_its_threshold(tiny_lm_dir, tmp_path):
    probe = LMAcceptability(scorer(tiny_lm_dir, tmp_path / "c0"))
    middle = statistics.median(probe.rank_scores(PAIRS))
    probe.close()
    check = LMAcceptability(scorer(tiny_lm_dir, tmp_path / "c1"), threshold=middle)
    results = [r.to_dict() for r in check.check_many(*zip(*PAIRS, strict=True))]
    check.close()
    assert {r["backend"] for r in results} == {"lm"}
    assert_ordered_by(run_order(tmp_path, results), results, "d")


def test_the_pair_judge_orders_by_p_good_nearest_its_threshold(tmp_path):
    pytest.importorskip("peft")
    from tiny_lm import WORDS
    from transnli.generator.pair_judge import (
        TEMPLATE,
        PairJudgeTraining,
        load_pair_judge,
        new_pair_judge,
        pair_prompt,
        save_pair_judge,
        train_pair_judge,
    )

    words = [*WORDS, "original", ":", "[", "]", "word", "was", "replaced", "by"]
    lm = build_tiny_causal_lm(tmp_path / "lm", max_positions=64, words=words)
    training = PairJudgeTraining(epochs=2, batch_size=4, head_learning_rate=2e-2, max_tokens=48)
    model = new_pair_judge(lm, training)
    train_pair_judge(model, [pair_prompt(h, m) for h, m in PAIRS], [1, 0] * 4, training)
    meta = {"template": TEMPLATE, "max_tokens": 48, "calibration": {"a": 1.0, "b": 0.0}}
    folder = save_pair_judge(tmp_path / "pair", model, {**meta, "threshold": 0.5})
    judge = load_pair_judge(folder, lm)
    middle = statistics.median(judge.probabilities(PAIRS))
    check = PairJudgeAcceptability(judge, threshold=middle)
    results = [r.to_dict() for r in check.check_many(*zip(*PAIRS, strict=True))]
    assert {r["backend"] for r in results} == {"pair-judge"}
    assert_ordered_by(run_order(tmp_path, results), results, "p_good")


def test_cola_orders_by_its_score_nearest_its_threshold(tiny_cola_model_factory, tmp_path):
    folder = tiny_cola_model_factory("varied", bias=(0.0, 0.0), zero_classifier=False, seed=3)
    sentences = [
        "The man is happy.",
        "The cat sat on the mat.",
        "A dog goes home.",
        "She is sad.",
        "The old woman went home.",
        "They are fast.",
        "It was closed.",
        "He is tall and young.",
    ]
    scores = ColaAcceptability(model=str(folder)).scores(sentences)
    check = ColaAcceptability(model=str(folder), threshold=statistics.median(scores))
    results = [r.to_dict() for r in check.check_many(sentences, sentences)]
    assert {r["backend"] for r in results} == {"cola"}
    assert len({r["score"] for r in results}) == len(results)  # the model tells them apart
    assert_ordered_by(run_order(tmp_path, results), results, "score")


def test_the_quality_scorer_orders_by_its_score_nearest_its_threshold(tmp_path):
    scores = [0.9, 0.31, 0.05, 0.6, 0.28, 0.45, 0.12, 0.33]
    results = [
        {"backend": "rules", "passed": s >= 0.3, "score": s, "threshold": 0.3} for s in scores
    ]
    assert_ordered_by(run_order(tmp_path, results, "quality_model"), results, "score")


def test_the_judge_wins_over_other_scores_and_unscored_triples_come_last():
    judge = {"backend": "judge", "passed": True, "p_good": 0.9, "threshold": 0.6, "d": -1.0}
    quality = {"backend": "rules", "passed": True, "score": 0.31, "threshold": 0.3}
    both = {"checks": {"acceptability": judge, "quality_model": quality}}
    assert uncertainty(both) == pytest.approx(0.3)
    assert uncertainty({"checks": {"quality_model": quality}}) == pytest.approx(0.01)
    # link-grammar's counts, harper's errors, the LLM judge's answers: no score
    assert uncertainty(record(0).to_dict()) is None
    llm = {"backend": "llm", "passed": True, "natural": True, "meaning_changed": True}
    assert uncertainty({"checks": {"acceptability": llm}}) is None
    # a score that is not a number is no score
    assert uncertainty({"checks": {"acceptability": {**judge, "p_good": "high"}}}) is None
    assert uncertainty({"checks": {"acceptability": {**judge, "threshold": True}}}) is None


def test_every_registered_check_with_a_measure_has_an_entry():
    """A check that ranks candidates by a measure records it: the review must read that field."""
    measures = {(e.check, e.backend): e.score for e in SCORED}
    assert measures[("acceptability", "judge")] == JudgeAcceptability.measure
    assert measures[("acceptability", "lm")] == LMAcceptability.measure
    assert measures[("acceptability", "pair-judge")] == PairJudgeAcceptability.measure
