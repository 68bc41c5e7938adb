"""`transnli alarm` (exit status, inputs, clear errors) and the alarms in `transnli evaluate` runs
with several models (summary.json, report.md, plot; soundness against gold labels)."""

from __future__ import annotations

import json
import random
from fractions import Fraction

import pytest
from click.testing import CliRunner
from transnli.evaluator import alarms as A
from transnli.evaluator.evaluate import evaluate_triples
from transnli.evaluator.schedule import KIND_TITLES
from transnli.evaluator.settings import EvaluationSettings

from transnli.cli import main
from transnli.cli.alarm import alarm

LABELS = ("entailment", "neutral", "contradiction")


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def invoke(*args):
    return CliRunner().invoke(alarm, [str(a) for a in args])


@pytest.fixture
def only_the_alarm_curve(monkeypatch):
    """Evaluations draw the alarm curve alone: the tests that use this look at plots/alarm_curve.*
    only, and the other figures (each in three formats) took most of their time. write_plots
    still saves the curve as every run does, after the figures of plots.FIGURES. (These tests
    call the Python API, which renders in this process: tests/conftest.py leaves no plot worker
    on.)"""
    from transnli.evaluator import plots

    monkeypatch.setattr(plots, "FIGURES", {})


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- counts files
@pytest.fixture
def paper_csv(tmp_path):
    p = tmp_path / "mtbench.csv"
    p.write_text("judge,a,b,tie\nauthors,5,10,10\ngpt4,4,18,3\n", encoding="utf-8")
    return p


def test_counts_csv_threshold_below_and_above_theta(paper_csv):
    ok = invoke(paper_csv, "--threshold", "0.5")
    assert ok.exit_code == 0, ok.output
    assert "theta* (M = 1) = 66.67% (2/3)" in ok.output and "no alarm" in ok.output
    fired = invoke(paper_csv, "--threshold", "70%")
    assert fired.exit_code == 1
    assert "ALARM" in fired.output and "at least one judge is below 70.00%" in fired.output
    # exactly theta* is reachable: no alarm; the smallest step above fires
    assert invoke(paper_csv, "--threshold", "2/3").exit_code == 0
    assert invoke(paper_csv, "--threshold", "0.6667").exit_code == 1


def test_registered_in_the_main_group(paper_csv):
    result = CliRunner().invoke(main, ["alarm", str(paper_csv), "--threshold", "0.9"])
    assert result.exit_code == 1


def test_counts_json_and_json_output(tmp_path):
    p = tmp_path / "counts.json"
    p.write_text(json.dumps({"x": {"yes": 3, "no": 7}, "y": {"no": 2, "yes": 8}}), encoding="utf-8")
    result = invoke(p, "--json", "--threshold", "0.9")
    data = json.loads(result.output)
    (res,) = data["results"]
    assert res["theta_star_exact"] == str(A.theta_star([(3, 7), (8, 2)]).theta)
    assert res["fires"] is (Fraction(9, 10) > A.theta_star([(3, 7), (8, 2)]).theta)
    assert result.exit_code == (1 if res["fires"] else 0)


def test_one_judge_is_refused_and_agreeing_judges_prove_nothing(tmp_path):
    p = tmp_path / "c.csv"
    p.write_text("judge,a,b\nonly,3,4\n", encoding="utf-8")
    result = invoke(p)
    assert result.exit_code == 2 and "at least two judges" in result.output
    p.write_text("judge,a,b\nx,3,4\ny,3,4\n", encoding="utf-8")
    result = invoke(p, "--threshold", "1")
    assert result.exit_code == 0 and "nothing is proven" in result.output


@pytest.mark.parametrize(
    "content,suffix,expected",
    [
        (
            "judge,a,b\nx,3,4\ny,3,x\n",
            ".csv",
            "c.csv:3: field 'b': 'x' is not a non-negative whole number",
        ),
        ("judge,a,b\nx,3,4\ny,3\n", ".csv", "c.csv:3: 2 fields, the header has 3"),
        ("name,a,b\nx,3,4\n", ".csv", "c.csv:1: the first column must be 'judge'"),
        ("judge,a,b\nx,3,4\nx,4,3\n", ".csv", "c.csv:3: field 'judge': 'x' given twice"),
        ("judge,a,b\nx,3,4\ny,3,3\n", ".csv", "must label the same items"),
        ('{"x": {"a": 1, "b": 2}, "y": {"a": 3, "c": 0}}', ".json", "judge 'y' has labels"),
        ('{"x": {"a": 1, "b": 2}, "y": {"a": -1, "b": 4}}', ".json", "label 'a': -1 is not"),
        ('{"x": ', ".json", "c.json:1: not JSON"),
        (
            '{"model": "m", "dataset": "d", "id": "1"}\n',
            ".jsonl",
            "c.jsonl:1: field 'labels' is missing",
        ),
        (
            '{"premise": "p", "hypothesis": "h", "label": "maybe"}\n',
            ".jsonl",
            "unknown label 'maybe'",
        ),
        ("[1]\n", ".jsonl", "c.jsonl:1: expected a JSON object"),
        ("", ".jsonl", "the file is empty"),
    ],
)
def test_bad_input_names_file_line_and_field(tmp_path, content, suffix, expected):
    p = tmp_path / f"c{suffix}"
    p.write_text(content, encoding="utf-8")
    other = tmp_path / "other.jsonl"
    write_jsonl(other, [{"premise": "p", "hypothesis": "h", "label": "e"}])
    args = [p, other] if suffix == ".jsonl" and "premise" in content else [p]
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert "Traceback" not in result.output


def test_usage_problems(tmp_path, paper_csv):
    assert "no such file" in invoke(tmp_path / "nope.csv").output
    result = invoke(paper_csv, "--threshold", "1.5")
    assert result.exit_code == 2 and "between 0 and 1" in result.output
    result = invoke(paper_csv, "--threshold", "high")
    assert result.exit_code == 2 and "not a number" in result.output
    pairs = write_jsonl(tmp_path / "p.jsonl", [{"premise": "p", "hypothesis": "h", "label": "e"}])
    result = invoke(paper_csv, pairs)
    assert result.exit_code == 2 and "one kind of input" in result.output


# --------------------------------------------------------------------------- label files
def random_run(tmp_path, n_triples=24, n_judges=3, seed=0, gold=True):
    """Triples with gold labels (P,H) and one labelled-pairs file per judge covering all four kinds
    (so --all-pairs works); judges are noisy copies of the gold label."""
    rng = random.Random(seed)
    tmp_path.mkdir(parents=True, exist_ok=True)
    triples, files = [], []
    pairs = []
    for i in range(n_triples):
        p, h, h2 = f"premise {i}", f"hypothesis {i}", f"changed {i}"
        rec = {
            "id": f"t{i}",
            "premise": p,
            "hypothesis": h,
            "modified_hypothesis": h2,
            "dataset": "d1" if i % 3 else "d2",
        }
        g = rng.choice(LABELS)
        if gold:
            rec["gold_label"] = g
        triples.append(rec)
        pairs += [
            ((p, h), g),
            ((h, h2), rng.choice(LABELS)),
            ((h2, h), rng.choice(LABELS)),
            ((p, h2), rng.choice(LABELS)),
        ]
    tfile = write_jsonl(tmp_path / "triples.jsonl", triples)
    for j in range(n_judges):
        skill = 0.3 + 0.6 * rng.random()
        rows = [
            {
                "premise": a,
                "hypothesis": b,
                "label": g if rng.random() < skill else rng.choice(LABELS),
            }
            for (a, b), g in pairs
        ]
        files.append(write_jsonl(tmp_path / f"judge{j}.jsonl", rows))
    return tfile, files


def test_labelled_pairs_files_match_the_counts(tmp_path):
    _, files = random_run(tmp_path, n_judges=2)
    result = invoke(*files, "--json")
    (res,) = json.loads(result.output)["results"]
    counts = []
    for f in files:
        labs = [json.loads(line)["label"] for line in f.read_text().splitlines()]
        counts.append(tuple(labs.count(lab) for lab in LABELS))
    assert res["items"] == 24 * 4
    assert Fraction(res["theta_star_exact"]) == A.theta_star(counts).theta


# --------------------------------------------------------------------------- evaluate
def test_evaluate_reports_alarms_that_are_sound(tmp_path, only_the_alarm_curve):
    for seed in range(3):
        # 16 triples (a third fewer LPs than the default 24); each seed still proves an alarm
        tfile, files = random_run(tmp_path / f"s{seed}", n_triples=16, seed=seed)
        out = tmp_path / f"out{seed}"
        plots = seed == 0  # the figures take most of the time; one run draws them
        evaluate_triples(
            [tfile],
            [f"precomputed:{f}" for f in files],
            out,
            EvaluationSettings(all_pairs=True, no_cache=True, show_progress=False, plots=plots),
        )
        summary = json.loads((out / "summary.json").read_text())
        section = summary["alarms"]
        assert section["judges"] == [f"precomputed:{f}" for f in files]
        by = {(e["dataset"], e["pairs"]): e for e in section["results"]}
        assert set(by) == {(d, k) for d in ("d2", "d1") for k in ("p_h", "h_h2", "h2_h", "p_h2")}
        for (_, kind), e in by.items():
            assert "skipped" not in e
            counts = [tuple(c[lab] for lab in LABELS) for c in e["counts"].values()]
            alarm = A.theta_star(counts)
            assert e["theta_star_exact"] == str(alarm.theta)
            assert e["curve"][0] == [0.0, 1.0] and e["curve"][-1][0] == 1.0
            m2 = e["m2_pairs"]
            assert Fraction(m2["theta_star_exact"]) == min(
                alarm.theta, Fraction(m2["pair_theta_star_exact"])
            )
            a, b = (list(e["counts"]).index(spec) for spec in m2["pair"])
            assert a < b
            if kind == "p_h":
                gold = e["gold"]
                assert gold["items_with_gold"] == e["items"]
                assert gold["weakest_within_theta_star"] is True
                assert gold["weakest_within_m2"] is True
                assert gold["weakest_true_accuracy"] <= e["theta_star"] + 1e-9
                # recompute the weakest from the per-label table
                low = min(
                    a
                    for accs in gold["true_per_label_accuracy"].values()
                    for a in accs.values()
                    if a is not None
                )
                assert low == gold["weakest_true_accuracy"]
            else:
                assert e["gold"] is None
        report = (out / "report.md").read_text()
        assert "## No-knowledge alarms" in report and "**proven**" in report
        if plots:
            assert (out / "plots" / "alarm_curve.png").stat().st_size > 10_000


def test_evaluate_alarm_outputs_are_deterministic(tmp_path, only_the_alarm_curve):
    tfile, files = random_run(tmp_path, seed=4)
    outs = []
    for name in ("a", "b"):
        evaluate_triples(
            [tfile],
            [f"precomputed:{f}" for f in files[:2]],
            tmp_path / name,
            EvaluationSettings(no_cache=True, show_progress=False),
        )
        outs.append(tmp_path / name)
    for rel in ("summary.json", "report.md", "plots/alarm_curve.png"):
        assert (outs[0] / rel).read_bytes() == (outs[1] / rel).read_bytes(), rel


def test_evaluate_two_stage_skips_p_h2_when_models_were_asked_different_pairs(tmp_path):
    tfile, files = random_run(tmp_path, seed=1, gold=False)
    out = tmp_path / "out"
    evaluate_triples(
        [tfile],
        [f"precomputed:{f}" for f in files],
        out,
        EvaluationSettings(no_cache=True, show_progress=False, plots=False),
    )
    entries = json.loads((out / "summary.json").read_text())["alarms"]["results"]
    ph2 = [e for e in entries if e["pairs"] == "p_h2"]
    assert ph2 and all("skipped" in e and "same (P,H') pairs" in e["skipped"] for e in ph2)
    ph = [e for e in entries if e["pairs"] == "p_h"]
    assert all(e["gold"]["items_with_gold"] == 0 for e in ph)
    assert not (out / "plots").exists()


def test_single_model_has_no_alarms(tmp_path, only_the_alarm_curve):
    tfile, files = random_run(tmp_path, seed=2)
    out = tmp_path / "out"
    evaluate_triples(
        [tfile],
        [f"precomputed:{files[0]}"],
        out,
        EvaluationSettings(no_cache=True, show_progress=False),
    )
    assert "alarms" not in json.loads((out / "summary.json").read_text())
    assert "No-knowledge" not in (out / "report.md").read_text()
    assert not (out / "plots" / "alarm_curve.png").exists()


def test_evaluate_with_a_tiny_hf_model_and_the_alarm_command_on_its_predictions(
    tmp_path, tiny_nli_entailing_model_dir
):
    tfile, files = random_run(tmp_path, seed=3)
    out = tmp_path / "out"
    evaluate_triples(
        [tfile],
        [f"precomputed:{files[0]}", str(tiny_nli_entailing_model_dir)],
        out,
        EvaluationSettings(cache_dir=tmp_path / "cache", show_progress=False, plots=False),
    )
    summary = json.loads((out / "summary.json").read_text())
    ph = next(
        e for e in summary["alarms"]["results"] if e["pairs"] == "p_h" and e["dataset"] == "d1"
    )
    hf = ph["counts"][str(tiny_nli_entailing_model_dir)]
    assert hf["entailment"] == ph["items"]  # this tiny model says entailment to everything
    # a judge that says one label everywhere can be perfect only if the truth is all that label
    other = ph["counts"][f"precomputed:{files[0]}"]
    assert ph["theta_star_exact"] == str(
        A.theta_star([tuple(other.values()), tuple(hf.values())]).theta
    )
    # the CLI on predictions.jsonl (with samples.jsonl beside it): the same distinct pairs
    result = invoke(out / "predictions.jsonl", "--dataset", "d1", "--json")
    (res,) = json.loads(result.output)["results"]
    assert res["items"] == ph["items"] and res["theta_star_exact"] == ph["theta_star_exact"]
    assert invoke(out / "predictions.jsonl", "--dataset", "zz").exit_code == 2


def test_labelled_pairs_use_the_pair_counts_too(tmp_path):
    _, files = random_run(tmp_path, n_judges=2, seed=6)
    labs = [
        [LABELS.index(json.loads(line)["label"]) for line in f.read_text().splitlines()]
        for f in files
    ]
    m1 = A.theta_star([tuple(x.count(i) for i in range(3)) for x in labs]).theta
    m2 = A.theta_star_joint(A.patterns_from_labels(labs), 3).theta
    assert m2 < m1  # this seed: the pair counts prove more
    between = (m1 + m2) / 2
    res = json.loads(invoke(*files, "--json").output)["results"][0]
    assert res["m2_pair"]["theta_star_exact"] == str(m2) and res["proven_bound_exact"] == str(m2)
    assert invoke(*files, "--threshold", str(between)).exit_code == 1
    only = invoke(*files, "--threshold", str(between), "--m1-only")
    assert only.exit_code == 0 and "M = 2" not in only.output
    assert invoke(*files, "--threshold", str(m2)).exit_code == 0


def alarm_section(triples, results):
    """The alarms of triples in memory, as evaluate_triples computes them; `results`: (spec,
    {pair: Prediction}) per model."""
    from transnli.evaluator.alarm_report import AlarmInputs
    from transnli.evaluator.distinct import digest
    from transnli.evaluator.label_table import LabelTable
    from transnli.evaluator.samples import triple_labels
    from transnli.evaluator.schedule import pairs_of

    inputs = AlarmInputs()
    inputs.add_triples(triples, [digest(p) for t in triples for p in pairs_of(t)])
    for spec, labels in results:
        table = LabelTable(labels)
        inputs.add_labels(spec, [triple_labels(t, table) for t in triples])
    return inputs.section()


def test_alarm_section_leaves_out_pairs_a_judge_gave_no_label():
    from transnli.evaluator.backends import Prediction
    from transnli.evaluator.triples import Triple

    triples = [Triple(f"t{i}", "d", f"p{i}", f"h{i}", f"x{i}", "entailment") for i in range(6)]
    one = {(t.premise, t.hypothesis): Prediction("entailment") for t in triples}
    two = {
        (t.premise, t.hypothesis): Prediction("neutral" if i < 2 else "entailment")
        for i, t in enumerate(triples)
    }
    two[("p5", "h5")] = Prediction(None)  # an unparseable LLM reply
    for t in triples:
        for pair in ((t.hypothesis, t.modified), (t.modified, t.hypothesis)):
            one[pair] = two[pair] = Prediction("contradiction")
    section = alarm_section(triples, [("one", one), ("two", two)])
    ph = next(e for e in section["results"] if e["pairs"] == "p_h")
    assert ph["items"] == 5 and ph["left_out_unlabelled"] == 1
    assert ph["counts"]["two"] == {"entailment": 3, "neutral": 2, "contradiction": 0}
    assert ph["theta_star_exact"] == "3/5"  # m = (3, 0, 0): all 5 items would have to be E
    assert ph["gold"]["weakest_true_accuracy"] == 0.6 and ph["gold"]["weakest_within_theta_star"]
    assert next(e for e in section["results"] if e["pairs"] == "p_h2")["skipped"].startswith(
        "not every model"
    )
    assert alarm_section(triples, [("one", one)]) is None


def shared_run(tmp_path, n_judges=3, seed=11):
    """Triples whose (P,H) pairs repeat (three H' per source pair, as generation gives), with one
    labelled-pairs file per judge: the items of (P,H) are fewer than the triples."""
    rng = random.Random(seed)
    tmp_path.mkdir(parents=True, exist_ok=True)
    triples, pairs = [], {}
    for i in range(40):
        p, h = f"premise {i // 3}", f"hypothesis {i // 3}"
        h2 = f"changed {i}"
        triples.append(
            {
                "id": f"t{i}",
                "premise": p,
                "hypothesis": h,
                "modified_hypothesis": h2,
                "dataset": "d1" if i < 30 else "d2",
            }
        )
        for pair in ((p, h), (h, h2), (h2, h), (p, h2)):
            pairs.setdefault(pair, rng.choice(LABELS))
    tfile = write_jsonl(tmp_path / "triples.jsonl", triples)
    files = []
    for j in range(n_judges):
        rows = [
            {
                "premise": a,
                "hypothesis": b,
                "label": g if rng.random() < 0.7 else rng.choice(LABELS),
            }
            for (a, b), g in pairs.items()
        ]
        files.append(write_jsonl(tmp_path / f"judge{j}.jsonl", rows))
    return tfile, files


def test_the_alarm_command_gives_the_theta_star_of_the_report(tmp_path):
    """One definition of theta*: `transnli alarm` on a run's samples.jsonl or predictions.jsonl
    counts the same items (distinct pairs) as summary.json and report.md, and names its two
    numbers as the report does. Before, the command counted a (P,H) shared by three triples three
    times and printed another theta*."""
    tfile, files = shared_run(tmp_path)
    out = tmp_path / "out"
    evaluate_triples(
        [tfile],
        [f"precomputed:{f}" for f in files],
        out,
        EvaluationSettings(all_pairs=True, no_cache=True, show_progress=False, plots=False),
    )
    entries = json.loads((out / "summary.json").read_text())["alarms"]["results"]
    report = (out / "report.md").read_text()
    assert "| items (distinct pairs) | theta* (M = 1) |" in report
    for e in entries:
        for source in ("samples.jsonl", "predictions.jsonl"):
            result = invoke(
                out / source, "--dataset", e["dataset"], "--pairs", e["pairs"], "--json"
            )
            (res,) = json.loads(result.output)["results"]
            assert res["items_are"] == "distinct pairs"
            assert res["items"] == e["items"]
            assert res["theta_star_exact"] == e["theta_star_exact"]
            assert res["proven_bound_exact"] == e["m2_pairs"]["theta_star_exact"]
        text = invoke(out / "predictions.jsonl", "--dataset", e["dataset"], "--pairs", e["pairs"])
        assert "theta* (M = 1) = " in text.output and f"({e['theta_star_exact']})" in text.output
        assert "theta* (M = 2) = " in text.output
        assert f"({e['m2_pairs']['theta_star_exact']})" in text.output
        row = next(
            line
            for line in report.splitlines()
            if line.startswith(f"| {e['dataset']} | {KIND_TITLES[e['pairs']]} |")
        )
        assert (
            f"({e['theta_star_exact']})" in row and f"({e['m2_pairs']['theta_star_exact']})" in row
        )
    ph = next(e for e in entries if e["pairs"] == "p_h" and e["dataset"] == "d1")
    assert ph["items"] == 10  # 30 triples, 10 distinct (P,H) pairs
    # a predictions.jsonl alone has no sentences: the items are the triples, and it says so
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "predictions.jsonl").write_bytes((out / "predictions.jsonl").read_bytes())
    result = invoke(alone / "predictions.jsonl", "--dataset", "d1", "--json")
    (res,) = json.loads(result.output)["results"]
    assert res["items_are"] == "triples" and res["items"] == 30
    assert "not the distinct pairs report.md counts" in res["note"]
    assert "30 triples" in invoke(alone / "predictions.jsonl", "--dataset", "d1").output


def test_the_alarm_curve_reads_without_the_docs(tmp_path):
    """House style (percent on both axes, words on the axes and title, paper width) and the
    M = 2 theta* of report.md drawn as a dashed line per kind of pair."""
    from transnli.evaluator import plots

    tfile, files = shared_run(tmp_path)
    out = tmp_path / "out"
    evaluate_triples(
        [tfile],
        [f"precomputed:{f}" for f in files],
        out,
        EvaluationSettings(no_cache=True, show_progress=False, plots=False),
    )
    summary = json.loads((out / "summary.json").read_text())
    with plots.style():
        fig = plots.alarm_curve_figure(summary)
    assert fig.get_figwidth() in (plots.COLUMN_IN, plots.FULL_IN)
    assert "no gold labels" in fig.get_suptitle()
    shown = [e for e in summary["alarms"]["results"] if "curve" in e]
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title(loc="left") for ax in panels] == ["d1", "d2"]
    for ax in panels:
        entries = [e for e in shown if e["dataset"] == ax.get_title(loc="left")]
        assert ax.get_ylim() == (0.0, 100.0) and ax.get_xscale() == "log"
        assert "(%" in ax.get_xlabel()
        dashed = sorted(
            line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"
        )
        assert dashed == pytest.approx(sorted(100 * e["m2_pairs"]["theta_star"] for e in entries))
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        for e in entries:
            assert any(
                f"θ* {100 * e['theta_star']:.1f}%" in t
                and f"M = 2: {100 * e['m2_pairs']['theta_star']:.1f}%" in t
                for t in legend
            ), legend
    assert "%" in panels[0].get_ylabel() and "every model" in panels[0].get_ylabel()
    assert min(t.get_fontsize() for t in fig.findobj(lambda a: hasattr(a, "get_fontsize"))) >= 7


def test_evaluate_survives_the_lp_that_highs_does_not_finish(tmp_path):
    """Issue 38: these (P,H) joint counts stopped HiGHS with "model_status is Unknown" in the LP
    bound, which ended the whole evaluation in a raw RuntimeError with no output left."""
    from test_alarms import UNFINISHED_LP_COUNTS

    codes = [ab for ab, c in UNFINISHED_LP_COUNTS.items() for _ in range(c)]
    triples, rows = [], ([], [])
    for i, (a, b) in enumerate(codes):
        p, h, h2 = f"premise {i}", f"hypothesis {i}", f"changed {i}"
        triples.append({"id": f"t{i}", "premise": p, "hypothesis": h, "modified_hypothesis": h2})
        for judge, code in zip(rows, (a, b), strict=True):
            judge.append({"premise": p, "hypothesis": h, "label": LABELS[code]})
            judge += [
                {"premise": x, "hypothesis": y, "label": "neutral"}
                for x, y in ((h, h2), (h2, h), (p, h2))
            ]
    tfile = write_jsonl(tmp_path / "triples.jsonl", triples)
    files = [write_jsonl(tmp_path / f"{n}.jsonl", r) for n, r in zip("AB", rows, strict=True)]
    out = tmp_path / "ev"
    args = ["evaluate", tfile, *(x for f in files for x in ("--model", f"precomputed:{f}"))]
    result = CliRunner().invoke(main, [str(a) for a in [*args, "--out", out, "--no-plots", "-q"]])
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text())
    (entry,) = [e for e in summary["alarms"]["results"] if e["pairs"] == "p_h"]
    assert (
        Fraction(entry["m2_pairs"]["pair_theta_star_exact"])
        >= A.theta_star_joint(UNFINISHED_LP_COUNTS, 3).theta
    )
