"""The judge benchmarks' bookkeeping that later runs rely on (benchmarks/train_pair_judge.py,
benchmarks/bench_precision_estimate.py, benchmarks/pair_judge_curve.py,
benchmarks/train_cross_judge.py, benchmarks/annotator_ceiling.py)."""

import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import annotator_ceiling  # noqa: E402
import bench_precision_estimate  # noqa: E402
import pair_judge_average  # noqa: E402
import pair_judge_compare  # noqa: E402
import pair_judge_curve  # noqa: E402
import pair_judge_estimate  # noqa: E402
import pair_judge_folds  # noqa: E402
import pair_judge_recalibration  # noqa: E402
import train_cross_judge  # noqa: E402
import train_pair_judge  # noqa: E402


def test_a_saved_judge_is_read_on_the_sets_it_was_trained_on_not_todays(tmp_path, monkeypatch):
    """A folder trained before a judged set became a training set must not be refused on that set
    (nor allowed on one it did see): its own record says, or, for an older folder, the sets whose
    files give its recorded data digest."""
    files = {}
    for name in ("dev", "genres", "genres2"):
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text(f'{{"set": "{name}"}}\n')
    monkeypatch.setattr(train_pair_judge, "SETS", files)
    digest = train_pair_judge.data_digest(("dev", "genres"))

    assert train_pair_judge.folder_training_sets({"training_data_sha256": digest}) == (
        "dev",
        "genres",
    )
    recorded = {"training": {"sets": ["dev"]}, "training_data_sha256": digest}
    assert train_pair_judge.folder_training_sets(recorded) == ("dev",)
    with pytest.raises(SystemExit, match="changed since it was trained"):
        train_pair_judge.folder_training_sets({"training_data_sha256": "0" * 64})


def test_a_simulated_review_reads_only_halves_the_refit_command_would_accept():
    """A small genre whose kept triples are all good cannot be refitted by `transnli judge fit`
    (it refuses one class); the simulation says so instead of failing or inventing figures."""
    rng = np.random.default_rng(0)
    p = rng.uniform(0.5, 0.95, 40)
    skipped = bench_precision_estimate.user_review(p, np.ones(40, dtype=int), splits=5)
    assert skipped["splits"] == 0 and "40 kept triples (40 good)" in skipped["skipped"]
    good = (rng.uniform(size=200) < p.repeat(5)).astype(int)
    read = bench_precision_estimate.user_review(p.repeat(5), good, splits=5)
    assert read["splits"] == 5 and read["fitted_on"] == 100


def test_a_users_review_shrinks_a_genres_estimate_error_where_the_judge_is_off():
    """A genre where the judge says 0.15 more than people find (the lone pair judge on worlds or
    careers): a refit on half the kept triples brings the other half's estimate close; a genre too
    small to review is named as not read."""
    rng = np.random.default_rng(3)
    p = rng.uniform(0.6, 0.95, 300)
    off = (rng.uniform(size=300) < p - 0.15).astype(int)
    genres = {
        "far": {"user_review": bench_precision_estimate.user_review(p, off, splits=10)},
        "tiny": {"user_review": bench_precision_estimate.user_review(p[:20], off[:20], splits=10)},
    }
    summary = pair_judge_estimate.user_review_summary(genres)
    assert summary["genres"] == 1 and summary["not_read"] == ["tiny"]
    assert summary["error_smaller_after"] == 1
    assert summary["before"]["mean_abs_estimate_error"] > 0.1
    assert summary["after"]["mean_abs_estimate_error"] < 0.06


def curve_run(fraction: float, rows: int, p_at_80: dict[str, float], seed: int = 0) -> dict:
    """A train_pair_judge.py output, as much of it as the curve reads."""

    def gate(p80: float) -> dict:
        at = {"0.80": {"precision": p80}, "0.65": {"precision": p80 + 0.05}}
        return {
            "candidates": 100,
            "auc": p80 + 0.1,
            "precision_at_kept_of_fast_good": at,
            "calibration": {"ece": 0.05},
        }

    return {
        "training": {"fraction": fraction, "rows": rows, "calibration_rows": 50, "seed": seed},
        "training_seconds": rows / 2,
        "held_out": {genre: {"gate": gate(p)} for genre, p in p_at_80.items()},
    }


def test_a_learning_curve_orders_its_points_and_refuses_runs_that_differ_beyond_the_share():
    """The curve's points come from runs that differ only in the training share: its means and
    worst genre are each point's own, and a run with another seed is refused by name."""
    runs = {
        "full.json": curve_run(1.0, 400, {"news": 0.8, "faq": 0.7}),
        "quarter.json": curve_run(0.25, 100, {"news": 0.6, "faq": 0.65}),
    }
    curve = pair_judge_curve.learning_curve(runs)
    assert [p["fraction"] for p in curve["points"]] == [0.25, 1.0]
    quarter = curve["points"][0]
    assert quarter["rows"] == 100 and quarter["mean_p_at_80"] == pytest.approx(0.625)
    assert quarter["worst_p_at_80"] == [0.6, "news"]
    assert curve["points"][1]["mean_auc"] == pytest.approx(0.85)

    runs["seed1.json"] = curve_run(0.5, 200, {"news": 0.7, "faq": 0.7}, seed=1)
    with pytest.raises(SystemExit, match="seed1.json: training.seed is 1"):
        pair_judge_curve.learning_curve(runs)


def test_folds_of_one_recipe_make_one_table_with_each_genre_read_once():
    """Every genre's figures come from the fold that left it out; the means and the worst genre
    are over all the folds' genres; a fold of another recipe, or a genre read by two folds, is
    refused by name."""
    runs = {
        "a.json": curve_run(1.0, 400, {"news": 0.8, "faq": 0.7}),
        "b.json": curve_run(1.0, 380, {"policy": 0.6}),
    }
    table = pair_judge_folds.folds_table(runs)
    assert table["genres"]["policy"]["fold"] == "b.json"
    assert table["summary"]["mean_p_at_80"] == pytest.approx(0.7)
    assert table["summary"]["worst_p_at_80"] == [0.6, "policy"]
    assert table["summary"]["ece_within_target"][0] == 3
    assert table["summary"]["target_met"] is False
    with pytest.raises(SystemExit, match="c.json: training.seed is 1"):
        pair_judge_folds.folds_table({**runs, "c.json": curve_run(1.0, 390, {"x": 0.7}, seed=1)})
    with pytest.raises(SystemExit, match="d.json: genre faq is left out by a.json too"):
        pair_judge_folds.folds_table({**runs, "d.json": curve_run(1.0, 390, {"faq": 0.7})})


def test_judges_are_compared_on_the_genres_they_all_read_against_the_first():
    """Means and wins are over the genres every judge read (the rest are named); a judge read in
    two files counts each genre once and may not read one twice."""
    baseline = pair_judge_compare.judge_genres(
        {
            "test.json": curve_run(1.0, 400, {"test": 0.7}),
            "sets.json": curve_run(1.0, 400, {"news": 0.6, "faq": 0.8}),
        }
    )
    new = pair_judge_compare.judge_genres(
        {"new.json": curve_run(1.0, 400, {"test": 0.75, "news": 0.5, "policy": 0.9})}
    )
    table = pair_judge_compare.comparison({"shipped": baseline, "new": new})
    assert table["genres"] == ["news", "test"]
    assert table["judges"]["shipped"]["not_compared"] == ["faq"]
    assert table["judges"]["new"]["not_compared"] == ["policy"]
    assert table["judges"]["new"]["mean_p_at_80"] == pytest.approx(0.625)
    assert table["judges"]["new"]["worst_p_at_80"] == [0.5, "news"]
    # better AUC on test only; the same ECE everywhere is better nowhere
    assert table["judges"]["new"]["better_than_baseline_on"]["auc"] == 1
    assert table["judges"]["new"]["better_than_baseline_on"]["ece"] == 0
    with pytest.raises(SystemExit, match="b.json: genre faq is read by a.json too"):
        pair_judge_compare.judge_genres(
            {"a.json": curve_run(1.0, 1, {"faq": 0.7}), "b.json": curve_run(1.0, 1, {"faq": 0.7})}
        )


def test_judges_averaged_give_each_candidate_the_mean_of_their_p_or_name_the_one_without():
    held = [{"key": "a"}, {"key": "b"}]
    judges = [{"a": 0.2, "b": 0.9}, {"b": 0.5, "a": 0.6, "c": 1.0}]
    assert pair_judge_average.averaged(judges, held, ["s0", "s1"]).tolist() == pytest.approx(
        [0.4, 0.7]
    )
    with pytest.raises(SystemExit, match="s1: no p for 1 left-out candidates"):
        pair_judge_average.averaged([judges[0], {"a": 0.1}], held, ["s0", "s1"])


def test_the_sampling_floor_separates_sampling_from_the_estimators_own_error():
    """An estimate equal to the truth still misses by sampling: on large genres nearly always
    within 0.03, on small ones often not; an error far beyond the binomial spread is the
    estimator's."""
    large = {g: {"kept": 20000, "estimate": 0.7, "estimate_error": 0.004} for g in "abc"}
    floor = pair_judge_estimate.sampling_floor(large)
    assert floor["expected_within_0.03"] == pytest.approx(3, abs=0.01)
    assert floor["errors_beyond_95_sampling_spread"] == 0
    small = {"d": {"kept": 60, "estimate": 0.7, "estimate_error": 0.02}}
    small_floor = pair_judge_estimate.sampling_floor(small)
    assert 0.2 < small_floor["expected_within_0.03"] < 0.6
    wrong = {"e": {"kept": 300, "estimate": 0.7, "estimate_error": 0.17}}
    assert pair_judge_estimate.sampling_floor(wrong)["errors_beyond_95_sampling_spread"] == 1
    both = pair_judge_estimate.sampling_floor({**large, **small})
    assert both["chance_all_within_0.03"] == pytest.approx(
        small_floor["chance_all_within_0.03"], rel=0.01
    )


def test_a_genre_reports_how_often_a_perfectly_calibrated_judge_would_meet_the_ece_target():
    """ECE on a few hundred candidates strays by sampling alone: on 5,000 a calibrated judge is
    nearly always within 0.05, on 60 almost never; a judge 0.15 too sure is beyond its floor."""
    rng = np.random.default_rng(5)
    p = rng.uniform(0.05, 0.95, 5000)
    calibrated = (rng.random(5000) < p).astype(int)
    large = pair_judge_estimate.genre_figures(p, calibrated, 0.5)
    assert large["ece_floor"] < 0.02 and large["ece_chance_within_0.05"] == 1.0
    assert large["ece"] <= 0.05
    small = pair_judge_estimate.genre_figures(p[:60], calibrated[:60], 0.5)
    assert small["ece_floor"] > 0.08 and small["ece_chance_within_0.05"] < 0.1
    too_sure = pair_judge_estimate.genre_figures(np.clip(p + 0.15, 0, 1), calibrated, 0.5)
    assert too_sure["ece"] > 0.1 > too_sure["ece_floor"]


def test_the_em_correction_follows_a_genre_whose_share_of_good_differs_from_training():
    """Under pure label shift (the same class-conditional scores, 80% good instead of the 50% the
    calibration saw), EM recovers the genre's prior and its estimate the kept triples' precision,
    where the plain mean of the probabilities stays too low."""
    rng = np.random.default_rng(7)
    y = (rng.random(20000) < 0.8).astype(int)
    x = rng.normal(np.where(y == 1, 1.0, -1.0), 1.0)
    p = 1 / (1 + np.exp(-2 * x))  # calibrated when half the candidates are good
    figures = pair_judge_estimate.genre_figures(p, y, 0.5, training_prior=0.5)
    assert figures["em_prior"] == pytest.approx(0.8, abs=0.01)
    assert abs(figures["em_error"]) < 0.01
    assert figures["estimate_error"] < -0.05
    assert "em_error" not in pair_judge_estimate.genre_figures(p, y, 0.5)


def test_the_estimate_benchmark_wants_one_calibration_file_for_each_score_file():
    with pytest.raises(SystemExit) as exc:
        pair_judge_estimate.main(
            ["--threshold", "0.5", "--scores", "a.jsonl", "--scores", "b.jsonl"]
            + ["--calibration-scores", "a_cal.jsonl"]
        )
    assert exc.value.code == 2


def test_a_recalibration_map_fixes_overconfidence_without_moving_a_decision():
    """Probabilities twice as confident as the truth: the Platt step on logit p finds the slope,
    the mapped p are calibrated, and the estimate's error shrinks, while every candidate stays on
    its side of the (moved) cut."""
    rng = np.random.default_rng(3)
    truth = rng.random(20000)
    y = (rng.random(20000) < truth).astype(int)
    p = np.clip(1 / (1 + np.exp(-2 * np.log(truth / (1 - truth)))), 1e-4, 1 - 1e-4)
    slope, intercept = pair_judge_recalibration.fit_map(p, y)
    assert slope == pytest.approx(0.5, abs=0.05) and abs(intercept) < 0.05
    mapped = pair_judge_recalibration.apply_map(p, slope, intercept)
    assert np.array_equal(np.argsort(p, kind="stable"), np.argsort(mapped, kind="stable"))
    genres = ["news"] * len(p)
    effects = pair_judge_recalibration.genre_effects(p, y, genres, mapped, 0.6)["news"]
    assert effects["ece"][1] < 0.02 < effects["ece"][0]
    before, after = effects["estimate_error"]
    assert abs(after) < abs(before)
    summed = pair_judge_recalibration.summary({"news": effects}, min_kept=50)
    assert summed["after"]["ece_within_0.05"] == 1 and summed["before"]["ece_within_0.05"] == 0


def test_a_cross_judge_names_its_base_by_weights_and_trains_only_adapters_and_head(
    tmp_path, tiny_cola_model_dir
):
    """A run from another checkpoint must say which weights it started from, and a LoRA run must
    leave the base frozen so that the judge ships as a small adapter folder."""
    import hashlib

    from transformers import AutoModelForSequenceClassification

    folder, named = train_cross_judge.base_model(Path(tiny_cola_model_dir))
    weights = next(Path(tiny_cola_model_dir).glob("*.safetensors")).read_bytes()
    assert folder == str(tiny_cola_model_dir)
    assert hashlib.sha256(weights).hexdigest() in named
    with pytest.raises(SystemExit, match="no \\*.safetensors"):
        train_cross_judge.base_model(tmp_path)

    model = AutoModelForSequenceClassification.from_pretrained(
        tiny_cola_model_dir, num_labels=1, ignore_mismatched_sizes=True
    )
    adapted = train_cross_judge.with_lora(model, 2)
    trained = {n for n, p in adapted.named_parameters() if p.requires_grad}
    adapted_maps = {
        re.sub(r".*\.layer\.\d+\.", "", n.split(".lora_A")[0]) for n in trained if "lora_A" in n
    }
    assert adapted_maps == {
        "attention.self.query",
        "attention.self.key",
        "attention.self.value",
        "attention.output.dense",
        "intermediate.dense",
        "output.dense",
    }
    assert all("lora_" in n or ".classifier." in n for n in trained)
    assert any(".classifier." in n for n in trained)


def test_a_second_readers_verdicts_are_paired_with_the_first_in_each_agreement_file_shape(
    tmp_path, monkeypatch
):
    """Agreement files hold both verdicts on a line, a line per annotator, or only the second
    reader's line; each must pair two different readers' verdicts on a candidate the judge sees."""
    import json

    def row(item, good, annotator, h="H", m=None):
        return {
            "item": item,
            "hypothesis": h,
            "modified_hypothesis": m or f"H {item}",
            "good": good,
            "annotator": annotator,
        }

    own = [row(i, g, a) for i, g, a in zip("abcde", (1, 0, 1, 1, 1), ("A1",) * 5, strict=True)]
    shapes = {
        "both": [
            {
                "item": "a",
                "first": {"good": True, "annotator": "A1"},
                "second": {"good": False, "annotator": "O1"},
            },
            {
                "item": "e",
                "first": {"good": True, "annotator": "A1"},
                "second": {"good": True, "annotator": "O1"},
            },
        ],
        "lines": [row("b", False, "T1"), row("b", True, "T2"), row("b", True, "T3")],
        "second": [row("c", False, "O1"), row("d", True, "A1")],
    }
    sets = {}
    for name, lines in shapes.items():
        sets[name] = tmp_path / f"quality_{name}.jsonl"
        sets[name].write_text("".join(json.dumps(r) + "\n" for r in own))
        (tmp_path / f"quality_{name}_agreement.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in lines)
        )
    monkeypatch.setattr(annotator_ceiling, "DATA", tmp_path)
    monkeypatch.setattr(annotator_ceiling, "SETS", sets)
    gate = {annotator_ceiling.key("H", f"H {i}") for i in "abcd"}  # e: not decided by the judge
    monkeypatch.setattr(annotator_ceiling, "population_keys", lambda name: {"gate": gate})

    def pairs(name):
        return [(i["first"], i["second"]) for i in annotator_ceiling.agreement_items(name)]

    assert pairs("both") == [(True, False)]
    assert pairs("lines") == [(False, True)]
    # c: the set's own row is the first reader's; d: the same reader twice is not a pair
    assert pairs("second") == [(True, False)]


def test_a_judge_kept_to_a_readers_recall_is_read_by_the_same_reference():
    reference = np.array([1, 1, 0, 1, 0, 0], dtype=bool)
    reader = np.array([1, 0, 1, 1, 0, 0], dtype=bool)
    assert annotator_ceiling.reader_as_judge(reader, reference) == pytest.approx((2 / 3, 2 / 3))
    p = np.array([0.9, 0.8, 0.7, 0.6, 0.6, 0.1])
    # two of three good first at 0.9, 0.8; the third needs the cut at 0.6, which a bad one ties
    assert annotator_ceiling.precision_at_recall(p, reference, 2 / 3) == pytest.approx(1.0)
    assert annotator_ceiling.precision_at_recall(p, reference, 1.0) == pytest.approx(3 / 5)
