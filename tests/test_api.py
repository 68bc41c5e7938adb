"""The Python API as docs/api.md shows it: transnli.generate and transnli.evaluate, in memory and
with out_dir, on the tiny NLI models of conftest.py and the hand-counted fixture of
test_evaluate_cli.py."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from test_evaluate_cli import ALPHA, BETA, FIXTURE, fixture_files  # noqa: F401 - a fixture
from transnli.evaluator.metric_rows import NOISE_COLUMNS

import transnli

PAIRS = [
    ("The old man is happy.", "A man is happy.", "entailment"),
    {"premise": "The dog sat on the mat.", "hypothesis": "The dog is small.", "label": "neutral"},
]


def test_import_is_light():
    code = (
        "import sys, transnli; assert transnli.__version__; "
        "heavy = [m for m in ('torch', 'pandas', 'spacy', 'transformers', 'transnli.api') "
        "if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert set(transnli.__all__) >= {"generate", "evaluate", "TransnliError"}


# ------------------------------------------------------------------ generate
@pytest.mark.slow
def test_generate_in_memory_then_to_a_folder(tmp_path, monkeypatch):
    work = tmp_path / "cwd"
    work.mkdir()
    monkeypatch.chdir(work)
    gen = transnli.generate(PAIRS)
    assert len(gen.records) == gen.stats["triples_accepted"] > 0
    assert not any(work.iterdir())  # nothing written
    for rec in gen.records:  # the docs' loop
        assert rec.modified_hypothesis != rec.hypothesis and rec.word and rec.antonym
        assert rec.dataset == "pairs" and rec.gold_label in ("entailment", "neutral")
    assert gen.stats["candidates_built"] >= gen.stats["triples_accepted"]
    df = gen.to_pandas()
    assert list(df["modified_hypothesis"]) == [r.modified_hypothesis for r in gen.records]

    # the same pairs through the CLI's run folder give the same records
    written = transnli.generate(PAIRS, out_dir=tmp_path / "run1")
    assert (tmp_path / "run1" / "triples.jsonl").is_file()
    assert [r.to_dict() for r in written.records] == [r.to_dict() for r in gen.records]
    assert written.stats["triples_accepted"] == gen.stats["triples_accepted"]

    # and a file path is read like `transnli generate` reads it
    src = tmp_path / "in.jsonl"
    src.write_text(
        "".join(
            json.dumps({"premise": p, "hypothesis": h, "label": g}) + "\n" for p, h, g in [PAIRS[0]]
        ),
        encoding="utf-8",
    )
    from_file = transnli.generate(src, pos=["ADJ"])
    assert [r.word for r in from_file.records] == ["happy"] and from_file.records[0].dataset == "in"


def test_generate_errors_are_one_line():
    with pytest.raises(transnli.TransnliError, match="pair 2: field 'hypothesis'"):
        transnli.generate([("A man.", "A man is happy."), {"premise": "A dog."}])
    with pytest.raises(transnli.TransnliError, match="pair 1: expected a dict"):
        transnli.generate(["just a string"])
    with pytest.raises(transnli.TransnliError, match="need out_dir"):
        transnli.generate(PAIRS, exports=("parquet",))
    with pytest.raises(transnli.TransnliError, match="no-such-preset"):
        transnli.generate(PAIRS, preset="no-such-preset")
    with pytest.raises(transnli.TransnliError, match="llm_concurrency instead"):
        transnli.generate(PAIRS, pipeline="llm", llm_model="m", workers=2)


@pytest.mark.slow
def test_generate_negations_with_workers_matches_one_process(monkeypatch):
    # like `transnli generate --pipeline wordnet+negation --workers 2`: only LLM pipelines refuse
    # workers
    from transnli.generator import build

    one = transnli.generate(PAIRS, pipeline="wordnet+negation")

    def not_here(config):
        raise AssertionError("the parent of a --workers run built a pipeline")

    # the parent builds none (the workers are fresh processes: this replacement is not theirs)
    monkeypatch.setattr(build, "build_pipeline", not_here)
    two = transnli.generate(PAIRS, pipeline="wordnet+negation", workers=2)
    assert [r.to_dict() for r in two.records] == [r.to_dict() for r in one.records]
    assert two.stats == one.stats
    assert any(r.pipeline == "negation" for r in one.records)


# ------------------------------------------------------------------ evaluate
def test_evaluate_a_file_in_memory_matches_the_hand_count(fixture_files, tmp_path):  # noqa: F811
    tfile, lfile = fixture_files
    before = sorted(p.name for p in tmp_path.iterdir())
    ev = transnli.evaluate(tfile, models=[f"gold=precomputed:{lfile}"], no_cache=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    assert ev.out_dir is None and ev.files == [] and ev.models == ["gold"]

    rules = ev.rules.set_index(["dataset", "rule"])
    for dataset, expected in (("alpha", ALPHA), ("beta", BETA)):
        for rule, (cases, violations) in expected["rules"].items():
            row = rules.loc[(dataset, rule)]
            assert (row["cases"], row["violations"]) == (cases, violations)
            assert row["model"] == "gold"
    assert ev.rules.columns.tolist() == [
        "dataset",
        "rule",
        "name",
        "model",
        "cases",
        "violations",
        "rate",
        "ci95_low",
        "ci95_high",
        *NOISE_COLUMNS,  # empty: these triples carry no p_good
    ]
    assert ev.rules[list(NOISE_COLUMNS)].isna().all().all()
    r1 = rules.loc[("alpha", "rule1")]
    assert r1["rate"] == 0.5 and 0 < r1["ci95_low"] < 0.5 < r1["ci95_high"] < 1
    assert ev.accuracy.set_index("dataset")["gold"]["alpha"] == ALPHA["accuracy"]
    assert ev.mutual_entailment.set_index("dataset")["gold"].tolist() == pytest.approx(
        [ALPHA["mutual_entailment_rate"], BETA["mutual_entailment_rate"]]
    )
    assert ev.mutual_contradiction.set_index("dataset")["gold"]["alpha"] == pytest.approx(2 / 7)
    extras = ev.extras.set_index(["dataset", "rule"])
    assert (
        extras.loc[("alpha", "substitution")]["cases"],
        extras.loc[("alpha", "substitution")]["violations"],
    ) == (3, 2)

    # per-triple outcomes carry the sentences and the labels
    out = ev.outcomes
    assert out["id"].tolist() == [f[0] for f in FIXTURE]
    t2 = out.set_index("id").loc["t2"]
    assert (t2["premise"], t2["hypothesis"], t2["modified_hypothesis"]) == ("p1", "h2", "h2x")
    assert (t2["p_h"], t2["h_h2"], t2["h2_h"], t2["p_h2"]) == ("entailment",) * 3 + ("neutral",)
    assert t2["rule"] == "rule1" and t2["violated"] is True
    bad = ev.violations()
    assert sorted(bad["id"]) == ["t2", "t4", "t5"]
    assert ev.violations(rule="rule4")["id"].tolist() == ["t4"]
    assert ev.violations(dataset="beta").empty


def test_evaluate_records_in_memory_and_out_dir(
    fixture_files,  # noqa: F811 - the imported fixture
    tmp_path,
    tiny_nli_entailing_model_dir,
):
    tfile, lfile = fixture_files
    records = [json.loads(line) for line in tfile.read_text().splitlines()]
    ev = transnli.evaluate(records, models=[f"base=hf:{tiny_nli_entailing_model_dir}"], limit=5)
    assert len(ev.outcomes) == 5 and set(ev.outcomes["p_h"]) == {"entailment"}
    assert ev.summary["provenance"]["triples_files"][0]["path"] == "<memory>"
    assert ev.run_info["models"][0]["device"] == "cpu"

    # a DataFrame works as well, and out_dir writes what `transnli evaluate --out` writes
    ev2 = transnli.evaluate(
        ev.outcomes[["id", "premise", "hypothesis", "modified_hypothesis", "gold_label"]],
        models=[f"base=hf:{tiny_nli_entailing_model_dir}"],
        out_dir=tmp_path / "eval1",
        plots=False,
    )
    assert (tmp_path / "eval1" / "summary.json").is_file() and (
        tmp_path / "eval1" / "run_info.json"
    ).is_file()
    on_disk = json.loads((tmp_path / "eval1" / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(ev2.summary))
    assert ev2.rules.equals(ev.rules)  # the same 5 triples, the same labels (served from the cache)
    assert ev2.run_info["models"][0]["from_cache"] == ev2.run_info["models"][0]["pairs"]


def test_evaluate_errors_are_one_line(fixture_files, tmp_path):  # noqa: F811
    tfile, lfile = fixture_files
    with pytest.raises(transnli.TransnliError, match="unknown option 'colour'"):
        transnli.evaluate(tfile, models=[f"precomputed:{lfile}?colour=red"])
    with pytest.raises(transnli.TransnliError, match="triples:2: field 'modified_hypothesis'"):
        transnli.evaluate(
            [
                {"premise": "a", "hypothesis": "b", "modified_hypothesis": "c"},
                {"premise": "a", "hypothesis": "b"},
            ],
            models=[f"precomputed:{lfile}"],
        )
    with pytest.raises(transnli.TransnliError, match="nope.jsonl: No such file"):
        transnli.evaluate(tmp_path / "nope.jsonl", models=[f"precomputed:{lfile}"])
    with pytest.raises(TypeError):
        transnli.evaluate(tfile, models=[f"precomputed:{lfile}"], colour="red")
