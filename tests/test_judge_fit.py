"""`transnli judge fit` (transnli.review.refit): the judge's calibration refitted on a user's
reviewed judgements recovers a known miscalibration, is validated by cross-validation on them, is
written with its provenance, reads back as a judge, and the card names it; runs of other judges,
too few judgements and a changed judge file are refused in one line."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from test_export import cli, make_run, record
from tiny_lm import tiny_judge
from transnli.common.digest import sha256_file
from transnli.generator.card_quality import card_quality, quality_text
from transnli.generator.judge import load_judge
from transnli.review.index import LineIndex
from transnli.review.log import LOG, JudgementLog, Verdict
from transnli.review.session import ReviewSession, SessionSettings


def judged_run(folder, judge_path, n=200, seed=0, truth=(2.0, 1.0), kind="judge"):
    """A run of `n` triples judged by the judge at `judge_path` (p_good on each record; `kind`:
    the acceptability backend, "judge" or "pair-judge"), all reviewed; the verdicts drawn so
    that P(good | p) = sigmoid(truth[0] logit(p) + truth[1]): the judge is miscalibrated for
    this 'genre' by a known amount."""
    rng = np.random.default_rng(seed)
    p = np.round(rng.uniform(0.5, 0.97, n), 4)
    records = [
        record(i, checks={"acceptability": {"backend": kind, "passed": True, "p_good": p[i]}})
        for i in range(n)
    ]
    run = make_run(folder, records, [])
    config = json.loads((run / "config.json").read_text())
    config["config"].update(acceptability=kind, judge_model=str(judge_path))
    version = f"{kind} {sha256_file(judge_path)[:16]} (layer 1) on tiny"
    config["resources"]["checks"]["acceptability"] = {"backend": kind, "version": version}
    (run / "config.json").write_text(json.dumps(config))
    s = ReviewSession(
        LineIndex(run / "triples.jsonl"), JudgementLog(run / LOG), SessionSettings(sample=n)
    )
    logit = np.log(p / (1 - p))
    truth_p = 1 / (1 + np.exp(-(truth[0] * logit + truth[1])))
    good = rng.random(n) < truth_p
    for i in s.order:
        s.judge(i, Verdict("good") if good[i] else Verdict("bad", "grammar"), "A")
    return run


@pytest.fixture
def judge_path(tmp_path):
    path = tmp_path / "judge.json"
    path.write_text(json.dumps(tiny_judge(training_prior=0.5)), encoding="utf-8")
    return path


def test_the_refit_recovers_a_known_miscalibration_and_records_where_it_came_from(
    tmp_path, judge_path
):
    run = judged_run(tmp_path / "run", judge_path)
    out = tmp_path / "mine.json"
    result = cli("judge", "fit", run, "--out", out)
    assert result.exit_code == 0, result.output
    assert "refitted the calibration on 200 judged triples" in result.output
    assert "5-fold cross-validation" in result.output and "after" in result.output
    doc = json.loads(out.read_text())
    refit = doc["refit"]
    assert refit["judgements"] == 200 and refit["runs"][0]["judged"] == 200
    assert refit["runs"][0]["triples_sha256"] == sha256_file(run / "triples.jsonl")
    assert refit["base_judge"]["sha256"] == sha256_file(judge_path)
    alpha, beta = refit["platt_on_logit"]["alpha"], refit["platt_on_logit"]["beta"]
    for q in (0.6, 0.8, 0.95):  # the refitted probability is nearer the truth than the old
        s = math.log(q / (1 - q))
        truth = 1 / (1 + math.exp(-(2.0 * s + 1.0)))
        assert abs(1 / (1 + math.exp(-(alpha * s + beta))) - truth) < abs(q - truth)
    before, after = refit["cv"]["before"], refit["cv"]["after"]
    assert after["log_loss"] < before["log_loss"] and abs(after["estimate_error"]) < abs(
        before["estimate_error"]
    )
    judge = load_judge(str(out))  # reads back as a judge, its calibration folded in
    a, b = judge.calibration
    assert a == pytest.approx(alpha * 0.8, abs=1e-5) and b == pytest.approx(alpha * -0.2 + beta)
    assert judge.estimate_method == "mean" and judge.training_prior is None
    # the card of a run made with it names it and where it came from
    rows = [{"checks": {"acceptability": {"backend": "judge", "p_good": 0.8}}}]
    cfg = {"acceptability": "judge", "judge_model": str(out)}
    card = "\n".join(quality_text(card_quality({"test": rows, "rejected": []}, cfg)))
    assert "Judge file: `mine.json` (fitted on 200 reviewed judgements of 1 run(s)" in card


def test_the_refit_is_deterministic_and_never_written_over_a_judge(tmp_path, judge_path):
    run = judged_run(tmp_path / "run", judge_path)
    for name in ("a.json", "b.json"):
        assert cli("judge", "fit", run, "--out", tmp_path / name).exit_code == 0
    a, b = (json.loads((tmp_path / n).read_text()) for n in ("a.json", "b.json"))
    assert a["calibration"] == b["calibration"] and a["refit"]["cv"] == b["refit"]["cv"]
    before = (tmp_path / "a.json").read_bytes()
    again = cli("judge", "fit", run, "--out", tmp_path / "a.json")
    assert again.exit_code == 1 and "already exists" in again.output
    assert (tmp_path / "a.json").read_bytes() == before


def test_too_few_judgements_other_judges_and_a_changed_judge_are_refused(tmp_path, judge_path):
    few = judged_run(tmp_path / "few", judge_path, n=12)
    result = cli("judge", "fit", few, "--out", tmp_path / "x.json")
    assert result.exit_code == 1 and "refitting needs at least 30" in result.output
    one_bad = judged_run(tmp_path / "one-bad", judge_path, n=40, truth=(2.0, 4.0))
    result = cli("judge", "fit", one_bad, "--out", tmp_path / "x.json")
    assert result.exit_code == 1 and "5 good and 5 bad ones at least" in result.output
    other = tmp_path / "other.json"
    other.write_text(json.dumps(tiny_judge(seed=3)), encoding="utf-8")
    run_a = judged_run(tmp_path / "a", judge_path, n=40)
    run_b = judged_run(tmp_path / "b", other, n=40, seed=1)
    result = cli("judge", "fit", run_a, run_b, "--out", tmp_path / "x.json")
    assert result.exit_code == 1 and "another judge file" in result.output
    judge_path.write_text(json.dumps(tiny_judge(seed=5)), encoding="utf-8")
    result = cli("judge", "fit", run_a, "--out", tmp_path / "x.json")
    assert result.exit_code == 1 and "changed since the runs were judged" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "x.json").exists()


def test_a_damaged_run_config_is_refused_in_one_line(tmp_path, judge_path):
    run = judged_run(tmp_path / "run", judge_path, n=40)
    (run / "config.json").write_text("{not json")
    result = cli("judge", "fit", run, "--out", tmp_path / "x.json")
    assert result.exit_code == 1 and "config.json cannot be read" in result.output
    assert "Traceback" not in result.output


STACK = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "pair_judge_stack_gemma3_270m"


@pytest.fixture
def pair_folder(tmp_path):
    """A copy of the measured stacked pair judge folder (read, never loaded: the refit does not
    read the language model)."""
    import shutil

    folder = tmp_path / "stack"
    shutil.copytree(STACK, folder)
    return folder


def test_a_run_of_the_shipped_pair_judge_refits_its_own_calibration(tmp_path):
    """Runs of the shipped (lone) pair judge: the refit folds into the folder's own calibration
    (the head score's map), its release figures (which described the old calibration) are not
    carried over, and the card of a run made with it names the reviews its error comes from."""
    import shutil

    from transnli.generator.pair_judge import default_pair_judge_path, read_pair_judge_meta

    base = tmp_path / "shipped"
    shutil.copytree(default_pair_judge_path(), base)
    old = read_pair_judge_meta(base)["calibration"]
    run = judged_run(tmp_path / "run", base, kind="pair-judge")
    out = tmp_path / "mine"
    result = cli("judge", "fit", run, "--out", out)
    assert result.exit_code == 0, result.output
    meta = read_pair_judge_meta(out)
    release = meta["release"]
    alpha, beta = (release["refit"]["platt_on_logit"][k] for k in ("alpha", "beta"))
    assert meta["calibration"]["a"] == pytest.approx(alpha * old["a"], abs=2e-6)
    assert meta["calibration"]["b"] == pytest.approx(alpha * old["b"] + beta, abs=2e-6)
    assert "stack" not in meta and "validation" not in release
    assert release["precision_estimate"]["method"] == "mean"
    assert (out / "head.safetensors").read_bytes() == (base / "head.safetensors").read_bytes()
    rows = [{"checks": {"acceptability": {"backend": "pair-judge", "p_good": 0.8}}}]
    cfg = {"acceptability": "pair-judge", "judge_model": str(out), "judge_threshold": None}
    card = "\n".join(quality_text(card_quality({"test": rows, "rejected": []}, cfg)))
    assert "Judge folder: `mine` (fitted on 200 reviewed judgements of 1 run(s)" in card
    assert "Wilson half-width of the share judged good in the reviews" in card


def test_a_pair_judge_run_refits_the_stack_calibration_into_a_new_folder(tmp_path, pair_folder):
    """Runs of a stacked pair judge: the refit is folded into a copy of the folder's stack
    calibration (the map of the mean), the folder reads back, its figures on the project's genres
    (which described the old calibration) are not carried over, the card of a run made with it
    names it and the reviews its error comes from; an existing folder is never replaced."""
    from transnli.generator.pair_judge import read_pair_judge_meta

    old = read_pair_judge_meta(pair_folder)["stack"]["calibration"]
    run = judged_run(tmp_path / "run", pair_folder, kind="pair-judge")
    out = tmp_path / "mine"
    result = cli("judge", "fit", run, "--out", out)
    assert result.exit_code == 0, result.output
    assert "refitted the calibration on 200 judged triples" in result.output
    stack = read_pair_judge_meta(out)["stack"]
    alpha, beta = (stack["refit"]["platt_on_logit"][k] for k in ("alpha", "beta"))
    # the record keeps alpha and beta to 6 decimals, the folded map to 8
    assert stack["calibration"]["a"] == pytest.approx(alpha * old["a"], abs=2e-6)
    assert stack["calibration"]["b"] == pytest.approx(alpha * old["b"] + beta, abs=2e-6)
    for q in (0.6, 0.8, 0.95):  # nearer the truth the verdicts were drawn from than before
        s = math.log(q / (1 - q))
        truth = 1 / (1 + math.exp(-(2.0 * s + 1.0)))
        assert abs(1 / (1 + math.exp(-(alpha * s + beta))) - truth) < abs(q - truth)
    assert stack["refit"]["base_judge"]["sha256"] == sha256_file(pair_folder)
    assert "validation" not in stack and stack["precision_estimate"]["method"] == "mean"
    assert (out / "adapter" / "adapter_config.json").read_bytes() == (
        pair_folder / "adapter" / "adapter_config.json"
    ).read_bytes()
    rows = [{"checks": {"acceptability": {"backend": "pair-judge", "p_good": 0.8}}}]
    cfg = {"acceptability": "pair-judge", "judge_model": str(out), "judge_threshold": None}
    card = "\n".join(quality_text(card_quality({"test": rows, "rejected": []}, cfg)))
    assert "Judge folder: `mine` (fitted on 200 reviewed judgements of 1 run(s)" in card
    assert "Wilson half-width of the share judged good in the reviews" in card
    before = sha256_file(out)
    again = cli("judge", "fit", run, "--out", out)
    assert again.exit_code == 1 and "already exists" in again.output
    assert sha256_file(out) == before and not (tmp_path / "mine.partial").exists()


def test_a_mix_of_judges_is_refused(tmp_path, pair_folder, judge_path):
    run = judged_run(tmp_path / "run", pair_folder, n=120, kind="pair-judge")
    linear = judged_run(tmp_path / "linear", judge_path, n=120)
    mixed = cli("judge", "fit", linear, run, "--out", tmp_path / "x")
    assert mixed.exit_code == 1 and "another judge file" in mixed.output
    assert "Traceback" not in mixed.output and not (tmp_path / "x").exists()
