"""`transnli evaluate` and `pairs` on Parquet files and saved Hugging Face dataset folders: the same
triples give the same results as their JSONL, and bad tables fail with file, row and field."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from transnli.evaluator.triples import load_triples
from transnli.generator.output import RunWriter
from transnli.generator.publish import export_finished
from transnli.generator.record import TripleRecord

from transnli.cli import main

# (id, dataset, P, H, H', gold) and a model's labels of (P,H), (H,H'), (H',H), (P,H')
FIXTURE = [
    ("t1", "alpha", "p1", "h1", "h1x", "entailment", "E", "E", "E", "E"),  # rule1 holds
    ("t2", "alpha", "p1", "h2", "h2x", "neutral", "E", "E", "E", "N"),  # rule1 violated
    ("t3", "alpha", "p2", "h3", "h3x", None, "N", "C", "C", "E"),  # rule4 violated
    ("t4", "beta", "q1", "k1", "k1x", None, "N", "E", "E", "N"),  # rule3 holds
]
FULL = {"E": "entailment", "N": "neutral", "C": "contradiction"}


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


@pytest.fixture
def run_folder(tmp_path):
    """A finished generation run holding FIXTURE, exported to Parquet and a saved HF dataset."""
    records = [
        TripleRecord(
            premise=p, hypothesis=h, modified_hypothesis=h2, id=tid, dataset=ds, gold_label=gold
        )
        for tid, ds, p, h, h2, gold, *_ in FIXTURE
    ]
    w = RunWriter(tmp_path / "gen", "fp")
    w.open()
    w.write_config({"transnli_version": "0.1.0"})
    w.write_batch(records, [], len(records), {})
    w.finish({"triples_accepted": len(records)})
    export_finished(tmp_path / "gen", ["parquet", "hf"])
    labels = tmp_path / "labels.jsonl"
    rows = {}
    for _, _, p, h, h2, _, *labs in FIXTURE:
        for pair, lab in zip(((p, h), (h, h2), (h2, h), (p, h2)), labs, strict=True):
            rows[pair] = {"premise": pair[0], "hypothesis": pair[1], "label": FULL[lab]}
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows.values()))
    return tmp_path / "gen", labels


def evaluate(triples, labels, out):
    return CliRunner().invoke(
        main,
        [
            "evaluate",
            str(triples),
            "--model",
            f"precomputed:{labels}",
            "--out",
            str(out),
            "--no-cache",
            "--no-progress",
            "--no-plots",  # the figures are not under test here
        ],
    )


def results(out):
    summary = json.loads((out / "summary.json").read_text())
    return [
        (
            d["dataset"],
            d["n_triples"],
            d["accuracy"],
            {k: (c["cases"], c["violations"]) for k, c in d["rules"].items()},
        )
        for d in summary["models"][0]["datasets"]
    ]


def test_parquet_and_hf_folder_evaluate_like_jsonl(run_folder, tmp_path):
    gen, labels = run_folder
    outs = {}
    for name in ("triples.jsonl", "triples.parquet", "hf_dataset"):
        res = evaluate(gen / name, labels, tmp_path / f"out-{name}")
        assert res.exit_code == 0, res.output
        outs[name] = results(tmp_path / f"out-{name}")
    assert outs["triples.jsonl"] == outs["triples.parquet"] == outs["hf_dataset"]
    alpha, beta = outs["hf_dataset"]
    assert alpha[:3] == ("alpha", 3, 0.5)  # gold of t1 right, t2 wrong, t3 has none (ClassLabel -1)
    assert (
        alpha[3]["rule1"] == (2, 1) and alpha[3]["rule4"] == (1, 1) and beta[3]["rule3"] == (1, 0)
    )
    # the folder is hashed for provenance like a file
    prov = json.loads((tmp_path / "out-hf_dataset" / "summary.json").read_text())["provenance"]
    assert (
        prov["triples_files"][0]["path"].endswith("hf_dataset")
        and len(prov["triples_files"][0]["sha256"]) == 64
    )


def test_pairs_reads_parquet(run_folder, tmp_path):
    gen, _ = run_folder
    res = CliRunner().invoke(
        main, ["pairs", str(gen / "triples.parquet"), "--out", str(tmp_path / "pairs.jsonl")]
    )
    assert res.exit_code == 0, res.output
    assert len((tmp_path / "pairs.jsonl").read_text().splitlines()) == 4 * 4


def _table(path, rows):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


@pytest.mark.parametrize(
    "rows, expected",
    [
        (
            [
                {"premise": "p", "hypothesis": "h", "modified_hypothesis": "x"},
                {"premise": "p", "hypothesis": "", "modified_hypothesis": "x"},
            ],
            "bad.parquet: row 2: field 'hypothesis'",
        ),
        (
            [{"premise": "p", "hypothesis": "h", "modified_hypothesis": "x", "gold_label": 7}],
            "bad.parquet: row 1: field 'gold_label'",
        ),
        (
            [{"premise": "p", "hypothesis": "h", "modified_hypothesis": "x", "gold_label": "yes"}],
            "bad.parquet: row 1: field 'gold_label'",
        ),
        ([{"premise": "p", "hypothesis": "h"}], "column(s) modified_hypothesis missing"),
    ],
)
def test_bad_parquet_names_file_row_and_field(tmp_path, rows, expected):
    path = _table(tmp_path / "bad.parquet", rows)
    res = evaluate(path, tmp_path / "none.jsonl", tmp_path / "out")
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert expected in res.output, res.output


def test_hand_made_parquet_with_label_names_is_read(tmp_path):
    path = _table(
        tmp_path / "mine.parquet",
        [
            {
                "premise": "p",
                "hypothesis": "h",
                "modified_hypothesis": "x",
                "gold_label": "neutral",
            },
            {"premise": "p", "hypothesis": "h2", "modified_hypothesis": "x2", "gold_label": None},
        ],
    )
    triples = load_triples([path])
    assert [(t.dataset, t.gold_label) for t in triples] == [("mine", "neutral"), ("mine", None)]


def test_not_parquet_and_not_a_dataset_folder(tmp_path):
    (tmp_path / "fake.parquet").write_text("not parquet")
    res = evaluate(tmp_path / "fake.parquet", tmp_path / "none.jsonl", tmp_path / "out")
    assert res.exit_code == 1 and "is not a readable Parquet file" in res.output
    (tmp_path / "folder").mkdir()
    res = evaluate(tmp_path / "folder", tmp_path / "none.jsonl", tmp_path / "out2")
    assert res.exit_code == 1 and "not a saved Hugging Face dataset" in res.output


def test_dataset_dict_without_a_triples_split_is_refused(tmp_path):
    import datasets

    row = {"premise": ["p"], "hypothesis": ["h"], "modified_hypothesis": ["x"]}
    datasets.DatasetDict(
        {"a": datasets.Dataset.from_dict(row), "b": datasets.Dataset.from_dict(row)}
    ).save_to_disk(str(tmp_path / "two"))
    res = evaluate(tmp_path / "two", tmp_path / "none.jsonl", tmp_path / "out")
    assert res.exit_code == 1 and "holds the splits a, b" in res.output
    datasets.Dataset.from_dict(row).save_to_disk(
        str(tmp_path / "one")
    )  # a plain Dataset is read as it is
    assert [t.modified for t in load_triples([tmp_path / "one"])] == ["x"]
