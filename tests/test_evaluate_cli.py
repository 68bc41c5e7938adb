"""`transnli evaluate` end to end (click's CliRunner) on a hand-made fixture whose rates are counted
by hand below, plus runs with a local tiny hf model (second run served from the cache)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from transnli.evaluator.evaluate import evaluate_triples
from transnli.evaluator.metric_rows import NOISE_COLUMNS
from transnli.evaluator.settings import EvaluationSettings

from transnli.cli.evaluate import evaluate

# Triples: (id, dataset or None (-> file name "alpha"), P, H, H', gold) and the labels a model
# gives to (P,H), (H,H'), (H',H), (P,H') ("-": not needed, so not in the label file).
FIXTURE = [
    # id   dataset  P     H     H'     gold            ph   hh2  h2h  ph2
    ("t1", None, "p1", "h1", "h1x", "entailment", "E", "E", "E", "E"),  # rule1 ok
    ("t2", None, "p1", "h2", "h2x", "neutral", "E", "E", "E", "N"),  # rule1 violated, subst. viol.
    ("t3", None, "p2", "h3", "h3x", None, "E", "C", "C", "C"),  # rule2 ok
    ("t4", None, "p2", "h4", "h4x", None, "N", "C", "C", "E"),  # rule4 violated
    ("t5", None, "p3", "h5", "h5x", None, "N", "E", "E", "C"),  # rule3 violated, subst. viol.
    ("t6", None, "p3", "h6", "h6x", None, "C", "C", "N", "-"),  # no rule; C-symmetry violated
    ("t7", None, "p1", "h1", "h1y", "entailment", "E", "N", "N", "-"),  # no rule; (p1,h1) again
    ("t8", "beta", "q1", "k1", "k1x", None, "N", "E", "E", "N"),  # rule3 ok
    ("t9", "beta", "q1", "k2", "k2x", None, "E", "N", "C", "-"),  # nothing
]
FULL = {"E": "entailment", "N": "neutral", "C": "contradiction"}
SPELLING = {"E": "ENTAILMENT", "N": "neutral", "C": "c"}  # label files may spell labels any way

# Hand count (see the comments above).
ALPHA = {
    "n_triples": 7,
    "accuracy": 0.5,
    "accuracy_pairs": 2,  # (p1,h1) right once, (p1,h2) wrong
    "mutual_entailment_rate": 3 / 7,
    "mutual_contradiction_rate": 2 / 7,
    "rules": {"rule1": (2, 1), "rule2": (1, 0), "rule3": (1, 1), "rule4": (1, 1)},
    "substitution": (3, 2),
    "contradiction_symmetry": (3, 1),
}
BETA = {
    "n_triples": 2,
    "accuracy": None,
    "accuracy_pairs": 0,
    "mutual_entailment_rate": 0.5,
    "mutual_contradiction_rate": 0.0,
    "rules": {"rule1": (0, 0), "rule2": (0, 0), "rule3": (1, 0), "rule4": (0, 0)},
    "substitution": (1, 0),
    "contradiction_symmetry": (0, 0),
}


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    """Never touch the user's ~/.cache/transnli from a test."""
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def fixture_files(tmp_path):
    triples, labels = [], {}
    for tid, dataset, p, h, h2, gold, ph, hh2, h2h, ph2 in FIXTURE:
        rec = {"id": tid, "premise": p, "hypothesis": h, "modified_hypothesis": h2}
        if dataset:
            rec["dataset"] = dataset
        if gold:
            rec["gold_label"] = gold
        triples.append(rec)
        for pair, lab in (((p, h), ph), ((h, h2), hh2), ((h2, h), h2h), ((p, h2), ph2)):
            if lab != "-":
                assert labels.setdefault(pair, lab) == lab
    tfile = write_jsonl(tmp_path / "alpha.jsonl", triples)
    lfile = write_jsonl(
        tmp_path / "labels.jsonl",
        [{"premise": a, "hypothesis": b, "label": SPELLING[lab]} for (a, b), lab in labels.items()],
    )
    return tfile, lfile


def run(args):
    result = CliRunner().invoke(evaluate, [str(a) for a in args])
    return result


def check_dataset(entry, expected):
    assert entry["n_triples"] == expected["n_triples"]
    assert entry["accuracy"] == expected["accuracy"]
    assert entry["accuracy_pairs"] == expected["accuracy_pairs"]
    assert entry["mutual_entailment_rate"] == pytest.approx(expected["mutual_entailment_rate"])
    assert entry["mutual_contradiction_rate"] == pytest.approx(
        expected["mutual_contradiction_rate"]
    )
    for key, (cases, violations) in expected["rules"].items():
        cell = entry["rules"][key]
        assert (cell["cases"], cell["violations"]) == (cases, violations), key
        assert cell["rate"] == (violations / cases if cases else None)
        assert (cell["ci95"] is None) == (cases == 0)
    for key in ("substitution", "contradiction_symmetry"):
        cell = entry["extras"][key]
        assert (cell["cases"], cell["violations"]) == expected[key], key


def test_precomputed_hand_count(fixture_files, tmp_path):
    tfile, lfile = fixture_files
    out = tmp_path / "out"
    res = run(
        [tfile, "--model", f"precomputed:{lfile}", "--out", out, "--cache-dir", tmp_path / "c"]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    # the shape
    assert [m["model"] for m in summary["models"]] == [f"precomputed:{lfile}"]
    datasets = summary["models"][0]["datasets"]
    assert [d["dataset"] for d in datasets] == ["alpha", "beta"]
    for d in datasets:
        assert {
            "dataset",
            "n_triples",
            "accuracy",
            "mutual_entailment_rate",
            "mutual_contradiction_rate",
            "rules",
        } <= set(d)
        assert list(d["rules"]) == ["rule1", "rule2", "rule3", "rule4"]
        assert [d["rules"][k]["name"] for k in d["rules"]] == [
            "E&E->E",
            "E&C->C",
            "N&E->¬C",
            "N&C->¬E",
        ]
        for cell in d["rules"].values():
            assert set(cell) == {"name", "cases", "violations", "rate", "ci95"}
    check_dataset(datasets[0], ALPHA)
    check_dataset(datasets[1], BETA)
    # (P,H') was asked for only where (H,H') is mutual: 6 of 9 triples
    assert (
        summary["provenance"]["models"][0]["pairs_labelled"] == 9 * 3 - 1 + 6
    )  # (p1,h1) is shared by t1 and t7

    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [p["id"] for p in preds] == [f[0] for f in FIXTURE]
    for p, f in zip(preds, FIXTURE, strict=True):
        assert p["labels"] == {
            "p_h": FULL[f[6]],
            "h_h2": FULL[f[7]],
            "h2_h": FULL[f[8]],
            "p_h2": FULL.get(f[9]),
        }
        assert p["probs"]["p_h"] is None  # the label file had no probabilities
    assert preds[1]["rule"] == "rule1" and preds[1]["violated"] is True
    assert preds[5]["rule"] is None and preds[5]["violated"] is None

    report = (out / "report.md").read_text()
    for title in ("Table 1", "Table 2", "Table 3", "Table 4", "Beyond the paper"):
        assert title in report
    assert "50.0% [9.5, 90.5] (1/2)" in report  # alpha rule1
    assert "Table 9" not in report  # no stats.json beside the triples
    for name in (
        "table1_accuracy.csv",
        "table2_mutual_contradiction.csv",
        "table3_mutual_entailment.csv",
        "table4_rules.csv",
        "extras_beyond_paper.csv",
    ):
        assert (out / "tables" / name).stat().st_size > 0
    for name in ("violation_heatmap.png", "mutual_rates.png"):
        assert (out / "plots" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rules_csv = (out / "tables" / "table4_rules.csv").read_text().splitlines()
    assert rules_csv[0] == ",".join(
        ["dataset,rule,name,model,cases,violations,rate,ci95_low,ci95_high", *NOISE_COLUMNS]
    )  # the NOISE_COLUMNS are empty here: these triples carry no p_good
    assert len(rules_csv) == 1 + 2 * 4


def test_outputs_are_deterministic_and_table9(fixture_files, tmp_path):
    tfile, lfile = fixture_files
    (tmp_path / "stats.json").write_text(
        json.dumps(
            {
                "sentences_read": 120,
                "candidates_built": 40,
                "triples_accepted": 9,
                "acceptance_rate": 0.225,
                "other": {"nested": True},
            }
        )
    )
    outs = []
    for name in ("a", "b"):
        res = run(
            [
                tfile,
                "--model",
                f"precomputed:{lfile}",
                "--model",
                f"precomputed:{lfile}",
                "--out",
                tmp_path / name,
                "--no-cache",
            ]
        )
        assert res.exit_code == 0, res.output
        outs.append(tmp_path / name)
    files = sorted(p.relative_to(outs[0]) for p in outs[0].rglob("*") if p.is_file())
    assert len(files) == 22  # 5 files, 7 tables (with Table 9), 3 figures x (png, pdf, svg)
    for rel in files:
        if (
            rel.name == "run_info.json"
        ):  # the run's date, command line, times: by design not identical
            continue
        assert (outs[0] / rel).read_bytes() == (outs[1] / rel).read_bytes(), rel
    report = (outs[0] / "report.md").read_text()
    assert "Table 9" in report and "22.5%" in report
    summary = json.loads((outs[0] / "summary.json").read_text())
    assert len(summary["models"]) == 1  # the same spec twice is one model


def test_all_pairs_needs_every_pmod_pair(fixture_files, tmp_path):
    tfile, lfile = fixture_files
    res = run(
        [
            tfile,
            "--model",
            f"precomputed:{lfile}",
            "--out",
            tmp_path / "o",
            "--all-pairs",
            "--no-cache",
            "--no-progress",
        ]
    )
    assert res.exit_code == 1
    assert "Error:" in res.output and "Traceback" not in res.output
    assert (
        "3 of the 35 pairs" in res.output
    )  # 26 + 9 (P,H'); (p3,h6x), (p1,h1y), (q1,k2x) are not in the file
    assert not (tmp_path / "o" / "summary.json").exists()


@pytest.mark.parametrize(
    "problem", ["bad_json", "missing_field", "bad_gold", "unknown_backend", "no_file", "empty"]
)
def test_clear_errors(fixture_files, tmp_path, problem):
    tfile, lfile = fixture_files
    model = f"precomputed:{lfile}"
    if problem == "bad_json":
        tfile.write_text(tfile.read_text() + "{oops\n")
    elif problem == "missing_field":
        tfile.write_text('{"premise": "p", "hypothesis": "h"}\n')
    elif problem == "bad_gold":
        tfile.write_text(
            '{"premise": "p", "hypothesis": "h", "modified_hypothesis": "x", "gold_label": "yes"}\n'
        )
    elif problem == "unknown_backend":
        model = "nosuch:thing"
    elif problem == "no_file":
        model = f"precomputed:{tmp_path / 'none.jsonl'}"
    elif problem == "empty":
        tfile.write_text("\n")
    res = run([tfile, "--model", model, "--out", tmp_path / "o", "--no-cache", "--no-progress"])
    assert res.exit_code == 1, res.output
    assert res.output.startswith("Error:") and "Traceback" not in res.output
    expected = {
        "bad_json": "alpha.jsonl:10",
        "missing_field": "modified_hypothesis",
        "bad_gold": "gold_label",
        "unknown_backend": "unknown backend",
        "no_file": "no such file",
        "empty": "no triples",
    }[problem]
    assert expected in res.output


def test_default_cache_folder_comes_from_the_environment(fixture_files, tmp_path):
    tfile, lfile = fixture_files
    res = run([tfile, "--model", f"precomputed:{lfile}", "--out", tmp_path / "o", "--no-plots"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "default-cache" / "labels.sqlite3").is_file()
    assert "(no model run)" in res.output


def test_usage_errors(fixture_files, tmp_path):
    tfile, lfile = fixture_files
    assert run([tfile, "--out", tmp_path / "o"]).exit_code == 2  # no --model
    assert run([tmp_path / "nope.jsonl", "--model", "x", "--out", tmp_path / "o"]).exit_code == 2
    res = run(
        [
            tfile,
            "--model",
            f"precomputed:{lfile}",
            "--out",
            tmp_path / "o",
            "--label-map",
            "0=e,1=e,2=n",
            "--no-cache",
        ]
    )
    assert res.exit_code == 1 and "exactly once" in res.output


# ------------------------------------------------------------------ hf models
def test_hf_forced_model_end_to_end(fixture_files, tiny_nli_entailing_model_dir, tmp_path):
    tfile, _ = fixture_files
    out = tmp_path / "out"
    res = run(
        [
            tfile,
            "--model",
            tiny_nli_entailing_model_dir,
            "--out",
            out,
            "--cache-dir",
            tmp_path / "cache",
            "--batch-size",
            "4",
            "--no-progress",
            "--no-plots",  # the figures are not what this test reads
        ]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    alpha, beta = summary["models"][0]["datasets"]
    # every label is entailment: all (H,H') mutual E, rule 1 applies everywhere and holds
    assert alpha["mutual_entailment_rate"] == 1.0 and alpha["mutual_contradiction_rate"] == 0.0
    assert alpha["rules"]["rule1"] == {
        "name": "E&E->E",
        "cases": 7,
        "violations": 0,
        "rate": 0.0,
        "ci95": pytest.approx([0.0, 0.354330], abs=1e-6),
    }  # z²/(n+z²)
    assert beta["rules"]["rule1"]["cases"] == 2
    assert alpha["accuracy"] == 0.5  # gold (p1,h1)=entailment right, (p1,h2)=neutral wrong
    prov = summary["provenance"]["models"][0]
    assert prov["backend"] == "hf" and prov["labels"] == {
        "0": "contradiction",
        "1": "neutral",
        "2": "entailment",
    }


def test_hf_second_run_is_served_from_the_cache(
    fixture_files, tiny_nli_model_dir, tmp_path, monkeypatch
):
    from transnli.evaluator import plots

    # of the figures, the runs compare the heatmap's bytes: the others are not drawn
    monkeypatch.setattr(plots, "FIGURES", {"violation_heatmap": plots.FIGURES["violation_heatmap"]})
    tfile, _ = fixture_files
    args = [
        tfile,
        "--model",
        f"hf:{tiny_nli_model_dir}",
        "--cache-dir",
        tmp_path / "cache",
        "--batch-size",
        "3",
    ]
    res1 = run([*args, "--out", tmp_path / "one"])
    assert res1.exit_code == 0, res1.output
    res2 = run([*args, "--out", tmp_path / "two", "--no-progress"])
    assert res2.exit_code == 0, res2.output
    n = json.loads((tmp_path / "one" / "summary.json").read_text())["provenance"]["models"][0][
        "pairs_labelled"
    ]
    assert f"{n} pairs labelled (0 from cache, {n} computed)" in res1.output
    assert f"{n} pairs labelled ({n} from cache, 0 computed)" in res2.output
    for name in (
        "summary.json",
        "predictions.jsonl",
        "report.md",
        "tables/table4_rules.csv",
        "plots/violation_heatmap.png",
    ):
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), (
            name
        )

    # the summary agrees with a recount from predictions.jsonl (random weights: any labels)
    preds = [
        json.loads(line)
        for line in (tmp_path / "one" / "predictions.jsonl").read_text().splitlines()
    ]
    summary = json.loads((tmp_path / "one" / "summary.json").read_text())
    for entry in summary["models"][0]["datasets"]:
        rows = [p for p in preds if p["dataset"] == entry["dataset"]]
        for key, cell in entry["rules"].items():
            assert cell["cases"] == sum(p["rule"] == key for p in rows)
            assert cell["violations"] == sum(p["rule"] == key and p["violated"] for p in rows)
        mutual_e = sum(p["labels"]["h_h2"] == p["labels"]["h2_h"] == "entailment" for p in rows)
        assert entry["mutual_entailment_rate"] == pytest.approx(mutual_e / len(rows))
        for p in rows:
            if p["labels"]["h_h2"] == p["labels"]["h2_h"] != "neutral":  # mutual E or C
                assert (
                    p["labels"]["p_h2"] is not None
                    and p["rule"] is not None
                    or p["labels"]["p_h"] == "contradiction"
                )
            if p["probs"]["p_h"] is not None:
                assert sum(p["probs"]["p_h"].values()) == pytest.approx(1.0, abs=1e-5)


def test_evaluate_triples_api(fixture_files, tiny_nli_entailing_model_dir, tmp_path):
    tfile, lfile = fixture_files
    result = evaluate_triples(
        [tfile],
        [f"precomputed:{lfile}", str(tiny_nli_entailing_model_dir)],
        tmp_path / "api",
        EvaluationSettings(cache_dir=tmp_path / "cache", show_progress=False, plots=False),
    )
    assert [m["model"] for m in result.summary["models"]] == [
        f"precomputed:{lfile}",
        str(tiny_nli_entailing_model_dir),
    ]
    assert [s.computed for s in result.stats] == [32, 35]  # hf: mutual E everywhere
    assert not (tmp_path / "api" / "plots").exists()
    assert {p.name for p in result.files} >= {"summary.json", "predictions.jsonl", "report.md"}


# ------------------------------------------------------------------ --out and the triples files
def test_out_holding_another_evaluation_is_refused_unless_overwrite(fixture_files, tmp_path):
    tfile, lfile = fixture_files
    other = tmp_path / "other-labels.jsonl"
    other.write_bytes(lfile.read_bytes())
    out, cache = tmp_path / "out", tmp_path / "c"
    first = [tfile, "--model", f"precomputed:{lfile}", "--out", out, "--cache-dir", cache]
    assert run(first).exit_code == 0 and (out / "plots").is_dir()
    before = (out / "summary.json").read_bytes()
    again = run(
        [*first, "--batch-size", "7"]
    )  # the same evaluation again (another batch size): fine
    assert again.exit_code == 0, again.output
    assert json.loads((out / "summary.json").read_text())["provenance"]["config"]["batch_size"] == 7

    second = [
        tfile,
        "--model",
        f"precomputed:{other}",
        "--out",
        out,
        "--cache-dir",
        cache,
        "--no-plots",
    ]
    refused = run(second)
    assert (
        refused.exit_code != 0
        and f"{out} already holds the outputs of another evaluation" in refused.output
    )
    assert "--overwrite" in refused.output and "Traceback" not in refused.output
    assert (
        json.loads((out / "summary.json").read_text())["models"][0]["model"]
        == f"precomputed:{lfile}"
    )
    assert json.loads(before)["models"] == json.loads((out / "summary.json").read_text())["models"]

    replaced = run([*second, "--overwrite"])
    assert replaced.exit_code == 0, replaced.output
    assert (
        "replaced an earlier evaluation's outputs" in replaced.output
        and "plots/" in replaced.output
    )
    assert not (out / "plots").exists()  # no stale plot of the first evaluation
    assert (
        json.loads((out / "summary.json").read_text())["models"][0]["model"]
        == f"precomputed:{other}"
    )


def test_out_holding_other_files_is_refused_and_overwrite_keeps_them(fixture_files, tmp_path):
    tfile, lfile = fixture_files
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    args = [tfile, "--model", f"precomputed:{lfile}", "--out", out, "--no-cache", "--no-plots"]
    refused = run(args)
    assert refused.exit_code != 0 and "already holds files of its own" in refused.output
    assert run([*args, "--overwrite"]).exit_code == 0
    assert (out / "notes.txt").read_text() == "mine" and (out / "summary.json").exists()


def test_the_same_triples_file_twice_is_an_error(fixture_files, tmp_path):
    tfile, lfile = fixture_files
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(tfile.read_bytes())
    base = [
        "--model",
        f"precomputed:{lfile}",
        "--out",
        tmp_path / "out",
        "--no-cache",
        "--no-plots",
    ]
    twice = run([tfile, tmp_path / "." / tfile.name, *base])
    assert twice.exit_code != 0 and "is given twice" in twice.output
    same = run([tfile, copy, *base])
    assert same.exit_code != 0 and "have the same content" in same.output
    assert not (tmp_path / "out").exists()


def test_triple_ids_shared_by_two_files_are_a_warning(fixture_files, tmp_path):
    tfile, lfile = fixture_files
    rows = [json.loads(line) for line in tfile.read_text().splitlines()]
    second = write_jsonl(tmp_path / "second.jsonl", [dict(r, dataset="second") for r in rows[:3]])
    res = run(
        [
            tfile,
            second,
            "--model",
            f"precomputed:{lfile}",
            "--out",
            tmp_path / "out",
            "--no-cache",
            "--no-plots",
        ]
    )
    assert res.exit_code == 0, res.output
    assert "warning: 3 triple ids appear in more than one triples file (e.g. 't1'" in res.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["provenance"]["n_triples"] == len(rows) + 3
