"""Violation rates that noise cannot fake: beside each rule's rate, the rate over the triples the
judge is confident in (p_good >= a level) and the p_good-weighted rate, each with its interval.

The pure functions are checked by hand and against the plain Wilson interval; then a benchmark
with known bad triples (low p_good) and a model (precomputed labels) whose violations sit mostly
on them is evaluated with the real command: the confident-triple rate must recover the rate on
the good triples, which the plain rate misses."""

from __future__ import annotations

import csv
import json
import random

import pytest
from click.testing import CliRunner
from transnli.evaluator.eval_card import render_eval_card
from transnli.evaluator.metrics import (
    RuleTally,
    TripleLabels,
    confident_rate,
    dataset_metrics,
    effective_wilson,
    weighted_rate,
    wilson_interval,
)
from transnli.generator.record import RecordError, parse_triple_line

from transnli.cli import main
from transnli.cli.evaluate import evaluate

E, N, C = "entailment", "neutral", "contradiction"


# -- pure functions ------------------------------------------------------------------------------
def test_the_confident_rate_counts_only_triples_at_or_above_the_level():
    outcomes = [(True, 0.9), (False, 0.8), (True, 0.79), (True, None), (False, 0.95)]
    cell = confident_rate(outcomes, level=0.8)
    assert (cell["cases"], cell["violations"], cell["level"]) == (3, 1, 0.8)
    assert cell["rate"] == pytest.approx(1 / 3)
    assert cell["ci95"] == wilson_interval(1, 3)
    assert confident_rate([(True, 0.5)], level=0.8) == {
        "level": 0.8,
        "cases": 0,
        "violations": 0,
        "rate": None,
        "ci95": None,
    }


def test_the_weighted_rate_weighs_each_case_by_its_p_good():
    outcomes = [(True, 0.2), (False, 0.9), (False, 0.9), (True, None)]
    cell = weighted_rate(outcomes)
    assert cell["cases"] == 3  # the case without p_good does not count
    assert cell["rate"] == pytest.approx(0.2 / 2.0)
    assert cell["weight"] == pytest.approx(2.0)
    assert cell["effective_cases"] == pytest.approx(round(4.0 / (0.04 + 0.81 + 0.81), 3))
    assert weighted_rate([(True, None)])["rate"] is None


def test_equal_weights_give_the_plain_wilson_interval_and_fewer_effective_cases_a_wider_one():
    assert effective_wilson(10 * 0.5, 10 * 0.25, 0.3) == pytest.approx(wilson_interval(3, 10))
    assert effective_wilson(0.0, 0.0, 0.0) is None
    assert effective_wilson(2.0, 2.0, 0.0)[0] == 0.0 and effective_wilson(2.0, 2.0, 1.0)[1] == 1.0
    # the same rate and total weight, spread unevenly: fewer effective cases, a wider interval
    even = effective_wilson(10.0, 10.0, 0.3)  # ten cases of weight 1
    uneven = effective_wilson(10.0, 30.0, 0.3)  # n_eff = 100 / 30
    assert uneven[1] - uneven[0] > even[1] - even[0]


def test_the_counts_add_up_in_any_order_of_windows():
    rng = random.Random(5)
    outcomes = [(rng.random() < 0.3, rng.random()) for _ in range(200)]
    whole, halves = RuleTally(0.7), RuleTally(0.7)
    for violated, p in outcomes:
        whole.add(violated, p)
    for violated, p in outcomes[:77] + outcomes[77:]:
        halves.add(violated, p)
    assert whole.cell("r", True) == halves.cell("r", True)


def test_dataset_metrics_give_noise_rates_only_where_triples_carry_p_good():
    rows = [
        TripleLabels(E, E, E, N, p_good=0.2),  # rule1 violated, on a doubtful triple
        TripleLabels(E, E, E, E, p_good=0.95),  # rule1 held
        TripleLabels(E, C, C, C, p_good=0.9),  # rule2 held
    ]
    m = dataset_metrics(rows)
    rule1 = m["rules"]["rule1"]
    assert (rule1["cases"], rule1["violations"]) == (2, 1)
    assert (rule1["confident"]["cases"], rule1["confident"]["violations"]) == (1, 0)
    assert rule1["weighted"]["rate"] == pytest.approx(0.2 / 1.15)
    assert m["p_good"] == {"triples": 3, "confident": 2, "level": 0.8, "mean_p_good": 0.683333}
    assert "confident" in m["extras"]["substitution"]
    plain = dataset_metrics([TripleLabels(E, E, E, N)])
    assert "p_good" not in plain and "confident" not in plain["rules"]["rule1"]


def test_a_p_good_that_is_no_probability_is_named_with_its_line():
    line = json.dumps(
        {
            "premise": "p",
            "hypothesis": "h",
            "modified_hypothesis": "x",
            "checks": {"acceptability": {"backend": "judge", "passed": True, "p_good": 1.5}},
        }
    )
    with pytest.raises(RecordError, match=r"t.jsonl:4: field 'checks.acceptability.p_good': 1.5"):
        parse_triple_line(line, "t.jsonl", 4)
    ok = parse_triple_line(line.replace("1.5", "0.25"), "t.jsonl", 4)
    assert ok.p_good == 0.25
    assert parse_triple_line(line.replace('"p_good": 1.5, ', "").replace(', "p_good": 1.5', ""),
                             "t.jsonl", 4).p_good is None  # fmt: skip


# -- a benchmark with known bad triples ----------------------------------------------------------
GOOD, BAD = 400, 150
CLEAN_RATE, BAD_RATE = 0.06, 0.7  # the model's violation rate on good and on bad triples


def noisy_benchmark(folder, with_p_good=True, rates=(CLEAN_RATE, BAD_RATE), seed=12):
    """GOOD good triples (p_good mostly high) and BAD bad ones (p_good below 0.5), all in rule1's
    antecedent under the model (M(P,H) = E, (H,H') mutual E); the model violates (M(P,H') = N)
    on a seeded share rates[0] of the good triples and rates[1] of the bad ones. Returns the
    triples file, the model's labels file, and its violation rate on the good triples."""
    rng = random.Random(11)
    triples = []
    for i in range(GOOD + BAD):
        p_good = rng.betavariate(12, 1.5) if i < GOOD else rng.uniform(0.02, 0.5)
        rec = {"id": f"t{i}", "dataset": "noisy", "premise": f"premise {i}."}
        rec.update(hypothesis=f"hypothesis {i}.", modified_hypothesis=f"changed hypothesis {i}.")
        if with_p_good:
            judge = {"backend": "judge", "passed": True, "p_good": round(p_good, 4)}
            rec["checks"] = {"acceptability": {**judge, "threshold": 0.0}}
        triples.append(rec)
    tfile = folder / ("noisy.jsonl" if with_p_good else "plain.jsonl")
    tfile.write_text("".join(json.dumps(r) + "\n" for r in triples), encoding="utf-8")
    lfile, clean = model_labels(folder / f"labels-{tfile.stem}-{seed}.jsonl", triples, rates, seed)
    return tfile, lfile, clean


def model_labels(path, triples, rates, seed):
    """A model's labels file for `triples` (see noisy_benchmark) and its rate on the good ones."""
    rng = random.Random(seed)
    labels, good_violations = [], 0
    for i, t in enumerate(triples):
        good = i < GOOD
        violated = rng.random() < rates[0 if good else 1]
        good_violations += good and violated
        p, h, h2 = t["premise"], t["hypothesis"], t["modified_hypothesis"]
        for a, b, label in ((p, h, E), (h, h2, E), (h2, h, E), (p, h2, N if violated else E)):
            labels.append({"premise": a, "hypothesis": b, "label": label})
    path.write_text("".join(json.dumps(r) + "\n" for r in labels), encoding="utf-8")
    return path, good_violations / GOOD


def evaluate_cli(tmp_path, tfile, *models, out="out"):
    args = [str(tfile), "--out", str(tmp_path / out), "--cache-dir", str(tmp_path / "cache")]
    for lfile in models:
        args += ["--model", f"precomputed:{lfile}"]
    res = CliRunner().invoke(evaluate, [*args, "--no-plots", "-q"])
    assert res.exit_code == 0, res.output
    return tmp_path / out


def test_the_confident_rate_recovers_the_clean_rate_the_plain_rate_misses(tmp_path):
    tfile, lfile, clean = noisy_benchmark(tmp_path)
    out = evaluate_cli(tmp_path, tfile, lfile)
    summary = json.loads((out / "summary.json").read_text())
    rule1 = summary["models"][0]["overall"]["rules"]["rule1"]
    assert rule1["cases"] == GOOD + BAD
    lo, hi = rule1["ci95"]
    assert not lo <= clean <= hi  # the noisy triples fake a higher rate
    confident = rule1["confident"]
    lo, hi = confident["ci95"]
    assert lo <= clean <= hi, (clean, confident)
    assert 0.6 * GOOD < confident["cases"] < GOOD  # the confident are good triples, not all
    weighted = rule1["weighted"]
    assert clean < weighted["rate"] < rule1["rate"]  # the weighted rate shrinks the bad ones
    assert weighted["effective_cases"] < weighted["cases"] == GOOD + BAD
    quality = summary["triple_quality"]
    assert (quality["p_good_triples"], quality["level"]) == (GOOD + BAD, 0.8)
    assert quality["confident_triples"] == confident["cases"]
    report = (out / "report.md").read_text()
    assert "## Table 4b. Violation rates on the triples the judge trusts" in report
    assert "Every triple carries the judge's p_good" in report
    assert f"({confident['violations']}/{confident['cases']})" in report
    with open(out / "tables" / "table4_rules.csv", newline="") as fh:
        row = next(r for r in csv.DictReader(fh) if r["rule"] == "rule1")
    assert int(row["confident_cases"]) == confident["cases"]
    assert float(row["weighted_rate"]) == pytest.approx(weighted["rate"], abs=1e-6)
    samples = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert all(isinstance(s["p_good"], float) for s in samples)


def test_triples_without_p_good_are_said_once(tmp_path):
    tfile, lfile, _ = noisy_benchmark(tmp_path, with_p_good=False)
    out = evaluate_cli(tmp_path, tfile, lfile)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["triple_quality"]["p_good_triples"] == 0
    assert "confident" not in summary["models"][0]["overall"]["rules"]["rule1"]
    report = (out / "report.md").read_text()
    assert report.count("No triple carries the judge's p_good") == 1
    with open(out / "tables" / "table4_rules.csv", newline="") as fh:
        assert {r["confident_rate"] for r in csv.DictReader(fh)} == {""}


def test_the_level_is_a_setting_of_the_evaluation(tmp_path):
    tfile, lfile, _ = noisy_benchmark(tmp_path)
    out = tmp_path / "strict"
    res = CliRunner().invoke(
        main,
        ["evaluate", str(tfile), "--model", f"precomputed:{lfile}", "--out", str(out),
         "--confident-level", "0.95", "--no-plots", "-q", "--cache-dir", str(tmp_path / "c")],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["config"]["confident_level"] == 0.95
    rule1 = summary["models"][0]["overall"]["rules"]["rule1"]
    assert rule1["confident"]["level"] == 0.95
    res = CliRunner().invoke(
        main, ["evaluate", str(tfile), "--model", f"precomputed:{lfile}", "--confident-level", "0"]
    )
    assert res.exit_code == 2 and "--confident-level" in res.output


def test_compare_says_whether_each_conclusion_holds_on_the_confident_triples(tmp_path):
    """noise: the clean rate on good triples, most violations on the bad ones; clean: the clean
    rate everywhere; worse: a higher rate on the good triples too. noise > clean on all triples
    only because of the bad ones; worse > clean holds on the confident triples."""
    tfile, noise, _ = noisy_benchmark(tmp_path)
    triples = [json.loads(line) for line in tfile.read_text().splitlines()]
    clean, _ = model_labels(tmp_path / "clean.jsonl", triples, (CLEAN_RATE, CLEAN_RATE), 12)
    worse, _ = model_labels(tmp_path / "worse.jsonl", triples, (0.35, 0.35), 13)
    out = evaluate_cli(tmp_path, tfile, noise, clean, worse)
    comparison = json.loads((out / "comparison.json").read_text())
    confident = comparison["confident"]
    assert confident["level"] == 0.8 and 0.6 * GOOD < confident["n_triples"] < GOOD
    holds = confident["holds"]
    assert len(holds) == 3  # one line per pair: (noise, clean), (noise, worse), (clean, worse)
    # rule1 and substitution both read M(P,H') on these triples
    assert "0 of 2 significant differences hold" in holds[0]
    assert "not significant there: rule1, substitution" in holds[0]
    assert "2 of 2 significant differences hold" in holds[2] and "not significant" not in holds[2]
    report = (out / "report.md").read_text()
    assert report.count("**On confident triples:**") == 3
    # `transnli compare` gives the same, at the evaluation's level unless told otherwise
    res = CliRunner().invoke(main, ["compare", str(out), "--no-write"])
    assert res.exit_code == 0, res.output
    assert holds[0] in res.output
    res = CliRunner().invoke(
        main, ["compare", str(out), "--no-write", "--format", "json", "--confident-level", "0.5"]
    )
    assert json.loads(res.output)["confident"]["level"] == 0.5
    card = eval_card(out, comparison)
    assert "### On the triples the judge trusts" in card
    assert f"On the confident triples: {holds[0]}." in card
    rule1 = json.loads((out / "summary.json").read_text())["models"][0]["overall"]["rules"]
    confident = rule1["rule1"]["confident"]
    assert f"({confident['violations']}/{confident['cases']})" in card


def eval_card(out, comparison=None):
    summary = json.loads((out / "summary.json").read_text())
    run_info = json.loads((out / "run_info.json").read_text())
    return render_eval_card(summary, run_info, ["summary.json"], comparison=comparison)


def test_compare_without_p_good_says_so_once(tmp_path):
    tfile, a, _ = noisy_benchmark(tmp_path, with_p_good=False)
    triples = [json.loads(line) for line in tfile.read_text().splitlines()]
    b, _ = model_labels(tmp_path / "b.jsonl", triples, (0.3, 0.3), 5)
    out = evaluate_cli(tmp_path, tfile, a, b)
    assert "confident" not in json.loads((out / "comparison.json").read_text())
    report = (out / "report.md").read_text()
    assert "On confident triples" not in report
    assert report.count("No triple carries the judge's p_good") == 1
    res = CliRunner().invoke(main, ["compare", str(out), "--no-write"])
    assert res.exit_code == 0 and res.output.count("carry no p_good") == 1
    comparison = json.loads((out / "comparison.json").read_text())
    card = eval_card(out, comparison)
    assert card.count("carry no p_good") == 1 and "On the confident triples" not in card


def test_p_good_travels_through_a_parquet_export_into_the_evaluation(tmp_path):
    """The Parquet file `export --to parquet` writes keeps p_good as a column of the check; the
    evaluator reads it back through the same record."""
    from transnli.evaluator.triples import load_triples
    from transnli.generator.publish import write_parquet

    tfile, lfile, _ = noisy_benchmark(tmp_path)
    rows = [json.loads(line) for line in tfile.read_text().splitlines()]
    parquet = write_parquet(rows, tmp_path / "noisy.parquet")
    got = [t.p_good for t in load_triples([parquet])]
    assert got == [r["checks"]["acceptability"]["p_good"] for r in rows]
    a = json.loads((evaluate_cli(tmp_path, tfile, lfile, out="a") / "summary.json").read_text())
    b = json.loads((evaluate_cli(tmp_path, parquet, lfile, out="b") / "summary.json").read_text())
    assert a["models"][0]["overall"]["rules"] == b["models"][0]["overall"]["rules"]


def test_a_run_where_only_some_triples_carry_p_good_says_how_many(tmp_path):
    judged, lfile, _ = noisy_benchmark(tmp_path)
    plain, _, _ = noisy_benchmark(tmp_path, with_p_good=False)
    args = [str(judged), str(plain), "--model", f"precomputed:{lfile}", "--no-plots", "-q"]
    res = CliRunner().invoke(evaluate, [*args, "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["triple_quality"]["p_good_triples"] == GOOD + BAD
    rule1 = summary["models"][0]["overall"]["rules"]["rule1"]
    assert rule1["cases"] == 2 * (GOOD + BAD) and rule1["weighted"]["cases"] == GOOD + BAD
    report = (tmp_path / "out" / "report.md").read_text()
    assert f"{GOOD + BAD} of {2 * (GOOD + BAD)} triples carry (the rates below are over" in report
