import json

import pytest
from transnli.generator.output import (
    PROGRESS,
    REJECTED,
    STATS,
    TRIPLES,
    OutputError,
    RunWriter,
    export,
)
from transnli.generator.record import TripleRecord, read_triples


def rec(i: int) -> TripleRecord:
    return TripleRecord(
        premise=f"P{i}", hypothesis=f"H{i}", modified_hypothesis=f"H'{i}", id=str(i)
    )


def test_crash_then_resume_has_no_duplicates_and_no_loss(tmp_path):
    w = RunWriter(tmp_path, "fp1")
    assert w.open() == 0
    w.write_batch([rec(0), rec(1)], [rec(100)], n_pairs=2, stats={"sentences_read": 2})
    # A crash in the middle of the next batch: a half-written line after the checkpoint.
    with open(tmp_path / TRIPLES, "a") as fh:
        fh.write('{"premise": "P2", "hypo')
    w.close()

    w2 = RunWriter(tmp_path, "fp1")
    assert w2.open() == 2
    assert w2.resumed_stats == {"sentences_read": 2}
    w2.write_batch([rec(2)], [], n_pairs=1, stats={"sentences_read": 3})
    w2.finish({"sentences_read": 3})
    assert [r.id for r in read_triples(tmp_path / TRIPLES)] == ["0", "1", "2"]
    assert [r.id for r in read_triples(tmp_path / REJECTED)] == ["100"]
    assert not (tmp_path / PROGRESS).exists()
    assert json.loads((tmp_path / STATS).read_text()) == {"sentences_read": 3}


def test_resume_with_other_settings_refused_and_finished_run_protected(tmp_path):
    w = RunWriter(tmp_path, "fp1")
    w.open()
    w.write_batch([rec(0)], [], 1, {})
    w.close()
    with pytest.raises(OutputError, match="different input or configuration"):
        RunWriter(tmp_path, "fp2").open()
    w = RunWriter(tmp_path, "fp1")
    w.open()
    w.finish({})
    with pytest.raises(OutputError, match="finished run"):
        RunWriter(tmp_path, "fp1").open()
    w = RunWriter(tmp_path, "fp2", overwrite=True)
    assert w.open() == 0
    w.finish({})
    assert (tmp_path / TRIPLES).read_text() == ""


def test_export_parquet_and_hf_datasets(tmp_path):
    import datasets
    import pyarrow.parquet as pq

    w = RunWriter(tmp_path, "fp")
    w.open()
    r = rec(0)
    r.candidates = [{"antonym": "bad", "score": 0.5}, {"antonym": "evil", "score": None}]
    r.checks = {"grammar": {"backend": "harper", "passed": True}}
    w.write_batch([r, rec(1)], [], 2, {})
    w.finish({})
    written = export(tmp_path, ["parquet", "hf"])
    assert {p.name for p in written} == {"triples.parquet", "hf_dataset"}  # no rejects: no file
    table = pq.read_table(tmp_path / "triples.parquet")
    assert table.num_rows == 2 and table.column("candidates")[0].as_py()[1] == {
        "antonym": "evil",
        "score": None,
        "rule": None,  # only a negation names its rule
    }
    ds = datasets.load_from_disk(str(tmp_path / "hf_dataset"))
    assert ds["triples"][0]["modified_hypothesis"] == "H'0"
