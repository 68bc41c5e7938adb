"""The dataset card's quality section (transnli.generator.card_quality): a judged run's estimate
with its method, interval and judge file; records with a missing, foreign or broken probability
counted and said (never "nan", never a traceback after the files were written); a run of a preset
without a judge states the preset's measured precision, marked as not estimated for the run."""

from __future__ import annotations

import json

import pytest
from test_export import cli, make_run, record
from tiny_lm import tiny_judge
from transnli.generator.card_quality import card_quality, quality_text


def judged(p, passed=True):
    return {"backend": "judge", "passed": passed, "p_good": p, "threshold": 0.5}


def rows(entries):
    return [{"checks": {"acceptability": e}} for e in entries]


def text(splits, cfg):
    return "\n".join(quality_text(card_quality(splits, cfg)))


JUDGE_CFG = {"preset": "default", "acceptability": "judge"}


def test_the_judged_card_gives_the_mean_over_the_triples_when_the_judge_names_no_method(
    tmp_path,
):
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(tiny_judge()), encoding="utf-8")
    splits = {"test": rows([judged(0.9), judged(0.7)]), "rejected": rows([judged(0.2, False)])}
    card = text(splits, {**JUDGE_CFG, "judge_model": str(path)})
    assert "**Estimated precision: 0.800**" in card and "over the 2 triples." in card
    assert "no correction for the genre" in card and "Judge file: `judge.json`" in card
    assert "without the judge's own error (the judge file records no validation" in card
    assert "Warning" not in card and "100: 0.15" in card  # the widths table


def test_the_em_method_moves_the_estimate_with_the_runs_share_of_good_candidates(tmp_path):
    doc = tiny_judge(
        training_prior=0.5,
        precision_estimate={"method": "em", "max_abs_error": 0.04},
    )
    path = tmp_path / "judge-em.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    cfg = {**JUDGE_CFG, "judge_model": str(path)}
    accepted = [judged(0.7)] * 30
    many_good = {"test": rows(accepted), "rejected": rows([judged(0.45, False)] * 5)}
    few_good = {"test": rows(accepted), "rejected": rows([judged(0.05, False)] * 60)}
    high, low = card_quality(many_good, cfg), card_quality(few_good, cfg)
    assert high["estimate"].precision > 0.7 > low["estimate"].precision
    card = "\n".join(quality_text(high))
    assert "EM re-estimation of the prior" in card
    assert "(the judge's training genres: 0.500)" in card
    assert "the uncorrected mean is 0.700" in card and "never trained on (0.040; docs" in card
    assert high["estimate"].estimator_error == 0.04  # the interval holds it (test_precision)


@pytest.mark.parametrize(
    ("entries", "says"),
    [
        ([judged(0.8)] * 9 + [None] * 3, "3 of the 12 triples carry no judge probability"),
        ([judged(0.8)] + [{"backend": "cola", "score": 0.9}] * 11, "11 of the 12 triples"),
        ([judged(0.8)] * 9 + [judged(float("nan"))] * 3, "3 of the 12 triples carry a prob"),
        ([judged(0.8)] * 11 + [judged(5.0)], "1 of the 12 triples carries a probability"),
    ],
)
def test_missing_foreign_or_broken_probabilities_are_counted_and_said(entries, says):
    card = text({"test": rows(entries), "rejected": []}, JUDGE_CFG)
    assert says in card and "**Warning:**" in card
    assert "nan" not in card.lower().replace("meaning", "")
    assert "**Estimated precision: 0.800**" in card and "(of 12)" in card


def test_no_usable_probability_is_said_not_averaged():
    card = text({"test": rows([judged(float("nan"))] * 4), "rejected": []}, JUDGE_CFG)
    assert "**No estimated precision:** none of the 4 triples" in card
    assert "4 of the 4 triples carry a probability that is not a number" in card


def test_a_fast_card_states_the_presets_measured_precision_not_an_estimate():
    from transnli.generator.config import resolve_config

    cfg = resolve_config("fast").fingerprint_dict()
    card = text({"test": rows([{"backend": "link-grammar", "passed": True}]), "rejected": []}, cfg)
    assert "**no precision is estimated for this run**" in card
    assert "| test (academic prose and man pages, never tuned on) | 803 | 0.564 |" in card
    assert "changes the preset" not in card
    cfg["filters"] = []
    assert "changes the preset's `filters`" in text({"test": []}, cfg)


def test_export_of_a_run_with_broken_probabilities_writes_a_card_that_says_so(tmp_path):
    good = [record(i, checks={"acceptability": judged(0.8)}) for i in range(3)]
    broken = [record(9, checks={"acceptability": judged(5.0)})]
    run = make_run(tmp_path / "run", good + broken, [])
    cfg = json.loads((run / "config.json").read_text())
    cfg["config"]["acceptability"] = "judge"
    (run / "config.json").write_text(json.dumps(cfg))
    result = cli("export", run, "--to", "parquet,card")
    assert result.exit_code == 0, result.output
    card = (run / "hub" / "README.md").read_text()
    assert "1 of the 4 triples carries a probability that is not a number" in card


def test_the_shipped_judge_names_its_method_prior_and_validated_error():
    from transnli.generator.judge import load_judge

    judge = load_judge()
    assert judge.training_prior == pytest.approx(0.5648)
    assert judge.estimate_method == "mean" and judge.estimate_error == pytest.approx(0.2393)
    card = text({"test": rows([judged(0.7)] * 50), "rejected": []}, JUDGE_CFG)
    assert "Judge file: `judge_gemma3_270m.json`" in card
    assert "never trained on (0.239; docs/quality-model.md" in card


def test_the_shipped_judges_recorded_error_covers_its_leave_one_genre_out_validation():
    """The card's interval adds the judge file's recorded error to the sampling spread: it must be
    at least the largest error the file's method made on a genre left out in the saved
    validation (benchmarks/bench_precision_estimate.py, 13 genres), or the card would claim an
    interval its own validation contradicts."""
    from pathlib import Path

    from transnli.generator.judge import load_judge

    saved = Path(__file__).resolve().parents[1] / "benchmarks/data/precision_estimate_logo.json"
    logo = json.loads(saved.read_text(encoding="utf-8"))
    judge = load_judge()
    errors = {g: abs(r["error"][judge.estimate_method]) for g, r in logo["genres"].items()}
    assert len(errors) == 13
    assert max(errors.values()) <= judge.estimate_error, errors


def test_the_shipped_judges_recorded_error_covers_its_end_to_end_runs_on_unseen_genres():
    """The same promise on the default preset's own end-to-end runs over the genre sets the judge
    never saw (benchmarks/data/bench_quality_genres*_default.json): in every genre with enough
    judged triples to measure, the card's mean p_good strayed from people's verdicts by no more
    than the recorded error."""
    from pathlib import Path

    from transnli.generator.judge import default_judge_path, load_judge

    data = Path(__file__).resolve().parents[1] / "benchmarks/data"
    judge = load_judge()
    recorded = json.loads(default_judge_path().read_text(encoding="utf-8"))["precision_estimate"]
    errors = {}
    for run in sorted(data.glob("bench_quality_genres*_default.json")):
        for genre, g in json.loads(run.read_text(encoding="utf-8"))["per_genre"].items():
            if g["judged"] >= recorded["end_to_end"]["min_judged"]:
                errors[genre] = abs(g["estimate_error"])
    assert len(errors) >= 27
    assert max(errors.values()) <= judge.estimate_error, errors


def test_the_shipped_pair_judges_recorded_error_covers_its_end_to_end_runs_on_unseen_genres():
    """The default preset's pair judge makes the same promise: on its end-to-end runs over the
    genre sets it never saw (benchmarks/data/bench_quality_genres*_default_pair_compact*.json),
    in every genre with at least 50 judged triples, the card's mean p_good strayed from people's
    verdicts by no more than the error its folder records (release.precision_estimate)."""
    from pathlib import Path

    from transnli.generator.pair_judge import default_pair_judge_path, read_pair_judge_meta

    data = Path(__file__).resolve().parents[1] / "benchmarks/data"
    recorded = read_pair_judge_meta(default_pair_judge_path())["release"]["precision_estimate"]
    errors = {}
    for run in sorted(data.glob("bench_quality_genres*_default_pair_compact*.json")):
        doc = json.loads(run.read_text(encoding="utf-8"))
        assert doc["acceptability"] == "pair-judge" and not doc["overrides"], run
        for genre, g in doc["per_genre"].items():
            if g["judged"] >= 50:
                errors[genre] = abs(g["estimate_error"])
    assert len(errors) >= 20
    assert max(errors.values()) <= recorded["max_abs_error"], errors
