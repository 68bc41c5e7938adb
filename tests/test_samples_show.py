"""samples.jsonl, the violating triples in report.md, tables/per_model.csv and per_dataset.csv, and
`transnli show`: on a hand-labelled fixture whose outcomes are counted below, and on a run with two
tiny hf models whose flags are checked against the rules."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner
from transnli.evaluator.evaluate import evaluate_triples
from transnli.evaluator.outdir import OUTPUT_NAMES
from transnli.evaluator.rules import evaluate_triple
from transnli.evaluator.settings import EvaluationSettings
from transnli.evaluator.show import ShowError, resolve_query

from transnli.cli.evaluate import evaluate
from transnli.cli.show import show

# id, dataset, P, H, H', labels of model "first" for (P,H), (H,H'), (H',H), (P,H') ("-": not needed)
FIXTURE = [
    (
        "a1",
        "alpha",
        "A man sleeps.",
        "A man rests.",
        "A man dozes.",
        "E",
        "E",
        "E",
        "N",
    ),  # rule1 violated
    (
        "a2",
        "alpha",
        "A man sleeps.",
        "The cat | dog is up.",
        "The cat | dog is down.",
        "E",
        "C",
        "C",
        "E",
    ),  # rule2 v.
    (
        "a3",
        "alpha",
        "A dog runs.",
        "A dog moves.",
        "A dog goes.",
        "N",
        "E",
        "E",
        "C",
    ),  # rule3 violated
    (
        "a4",
        "alpha",
        "A dog runs.",
        "A dog sits.",
        "A dog stands.",
        "N",
        "C",
        "C",
        "N",
    ),  # rule4 held
    (
        "a5",
        "alpha",
        "A cat eats.",
        "A cat dines.",
        "A cat feeds.",
        "E",
        "E",
        "E",
        "E",
    ),  # rule1 held
    (
        "a6",
        "alpha",
        "A cat eats.",
        "A cat is open.",
        "A cat is shut.",
        "C",
        "C",
        "N",
        "-",
    ),  # no rule; C-sym
    (
        "b1",
        "beta",
        "A child is happy.",
        "A child smiles.",
        "A child grins.",
        "E",
        "E",
        "E",
        "C",
    ),  # rule1 v.
    (
        "b2",
        "beta",
        "A child is happy.",
        "A kid is glad.",
        "A kid is joyful.",
        "E",
        "E",
        "E",
        "N",
    ),  # rule1 v.
    (
        "b3",
        "beta",
        "A woman is old.",
        "A woman is aged.",
        "A woman is elderly.",
        "E",
        "E",
        "E",
        "N",
    ),  # rule1 v.
    (
        "a7",
        "alpha",
        "People are inside.",
        "People are in.",
        "People are indoors.",
        "E",
        "E",
        "E",
        "C",
    ),  # r1 v.
    (
        "a8",
        "alpha",
        "People are inside.",
        "Folk are in.",
        "Folk are indoors.",
        "E",
        "E",
        "E",
        "N",
    ),  # r1 v.
]
FULL = {"E": "entailment", "N": "neutral", "C": "contradiction"}
RULE1_VIOLATIONS = ["a1", "b1", "b2", "b3", "a7", "a8"]
SUBSTITUTION_VIOLATIONS = ["a1", "a3", "b1", "b2", "b3", "a7", "a8"]


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def evaluation(tmp_path):
    """An evaluation of FIXTURE by model "first" (the labels above) and "second" (entailment for
    every pair: rule1 applies everywhere and always holds)."""
    triples, first, second = [], {}, {}
    for tid, ds, p, h, h2, *labels in FIXTURE:
        triples.append(
            {"id": tid, "dataset": ds, "premise": p, "hypothesis": h, "modified_hypothesis": h2}
        )
        for pair, lab in zip(((p, h), (h, h2), (h2, h), (p, h2)), labels, strict=True):
            second[pair] = "entailment"
            if lab != "-":
                assert first.setdefault(pair, FULL[lab]) == FULL[lab]
    tfile = _jsonl(tmp_path / "triples.jsonl", triples)
    (tmp_path / "labels").mkdir()
    f1 = _jsonl(
        tmp_path / "labels" / "first.jsonl",
        [{"premise": a, "hypothesis": b, "label": v} for (a, b), v in first.items()],
    )
    f2 = _jsonl(
        tmp_path / "labels" / "second.jsonl",
        [
            {
                "premise": a,
                "hypothesis": b,
                "label": v,
                "probs": {"entailment": 0.9, "neutral": 0.06, "contradiction": 0.04},
            }
            for (a, b), v in second.items()
        ],
    )
    out = tmp_path / "eval"
    res = CliRunner().invoke(
        evaluate,
        [
            str(tfile),
            "-m",
            f"precomputed:{f1}",
            "-m",
            f"precomputed:{f2}",
            "--out",
            str(out),
            "--no-cache",
            "--no-progress",
            "--no-plots",
        ],
    )
    assert res.exit_code == 0, res.output
    return out, f"precomputed:{f1}", f"precomputed:{f2}"


def read_samples(out):
    return [
        json.loads(line)
        for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    ]


# ------------------------------------------------------------------ samples.jsonl
def test_samples_hold_sentences_labels_and_outcomes(evaluation):
    out, m1, m2 = evaluation
    assert "samples.jsonl" in OUTPUT_NAMES  # --overwrite replaces it
    rows = read_samples(out)
    assert [(r["model"], r["id"]) for r in rows] == [(m, f[0]) for m in (m1, m2) for f in FIXTURE]
    first = rows[: len(FIXTURE)]
    for row, (tid, ds, p, h, h2, ph, hh2, h2h, ph2) in zip(first, FIXTURE, strict=True):
        assert list(row)[:7] == [
            "id",
            "dataset",
            "model",
            "premise",
            "hypothesis",
            "modified_hypothesis",
            "gold_label",
        ]
        assert (
            row["id"],
            row["dataset"],
            row["premise"],
            row["hypothesis"],
            row["modified_hypothesis"],
        ) == (tid, ds, p, h, h2)
        assert row["labels"] == {
            "p_h": FULL[ph],
            "h_h2": FULL[hh2],
            "h2_h": FULL[h2h],
            "p_h2": FULL.get(ph2),
        }
        assert row["probs"]["p_h"] is None  # the first label file has no probabilities
    by_id = {r["id"]: r for r in first}
    assert {k: (v["rule"], v["violated"]) for k, v in by_id.items()} == {
        "a1": ("rule1", True),
        "a2": ("rule2", True),
        "a3": ("rule3", True),
        "a4": ("rule4", False),
        "a5": ("rule1", False),
        "a6": (None, None),
        "b1": ("rule1", True),
        "b2": ("rule1", True),
        "b3": ("rule1", True),
        "a7": ("rule1", True),
        "a8": ("rule1", True),
    }
    assert by_id["a2"]["rule_name"] == "E&C->C" and by_id["a6"]["rule_name"] is None
    assert [r["id"] for r in first if r["extras"]["substitution"]] == SUBSTITUTION_VIOLATIONS
    assert by_id["a2"]["extras"]["substitution"] is None  # mutual C: does not apply
    assert by_id["a6"]["extras"] == {"substitution": None, "contradiction_symmetry": True}
    second = rows[len(FIXTURE) :]
    assert all(r["rule"] == "rule1" and r["violated"] is False for r in second)
    assert second[0]["probs"]["p_h2"] == {"entailment": 0.9, "neutral": 0.06, "contradiction": 0.04}


def test_samples_agree_with_summary_counts(evaluation):
    out, m1, _ = evaluation
    rows = read_samples(out)
    summary = json.loads((out / "summary.json").read_text())
    for model in summary["models"]:
        for entry in model["datasets"]:
            mine = [
                r for r in rows if r["model"] == model["model"] and r["dataset"] == entry["dataset"]
            ]
            for key, cell in entry["rules"].items():
                assert cell["cases"] == sum(r["rule"] == key for r in mine)
                assert cell["violations"] == sum(r["rule"] == key and r["violated"] for r in mine)
            for key, cell in entry["extras"].items():
                if key == "beyond_paper":
                    continue
                assert cell["cases"] == sum(r["extras"][key] is not None for r in mine), key
                assert cell["violations"] == sum(bool(r["extras"][key]) for r in mine), key


# ------------------------------------------------------------------ report.md
def test_report_lists_violating_triples(evaluation):
    out, m1, m2 = evaluation
    report = (out / "report.md").read_text(encoding="utf-8")
    section = report[report.index("## Violating triples") :]
    first = section[section.index(f"### `{m1}`") : section.index(f"### `{m2}`")]
    rule1 = first[first.index("**rule1**") : first.index("**rule2**")]
    assert "6 of 7 cases violated; 3 shown" in rule1
    # the first per dataset in input order, the datasets in turn: a1 (alpha), b1 (beta), a7 (alpha)
    assert [line.split("`")[1] for line in rule1.splitlines() if line.startswith("| `")] == [
        "a1",
        "b1",
        "a7",
    ]
    assert "| `a1` | alpha | A man sleeps. | A man rests. | A man dozes. | E | E | E | N |" in rule1
    rule2 = first[first.index("**rule2**") : first.index("**rule3**")]
    assert "The cat \\| dog is up." in rule2  # a pipe does not break the table row
    assert (
        "**rule4** `N&C->¬E` (M(P,H)=N and mutual C => M(P,H')!=E): no violation in 1 case."
        in first
    )
    second = section[section.index(f"### `{m2}`") :]
    assert (
        "**rule1** `E&E->E` (M(P,H)=E and mutual E => M(P,H')=E): no violation in 11 cases."
        in second
    )


# ------------------------------------------------------------------ CSV tables
def test_per_model_and_per_dataset_csv(evaluation):
    out, m1, m2 = evaluation
    with open(out / "tables" / "per_model.csv", newline="") as fh:
        per_model = list(csv.DictReader(fh))
    with open(out / "tables" / "per_dataset.csv", newline="") as fh:
        per_dataset = list(csv.DictReader(fh))
    assert [r["model"] for r in per_model] == [m1, m2]
    assert [(r["model"], r["dataset"]) for r in per_dataset] == [
        (m1, "alpha"),
        (m1, "beta"),
        (m2, "alpha"),
        (m2, "beta"),
    ]
    row = per_model[0]
    assert (row["n_triples"], row["rule1_cases"], row["rule1_violations"]) == ("11", "7", "6")
    assert float(row["rule1_rate"]) == pytest.approx(6 / 7, abs=1e-6)
    assert float(row["rule1_ci95_low"]) < 6 / 7 < float(row["rule1_ci95_high"])
    assert row["substitution_violations"] == "7" and row["contradiction_symmetry_violations"] == "1"
    assert (
        per_model[0]["rule2_ci95_low"] != "" and per_model[1]["rule2_ci95_low"] == ""
    )  # 0 cases: empty
    beta = per_dataset[1]
    assert (beta["n_triples"], beta["rule1_violations"], beta["mutual_entailment"]) == (
        "3",
        "3",
        "3",
    )
    assert float(beta["mutual_entailment_ci95_low"]) == pytest.approx(
        0.438503, abs=1e-6
    )  # Wilson 3/3


# ------------------------------------------------------------------ transnli show
def run_show(*args):
    return CliRunner().invoke(show, [str(a) for a in args])


def shown_ids(text):
    return [json.loads(line)["id"] for line in text.splitlines()]


def test_show_text_by_default(evaluation):
    out, m1, _ = evaluation
    res = run_show(out)
    assert res.exit_code == 0, res.output
    blocks = res.stdout.strip().split("\n\n")
    assert len(blocks) == 8  # every violation of the four rules; the second model has none
    assert blocks[0].splitlines() == [
        f"a1  [alpha]  {m1}",
        "  rule1 E&E->E violated: M(P,H)=E and mutual E => M(P,H')=E",
        "  P : A man sleeps.",
        "  H : A man rests.",
        "  H': A man dozes.",
        "  (P,H) E   (H,H') E   (H',H) E   (P,H') N",
    ]
    assert "8 of 8 violations shown" in res.stderr


def test_show_filters(evaluation):
    out, m1, m2 = evaluation
    res = run_show(
        out, "--rule", "rule1", "--model", "first", "--dataset", "beta", "--format", "jsonl"
    )
    assert res.exit_code == 0, res.output
    assert shown_ids(res.stdout) == ["b1", "b2", "b3"]
    assert all(json.loads(line)["model"] == m1 for line in res.stdout.splitlines())

    res = run_show(out, "--rule", "rule1", "--limit", "2", "--format", "jsonl")
    assert shown_ids(res.stdout) == RULE1_VIOLATIONS[:2]
    assert "2 of 6 violations shown (--limit 2; --limit 0 shows all)" in res.stderr
    assert (
        shown_ids(run_show(out, "--rule", "rule1", "-n", "0", "--format", "jsonl").stdout)
        == RULE1_VIOLATIONS
    )

    assert shown_ids(run_show(out, "--rule", "E&C->C", "--format", "jsonl").stdout) == [
        "a2"
    ]  # by name
    assert shown_ids(run_show(out, "--rule", "RULE3", "--format", "jsonl").stdout) == ["a3"]
    res = run_show(out, "--rule", "substitution", "--model", m1, "--format", "jsonl")
    assert shown_ids(res.stdout) == SUBSTITUTION_VIOLATIONS
    res = run_show(out, "--rule", "contradiction_symmetry", "-n", "0")
    assert "a6  [alpha]" in res.stdout and "M(H,H')=C => M(H',H)=C" in res.stdout

    held = run_show(out, "--rule", "rule1", "--held", "--model", "first", "--format", "jsonl")
    assert shown_ids(held.stdout) == ["a5"]
    held = run_show(out, "--held", "--model", m2, "-n", "0", "--format", "jsonl")
    assert shown_ids(held.stdout) == [f[0] for f in FIXTURE]
    assert "11 of 11 cases where the rule held shown" in held.stderr
    assert run_show(out, "--model", "second").stdout == ""  # no violation


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--rule", "rule9"],
            "unknown rule 'rule9'; valid: rule1, rule2, rule3, rule4, substitution, "
            "contradiction_symmetry",
        ),
        (["--model", "nope"], "unknown model 'nope'; valid: precomputed:"),
        (["--dataset", "gamma"], "unknown dataset 'gamma'; valid: alpha, beta"),
        (["--limit", "-1"], "Invalid value for '--limit'"),
        (["--format", "csv"], "Invalid value for '--format'"),
    ],
)
def test_show_errors_list_the_valid_names(evaluation, args, message):
    out, _, _ = evaluation
    res = run_show(out, *args)
    assert res.exit_code != 0 and message in res.output and "Traceback" not in res.output


def test_show_errors_on_the_folder(evaluation, tmp_path):
    out, _, _ = evaluation
    res = run_show(tmp_path / "labels")
    assert res.exit_code == 1 and "holds no summary.json" in res.output
    lines = (out / "samples.jsonl").read_text().splitlines()
    lines[2] = "{broken"
    (out / "samples.jsonl").write_text("\n".join(lines) + "\n")
    res = run_show(out, "-n", "0")
    assert (
        res.exit_code == 1
        and "samples.jsonl:3: not valid JSON" in res.output
        and "Traceback" not in res.output
    )
    (out / "samples.jsonl").unlink()
    res = run_show(out)
    assert res.exit_code == 1 and "samples.jsonl does not exist" in res.output


def test_ambiguous_short_model_name():
    summary = {
        "models": [
            {"model": "precomputed:/a/labels.jsonl"},
            {"model": "precomputed:/b/labels.jsonl"},
        ],
        "datasets": ["d"],
    }
    with pytest.raises(
        ShowError,
        match="ambiguous: it names precomputed:/a/labels.jsonl, precomputed:/b/labels.jsonl",
    ):
        resolve_query(summary, None, "labels", None)
    assert (
        resolve_query(summary, None, "/b/labels.jsonl", None).model == "precomputed:/b/labels.jsonl"
    )


# ------------------------------------------------------------------ tiny hf models
def test_tiny_models_samples_follow_the_rules(
    evaluation, tiny_nli_model_dir, tiny_nli_model_factory, tmp_path
):
    """Two tiny random-weight BERT models: every samples row's rule and violated flag is what
    rules.evaluate_triple says for its labels, and the run is reproducible byte for byte."""
    other = tiny_nli_model_factory("roberta_style_random_seed3", seed=3)
    tfile = tmp_path / "triples.jsonl"
    outs = []
    for name in ("one", "two"):
        evaluate_triples(
            [tfile],
            [f"hf:{tiny_nli_model_dir}", f"hf:{other}"],
            tmp_path / name,
            EvaluationSettings(cache_dir=tmp_path / "cache", show_progress=False, plots=False),
        )
        outs.append(tmp_path / name)
    assert (outs[0] / "samples.jsonl").read_bytes() == (outs[1] / "samples.jsonl").read_bytes()
    assert (outs[0] / "report.md").read_bytes() == (outs[1] / "report.md").read_bytes()
    rows = read_samples(outs[0])
    assert len(rows) == 2 * len(FIXTURE)
    short = {"e": "entailment", "n": "neutral", "c": "contradiction"}
    for row in rows:
        lab = row["labels"]
        expected = evaluate_triple(lab["p_h"], lab["h_h2"], lab["h2_h"], lab["p_h2"])
        assert (row["rule"], row["violated"]) == (expected.rule, expected.violated), row["id"]
        for kind, probs in row["probs"].items():
            if lab[kind] is not None:  # the label is the most probable class
                assert max(probs, key=probs.get) == lab[kind] and set(probs) == set(short.values())
    violating = [r for r in rows if r["violated"]]
    res = run_show(outs[0], "-n", "0", "--format", "jsonl")
    assert shown_ids(res.stdout) == [r["id"] for r in violating]
    report = (outs[0] / "report.md").read_text()
    for r in violating[:1]:  # the first violation of the first model is always listed
        assert f"| `{r['id']}` | {r['dataset']} | {r['premise']} |" in report
